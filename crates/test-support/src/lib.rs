//! Test and benchmark helpers: the mutation fuzzer and the scale drivers
//! (edits of the large corpus files). The product's libraries and
//! binaries never link this crate.

pub mod fixture;
pub mod fuzz;
pub mod scale;
