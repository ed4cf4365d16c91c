//! `jaxpr`: a compiler core for JAX's intermediate language.

pub mod build;
pub mod check;
pub mod cli;
pub mod db;
pub mod diagnostics;
pub mod fuzz;
pub mod ide;
pub mod incremental;
pub mod scale;
pub mod session;
pub mod signature;
pub mod syntax;
pub mod types;
