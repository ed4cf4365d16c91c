//! The parser on text exactly as JAX 0.10.2 and Catalyst 0.15.0 print it
//! (`tests/printed/*.jaxpr`, copied from their output; `jax0430_*` and
//! `jax053_*` from jax 0.4.30 and 0.5.3, written by
//! `corpus-gen/printed/gen.py` like the other files it names): every file
//! parses without errors, and the tree holds what the text says.

use jaxpr_syntax::ast::{self, Atom, DbIdxKind, Eqn, ExprKind, SourceFile};
use jaxpr_syntax::parse;

fn printed(name: &str) -> String {
    let path = format!("{}/tests/printed/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Parses `text`, asserting that it has no syntax errors.
fn parse_clean(text: &str) -> SourceFile {
    let p = parse(text);
    let errors: Vec<String> = p
        .errors
        .iter()
        .map(|d| format!("{}: {}", &text[d.range.start as usize..], d.message))
        .map(|s| s.lines().next().unwrap_or_default().to_string() + " ...")
        .collect();
    assert!(errors.is_empty(), "syntax errors: {errors:#?}");
    p.file
}

fn eqns<'a>(file: &'a SourceFile, primitive: &str) -> Vec<&'a Eqn> {
    ast::each_eqn(file)
        .filter(|e| &*e.primitive.text == primitive)
        .collect()
}

fn only<'a>(file: &'a SourceFile, primitive: &str) -> &'a Eqn {
    let found = eqns(file, primitive);
    assert_eq!(found.len(), 1, "equations `{primitive}`");
    found[0]
}

fn arg_names(e: &Eqn) -> Vec<&str> {
    e.args
        .iter()
        .map(|a| match a {
            Atom::Var(n) => &*n.text,
            Atom::Lit(l) => &*l.value,
        })
        .collect()
}

#[test]
fn every_printed_file_parses_without_errors() {
    let dir = format!("{}/tests/printed", env!("CARGO_MANIFEST_DIR"));
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).expect("fixture folder") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "jaxpr") {
            let text = std::fs::read_to_string(&path).expect("fixture");
            let p = parse(&text);
            assert!(p.errors.is_empty(), "{}: {:?}", path.display(), p.errors);
            assert!(p.file.main.is_some(), "{}", path.display());
            count += 1;
        }
    }
    assert!(count >= 8, "only {count} fixtures found");
}

#[test]
fn equations_without_results_are_their_own_equations() {
    let file = parse_clean(&printed("catalyst_probs.jaxpr"));
    let init = only(&file, "device_init");
    assert!(init.outs.is_empty());
    assert_eq!(arg_names(init), ["0"]);
    assert_eq!(init.params.len(), 4);
    let dealloc = only(&file, "qdealloc");
    assert!(dealloc.outs.is_empty());
    assert_eq!(arg_names(dealloc), ["p"]);
    // `device_release ` ends its line, with nothing after it.
    let release = only(&file, "device_release");
    assert!(release.outs.is_empty() && release.args.is_empty());
    // The operand `j` on the line under `compbasis l` (indented deeper) is
    // still an operand of `compbasis`.
    assert_eq!(arg_names(only(&file, "compbasis")), ["l", "j"]);
    // The kernel's equations, in order: the primitive of a result-less
    // equation is not read as an operand of the one before it.
    let kernel = only(&file, "quantum_kernel");
    let ExprKind::Jaxpr(body) = &kernel.param("call_jaxpr").expect("call_jaxpr").value.kind else {
        panic!("call_jaxpr is not a jaxpr");
    };
    let names: Vec<&str> = body.eqns.iter().map(|e| &*e.primitive.text).collect();
    assert_eq!(names.first(), Some(&"device_init"));
    assert_eq!(
        &names[names.len() - 3..],
        ["qinsert", "qdealloc", "device_release"]
    );
    assert_eq!(arg_names(&body.eqns[body.eqns.len() - 3]), ["o", "1", "j"]);
}

#[test]
fn abstract_values_are_types_with_keyword_arguments() {
    let file = parse_clean(&printed("catalyst_adjoint_state.jaxpr"));
    let qalloc = only(&file, "qalloc");
    let ty = qalloc.outs[0].ty.as_ref().expect("type");
    assert_eq!(&*ty.dtype.text, "AbstractQreg");
    assert!(!ty.is_array());
    assert_eq!(ty.args().map(<[_]>::len), Some(0));
    let obs = only(&file, "compbasis").outs[0].ty.as_ref().expect("type");
    assert_eq!(&*obs.dtype.text, "AbstractObs");
    let args = obs.args().expect("keyword arguments");
    let keys: Vec<&str> = args
        .iter()
        .map(|a| a.name.as_ref().map_or("", |n| &*n.text))
        .collect();
    assert_eq!(keys, ["num_qubits", "qreg", "primitive"]);
    assert!(args[0].value.is_none());
    assert!(matches!(&args[1].value.kind, ExprKind::Call(c) if &*c.callee == "AbstractQreg"));
    assert_eq!(args[2].value.as_path(), Some("compbasis"));
    // The binder `_:bool[] l:AbstractQbit()` of a measurement reads both.
    let file = parse_clean(&printed("catalyst_probs.jaxpr"));
    let measure = only(&file, "measure");
    let outs: Vec<&str> = measure.outs.iter().map(|b| &*b.name.text).collect();
    assert_eq!(outs, ["_", "l"]);
    assert!(measure.outs[0].ty.as_ref().is_some_and(|t| t.is_array()));
}

#[test]
fn tree_definitions_are_parameter_values() {
    let file = parse_clean(&printed("catalyst_adjoint_state.jaxpr"));
    let adjoint = only(&file, "adjoint");
    let tree = &adjoint.param("args_tree").expect("args_tree").value;
    let ExprKind::Call(call) = &tree.kind else {
        panic!("args_tree is {tree:?}");
    };
    assert_eq!(&*call.callee, "PyTreeDef");
    let [arg] = &call.args[..] else {
        panic!("PyTreeDef takes one argument")
    };
    let parts = arg.value.as_seq().expect("a tuple");
    let leaves: Vec<usize> = parts
        .iter()
        .map(|p| p.as_seq().map_or(99, <[_]>::len))
        .collect();
    assert_eq!(leaves, [1, 0, 1]);
    assert_eq!(parts[0].as_seq().unwrap()[0].as_path(), Some("*"));
    // The nested jaxpr after it is read as a jaxpr.
    assert!(matches!(
        adjoint.param("jaxpr").map(|p| &p.value.kind),
        Some(ExprKind::Jaxpr(_))
    ));
    // `composite` prints `PyTreeDef(*)` inside its attributes.
    let file = parse_clean(&printed("jax_composite.jaxpr"));
    let attributes = &only(&file, "composite")
        .param("attributes")
        .expect("attributes")
        .value;
    assert!(format!("{attributes:?}").contains("PyTreeDef"));
}

#[test]
fn dicts_and_file_paths_are_parameter_values() {
    let text = printed("catalyst_probs.jaxpr");
    let file = parse_clean(&text);
    let init = only(&file, "device_init");
    let kwargs = &init.param("rtd_kwargs").expect("rtd_kwargs").value;
    assert!(
        matches!(&kwargs.kind, ExprKind::Str(s) if s.starts_with("{'mcmc': False") && s.ends_with('}'))
    );
    let lib = &init.param("rtd_lib").expect("rtd_lib").value;
    let ExprKind::Str(path) = &lib.kind else {
        panic!("rtd_lib is {lib:?}");
    };
    assert!(
        path.starts_with('/') && path.ends_with("liblightning_qubit_catalyst.so"),
        "{path}"
    );
    assert_eq!(
        init.param("rtd_name").and_then(|p| p.value.as_path()),
        Some("LightningSimulator")
    );
}

fn literals(file: &SourceFile) -> Vec<(String, String)> {
    ast::each_eqn(file)
        .flat_map(|e| e.args.iter())
        .filter_map(|a| match a {
            Atom::Lit(l) => Some((
                l.value.to_string(),
                l.ty.as_ref()
                    .map_or(String::new(), |t| t.dtype.text.to_string()),
            )),
            Atom::Var(_) => None,
        })
        .collect()
}

#[test]
fn complex_literals() {
    let file = parse_clean(&printed("jax_complex_literals.jaxpr"));
    let got = literals(&file);
    let want = [
        ("(1+0j)", "c64"),
        ("1j", "c64"),
        ("-1j", "c64"),
        ("(1.4142135381698608+0j)", "c64"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(v, t)| (v.to_string(), t.to_string()))
        .collect();
    assert_eq!(got, want);
    let file = parse_clean(&printed("jax_complex_scalar.jaxpr"));
    assert_eq!(
        literals(&file)
            .iter()
            .map(|l| l.0.as_str())
            .collect::<Vec<_>>(),
        ["1j", "0j"]
    );
    let file = parse_clean(&printed("jax_complex_x64.jaxpr"));
    assert_eq!(
        literals(&file)[0],
        ("(1+0j)".to_string(), "c128".to_string())
    );
    // Python prints a negative zero real part as `-0`.
    let file = parse_clean("{ lambda ; a:c128[]. let b:c128[] = mul a (-0-1j):c128[] in (b,) }");
    assert_eq!(literals(&file)[0].0, "(-0-1j)");
}

#[test]
fn de_bruijn_indices_are_a_dimension_form() {
    // Catalyst's result and signature types refer to dimensions by position.
    let file = parse_clean(
        "{ lambda ; a:i64[] b:f64[a]. let
    c:i64[] d:f64[OutDBIdx(val=0)] = foo[in_type=(f64[DBIdx(val=0)],) k=InDBIdx(val=1)] a b
  in (c, d) }
",
    );
    let e = only(&file, "foo");
    let dim = &e.outs[1].ty.as_ref().expect("type").dims[0];
    assert_eq!(dim.kind, ExprKind::DbIdx(DbIdxKind::Out, 0));
    let k = &e.param("k").expect("k").value;
    assert_eq!(k.kind, ExprKind::DbIdx(DbIdxKind::InOfCall, 1));
    assert!(format!("{:?}", e.param("in_type").unwrap().value).contains("DbIdx(In, 0)"));
    // Other calls with those names stay calls (and the checker reports them).
    let file = parse_clean("{ lambda ; a:i64[]. let b:f64[OutDBIdx(a)] = foo a in (b,) }");
    let dim = &only(&file, "foo").outs[0].ty.as_ref().unwrap().dims[0];
    assert!(matches!(&dim.kind, ExprKind::Call(c) if &*c.callee == "OutDBIdx"));
}

#[test]
fn one_line_jaxprs_separate_equations_with_semicolons() {
    let file = parse_clean(&printed("jax_one_line.jaxpr"));
    let main = file.main.as_ref().expect("main");
    let names: Vec<(&str, Vec<&str>)> = main
        .eqns
        .iter()
        .map(|e| (&*e.primitive.text, arg_names(e)))
        .collect();
    assert_eq!(names, [("neg", vec!["a"]), ("neg", vec!["b"])]);
    assert_eq!(main.outvars.len(), 1);
    // Operands wrapped onto a deeper-indented line stay operands.
    let file = parse_clean(&printed("jax_wrapped_operands.jaxpr"));
    assert_eq!(only(&file, "concatenate").args.len(), 30);
    // A literal operand wrapped onto a line of its own looks like a result
    // (`True:bool[]`); the next line, at the equation's indentation, is the
    // next equation (Catalyst 0.15's controlled global phase, cut from a
    // random circuit's print).
    let file = parse_clean(&printed("catalyst_wrapped_literal_operand.jaxpr"));
    assert_eq!(only(&file, "gphase").args.len(), 3);
    let main = file.main.as_ref().expect("main");
    let inserts: Vec<usize> = main
        .eqns
        .iter()
        .filter(|e| &*e.primitive.text == "qinsert")
        .map(|e| e.outs.len())
        .collect();
    assert_eq!(inserts, [1, 1]);
}

#[test]
fn nested_jaxprs_with_constants_and_let_groups() {
    let file = parse_clean(&printed("jax_nested_constants.jaxpr"));
    let jit = only(&file, "jit");
    let ExprKind::Jaxpr(inner) = &jit.param("jaxpr").unwrap().value.kind else {
        panic!("jaxpr parameter")
    };
    assert_eq!(inner.constvars.len(), 1);
    assert_eq!(inner.invars.len(), 1);
    // `transpose_solve=let _lu_solve = { ... } in { ... }`
    let file = parse_clean(&printed("jax_let_in_parameter.jaxpr"));
    let solve = only(&file, "custom_linear_solve");
    let jaxprs = solve
        .param("jaxprs")
        .expect("jaxprs")
        .value
        .field("transpose_solve");
    let Some(ExprKind::Jaxpr(j)) = jaxprs.map(|e| &e.kind) else {
        panic!("transpose_solve is {jaxprs:?}")
    };
    let lets: Vec<&str> = j.lets.iter().map(|l| &*l.name.text).collect();
    assert_eq!(lets, ["_lu_solve"]);
    assert_eq!(j.invars.len(), 3);
    // The file's own `let` group is separate.
    assert_eq!(file.lets.len(), 1);
}

#[test]
fn symbolic_powers_and_sharded_dimensions() {
    let file = parse_clean(&printed("jax_symbolic_power.jaxpr"));
    let reshape = only(&file, "reshape");
    let dim = &reshape.outs[0].ty.as_ref().unwrap().dims[0];
    assert!(matches!(&dim.kind, ExprKind::Pow(b, 2) if b.as_path() == Some("b")));
    let sizes = reshape.param("new_sizes").unwrap().value.as_seq().unwrap();
    assert!(matches!(sizes[0].kind, ExprKind::Pow(_, 2)));
    let file = parse_clean(&printed("jax_sharded_type.jaxpr"));
    let main = file.main.as_ref().unwrap();
    let dims = &main.invars[0].ty.as_ref().unwrap().dims;
    assert!(matches!(&dims[0].kind, ExprKind::Sharded(size, axis)
        if size.as_int() == Some(16) && axis.as_path() == Some("x")));
    assert_eq!(dims[1].as_int(), Some(3));
}

/// The text of parameter `name` of `e`, kept as written.
fn text<'a>(e: &'a Eqn, name: &str) -> &'a str {
    match &e
        .param(name)
        .unwrap_or_else(|| panic!("no parameter {name}"))
        .value
        .kind
    {
        ExprKind::Str(s) => s,
        other => panic!("{name} is {other:?}"),
    }
}

fn param_names(e: &Eqn) -> Vec<&str> {
    e.params.iter().map(|p| &*p.name.text).collect()
}

#[test]
fn values_printed_with_str_are_text_up_to_the_next_parameter() {
    // One parameter a line: a value with no structure ends where the next
    // parameter's line starts; the values around it keep their structure.
    for (name, last) in [
        ("jax_pure_callback.jaxpr", "vmap_method"),
        ("jax0430_pure_callback.jaxpr", "vectorized"),
    ] {
        let source = printed(name);
        let file = parse_clean(&source);
        let e = only(&file, "pure_callback");
        assert_eq!(
            param_names(e),
            ["callback", "result_avals", "sharding", last]
        );
        // An abstract value's repr is a call of numpy's dtype and shape.
        let avals = &e.param("result_avals").unwrap().value;
        let at = avals.range.start as usize..avals.range.end as usize;
        assert_eq!(&source[at], "(ShapedArray(float32[6]),)");
        assert!(
            format!("{:?}", avals.kind).contains("Path(\"float32[6]\")"),
            "{avals:?}"
        );
        assert!(e.param("sharding").unwrap().value.is_none());
        assert_eq!(arg_names(e), ["a"]);
    }
    let file = parse_clean(&printed("jax_debug_print.jaxpr"));
    let e = only(&file, "debug_print");
    assert_eq!(text(e, "fmt"), "x = {}");
    assert_eq!(
        e.param("has_placeholders").and_then(|p| p.value.as_bool()),
        Some(true)
    );
    assert_eq!(
        e.param("np_printoptions")
            .and_then(|p| p.value.as_seq())
            .map(<[_]>::len),
        Some(12)
    );
    assert_eq!(
        e.param("static_args")
            .and_then(|p| p.value.as_seq())
            .map(<[_]>::len),
        Some(0)
    );
    assert_eq!(arg_names(e), ["a"]);

    // jax 0.5.3 prints a `WrappedFun` with its line breaks, unindented,
    // and one more after it: a blank line before the next parameter.
    let file = parse_clean(&printed("jax053_custom_jvp.jaxpr"));
    let e = only(&file, "custom_jvp_call");
    assert_eq!(
        param_names(e),
        [
            "call_jaxpr",
            "jvp_jaxpr_fun",
            "num_consts",
            "symbolic_zeros"
        ]
    );
    assert_eq!(
        text(e, "jvp_jaxpr_fun"),
        "Wrapped function:\n\nCore: memoized"
    );
    assert_eq!(
        e.param("num_consts").and_then(|p| p.value.as_int()),
        Some(0)
    );
    assert_eq!(arg_names(e), ["a"]);
    assert_eq!(eqns(&file, "mul").len(), 3);

    let file = parse_clean(&printed("jax_ctx_mesh.jaxpr"));
    let jit = only(&file, "jit");
    assert_eq!(param_names(jit), ["name", "ctx_mesh", "jaxpr"]);
    assert_eq!(
        text(jit, "ctx_mesh"),
        "Mesh('x': 1, axis_types=(Explicit,))"
    );
    assert!(matches!(
        jit.param("jaxpr").unwrap().value.kind,
        ExprKind::Jaxpr(_)
    ));
    assert_eq!(eqns(&file, "add").len(), 1);

    let file = parse_clean(&printed("jax_composite_array_attribute.jaxpr"));
    let e = only(&file, "composite");
    assert_eq!(
        text(e, "attributes"),
        "(('scale', (HashableArray(array(2., dtype=float32)),), PyTreeDef(*)),)"
    );
    assert!(matches!(
        e.param("jaxpr").unwrap().value.kind,
        ExprKind::Jaxpr(_)
    ));
    assert_eq!(e.param("version").and_then(|p| p.value.as_int()), Some(0));
    assert_eq!(only(&file, "mul").args.len(), 2);
}

#[test]
fn text_values_follow_the_layout_of_the_parameters() {
    // All on the bracket's line (`prim[a=1 b=2]`): a value ends before
    // ` name=` or the `]`, outside its own brackets and quotes.
    let file = parse_clean(
        "{ lambda ; a:f32[3]. let
    b:f32[3] = foo[fmt=x = {} n=1] a
    c:f32[3] = foo[ctx_mesh=Mesh('x': 1, axis_types=(Explicit,)) msg=a [1] in 'quotes]'] b
    d:f32[3] = foo[msg=don't (stop n=2] c
  in (d,) }
",
    );
    let [b, c, d] = &eqns(&file, "foo")[..] else {
        panic!("three equations")
    };
    assert_eq!(text(b, "fmt"), "x = {}");
    assert_eq!(b.param("n").and_then(|p| p.value.as_int()), Some(1));
    assert_eq!(text(c, "ctx_mesh"), "Mesh('x': 1, axis_types=(Explicit,))");
    assert_eq!(text(c, "msg"), "a [1] in 'quotes]'");
    assert_eq!(arg_names(c), ["b"]);
    // Unbalanced: the first end on the line.
    assert_eq!(text(d, "msg"), "don't (stop");
    assert_eq!(d.param("n").and_then(|p| p.value.as_int()), Some(2));
    assert_eq!(arg_names(d), ["c"]);

    // A `#` inside a value is text, and the source-info comment after the
    // operands is still the equation's.
    let file = parse_clean(
        "{ lambda ; a:f32[3]. let
    b:f32[3] = foo[msg=see #12 n=1] a  # f.py:3:4 (g)
  in (b,) }
",
    );
    let b = only(&file, "foo");
    assert_eq!(text(b, "msg"), "see #12");
    assert_eq!(arg_names(b), ["a"]);
    let comments: Vec<&str> = b.comments.iter().map(|c| &*c.text).collect();
    assert_eq!(comments, ["f.py:3:4 (g)"]);

    // `str()` with line breaks (printed as they are, not indented), on one
    // line and one parameter a line.
    let file = parse_clean(
        "{ lambda ; a:f32[]. let
    b:f32[] = foo[fun=Wrapped function:\n\nCore: memoized\n n=0] a
    c:f32[] = foo[
      fun=Wrapped function:
0   : f   ()
Core: memoized

      msg=#1: it's here] [
      n=0
    ] b
  in (c,) }
",
    );
    let [b, c] = &eqns(&file, "foo")[..] else {
        panic!("two equations")
    };
    assert_eq!(text(b, "fun"), "Wrapped function:\n\nCore: memoized");
    assert_eq!(b.param("n").and_then(|p| p.value.as_int()), Some(0));
    assert_eq!(
        text(c, "fun"),
        "Wrapped function:\n0   : f   ()\nCore: memoized"
    );
    assert_eq!(text(c, "msg"), "#1: it's here] [");
    assert_eq!(c.param("n").and_then(|p| p.value.as_int()), Some(0));
    assert_eq!(arg_names(c), ["b"]);
}

#[test]
fn values_of_libraries_primitives() {
    // equinox and lineax on jax 0.4.30, as printed.
    let file = parse_clean(&printed("jax0430_equinox_while.jaxpr"));
    let e = only(&file, "nonbatchable");
    assert!(
        text(e, "msg").starts_with("Nonconstant batch. `equinox.internal.while_loop` has received")
    );
    assert!(text(e, "msg").ends_with("in the library you are using."));
    assert_eq!(arg_names(e), ["ca"]);
    assert_eq!(eqns(&file, "custom_jvp_call").len(), 2);
    let vjp = only(&file, "custom_vjp_call_jaxpr");
    assert_eq!(vjp.args.len(), 5);
    let file = parse_clean(&printed("jax0430_equinox_lineax.jaxpr"));
    let e = only(&file, "linear_solve");
    assert_eq!(param_names(e), ["flatten", "static", "treedef"]);
    assert!(
        text(e, "treedef").starts_with("PyTreeDef((CustomNode(MatrixLinearOperator[('matrix',)")
    );
    assert!(
        text(e, "treedef")
            .ends_with("CustomNode(AutoLinearSolver[('well_posed',), (), ()], [*]), *))")
    );
    assert_eq!(
        e.param("static")
            .and_then(|p| p.value.as_seq())
            .map(<[_]>::len),
        Some(7)
    );
    assert_eq!(arg_names(e), ["i", "s", "t", "k"]);
}

#[test]
fn an_unreadable_value_is_one_error_at_most() {
    // Values of libraries' own primitives (equinox, lineax), as JAX prints
    // them with `str()`: no error, and the equations after them are read.
    let file = parse_clean(
        "{ lambda ; a:f32[6] b:f32[6,6]. let
    c:f32[6] = nonbatchable[
      allow_constant_across_batch=True
      msg=Nonconstant batch. `equinox.internal.while_loop` has received a batch of values that were expected to be non-batched. This usually means that a function was vmap'd, but the batch size of the inputs changed part-way through.
    ] a
    d:f32[6] = linear_solve[
      flatten=<equinox.internal._primitive.Flatten object at 0x7f3a2c1d5e50>
      treedef=PyTreeDef((CustomNode(MatrixLinearOperator[('matrix',), ('input_structure', 'output_structure', 'tags'), (frozenset(), ...)], [*]), *))
    ] b c
    e:f32[6] = sin d
  in (e,) }
",
    );
    let c = only(&file, "nonbatchable");
    assert!(text(c, "msg").starts_with("Nonconstant batch. `equinox"));
    assert!(text(c, "msg").ends_with("changed part-way through."));
    assert_eq!(
        c.param("allow_constant_across_batch")
            .and_then(|p| p.value.as_bool()),
        Some(true)
    );
    let d = only(&file, "linear_solve");
    assert!(text(d, "treedef").starts_with("PyTreeDef((CustomNode(MatrixLinearOperator["));
    assert_eq!(arg_names(d), ["b", "c"]);
    assert_eq!(arg_names(only(&file, "sin")), ["d"]);
    // A jaxpr keeps its structure, and its errors are its own: they are
    // reported inside it, not read as text.
    let text = "{ lambda ; a:f32[]. let
    b:f32[] = jit[
      jaxpr={ lambda ; c:f32[]. let d:f32[] = sin c c: in (d,) }
      name=f
    ] a
  in (b,) }
";
    let p = parse(text);
    let inner =
        text.find("{ lambda ; c").unwrap() as u32..text.find("\n      name").unwrap() as u32;
    assert!(!p.errors.is_empty());
    assert!(
        p.errors.iter().all(|d| inner.contains(&d.range.start)),
        "{:?}",
        p.errors
    );
    let jit = only(&p.file, "jit");
    assert_eq!(param_names(jit), ["jaxpr", "name"]);
    assert!(matches!(
        jit.param("jaxpr").unwrap().value.kind,
        ExprKind::Jaxpr(_)
    ));
}

#[test]
fn literals_as_jax_up_to_0_5_prints_them() {
    // Untyped: `0.0`, `-inf`, and `inf`, `nan`: those two read as names,
    // which name resolution takes for the literals where no binder in
    // scope defines them (JAX's 5752nd variable is called `inf`).
    let file = parse_clean(&printed("jax0430_untyped_literals.jaxpr"));
    assert_eq!(arg_names(only(&file, "pjit")), ["b", "a", "inf"]);
    assert!(only(&file, "pjit").args[2].is_bare_inf_or_nan());
    assert!(only(&file, "add").args[1].is_bare_inf_or_nan());
    assert!(!only(&file, "add").args[0].is_bare_inf_or_nan());
    assert!(
        matches!(&only(&file, "gt").args[1], Atom::Lit(l) if &*l.value == "0.0" && l.ty.is_none())
    );
    let file = parse_clean(&printed("jax053_untyped_literals.jaxpr"));
    assert!(only(&file, "add").args[1].is_bare_inf_or_nan());
    let file = parse_clean(&printed("jax0430_one_line_inf.jaxpr"));
    assert!(matches!(&only(&file, "max").args[1], Atom::Lit(l) if &*l.value == "-inf"));
    // Typed, they are literals.
    let file = parse_clean("{ lambda ; a:f32[]. let b:f32[] = add a nan:f32[] in (b,) }");
    assert!(matches!(&only(&file, "add").args[1], Atom::Lit(l) if &*l.value == "nan"));
    // A `float0` literal, typed (0.10.2) or not (0.4.30).
    for (name, ty) in [
        ("jax_float0_literal.jaxpr", "float0"),
        ("jax0430_float0_literal.jaxpr", ""),
    ] {
        let file = parse_clean(&printed(name));
        let main = file.main.as_ref().unwrap();
        let Atom::Lit(l) = &main.outvars[1] else {
            panic!("{name}: {:?}", main.outvars)
        };
        assert_eq!(&*l.value, "(b'',)");
        assert_eq!(l.ty.as_ref().map_or("", |t| &*t.dtype.text), ty);
    }
}

#[test]
fn dropped_values_are_operands_and_outputs() {
    // jax 0.10.2 names every unused result `_`, and the jitted jaxpr takes
    // its call's names: `_` is bound, used and returned inside it.
    let file = parse_clean(&printed("jax_dropped_operands.jaxpr"));
    let mul = only(&file, "mul");
    assert_eq!(arg_names(mul), ["_", "_"]);
    assert!(mul.args.iter().all(Atom::is_dropped));
    let ExprKind::Jaxpr(inner) = &only(&file, "jit").param("jaxpr").unwrap().value.kind else {
        panic!("jaxpr parameter")
    };
    let dropped: Vec<bool> = inner.outvars.iter().map(Atom::is_dropped).collect();
    assert_eq!(dropped, [true, true, false]);
    let file = parse_clean(&printed("jax_dropped_outputs.jaxpr"));
    assert!(only(&file, "cos").args[0].is_dropped());
    assert!(!only(&file, "cos").outs[0].is_dropped());
}

#[test]
fn identifiers_include_the_names_a_text_value_uncovers() {
    // The lexer reads `#12 n=1] a` as a comment and `'s n=1] a` as an
    // unclosed quote; the parser reads `see #12` and `it's` as text and
    // `a` as an operand. The names of the text are the names any parse
    // reads.
    for line in [
        "    b:f32[] = foo[msg=see #12 n=1] a\n",
        "    b:f32[] = foo[msg=it's n=1] a\n",
    ] {
        let words = jaxpr_syntax::identifiers(line);
        assert!(
            words.contains(&"a") && words.contains(&"b"),
            "{line}: {words:?}"
        );
        let text = format!("{{ lambda ; a:f32[]. let\n{line}  in (b,) }}\n");
        assert_eq!(arg_names(only(&parse_clean(&text), "foo")), ["a"]);
    }
}
