//! Completion: primitive names after `binders =`, parameter names inside a
//! primitive's `[...]`, dimension names inside a type's `[...]`, and
//! operand variables in scope after the primitive.
//!
//! The context is read from the text before the cursor, not from the tree,
//! because the line being typed rarely parses.

use super::FileView;
use jaxpr_check::{JaxprId, VarRole};
use jaxpr_types::DimNames;
use std::collections::BTreeSet;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompletionKind {
    Primitive,
    Parameter,
    Variable,
    Dimension,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completion {
    pub label: String,
    pub kind: CompletionKind,
    pub detail: String,
    /// Text to insert (for parameters: `name=`).
    pub insert: String,
}

fn known_params(primitive: &str) -> Vec<&'static str> {
    jaxpr_check::registry::lookup(primitive).map_or_else(Vec::new, |p| p.params.to_vec())
}

enum Context<'t> {
    Primitive,
    Param(&'t str),
    Dims,
    Operand,
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// What is being typed at `offset`, and the partial word before it.
fn context(text: &str, offset: usize) -> (Option<Context<'_>>, &str) {
    let bytes = text.as_bytes();
    let mut w = offset;
    while w > 0 && is_word(bytes[w - 1]) {
        w -= 1;
    }
    let word = &text[w..offset];
    // The innermost unclosed bracket before the word, within this equation.
    let mut depth = 0i32;
    let mut i = w;
    while i > 0 {
        i -= 1;
        match bytes[i] {
            b']' | b')' | b'}' => depth += 1,
            b'(' | b'{' if depth == 0 => break,
            b'(' | b'{' => depth -= 1,
            b'[' if depth == 0 => {
                // `name[`: a primitive's parameters if `name` follows `=`, a type's dims if it follows `:`.
                let mut s = i;
                while s > 0 && is_word(bytes[s - 1]) {
                    s -= 1;
                }
                let name = &text[s..i];
                let before = text[..s].trim_end();
                return match before.as_bytes().last() {
                    Some(b':') => (Some(Context::Dims), word),
                    Some(b'=') => {
                        // Inside a parameter's value (after `name=`), nothing to offer.
                        let seg = text[i + 1..w].trim_end();
                        if seg.ends_with('=') {
                            (None, word)
                        } else {
                            (Some(Context::Param(name)), word)
                        }
                    }
                    _ => (None, word),
                };
            }
            b'[' => depth -= 1,
            b'\n' if depth == 0 => {
                // The equation's own line: `binders = ` or `binders = prim[...] args`.
                let line = &text[i + 1..w];
                return (line_context(line), word);
            }
            _ => {}
        }
    }
    (line_context(&text[i..w]), word)
}

fn line_context(line: &str) -> Option<Context<'static>> {
    let (lhs, rhs) = line.split_once('=')?;
    if lhs.contains('[') && !lhs.contains(':') {
        return None;
    }
    if rhs.trim().is_empty() {
        Some(Context::Primitive)
    } else {
        Some(Context::Operand)
    }
}

/// The innermost jaxpr whose range contains `offset`.
fn enclosing_jaxpr(f: &FileView, offset: u32) -> Option<JaxprId> {
    f.analysis
        .jaxprs
        .iter()
        .enumerate()
        .filter(|(_, j)| j.range.start <= offset && offset <= j.range.end)
        .min_by_key(|(_, j)| j.range.len())
        .map(|(i, _)| JaxprId(i as u32))
}

pub fn completions(f: &FileView, offset: u32) -> Vec<Completion> {
    let a = f.analysis;
    let off = (offset as usize).min(f.text.len());
    if !f.text.is_char_boundary(off) {
        return Vec::new();
    }
    let (Some(cx), word) = context(f.text, off) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    match cx {
        Context::Primitive => {
            for p in jaxpr_check::rules::known_primitives() {
                if p.starts_with(word) {
                    let detail = jaxpr_check::rules::describe(p).unwrap_or("").to_string();
                    out.push(Completion {
                        label: p.into(),
                        kind: CompletionKind::Primitive,
                        detail,
                        insert: p.into(),
                    });
                }
            }
        }
        Context::Param(prim) => {
            // Known parameters, and any others this file passes to the same primitive.
            let mut names: BTreeSet<String> =
                known_params(prim).into_iter().map(String::from).collect();
            names.extend(
                jaxpr_syntax::ast::each_eqn(&f.parse.file)
                    .filter(|e| e.primitive.text == prim)
                    .flat_map(|e| e.params.iter().map(|p| p.name.text.to_string())),
            );
            for n in names
                .into_iter()
                .filter(|n| n.starts_with(word) && n != word)
            {
                out.push(Completion {
                    detail: format!("parameter of `{prim}`"),
                    insert: format!("{n}="),
                    label: n,
                    kind: CompletionKind::Parameter,
                });
            }
        }
        Context::Dims | Context::Operand => {
            let Some(j) = enclosing_jaxpr(f, offset) else {
                return out;
            };
            let dims_only = matches!(cx, Context::Dims);
            for v in a
                .vars
                .iter()
                .filter(|v| v.jaxpr == j && v.range.end <= offset && v.name.starts_with(word))
            {
                if dims_only && !v.ty.is_int_scalar() {
                    continue;
                }
                let role = match v.role {
                    VarRole::Const(_) => "constant",
                    VarRole::Arg(_) => "argument",
                    VarRole::Result { .. } => "result",
                };
                out.push(Completion {
                    label: v.name.to_string(),
                    kind: if dims_only {
                        CompletionKind::Dimension
                    } else {
                        CompletionKind::Variable
                    },
                    detail: format!("{}:{} ({role})", v.name, a.ty(&v.ty)),
                    insert: v.name.to_string(),
                });
            }
            if dims_only {
                for s in a.symbols.keys().filter(|s| s.starts_with(word)) {
                    out.push(Completion {
                        label: s.to_string(),
                        kind: CompletionKind::Dimension,
                        detail: "symbolic dimension".into(),
                        insert: s.to_string(),
                    });
                }
            }
        }
    }
    out
}
