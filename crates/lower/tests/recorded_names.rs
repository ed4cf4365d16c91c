//! Recorded constants are matched to the printout's names: a jaxpr printed
//! inside a parameter JAX writes with Python's `repr` (Equinox's `static=`
//! tuples) names its variables afresh, so its `a` is not the recorded `a`
//! of the program around it. Its constants stay unrecorded (the build says
//! their values are not in the text) instead of taking another's values.

use jaxpr_check::{Keep, Source, check_source};
use jaxpr_lower::recorded::Recorded;

const PROGRAM: &str = "let f = { lambda a:f32[3]; b:f32[3]. let
    c:f32[3] = add a b
  in (c,) } in
{ lambda ; d:f32[3]. let
    e:f32[3] = jit[name=f jaxpr=f] d
    g:f32[3] = library_op[
      static=({ lambda a:f32[3]; h:f32[3]. let
    i:f32[3] = mul a h
  in (i,) }, <object object at 0xXXXXXXXXXXXX>, False)
    ] e
  in (g,) }
";

fn recorded() -> Recorded {
    Recorded::parse(
        r#"{"format": "jaxpr-recorded", "version": 1, "constants": {"a": {"dtype": "float32", "shape": [3], "hex": "0000803f0000803f0000803f", "nested": true}}}"#,
    )
    .unwrap()
}

#[test]
fn a_jaxpr_named_apart_does_not_take_the_programs_recorded_constants() {
    let (parse, a) = check_source(Source::Text(PROGRAM), Keep::Everything).parsed();
    let (rewritten, _, _) = jaxpr_lower::discharge::rewritten(&parse, &a, &recorded())
        .expect("the `let`'s constant is recorded")
        .expect("rewritten");
    // The `let`'s `a` became a constant; the `static=` jaxpr's `a` did not.
    assert!(rewritten.text.contains("constant["), "{}", rewritten.text);
    assert!(
        rewritten
            .text
            .contains("static=({ lambda a:f32[3]; h:f32[3]."),
        "{}",
        rewritten.text
    );
}
