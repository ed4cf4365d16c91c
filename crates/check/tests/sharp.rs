//! The sharp-bits rules (J0013 key reuse, J0014 out-of-bounds constant
//! indices, J0015 64-bit dtypes under x64 off): fixtures with their exact
//! diagnostics, and the key-reuse rule held to JAX's own checker on every
//! program of `tests/data/key-reuse` (JAX's random tests and programs
//! written to use keys, with `check_key_reuse_jaxpr`'s verdict recorded by
//! `corpus-gen/key_reuse/gen.py`).

use jaxpr_check::sharp::{SharpBits, SharpConfig};
use jaxpr_syntax::diagnostics::DiagKind;
use jaxpr_test_support::fixture::Fixture;
use std::path::Path;

fn check(fixture: &str) {
    Fixture::assert_check(fixture);
}

#[test]
fn key_consumed_twice() {
    check(
        r#"{ lambda ; a:key<fry>[]. let
    b:key<fry>[2] = random_split[shape=(2,)] a
    c:u32[3] = random_bits[bit_width=32 shape=(3,)] a
#                                                   ^ warning[J0013]: key `a` is consumed again by `random_bits`: both uses draw the same random bits
  in (b, c) }
"#,
    );
}

#[test]
fn split_rows_fold_in_and_clone_are_fresh_keys() {
    check(
        r#"{ lambda ; a:key<fry>[]. let
    b:key<fry>[2] = random_split[shape=(2,)] a
    c:key<fry>[1] = slice[limit_indices=(1,) start_indices=(0,) strides=None] b
    d:key<fry>[] = squeeze[dimensions=(0,)] c
    e:key<fry>[1] = slice[limit_indices=(2,) start_indices=(1,) strides=None] b
    f:key<fry>[] = squeeze[dimensions=(0,)] e
    g:u32[3] = random_bits[bit_width=32 shape=(3,)] d
    h:key<fry>[] = random_fold_in f 3:u32[]
    i:u32[3] = random_bits[bit_width=32 shape=(3,)] h
    j:key<fry>[] = random_clone f
    k:u32[3] = random_bits[bit_width=32 shape=(3,)] j
    l:key<fry>[1] = slice[limit_indices=(1,) start_indices=(0,) strides=None] b
#                                                                             ^ warning[J0013]: key `b` is consumed again by `slice`: both uses draw the same random bits
  in (g, i, k, l) }
"#,
    );
}

#[test]
fn a_branch_consumes_the_key() {
    check(
        r#"{ lambda ; a:key<fry>[] p:i32[]. let
    b:u32[3] = cond[
      branches=(
        { lambda ; c:key<fry>[]. let d:u32[3] = random_bits[bit_width=32 shape=(3,)] c in (d,) }
        { lambda ; e:key<fry>[]. let f:u32[3] = broadcast_in_dim[broadcast_dimensions=() shape=(3,) sharding=None] 0:u32[] in (f,) }
      )
    ] p a
    g:u32[3] = random_bits[bit_width=32 shape=(3,)] a
#                                                   ^ warning[J0013]: key `a` is consumed again by `random_bits`: both uses draw the same random bits
  in (b, g) }
"#,
    );
}

#[test]
fn a_scan_carries_a_key_without_splitting_it() {
    check(
        r#"{ lambda ; a:key<fry>[]. let
    b:key<fry>[] c:u32[4,3] = scan[
      jaxpr={ lambda ; d:key<fry>[]. let
          e:u32[3] = random_bits[bit_width=32 shape=(3,)] d
#                                                         ^ warning[J0013]: key reused across iterations of `scan`: a carried key is consumed in every iteration, but the body does not carry a fresh key to the next one, so every iteration draws the same random bits
        in (d, e) }
      length=4
      num_carry=1
      num_consts=0
      reverse=False
      unroll=1
    ] a
  in (b, c) }
"#,
    );
}

#[test]
fn raw_key_data_wrapped_twice() {
    check(
        r#"{ lambda ; a:u32[2]. let
    b:key<fry>[] = random_wrap[impl=fry] a
    c:u32[3] = random_bits[bit_width=32 shape=(3,)] b
    d:key<fry>[] = random_wrap[impl=fry] a
    e:u32[3] = random_bits[bit_width=32 shape=(3,)] d
#                                                   ^ warning[J0013]: raw key data `d` (it is `a`) is consumed again by `random_bits`: both uses draw the same random bits
  in (c, e) }
"#,
    );
}

/// An environment rollout as gymnax's README writes it, with a raw key
/// (`jax.random.PRNGKey`): the key is split, row 0 goes to a jitted `reset`
/// and row 1 to the `scan` of steps, each a slice of one `random_unwrap`.
/// Rows of a split are keys of their own, as JAX's rule says of the typed
/// twin (which it passes); taking row 0 a second time is a reuse there.
#[test]
fn raw_split_rows_are_keys_of_their_own() {
    check(
        r#"{ lambda ; a:u32[2]. let
    b:key<fry>[] = random_wrap[impl=fry] a
    c:key<fry>[2] = random_split[shape=(2,)] b
    d:u32[2,2] = random_unwrap c
    e:u32[1,2] = slice[limit_indices=(1, 2) start_indices=(0, 0) strides=(1, 1)] d
    f:u32[2] = squeeze[dimensions=(0,)] e
    g:u32[1,2] = slice[limit_indices=(2, 2) start_indices=(1, 0) strides=(1, 1)] d
    h:u32[2] = squeeze[dimensions=(0,)] g
    i:u32[3] = jit[
      name=reset
      jaxpr={ lambda ; j:u32[2]. let
          k:key<fry>[] = random_wrap[impl=fry] j
          l:u32[3] = random_bits[bit_width=32 shape=(3,)] k
        in (l,) }
    ] f
    m:u32[2] n:u32[4,3] = scan[
      jaxpr={ lambda ; o:u32[2]. let
          p:key<fry>[] = random_wrap[impl=fry] o
          q:key<fry>[2] = random_split[shape=(2,)] p
          r:u32[2,2] = random_unwrap q
          s:u32[1,2] = slice[limit_indices=(1, 2) start_indices=(0, 0) strides=(1, 1)] r
          t:u32[2] = squeeze[dimensions=(0,)] s
          u:u32[1,2] = slice[limit_indices=(2, 2) start_indices=(1, 0) strides=(1, 1)] r
          v:u32[2] = squeeze[dimensions=(0,)] u
          w:key<fry>[] = random_wrap[impl=fry] v
          x:u32[3] = random_bits[bit_width=32 shape=(3,)] w
        in (t, x) }
      length=4
      num_carry=1
      num_consts=0
      reverse=False
      unroll=1
    ] h
    y:u32[2] = random_unwrap b
    z:u32[1] = slice[limit_indices=(1,) start_indices=(0,) strides=None] y
    ba:u32[1,2] = slice[limit_indices=(1, 2) start_indices=(0, 0) strides=(1, 1)] d
#                                                                                 ^ warning[J0013]: raw key data `d` is consumed again by `slice`: both uses draw the same random bits
  in (i, m, n, z, ba) }
"#,
    );
}

/// JAX's checker enters a nested jaxpr only through a primitive whose
/// signature is its body's (`jit`, `cond`, `scan`, `while`, `checkpoint`):
/// `custom_jvp_call` and `custom_vjp_call` have none, so a reuse inside
/// their bodies is not one to it, whether the body is a `let` their
/// `call_jaxpr` names or a `let` only a `jit` inside such a body names.
/// The same `let` reached from the main jaxpr through a `jit` is checked.
/// (Found by `corpus-gen/key_reuse/random_programs.py`: 37 of 10,000.)
#[test]
fn custom_call_bodies_are_not_entered() {
    let twice = "{ lambda ; k:key<fry>[] x:f32[]. let
    a:u32[3] = random_bits[bit_width=32 shape=(3,)] k
    b:u32[3] = random_bits[bit_width=32 shape=(3,)] k
  in (a,) }";
    check(&format!(
        r#"let body = {twice} in
let inner = {twice} in
{{ lambda ; k:key<fry>[] l:key<fry>[] x:f32[]. let
    y:u32[3] = custom_jvp_call[
      name=f
      call_jaxpr=body
      jvp=<lambda>
      num_consts=1
      symbolic_zeros=False
    ] k x
    z:f32[] = custom_vjp_call[
      name=g
      bwd=<lambda>
      call_jaxpr={{ lambda ; c:f32[] d:key<fry>[]. let
          e:u32[3] = jit[name=h jaxpr=inner] d c
        in (c,) }}
      fwd=<lambda>
      symbolic_zeros=False
    ] x l
  in (y, z) }}
"#
    ));
    check(&format!(
        r#"let body = {twice} in
{{ lambda ; k:key<fry>[] l:key<fry>[] x:f32[]. let
    y:u32[3] = custom_jvp_call[
      name=f
      call_jaxpr=body
      jvp=<lambda>
      num_consts=1
      symbolic_zeros=False
    ] k x
    e:u32[3] = jit[name=h jaxpr=body] l x
  in (y, e) }}
"#
    ).replace(
        "    b:u32[3] = random_bits[bit_width=32 shape=(3,)] k\n",
        "    b:u32[3] = random_bits[bit_width=32 shape=(3,)] k\n#                                                   ^ warning[J0013]: key `k` is consumed again by `random_bits`: both uses draw the same random bits\n",
    ));
}

/// `vmap` of a `custom_jvp` given a raw key as a nondifferentiable
/// argument: the batch rule of its `stop_gradient` binds one on raw data
/// and none on a typed key, so the typed twin's `custom_jvp_call` is the
/// key's only use. Unbatched, the twin stops the key's gradient too, and
/// JAX counts the `custom_jvp_call` as a second use (`random_programs.py`
/// seed 1,004,244).
#[test]
fn a_batched_stop_gradient_of_raw_keys_is_no_use() {
    check(
        r#"{ lambda ; a:u32[2] q:u32[2] x:f32[]. let
    b:key<fry>[] = random_wrap[impl=fry] a
    c:key<fry>[4] = random_split[shape=(4,)] b
    d:u32[4,2] = random_unwrap c
    e:u32[4,2] = stop_gradient d
    f:f32[4] = custom_jvp_call[
      name=g
      call_jaxpr={ lambda ; h:u32[4,2] i:f32[]. let
          j:key<fry>[4] = random_wrap[impl=fry] h
          k:u32[4] = random_bits[bit_width=32 shape=()] j
          l:f32[4] = convert_element_type[new_dtype=float32 weak_type=False] k
        in (l,) }
      jvp=<lambda>
      num_consts=1
      symbolic_zeros=False
    ] e x
    m:u32[2] = stop_gradient q
    n:f32[] = custom_jvp_call[
      name=g
      call_jaxpr={ lambda ; o:u32[2] p:f32[]. let  in (p,) }
      jvp=<lambda>
      num_consts=1
      symbolic_zeros=False
    ] m x
#     ^ warning[J0013]: raw key data `m` is consumed again by `custom_jvp_call`: both uses draw the same random bits
  in (f, n) }
"#,
    );
}

/// `uint32` data that is not key data is never consumed: concatenated or
/// written twice, it is not a reuse.
#[test]
fn other_uint32_data_is_not_a_key() {
    check(
        r#"{ lambda ; x:u32[3]. let
    b:u32[6] = concatenate[dimension=0] x x
    c:u32[3] = dynamic_update_slice x x 0:i32[]
    d:u32[3] = dynamic_update_slice x x 0:i32[]
  in (b, c, d) }
"#,
    );
}

#[test]
fn constant_indices_out_of_bounds() {
    check(
        r#"{ lambda ; a:f32[5] b:f32[5,3] u:f32[2]. let
    c:i32[] = add 3:i32[] 4:i32[]
    d:f32[2] = dynamic_slice[slice_sizes=(2,)] a c
#                                                ^ warning[J0014]: start index 7 is out of bounds for a window of 2 along axis 0 of size 5: `dynamic_slice` clamps the start to 3 without a word, so the slice reads elements 3..5 of that axis
    e:f32[5] = dynamic_update_slice a u -1:i32[]
#                                       ^^^^^^^^ warning[J0014]: start index -1 is out of bounds for a window of 2 along axis 0 of size 5: `dynamic_update_slice` clamps the start to 0 without a word, so the update lands on elements 0..2 of that axis
    f:f32[5] = dynamic_slice[slice_sizes=(5,)] a 0:i32[]
    g:i32[2] = iota[dimension=0 dtype=int32 shape=(2,) sharding=None]
    h:i32[2] = mul g 5:i32[]
    i:i32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(2, 1) sharding=None] h
    j:f32[2,3] = gather[
      dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())
      fill_value=None
      indices_are_sorted=False
      mode=GatherScatterMode.FILL_OR_DROP
      slice_sizes=(1, 3)
      unique_indices=False
    ] b i
#       ^ warning[J0014]: index 5 is out of bounds for axis 0 of size 5: `gather` (mode fill_or_drop) returns NaN for that slice instead of raising
    k:f32[5,3] = scatter-add[
      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())
      indices_are_sorted=False
      mode=GatherScatterMode.FILL_OR_DROP
      unique_indices=False
      update_consts={ lambda ; l:f32[] m:f32[]. let n:f32[] = add l m in (n,) }
      update_jaxpr=None
    ] b i j
#       ^ warning[J0014]: index 5 is out of bounds for axis 0 of size 5: `scatter-add` drops that update without a word
  in (d, e, f, j, k) }
"#,
    );
}
/// A gather's mode printed as its enum's number (JAX's `GatherScatterMode`: 1 clip,
/// 2 fill or drop) says the same as its name.
#[test]
fn a_gather_mode_printed_as_a_number() {
    check(
        r#"{ lambda ; b:f32[5,3]. let
    g:i32[2] = iota[dimension=0 dtype=int32 shape=(2,) sharding=None]
    h:i32[2] = mul g 5:i32[]
    i:i32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(2, 1) sharding=None] h
    j:f32[2,3] = gather[
      dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())
      fill_value=None
      indices_are_sorted=False
      mode=2
      slice_sizes=(1, 3)
      unique_indices=False
    ] b i
#       ^ warning[J0014]: index 5 is out of bounds for axis 0 of size 5: `gather` (mode fill_or_drop) returns NaN for that slice instead of raising
    k:f32[2,3] = gather[
      dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())
      fill_value=None
      indices_are_sorted=False
      mode=1
      slice_sizes=(1, 3)
      unique_indices=False
    ] b i
#       ^ warning[J0014]: index 5 is out of bounds for axis 0 of size 5: `gather` (mode clip) clamps it to 4 and reads that slice instead
  in (j, k) }
"#,
    );
}

#[test]
fn float64_requested_with_x64_off() {
    check(
        r#"{ lambda ; a:i32[3]. let
    b:f32[3] = convert_element_type[new_dtype=float32 weak_type=True] a
    c:f64[3] = convert_element_type[new_dtype=float64 weak_type=False] b
#                                             ^^^^^^^ warning[J0015]: `new_dtype=float64` asks for a 64-bit dtype in a program traced with x64 off: JAX computes it in float32 without a word
  in (b, c) }
"#,
    );
}

/// `x_f16 + 70000.0`, `x_f16 * 1e6` as jax 0.10.2 prints them: the scalar
/// overflowed float16 (weak typing); `inf` meant as a bound is left alone.
#[test]
fn a_python_scalar_beyond_float16s_range() {
    check(
        r#"{ lambda ; a:f16[3] b:f32[3]. let
    c:f16[3] = add a inf:f16[]
#                    ^^^^^^^^^ warning[J0015]: `inf` makes every element of this `add` infinite or NaN: a Python scalar beyond f16's range becomes inf when it takes the array's dtype f16 (weak typing)
    d:f16[3] = mul -inf:f16[] a
#                  ^^^^^^^^^^ warning[J0015]: `-inf` makes every element of this `mul` infinite or NaN: a Python scalar beyond f16's range becomes -inf when it takes the array's dtype f16 (weak typing)
    e:f16[3] = max a -inf:f16[]
    f:bool[3] = lt a inf:f16[]
    g:f32[3] = add b inf:f32[]
  in (c, d, e, f, g) }
"#,
    );
}

#[test]
fn float64_without_evidence_of_x64_off_is_quiet() {
    check(
        r#"{ lambda ; a:i32[3]. let
    c:f64[3] = convert_element_type[new_dtype=float64 weak_type=False] a
  in (c,) }
"#,
    );
}

/// Whether the rule finds a reuse in the file at `path`.
fn finds_reuse(path: &Path, config: SharpConfig) -> bool {
    let (kinds, errors) = sharp_findings(path, config);
    assert!(errors.is_empty(), "{}: {errors:?}", path.display());
    kinds.contains(&DiagKind::KeyReuse)
}

/// Following typed keys only, the rule's verdict is JAX's on every program;
/// following raw key data too, it finds more only in programs of raw keys,
/// and exactly these.
#[test]
fn key_reuse_verdicts_are_jaxs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data");
    let verdicts: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("key-reuse/verdicts.json")).unwrap(),
    )
    .unwrap();
    let verdicts = verdicts["verdicts"].as_object().unwrap();
    assert!(verdicts.len() >= 450, "{}", verdicts.len());
    let (mut reuses, mut beyond) = (0, Vec::new());
    for (name, v) in verdicts {
        let path = match name.strip_prefix("programs/") {
            Some(_) => root.join("key-reuse").join(name),
            None => root.join(name),
        };
        let jax = v["jax_key_reuse"].as_bool().unwrap();
        reuses += jax as usize;
        let typed = finds_reuse(&path, SharpConfig { raw_keys: false });
        assert_eq!(typed, jax, "{name}: JAX says {}", v["jax_message"]);
        let raw = finds_reuse(&path, SharpConfig { raw_keys: true });
        assert!(raw || !jax, "{name}");
        if raw != jax {
            assert!(
                v["raw_keys"].as_bool().unwrap(),
                "{name}: a finding beyond JAX on typed keys"
            );
            beyond.push(name.as_str());
        }
    }
    assert_eq!(reuses, 54);
    beyond.sort();
    let want: Vec<String> = ["bits", "normal", "split", "uniform"]
        .iter()
        .flat_map(|u| {
            ["jit", "scan_nosplit", "seq", "wrapped_twice"]
                .map(|p| format!("programs/raw_{p}_{u}.jaxpr"))
        })
        .chain(["jax-suite/random/scan_keys_threefry2x32_2x3_legacy.jaxpr".to_string()])
        .collect();
    let mut want: Vec<&str> = want.iter().map(String::as_str).collect();
    want.sort();
    assert_eq!(beyond, want);
}

/// Every `.jaxpr` file under `dir`, in a stable order.
fn jaxpr_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            out.extend(jaxpr_files(&path));
        } else if path.extension().is_some_and(|e| e == "jaxpr") {
            out.push(path);
        }
    }
    out
}

/// The sharp-bits findings on the file at `path` with `config`, and the
/// checker's errors there.
fn sharp_findings(
    path: &Path,
    config: SharpConfig,
) -> (Vec<DiagKind>, Vec<jaxpr_syntax::diagnostics::Diagnostic>) {
    let text = std::fs::read_to_string(path).unwrap();
    let parse = jaxpr_syntax::parse(&text);
    let analysis = jaxpr_check::check(&parse.file);
    let kinds = SharpBits::check_analysis(&analysis, &parse.file, config)
        .iter()
        .map(|d| d.kind)
        .collect();
    let errors = analysis
        .diagnostics
        .into_iter()
        .filter(|d| d.is_error())
        .collect();
    (kinds, errors)
}

/// On programs nobody here wrote, the ecosystem's libraries and every
/// version's printing, a J0013 finding is there exactly when JAX's own
/// checker finds the reuse, on the program or, for raw key data (which JAX's
/// checker does not follow), on its typed twin: the same function traced
/// with `jax.random.wrap_key_data` of the same key. Verdicts recorded by
/// `corpus-gen/key_reuse/corpora.py`. No J0014 or J0015 finding anywhere.
#[test]
fn corpora_findings_are_jaxs() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data");
    let mut jax_reuses: std::collections::BTreeMap<std::path::PathBuf, bool> = Default::default();
    let (mut twins, mut twin_reuses) = (0, 0);
    for file in std::fs::read_dir(data.join("key-reuse/corpora")).unwrap() {
        let file = file.unwrap().path();
        if file.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let recorded: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        for (name, v) in recorded["verdicts"].as_object().unwrap() {
            let mut reuse = v["jax_key_reuse"].as_bool().unwrap();
            if let Some(twin) = v["typed_twin"].as_str() {
                let twin_reuse = v["typed_twin_jax_key_reuse"].as_bool().unwrap();
                let twin_path = data.join("key-reuse").join(twin);
                assert_eq!(
                    finds_reuse(&twin_path, SharpConfig { raw_keys: false }),
                    twin_reuse,
                    "{twin}: JAX says {}",
                    v["typed_twin_jax_message"]
                );
                twins += 1;
                twin_reuses += twin_reuse as usize;
                reuse |= twin_reuse;
            }
            jax_reuses.insert(data.join(name), reuse);
        }
    }
    // The ecosystem corpus and every JAX column of the version matrix.
    assert!(
        jax_reuses.len() >= 100,
        "{} programs with verdicts",
        jax_reuses.len()
    );
    assert!(
        twins >= 1 && twin_reuses >= 1,
        "{twins} typed twins, {twin_reuses} reusing"
    );
    let mut wrong = Vec::new();
    let (mut files, mut found) = (0, 0);
    for dir in ["ecosystem", "versions"] {
        for path in jaxpr_files(&data.join(dir)) {
            files += 1;
            let (kinds, _) = sharp_findings(&path, SharpConfig::default());
            let reuse = kinds.contains(&DiagKind::KeyReuse);
            found += reuse as usize;
            let others: Vec<_> = kinds.iter().filter(|k| **k != DiagKind::KeyReuse).collect();
            let jax = jax_reuses.get(&path).copied();
            // No verdict: the program uses no key (nor does any Catalyst
            // column's program).
            if reuse != jax.unwrap_or(false) || !others.is_empty() {
                wrong.push(format!(
                    "{}: J0013 {reuse}, JAX {jax:?}, others {others:?}",
                    path.display()
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {files} files:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert!(
        files >= 900 && found >= 9,
        "{files} files, {found} with a J0013 finding"
    );
}

/// Random programs over keys (`corpus-gen/key_reuse/random_programs.py`,
/// fixed seeds): the rule's verdict, following raw keys, is JAX's on the
/// program or, for raw key data, on its typed twin, on every sampled
/// program.
#[test]
fn random_programs_verdicts_are_jaxs() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/key-reuse/random");
    let verdicts: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("verdicts.json")).unwrap()).unwrap();
    let verdicts = verdicts["verdicts"].as_object().unwrap();
    assert!(verdicts.len() >= 300, "{}", verdicts.len());
    let (mut reuses, mut raw, mut wrong) = (0, 0, Vec::new());
    for (name, v) in verdicts {
        let jax = v["jax_key_reuse"].as_bool().unwrap();
        reuses += jax as usize;
        raw += v["raw_keys"].as_bool().unwrap() as usize;
        let ours = finds_reuse(&dir.join(name), SharpConfig::default());
        if ours != jax {
            wrong.push(format!("{name}: J0013 {ours}, JAX {}", v["jax_message"]));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(
        reuses >= 100 && reuses + 50 <= verdicts.len(),
        "{reuses} reuses"
    );
    assert!(raw >= 100, "{raw} raw-key programs");
}
