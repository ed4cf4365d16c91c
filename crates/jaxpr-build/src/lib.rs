//! The `jaxpr-build` binary: the `jaxpr` command line with the back ends
//! linked in (`jaxpr build` runs it from the folder it is in). The back ends
//! are `jaxpr_stablehlo` (MLIR) and `jaxpr_native` (LLVM); what they share
//! is `jaxpr_lower`.

pub mod command;
