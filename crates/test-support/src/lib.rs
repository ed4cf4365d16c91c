//! Test and benchmark helpers: the mutation fuzzer, the scale drivers
//! (edits of the large corpus files) and where random programs are read.
//! The product's libraries and binaries never link this crate.

pub mod fixture;
pub mod fuzz;
pub mod random;
pub mod scale;
