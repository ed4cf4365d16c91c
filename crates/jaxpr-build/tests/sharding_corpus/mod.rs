//! What the sharding corpus (`tests/data/sharding`) records that a build
//! cannot be held to, shared by the tests that run it on XLA and on MPI.

/// Programs built whose corpus values cannot be fed as recorded, with why.
pub const VALUES_DIFFER: &[(&str, &str, &str)] = &[(
    "0.4.30",
    "vmap_named_axis_ppermute",
    "the corpus records the program's i32[4] constant as int64",
)];

/// The reason `list` gives for program `name` of jax `v`, if it lists it.
pub fn listed<'a>(list: &'a [(&str, &str, &str)], v: &str, name: &str) -> Option<&'a str> {
    list.iter()
        .find(|(lv, ln, _)| *lv == v && *ln == name)
        .map(|(_, _, why)| *why)
}
