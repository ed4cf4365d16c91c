//! Editor questions answered in editor-neutral terms (byte ranges and
//! markdown): what is at an offset, where it is defined, where it is used,
//! and what to show on hover. The language server only converts these.

use crate::check::{Analysis, JaxprId, JaxprOrigin, RefKind, VarRole};
use crate::syntax::{LineIndex, TextRange};
use crate::types::{DimNames, VarId};
use std::fmt::Write;

/// What a position in the text designates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Var(VarId),
    Symbol(String),
    /// A `jaxpr=NAME` reference or the `lambda` of a jaxpr.
    Jaxpr(JaxprId),
    Primitive(crate::check::EqnId),
}

/// The innermost thing at `offset` and its range.
pub fn target_at(a: &Analysis, offset: u32) -> Option<(TextRange, Target)> {
    if let Some(r) = a.refs.iter().find(|r| r.range.touches(offset)) {
        return Some((r.range, Target::Var(r.var)));
    }
    for (name, info) in &a.symbols {
        if let Some(r) = info.uses.iter().find(|r| r.touches(offset)) {
            return Some((*r, Target::Symbol(name.to_string())));
        }
    }
    if let Some((r, j)) = a.let_refs.iter().find(|(r, _)| r.touches(offset)) {
        return Some((*r, Target::Jaxpr(*j)));
    }
    if let Some((i, j)) = a.jaxprs.iter().enumerate().find(|(_, j)| j.lambda_range.touches(offset)) {
        return Some((j.lambda_range, Target::Jaxpr(JaxprId(i as u32))));
    }
    if let Some(name_range) = a.jaxprs.iter().enumerate().find_map(|(i, j)| match &j.origin {
        JaxprOrigin::Let { name_range, .. } if name_range.touches(offset) => Some((*name_range, i)),
        _ => None,
    }) {
        return Some((name_range.0, Target::Jaxpr(JaxprId(name_range.1 as u32))));
    }
    a.eqns
        .iter()
        .enumerate()
        .find(|(_, e)| e.primitive_range.touches(offset))
        .map(|(i, e)| (e.primitive_range, Target::Primitive(crate::check::EqnId(i as u32))))
}

/// Where the thing at `offset` is defined.
pub fn definition(a: &Analysis, offset: u32) -> Option<TextRange> {
    match target_at(a, offset)?.1 {
        Target::Var(v) => Some(a.var(v).range),
        Target::Symbol(s) => a.symbols.get(s.as_str()).and_then(|i| i.first),
        Target::Jaxpr(j) => match &a.jaxpr(j).origin {
            JaxprOrigin::Let { name_range, .. } => Some(*name_range),
            _ => Some(a.jaxpr(j).lambda_range),
        },
        Target::Primitive(_) => None,
    }
}

/// Every occurrence of the thing at `offset` (the definition first when asked).
pub fn references(a: &Analysis, offset: u32, include_declaration: bool) -> Vec<TextRange> {
    let Some((_, t)) = target_at(a, offset) else { return Vec::new() };
    let mut out: Vec<TextRange> = match t {
        Target::Var(v) => a
            .refs
            .iter()
            .filter(|r| r.var == v && (include_declaration || r.kind != RefKind::Def))
            .map(|r| r.range)
            .collect(),
        Target::Symbol(s) => a.symbols.get(s.as_str()).map(|i| i.uses.clone()).unwrap_or_default(),
        Target::Jaxpr(j) => {
            let mut v: Vec<TextRange> = a.let_refs.iter().filter(|(_, x)| *x == j).map(|(r, _)| *r).collect();
            if include_declaration && let JaxprOrigin::Let { name_range, .. } = &a.jaxpr(j).origin {
                v.push(*name_range);
            }
            v
        }
        Target::Primitive(_) => Vec::new(),
    };
    out.sort();
    out.dedup();
    out
}

fn describe_jaxpr(a: &Analysis, j: JaxprId, idx: &LineIndex) -> String {
    match &a.jaxpr(j).origin {
        JaxprOrigin::Main => "the main jaxpr".to_string(),
        JaxprOrigin::Let { name, .. } => format!("the jaxpr `{name}`"),
        JaxprOrigin::Param { eqn, param, index } => {
            let e = a.eqn(*eqn);
            let line = idx.line_col(e.primitive_range.start).line + 1;
            let which = if param == "branches" || param == "branch_jaxprs" { format!("{param}[{index}]") } else { param.to_string() };
            format!("`{which}` of `{}` (line {line})", e.primitive)
        }
    }
}

/// Markdown for the hover at `offset`.
pub fn hover(a: &Analysis, idx: &LineIndex, offset: u32) -> Option<(TextRange, String)> {
    let (range, t) = target_at(a, offset)?;
    let mut s = String::new();
    match t {
        Target::Var(v) => {
            let info = a.var(v);
            let _ = writeln!(s, "```jaxpr\n{}:{}\n```", info.name, a.ty(&info.ty));
            let role = match &info.role {
                VarRole::Const(i) => format!("constant {i}"),
                VarRole::Arg(i) => format!("argument {i}"),
                VarRole::Result { eqn, index } => {
                    let e = a.eqn(*eqn);
                    format!("result {index} of `{}` (line {})", e.primitive, idx.line_col(e.primitive_range.start).line + 1)
                }
            };
            let _ = writeln!(s, "{role} of {}", describe_jaxpr(a, info.jaxpr, idx));
            // Dimension variables: what they size, and where their value comes from.
            let sized: Vec<&str> = a
                .vars
                .iter()
                .filter(|w| w.jaxpr == info.jaxpr && w.ty.shape.contains(&crate::types::Dim::Var(v)))
                .map(|w| w.name.as_str())
                .collect();
            if !sized.is_empty() {
                let _ = writeln!(s, "\ndimension variable: sizes {}", sized.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "));
            }
            if let Some(o) = a.origins.get(&v) {
                let lc = idx.line_col(o.operand.start);
                let _ = writeln!(
                    s,
                    "\nreceives the call-site operand at line {}:{}{}",
                    lc.line + 1,
                    lc.col + 1,
                    if o.carried { " (loop-carried: may change between iterations)" } else { "" }
                );
            }
        }
        Target::Symbol(name) => {
            let _ = writeln!(s, "symbolic dimension `{name}` (jax.export): an unknown size >= 1, fixed per call");
        }
        Target::Jaxpr(j) => {
            let info = a.jaxpr(j);
            let _ = writeln!(s, "{}\n", describe_jaxpr(a, j, idx));
            let _ = writeln!(s, "```\nin_type:  {}\nout_type: {}\n```", info.signature.render_in(), info.signature.render_out());
            if !info.constvars.is_empty() {
                let _ = writeln!(s, "{} constvar(s)", info.constvars.len());
            }
        }
        Target::Primitive(e) => {
            let eqn = a.eqn(e);
            let doc = crate::check::rules::describe(&eqn.primitive).unwrap_or("(no type rule: results are taken as printed)");
            let _ = writeln!(s, "**{}**: {doc}", eqn.primitive);
            if let Some(tys) = &eqn.inferred {
                let outs: Vec<String> = tys.iter().map(|t| a.ty(t)).collect();
                let _ = writeln!(s, "\ninferred results: ({})", outs.join(", "));
            }
            if let Some(src) = &eqn.source_info {
                let _ = writeln!(s, "\nsource: `{src}`");
            }
        }
    }
    Some((range, s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn analyse(text: &str) -> (Analysis, LineIndex) {
        let p = crate::syntax::parse(text);
        (crate::check::check(&p.file), LineIndex::new(text))
    }

    fn offset_of(text: &str, needle: &str, nth: usize) -> u32 {
        text.match_indices(needle).nth(nth).map(|(i, _)| i as u32).expect("needle")
    }

    const CAPTURE: &str = "{ lambda ; a:i64[]. let
    b:f64[a] = broadcast_in_dim[broadcast_dimensions=() shape=(None,) sharding=None] 1.0:f64[] a
    c:f64[a] = for_loop[
      apply_reverse_transform=False
      body_jaxpr={ lambda ; d:i64[] e:f64[d] f:i64[] g:f64[d]. let
          h:f64[d] = add g e
        in (h,) }
      body_nconsts=2
      num_implicit_inputs=0
      preserve_dimensions=True
    ] a b 0:i64[] 10:i64[] 1:i64[] 0:i64[] b
    i:f64[a] = add b c
  in (i,) }";

    #[test]
    fn definition_of_a_dimension_variable_is_its_binder_in_the_same_jaxpr() {
        let (a, _) = analyse(CAPTURE);
        // `d` in `h:f64[d]` -> the binder `d:i64[]` of the body lambda.
        let use_at = offset_of(CAPTURE, "h:f64[d]", 0) + 6;
        let def = definition(&a, use_at).unwrap();
        assert_eq!(def.start, offset_of(CAPTURE, "d:i64[]", 0));
        // The outer `a` in `b:f64[a]` -> the main binder, not anything inner.
        let def = definition(&a, offset_of(CAPTURE, "b:f64[a]", 0) + 6).unwrap();
        assert_eq!(def.start, offset_of(CAPTURE, "a:i64[]", 0));
    }

    #[test]
    fn references_stay_in_their_jaxpr() {
        let text = "{ lambda ; p:f32[2,3]. let
    q:f32[2,3] = jit[name=f jaxpr={ lambda ; p:f32[2,3]. let r:f32[2,3] = sin p in (r,) }] p
    s:f32[2,3] = add p q
  in (s,) }";
        let (a, _) = analyse(text);
        let outer = references(&a, offset_of(text, "p:f32", 0), true);
        let inner = references(&a, offset_of(text, "p:f32", 1), true);
        assert_eq!(outer.len(), 3, "{outer:?}"); // binder, jit operand, add operand
        assert_eq!(inner.len(), 2, "{inner:?}"); // inner binder, sin operand
        assert!(outer.iter().all(|r| !inner.contains(r)));
    }

    #[test]
    fn hover_on_a_loop_body_lambda_shows_its_dbidx_signature() {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus/catalyst/resize_loop.jaxpr"))
            .expect("the shared corpus beside the checkout");
        let (a, idx) = analyse(&text);
        let (_, md) = hover(&a, &idx, offset_of(&text, "lambda", 1) + 1).unwrap();
        assert!(md.contains("((i64[], False), (i64[], True), (f64[DBIdx(0)], True))"), "{md}");
        assert!(md.contains("body_jaxpr"), "{md}");
        // A dimension variable: its type and what it sizes.
        let (_, md) = hover(&a, &idx, offset_of(&text, "f:i64[]", 0)).unwrap();
        assert!(md.contains("f:i64[]") && md.contains("sizes `h`"), "{md}");
        assert!(md.contains("loop-carried"), "{md}");
    }
}
