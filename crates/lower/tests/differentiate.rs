//! Catalyst's derivatives of classical functions rewritten into forward-mode
//! jaxprs (`differentiate.rs`): the rewritten program checks clean and has
//! no derivative left; what has no rule is one J0012 at the equation of the
//! original text that lacks it. (Values: `crates/jaxpr-build/tests`
//! `catalyst_classical_programs_build_with_catalysts_values` and
//! `gradients_of_circuits_give_catalysts_values` build every classical
//! derivative of the Catalyst suite on both back ends against Catalyst's.)

use jaxpr_check::{Keep, Source, check_source};
use jaxpr_lower::discharge::rewritten;
use jaxpr_syntax::diagnostics::{DiagKind, Diagnostic};

fn rewrite(text: &str) -> Result<String, Vec<Diagnostic>> {
    let (parse, analysis) = check_source(Source::Text(text), Keep::Everything).parsed();
    assert!(
        jaxpr_lower::checked(&parse, &analysis).is_ok(),
        "the program checks"
    );
    match rewritten(&parse, &analysis, &Default::default())
        .expect("a classical derivative is rewritten")
    {
        Ok((r, p, a)) => {
            assert!(jaxpr_lower::checked(&p, &a).is_ok());
            Ok(r.text)
        }
        Err(d) => Err(d),
    }
}

/// `value_and_grad` of `x -> body(x)` over an `f64[3]`.
fn value_and_grad(body: &str, out: &str) -> String {
    format!(
        "{{ lambda ; a:f64[3]. let
    b:f64[] c:f64[3] = value_and_grad[
      fn=<f>
      grad_params=GradParams(method='auto', scalar_out=True, h=None, argnums=[0], scalar_argnums=True, expanded_argnums=[0], with_value=True)
      jaxpr={{ lambda ; d:f64[3]. let
{body}
        in ({out},) }}
    ] a
  in (b, c) }}"
    )
}

#[test]
fn a_classical_derivative_becomes_a_scan_of_tangents_that_checks_clean() {
    let text = value_and_grad(
        "          e:f64[3] = sin d
          f:f64[3] = mul e d
          g:f64[] = reduce_sum[axes=(0,)] f",
        "g",
    );
    let out = rewrite(&text).unwrap();
    assert!(!out.contains("grad["), "{out}");
    assert!(out.contains("scan["), "{out}");
    // The tangent rules: sin' = cos, and the product rule.
    assert!(out.contains("cos "), "{out}");
}

#[test]
fn an_equation_without_a_rule_is_one_j0012_at_it() {
    let text = value_and_grad(
        "          e:f64[3] = erf d
          g:f64[] = reduce_sum[axes=(0,)] e",
        "g",
    );
    let ds = rewrite(&text).unwrap_err();
    assert_eq!(ds.len(), 1, "{ds:?}");
    let d = &ds[0];
    assert_eq!(d.kind, DiagKind::Unsupported, "{d:?}");
    let at = &text[d.range.start as usize..d.range.end as usize];
    assert_eq!(at, "erf", "{d:?}");
    assert!(d.message.contains("no rule"), "{}", d.message);
}

#[test]
fn a_derivative_of_a_derivative_is_refused_as_catalyst_refuses_it() {
    let inner = "          e:f64[3] = grad[
            fn=<g>
            grad_params=GradParams(method='auto', scalar_out=False, h=None, argnums=[0], scalar_argnums=True, expanded_argnums=[0], with_value=False)
            jaxpr={ lambda ; h:f64[3]. let
                i:f64[3] = sin h
                j:f64[] = reduce_sum[axes=(0,)] i
              in (j,) }
          ] d
          g:f64[] = reduce_sum[axes=(0,)] e";
    let text = value_and_grad(inner, "g");
    let ds = rewrite(&text).unwrap_err();
    assert_eq!(ds.len(), 1, "{ds:?}");
    assert_eq!(ds[0].kind, DiagKind::Unsupported);
    assert!(
        ds[0].message.contains("derivative of a derivative"),
        "{}",
        ds[0].message
    );
}
