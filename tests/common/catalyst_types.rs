//! Comparing `jaxpr types` with the signatures a Catalyst generator recorded
//! from Catalyst's own type rules (`corpus-gen/catalyst/gen.py`'s
//! `signatures`): the Catalyst suite and every Catalyst of the version matrix.

use jaxpr_db::{self as db, RootDatabase, SourceFile};
use std::collections::BTreeSet;

/// Every jaxpr's signature, in `jaxpr types`'s order (main, then by position).
pub fn signatures(text: &str) -> Vec<(String, String)> {
    let db = RootDatabase::default();
    let file = SourceFile::new(&db, "t.jaxpr".into(), text.to_string());
    let a = db::analysis(&db, file);
    let mut js: Vec<&jaxpr_check::JaxprInfo> = a.jaxprs.iter().collect();
    js.sort_by_key(|j| (j.origin != jaxpr_check::JaxprOrigin::Main, j.range.start));
    js.iter()
        .map(|j| (j.signature.render_in(), j.signature.render_out()))
        .collect()
}

/// How many signatures of `text` were compared with `recorded` (the case's
/// `signatures`), and a message for each that differs.
pub fn compare(name: &str, text: &str, recorded: &[serde_json::Value]) -> (usize, Vec<String>) {
    let ours = signatures(text);
    let mut failures = Vec::new();
    if ours.len() != recorded.len() {
        // JAX prints a jaxpr that several equations share once, as a `let`
        // (the generator meets it at each equation): then every signature
        // must be among the recorded ones and the reverse.
        let want: BTreeSet<(String, String)> = recorded
            .iter()
            .map(|r| {
                (
                    r["in_type"].as_str().unwrap().into(),
                    r["out_type"].as_str().unwrap().into(),
                )
            })
            .collect();
        let got: BTreeSet<(String, String)> = ours.iter().cloned().collect();
        if want != got || !text.starts_with("let ") {
            failures.push(format!(
                "{name}: {} jaxprs, Catalyst recorded {}; ours {got:?}, Catalyst's {want:?}",
                ours.len(),
                recorded.len()
            ));
        }
        return (got.len(), failures);
    }
    for ((in_t, out_t), r) in ours.iter().zip(recorded) {
        let (want_in, want_out) = (
            r["in_type"].as_str().unwrap(),
            r["out_type"].as_str().unwrap(),
        );
        if in_t != want_in || out_t != want_out {
            failures.push(format!(
                "{name} ({}):\n  in_type:  {in_t}\n  Catalyst: {want_in}\n  out_type: {out_t}\n  Catalyst: {want_out} (from {})",
                r["jaxpr"].as_str().unwrap(),
                r["out_type_from"].as_str().unwrap()
            ));
        }
    }
    (ours.len(), failures)
}
