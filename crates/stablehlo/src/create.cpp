// Creating the module's unregistered StableHLO operations without MLIR's C
// API's generic path (see `create.rs`): that path copies each operand,
// result and attribute list into arrays it allocates and frees, looks the
// operation's name up in the context, and uniques the attribute dictionary
// again for every operation. Here the name is looked up once per name and
// the dictionary once per distinct attribute list (by the caller), and the
// operation is made and appended to its block in one call.

#include "mlir-c/IR.h"
#include "mlir/CAPI/IR.h"
#include "mlir/IR/Block.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/OperationSupport.h"

using namespace mlir;

extern "C" {

// The operation name `name` of `context`, as an opaque pointer that
// `jaxpr_operation_append` takes; null when the name is registered (its
// operations need MLIR's generic path: properties, default attributes).
const void *jaxpr_operation_name(MlirContext context, MlirStringRef name) {
  OperationName op_name(StringRef(name.data, name.length), unwrap(context));
  if (op_name.isRegistered())
    return nullptr;
  return op_name.getAsOpaquePointer();
}

// Makes an operation named `name` (from `jaxpr_operation_name`) with the
// given results, operands, attribute dictionary (never null) and regions
// (whose ownership passes to the operation, as with
// mlirOperationStateAddOwnedRegions), and appends it to `block`.
MlirOperation jaxpr_operation_append(const void *name, MlirLocation location,
                                     intptr_t n_results, const MlirType *results,
                                     intptr_t n_operands, const MlirValue *operands,
                                     MlirAttribute attributes,
                                     intptr_t n_regions, const MlirRegion *regions,
                                     MlirBlock block) {
  llvm::SmallVector<Type, 4> result_types;
  result_types.reserve(n_results);
  for (intptr_t i = 0; i < n_results; ++i)
    result_types.push_back(unwrap(results[i]));
  llvm::SmallVector<Value, 8> operand_values;
  operand_values.reserve(n_operands);
  for (intptr_t i = 0; i < n_operands; ++i)
    operand_values.push_back(unwrap(operands[i]));
  Operation *op = Operation::create(
      unwrap(location), OperationName::getFromOpaquePointer(name),
      TypeRange(result_types), ValueRange(operand_values),
      llvm::cast<DictionaryAttr>(unwrap(attributes)), OpaqueProperties(nullptr),
      BlockRange(), static_cast<unsigned>(n_regions));
  for (intptr_t i = 0; i < n_regions; ++i) {
    Region *region = unwrap(regions[i]);
    op->getRegion(static_cast<unsigned>(i)).takeBody(*region);
    delete region;
  }
  unwrap(block)->push_back(op);
  return wrap(op);
}

} // extern "C"
