//! The typing rules as fixtures: each jaxpr carries, under the line it
//! points at, every diagnostic the checker must report there (range, code and
//! message), and nothing else may be reported. The programs are the shared
//! corpus's `invalid/` cases.

use jaxpr_test_support::fixture::Fixture;

fn check(fixture: &str) {
    Fixture::assert_check(fixture);
}

#[test]
fn broadcast_dims() {
    check(
        r#"{ lambda ; a:f32[3] b:f32[3,4]. let
    c:f32[3,4] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(3, 4) sharding=None] a
#                ^^^^^^^^^^^^^^^^ error[J0004]: `broadcast_in_dim` maps operand axis 0 (size 3) to result axis 1 (size 4): an operand axis must have size 1 or the size of its result axis
    d:f32[3,4] = add b c
  in (d,) }
"#,
    );
}

#[test]
fn cond_branches() {
    check(
        r#"{ lambda ; a:f32[5] b:i32[]. let
    c:f32[5] = cond[
#              ^^^^ error[J0004]: output 0 of branch 0 and branch 1 must have the same shape: [5] and [4] differ in dimension 0 (`5` vs `4`)
      branches=(
        { lambda ; d:f32[5]. let e:f32[5] = sub d 1.0:f32[] in (e,) }
        { lambda ; f:f32[5]. let g:f32[4] = slice[limit_indices=(4,) start_indices=(0,) strides=None] f in (g,) }
      )
    ] b a
  in (c,) }
"#,
    );
}

#[test]
fn declared_type_wrong() {
    check(
        r#"{ lambda ; a:f32[4,8] b:f32[8] c:f32[2,4]. let
    d:f32[2,8] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      preferred_element_type=float32
    ] c a
    e:f32[1,8] = broadcast_in_dim[broadcast_dimensions=(1,)] b
    f:f32[2,9] = add d e
#           ^ error[J0004]: `f` is declared f32[2,9], but `add` produces f32[2,8]: dimension 1 is 9 here but 8 by inference
  in (f,) }
"#,
    );
}

#[test]
fn dim_not_int() {
    check(
        r#"{ lambda ; a:f64[] b:f64[a]. let
#                        ^ error[J0008]: `a` is used as a dimension but it is f64[], not an integer scalar
    c:f64[a] = sin b
  in (c,) }
"#,
    );
}

#[test]
fn dot_contracting() {
    check(
        r#"{ lambda ; a:f32[v,4]. let
    b:f32[v,v] = dot_general[
      dimension_numbers=(([1], [1]), ([], []))
      preferred_element_type=float32
    ] a a
    c:f32[v,v] = dot_general[
#                ^^^^^^^^^^^ error[J0004]: `dot_general` pairs contracting dimension 1 of the lhs with dimension 0 of the rhs, but their sizes differ: `4` is not `v`
      dimension_numbers=(([1], [0]), ([], []))
      preferred_element_type=float32
    ] a a
  in (b, c) }
"#,
    );
}

#[test]
fn dtype_mix() {
    check(
        r#"{ lambda ; a:f32[6] b:i32[6]. let
    c:f32[6] = exp a
    d:f32[6] = mul c b
#              ^^^ error[J0005]: `mul` operands must have the same dtype, but operand 0 is f32 and operand 1 is i32
    e:i32[6] = convert_element_type[new_dtype=int32 weak_type=False] c
    f:i32[6] = add e b
  in (d, f) }
"#,
    );
}

#[test]
fn duplicate_def() {
    check(
        r#"{ lambda ; a:f32[5]. let
    b:f32[5] = sin a
    b:f32[5] = cos a
#   ^ error[J0003]: `b` is already defined in this jaxpr
  in (b,) }
"#,
    );
}

#[test]
fn loop_arity() {
    check(
        r#"{ lambda ; a:i64[]. let
    b:f64[a] = broadcast_in_dim[
      broadcast_dimensions=()
      shape=(None,)
      sharding=None
    ] 1.0:f64[] a
    c:f64[a] = for_loop[
#              ^^^^^^^^ error[J0006]: the `body_jaxpr` of `for_loop` returns 1 value, but the loop carries 0
      apply_reverse_transform=False
      body_jaxpr={ lambda ; d:i64[] e:f64[d] f:i64[] g:f64[d]. let
          h:f64[d] = add g e
        in (h,) }
      body_nconsts=3
      num_implicit_inputs=0
      preserve_dimensions=True
    ] a b 0:i64[] 10:i64[] 1:i64[] 0:i64[] b
    i:f64[a] = add b c
  in (i,) }
"#,
    );
}

#[test]
fn reshape_size() {
    check(
        r#"{ lambda ; a:f32[b]. let
    c:f32[2,b] = reshape[dimensions=None new_sizes=(2, b) sharding=None] a
#                ^^^^^^^ error[J0004]: `reshape` must keep the number of elements, but operand 0 has shape [b] (b elements) and `new_sizes` (2, b) give 2*b elements
  in (c,) }
"#,
    );
}

#[test]
fn shape_add_dimvars() {
    check(
        r#"{ lambda ; a:i64[] b:f64[a] c:f64[a]. let
    d:i64[] e:f64[d] = for_loop[
      apply_reverse_transform=False
      body_jaxpr={ lambda ; f:i64[] g:f64[f] h:i64[] i:i64[] j:f64[i]. let
          k:f64[i] = mul j g
#                    ^^^ error[J0004]: `mul` operands must have the same shape: [i] and [f] differ in dimension 0 (`i` vs `f`)
        in (i, k) }
      body_nconsts=2
      num_implicit_inputs=1
      preserve_dimensions=False
    ] a b 0:i64[] 10:i64[] 1:i64[] 0:i64[] a c
    l:f64[] = reduce_sum[axes=(0,)] e
  in (l,) }
"#,
    );
}

#[test]
fn symbolic_add() {
    check(
        r#"{ lambda ; a:f32[v] b:f32[4]. let
    c:f32[v] = add a b
#              ^^^ error[J0004]: `add` operands must have the same shape: [v] and [4] differ in dimension 0 (`v` vs `4`)
  in (c,) }
"#,
    );
}

#[test]
fn syntax_missing_in() {
    check(
        r#"{ lambda ; a:f32[3]. let
    b:f32[3] = sin a
    c:f32[3] = cos a
    d:f32[3] = add b b
  (d,) }
# ^ error[J0001]: expected `in` before the outputs of the jaxpr
"#,
    );
}

#[test]
fn transpose_perm() {
    check(
        r#"{ lambda ; a:f32[2,3,4]. let
    b:f32[4,3,2] = transpose[permutation=(2, 1, 1)] a
#                  ^^^^^^^^^ error[J0007]: `permutation` (2, 1, 1) is not a permutation of the 3 axes of operand 0: 1 appears twice, 0 is missing
  in (b,) }
"#,
    );
}

#[test]
fn undefined_var() {
    check(
        r#"{ lambda ; a:f32[3,4] b:f32[4,5]. let
    c:f32[3,4] = sin a
    d:f32[3,5] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      preferred_element_type=float32
    ] c x
#       ^ error[J0002]: `x` is not defined
    e:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] d
  in (e,) }
"#,
    );
}

#[test]
fn while_carry() {
    check(
        r#"{ lambda ; a:f32[5]. let
    _:i32[] b:f32[5] = while[
#                      ^^^^^ error[J0006]: the `body_jaxpr` of `while` returns 3 values, but the loop carries 2
      body_jaxpr={ lambda ; c:i32[] d:f32[5]. let
          e:i32[] = add c 1:i32[]
          f:f32[5] = mul d 2.0:f32[]
        in (e, f, f) }
      body_nconsts=0
      cond_jaxpr={ lambda ; g:i32[] h:f32[5]. let
          i:bool[] = lt g 5:i32[]
        in (i,) }
      cond_nconsts=0
    ] 0:i32[] a
  in (b,) }
"#,
    );
}

/// JAX names variables `a, b, c, ...` whatever the symbols are called: in a
/// shape-polymorphic program every `b` in a type is the symbol `b` of the
/// inputs, also after a variable `b` is bound.
#[test]
fn symbol_named_like_a_variable() {
    check(
        r#"{ lambda ; a:f32[b]. let
    b:i32[] = dim_as_value[dim=b] 
    c:f32[b] = sin a
    d:f32[b,2] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(b, 2) sharding=None] c
    e:f32[3] = cos a
#         ^ error[J0004]: `e` is declared f32[3], but `cos` produces f32[b]: dimension 0 is 3 here but b by inference
  in (d, b, e) }
"#,
    );
}

/// Typing rules JAX's own test programs showed wrong: `conj` of a real
/// operand is complex, `pow` takes an integer exponent, `mul[out_dtype=...]`,
/// a batched `while` predicate, a symbolic `scan` length.
#[test]
fn rules_from_jax_test_suite() {
    check(
        r#"{ lambda ; a:f32[3] b:i32[3] c:i8[3] d:f32[t,2] s:f32[2]. let
    e:c64[3] = conj a
    f:f32[3] = pow a b
    g:i32[3] = mul[out_dtype=int32] c c
    h:f32[3] = while[
      body_jaxpr={ lambda ; i:f32[3]. let j:f32[3] = mul i 2.0:f32[] in (j,) }
      body_nconsts=0
      cond_jaxpr={ lambda ; k:f32[3]. let l:bool[3] = lt k 10.0:f32[] in (l,) }
      cond_nconsts=0
    ] a
    m:f32[2] n:f32[t,2] = scan[
      jaxpr={ lambda ; o:f32[2] p:f32[2]. let q:f32[2] = add o p in (q, q) }
      length=t
      num_carry=1
      num_consts=0
      reverse=False
      unroll=1
    ] s d
    r:f32[3] = conj a
#     ^^^^^^ error[J0005]: `r` is declared f32[3], but `conj` produces c64[3]
  in (e, f, g, h, m, n, r) }
"#,
    );
}

/// Catalyst's state preparations (`qml.StatePrep`, `qml.BasisState`): the
/// qubits, then 2^n amplitudes or n bits; one qubit out per qubit in.
#[test]
fn state_preparations() {
    check(
        r#"{ lambda ; a:AbstractQreg() b:c128[4] c:bool[2] d:c128[2] e:f64[2]. let
    f:AbstractQbit() = qextract a 0:i64[]
    g:AbstractQbit() = qextract a 1:i64[]
    h:AbstractQbit() i:AbstractQbit() = state_prep f g b
    j:AbstractQbit() k:AbstractQbit() = set_basis_state h i c
    l:AbstractQbit() m:AbstractQbit() = state_prep j k d
#                                       ^^^^^^^^^^ error[J0004]: `state_prep` takes 2^n amplitudes for n qubits: `2` is not `4`
    n:AbstractQbit() = set_basis_state l e
#                      ^^^^^^^^^^^^^^^ error[J0005]: the last operand of `set_basis_state` must be one bit per qubit (bool[n]), but it is f64[2]
  in (m, n) }
"#,
    );
}

/// `ormqr`'s `c` has as many rows (`left`) or columns (`left=False`) as
/// `a` has rows (JAX's `_ormqr_shape_rule`); the result has `c`'s type.
#[test]
fn ormqr_rows() {
    check(
        r#"{ lambda ; a:f32[6,4] b:f32[4] c:f32[5,3] d:f32[2,6] e:f32[6,3]. let
    f:f32[5,3] = ormqr[left=True transpose=False] a b c
#                ^^^^^ error[J0004]: with `left`, `c` must have as many rows as `a`: `5` is not `6`
    g:f32[2,6] = ormqr[left=False transpose=True] a b d
    h:f32[6,3] = ormqr[left=True transpose=True] a b e
  in (f, g, h) }
"#,
    );
}
