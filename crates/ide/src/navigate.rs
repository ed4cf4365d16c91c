//! Navigating large programs: the call hierarchy over a file's jaxprs
//! (`let`s and nested ones), the named jaxprs of a file for workspace
//! symbols, and selection ranges. All read the ranges the parser and the
//! checker recorded (`Analysis::jaxprs`, `EqnInfo::callees`,
//! `Analysis::let_refs`, the syntax tree); nothing is parsed again.

use super::describe_jaxpr;
use jaxpr_check::{Analysis, JaxprId, JaxprOrigin};
use jaxpr_syntax::{LineIndex, TextRange, ast};

/// A jaxpr as a node of the call hierarchy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallItem {
    pub jaxpr: JaxprId,
    /// `main`, the `let`'s name, or `jaxpr of scan (line 4)`.
    pub name: String,
    /// Its signature, `(f32[3]) -> (f32[3])`.
    pub detail: String,
    /// The whole `let` (or the `{ ... }` of a nested or main jaxpr).
    pub range: TextRange,
    /// The `let`'s name, or the `lambda` keyword.
    pub selection: TextRange,
}

/// A call: the other end and where it happens (the `jaxpr=NAME` of a call
/// of a `let`, or the primitive of an equation holding an inline jaxpr).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    pub item: CallItem,
    pub sites: Vec<TextRange>,
}

pub fn call_item(a: &Analysis, lines: &LineIndex, j: JaxprId) -> CallItem {
    let info = a.jaxpr(j);
    let (name, range, selection) = match &info.origin {
        JaxprOrigin::Main => ("main".to_string(), info.range, info.lambda_range),
        JaxprOrigin::Let { name, name_range } => {
            (name.to_string(), name_range.cover(info.range), *name_range)
        }
        JaxprOrigin::Param { .. } => (
            describe_jaxpr(a, j, lines).replace('`', ""),
            info.range,
            info.lambda_range,
        ),
    };
    CallItem {
        jaxpr: j,
        name,
        detail: format!(
            "{} -> {}",
            info.signature.render_in(),
            info.signature.render_out()
        ),
        range,
        selection,
    }
}

/// The jaxpr the call hierarchy starts from at `offset`: a `jaxpr=NAME`
/// reference, a `let`'s name or a `lambda`, else the innermost jaxpr
/// around the cursor.
pub fn prepare_call_hierarchy(a: &Analysis, lines: &LineIndex, offset: u32) -> Option<CallItem> {
    if let Some((_, super::Target::Jaxpr(j))) = super::target_at(a, offset) {
        return Some(call_item(a, lines, j));
    }
    let innermost = a
        .jaxprs
        .iter()
        .enumerate()
        .filter(|(_, j)| j.range.touches(offset))
        .min_by_key(|(_, j)| j.range.len())
        .map(|(i, _)| JaxprId(i as u32))?;
    Some(call_item(a, lines, innermost))
}

/// Where `eqn` calls `callee`: the `jaxpr=NAME` naming a `let` inside the
/// equation, or its primitive for an inline jaxpr.
fn call_sites(a: &Analysis, eqn: jaxpr_check::EqnId, callee: JaxprId) -> Vec<TextRange> {
    let e = a.eqn(eqn);
    let named: Vec<TextRange> = a
        .let_refs
        .iter()
        .filter(|(r, j)| *j == callee && e.range.start <= r.start && r.end <= e.range.end)
        .map(|(r, _)| *r)
        .collect();
    if named.is_empty() {
        vec![e.primitive_range]
    } else {
        named
    }
}

/// Who calls `j`: the jaxprs holding an equation that calls it, each with its call sites.
pub fn incoming_calls(a: &Analysis, lines: &LineIndex, j: JaxprId) -> Vec<Call> {
    let mut out: Vec<Call> = Vec::new();
    for (i, e) in a.eqns.iter().enumerate() {
        if !e.callees.iter().any(|(_, c)| *c == j) {
            continue;
        }
        let sites = call_sites(a, jaxpr_check::EqnId(i as u32), j);
        match out.iter_mut().find(|c| c.item.jaxpr == e.jaxpr) {
            Some(c) => c.sites.extend(sites),
            None => out.push(Call {
                item: call_item(a, lines, e.jaxpr),
                sites,
            }),
        }
    }
    finish(out)
}

/// What `j` calls: the jaxprs its equations hold or name, each with its call sites.
pub fn outgoing_calls(a: &Analysis, lines: &LineIndex, j: JaxprId) -> Vec<Call> {
    let mut out: Vec<Call> = Vec::new();
    for &eqn in &a.jaxpr(j).eqns {
        let mut callees: Vec<JaxprId> = a.eqn(eqn).callees.iter().map(|(_, c)| *c).collect();
        callees.dedup();
        for callee in callees {
            let sites = call_sites(a, eqn, callee);
            match out.iter_mut().find(|c| c.item.jaxpr == callee) {
                Some(c) => c.sites.extend(sites),
                None => out.push(Call {
                    item: call_item(a, lines, callee),
                    sites,
                }),
            }
        }
    }
    finish(out)
}

fn finish(mut calls: Vec<Call>) -> Vec<Call> {
    for c in &mut calls {
        c.sites.sort();
        c.sites.dedup();
    }
    calls.sort_by_key(|c| c.item.selection.start);
    calls
}

/// The jaxprs of a file that have a name to search by: the main jaxpr,
/// the `let`s and the nested ones (named after their parameter and
/// primitive), in text order.
pub fn named_jaxprs(a: &Analysis, lines: &LineIndex) -> Vec<CallItem> {
    let mut out: Vec<CallItem> = (0..a.jaxprs.len())
        .map(|i| call_item(a, lines, JaxprId(i as u32)))
        .collect();
    out.sort_by_key(|c| c.selection.start);
    out
}

/// Whether `name` matches a workspace-symbol query: its characters in
/// order, ignoring case (as editors filter symbol lists).
pub fn matches_query(name: &str, query: &str) -> bool {
    let mut chars = name.chars().flat_map(char::to_lowercase);
    query
        .chars()
        .flat_map(char::to_lowercase)
        .all(|q| chars.any(|c| c == q))
}

/// The ranges around `offset`, innermost first: the token, the operand or
/// binder list (or the parameter), the equation, the equations of the
/// body, the jaxpr, and so outwards through the parameter and equation
/// holding a nested jaxpr, up to the `let` and the whole file.
pub fn selection_ranges(file: &ast::SourceFile, text_len: u32, offset: u32) -> Vec<TextRange> {
    let mut outer_first = vec![TextRange::new(0, text_len)];
    for l in &file.lets {
        if l.range.touches(offset) {
            outer_first.push(l.range);
            if l.name.range.touches(offset) {
                outer_first.push(l.name.range);
            }
            in_jaxpr(&l.jaxpr, offset, &mut outer_first);
        }
    }
    if let Some(m) = &file.main {
        in_jaxpr(m, offset, &mut outer_first);
    }
    let mut out: Vec<TextRange> = Vec::with_capacity(outer_first.len());
    for r in outer_first.into_iter().rev() {
        // Each range inside the next, none repeated.
        if out
            .last()
            .is_none_or(|last: &TextRange| r != *last && r.start <= last.start && last.end <= r.end)
        {
            out.push(r);
        }
    }
    out
}

fn cover<T>(items: &[T], range: impl Fn(&T) -> TextRange) -> Option<TextRange> {
    Some(range(items.first()?).cover(range(items.last()?)))
}

fn in_jaxpr(j: &ast::Jaxpr, offset: u32, out: &mut Vec<TextRange>) {
    if !j.range.touches(offset) {
        return;
    }
    out.push(j.range);
    for l in j.lets.iter().filter(|l| l.range.touches(offset)) {
        out.push(l.range);
        in_jaxpr(&l.jaxpr, offset, out);
    }
    for binders in [&j.constvars, &j.invars] {
        if let Some(all) = cover(binders, |b| b.range).filter(|r| r.touches(offset)) {
            out.push(all);
            in_binders(binders, offset, out);
        }
    }
    if let Some(body) = cover(&j.eqns, |e| e.range).filter(|r| r.touches(offset)) {
        out.push(body);
        // Equations are in text order: a binary search finds the one at the cursor.
        let i = j.eqns.partition_point(|e| e.range.end < offset);
        if let Some(e) = j.eqns.get(i).filter(|e| e.range.touches(offset)) {
            in_eqn(e, offset, out);
        }
    }
    if let Some(outs) = cover(&j.outvars, Atom::range).filter(|r| r.touches(offset)) {
        out.push(outs);
        if let Some(a) = j.outvars.iter().find(|a| a.range().touches(offset)) {
            in_atom(a, offset, out);
        }
    }
}

use ast::Atom;

fn in_binders(binders: &[ast::Binder], offset: u32, out: &mut Vec<TextRange>) {
    if let Some(b) = binders.iter().find(|b| b.range.touches(offset)) {
        out.push(b.range);
        if b.name.range.touches(offset) {
            out.push(b.name.range);
        } else if let Some(t) = b.ty.as_ref().filter(|t| t.range.touches(offset)) {
            in_type(t, offset, out);
        }
    }
}

fn in_type(t: &ast::TypeExpr, offset: u32, out: &mut Vec<TextRange>) {
    out.push(t.range);
    if t.dtype.range.touches(offset) {
        out.push(t.dtype.range);
    } else if let Some(d) = t.dims.iter().find(|d| d.range.touches(offset)) {
        in_expr(d, offset, out);
    }
}

fn in_atom(a: &Atom, offset: u32, out: &mut Vec<TextRange>) {
    out.push(a.range());
    if let Atom::Lit(l) = a
        && let Some(t) = l.ty.as_ref().filter(|t| t.range.touches(offset))
    {
        in_type(t, offset, out);
    }
}

fn in_eqn(e: &ast::Eqn, offset: u32, out: &mut Vec<TextRange>) {
    out.push(e.range);
    if let Some(outs) = cover(&e.outs, |b| b.range).filter(|r| r.touches(offset)) {
        out.push(outs);
        in_binders(&e.outs, offset, out);
    } else if e.primitive.range.touches(offset) {
        out.push(e.primitive.range);
    } else if let Some(params) = e.params_range.filter(|r| r.touches(offset)) {
        out.push(params);
        if let Some(p) = e.params.iter().find(|p| p.range.touches(offset)) {
            out.push(p.range);
            if p.name.range.touches(offset) {
                out.push(p.name.range);
            } else {
                in_expr(&p.value, offset, out);
            }
        }
    } else if let Some(args) = cover(&e.args, Atom::range).filter(|r| r.touches(offset)) {
        out.push(args);
        if let Some(a) = e.args.iter().find(|a| a.range().touches(offset)) {
            in_atom(a, offset, out);
        }
    } else if let Some(c) = e.comments.iter().find(|c| c.range.touches(offset)) {
        out.push(c.range);
    }
}

fn in_expr(x: &ast::Expr, offset: u32, out: &mut Vec<TextRange>) {
    if !x.range.touches(offset) {
        return;
    }
    out.push(x.range);
    match &x.kind {
        ast::ExprKind::Jaxpr(j) => in_jaxpr(j, offset, out),
        ast::ExprKind::Tuple(xs) | ast::ExprKind::List(xs) => {
            if let Some(x) = xs.iter().find(|x| x.range.touches(offset)) {
                in_expr(x, offset, out);
            }
        }
        ast::ExprKind::Call(c) => {
            if let Some(a) = c.args.iter().find(|a| a.value.range.touches(offset)) {
                in_expr(&a.value, offset, out);
            }
        }
        ast::ExprKind::Neg(e) | ast::ExprKind::Pow(e, _) => in_expr(e, offset, out),
        ast::ExprKind::Binary(_, l, r) | ast::ExprKind::Sharded(l, r) => {
            in_expr(l, offset, out);
            in_expr(r, offset, out);
        }
        _ => {}
    }
}
