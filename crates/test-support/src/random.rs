//! Where the tests judging the random generators' programs read them
//! (`corpus-gen/programs_random`): the committed sample, or a full run's
//! folder named by `JAXPR_RANDOM_PROGRAMS` (a benchmark).

use std::path::PathBuf;

/// The folder of the random programs (`random/`) and their mutants
/// (`mutants/`).
pub fn programs_root() -> PathBuf {
    std::env::var_os("JAXPR_RANDOM_PROGRAMS").map_or_else(
        || {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../tests/data/programs-random"
            ))
        },
        PathBuf::from,
    )
}

/// The errors the parser and the checker report on `text`, as
/// `code: message`: what a program JAX accepts must not have.
pub fn errors_of(text: &str) -> Vec<String> {
    let parse = jaxpr_syntax::parse(text);
    let analysis = jaxpr_check::check(&parse.file);
    parse
        .errors
        .iter()
        .chain(&analysis.diagnostics)
        .filter(|d| d.severity == jaxpr_syntax::diagnostics::Severity::Error)
        .map(|d| format!("{}: {}", d.kind.code(), d.message))
        .collect()
}
