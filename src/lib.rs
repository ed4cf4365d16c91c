//! `jaxpr-core`: a compiler core for JAX's intermediate language, without
//! the build back ends (those are the `build` module of the `jaxpr` crate,
//! which re-exports every module of this one).

pub mod allocator;
pub mod check;
pub mod cli;
pub mod db;
pub mod diagnostics;
pub mod fuzz;
pub mod ide;
pub mod incremental;
pub mod interrupt;
pub mod scale;
pub mod session;
pub mod signature;
pub mod syntax;
pub mod types;
