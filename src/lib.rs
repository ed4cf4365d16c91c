//! `jaxpr`: the command line (`check`, `types`, `trace`; `build` runs
//! `jaxpr-build`, the back ends' binary). The layers it drives are crates of
//! their own under `crates/` (see `docs/architecture.md`).

pub mod cli;
