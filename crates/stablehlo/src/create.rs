//! Operation creation through MLIR's C++ API (`create.cpp`, compiled by
//! `build.rs`): the lowering makes hundreds of thousands of operations,
//! and the C API's generic path (`mlirOperationCreate`) cost about 1,900
//! instructions each, two thirds of it in copying its arrays, looking the
//! name up and uniquing the attribute dictionary again.

use mlir_sys::{
    MlirAttribute, MlirBlock, MlirContext, MlirLocation, MlirOperation, MlirRegion, MlirStringRef,
    MlirType, MlirValue,
};
use std::ffi::c_void;

unsafe extern "C" {
    /// The name as an opaque handle; null when MLIR registers it.
    pub(super) fn jaxpr_operation_name(context: MlirContext, name: MlirStringRef) -> *const c_void;

    /// Makes the operation (the regions become its own) and appends it to
    /// `block`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn jaxpr_operation_append(
        name: *const c_void,
        location: MlirLocation,
        n_results: isize,
        results: *const MlirType,
        n_operands: isize,
        operands: *const MlirValue,
        attributes: MlirAttribute,
        n_regions: isize,
        regions: *const MlirRegion,
        block: MlirBlock,
    ) -> MlirOperation;
}
