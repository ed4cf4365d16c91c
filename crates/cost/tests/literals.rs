//! Untyped literals (JAX <= 0.5 prints `select_n True a b`) count with the
//! dtype JAX gave them, the one the back ends build: the checker's layer
//! defines it once (`jaxpr_check::literals`).

use jaxpr_cost::{Options, analyse};

/// Bytes accessed by the first equation of `text`'s main jaxpr.
fn first_eqn_bytes(text: &str) -> Option<i64> {
    let parse = jaxpr_syntax::parse(text);
    assert!(parse.errors.is_empty(), "{:?}", parse.errors);
    let analysis = jaxpr_check::check(&parse.file);
    let e = &parse.file.main.as_ref().unwrap().eqns[0];
    let id = analysis
        .eqn_with_primitive_at(e.primitive.range.start)
        .unwrap();
    analyse(&parse.file, &analysis, Options::default())
        .eqn(id)
        .total
        .bytes_accessed
        .as_constant()
}

#[test]
fn an_untyped_predicate_is_a_bool_and_a_peer_has_its_peers_dtype() {
    // The predicate is a bool (1 byte), the cases and result f16 (2 each).
    let select = "{ lambda ; a:f16[] b:f16[]. let c:f16[] = select_n True a b in (c,) }";
    assert_eq!(first_eqn_bytes(select), Some(1 + 2 + 2 + 2));
    // `2` beside an f64 is an f64 (weak-type promotion).
    let mul = "{ lambda ; a:f64[]. let b:f64[] = mul a 2.0 in (b,) }";
    assert_eq!(first_eqn_bytes(mul), Some(8 + 8 + 8));
}
