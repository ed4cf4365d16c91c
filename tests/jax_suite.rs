//! The jax-suite corpus (`tests/data/jax-suite`, written by `corpus-gen/jax/gen.py`):
//! programs of JAX's own test suite (jax 0.10.2), each printed by JAX, with JAX's
//! own verdict on it (`check_jaxpr`). Every program JAX accepts must check with no
//! error and no unknown primitive, and defects injected into printed types and
//! parameters must be flagged at the line they were made on.

mod common;

use jaxpr_syntax::LineIndex;
use jaxpr_syntax::diagnostics::{DiagKind, Diagnostic};
use jaxpr_test_support::fuzz::Rng;
use std::path::{Path, PathBuf};

/// Programs JAX writes across the six test files (the generator's README gives
/// the count per group); fewer means a group failed to generate.
const MIN_PROGRAMS: usize = 3000;
/// Share of injected defects that must be flagged on their own line.
const MIN_RECALL: f64 = 0.97;

fn suite() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/jax-suite")
}

/// A program JAX accepts.
struct Program {
    path: PathBuf,
    text: String,
}

/// Every program whose printed jaxpr JAX's `check_jaxpr` accepts, in a
/// stable order.
fn accepted_programs() -> Vec<Program> {
    let mut out = Vec::new();
    for (group, programs) in common::corpus_groups(&suite()) {
        let mut names: Vec<&String> = programs
            .iter()
            .filter(|(_, meta)| meta["check_jaxpr"] == true)
            .map(|(name, _)| name)
            .collect();
        names.sort();
        for name in names {
            let path = group.join(format!("{name}.jaxpr"));
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            out.push(Program { path, text });
        }
    }
    out
}

fn line_of(idx: &LineIndex, d: &Diagnostic) -> u32 {
    idx.line_col(d.range.start).line + 1
}

fn describe(path: &Path, idx: &LineIndex, d: &Diagnostic) -> String {
    format!(
        "{}:{}: {} {}",
        path.strip_prefix(suite()).unwrap_or(path).display(),
        line_of(idx, d),
        d.kind.name(),
        d.message
    )
}

/// Whether a parse error explains an error of this file:
/// the file has a parse error (whatever else is reported follows from the
/// tree it recovered), or the error names a `let` jaxpr that the file defines
/// after its use (`let` order).
fn parser_owned(text: &str, diags: &[Diagnostic], d: &Diagnostic) -> bool {
    if diags.iter().any(|d| d.kind == DiagKind::Syntax) {
        return true;
    }
    let Some(name) = d
        .message
        .strip_prefix("no jaxpr named `")
        .and_then(|m| m.strip_suffix("` is defined"))
    else {
        return false;
    };
    text.find(&format!("let {name} = "))
        .is_some_and(|at| at > d.range.start as usize)
}

#[test]
fn programs_jax_accepts_check_without_errors_or_unknown_primitives() {
    let programs = accepted_programs();
    assert!(
        programs.len() >= MIN_PROGRAMS,
        "only {} accepted programs in {}",
        programs.len(),
        suite().display()
    );
    let (mut errors, mut parse_errors, mut unknown) = (Vec::new(), Vec::new(), Vec::new());
    let (mut sharp, mut key_reuses) = (Vec::new(), 0);
    let jax_finds_reuse = jax_key_reuse_verdicts();
    for p in &programs {
        let idx = LineIndex::new(&p.text);
        let diags = jaxpr_check::check_source(
            jaxpr_check::Source::Text(&p.text),
            jaxpr_check::Keep::Diagnostics,
        )
        .diagnostics();
        for d in &diags {
            if d.kind == DiagKind::UnknownPrimitive {
                unknown.push(describe(&p.path, &idx, d));
            } else if jaxpr_check::sharp::KINDS.contains(&d.kind) {
                // A sharp-bits finding is JAX's: a key reuse JAX's own
                // checker finds on the program (or on its typed twin).
                if d.kind == DiagKind::KeyReuse && jax_finds_reuse(&p.path) {
                    key_reuses += 1;
                } else {
                    sharp.push(describe(&p.path, &idx, d));
                }
            } else if !d.is_error() {
                continue;
            } else if parser_owned(&p.text, &diags, d) {
                parse_errors.push(describe(&p.path, &idx, d));
            } else {
                // A program valid only under its export constraints, which
                // its text lacks, gets an inconclusive-dimension warning,
                // never an error.
                errors.push(describe(&p.path, &idx, d));
            }
        }
    }
    let section = |title: &str, v: &[String]| {
        if v.is_empty() {
            String::new()
        } else {
            format!("\n{title} ({}):\n{}\n", v.len(), v.join("\n"))
        }
    };
    assert!(
        errors.is_empty() && parse_errors.is_empty() && unknown.is_empty() && sharp.is_empty(),
        "{} programs JAX accepts:{}{}{}{}",
        programs.len(),
        section("false errors", &errors),
        section("errors from parse errors and `let` order", &parse_errors),
        section("primitives without a typing rule", &unknown),
        section("sharp-bits findings JAX's checkers do not make", &sharp),
    );
    // JAX's `scan_keys` test: its typed-key programs, its raw-data ones,
    // and its legacy-key one whose typed twin JAX flags.
    assert_eq!(key_reuses, 7, "key reuses found where JAX finds them");
}

/// Whether JAX's key-reuse checker rejects the program at a path (as
/// `tests/data/key-reuse/verdicts.json` records it for `jax-suite/random`),
/// or, for raw key data, its typed twin (the same test's `_key` program).
fn jax_key_reuse_verdicts() -> impl Fn(&Path) -> bool {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let recorded: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(data.join("key-reuse/verdicts.json")).unwrap(),
    )
    .unwrap();
    let verdicts = recorded["verdicts"].as_object().unwrap().clone();
    move |path: &Path| {
        let Ok(name) = path.strip_prefix(&data) else {
            return false;
        };
        let name = name.to_string_lossy();
        let rejects = |name: &str| {
            verdicts
                .get(name)
                .is_some_and(|v| v["jax_key_reuse"] == true)
        };
        let typed_twin = ["_legacy.jaxpr", "_data.jaxpr"]
            .iter()
            .find_map(|raw| name.strip_suffix(raw))
            .map(|stem| format!("{stem}_key.jaxpr"));
        rejects(&name) || typed_twin.is_some_and(|twin| rejects(&twin))
    }
}

/// One injected defect: the text with it, the 1-based line it is on, and what
/// was changed (for the failure message).
struct Defect {
    text: String,
    line: u32,
    what: String,
}

/// Parameters whose value fixes axes: an index far out of range is invalid
/// for every operand.
const AXIS_PARAMS: &[&str] = &[
    "axes=",
    "dimension=",
    "dimensions=",
    "broadcast_dimensions=",
    "permutation=",
];
/// Parameters whose value fixes the result's shape: one more element in a
/// size changes it from the printed result type.
const SIZE_PARAMS: &[&str] = &["new_sizes=", "shape=", "slice_sizes=", "sizes="];
/// Parameters naming the result's dtype.
const DTYPE_PARAMS: &[&str] = &["new_dtype=", "dtype=", "preferred_element_type="];

/// Byte range of the first output binder's type on an equation line
/// (`  c:f32[3,4] = ...` or `  c:f32[3] d:i32[] = ...`), if it is one.
fn first_result_type(line: &str) -> Option<(usize, usize)> {
    let eq = line.find(" = ")?;
    let head = &line[..eq];
    let indent = head.len() - head.trim_start().len();
    let first = head[indent..].split(' ').next()?;
    let colon = first.find(':')?;
    let start = indent + colon + 1;
    let end = indent + first.len();
    (first[..colon]
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_')
        && first[colon + 1..].ends_with(']'))
    .then_some((start, end))
}

fn other_dtype(dtype: &str) -> &'static str {
    if dtype.starts_with('f') || dtype.starts_with('c') || dtype.starts_with("bf") {
        "i32"
    } else {
        "f32"
    }
}

/// The defects made on one equation line: its first result's dtype, its first
/// literal dimension, and each axis, size or dtype parameter on the line.
fn defects_of_line(lines: &[&str], at: usize) -> Vec<Defect> {
    let line = lines[at];
    let Some((ts, te)) = first_result_type(line) else {
        return Vec::new();
    };
    let rebuild = |new_line: String| {
        let mut l: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        l[at] = new_line;
        l.join("\n")
    };
    let mut out = Vec::new();
    let ty = &line[ts..te];
    let bracket = ty.find('[').unwrap();
    let dtype = &ty[..bracket];
    if !dtype.starts_with("key<") {
        let changed = format!(
            "{}{}{}",
            &line[..ts],
            other_dtype(dtype),
            &line[ts + bracket..]
        );
        out.push(Defect {
            text: rebuild(changed),
            line: at as u32 + 1,
            what: format!("result dtype {dtype} -> {}", other_dtype(dtype)),
        });
    }
    // The first dimension that is a plain number. Not where the printed type
    // is all that gives the result's shape: JAX prints `broadcast_in_dim`
    // without `shape=` then, and another size is another valid program.
    let rhs_text = &line[te..];
    let shape_elided = rhs_text.contains("= broadcast_in_dim") && !rhs_text.contains("shape=");
    let dims = if shape_elided {
        ""
    } else {
        &ty[bracket + 1..ty.len() - 1]
    };
    let mut offset = ts + bracket + 1;
    for dim in dims.split(',').filter(|d| !d.is_empty()) {
        if let Ok(n) = dim.parse::<u64>() {
            let changed = format!(
                "{}{}{}",
                &line[..offset],
                n + 1,
                &line[offset + dim.len()..]
            );
            out.push(Defect {
                text: rebuild(changed),
                line: at as u32 + 1,
                what: format!("result dimension {n} -> {}", n + 1),
            });
            break;
        }
        offset += dim.len() + 1;
    }
    let rhs = te + line[te..].find(" = ").unwrap_or(0);
    for (params, kind) in [(AXIS_PARAMS, 0), (SIZE_PARAMS, 1), (DTYPE_PARAMS, 2)] {
        for p in params {
            let Some(found) = find_param(&line[rhs..], p) else {
                continue;
            };
            let vstart = rhs + found + p.len();
            let value = &line[vstart..];
            let changed = match kind {
                0 | 1 => {
                    let Some(ds) = value.find(|c: char| c.is_ascii_digit()) else {
                        continue;
                    };
                    let ds_end = ds
                        + value[ds..]
                            .find(|c: char| !c.is_ascii_digit())
                            .unwrap_or(value.len() - ds);
                    // Only a value that is the number itself or the first element
                    // of a tuple (`np.int64(3)` is `(3)` once printed bare).
                    let prefix = &value[..ds];
                    if !(prefix.is_empty() || prefix == "(" || prefix == "(np.int64(") {
                        continue;
                    }
                    let n: u64 = value[ds..ds_end].parse().unwrap();
                    let new = if kind == 0 { 97 } else { n + 1 };
                    format!(
                        "{}{}{}",
                        &line[..vstart + ds],
                        new,
                        &line[vstart + ds_end..]
                    )
                }
                _ => {
                    let end = value.find([' ', ']']).unwrap_or(value.len());
                    let old = &value[..end];
                    let new = match old {
                        "float32" => "int32",
                        "None" => continue,
                        _ => "float32",
                    };
                    format!("{}{}{}", &line[..vstart], new, &line[vstart + end..])
                }
            };
            out.push(Defect {
                text: rebuild(changed),
                line: at as u32 + 1,
                what: format!("parameter {p}{}", &value[..value.len().min(24)]),
            });
        }
    }
    out
}

/// Offset of parameter `name` (e.g. `axes=`) in an equation's first line, as a
/// whole word inside the primitive's `[...]` (not a nested jaxpr's text).
fn find_param(rhs: &str, name: &str) -> Option<usize> {
    let open = rhs.find('[')?;
    let mut from = open;
    while let Some(i) = rhs[from..].find(name) {
        let at = from + i;
        let before = rhs.as_bytes()[at - 1];
        if before == b'[' || before == b' ' {
            return Some(at);
        }
        from = at + name.len();
    }
    None
}

/// Recall of the checker on defects injected into the types and parameters of
/// the programs JAX accepts: a defect counts as found when an error starts on
/// its line.
#[test]
fn injected_defects_are_flagged_on_their_line() {
    let mut rng = Rng::new(22);
    let (mut made, mut found, mut missed) = (0usize, 0usize, Vec::new());
    for p in accepted_programs() {
        // Defects in a program the checker cannot read whole are not the
        // rules' to find.
        if jaxpr_check::check_source(
            jaxpr_check::Source::Text(&p.text),
            jaxpr_check::Keep::Diagnostics,
        )
        .diagnostics()
        .iter()
        .any(|d| d.is_error())
        {
            continue;
        }
        let (path, text) = (p.path, p.text);
        let lines: Vec<&str> = text.lines().collect();
        let eqn_lines: Vec<usize> = (0..lines.len())
            .filter(|&i| first_result_type(lines[i]).is_some())
            .collect();
        if eqn_lines.is_empty() {
            continue;
        }
        // Two equations per program, chosen by a seeded RNG.
        for _ in 0..2 {
            let at = eqn_lines[rng.below(eqn_lines.len())];
            for defect in defects_of_line(&lines, at) {
                made += 1;
                let idx = LineIndex::new(&defect.text);
                let diags = jaxpr_check::check_source(
                    jaxpr_check::Source::Text(&defect.text),
                    jaxpr_check::Keep::Diagnostics,
                )
                .diagnostics();
                if diags
                    .iter()
                    .any(|d| d.is_error() && line_of(&idx, d) == defect.line)
                {
                    found += 1;
                } else {
                    missed.push(format!(
                        "{}:{}: {} not flagged",
                        path.strip_prefix(suite()).unwrap().display(),
                        defect.line,
                        defect.what
                    ));
                }
            }
        }
    }
    let recall = found as f64 / made.max(1) as f64;
    eprintln!("mutation recall: {found}/{made} = {:.2}%", recall * 100.0);
    assert!(made > 5000, "only {made} defects made");
    assert!(
        recall >= MIN_RECALL,
        "recall {found}/{made} = {:.2}% < {:.0}%; missed:\n{}",
        recall * 100.0,
        MIN_RECALL * 100.0,
        missed.join("\n")
    );
}
