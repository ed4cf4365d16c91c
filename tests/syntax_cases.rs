//! Printed jaxprs that once failed to parse or check (issues 17, 18, 22),
//! as fixtures: the text exactly as JAX 0.10.2 printed it, with every
//! diagnostic the check must report annotated under its line (none for
//! valid programs).

use jaxpr_test_support::fixture::Fixture;

fn check(fixture: &str) {
    Fixture::assert_check(fixture);
}

#[test]
fn one_line_jaxpr() {
    check("{ lambda ; a:f32[3]. let b:f32[3] = neg a; c:f32[3] = neg b in (c,) }\n");
}

#[test]
fn nested_jaxpr_with_its_own_constants() {
    // The operand binds the invar `a`; `c` is the closed jaxpr's constant.
    check(
        r#"{ lambda ; a:i32[2]. let
    b:i32[2] = jit[
      name=inner
      jaxpr={ lambda c:i32[2]; a:i32[2]. let b:i32[2] = add a c in (b,) }
    ] a
    d:i32[2] = mul b 2:i32[]
  in (d,) }
"#,
    );
}

#[test]
fn let_group_in_any_order() {
    // `floor_divide` names `_where`, printed after it.
    check(
        r#"let floor_divide = { lambda ; a:i32[3] b:i32[3]. let
    c:i32[3] = div a b
    d:i32[3] = sign a
    e:i32[3] = sign b
    f:bool[3] = ne d e
    g:i32[3] = rem a b
    h:bool[3] = ne g 0:i32[]
    i:bool[3] = and f h
    j:i32[3] = sub c 1:i32[]
    k:i32[3] = jit[name=_where jaxpr=_where] i j c
  in (k,) } in
let _where = { lambda ; l:bool[3] m:i32[3] n:i32[3]. let
    o:i32[3] = select_n l n m
  in (o,) } in
{ lambda ; p:i32[3] q:i32[3]. let
    r:i32[3] = jit[name=floor_divide jaxpr=floor_divide] p q
    s:i32[3] = jit[name=floor_divide jaxpr=floor_divide] q p
  in (r, s) }
"#,
    );
}

#[test]
fn let_group_cycle_is_an_error() {
    check(
        r#"let f = { lambda ; a:i32[3]. let
    b:i32[3] = jit[name=g jaxpr=g] a
  in (b,) } in
let g = { lambda ; c:i32[3]. let
    d:i32[3] = jit[name=f jaxpr=f] c
#                               ^ error[J0007]: the jaxpr `f` calls itself (through the `let` jaxprs it calls)
  in (d,) } in
{ lambda ; p:i32[3]. let
    r:i32[3] = jit[name=f jaxpr=f] p
  in (r,) }
"#,
    );
}

#[test]
fn symbolic_power_and_sharding() {
    check(
        r#"{ lambda ; a:f32[b,b]. let
    b:f32[b^2] = reshape[dimensions=None new_sizes=(b^2,) sharding=None] a
  in (b,) }
"#,
    );
    check("{ lambda ; a:f32[16@x,3]. let b:f32[16@x,3] = mul a 2.0:f32[] in (b,) }\n");
    // The power is a polynomial: `b*b` is the same dimension.
    check(
        r#"{ lambda ; a:f32[b,b] c:f32[b^2]. let
    d:f32[b*b] = reshape[dimensions=None new_sizes=(b^2,) sharding=None] a
    e:f32[b^2] = add d c
  in (e,) }
"#,
    );
}

#[test]
fn out_of_range_integer_literals_are_errors() {
    check(
        r#"{ lambda ; a:i8[] b:u8[] c:i64[] d:i32[]. let
    e:i8[] = add a 128:i8[]
#                  ^^^^^^^^ error[J0005]: the literal `128` does not fit in i8: its range is -128 to 127
    f:i8[] = add a -128:i8[]
    g:u8[] = add b 256:u8[]
#                  ^^^^^^^^ error[J0005]: the literal `256` does not fit in u8: its range is 0 to 255
    h:i64[] = add c 9223372036854775808:i64[]
#                   ^^^^^^^^^^^^^^^^^^^^^^^^^ error[J0005]: the literal `9223372036854775808` does not fit in i64: its range is -9223372036854775808 to 9223372036854775807
    i:i64[] = add c -9223372036854775808:i64[]
    j:i32[] = add d 12345678901234567890123456789012345678:i32[]
#                   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ error[J0005]: the literal `12345678901234567890123456789012345678` does not fit in i32: its range is -2147483648 to 2147483647
  in (e, f, g, h, i, j) }
"#,
    );
}

#[test]
fn negative_extents_are_errors() {
    check(
        r#"{ lambda ; a:f32[-1]. let
#                ^^ error[J0004]: a dimension cannot be negative: -1
    b:f32[-1] = neg a
#         ^^ error[J0004]: a dimension cannot be negative: -1
  in (b,) }
"#,
    );
}

#[test]
fn byte_order_mark_and_lone_carriage_returns() {
    let text = "\u{FEFF}{ lambda ; a:f32[3]. let\r    b:f32[3] = neg a\r    c:f32[3] = neg b\r  in (c,) }\r";
    let parse = jaxpr_syntax::parse(text);
    assert!(parse.errors.is_empty(), "{:?}", parse.errors);
    let main = parse.file.main.as_ref().expect("main");
    assert_eq!(main.eqns.len(), 2);
    assert!(jaxpr_check::check(&parse.file).diagnostics.is_empty());
    // Line numbers from the line index are the lexer's lines.
    let index = jaxpr_syntax::LineIndex::new(text);
    let lines: Vec<u32> = main
        .eqns
        .iter()
        .map(|e| index.line_col(e.range.start).line)
        .collect();
    assert_eq!(lines, [1, 2]);
    // An undefined name on the third line is reported there.
    let text = text.replace("neg b", "neg x");
    let parse = jaxpr_syntax::parse(&text);
    let d = jaxpr_check::check(&parse.file).diagnostics;
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(
        jaxpr_syntax::LineIndex::new(&text)
            .line_col(d[0].range.start)
            .line,
        2
    );
}

mod common;

/// The byte ranges of the tokens of `line`: words (`[A-Za-z0-9_.]` runs)
/// and single other characters.
fn tokens(line: &str) -> Vec<(usize, usize)> {
    let bytes = line.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'.';
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b' ' {
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        if word(bytes[start]) {
            while i < bytes.len() && word(bytes[i]) {
                i += 1;
            }
        }
        out.push((start, i));
    }
    out
}

/// One syntax error gives one root cause: after deleting a punctuation
/// token of an equation's line, inserting a stray token into it, or
/// cutting it short after its `=`, in every valid corpus file, the check
/// reports the syntax error and no variable of the file as undefined (the
/// names are all still bound in the text).
#[test]
fn a_syntax_error_causes_no_undefined_variables() {
    let mut files = Vec::new();
    for dir in ["jax", "catalyst"] {
        for e in std::fs::read_dir(common::corpus().join(dir))
            .expect("corpus")
            .flatten()
        {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "jaxpr") {
                files.push(std::fs::read_to_string(&p).expect("case"));
            }
        }
    }
    assert!(files.len() > 20);
    let (mut mutants, mut failures) = (0usize, Vec::new());
    for text in &files {
        let mut line_start = 0;
        for line in text.split_inclusive('\n') {
            let at = line_start;
            line_start += line.len();
            // Equation lines (a `let NAME = {` line that breaks loses the
            // whole `let`).
            let Some(eq) = line.find(" = ") else { continue };
            if line.trim_start().starts_with("let ") {
                continue;
            }
            let body = line.trim_end_matches('\n');
            for (k, &(s, e)) in tokens(body).iter().enumerate() {
                let piece = &body[s..e];
                let mut edits: Vec<(usize, usize, String)> = Vec::new();
                // Delete a punctuation token (replaced by a blank, so that
                // its neighbours do not merge).
                if !piece.as_bytes()[0].is_ascii_alphanumeric() && piece != "_" {
                    edits.push((at + s, at + e, " ".into()));
                }
                // A stray token after it.
                edits.push((at + e, at + e, " )".into()));
                // The line cut short after it, past the `=`.
                if s > eq && k + 1 < tokens(body).len() {
                    edits.push((at + e, at + body.len(), String::new()));
                }
                for (from, to, with) in edits {
                    let mut mutant = text.clone();
                    mutant.replace_range(from..to, &with);
                    mutants += 1;
                    let parse = jaxpr_syntax::parse(&mutant);
                    if parse.errors.is_empty() {
                        continue;
                    }
                    let analysis = jaxpr_check::check(&parse.file);
                    let undefined: Vec<&str> = analysis
                        .diagnostics
                        .iter()
                        .filter(|d| {
                            d.kind == jaxpr_syntax::diagnostics::DiagKind::UndefinedVariable
                        })
                        .map(|d| &mutant[d.range.as_usize()])
                        .collect();
                    if !undefined.is_empty() && failures.len() < 10 {
                        failures.push(format!(
                            "line {body:?} edited at {}..{} to {with:?}: syntax error {:?}, then undefined {undefined:?}",
                            from - at,
                            to - at,
                            parse.errors[0].message
                        ));
                    }
                }
            }
        }
    }
    assert!(mutants > 1000, "only {mutants} mutants");
    assert!(
        failures.is_empty(),
        "{} cascades, e.g.:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
