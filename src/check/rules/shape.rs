//! Shape and indexing primitives: broadcast, reshape, transpose, slicing, gather/scatter, padding, concatenation, iota.

use super::{EqnCx, Infer};

/// Rules of this family: `Some(result)` when `name` belongs here.
pub(super) fn infer(cx: &mut EqnCx, name: &str) -> Option<Infer> {
    let _ = (cx, name);
    None
}

pub(super) fn describe(name: &str) -> Option<&'static str> {
    let _ = name;
    None
}

pub(super) fn names() -> Vec<&'static str> {
    Vec::new()
}
