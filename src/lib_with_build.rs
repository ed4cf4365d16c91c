//! `jaxpr`: a compiler core for JAX's intermediate language, with its build
//! back ends. The core (syntax, checker, signatures, the incremental
//! database, IDE features, the command line) is the `jaxpr-core` crate,
//! re-exported here module by module; `build` lowers checked jaxprs through
//! MLIR and LLVM, which only this crate links.

pub use jaxpr_core::*;

pub mod build;
pub mod build_command;
