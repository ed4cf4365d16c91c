//! The cost model against XLA: every program of the corpora that has XLA's
//! cost analysis of JAX's lowering recorded beside it (`cost.json`, written
//! by `corpus-gen/cost.py`) is checked and costed (loops counted once, as
//! XLA does), and its totals compared with XLA's `flops`, `transcendentals`
//! and `bytes accessed`.
//!
//! Each count must equal XLA's, or differ by no more than the tolerance
//! table (`jaxpr_cost::tolerance::TOLERANCES`) allows for the equations the
//! program has that XLA counts otherwise: a program whose equations all
//! count as XLA does must match exactly. A program no row explains fails
//! the test, with its figures.

use jaxpr_cost::{Amount, LoopCount, Options, analyse};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The folders with programs and their `cost.json`.
fn folders() -> Vec<PathBuf> {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data");
    let mut out = Vec::new();
    for corpus in ["jax-suite", "builds", "ecosystem"] {
        let Ok(entries) = std::fs::read_dir(data.join(corpus)) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.path().join("cost.json").exists() {
                out.push(entry.path());
            }
        }
    }
    out.sort();
    out
}

const COUNTS: [&str; 3] = ["flops", "transcendentals", "bytes_accessed"];

/// How one program's counts compare with XLA's.
#[derive(Debug)]
enum Verdict {
    Exact,
    /// Within the bounds of the rows named.
    Within(Vec<(&'static str, &'static str)>),
    Unexplained(String),
}

struct Outcome {
    program: String,
    ours: [Option<i64>; 3],
    xla: [i64; 3],
    verdict: Verdict,
    slack: jaxpr_cost::Slack,
}

fn constant3(cost: &jaxpr_cost::Cost) -> [Option<i64>; 3] {
    let concrete = |a: &Amount| a.as_constant();
    [
        concrete(&cost.flops),
        concrete(&cost.transcendentals),
        concrete(&cost.bytes_accessed),
    ]
}

/// The main jaxpr's totals with loops counted once, as XLA counts them,
/// and the equations it counts otherwise than XLA.
/// `splat_constants`: the constants the values recorded beside the file
/// say are splats (as `jaxpr stats` reads them).
fn main_cost(
    source: &str,
    splat_constants: BTreeMap<String, f64>,
) -> ([Option<i64>; 3], jaxpr_cost::Slack) {
    let parsed = jaxpr_syntax::parse(source);
    assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
    let analysis = jaxpr_check::check(&parsed.file);
    let cost = analyse(
        &parsed.file,
        &analysis,
        Options {
            loops: LoopCount::Xla,
            splat_constants,
        },
    );
    let main = cost.jaxpr(analysis.main().expect("a main jaxpr"));
    (constant3(&main.total), main.slack.clone())
}

fn run() -> Vec<Outcome> {
    let folders = folders();
    assert!(
        folders.len() >= 8,
        "cost.json missing in tests/data: {folders:?}"
    );
    run_on(folders)
}

fn run_on(folders: Vec<PathBuf>) -> Vec<Outcome> {
    let mut outcomes = Vec::new();
    for folder in folders {
        let text = std::fs::read_to_string(folder.join("cost.json")).unwrap();
        let recorded: Value = serde_json::from_str(&text).unwrap();
        for (name, figures) in recorded["programs"].as_object().unwrap() {
            let path = folder.join(format!("{name}.jaxpr"));
            let source = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let splats = jaxpr_lower::recorded::Recorded::for_file(&path, None)
                .unwrap_or_else(|e| panic!("{e}"))
                .splat_constants();
            let (ours, slack) = main_cost(&source, splats);
            let xla = COUNTS.map(|key| figures[key].as_f64().unwrap() as i64);
            let verdict = if ours.iter().zip(&xla).all(|(o, x)| *o == Some(*x)) {
                Verdict::Exact
            } else {
                match slack.range() {
                    Err(uncovered) => {
                        Verdict::Unexplained(format!("no tolerance for {uncovered:?}"))
                    }
                    Ok((below, above)) => {
                        let (below, above) = (constant3(&below), constant3(&above));
                        let outside: Vec<String> = (0..3)
                            .filter(|&i| match (ours[i], below[i], above[i]) {
                                (Some(o), Some(b), Some(a)) => xla[i] < o - b || xla[i] > o + a,
                                _ => true,
                            })
                            .map(|i| {
                                format!(
                                    "{} {:?} not within -{:?} +{:?}",
                                    COUNTS[i], ours[i], below[i], above[i]
                                )
                            })
                            .collect();
                        if outside.is_empty() {
                            Verdict::Within(slack.0.keys().copied().collect())
                        } else {
                            Verdict::Unexplained(outside.join("; "))
                        }
                    }
                }
            };
            outcomes.push(Outcome {
                program: format!(
                    "{}/{name}",
                    folder
                        .strip_prefix(folder.parent().unwrap().parent().unwrap())
                        .unwrap()
                        .display()
                ),
                ours,
                xla,
                verdict,
                slack,
            });
        }
    }
    outcomes
}

/// Writes, for `COST_CALIBRATE=FILE`, one line per program that is not
/// exact: its figures and what its differing equations amount to (what
/// the tolerance table's bounds were measured from).
fn calibration(outcomes: &[Outcome]) {
    let Ok(out) = std::env::var("COST_CALIBRATE") else {
        return;
    };
    let lines: Vec<String> = outcomes
        .iter()
        .filter(|o| !matches!(o.verdict, Verdict::Exact))
        .map(|o| {
            let units: Vec<Value> = o
                .slack
                .0
                .iter()
                .map(|((primitive, why), u)| {
                    serde_json::json!({"primitive": primitive, "why": why, "eqns": u.eqns.as_constant(), "elements": u.elements.as_constant(),
                        "bytes": u.bytes.as_constant(), "body": constant3(&u.body)})
                })
                .collect();
            let verdict = match &o.verdict {
                Verdict::Unexplained(why) => why.clone(),
                _ => "within".to_string(),
            };
            serde_json::json!({"program": o.program, "ours": o.ours, "xla": o.xla, "units": units, "verdict": verdict}).to_string()
        })
        .collect();
    std::fs::write(out, lines.join("\n")).unwrap();
}

/// What the tolerance table does not explain yet, by cause, as measured
/// (`docs/log/2026-11-28-cost-unexplained-2.md` lists the programs): the
/// test holds each figure exactly, so that a changed rule, bound or corpus
/// shows here and is looked at.
const EXPECTED: Expected = Expected {
    exact: 4005,
    within: 1317,
    // Every equation counted as XLA does, yet XLA's figure differs:
    // flax's `encoder_block_grad`.
    unexplained_all_equal: 1,
    // A count did not resolve.
    unexplained_unresolved: 0,
    // A primitive neither the registry nor a tolerance row knows.
    unexplained_library_primitive: 0,
    // Outside the bounds of the rows the program has: equinox's
    // `mlp_adam_make_step` (2 FLOPs and 8 bytes more in XLA).
    unexplained_beyond_bounds: 1,
};

#[derive(Debug, PartialEq, Eq)]
struct Expected {
    exact: usize,
    within: usize,
    unexplained_all_equal: usize,
    unexplained_unresolved: usize,
    unexplained_library_primitive: usize,
    unexplained_beyond_bounds: usize,
}

#[test]
fn costs_equal_xlas_or_within_the_stated_tolerance() {
    let outcomes = run();
    calibration(&outcomes);
    let mut by_row: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    let mut found = Expected {
        exact: 0,
        within: 0,
        unexplained_all_equal: 0,
        unexplained_unresolved: 0,
        unexplained_library_primitive: 0,
        unexplained_beyond_bounds: 0,
    };
    let mut unexplained = Vec::new();
    for o in &outcomes {
        match &o.verdict {
            Verdict::Exact => found.exact += 1,
            Verdict::Within(rows) => {
                found.within += 1;
                for row in rows {
                    *by_row.entry(*row).or_default() += 1;
                }
            }
            Verdict::Unexplained(why) => {
                if o.ours.iter().any(Option::is_none) {
                    found.unexplained_unresolved += 1;
                } else if o.slack.0.keys().any(|(primitive, _)| {
                    *primitive == jaxpr_cost::tolerance::library_primitive("")
                }) {
                    found.unexplained_library_primitive += 1;
                } else if o.slack.is_empty() {
                    found.unexplained_all_equal += 1;
                } else {
                    found.unexplained_beyond_bounds += 1;
                }
                unexplained.push(format!(
                    "{}: ours {:?}, XLA's {:?}: {why}",
                    o.program, o.ours, o.xla
                ));
            }
        }
    }
    eprintln!(
        "{} programs with XLA's cost: {} exact, {} within the stated tolerance, {} unexplained",
        outcomes.len(),
        found.exact,
        found.within,
        unexplained.len()
    );
    for ((primitive, why), count) in &by_row {
        eprintln!("  {count:5} with `{primitive}`: {why}");
    }
    if let Ok(out) = std::env::var("COST_UNEXPLAINED") {
        std::fs::write(out, unexplained.join("\n")).unwrap();
    }
    assert_eq!(
        found,
        EXPECTED,
        "the comparison with XLA changed (COST_UNEXPLAINED=FILE lists the unexplained programs); the first unexplained:\n{}",
        unexplained
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Random programs (`corpus-gen/cost_random/random_programs.py sample 300
/// tests/data/cost-random`, seeds 0-299, XLA's figures in `cost.json`):
/// each program's counts equal XLA's, or it has an equation the tolerance
/// table names as counted otherwise by XLA (a named XLA behaviour). The
/// figures are held exactly so that a change shows. `COST_RANDOM=DIR`
/// judges another folder the generator wrote (the full run) and prints its
/// figures instead (with `COST_CALIBRATE=FILE`, each program that is not
/// exact: its figures and rows).
#[test]
fn random_programs_cost_what_xla_says() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/cost-random");
    let full = std::env::var("COST_RANDOM").ok().map(PathBuf::from);
    let outcomes = run_on(vec![full.clone().unwrap_or(data)]);
    let (mut exact, mut named, mut unnamed) = (0, 0, Vec::new());
    let mut by_row: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for o in &outcomes {
        match &o.verdict {
            Verdict::Exact => exact += 1,
            _ if o.slack.is_empty() => unnamed.push(format!(
                "{}: ours {:?}, XLA's {:?}",
                o.program, o.ours, o.xla
            )),
            _ => {
                named += 1;
                for row in o.slack.0.keys() {
                    *by_row.entry(*row).or_default() += 1;
                }
            }
        }
    }
    eprintln!(
        "{} random programs: {exact} exact, {named} with an equation XLA counts otherwise, {} neither",
        outcomes.len(),
        unnamed.len()
    );
    if full.is_some() {
        calibration(&outcomes);
        for ((primitive, why), count) in &by_row {
            eprintln!("  {count:5} with `{primitive}`: {why}");
        }
        eprintln!("{}", unnamed.join("\n"));
        return;
    }
    assert_eq!(
        (outcomes.len(), exact, named, unnamed.len()),
        RANDOM_EXPECTED,
        "{}",
        unnamed.join("\n")
    );
}

/// (programs, exact, with a named XLA behaviour, neither) of the sample.
const RANDOM_EXPECTED: (usize, usize, usize, usize) = (300, 297, 3, 0);

/// That program `text` (`name`: its seed's program) costs what XLA counted.
fn assert_xla(text: &str, xla: [i64; 3], name: &str) {
    assert_eq!(totals(text), xla.map(Some), "{name}");
}

/// A program's totals (FLOPs, transcendentals, bytes accessed).
fn totals(text: &str) -> [Option<i64>; 3] {
    main_cost(text, BTreeMap::new()).0
}

/// Found by `corpus-gen/cost_random` (seeds 2,000,016 and 2,000,018), with
/// XLA's figures for JAX's lowering: a `rev` of only an axis of size 1 is
/// its operand (XLA counts `pow` alone), and a `select_n` of constants (an
/// index JAX normalises) folds with them, leaving the `dynamic_slice`.
#[test]
fn a_unit_reverse_and_a_select_of_constants_cost_nothing() {
    let reverse = "{ lambda ; a:f32[1,2,4]. let
    b:f32[1,2,4] = rev[dimensions=(0,)] a
    c:f32[1,2,4] = pow a b
  in (c,) }";
    assert_eq!(totals(reverse), [Some(0), Some(8), Some(96)]);
    let select = "{ lambda ; a:i8[3,5]. let
    b:bool[] = lt 3:i32[] 0:i32[]
    c:i32[] = add 3:i32[] 3:i32[]
    d:i32[] = select_n b 3:i32[] c
    e:i8[1,5] = dynamic_slice[slice_sizes=(1, 5)] a d 0:i32[]
  in (e,) }";
    assert_eq!(totals(select), [Some(0), Some(0), Some(10)]);
}

/// A strided, padded, dilated convolution: XLA counts only the kernel taps
/// that read an input element (`GetConvolutionFlops`), 3,024 FLOPs here
/// (`jax.jit(f).lower(a, b).cost_analysis()`, jax 0.10.2), where every tap
/// of every output is 2·(2·4·3·9)·(3·3·2) = 7,776.
#[test]
fn a_convolution_counts_the_taps_inside_its_input() {
    let conv = "{ lambda ; a:f32[2,3,7,5] b:f32[4,3,3,2]. let
    c:f32[2,4,3,9] = conv_general_dilated[
      batch_group_count=1
      dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2, 3), rhs_spec=(0, 1, 2, 3), out_spec=(0, 1, 2, 3))
      feature_group_count=1
      lhs_dilation=(1, 2)
      out_sharding=None
      padding=((1, 2), (0, 1))
      precision=None
      preferred_element_type=None
      rhs_dilation=(2, 1)
      window_strides=(2, 1)
    ] a b
  in (c,) }";
    assert_eq!(totals(conv), [Some(3024), Some(0), Some(1992)]);
    // The same dimension numbers in the other forms the checker reads
    // (`jaxpr_check::params::ConvSpecs`) count the same taps; the cost
    // model read only the keyword form before (no FLOPs for these).
    let named =
        "ConvDimensionNumbers(lhs_spec=(0, 1, 2, 3), rhs_spec=(0, 1, 2, 3), out_spec=(0, 1, 2, 3))";
    for other in [
        "None",
        "ConvDimensionNumbers((0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3))",
        "((0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3))",
    ] {
        let conv = conv.replace(named, other);
        assert_eq!(totals(&conv), [Some(3024), Some(0), Some(1992)], "{other}");
    }
}

/// JAX lowers a cumulative reduction (its default lowering, CPU's; jax
/// 0.4.30 and 0.10.2) to a `reduce_window` whose window spans the axis,
/// padded by its length − 1: XLA counts the combiner (length − 1) times per
/// result element, and reads the operand and the initial value and writes
/// the result. XLA's figures: `jax.jit(f).lower(x).cost_analysis()`, jax
/// 0.10.2 (`corpus-gen/cost_random/cumulative.py`); the model counted no
/// FLOPs for a `cumsum` before.
#[test]
fn a_cumulative_reduction_counts_its_window_reduction() {
    let one = |prim: &str, ty: &str, axis: usize, reverse: &str| {
        format!(
            "{{ lambda ; a:{ty}. let b:{ty} = {prim}[axis={axis} reverse={reverse}] a in (b,) }}"
        )
    };
    // 3 × 4 results, each 3 additions; 48 + 4 + 48 bytes.
    let cumsum = one("cumsum", "f32[3,4]", 1, "False");
    assert_eq!(totals(&cumsum), [Some(36), Some(0), Some(100)]);
    // `logaddexp`'s body: 8 FLOPs and 2 transcendentals a combination.
    let logsumexp = one("cumlogsumexp", "f16[5,2]", 0, "True");
    assert_eq!(totals(&logsumexp), [Some(320), Some(80), Some(42)]);
    // Complex `min` compares real, then imaginary parts: 9 FLOPs.
    let complex_min = one("cummin", "c64[4]", 0, "False");
    assert_eq!(totals(&complex_min), [Some(108), Some(0), Some(72)]);
    // An axis of length 1: a window of one element, no combination.
    let unit = one("cumprod", "i8[4,1,3]", 1, "False");
    assert_eq!(totals(&unit), [Some(0), Some(0), Some(25)]);
    // An empty result: nothing.
    let empty = one("cummax", "i32[2,0,3]", 0, "False");
    assert_eq!(totals(&empty), [Some(0), Some(0), Some(0)]);
}

/// JAX lowers `dynamic_slice` and `dynamic_update_slice` of static shapes
/// as they are (the index normalisation is in the jaxpr): XLA's
/// `HandleDynamicSlice` counts twice the result and the first start index,
/// `HandleDynamicUpdateSlice` twice the update and the first start index.
/// Constant start indices make a `dynamic_slice` a `slice` (of the whole
/// operand: nothing); an update of the whole operand at zero indices is
/// the update. XLA's figures: `jax.jit(f).lower(...).cost_analysis()`, jax
/// 0.10.2; the model counted a `dynamic_update_slice` as twice its result
/// and a `dynamic_slice` of the whole operand as a copy before.
#[test]
fn dynamic_slices_count_the_update_and_the_first_index() {
    let constant = "{ lambda ; a:f32[3,4]. let
    b:f32[2,4] = dynamic_slice[slice_sizes=(2, 4)] a 1:i32[] 0:i32[]
  in (b,) }";
    assert_eq!(totals(constant), [Some(0), Some(0), Some(64)]);
    let traced = "{ lambda ; a:f32[3,4] b:i32[]. let
    c:bool[] = lt b 0:i32[]
    d:i32[] = add b 3:i32[]
    e:i32[] = select_n c b d
    f:f32[2,4] = dynamic_slice[slice_sizes=(2, 4)] a e 0:i32[]
  in (f,) }";
    assert_eq!(totals(traced), [Some(3), Some(0), Some(102)]);
    let whole = "{ lambda ; a:f32[3,4]. let
    b:f32[3,4] = dynamic_slice[slice_sizes=(3, 4)] a 2:i32[] 0:i32[]
  in (b,) }";
    assert_eq!(totals(whole), [Some(0), Some(0), Some(0)]);
    let update = "{ lambda ; a:f32[3,4] b:f32[1,4] c:i32[]. let
    d:bool[] = lt c 0:i32[]
    e:i32[] = add c 3:i32[]
    f:i32[] = select_n d c e
    g:f32[3,4] = dynamic_update_slice a b f 0:i32[]
  in (g,) }";
    assert_eq!(totals(update), [Some(3), Some(0), Some(70)]);
    let int8 = "{ lambda ; a:f32[3,4] b:f32[1,4]. let
    c:f32[3,4] = dynamic_update_slice a b 1:i8[] 0:i8[]
  in (c,) }";
    assert_eq!(totals(int8), [Some(0), Some(0), Some(33)]);
    let replaced = "{ lambda ; a:f32[3,4] b:f32[3,4]. let
    c:f32[3,4] = dynamic_update_slice a b 0:i32[] 0:i32[]
  in (c,) }";
    assert_eq!(totals(replaced), [Some(0), Some(0), Some(0)]);
    let clamped = "{ lambda ; a:f32[3,4] b:f32[3,4]. let
    c:f32[3,4] = dynamic_update_slice a b 1:i32[] 0:i32[]
  in (c,) }";
    assert_eq!(totals(clamped), [Some(0), Some(0), Some(100)]);
}

/// XLA's `HandleSort` counts n × ⌈log₂ n⌉ FLOPs for the n elements of the
/// first operand, whatever the dimension, dtype, number of keys or
/// comparator, and reads the operands and writes the results. XLA's
/// figures: `jax.jit(f).lower(...).cost_analysis()`, jax 0.10.2; the model
/// counted no FLOPs for a `sort` before.
#[test]
fn a_sort_counts_n_log_n() {
    let rows = "{ lambda ; a:f32[4,5]. let
    b:f32[4,5] = sort[dimension=1 is_stable=True num_keys=1] a
  in (b,) }";
    assert_eq!(totals(rows), [Some(100), Some(0), Some(160)]);
    let booleans = "{ lambda ; a:bool[6]. let
    b:bool[6] = sort[dimension=0 is_stable=True num_keys=1] a
  in (b,) }";
    assert_eq!(totals(booleans), [Some(18), Some(0), Some(12)]);
    let one = "{ lambda ; a:f32[1]. let
    b:f32[1] = sort[dimension=0 is_stable=True num_keys=1] a
  in (b,) }";
    assert_eq!(totals(one), [Some(0), Some(0), Some(8)]);
    let keys = "{ lambda ; a:f32[5] b:i32[5]. let
    c:f32[5] d:i32[5] = sort[dimension=0 is_stable=True num_keys=2] a b
  in (c, d) }";
    assert_eq!(totals(keys), [Some(15), Some(0), Some(96)]);
}

/// A `jit` whose result only an empty slice reads (seed 2,001,868 of
/// `corpus-gen/cost_random`): JAX's dead-code elimination keeps it (the
/// slice reads it), the canonicalisation folds the slice to an empty
/// constant but keeps the `func.call`, and XLA counts it and what it
/// reads (180 FLOPs, 210 bytes); the model dropped it before.
#[test]
fn a_jit_read_only_by_an_empty_slice_is_counted() {
    let program = "{ lambda ; a:i8[1,2,5]. let
    b:i8[3,2,5] = concatenate[dimension=0] a a a
    c:i8[3,2,5] = mul b b
    d:i8[3,2,5] = jit[
      name=sort
      jaxpr={ lambda ; c:i8[3,2,5]. let
          d:i8[3,2,5] = sort[dimension=0 is_stable=True num_keys=1] c
        in (d,) }
    ] c
    e:i8[0,2,5] = slice[
      limit_indices=(3, 2, 5)
      start_indices=(3, 0, 0)
      strides=None
    ] d
  in (e,) }";
    assert_eq!(totals(program), [Some(180), Some(0), Some(210)]);
    // Through a chain of empty results (seed 2,000,280).
    let chained = "{ lambda ; a:bf16[3]. let
    b:bf16[2] = dynamic_slice[slice_sizes=(2,)] a 3:i32[]
    c:bf16[2] = jit[
      name=sort
      jaxpr={ lambda ; b:bf16[2]. let
          c:bf16[2] = sort[dimension=0 is_stable=True num_keys=1] b
        in (c,) }
    ] b
    d:bf16[0] = dynamic_slice[slice_sizes=(0,)] c 3:i32[]
    e:bf16[0] = concatenate[dimension=0] d d d
  in (e,) }";
    assert_eq!(totals(chained), [Some(2), Some(0), Some(16)]);
}

/// JAX lowers `while` and `scan` to an HLO `while` over a tuple of the
/// carried values, which XLA's `HandleTuple` counts (8 bytes a value) where
/// the tuple is built and where the body returns it; a constant the body
/// returns unchanged (a `fori_loop`'s constant bound) is not carried, a
/// single value is no tuple. A `scan` adds a counter and its comparison,
/// a broadcast zero buffer per `ys`, and per iteration a `dynamic_slice`
/// of each `xs` row and a `dynamic_update_slice` of each `ys` row (and,
/// reversed, two subtractions for the row index). XLA's figures:
/// `jax.jit(f).lower(...).cost_analysis()`, jax 0.10.2; the model counted
/// the body alone before (121 bytes here were 89).
#[test]
fn loops_count_their_tuples_counter_and_slices() {
    // `fori_loop(0, n, lambda i, c: c * 2, x)`: the traced bound is carried.
    let traced_bound = "{ lambda ; a:f32[3] b:i32[]. let
    _:i32[] _:i32[] c:f32[3] = while[
      body_jaxpr={ lambda ; d:i32[] e:i32[] f:f32[3]. let
          g:i32[] = add d 1:i32[]
          h:f32[3] = mul f 2.0:f32[]
        in (g, e, h) }
      body_nconsts=0
      cond_jaxpr={ lambda ; i:i32[] j:i32[] k:f32[3]. let
          l:bool[] = lt i j
        in (l,) }
      cond_nconsts=0
    ] 0:i32[] b a
  in (c,) }";
    assert_eq!(totals(traced_bound), [Some(5), Some(0), Some(121)]);
    // The same with the constant bound 2: two values carried, not three.
    let constant_bound = traced_bound
        .replace(
            "{ lambda ; a:f32[3] b:i32[]. let",
            "{ lambda ; a:f32[3]. let",
        )
        .replace("] 0:i32[] b a", "] 0:i32[] 2:i32[] a");
    assert_eq!(totals(&constant_bound), [Some(5), Some(0), Some(105)]);
    // One carried value: no tuple.
    let single = "{ lambda ; a:f32[3]. let
    b:f32[3] = while[
      body_jaxpr={ lambda ; c:f32[3]. let d:f32[3] = mul c 2.0:f32[] in (d,) }
      body_nconsts=0
      cond_jaxpr={ lambda ; e:f32[3]. let
          f:f32[1] = slice[limit_indices=(1,) start_indices=(0,) strides=None] e
          g:f32[] = squeeze[dimensions=(0,)] f
          h:bool[] = lt g 3.0:f32[]
        in (h,) }
      cond_nconsts=0
    ] a
  in (b,) }";
    assert_eq!(totals(single), [Some(4), Some(0), Some(77)]);
    let ys = "{ lambda ; a:f32[2,3]. let
    b:f32[2,3] c:f32[3] = scan[
      jaxpr={ lambda ; d:f32[2,3]. let
          e:f32[2,3] = mul d 2.0:f32[]
          f:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] e
        in (e, f) }
      length=3
      num_carry=1
      num_consts=0
      reverse=False
      unroll=1
    ] a
  in (b, c) }";
    assert_eq!(totals(ys), [Some(13), Some(0), Some(269)]);
    let reversed_xs = "{ lambda ; a:f32[3] b:f32[2,3]. let
    c:f32[3] d:f32[2,3] = scan[
      jaxpr={ lambda ; e:f32[3] f:f32[3]. let
          g:f32[3] = add e f
          h:f32[3] = mul e f
        in (g, h) }
      length=2
      num_carry=1
      num_consts=0
      reverse=True
      unroll=1
    ] a b
  in (c, d) }";
    assert_eq!(totals(reversed_xs), [Some(10), Some(0), Some(345)]);
}

/// XLA's `HandleScatter`: three times the updates' bytes and the indices'
/// once, the update computation's FLOPs and transcendentals once per
/// update element (a complex `max` is JAX's comparison of real, then
/// imaginary parts: 9); for `mode=CLIP`, the `clamp` JAX puts before it,
/// between a splat zero and a vector of bounds broadcast to the indices.
/// XLA's figures: `jax.jit(f).lower(*args).cost_analysis()`, jax 0.10.2.
/// The model counted the scatter as a move of its operands and results
/// (404 bytes for the first) and its combiner once.
#[test]
fn a_scatter_counts_its_updates_three_times_and_its_combiner_per_update() {
    let dims = |window: &str, inserted: &str, to_operand: &str| {
        format!(
            "ScatterDimensionNumbers(update_window_dims={window}, inserted_window_dims={inserted}, scatter_dims_to_operand_dims={to_operand}, operand_batching_dims=(), scatter_indices_batching_dims=())"
        )
    };
    let scatter = |prim: &str, dims: &str, mode: &str, combiner: &str| {
        format!(
            "{prim}[
      dimension_numbers={dims}
      indices_are_sorted=True
      mode=GatherScatterMode.{mode}
      unique_indices=True
      update_consts=()
      update_jaxpr={combiner}
    ]"
        )
    };
    let add = "{ lambda ; e:f32[] f:f32[]. let g:f32[] = add e f in (g,) }";
    let row_add = format!(
        "{{ lambda ; a:f32[5,2,4]. let
    b:i32[1] = broadcast_in_dim 3:i32[]
    c:f32[2,4] = broadcast_in_dim 1.0:f32[]
    d:f32[5,2,4] = {} a b c
  in (d,) }}",
        scatter(
            "scatter-add",
            &dims("(0, 1)", "(0,)", "(0,)"),
            "FILL_OR_DROP",
            add
        )
    );
    assert_eq!(totals(&row_add), [Some(8), Some(0), Some(136)]);
    let clipped = format!(
        "{{ lambda ; a:f32[5,3] b:i32[3]. let
    c:bool[3] = lt b 0:i32[]
    d:i32[3] = add b 5:i32[]
    e:i32[3] = select_n c b d
    f:i32[3] = broadcast_in_dim 1:i32[]
    g:i32[3] = convert_element_type[new_dtype=int32 weak_type=False] f
    h:i32[3,1] = broadcast_in_dim[broadcast_dimensions=(0,)] e
    i:i32[3,1] = broadcast_in_dim[broadcast_dimensions=(0,)] g
    j:i32[3,2] = concatenate[dimension=1] h i
    k:f32[3] = broadcast_in_dim 2.0:f32[]
    l:f32[5,3] = {} a j k
  in (l,) }}",
        scatter("scatter-add", &dims("()", "(0, 1)", "(0, 1)"), "CLIP", add)
    );
    assert_eq!(totals(&clipped), [Some(18), Some(0), Some(454)]);
    let applied = format!(
        "{{ lambda ; a:f32[4,3]. let
    b:i32[1] = broadcast_in_dim 1:i32[]
    c:f32[3] = broadcast_in_dim 0.0:f32[]
    d:f32[4,3] = {} a b c
  in (d,) }}",
        scatter(
            "scatter",
            &dims("(0,)", "(0,)", "(0,)"),
            "FILL_OR_DROP",
            "{ lambda ; e:f32[] f:f32[]. let g:f32[] = sin e in (g,) }"
        )
    );
    assert_eq!(totals(&applied), [Some(0), Some(3), Some(56)]);
    let complex_max = format!(
        "{{ lambda ; a:c64[4,2]. let
    b:i32[1] = broadcast_in_dim 1:i32[]
    c:c64[2] = broadcast_in_dim (1+0j):c64[]
    d:c64[4,2] = {} a b c
  in (d,) }}",
        scatter(
            "scatter-max",
            &dims("(0,)", "(0,)", "(0,)"),
            "FILL_OR_DROP",
            "{ lambda ; e:c64[] f:c64[]. let g:c64[] = max e f in (g,) }"
        )
    );
    assert_eq!(totals(&complex_max), [Some(18), Some(0), Some(76)]);
}

/// JAX lowers `argmax`/`argmin` to a `broadcasted_iota` of the indices and
/// a variadic `reduce` of values and indices, whose comparator XLA counts
/// per folded element: 9 FLOPs for floats (with the NaN test), 7 for
/// integers and booleans. An `iota` along an axis of one element is zeros:
/// a splat constant, which `x + iota` folds away. XLA's figures:
/// `jax.jit(f).lower(x).cost_analysis()`, jax 0.10.2; the model counted
/// nothing for `argmax` before, and the `iota` and the `add` here.
#[test]
fn argmax_counts_its_comparator_per_folded_element() {
    let one = |prim: &str, ty: &str, axis: usize, result: &str| {
        format!(
            "{{ lambda ; a:{ty}. let b:{result} = {prim}[axes=({axis},) index_dtype=int32] a in (b,) }}"
        )
    };
    // (15 − 3) × 9 FLOPs; iota 20 + its broadcast 80, the reduce 152.
    let float = one("argmax", "f32[3,5]", 1, "i32[3]");
    assert_eq!(totals(&float), [Some(108), Some(0), Some(252)]);
    let unsigned = one("argmin", "u8[4,2]", 1, "i32[4]");
    assert_eq!(totals(&unsigned), [Some(28), Some(0), Some(113)]);
    let boolean = one("argmax", "bool[4,2]", 0, "i32[2]");
    assert_eq!(totals(&boolean), [Some(42), Some(0), Some(119)]);
    // An axis of one element: no comparison; the indices a broadcast zero.
    let unit = one("argmax", "f16[1,3]", 0, "i32[3]");
    assert_eq!(totals(&unit), [Some(0), Some(0), Some(58)]);
    let plus_zeros = "{ lambda ; a:f32[1,3]. let
    b:f32[1,3] = iota[dimension=0 dtype=float32 shape=(1, 3) sharding=None] 
    c:f32[1,3] = add a b
  in (c,) }";
    assert_eq!(totals(plus_zeros), [Some(0), Some(0), Some(0)]);
}

/// Primitives JAX lowers to a fixed formula of elementwise instructions
/// (`exp2`, `atan`, `logistic`, `nextafter`, `sign` of an unsigned
/// integer): XLA counts each instruction and each splat constant once, and
/// StableHLO's canonicalisation folds the steps of constants (`nextafter`
/// of a constant `y` keeps 22 of its 24 instructions, of two constants 18,
/// its NaN select then picking a branch and the NaN's bits unread). XLA's
/// figures: `jax.jit(f).lower(x).cost_analysis()`, jax 0.10.2; the model
/// counted one instruction each before (`nextafter` of `f32[4]`: 4 FLOPs).
#[test]
fn formulas_count_each_instruction_and_fold_their_constants() {
    let logistic = "{ lambda ; a:f32[2,3]. let b:f32[2,3] = logistic a in (b,) }";
    assert_eq!(totals(logistic), [Some(18), Some(6), Some(268)]);
    let unsigned_sign = "{ lambda ; a:u8[2,3]. let b:u8[2,3] = sign a in (b,) }";
    assert_eq!(totals(unsigned_sign), [Some(12), Some(0), Some(56)]);
    let toward_constant = "{ lambda ; a:f32[4]. let
    b:f32[4] = broadcast_in_dim 1.0:f32[]
    c:f32[4] = mul 2.0:f32[] b
    d:f32[4] = nextafter a c
  in (d,) }";
    assert_eq!(totals(toward_constant), [Some(88), Some(0), Some(1044)]);
    let of_constants = "{ lambda ; a:f32[3]. let
    b:f32[3] = broadcast_in_dim 1.0:f32[]
    c:f32[3] = broadcast_in_dim 0.0:f32[]
    d:f32[3] = nextafter b c
    e:f32[3] = add a d
  in (e,) }";
    assert_eq!(totals(of_constants), [Some(54), Some(0), Some(670)]);
}

/// Found by `corpus-gen/cost_random` (seeds 2,000,126 and 2,000,165): a
/// splat constant of size-1 axes that an elementwise equation reads at a
/// larger shape is folded into a splat of that shape, one scalar and the
/// result's bytes; the smaller splat itself is never built. XLA's figures:
/// `jax.jit(f).lower(x).cost_analysis()`, jax 0.10.2; the model counted the
/// small splat and the broadcast of an array (120 and 16 bytes over).
#[test]
fn a_splat_read_at_a_larger_shape_is_a_splat_of_that_shape() {
    let converted_true = "{ lambda ; a:bool[5,4,5]. let
    b:bool[5] = broadcast_in_dim True:bool[]
    c:i32[5,4,5] = convert_element_type[new_dtype=int32 weak_type=False] a
    d:i32[5] = convert_element_type[new_dtype=int32 weak_type=False] b
    e:i32[1,1,5] = broadcast_in_dim[broadcast_dimensions=(2,)] d
    f:bool[5,4,5] = ge c e
  in (f,) }";
    assert_eq!(totals(converted_true), [Some(200), Some(0), Some(1804)]);
    let one = "{ lambda ; a:f32[3,1]. let
    b:f32[1] = broadcast_in_dim 1.0:f32[]
    c:f32[1,1] = broadcast_in_dim[broadcast_dimensions=(1,)] b
    d:bool[3,1] = ne a c
  in (d,) }";
    assert_eq!(totals(one), [Some(3), Some(0), Some(43)]);
}

/// Found by `corpus-gen/cost_random` (seeds 2,001,656 and 2,001,939): a
/// reduction of an empty operand is its initial value, a constant, and so
/// is a reduction over no axis of a constant: what follows folds, and XLA
/// counts nothing (`jax.jit(f).lower(x).cost_analysis()`, jax 0.10.2: the
/// module is one `constant`). The model counted the `neg` and the `div`.
#[test]
fn a_reduction_of_nothing_is_a_constant_that_folds_onwards() {
    let neg = "{ lambda ; a:u8[0]. let
    b:u32[0] = convert_element_type[new_dtype=uint32 weak_type=False] a
    c:u32[] = reduce_sum[axes=(0,) out_sharding=None] b
    d:u32[] = neg c
    e:u32[] = reduce_sum[axes=() out_sharding=None] d
  in (e,) }";
    assert_eq!(totals(neg), [Some(0), Some(0), Some(0)]);
    let div = "{ lambda ; a:i8[0]. let
    b:f32[0] = convert_element_type[new_dtype=float32 weak_type=False] a
    c:f32[] = reduce_sum[axes=(0,) out_sharding=None] b
    d:f32[] = div c 0.0:f32[]
    e:f32[] = reduce_max[axes=()] d
  in (e,) }";
    assert_eq!(totals(div), [Some(0), Some(0), Some(0)]);
}

/// XLA's `HandleGather`: twice the result's bytes and the indices', no
/// FLOPs; `mode=CLIP` adds nothing (XLA clamps); `mode=FILL_OR_DROP` is
/// JAX's `_gather_fill` around it: the bounds test of each start index
/// (`ge`, `le`, `and`, a `reduce`), the mask broadcast to the result and a
/// `select` of the fill value. XLA's figures:
/// `jax.jit(f).lower(x, i).cost_analysis()`, jax 0.10.2 (and 0.4.30, whose
/// lowering computes the bounds at run time, for `take_along_axis` in the
/// corpora). The model counted a gather as a move of its operands and
/// result (200 bytes for the first).
#[test]
fn a_gather_counts_its_result_twice_and_its_fill_mask() {
    let gather = |mode: &str, fill: &str| {
        format!(
            "{{ lambda ; a:f32[5,3] b:i32[2]. let
    c:bool[2] = lt b 0:i32[]
    d:i32[2] = add b 5:i32[]
    e:i32[2] = select_n c b d
    f:i32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] e
    g:f32[2,3] = gather[
      dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())
      fill_value={fill}
      indices_are_sorted=False
      mode=GatherScatterMode.{mode}
      slice_sizes=(1, 3)
      unique_indices=False
    ] a f
  in (g,) }}"
        )
    };
    assert_eq!(
        totals(&gather("PROMISE_IN_BOUNDS", "None")),
        [Some(6), Some(0), Some(164)]
    );
    // The index normalisation, then the mask (jnp.take(mode="fill")).
    assert_eq!(
        totals(&gather("FILL_OR_DROP", "nan")),
        [Some(18), Some(0), Some(349)]
    );
}

/// Found by `corpus-gen/cost_random` (seed 2,000,305): closed-over gather
/// indices (`x[idx]`, values not printed) into an axis of one element,
/// which JAX promises are in bounds, are all zero after its normalisation:
/// a splat constant, whose broadcast XLA counts (12 bytes), where a
/// closed-over array of other values is a dense constant (nothing).
#[test]
fn promised_indices_into_a_unit_axis_are_a_splat_zero() {
    let text = "{ lambda a:i32[3]; b:u32[1,2,4]. let
    c:bool[3] = lt a 0:i32[]
    d:i32[3] = add a 1:i32[]
    e:i32[3] = select_n c a d
    f:i32[3,1] = broadcast_in_dim[broadcast_dimensions=(0,)] e
    g:u32[3,2,4] = gather[
      dimension_numbers=GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())
      fill_value=None
      indices_are_sorted=False
      mode=GatherScatterMode.PROMISE_IN_BOUNDS
      slice_sizes=(1, 2, 4)
      unique_indices=False
    ] b f
  in (g,) }";
    assert_eq!(totals(text), [Some(0), Some(0), Some(220)]);
}

/// A `scan` (and a `fori_loop`, lowered as one) whose read results are
/// all empty keeps its counter's loop: XLA counts the counter's `add` and
/// the comparison (2 FLOPs, 21 bytes; `jax.jit(f).lower(x).cost_analysis()`,
/// jax 0.10.2), where a `while` of empty results is erased. The model
/// erased both (seed 2,000,218: 0 counted).
#[test]
fn a_scan_of_an_empty_carry_keeps_its_counter() {
    let text = "{ lambda ; a:f16[2,0]. let
    b:f16[2,0] _:f16[3] = scan[
      jaxpr={ lambda ; c:f16[2,0]. let
          d:f16[2,0] = rev[dimensions=(0,)] c
          e:f32[2,0] = convert_element_type[new_dtype=float32 weak_type=False] d
          f:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] e
          g:f16[] = convert_element_type[new_dtype=float16 weak_type=False] f
        in (d, g) }
      length=3
      num_carry=1
      num_consts=0
      reverse=False
      unroll=1
    ] a
  in (b,) }";
    assert_eq!(totals(text), [Some(2), Some(0), Some(21)]);
}

/// A `transpose` that moves only size-1 axes is a `reshape` to
/// StableHLO's canonicalisation: it joins a chain of reshapes, and one to
/// its own shape is nothing (XLA's figures, jax 0.10.2, seeds 2,000,711 and
/// 2,001,000; the model counted the transpose as a reshape of its own).
#[test]
fn a_transpose_of_unit_axes_is_a_reshape_in_a_chain() {
    let after_reshape = "{ lambda ; a:f32[1]. let
    b:f32[1,1] = reshape[dimensions=None new_sizes=(1, 1) sharding=None] a
    c:f32[1,1] = transpose[permutation=(1, 0)] b
  in (c,) }";
    assert_xla(after_reshape, [0, 0, 8], "p2000711");
    let same_shape = "{ lambda ; a:i32[1,1,1]. let
    b:i32[1,1,1] = transpose[permutation=(0, 2, 1)] a
    c:i32[1,1,1] = dynamic_slice[slice_sizes=(1, 1, 1)] b 1:i32[] 0:i32[] 0:i32[]
    d:i32[1,2,1] = concatenate[dimension=1] c c
    e:i32[1,2,1] = rem d 3:i32[]
  in (e,) }";
    assert_xla(same_shape, [2, 0, 52], "p2001000");
}

/// A `slice` (or a `dynamic_slice` at constant indices) of a
/// `concatenate` along its axis slices only the operands it reads
/// (StableHLO's `slice(concatenate)` pattern): one operand read whole is
/// that operand, and a concatenate nothing else reads is dropped, which may
/// let an outer concatenate take its operands (XLA's figures, jax 0.10.2,
/// seeds 2,001,957, 2,000,282, 2,001,392 and 2,001,520).
#[test]
fn a_slice_of_a_concatenate_slices_the_operands_it_reads() {
    let one_element = "{ lambda ; a:f32[3]. let
    b:f32[9] = concatenate[dimension=0] a a a
    c:f32[1] = slice[limit_indices=(8,) start_indices=(7,) strides=None] b
  in (c,) }";
    assert_xla(one_element, [0, 0, 8], "p2001957");
    let whole_operand = "{ lambda ; a:f16[3,1]. let
    b:f16[1,1] = slice[limit_indices=(2, 1) start_indices=(0, 0) strides=(2, 1)] a
    c:f16[3,1] = concatenate[dimension=0] b b b
    d:f16[1,1] = dynamic_slice[slice_sizes=(1, 1)] c 0:i32[] 0:i32[]
  in (d,) }";
    assert_xla(whole_operand, [0, 0, 4], "p2000282");
    let after_scatter = "{ lambda ; a:f32[3,1,4]. let
    b:i32[1] = broadcast_in_dim 1:i32[]
    c:f32[1,4] = broadcast_in_dim 1.0:f32[]
    d:f32[3,1,4] = scatter-add[
      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(0, 1), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())
      indices_are_sorted=True
      mode=GatherScatterMode.FILL_OR_DROP
      unique_indices=True
      update_consts=()
      update_jaxpr={ lambda ; e:f32[] f:f32[]. let g:f32[] = add e f in (g,) }
    ] a b c
    h:f32[9,1,4] = concatenate[dimension=0] d d d
    i:f32[1,1,4] = slice[
      limit_indices=(9, 1, 4)
      start_indices=(8, 0, 0)
      strides=None
    ] h
  in (i,) }";
    assert_xla(after_scatter, [4, 0, 104], "p2001392");
    let into_outer = "{ lambda ; a:f32[5,5]. let
    b:f32[5,5] = jit[
      name=<lambda>
      jaxpr={ lambda ; a:f32[5,5]. let
          b:f32[5,5] = transpose[permutation=(1, 0)] a
        in (b,) }
    ] a
    c:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] b
    _:bool[] = gt c 1.0:f32[]
    d:f32[15,5] = concatenate[dimension=0] b b b
    e:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] d
    _:bool[] = gt e 1.0:f32[]
    f:f32[1,5] = slice[limit_indices=(1, 5) start_indices=(0, 0) strides=None] d
    g:f32[16,5] = concatenate[dimension=0] d f
  in (g,) }";
    assert_xla(into_outer, [0, 0, 680], "p2001520");
}

/// A `pad` to its operand's own type still moves elements when it pads
/// -1 low and 1 high: it is kept (seed 2,001,057; the model took it for a
/// pad by nothing).
#[test]
fn a_pad_that_shifts_its_operand_is_kept() {
    let shifted = "{ lambda ; a:u32[2]. let
    b:u32[2] = pad[padding_config=((-1, 0, 1),)] a 0:u32[]
    c:u32[1] = slice[limit_indices=(2,) start_indices=(0,) strides=(2,)] b
  in (c,) }";
    assert_xla(shifted, [0, 0, 28], "p2001057");
}

/// `reduce_or`/`reduce_and` of a splat, and `rev` of a splat, fold to that
/// splat (`max` of a splat does not: XLA counts it); a `pad` of an empty
/// array by `False` is a splat like one by a number (seeds 2,000,090,
/// 2,001,325 and 2,001,912).
#[test]
fn or_and_and_rev_of_a_splat_are_that_splat() {
    let reduced_or = "{ lambda ; a:f16[2,0]. let
    b:f16[5,4] = pad[padding_config=((1, 2, 0), (2, 2, 0))] a 0.0:f16[]
    c:bool[5,4] = gt b 1.0:f16[]
    d:bool[4] = reduce_or[axes=(0,)] c
  in (d,) }";
    assert_xla(reduced_or, [0, 0, 5], "p2000090");
    let reversed = "{ lambda ; a:bf16[1,0,3]. let
    b:bf16[2,2,8] = pad[padding_config=((1, 0, 0), (1, 1, 0), (2, 1, 1))] a 0.0:bf16[]
    c:bf16[2,2,8] = rev[dimensions=(1,)] b
  in (c,) }";
    assert_xla(reversed, [0, 0, 66], "p2001325");
    let boolean_pad = "{ lambda ; a:bool[1,0,3]. let
    b:bool[2,2,7] = pad[padding_config=((-1, 2, 0), (1, 1, 1), (2, 2, 0))] a False:bool[]
    c:f16[2,2,7] = convert_element_type[new_dtype=float16 weak_type=False] b
    d:f16[2,7] = reduce_max[axes=(1,)] c
  in (d,) }";
    assert_xla(boolean_pad, [14, 0, 144], "p2001912");
}

/// An instruction of empty results becomes an empty constant, and what
/// only it read is erased, except a function call: JAX lowers `argmax`,
/// `argmin` and the cumulative reductions to calls, as it does `jit`, and
/// the canonicalisation keeps a call (and what it reads) and a `while` whose
/// body calls one (XLA's figures, jax 0.10.2, seeds 2,000,652, 2,000,368
/// and 2,001,271; the model dropped all three).
#[test]
fn a_call_read_only_through_empty_results_is_kept() {
    let argmax = "{ lambda ; a:f32[]. let
    b:f32[] = max a 3.0:f32[]
    c:f32[1] = reshape[dimensions=None new_sizes=(1,) sharding=None] b
    d:i32[] = argmax[axes=(0,) index_dtype=int32] c
    e:i32[0] = broadcast_in_dim d
  in (e,) }";
    assert_xla(argmax, [1, 0, 44], "p2000652");
    let through_a_reshape = "{ lambda ; a:f16[]. let
    b:f16[] = pow a 3.0:f16[]
    c:f16[] = jit[
      name=<lambda>
      jaxpr={ lambda ; b:f16[]. let
          c:f16[] = clamp 1.0:f16[] b 2.0:f16[]
        in (c,) }
    ] b
    d:f16[1,1] = reshape[dimensions=None new_sizes=(1, 1) sharding=None] c
    e:f16[0,1,1] = broadcast_in_dim[broadcast_dimensions=(1, 2)] d
  in (e,) }";
    assert_xla(through_a_reshape, [1, 1, 14], "p2000368");
    let loop_calling = "{ lambda ; a:i32[0,2,2]. let
    _:i32[] _:i32[] b:i32[0,2,2] = while[
      body_jaxpr={ lambda ; c:i32[] d:i32[] e:i32[0,2,2]. let
          f:i32[] = add c 1:i32[]
          g:i32[0,2,2] = jit[
            name=cumsum
            jaxpr={ lambda ; e:i32[0,2,2]. let
                g:i32[0,2,2] = cumsum[axis=0 reverse=False] e
              in (g,) }
          ] e
        in (f, d, g) }
      body_nconsts=0
      cond_jaxpr={ lambda ; h:i32[] i:i32[] j:i32[0,2,2]. let
          k:bool[] = lt h i
        in (k,) }
      cond_nconsts=0
    ] 0:i32[] 2:i32[] a
  in (b,) }";
    assert_xla(loop_calling, [2, 0, 21], "p2001271");
}

/// A `broadcast_in_dim` of a `broadcast_in_dim` is one broadcast of the
/// first one's operand (StableHLO's canonicalisation composes them), unless
/// the first only adds size-1 axes: that one is a `reshape` first (XLA's
/// figures, jax 0.10.2: seed 2,001,059, and `lax.broadcast_in_dim` of a
/// scalar to `(1,)` then `(4, 1)`, 28 bytes).
#[test]
fn a_broadcast_of_a_broadcast_is_one_broadcast() {
    let composed = "{ lambda ; a:bf16[5]. let
    b:bf16[2,5] = broadcast_in_dim[broadcast_dimensions=(1,)] a
    c:bf16[1] = iota[dimension=0 dtype=bfloat16 shape=(1,) sharding=None] 
    d:bf16[1,1,1] = reshape[dimensions=None new_sizes=(1, 1, 1) sharding=None] c
    e:bf16[1,2,5] = broadcast_in_dim[broadcast_dimensions=(1, 2)] b
    f:bf16[1,2,5] = add e d
  in (f,) }";
    assert_eq!(totals(composed), [Some(0), Some(0), Some(30)]);
    let after_reshape = "{ lambda ; a:f32[]. let
    b:f32[1] = broadcast_in_dim a
    c:f32[4,1] = broadcast_in_dim[broadcast_dimensions=(1,)] b
  in (c,) }";
    assert_eq!(totals(after_reshape), [Some(0), Some(0), Some(28)]);
}

/// A closed-over constant whose values are one number repeated is a splat
/// constant to JAX's lowering, which StableHLO's canonicalisation folds
/// through (`lt`, `add`, `select_n` of indices `[1, 1]` here): known from
/// the values recorded beside the text, and a dense constant without them
/// (seed 2,000,454; XLA's figures, jax 0.10.2).
#[test]
fn a_recorded_splat_constant_folds_what_it_feeds() {
    let text = "{ lambda a:i32[2]; b:f32[2]. let
    c:bool[2] = lt a 0:i32[]
    d:i32[2] = add a 2:i32[]
    e:i32[2] = select_n c a d
    f:i32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] e
    g:f32[2] = gather[
      dimension_numbers=GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())
      fill_value=None
      indices_are_sorted=False
      mode=GatherScatterMode.PROMISE_IN_BOUNDS
      slice_sizes=(1,)
      unique_indices=False
    ] b f
    h:bool[2] = lt g 3.0:f32[]
  in (h,) }";
    let splats = BTreeMap::from([("a".to_string(), 1.0)]);
    assert_eq!(main_cost(text, splats).0, [Some(2), Some(0), Some(66)]);
    assert_ne!(totals(text), [Some(2), Some(0), Some(66)]);
}

/// A reduction over no axes is its operand; `add x 0` of a scalar `x` and
/// a splat zero of one element is the broadcast of `x`; a `clamp` of
/// constants folds (XLA's figures, jax 0.10.2, seeds 2,001,976, 2,001,317
/// and 2,001,965).
#[test]
fn no_axes_a_scalar_plus_zero_and_a_clamp_of_constants_fold() {
    let no_axes = "{ lambda ; a:u8[]. let
    b:u8[] = not a
    c:u32[] = convert_element_type[new_dtype=uint32 weak_type=False] b
    d:u32[] = reduce_prod[axes=()] c
    e:u32[1] = iota[dimension=0 dtype=uint32 shape=(1,) sharding=None] 
    f:u32[1] = add d e
  in (f,) }";
    assert_xla(no_axes, [2, 0, 15], "p2001976");
    let plus_zero = "{ lambda a:i32[2]; b:f16[]. let
    c:f16[1] = iota[dimension=0 dtype=float16 shape=(1,) sharding=None] 
    d:f16[1] = add b c
    e:bool[2] = lt a 0:i32[]
    f:i32[2] = add a 1:i32[]
    g:i32[2] = select_n e a f
    h:i32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] g
    i:f16[2] = gather[
      dimension_numbers=GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())
      fill_value=None
      indices_are_sorted=False
      mode=GatherScatterMode.PROMISE_IN_BOUNDS
      slice_sizes=(1,)
      unique_indices=False
    ] d h
    j:f16[] = reduce_min[axes=(0,)] i
  in (j,) }";
    assert_xla(plus_zero, [1, 0, 40], "p2001317");
    let clamped = "{ lambda ; a:f32[0]. let
    b:f32[] = reduce_prod[axes=(0,)] a
    c:bool[] = gt b 1.0:f32[]
    d:bool[] = reduce_or[axes=()] c
    e:i32[] = convert_element_type[new_dtype=int32 weak_type=False] d
    f:i32[] = clamp 1:i32[] e 2:i32[]
    g:i32[] = div f 2:i32[]
  in (g,) }";
    assert_xla(clamped, [0, 0, 0], "p2001965");
}

/// What only instructions of empty results read is erased, unless the
/// canonicalisation cannot erase it: a `transpose` is erased like any
/// other pure instruction; a `jit` of empty results, a `cond` whose branch
/// calls a function and a `scan` (its counter's loop) are kept, with what
/// they read. A comparison of a value with its own unit-axis `rev` folds
/// (XLA's figures, jax 0.10.2, seeds 2,001,275, 2,001,252, 2,001,544,
/// 2,000,110 and 2,001,116).
#[test]
fn what_only_empty_results_read_is_kept_where_the_canonicalisation_must() {
    let transposed = "{ lambda ; a:i8[2,1,1]. let
    b:i8[1,1,2] = transpose[permutation=(2, 1, 0)] a
    c:i8[0,1,1,2] = broadcast_in_dim[broadcast_dimensions=(1, 2, 3)] b
    d:bool[0,1,1,2] = gt c 1:i8[]
    e:bool[0,1,2] = reduce_or[axes=(1,)] d
    f:i32[0,1,2] = convert_element_type[new_dtype=int32 weak_type=True] e
    g:bool[0,1,2] = ge f 1:i32[]
  in (g,) }";
    assert_xla(transposed, [0, 0, 0], "p2001275");
    let empty_jit = "{ lambda ; a:f32[]. let
    b:f32[1] = reshape[dimensions=None new_sizes=(1,) sharding=None] a
    c:f32[] = reduce_sum[axes=(0,) out_sharding=None] b
    _:bool[] = gt c 1.0:f32[]
    d:f32[0] = jit[
      name=<lambda>
      jaxpr={ lambda ; b:f32[1]. let
          d:f32[0] = pad[padding_config=((-1, 0, 0),)] b 0.0:f32[]
        in (d,) }
    ] b
    e:f32[0] = clamp 1.0:f32[] d 2.0:f32[]
    f:f32[0] = logistic e
  in (f,) }";
    assert_xla(empty_jit, [0, 0, 8], "p2001252");
    let cond_calling = "{ lambda ; a:f32[4,1]. let
    b:f32[4,1] = dynamic_slice[slice_sizes=(4, 1)] a 2:i32[] 0:i32[]
    c:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] b
    d:bool[] = gt c 1.0:f32[]
    e:i32[] = convert_element_type[new_dtype=int32 weak_type=False] d
    f:f32[4,1] = cond[
      branches=(
        { lambda ; g:f32[4,1]. let  in (g,) }
        { lambda ; h:f32[4,1]. let
            i:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] h
            j:bool[] = gt i 1.0:f32[]
            k:f32[4,1] = jit[
              name=sort
              jaxpr={ lambda ; h:f32[4,1]. let
                  k:f32[4,1] = sort[dimension=0 is_stable=True num_keys=1] h
                in (k,) }
            ] h
          in (k,) }
      )
    ] e b
    l:f32[1,1] = slice[limit_indices=(1, 1) start_indices=(0, 0) strides=None] f
    m:f32[1,1] = mul l 2.0:f32[]
    n:f32[4,1] = dynamic_update_slice f m 1:i32[] 0:i32[]
    o:f32[0,4,1] = broadcast_in_dim[broadcast_dimensions=(1, 2)] n
  in (o,) }";
    assert_xla(cond_calling, [13, 0, 70], "p2001544");
    let scan_counter = "{ lambda ; a:f32[0,5]. let
    b:f32[5,0] = transpose[permutation=(1, 0)] a
    _:f32[0] = broadcast_in_dim 1.0:f32[]
    c:f32[5,0] _:f32[3] = scan[
      jaxpr={ lambda ; d:f32[5,0]. let
          e:f32[5,0] = integer_pow[y=1] d
          f:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] e
        in (e, f) }
      length=3
      num_carry=1
      num_consts=0
      reverse=False
      unroll=1
    ] b
    g:f32[1,0] = slice[limit_indices=(1, 0) start_indices=(0, 0) strides=None] c
    h:f32[1,0] = mul g 2.0:f32[]
    i:f32[5,0] = dynamic_update_slice c h 5:i32[] 0:i32[]
    j:f32[5,0] = rev[dimensions=(1,)] i
  in (j,) }";
    assert_xla(scan_counter, [2, 0, 21], "p2000110");
    let self_comparison = "{ lambda ; a:u8[3,3]. let
    b:u8[3,3] = not a
    c:u8[1,3] = jit[
      name=<lambda>
      jaxpr={ lambda ; b:u8[3,3]. let
          c:u8[1,3] = dynamic_slice[slice_sizes=(1, 3)] b 3:i32[] 0:i32[]
        in (c,) }
    ] b
    d:u8[1,3] = rev[dimensions=(0,)] c
    e:bool[1,3] = eq c d
    f:bool[1,3] = dynamic_update_slice e e 0:i32[] 0:i32[]
  in (f,) }";
    assert_xla(self_comparison, [9, 0, 28], "p2001116");
}

/// Shifts of constants are kept (StableHLO has no folder for them: a
/// `shift_left` of two folded constants is counted); a `pad` with interior
/// padding on a size-1 axis is kept; a slice that a concatenate's operand
/// replaces leaves that concatenate's other operands unread (XLA's
/// figures, jax 0.10.2, the committed sample's `p36`, `p277`, `p274`).
#[test]
fn shifts_of_constants_interior_pads_and_unread_concatenated_operands() {
    let shifted = "{ lambda ; a:bool[0,0]. let
    b:i32[0,0] = convert_element_type[new_dtype=int32 weak_type=False] a
    c:i32[] = reduce_prod[axes=(0, 1)] b
    d:i32[] = shift_left c c
    e:f32[] = convert_element_type[new_dtype=float32 weak_type=False] d
  in (e,) }";
    assert_xla(shifted, [2, 0, 20], "p36");
    let interior = "{ lambda ; a:bf16[1]. let
    b:bf16[1] = pad[padding_config=((0, 0, 1),)] a 0.0:bf16[]
  in (b,) }";
    assert_xla(interior, [0, 0, 6], "p277");
    let resliced = "{ lambda ; a:f32[5]. let
    b:i32[1] = broadcast_in_dim 0:i32[]
    c:f32[5] = scatter-max[
      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())
      indices_are_sorted=True
      mode=GatherScatterMode.FILL_OR_DROP
      unique_indices=True
      update_consts=()
      update_jaxpr={ lambda ; d:f32[] e:f32[]. let f:f32[] = max d e in (f,) }
    ] a b 1.0:f32[]
    g:bool[5] = ge c 2.0:f32[]
    h:bool[1] = slice[limit_indices=(1,) start_indices=(0,) strides=None] g
    i:bool[6] = concatenate[dimension=0] g h
    j:bool[1] = slice[limit_indices=(4,) start_indices=(3,) strides=None] i
  in (j,) }";
    assert_xla(resliced, [6, 0, 87], "p274");
}

/// A comparison of a value with itself (`ne c (rev c)` of a unit axis,
/// `xor b b`) folds without reading the value, and the canonicalisation
/// then erases what computed it (XLA's figures, jax 0.10.2, the committed
/// sample's `p291` and `p161`).
#[test]
fn what_only_a_self_comparison_read_is_erased() {
    let compared = "{ lambda ; a:f32[1,4,5]. let
    b:f32[1,4,5] = rev[dimensions=(0,)] a
    c:bool[1,4,5] = ge a b
    d:bool[1,4,5] = rev[dimensions=(0,)] c
    e:bool[1,4,5] = ne c d
  in (e,) }";
    assert_xla(compared, [0, 0, 21], "p291");
    let xored = "{ lambda ; a:u8[1,2]. let
    b:u8[1,2] = shift_right_arithmetic a 3:u8[]
    c:u8[1,2] = rev[dimensions=(0,)] b
    d:u8[1,2] = xor b c
    e:u8[1,2] = rev[dimensions=(1,)] d
    f:u8[1,2] = mul e 2:u8[]
    g:u8[1,2] = dynamic_update_slice e f 1:i32[] 0:i32[]
  in (g,) }";
    assert_xla(xored, [0, 0, 11], "p161");
}
