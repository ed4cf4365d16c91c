//! Inputs of the scale measurements (`benches/scale.rs`,
//! `examples/scale.rs`): reading the compressed corpus files and choosing
//! where the measured edits go.

/// A `.gz` file's text (through `gzip -dc`), or a plain file's.
pub fn read_gz(path: &str) -> String {
    if !path.ends_with(".gz") {
        return std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    }
    let out = std::process::Command::new("gzip")
        .arg("-dc")
        .arg(path)
        .output()
        .unwrap_or_else(|e| panic!("gzip: {e}"));
    assert!(out.status.success(), "gzip -dc {path} failed");
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// The end of the last operand of the first equation after the middle of
/// the file: an edit there changes one top-level equation.
pub fn operand_edit(text: &str) -> usize {
    let mid = text.len() / 2;
    let eq = text[mid..].find(" = ").map_or(mid, |i| mid + i);
    text[eq..].find('\n').map_or(text.len(), |i| eq + i)
}

/// The end of the first result's name of the equation `operand_edit`
/// edits: a character there renames a variable, so that the equations
/// using it are checked again.
pub fn binder_edit(text: &str) -> usize {
    let at = operand_edit(text);
    let line = text[..at].rfind('\n').map_or(0, |i| i + 1);
    text[line..].find(':').map_or(text.len(), |i| line + i)
}

/// The start of the first `let` jaxpr's first equation.
fn let_body(text: &str) -> usize {
    text.find(". let\n").map_or(0, |i| i + ". let\n".len())
}

/// The end of the first equation's line inside the first `let` jaxpr.
pub fn let_edit(text: &str) -> usize {
    let body = let_body(text);
    text[body..].find('\n').map_or(text.len(), |i| body + i)
}

/// The end of the first result's name of the first equation inside the
/// first `let` jaxpr: a character there renames a variable, so that the
/// `let` is checked again as a whole (its signature stays).
pub fn let_binder_edit(text: &str) -> usize {
    let body = let_body(text);
    text[body..].find(':').map_or(text.len(), |i| body + i)
}

/// Just inside the `[` of the first `let` jaxpr's first input type: `1,`
/// there adds a dimension, which changes the `let`'s signature and
/// every call site's result.
pub fn let_signature_edit(text: &str) -> usize {
    let head = text.find("{ lambda ").unwrap_or(0);
    text[head..].find('[').map_or(text.len(), |i| head + i + 1)
}

/// The file with the middle call site of the `let` jaxpr `name`
/// (`jaxpr=NAME`) holding that jaxpr inline instead, as JAX prints a jaxpr
/// used once; and the end of the first equation's line inside it. The
/// large corpus files hold nested jaxprs only as `let`s, used many times.
pub fn inline_nested(text: &str, name: &str) -> Option<(String, usize)> {
    let def = format!("let {name} = ");
    let start = text.find(&def)? + def.len();
    let end = start + text[start..].find(" } in\n")? + " }".len();
    let body = &text[start..end];
    let call = format!("jaxpr={name}\n");
    let sites: Vec<usize> = text.match_indices(&call).map(|(i, _)| i).collect();
    let at = *sites.get(sites.len() / 2)?;
    let mut out = String::with_capacity(text.len() + body.len());
    out.push_str(&text[..at]);
    out.push_str("jaxpr=");
    out.push_str(body);
    out.push('\n');
    out.push_str(&text[at + call.len()..]);
    let inner = at + "jaxpr=".len() + body.find(". let\n")? + ". let\n".len();
    let edit = inner + out[inner..].find('\n')?;
    Some((out, edit))
}
