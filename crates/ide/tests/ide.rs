//! IDE features as fixtures: `$0` marks the cursor, and annotation lines
//! (`#   ^^^ def`, `#   ^ ref`) mark the ranges a feature must answer with
//! (see `jaxpr_test_support::fixture`).

use jaxpr_ide::{FileView, NavTarget};
use jaxpr_syntax::{LineIndex, TextRange, ast};
use jaxpr_test_support::fixture::Fixture;

/// `catalyst/resize_loop.jaxpr`: a loop whose carried array changes size.
const RESIZE_LOOP: &str = r#"{ lambda ; a:i64[] b:f64[a] c:f64[a]. let
    d:i64[] e:f64[d] = for_loop[
      apply_reverse_transform=False
      body_jaxpr={ lambda ; f:i64[] g:i64[] h:f64[f]. let
          i:i64[] = add f 1:i64[]
          j:f64[i] = broadcast_in_dim[broadcast_dimensions=() shape=(None,) sharding=None] 1.0:f64[] i
        in (i, j) }
      body_nconsts=0
      num_implicit_inputs=1
      preserve_dimensions=False
    ] a 0:i64[] 10:i64[] 1:i64[] 0:i64[] c
    k:f64[] = reduce_sum[axes=(0,)] e
  in (k,) }
"#;

/// [`RESIZE_LOOP`] with the body's binder line replaced by `binders` (which
/// carries the cursor) followed by the annotation line `mark`.
fn resize_loop(binders: &str, mark: &str) -> String {
    let line = "      body_jaxpr={ lambda ; f:i64[] g:i64[] h:f64[f]. let";
    let with = if mark.is_empty() {
        binders.to_string()
    } else {
        format!("{binders}\n{mark}")
    };
    RESIZE_LOOP.replace(line, &with)
}

/// Runs `f` on the analysed fixture and its cursor.
fn with_view<R>(fixture: &str, f: impl FnOnce(&Fixture, &FileView, u32) -> R) -> R {
    let fx = Fixture::parse(fixture);
    let parse = jaxpr_syntax::parse(&fx.text);
    let analysis = jaxpr_check::check(&parse.file);
    let lines = LineIndex::new(&fx.text);
    let view = FileView {
        text: &fx.text,
        parse: &parse,
        analysis: &analysis,
        lines: &lines,
        costs: None,
    };
    let cursor = fx.cursor.expect("the fixture has a `$0` cursor");
    f(&fx, &view, cursor)
}

/// The references of the name at the cursor, its binder included, are the
/// ranges annotated `ref`.
fn assert_references(fixture: &str) {
    with_view(fixture, |fx, view, cursor| {
        let mut found = jaxpr_ide::references(view.analysis, cursor, true);
        found.sort_by_key(|r| r.start);
        assert_eq!(found, ranges(fx, "ref"));
    });
}

fn ranges(fx: &Fixture, label: &str) -> Vec<TextRange> {
    fx.labelled(label)
        .iter()
        .map(|a| TextRange::new(a.start, a.end))
        .collect()
}

#[test]
fn definition_of_a_dimension_variable_in_a_type_is_its_binder() {
    with_view(
        &resize_loop(
            "      body_jaxpr={ lambda ; f:i64[] g:i64[] h:f64[$0f]. let",
            "#                           ^ def",
        ),
        |fx, view, cursor| {
            let Some(NavTarget::Here(at)) = jaxpr_ide::definition(view.analysis, cursor) else {
                panic!("no definition in this file");
            };
            assert_eq!(vec![at], ranges(fx, "def"));
        },
    );
}

#[test]
fn references_of_a_variable_stay_inside_its_jaxpr() {
    assert_references(
        r#"{ lambda ; a:f32[3] p:f32[3]. let
#                   ^ ref
    b:f32[3] = jit[
      jaxpr={ lambda ; p:f32[3]. let q:f32[3] = sin p in (q,) }
      name=f
    ] $0p
#     ^ ref
    c:f32[3] = add p b
#                  ^ ref
  in (c,) }
"#,
    );
}

#[test]
fn hover_on_a_loop_body_lambda_shows_its_signature_with_de_bruijn_indices() {
    with_view(
        &resize_loop(
            "      body_jaxpr={ $0lambda ; f:i64[] g:i64[] h:f64[f]. let",
            "#                  ^^^^^^ hover",
        ),
        |fx, view, cursor| {
            let (range, markdown) = jaxpr_ide::hover(view, cursor).expect("a hover");
            assert_eq!(vec![range], ranges(fx, "hover"));
            assert!(
                markdown
                    .contains("in_type:  ((i64[], False), (i64[], True), (f64[DBIdx(0)], True))"),
                "{markdown}"
            );
            assert!(
                markdown.contains("out_type: ((i64[], False), (f64[OutDBIdx(0)], True))"),
                "{markdown}"
            );
            assert!(markdown.contains("body_jaxpr"), "{markdown}");
        },
    );
}

#[test]
fn hover_on_a_primitive_shows_its_registry_doc_line() {
    with_view(
        r#"{ lambda ; a:f32[3]. let
    b:f32[3] = $0tanh a
  in (b,) }
"#,
        |_, view, cursor| {
            let (_, markdown) = jaxpr_ide::hover(view, cursor).expect("a hover");
            let doc = jaxpr_check::registry::lookup("tanh").unwrap().doc;
            assert!(markdown.contains(doc), "{markdown}");
        },
    );
}

#[test]
fn hover_on_a_reused_key_explains_the_reuse_and_points_at_the_first_use() {
    with_view(
        r#"{ lambda ; a:key<fry>[]. let
    b:key<fry>[2] = random_split[shape=(2,)] a
    c:u32[3] = random_bits[bit_width=32 shape=(3,)] $0a
  in (b, c) }
"#,
        |_, view, cursor| {
            let (_, markdown) = jaxpr_ide::hover(view, cursor).expect("a hover");
            assert!(markdown.contains("J0013 key-reuse"), "{markdown}");
            assert!(
                markdown.contains("line 2:46: consumed here by `random_split`"),
                "{markdown}"
            );
            assert!(markdown.contains("jax.random.split"), "{markdown}");
        },
    );
}

#[test]
fn hover_on_an_out_of_bounds_index_says_what_jax_does() {
    with_view(
        r#"{ lambda ; a:f32[5]. let
    b:f32[2] = dynamic_slice[slice_sizes=(2,)] a $07:i32[]
  in (b,) }
"#,
        |_, view, cursor| {
            let (_, markdown) = jaxpr_ide::hover(view, cursor).expect("a hover");
            assert!(markdown.contains("J0014 out-of-bounds-index"), "{markdown}");
            assert!(markdown.contains("clamps the start to 3"), "{markdown}");
        },
    );
}

#[test]
fn parameter_completion_offers_the_registry_parameters_of_the_primitive() {
    with_view(
        r#"{ lambda ; a:f32[3]. let
    b:f32[3,4] = broadcast_in_dim[$0] a
  in (b,) }
"#,
        |_, view, cursor| {
            let labels: Vec<String> = jaxpr_ide::completions(view, cursor)
                .into_iter()
                .map(|c| c.label)
                .collect();
            for p in jaxpr_check::registry::lookup("broadcast_in_dim")
                .unwrap()
                .params
            {
                assert!(
                    labels.iter().any(|l| l == p),
                    "`{p}` not offered: {labels:?}"
                );
            }
        },
    );
}

/// A Catalyst loop whose body binds a dimension variable `d` and receives
/// the outer `b` as `g`. Each test puts its cursor and annotation lines in:
/// `marks` goes under the body's binders, `operand_mark` under the call
/// site's operands.
fn capture(
    body_binders: &str,
    marks: &str,
    b_type: &str,
    last_operand: &str,
    operand_mark: &str,
) -> String {
    format!(
        "{{ lambda ; a:i64[]. let
    b:{b_type} = broadcast_in_dim[broadcast_dimensions=() shape=(None,) sharding=None] 1.0:f64[] a
    c:f64[a] = for_loop[
      apply_reverse_transform=False
      body_jaxpr={{ lambda ; {body_binders}. let
{marks}
          h:f64[d] = add g e
        in (h,) }}
      body_nconsts=2
      num_implicit_inputs=0
      preserve_dimensions=True
    ] a b 0:i64[] 10:i64[] 1:i64[] 0:i64[] {last_operand}
{operand_mark}
    i:f64[a] = add b c
  in (i,) }}"
    )
}

fn definition_at(fixture: &str) -> (Vec<TextRange>, TextRange) {
    with_view(fixture, |fx, view, cursor| {
        let Some(NavTarget::Here(at)) = jaxpr_ide::definition(view.analysis, cursor) else {
            panic!("no definition in this file");
        };
        (ranges(fx, "def"), at)
    })
}

#[test]
fn definition_of_a_dimension_variable_is_its_binder_in_the_same_jaxpr() {
    let fixture = capture(
        "d:i64[] e:f64[d] f:i64[] g:f64[d]",
        "#                           ^ def",
        "f64[a]",
        "b",
        "",
    )
    .replace("h:f64[d]", "h:f64[$0d]");
    let (expected, found) = definition_at(&fixture);
    assert_eq!(expected, vec![found]);
}

#[test]
fn definition_of_an_outer_dimension_variable_is_the_main_binder() {
    let fixture = capture("d:i64[] e:f64[d] f:i64[] g:f64[d]", "", "f64[$0a]", "b", "").replace(
        "{ lambda ; a:i64[]. let",
        "{ lambda ; a:i64[]. let\n#          ^ def",
    );
    let (expected, found) = definition_at(&fixture);
    assert_eq!(expected, vec![found]);
}

#[test]
fn a_nested_binder_and_its_call_site_operand_lead_to_each_other() {
    // From the body's binder `g` to the operand `b` that feeds it...
    let fixture = capture(
        "d:i64[] e:f64[d] f:i64[] $0g:f64[d]",
        "",
        "f64[a]",
        "b",
        "#                                          ^ def",
    );
    let (expected, found) = definition_at(&fixture);
    assert_eq!(expected, vec![found]);
    // ...and back.
    let fixture = capture(
        "d:i64[] e:f64[d] f:i64[] g:f64[d]",
        "#                                                    ^ impl",
        "f64[a]",
        "$0b",
        "",
    );
    with_view(&fixture, |fx, view, cursor| {
        assert_eq!(
            jaxpr_ide::implementation(view.analysis, cursor),
            ranges(fx, "impl")
        );
    });
}

#[test]
fn references_of_an_inner_binder_are_only_its_own() {
    assert_references(
        r#"{ lambda ; p:f32[2,3]. let
    q:f32[2,3] = jit[name=f jaxpr={ lambda ; $0p:f32[2,3]. let r:f32[2,3] = sin p in (r,) }] p
#                                              ^ ref
#                                                                               ^ ref
    s:f32[2,3] = add p q
  in (s,) }
"#,
    );
}

#[test]
fn hover_on_a_dimension_variable_binder_says_what_it_sizes_and_that_it_is_loop_carried() {
    with_view(
        &resize_loop(
            "      body_jaxpr={ lambda ; $0f:i64[] g:i64[] h:f64[f]. let",
            "",
        ),
        |_, view, cursor| {
            let (_, markdown) = jaxpr_ide::hover(view, cursor).expect("a hover");
            assert!(
                markdown.contains("f:i64[]") && markdown.contains("sizes `h`"),
                "{markdown}"
            );
            assert!(markdown.contains("loop-carried"), "{markdown}");
        },
    );
}

/// A Catalyst circuit: a qubit taken out of a register at wire 1, through an
/// RX gate and a CNOT (as its second qubit), then measured.
const CIRCUIT: &str = r#"{ lambda ; a:f64[]. let
    b:AbstractQreg() = qalloc 2:i64[]
    c:AbstractQbit() = qextract b 0:i64[]
    d:AbstractQbit() = qextract b 1:i64[]
    e:AbstractQbit() = qinst[adjoint=False ctrl_len=0 op=RX params_len=1 qubits_len=1] d a
    f:AbstractQbit() g:AbstractQbit() = qinst[adjoint=False ctrl_len=0 op=CNOT params_len=0 qubits_len=2] c e
    _:bool[] h:AbstractQbit() = measure[postselect=None] g
    i:AbstractObs(num_qubits=None,qreg=None,primitive=None) = namedobs[kind=PauliZ] h
    j:f64[] = expval i
  in (j,) }
"#;

#[test]
fn hover_on_a_qubit_shows_the_wire_it_came_from_through_gates_and_measurements() {
    let at = |name: &str| {
        CIRCUIT.replacen(
            &format!("{name}:AbstractQbit()"),
            &format!("$0{name}:AbstractQbit()"),
            1,
        )
    };
    for (qubit, wire) in [("d", "1"), ("e", "1"), ("f", "0"), ("g", "1"), ("h", "1")] {
        with_view(&at(qubit), |_, view, cursor| {
            let (_, markdown) = jaxpr_ide::hover(view, cursor).expect("a hover");
            assert!(
                markdown.contains(&format!("{qubit}:AbstractQbit()")),
                "{markdown}"
            );
            assert!(
                markdown.contains(&format!(
                    "qubit on wire `{wire}` of register `b` (extracted on line"
                )),
                "{qubit}: {markdown}"
            );
        });
    }
}

#[test]
fn hover_and_definition_work_on_quantum_primitives_and_values() {
    let fixture = CIRCUIT.replace("namedobs[kind=PauliZ] h", "namedobs[kind=PauliZ] $0h");
    let (_, at) = definition_at(&fixture);
    let binder = CIRCUIT.find("h:AbstractQbit()").unwrap() as u32;
    assert_eq!((at.start, at.end), (binder, binder + 1));
    with_view(
        &CIRCUIT.replace("= expval", "= $0expval"),
        |_, view, cursor| {
            let (_, markdown) = jaxpr_ide::hover(view, cursor).expect("a hover");
            let doc = jaxpr_check::registry::lookup("expval").unwrap().doc;
            assert!(markdown.contains(doc), "{markdown}");
        },
    );
}

#[test]
fn hover_on_a_primitive_shows_its_cost() {
    with_view(
        r#"{ lambda ; a:f32[3,4] b:f32[4,5]. let
    c:f32[3,5] = $0dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] a b
    d:f32[3,5] = tanh c
  in (d,) }
"#,
        |_, view, cursor| {
            let (_, markdown) = jaxpr_ide::hover(view, cursor).expect("a hover");
            // 2 x 15 results x 4 contracted; 48 + 80 bytes read, 60 written.
            assert!(
                markdown.contains("cost: 120 FLOPs, 0 transcendentals, 188 bytes accessed"),
                "{markdown}"
            );
        },
    );
}

#[test]
fn hover_on_a_lambda_shows_its_totals_and_symbolic_peak() {
    with_view(
        r#"{ $0lambda ; a:f32[b,n]. let
    c:f32[b,n] = exp a
    d:f32[b,n] = mul c a
  in (d,) }
"#,
        |_, view, cursor| {
            let (_, markdown) = jaxpr_ide::hover(view, cursor).expect("a hover");
            assert!(
                markdown
                    .contains("total cost: b*n FLOPs, b*n transcendentals, 20*b*n bytes accessed"),
                "{markdown}"
            );
            // a and c live while d is made.
            assert!(
                markdown.contains("peak:       12*b*n bytes live at mul"),
                "{markdown}"
            );
        },
    );
}

/// A `let` called twice by the main jaxpr and once by a jaxpr nested in it.
const CALLS: &str = r#"let _f = { lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) } in
{ lambda ; c:f32[3]. let
    d:f32[3] = pjit[name=f jaxpr=_f] c
    e:f32[3] = pjit[name=f jaxpr=_f] d
    i:f32[3] = pjit[
      name=g
      jaxpr={ lambda ; g:f32[3]. let h:f32[3] = pjit[name=f jaxpr=_f] g in (h,) }
    ] e
  in (i,) }
"#;

fn calls_fixture(line: usize, cursor_line: &str, mark: &str) -> String {
    let mut lines: Vec<String> = CALLS.lines().map(str::to_string).collect();
    lines[line] = cursor_line.to_string();
    if !mark.is_empty() {
        lines.insert(line + 1, mark.to_string());
    }
    lines.join("\n") + "\n"
}

#[test]
fn incoming_calls_of_a_let_are_its_callers_with_each_call_site() {
    let fixture = calls_fixture(
        0,
        "let _$0f = { lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) } in",
        "",
    )
    .replace(
        "    d:f32[3] = pjit[name=f jaxpr=_f] c\n    e:f32[3] = pjit[name=f jaxpr=_f] d\n",
        "    d:f32[3] = pjit[name=f jaxpr=_f] c\n#                                ^^ main\n    e:f32[3] = pjit[name=f jaxpr=_f] d\n#                                ^^ main\n",
    )
    .replace(
        "      jaxpr={ lambda ; g:f32[3]. let h:f32[3] = pjit[name=f jaxpr=_f] g in (h,) }\n",
        "      jaxpr={ lambda ; g:f32[3]. let h:f32[3] = pjit[name=f jaxpr=_f] g in (h,) }\n#                                                                 ^^ nested\n",
    );
    with_view(&fixture, |fx, view, cursor| {
        assert!(
            view.analysis.diagnostics.is_empty(),
            "{:?}",
            view.analysis.diagnostics
        );
        let item = jaxpr_ide::prepare_call_hierarchy(view.analysis, view.lines, cursor).unwrap();
        assert_eq!(item.name, "_f");
        assert_eq!(item.detail, "((f32[3], True),) -> ((f32[3], True),)");
        let calls = jaxpr_ide::incoming_calls(view.analysis, view.lines, item.jaxpr);
        let names: Vec<&str> = calls.iter().map(|c| c.item.name.as_str()).collect();
        assert_eq!(names, ["main", "jaxpr of pjit (line 5)"]);
        assert_eq!(calls[0].sites, ranges(fx, "main"));
        assert_eq!(calls[1].sites, ranges(fx, "nested"));
    });
}

#[test]
fn outgoing_calls_of_the_main_jaxpr_are_the_let_and_the_inline_jaxpr() {
    let fixture = calls_fixture(1, "{ lambda ; $0c:f32[3]. let", "").replace(
        "    i:f32[3] = pjit[\n",
        "    i:f32[3] = pjit[\n#              ^^^^ inline\n",
    );
    with_view(&fixture, |fx, view, cursor| {
        let item = jaxpr_ide::prepare_call_hierarchy(view.analysis, view.lines, cursor).unwrap();
        assert_eq!(item.name, "main");
        let calls = jaxpr_ide::outgoing_calls(view.analysis, view.lines, item.jaxpr);
        let names: Vec<&str> = calls.iter().map(|c| c.item.name.as_str()).collect();
        assert_eq!(names, ["_f", "jaxpr of pjit (line 5)"]);
        assert_eq!(calls[0].sites.len(), 2);
        assert_eq!(calls[1].sites, ranges(fx, "inline"));
        // The nested jaxpr calls the `let` in turn.
        let inner = jaxpr_ide::outgoing_calls(view.analysis, view.lines, calls[1].item.jaxpr);
        assert_eq!(inner.len(), 1);
        assert_eq!(inner[0].item.jaxpr, calls[0].item.jaxpr);
    });
}

#[test]
fn selection_grows_from_an_operand_to_the_file() {
    let fixture = calls_fixture(
        3,
        "    e:f32[3] = pjit[name=f jaxpr=_f] $0d",
        "#                                    ^ token\n#   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ eqn",
    );
    with_view(&fixture, |fx, view, cursor| {
        let chain = jaxpr_ide::selection_ranges(&view.parse.file, view.text.len() as u32, cursor);
        // The token, the operand list (here the same range: listed once), the equation.
        assert_eq!(chain[0], ranges(fx, "token")[0]);
        assert_eq!(chain[1], ranges(fx, "eqn")[0]);
        let main = view.parse.file.main.as_ref().unwrap();
        let body = main.eqns[0].range.cover(main.eqns[2].range);
        assert_eq!(
            chain[2..],
            [body, main.range, TextRange::new(0, view.text.len() as u32)]
        );
    });
}

#[test]
fn selection_inside_a_nested_jaxpr_walks_out_through_its_parameter_and_equation() {
    let fixture = calls_fixture(
        6,
        "      jaxpr={ lambda ; g:f32[3]. let h:f32[3] = $0pjit[name=f jaxpr=_f] g in (h,) }",
        "#                                               ^^^^ primitive",
    );
    with_view(&fixture, |fx, view, cursor| {
        let chain = jaxpr_ide::selection_ranges(&view.parse.file, view.text.len() as u32, cursor);
        assert_eq!(chain[0], ranges(fx, "primitive")[0]);
        let main = view.parse.file.main.as_ref().unwrap();
        let outer = &main.eqns[2];
        let param = outer.param("jaxpr").unwrap();
        let ast::ExprKind::Jaxpr(inner) = &param.value.kind else {
            panic!("a jaxpr")
        };
        for expected in [
            inner.eqns[0].range,
            inner.range,
            param.range,
            outer.params_range.unwrap(),
            outer.range,
            main.range,
        ] {
            assert!(chain.contains(&expected), "{expected:?} not in {chain:?}");
        }
        // Innermost first: each range inside the next.
        assert!(
            chain
                .windows(2)
                .all(|w| w[1].start <= w[0].start && w[0].end <= w[1].end && w[0] != w[1])
        );
    });
}

#[test]
fn named_jaxprs_are_every_jaxpr_of_the_file_and_queries_match_in_order() {
    with_view(
        &calls_fixture(1, "{ lambda ; $0c:f32[3]. let", ""),
        |_, view, _| {
            let names: Vec<String> = jaxpr_ide::named_jaxprs(view.analysis, view.lines)
                .into_iter()
                .map(|c| c.name)
                .collect();
            assert_eq!(names, ["_f", "main", "jaxpr of pjit (line 5)"]);
        },
    );
    assert!(jaxpr_ide::matches_query("jaxpr of pjit (line 5)", "jpjit"));
    assert!(jaxpr_ide::matches_query("_where", "WHR"));
    assert!(!jaxpr_ide::matches_query("_where", "wx"));
}

/// Every outline symbol's selection lies inside its range, and every child
/// inside its parent, as LSP requires (VS Code rejects the whole outline
/// otherwise), on real files: `let` definitions, nested jaxprs, loops.
#[test]
fn outline_symbols_nest_their_selections_and_children() {
    fn walk(
        symbols: &[jaxpr_ide::Symbol],
        parent: Option<TextRange>,
        file: &str,
        seen: &mut usize,
    ) {
        for s in symbols {
            *seen += 1;
            let inside = |inner: TextRange, outer: TextRange| {
                outer.start <= inner.start && inner.end <= outer.end
            };
            assert!(
                inside(s.selection, s.range),
                "{file}: `{}` selects {:?} outside {:?}",
                s.name,
                s.selection,
                s.range
            );
            if let Some(p) = parent {
                assert!(
                    inside(s.range, p),
                    "{file}: `{}` at {:?} outside its parent {:?}",
                    s.name,
                    s.range,
                    p
                );
            }
            walk(&s.children, Some(s.range), file, seen);
        }
    }
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data");
    let files = [
        "versions/jax-0.10.2/random.jaxpr",
        "versions/jax-0.10.2/remat.jaxpr",
        "catalyst-suite/forloop_keep_and_grow.jaxpr",
        "ecosystem/diffrax/sde_euler_brownian.jaxpr",
        "ecosystem/flax_nnx/mlp_adam_train_step.jaxpr",
    ];
    let mut seen = 0;
    for path in files.map(|f| data.join(f)) {
        let text = std::fs::read_to_string(&path).unwrap();
        let parse = jaxpr_syntax::parse(&text);
        let analysis = jaxpr_check::check(&parse.file);
        let lines = LineIndex::new(&text);
        let view = FileView {
            text: &text,
            parse: &parse,
            analysis: &analysis,
            lines: &lines,
            costs: None,
        };
        walk(
            &jaxpr_ide::document_symbols(&view),
            None,
            &path.display().to_string(),
            &mut seen,
        );
    }
    assert!(seen >= 50, "{seen} symbols");
}

/// A `let`, a main jaxpr calling it twice, and a `scan` whose body runs
/// four times: each jaxpr's summary sits on its `let` name or its `lambda`.
/// The body: 3 multiplies reading `h` twice (36 B) and 3 `exp` (24 B); the
/// main jaxpr: `_f` twice and the body four times, its peak `c`, `e`, `g`
/// and the body's two temporaries of 12 B. Around the body, JAX's HLO
/// `while`: each iteration the counter's `add` and `lt` (2 FLOPs, 21 B) and
/// the 16 B tuple of counter and carry the body returns, and once the tuple
/// built before the loop: 12 + 4 × 2 FLOPs, 288 + 4 × 37 + 16 B.
const COST_SUMMARIES: &str = r#"let _f = { lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) } in
#   ^^ cost: 0 FLOPs · 3 transcendentals · 24 B accessed · peak 24 B
{ lambda ; c:f32[3]. let
# ^^^^^^ cost: 20 FLOPs · 18 transcendentals · 452 B accessed · peak 60 B
    d:f32[3] = pjit[name=f jaxpr=_f] c
    e:f32[3] = pjit[name=f jaxpr=_f] d
    g:f32[3] = scan[
      _split_transpose=False
      jaxpr={ lambda ; h:f32[3]. let i:f32[3] = mul h h; j:f32[3] = exp i in (j,) }
#             ^^^^^^ cost: 3 FLOPs · 3 transcendentals · 60 B accessed · peak 36 B
      length=4
      linear=(False,)
      num_carry=1
      num_consts=0
      reverse=False
      unroll=1
    ] e
  in (g,) }
"#;

#[test]
fn cost_summaries_give_each_jaxprs_totals_on_its_let_name_or_lambda() {
    with_view(&format!("{COST_SUMMARIES}$0"), |fx, view, _| {
        assert!(
            view.analysis.diagnostics.is_empty(),
            "{:?}",
            view.analysis.diagnostics
        );
        let whole = TextRange::new(0, view.text.len() as u32);
        let summaries = jaxpr_ide::cost_summaries(view, whole);
        let found: Vec<(TextRange, &str)> = summaries
            .iter()
            .map(|s| (s.anchor, s.label.as_str()))
            .collect();
        let expected: Vec<(TextRange, &str)> = fx
            .annotations
            .iter()
            .map(|a| (TextRange::new(a.start, a.end), a.label.as_str()))
            .collect();
        assert_eq!(found, expected);
        // The inlay hint goes at the end of the `lambda`'s line; the
        // tooltip has the exact amounts and where the peak is reached.
        let first_line = view.text.lines().next().unwrap();
        assert_eq!(summaries[0].line_end as usize, first_line.len());
        assert!(
            summaries[1]
                .tooltip
                .starts_with("the main jaxpr\nFLOPs: 20\n"),
            "{}",
            summaries[1].tooltip
        );
        assert!(
            summaries[1].tooltip.contains("bytes live at "),
            "{}",
            summaries[1].tooltip
        );
        // A range holding only the scan's line has only the scan body's summary.
        let scan_body = view.text.find("jaxpr={").unwrap() as u32;
        let only = jaxpr_ide::cost_summaries(view, TextRange::new(scan_body, scan_body + 20));
        assert_eq!(only.len(), 1);
        assert_eq!(only[0].label, summaries[2].label);
        // The inlay hint's label keeps FLOPs and the peak.
        let short: Vec<&str> = summaries.iter().map(|s| s.short_label.as_str()).collect();
        assert_eq!(
            short,
            [
                "cost: 0 FLOPs · peak 24 B",
                "cost: 20 FLOPs · peak 60 B",
                "cost: 3 FLOPs · peak 36 B"
            ]
        );
    });
}

#[test]
fn large_counts_are_shown_with_si_prefixes_and_symbolic_ones_as_they_are() {
    use jaxpr_cost::Amount;
    let shown: Vec<String> = [9_999, 10_000, 123_456, 12_600_000_000, 1_000_000]
        .into_iter()
        .map(|n| jaxpr_ide::compact_amount(&Amount::constant(n)))
        .collect();
    assert_eq!(shown, ["9999", "10.0k", "123k", "12.6G", "1.00M"]);
    assert_eq!(jaxpr_ide::compact_amount(&Amount::unknown()), "?");
}

/// An inlay hint's label fits VS Code's default 43-character limit for any
/// constant amounts (three significant digits and a prefix at most).
#[test]
fn cost_inlay_labels_fit_vs_codes_default_limit() {
    let big = "{ lambda ; a:f32[100000,100000] b:f32[100000,100000]. let\n    c:f32[100000,100000] = dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32] a b\n  in (c,) }\n";
    with_view(&format!("{big}$0"), |_, view, _| {
        let whole = TextRange::new(0, view.text.len() as u32);
        let summaries = jaxpr_ide::cost_summaries(view, whole);
        assert_eq!(summaries[0].short_label, "cost: 2.00P FLOPs · peak 120 GB");
        assert!(
            summaries
                .iter()
                .all(|s| s.short_label.chars().count() <= 43),
            "{summaries:?}"
        );
    });
}

#[test]
fn hover_on_a_kernel_reference_shows_its_block_and_the_array() {
    let kernel = r#"{ lambda ; a:f32[8,8] b:f32[8,8]. let
    c:f32[8,8] = pallas_call[
      grid_mapping=GridMapping(grid=(2, 2), block_mappings=(BlockMapping(block_shape=(Blocked(block_size=4), Blocked(block_size=8))), BlockMapping(block_shape=(Blocked(block_size=8), Blocked(block_size=4))), BlockMapping(block_shape=(Blocked(block_size=4), Blocked(block_size=4)))))
      interpret=True
      jaxpr={ lambda ; d:Ref<default>{f32[4,8]} $0e:Ref<default>{f32[8,4]} f:Ref<default>{f32[4,4]}. let
          g:f32[4,8] <- d[...]
          h:f32[8,4] <- e[...]
          i:f32[4,4] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] g h
          f[...] <- i
        in () }
    ] a b
  in (c,) }
"#;
    with_view(kernel, |_, view, cursor| {
        let (_, markdown) = jaxpr_ide::hover(view, cursor).expect("a hover");
        assert!(
            markdown.contains("in_type entry 1: `(Ref<default>{f32[8,4]}, True)`")
                && markdown.contains(
                    "a reference to one block (Ref<default>{f32[8,4]}) of `b` at line 11:9"
                ),
            "{markdown}"
        );
    });
}
