//! Typing rules no stricter than JAX's and Catalyst's own abstract
//! evaluation: each program below is cut from one that a JAX or Catalyst of
//! the version matrix printed (`tests/data/versions`), and checks clean; the
//! same rule still reports what JAX or Catalyst would refuse.

use jaxpr_test_support::fixture::Fixture;

fn check(fixture: &str) {
    Fixture::assert_check(fixture);
}

/// jax 0.10.2's `_threefry2x32_abstract_eval` broadcasts its four operands
/// together (`lax.broadcasting_shape_rule`): scalars aside, equal ranks, and
/// 1s stretch, in any operand.
#[test]
fn threefry2x32_broadcasts_its_operands_together() {
    check(
        r#"{ lambda ; a:u32[1,4] b:u32[1,4] c:u32[3,1] d:u32[3,4] e:u32[] f:u32[5]. let
    g:u32[3,4] h:u32[3,4] = threefry2x32 a b c d
    i:u32[5] j:u32[5] = threefry2x32 e e f f
    k:u32[3,4] l:u32[3,4] = threefry2x32 a b f d
#                           ^^^^^^^^^^^^ error[J0004]: `threefry2x32` operands must have the same shape...
  in (g, i, k) }
"#,
    );
}

/// `random_unwrap` of keys of a user's PRNG implementation
/// (`PRNGImpl(key_shape=(2, 2), tag='fry2')`, random_test.py): the key data's
/// trailing dimensions are the implementation's key shape, of any rank.
#[test]
fn random_unwrap_takes_the_key_shape_of_any_implementation() {
    check(
        r#"{ lambda ; a:u32[]. let
    b:key<fry2>[] = random_seed[impl=fry2] a
    c:key<fry2>[3] = random_split[shape=(3,)] b
    d:u32[3,2,2] = random_unwrap c
    e:key<urbg>[] = random_seed[impl=urbg] a
    f:u32[4] = random_unwrap e
    g:key<fry>[] = random_seed[impl=fry] a
    h:u32[3] = random_unwrap g
#         ^ error[J0004]: `h` is declared u32[3], but `random_unwrap` produces u32[2]...
  in (d, f, h) }
"#,
    );
}

/// `mul[out_dtype=<class 'numpy.float64'>]`: JAX canonicalises the dtype
/// asked for (64-bit types off: f32), which the text does not say; the
/// declared result shows which.
#[test]
fn out_dtype_is_the_declared_canonical_dtype() {
    check(
        r#"{ lambda ; a:f32[3] b:i32[3]. let
    c:f32[3] = mul[out_dtype=<class 'numpy.float64'>] a a
    d:f64[3] = mul[out_dtype=<class 'numpy.float64'>] a a
    e:i32[3] = mul[out_dtype=<class 'numpy.int64'>] b b
    f:i32[3] = mul[out_dtype=<class 'numpy.float64'>] a a
#     ^^^^^^ error[J0005]: `f` is declared i32[3], but `mul` produces f64[3]...
  in (c, d, e, f) }
"#,
    );
}

/// Catalyst 0.10 (jax 0.4.28) as it prints a circuit: `qdevice`, `qmeasure`,
/// `qunitary`; `qinst` without `params_len`, whose parameters follow its
/// control values (`_qinst_abstract_eval`: qubits, control qubits, control
/// values, parameters); observables without a register; measurements with
/// `shape=` and `sample[num_qubits shots]`.
#[test]
fn catalyst_0_10_circuits_check_as_catalyst_0_10_types_them() {
    check(
        r#"{ lambda ; a:f64[] b:c128[2,2]. let
    qdevice[rtd_kwargs={'shots': 0} rtd_lib=lib.so rtd_name=LightningSimulator] 0
    c:AbstractQreg() = qalloc 3
    d:AbstractQbit() = qextract c 0
    e:AbstractQbit() = qextract c 1
    f:AbstractQbit() = qextract c 2
    g:AbstractQbit() = qinst[adjoint=False ctrl_len=0 ctrl_value_len=0 op=Hadamard qubits_len=1] d
    h:AbstractQbit() i:AbstractQbit() j:AbstractQbit() = qinst[
      adjoint=False
      ctrl_len=2
      ctrl_value_len=2
      op=RX
      qubits_len=1
    ] e g f True True a
    k:AbstractQbit() = qunitary[adjoint=False ctrl_len=0 qubits_len=1] b h
    l:bool[] m:AbstractQbit() = qmeasure[postselect=None] k
    n:AbstractObs(num_qubits=None,primitive=None) = namedobs[kind=PauliZ] m
    o:f64[] = expval n
    p:AbstractObs(num_qubits=2,primitive=compbasis) = compbasis i j
    q:f64[4] = probs[shape=(4,)] p
    r:c128[4] = state[shape=(4,)] p
    s:f64[4] t:i64[4] = counts[shape=(4,) shots=50] p
    u:f64[8,2] = sample[num_qubits=2 shots=8] p
    v:f64[2] = probs[shape=(2,)] p
#              ^^^^^ error[J0004]: `probs` of 2 qubit(s) has 2^2 entries...
    w:AbstractQbit() = qinst[adjoint=False ctrl_len=0 ctrl_value_len=0 op=RY qubits_len=1] a
#                      ^^^^^ error[J0005]: operand 0 of `qinst` must be a qubit (AbstractQbit()), but it is f64[]
    qdealloc c
  in (o, q, r, t, u, l) }
"#,
    );
}

/// A symbolic comparison that holds only under `jax.export`'s symbolic
/// constraints (shape_poly_test.py's `jnp.pad` `mode=reflect_odd`, exported
/// under `b >= 2`): the text does not carry them, and JAX decided the
/// comparison under them, so it is a warning; one false for every value of
/// the symbols stays an error.
#[test]
fn comparisons_decided_only_under_export_constraints_are_warnings() {
    check(
        r#"{ lambda ; a:f32[b,5]. let
    c:f32[b - 1,5] = slice[limit_indices=(b, 5) start_indices=(1, 0) strides=None] a
    d:f32[1,5] = slice[limit_indices=(1, 5) start_indices=(0, 0) strides=None] c
#                ^^^^^ warning[J0009]: the limit 1 of `slice` on axis 0 must be at most the size b - 1 of operand 0, but `1 <= b - 1` cannot be proven for all values of the symbolic dimensions
    e:f32[1,5] = slice[limit_indices=(b + 1, 5) start_indices=(b, 0) strides=None] a
#                ^^^^^ error[J0004]: the limit b + 1 of `slice` on axis 0 must be at most the size b of operand 0...
  in (d, e) }
"#,
    );
}
