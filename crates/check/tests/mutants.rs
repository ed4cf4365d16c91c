//! Mutants of random programs JAX printed, judged by JAX
//! (`corpus-gen/programs_random/random_programs.py`, `write_mutants`): each
//! takes one program and retypes a result, replaces an operand by another
//! variable, or drops an equation whose results are read. The checker
//! reports an error exactly on the mutants JAX rejects: those its
//! `check_jaxpr` rejects, and those it accepts but its lowering or XLA's
//! compiler refuses (some shape rules skip checks: `reshape`'s element count
//! is a TODO in jax 0.10.2). The committed sample is
//! `tests/data/programs-random/mutants`; `JAXPR_RANDOM_PROGRAMS=DIR` judges
//! a full run's folder instead.

use serde_json::Value;

#[test]
fn the_checker_rejects_exactly_the_mutants_jax_rejects() {
    let root = jaxpr_test_support::random::programs_root();
    let dir = root.join("mutants");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    let programs = manifest["programs"].as_object().expect("programs");
    assert!(programs.len() >= 100, "{} mutants", programs.len());
    let mut rejected = 0;
    let mut disagreements = Vec::new();
    for (name, meta) in programs {
        let jax_rejects =
            meta["check_jaxpr"] == Value::Bool(false) || meta["compiles"] == Value::Bool(false);
        rejected += usize::from(jax_rejects);
        let text = std::fs::read_to_string(dir.join(format!("{name}.jaxpr"))).unwrap();
        let errors = jaxpr_test_support::random::errors_of(&text);
        if jax_rejects == errors.is_empty() {
            let jax = if jax_rejects {
                meta["check_jaxpr_error"]
                    .as_str()
                    .or(meta["compile_error"].as_str())
                    .unwrap_or("rejected")
                    .to_string()
            } else {
                "accepted".to_string()
            };
            disagreements.push(format!(
                "{name} ({}): JAX {jax}; the checker: {}",
                meta["mutation"].as_str().unwrap_or("?"),
                if errors.is_empty() {
                    "no error".to_string()
                } else {
                    errors.join("; ")
                }
            ));
        }
    }
    eprintln!(
        "{} mutants, {rejected} rejected by JAX, {} disagreements",
        programs.len(),
        disagreements.len()
    );
    assert!(
        rejected > 0 && rejected < programs.len(),
        "both verdicts are represented"
    );
    assert!(
        disagreements.is_empty(),
        "{} of {} mutants judged otherwise than JAX:\n{}",
        disagreements.len(),
        programs.len(),
        disagreements.join("\n")
    );
}
