//! The rank's own program (`jaxpr_lower::shards`): for every multi-device
//! program of the sharding corpus, the rewritten text checks clean, and the
//! inputs and outputs it takes as blocks have the block types the
//! `shard_map`'s body declares for them.

use jaxpr_check::{Keep, Source, check_source};
use std::path::Path;

#[test]
fn every_rank_program_of_the_sharding_corpus_checks_clean() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/sharding");
    let (mut programs, mut split_inputs, mut split_outputs) = (0, 0, 0);
    let mut failures = Vec::new();
    for dir in std::fs::read_dir(&root).unwrap().flatten() {
        for f in std::fs::read_dir(dir.path()).unwrap().flatten() {
            let path = f.path();
            if path.extension().is_none_or(|e| e != "jaxpr") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let (parse, a) = check_source(Source::Text(&text), Keep::Everything).parsed();
            if a.diagnostics.iter().any(|d| d.is_error()) {
                continue;
            }
            let shards = match jaxpr_lower::shards::shards_program(&text, &parse.file, &a) {
                Ok(Some(s)) => s,
                Ok(None) => continue,
                Err(e) => {
                    failures.push(format!("{}: {e:?}", path.display()));
                    continue;
                }
            };
            programs += 1;
            let (p2, a2) = check_source(Source::Text(&shards.text), Keep::Everything).parsed();
            let errors: Vec<String> = p2
                .errors
                .iter()
                .chain(&a2.diagnostics)
                .filter(|d| d.is_error())
                .map(|d| d.message.clone())
                .collect();
            if !errors.is_empty() {
                failures.push(format!("{}: {errors:?}\n{}", path.display(), shards.text));
                continue;
            }
            let main = a2.jaxpr(a2.main().unwrap());
            let inputs: Vec<_> = main.constvars.iter().chain(&main.invars).collect();
            for (v, s) in inputs.iter().zip(&shards.layout.inputs) {
                let Some(s) = s else { continue };
                split_inputs += 1;
                let shape: Vec<String> =
                    a2.var(**v).ty.shape.iter().map(|d| d.to_string()).collect();
                let block: Vec<String> = s.block.iter().map(|d| d.to_string()).collect();
                assert_eq!(shape, block, "{}", path.display());
                assert_eq!(s.axes.len(), s.global.len().min(s.axes.len()));
            }
            split_outputs += shards.layout.outputs.iter().flatten().count();
        }
    }
    eprintln!(
        "{programs} programs, {split_inputs} inputs and {split_outputs} outputs taken as blocks"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(programs >= 100, "{programs} programs with a block");
    assert!(
        split_inputs >= 100 && split_outputs >= 100,
        "{split_inputs} inputs, {split_outputs} outputs"
    );
}
