//! JAX's state statements and reference types as the parser reads them:
//! each form `jax/_src/state/primitives.py` and Pallas's printers write,
//! with its indexers and ranges.

use jaxpr_syntax::ast::{self, Atom, Indexer, RefTransform, StateKind};
use jaxpr_syntax::parse;

const KERNEL: &str =
    "{ lambda ; d:Ref<default>{f32[8,16]} e:MemRef<None>{float32[8]} b:i32[] m:bool[8]. let
    g:f32[8,16] <- d[...]
    h:f32[2,16] <- d[b:b+2,:]
    k:f32[8,16], d[...] <- d[...], g
    d[3,1:] <- h
    d[:2,:b] += h
    v:f32[8] <- e[:] mask=m other=0.0:f32[]
    e{bitcast(i32)}[b] <- b
  in () }
";

fn eqns() -> Vec<ast::Eqn> {
    let p = parse(KERNEL);
    assert!(p.errors.is_empty(), "{:?}", p.errors);
    p.file.main.unwrap().eqns.into_vec()
}

fn text(r: jaxpr_syntax::TextRange) -> &'static str {
    &KERNEL[r.start as usize..r.end as usize]
}

#[test]
fn reference_types_keep_their_head_and_array() {
    let p = parse(KERNEL);
    let main = p.file.main.unwrap();
    let d = main.invars[0].ty.as_ref().unwrap();
    assert_eq!(&*d.dtype.text, "Ref<default>");
    assert!(!d.is_array());
    let of = d.of().unwrap();
    assert_eq!((&*of.dtype.text, of.dims.len()), ("f32", 2));
    assert_eq!(text(d.range), "Ref<default>{f32[8,16]}");
    let e = main.invars[1].ty.as_ref().unwrap();
    assert_eq!(
        (&*e.dtype.text, &*e.of().unwrap().dtype.text),
        ("MemRef<None>", "float32")
    );
}

#[test]
fn each_statement_is_an_equation_of_jaxs_primitive_and_operands() {
    let got: Vec<(String, Vec<String>, String, Option<StateKind>)> = eqns()
        .iter()
        .map(|e| {
            let args = e
                .args
                .iter()
                .map(|a| match a {
                    Atom::Var(n) => n.text.to_string(),
                    Atom::Lit(l) => l.value.to_string(),
                })
                .collect();
            (
                e.primitive.text.to_string(),
                args,
                text(e.primitive.range).to_string(),
                e.state.as_ref().map(|s| s.kind),
            )
        })
        .collect();
    let want = [
        ("get", vec!["d"], "<-", StateKind::Load),
        ("get", vec!["d", "b"], "<-", StateKind::Load),
        ("swap", vec!["d", "g"], "<-", StateKind::Swap),
        ("swap", vec!["d", "h"], "<-", StateKind::Store),
        ("addupdate", vec!["d", "h", "b"], "+=", StateKind::AddUpdate),
        ("masked_load", vec!["e", "m", "0.0"], "<-", StateKind::Load),
        ("swap", vec!["e", "b", "b"], "<-", StateKind::Store),
    ];
    assert_eq!(got.len(), want.len(), "{got:?}");
    for (g, (p, a, arrow, k)) in got.iter().zip(want) {
        assert_eq!(
            (g.0.as_str(), &g.1, g.2.as_str(), g.3),
            (
                p,
                &a.iter().map(|s| s.to_string()).collect(),
                arrow,
                Some(k)
            )
        );
    }
    // Results are bound as in any equation; a store has none.
    let e = eqns();
    assert_eq!(text(e[2].outs[0].range), "k:f32[8,16]");
    assert!(e[3].outs.is_empty());
    assert_eq!(text(e[0].range), "g:f32[8,16] <- d[...]");
}

#[test]
fn indexers_are_read_per_dimension_with_ranges() {
    let e = eqns();
    let ix = |i: usize| -> Vec<String> {
        let st = e[i].state.as_ref().unwrap();
        st.place
            .transforms
            .iter()
            .flat_map(|t| match t {
                RefTransform::Index(ix, _) => ix
                    .iter()
                    .map(|i| match i {
                        Indexer::At(a) => format!("at {}", text(a.range())),
                        Indexer::Slice {
                            start,
                            stop,
                            plus,
                            range,
                        } => format!(
                            "slice {:?} {:?} {plus} `{}`",
                            start.as_ref().map(|a| text(a.range())),
                            stop.as_ref().map(|a| text(a.range())),
                            text(*range)
                        ),
                    })
                    .collect::<Vec<_>>(),
                RefTransform::Other(t, r) => vec![format!("other {t} `{}`", text(*r))],
            })
            .collect()
    };
    assert!(ix(0).is_empty());
    assert_eq!(
        ix(1),
        [
            "slice Some(\"b\") Some(\"2\") true `b:b+2`",
            "slice None None false `:`"
        ]
    );
    assert_eq!(ix(3), ["at 3", "slice Some(\"1\") None false `1:`"]);
    assert_eq!(
        ix(4),
        [
            "slice None Some(\"2\") false `:2`",
            "slice None Some(\"b\") false `:b`"
        ]
    );
    assert_eq!(ix(6), ["other bitcast(i32) `{bitcast(i32)}`", "at b"]);
    let st = e[5].state.as_ref().unwrap();
    assert_eq!(text(st.mask.as_ref().unwrap().range()), "m");
    assert_eq!(text(st.place.range), "e[:]");
}

#[test]
fn a_broken_statement_is_a_syntax_error_not_a_panic() {
    for bad in [
        "{ lambda ; d:Ref{f32[3]}. let\n    g:f32[3] <- d[\n  in () }\n",
        "{ lambda ; d:Ref{f32[3]} v:f32[3]. let\n    k:f32[3], d[...] <- e[...], v\n  in () }\n",
        "{ lambda ; d:Ref{f32[3]} v:f32[3]. let\n    k:f32[3] += d[...]\n  in () }\n",
        "{ lambda ; d:Ref{f32[3] . let\n  in () }\n",
    ] {
        assert!(!parse(bad).errors.is_empty(), "{bad}");
    }
}
