//! Editor questions answered in editor-neutral terms (byte ranges and
//! markdown): what is at an offset, where it is defined, where it is used,
//! and what to show on hover. The language server only converts these.

mod complete;
mod costs;
mod earlier;
mod hints;
mod navigate;
mod outline;
mod rename;
mod tokens;

pub use complete::{Completion, CompletionKind, completions};
pub use costs::{CostAnnotations, CostSource, CostSummary, compact_amount, cost_summaries};
pub use earlier::EarlierView;
pub use hints::{InlayHint, inlay_hints};
pub use navigate::{
    Call, CallItem, call_item, incoming_calls, matches_query, named_jaxprs, outgoing_calls,
    prepare_call_hierarchy, selection_ranges,
};
pub use outline::{Fold, FoldKind, Symbol, SymbolKind, document_symbols, folding_ranges};
pub use rename::{RenameError, prepare_rename, rename};
pub use tokens::{SemanticToken, TokenKind, semantic_tokens};

use jaxpr_check::{Analysis, EqnId, JaxprId, JaxprOrigin, RefKind, VarRole};
use jaxpr_syntax::{LineIndex, Parse, TextRange, ast};
use jaxpr_types::{DimNames, VarId};
use std::fmt::Write;

/// What the IDE functions look at: one file's text and what the core
/// derived from it (all of one revision).
#[derive(Clone, Copy)]
pub struct FileView<'a> {
    pub text: &'a str,
    pub parse: &'a Parse,
    pub analysis: &'a Analysis,
    pub lines: &'a LineIndex,
    /// Where costs are read from (the database's per-item query); None:
    /// computed from this view's analysis at each request.
    pub costs: Option<&'a dyn CostSource>,
}

impl FileView<'_> {
    /// The cost of equation `e`.
    pub fn eqn_cost(&self, e: EqnId) -> jaxpr_cost::EqnCost {
        match self.costs {
            Some(costs) => costs.eqn(e),
            None => self
                .computed_costs(&[self.analysis.eqn(e).jaxpr])
                .eqn(e)
                .clone(),
        }
    }
    /// The totals and peak of jaxpr `j`.
    pub fn jaxpr_cost(&self, j: JaxprId) -> jaxpr_cost::JaxprCost {
        match self.costs {
            Some(costs) => costs.jaxpr(j),
            None => self.computed_costs(&[j]).jaxpr(j).clone(),
        }
    }
    /// The costs of `roots` computed now (a `scan` body counted once per
    /// iteration).
    pub(crate) fn computed_costs(&self, roots: &[JaxprId]) -> jaxpr_cost::FileCost {
        jaxpr_cost::analyse_jaxprs(
            &self.parse.file,
            self.analysis,
            jaxpr_cost::Options::default(),
            roots,
        )
    }
}

/// What a position in the text designates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Var(VarId),
    Symbol(String),
    /// A `jaxpr=NAME` reference or the `lambda` of a jaxpr.
    Jaxpr(JaxprId),
    Primitive(EqnId),
}

/// A place to navigate to: in this file, or in another file (a Python
/// source named by a source-info comment; 1-based line and column as printed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NavTarget {
    Here(TextRange),
    Source { path: String, line: u32, col: u32 },
}

/// The innermost thing at `offset` and its range.
pub fn target_at(a: &Analysis, offset: u32) -> Option<(TextRange, Target)> {
    if let Some(r) = a.refs_touching(offset).next() {
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
    if let Some((i, j)) = a
        .jaxprs
        .iter()
        .enumerate()
        .find(|(_, j)| j.lambda_range.touches(offset))
    {
        return Some((j.lambda_range, Target::Jaxpr(JaxprId(i as u32))));
    }
    if let Some(name_range) = a
        .jaxprs
        .iter()
        .enumerate()
        .find_map(|(i, j)| match &j.origin {
            JaxprOrigin::Let { name_range, .. } if name_range.touches(offset) => {
                Some((*name_range, i))
            }
            _ => None,
        })
    {
        return Some((name_range.0, Target::Jaxpr(JaxprId(name_range.1 as u32))));
    }
    a.eqn_with_primitive_at(offset)
        .map(|e| (a.eqn(e).primitive_range, Target::Primitive(e)))
}

/// Where the thing at `offset` is defined. On a variable use: its binder.
/// On the binder of an inline nested jaxpr: the call-site operand that feeds
/// it (so one can walk outwards). On a symbolic dimension: its first
/// introduction in the top-level signature. On `jaxpr=NAME`: the `let`. On a
/// primitive with a source-info comment: the Python that produced it.
pub fn definition(a: &Analysis, offset: u32) -> Option<NavTarget> {
    let here = |r| Some(NavTarget::Here(r));
    match target_at(a, offset)?.1 {
        Target::Var(v) => {
            let is_binder = a
                .refs_touching(offset)
                .any(|r| r.kind == RefKind::Def && r.var == v);
            match a.origins.get(&v) {
                Some(o) if is_binder => here(o.operand),
                _ => here(a.var(v).range),
            }
        }
        Target::Symbol(s) => a
            .symbols
            .get(s.as_str())
            .and_then(|i| i.first)
            .map(NavTarget::Here),
        Target::Jaxpr(j) => match &a.jaxpr(j).origin {
            JaxprOrigin::Let { name_range, .. } => here(*name_range),
            _ => here(a.jaxpr(j).lambda_range),
        },
        Target::Primitive(e) => a.eqn(e).source_info.as_deref().and_then(parse_source_info),
    }
}

/// Parses `file.py:LINE:COL (function)` as printed by `source_info=True`.
pub fn parse_source_info(s: &str) -> Option<NavTarget> {
    let loc = s.split(" (").next()?.trim();
    let mut parts = loc.rsplitn(3, ':');
    let col: u32 = parts.next()?.parse().ok()?;
    let line: u32 = parts.next()?.parse().ok()?;
    let path = parts.next()?.to_string();
    (!path.is_empty()).then_some(NavTarget::Source { path, line, col })
}

/// From a call-site operand, the binders of inline nested jaxprs it feeds
/// (the inward direction of [`definition`] on a binder).
pub fn implementation(a: &Analysis, offset: u32) -> Vec<TextRange> {
    let Some(r) = a.refs_touching(offset).find(|r| r.kind == RefKind::Use) else {
        return Vec::new();
    };
    let mut out: Vec<TextRange> = a
        .origins
        .iter()
        .filter(|(_, o)| o.operand == r.range)
        .map(|(v, _)| a.var(*v).range)
        .collect();
    out.sort();
    out
}

/// Every occurrence of the thing at `offset` (the definition first when asked).
pub fn references(a: &Analysis, offset: u32, include_declaration: bool) -> Vec<TextRange> {
    highlights(a, offset)
        .into_iter()
        .filter(|(_, is_def)| include_declaration || !is_def)
        .map(|(r, _)| r)
        .collect()
}

/// Occurrences of the thing at `offset` in this file, each marked whether it
/// is a definition (binder, `let NAME`, a symbol's introduction).
pub fn highlights(a: &Analysis, offset: u32) -> Vec<(TextRange, bool)> {
    let Some((_, t)) = target_at(a, offset) else {
        return Vec::new();
    };
    let mut out: Vec<(TextRange, bool)> = match t {
        Target::Var(v) => a
            .refs
            .iter()
            .filter(|r| r.var == v)
            .map(|r| (r.range, r.kind == RefKind::Def))
            .collect(),
        Target::Symbol(s) => a
            .symbols
            .get(s.as_str())
            .map(|i| i.uses.iter().map(|r| (*r, Some(*r) == i.first)).collect())
            .unwrap_or_default(),
        Target::Jaxpr(j) => {
            let mut v: Vec<(TextRange, bool)> = a
                .let_refs
                .iter()
                .filter(|(_, x)| *x == j)
                .map(|(r, _)| (*r, false))
                .collect();
            if let JaxprOrigin::Let { name_range, .. } = &a.jaxpr(j).origin {
                v.push((*name_range, true));
            }
            v
        }
        Target::Primitive(_) => Vec::new(),
    };
    out.sort();
    out.dedup();
    out
}

fn line_of(idx: &LineIndex, offset: u32) -> u32 {
    idx.line_col(offset).line + 1
}

fn describe_jaxpr(a: &Analysis, j: JaxprId, idx: &LineIndex) -> String {
    match &a.jaxpr(j).origin {
        JaxprOrigin::Main => "the main jaxpr".to_string(),
        JaxprOrigin::Let { name, .. } => format!("the jaxpr `{name}`"),
        JaxprOrigin::Param { eqn, param, index } => {
            let e = a.eqn(*eqn);
            let which = if param == "branches" || param == "branch_jaxprs" {
                format!("{param}[{index}]")
            } else {
                param.to_string()
            };
            format!(
                "`{which}` of `{}` (line {})",
                e.primitive,
                line_of(idx, e.primitive_range.start)
            )
        }
    }
}

/// The variable whose occurrence is at exactly `range`.
fn var_at(a: &Analysis, range: TextRange) -> Option<VarId> {
    a.ref_at(range).map(|r| r.var)
}

/// The syntax of the equation at `range` (descending only into nodes that contain it).
fn find_eqn(file: &ast::SourceFile, range: TextRange) -> Option<&ast::Eqn> {
    fn in_jaxpr(j: &ast::Jaxpr, range: TextRange) -> Option<&ast::Eqn> {
        let i = j.eqns.partition_point(|e| e.range.end < range.start);
        let e = j
            .eqns
            .get(i)
            .filter(|e| e.range.start <= range.start && range.end <= e.range.end)?;
        if e.range == range {
            return Some(e);
        }
        e.params.iter().find_map(|p| in_expr(&p.value, range))
    }
    fn in_expr(x: &ast::Expr, range: TextRange) -> Option<&ast::Eqn> {
        if !(x.range.start <= range.start && range.end <= x.range.end) {
            return None;
        }
        match &x.kind {
            ast::ExprKind::Jaxpr(j) => in_jaxpr(j, range),
            ast::ExprKind::Tuple(xs) | ast::ExprKind::List(xs) => {
                xs.iter().find_map(|x| in_expr(x, range))
            }
            _ => None,
        }
    }
    file.lets
        .iter()
        .map(|l| &l.jaxpr)
        .chain(file.main.as_ref())
        .find_map(|j| in_jaxpr(j, range))
}

/// Shortens a parameter's text for display.
fn param_summary(text: &str, p: &ast::Param) -> String {
    let name = &p.name.text;
    if matches!(p.value.kind, ast::ExprKind::Jaxpr(_)) {
        return format!("{name}={{ lambda ... }}");
    }
    let v = text[p.value.range.as_usize()]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if v.chars().count() > 60 {
        format!("{name}={}...", v.chars().take(57).collect::<String>())
    } else {
        format!("{name}={v}")
    }
}

/// Markdown for the hover at `offset`.
pub fn hover(f: &FileView, offset: u32) -> Option<(TextRange, String)> {
    let target = target_hover(f, offset);
    match (target, sharp_bits_hover(f, offset)) {
        (Some((range, mut s)), Some((_, sharp))) => {
            s.push_str("\n---\n\n");
            s.push_str(&sharp);
            Some((range, s))
        }
        (target, None) => target,
        (None, sharp) => sharp,
    }
}

/// What a sharp-bits rule found at `offset` (a reused key, an index out of
/// bounds, a 64-bit request under x64 off), explained: what JAX will do,
/// where the first use or the index came from, and what to do instead.
fn sharp_bits_hover(f: &FileView, offset: u32) -> Option<(TextRange, String)> {
    let found: Vec<&jaxpr_syntax::diagnostics::Diagnostic> = f
        .analysis
        .diagnostics
        .iter()
        .filter(|d| jaxpr_check::sharp::KINDS.contains(&d.kind) && d.range.touches(offset))
        .collect();
    let range = found.first()?.range;
    let mut s = String::new();
    for d in found {
        let _ = writeln!(
            s,
            "**{} {}**: {}\n",
            d.kind.code(),
            d.kind.name(),
            d.message
        );
        let _ = writeln!(s, "{}\n", jaxpr_check::sharp::explain(d.kind));
        for r in &d.related {
            let lc = f.lines.line_col(r.range.start);
            let _ = writeln!(s, "- line {}:{}: {}", lc.line + 1, lc.col + 1, r.message);
        }
        if let Some(help) = &d.help {
            let _ = writeln!(s, "\nhelp: {help}\n");
        }
    }
    Some((range, s))
}

fn target_hover(f: &FileView, offset: u32) -> Option<(TextRange, String)> {
    let (a, idx) = (f.analysis, f.lines);
    let mut s = String::new();
    let Some((range, t)) = target_at(a, offset) else {
        // A jaxpr-valued parameter's name: the jaxprs it holds.
        let (range, jaxprs) = jaxpr_param_at(f, offset)?;
        for j in jaxprs {
            jaxpr_hover(f, j, &mut s);
            s.push('\n');
        }
        return Some((range, s));
    };
    match t {
        Target::Var(v) => s = var_hover(f, v, None),
        Target::Symbol(name) => {
            let _ = writeln!(
                s,
                "symbolic dimension `{name}` (jax.export): an unknown size >= 1, fixed per call"
            );
            if let Some(first) = a.symbols.get(name.as_str()).and_then(|i| i.first) {
                let lc = idx.line_col(first.start);
                let _ = writeln!(s, "\nintroduced at line {}:{}", lc.line + 1, lc.col + 1);
            }
        }
        Target::Jaxpr(j) => jaxpr_hover(f, j, &mut s),
        Target::Primitive(e) => {
            let eqn = a.eqn(e);
            let doc = jaxpr_check::rules::describe(&eqn.primitive)
                .unwrap_or("(no type rule: results are taken as printed)");
            let _ = writeln!(s, "**{}**: {doc}\n", eqn.primitive);
            let outs: Vec<String> = match &eqn.inferred {
                Some(tys) => tys.iter().map(|t| a.ty(t)).collect(),
                None => eqn
                    .outs
                    .iter()
                    .flatten()
                    .map(|v| a.ty(&a.var(*v).ty))
                    .collect(),
            };
            let mut sig = String::new();
            if let Some(syn) = find_eqn(&f.parse.file, eqn.range) {
                let ins: Vec<String> = syn
                    .args
                    .iter()
                    .map(|arg| match arg {
                        ast::Atom::Var(n) => match var_at(a, n.range) {
                            Some(v) => format!("{}:{}", n.text, a.ty(&a.var(v).ty)),
                            None => n.text.to_string(),
                        },
                        ast::Atom::Lit(l) => f.text[l.range.as_usize()].to_string(),
                    })
                    .collect();
                let params: Vec<String> = syn
                    .params
                    .iter()
                    .map(|p| param_summary(f.text, p))
                    .collect();
                let _ = write!(sig, "{}", eqn.primitive);
                if !params.is_empty() {
                    let _ = write!(sig, "[{}]", params.join(" "));
                }
                let _ = write!(sig, " ({})", ins.join(", "));
            }
            let _ = writeln!(s, "```jaxpr\n{sig} -> ({})\n```", outs.join(", "));
            if eqn.inferred.is_none() {
                let _ = writeln!(s, "result types as printed (no rule inferred them)");
            }
            if let Some(src) = &eqn.source_info {
                let _ = writeln!(s, "\nsource: `{src}`");
            }
            let eqn_cost = f.eqn_cost(e);
            // In a code block: symbolic amounts (`2*b*n`) are not markdown.
            let _ = writeln!(s, "\n```\ncost: {}\n```", cost_line(&eqn_cost.total));
            let communication = find_eqn(&f.parse.file, eqn.range)
                .and_then(|syn| jaxpr_cost::communication(a, syn, e));
            if let Some(c) = communication {
                let _ = writeln!(
                    s,
                    "\n```\ncommunication: {} bytes sent and received per device\n```\n({})",
                    c.bytes,
                    c.algorithm()
                );
            }
            if let Some(why) = eqn_cost.dropped {
                let _ = writeln!(s, "(not lowered: {why})");
            } else if let jaxpr_cost::XlaCount::Differs(why) = eqn_cost.xla {
                let _ = writeln!(s, "(XLA's count differs: {why})");
            }
        }
    }
    Some((range, s))
}

/// `12 FLOPs, 0 transcendentals, 144 bytes accessed`, symbolic where the sizes are.
pub fn cost_line(cost: &jaxpr_cost::Cost) -> String {
    let mut line = format!(
        "{} FLOPs, {} transcendentals, {} bytes accessed",
        cost.flops, cost.transcendentals, cost.bytes_accessed
    );
    if !cost.communicated.is_zero() {
        line.push_str(&format!(", {} bytes communicated", cost.communicated));
    }
    line
}

/// The hover of variable `v`: its type, what binds it, and what it sizes
/// or receives. `bound_by`: for a result, the primitive of its equation and
/// the line (from 0) it is on, when they are not the analysis's.
fn var_hover(f: &FileView, v: VarId, bound_by: Option<(&str, u32)>) -> String {
    let (a, idx) = (f.analysis, f.lines);
    let mut s = String::new();
    let info = a.var(v);
    let _ = writeln!(s, "```jaxpr\n{}:{}\n```", info.name, a.ty(&info.ty));
    let role = match &info.role {
        VarRole::Const(i) => format!("constant {i}"),
        VarRole::Arg(i) => format!("argument {i}"),
        VarRole::Result { eqn, index } => {
            let e = a.eqn(*eqn);
            let (primitive, line) = bound_by.unwrap_or_else(|| {
                (
                    e.primitive.as_str(),
                    idx.line_col(e.primitive_range.start).line,
                )
            });
            format!("result {index} of `{primitive}` (line {})", line + 1)
        }
    };
    let _ = writeln!(s, "{role} of {}", describe_jaxpr(a, info.jaxpr, idx));
    if let Some(axes) = &info.varying {
        let _ = writeln!(
            s,
            "\nvaries over the mesh axes {{{}}} (check_vma)",
            axes.join(", ")
        );
    }
    if let Some(shard) = a.shards.get(&v) {
        let _ = writeln!(
            s,
            "\nper-shard block `{}` of the global operand `{}`: {}",
            a.ty(&info.ty),
            a.ty(&shard.global),
            shard.how
        );
    }
    if let Some(w) = a.qubit_wires.get(&v) {
        let _ = writeln!(
            s,
            "\nqubit on wire `{}` of register `{}` (extracted on line {})",
            w.index,
            w.register,
            line_of(idx, w.extracted.start)
        );
    }
    if let VarRole::Arg(i) = info.role
        && let Some(e) = a.jaxpr(info.jaxpr).signature.in_type.get(i as usize)
    {
        let _ = writeln!(
            s,
            "\nin_type entry {i}: `{e}`{}",
            if e.explicit {
                ""
            } else {
                " (implicit argument)"
            }
        );
    }
    // Dimension variables: which binder defines them, what they size,
    // and where their value comes from. Only an integer scalar can
    // be one, and only its own jaxpr's binders can use it (this
    // stays off the 100k binders of a large model's main jaxpr).
    let j = a.jaxpr(info.jaxpr);
    let sized: Vec<&str> = if info.ty.is_int_scalar() {
        let binders = j.constvars.iter().chain(&j.invars).copied().chain(
            j.eqns
                .iter()
                .flat_map(|e| a.eqn(*e).outs.iter().flatten().copied()),
        );
        binders
            .map(|w| a.var(w))
            .filter(|w| w.ty.shape.contains(&jaxpr_types::Dim::Var(v)))
            .map(|w| w.name.as_str())
            .collect()
    } else {
        Vec::new()
    };
    if !sized.is_empty() {
        let lc = idx.line_col(info.range.start);
        let _ = writeln!(
            s,
            "\ndimension variable, bound at line {}:{}; sizes {}",
            lc.line + 1,
            lc.col + 1,
            sized
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let in_kernel = matches!(
        &a.jaxpr(info.jaxpr).origin,
        jaxpr_check::JaxprOrigin::Param { eqn, .. } if a.eqn(*eqn).primitive == "pallas_call"
    );
    if let Some(o) = a.origins.get(&v)
        && in_kernel
    {
        // A Pallas kernel's reference: one block of the call's array.
        let lc = idx.line_col(o.operand.start);
        let _ = writeln!(
            s,
            "\na reference to one block ({}) of `{}` at line {}:{}",
            a.ty(&info.ty),
            &f.text[o.operand.as_usize()],
            lc.line + 1,
            lc.col + 1,
        );
    } else if let Some(o) = a.origins.get(&v) {
        let lc = idx.line_col(o.operand.start);
        let _ = writeln!(
            s,
            "\nreceives the call-site operand `{}` at line {}:{}{}",
            &f.text[o.operand.as_usize()],
            lc.line + 1,
            lc.col + 1,
            if o.carried {
                " (loop-carried: may change between iterations)"
            } else {
                ""
            }
        );
    }
    s
}

/// Signature, implicit arguments, constants and call-site mapping of a jaxpr.
fn jaxpr_hover(f: &FileView, j: JaxprId, s: &mut String) {
    let (a, idx) = (f.analysis, f.lines);
    let info = a.jaxpr(j);
    let _ = writeln!(s, "{}\n", describe_jaxpr(a, j, idx));
    let _ = writeln!(
        s,
        "```\nin_type:  {}\nout_type: {}\n```",
        info.signature.render_in(),
        info.signature.render_out()
    );
    let implicit: Vec<&str> = info
        .invars
        .iter()
        .zip(&info.signature.in_type)
        .filter(|(_, e)| !e.explicit)
        .map(|(v, _)| a.var(*v).name.as_str())
        .collect();
    if !implicit.is_empty() {
        let _ = writeln!(
            s,
            "implicit arguments: {}",
            implicit
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if !info.constvars.is_empty() {
        let _ = writeln!(s, "{} constvar(s)", info.constvars.len());
    }
    let totals = f.jaxpr_cost(j);
    let at = totals
        .peak
        .at
        .map(|e| {
            format!(
                " at {} (line {})",
                a.eqn(e).primitive,
                line_of(idx, a.eqn(e).range.start)
            )
        })
        .unwrap_or_default();
    // In a code block, as the types above: symbolic amounts (`2*b*n`) are not markdown.
    let _ = writeln!(
        s,
        "\n```\ntotal cost: {}\npeak:       {} bytes live{at}\n```",
        cost_line(&totals.total),
        totals.peak.bytes
    );
    if totals.devices > 1 {
        let _ = writeln!(
            s,
            "(counts per device: its multi-device bodies run on {} devices)",
            totals.devices
        );
    }
    call_site_mapping(f, j, s);
}

/// The name of a jaxpr-valued parameter (`body_jaxpr=`, `branches=`,
/// `jaxpr=`) at `offset`, with the jaxprs it holds.
fn jaxpr_param_at(f: &FileView, offset: u32) -> Option<(TextRange, Vec<JaxprId>)> {
    let a = f.analysis;
    let e = a
        .eqns
        .iter()
        .filter(|e| !e.callees.is_empty() && e.range.touches(offset))
        .min_by_key(|e| e.range.len())?;
    let p = find_eqn(&f.parse.file, e.range)?
        .params
        .iter()
        .find(|p| p.name.range.touches(offset))?;
    let jaxprs: Vec<JaxprId> = e
        .callees
        .iter()
        .filter(|(n, _)| *n == p.name.text)
        .map(|(_, j)| *j)
        .collect();
    (!jaxprs.is_empty()).then_some((p.name.range, jaxprs))
}

/// For an inline nested jaxpr, which call-site operand each binder receives.
fn call_site_mapping(f: &FileView, j: JaxprId, s: &mut String) {
    let a = f.analysis;
    let info = a.jaxpr(j);
    let rows: Vec<String> = info
        .constvars
        .iter()
        .chain(&info.invars)
        .filter_map(|v| {
            let o = a.origins.get(v)?;
            let carried = if o.carried { " (loop-carried)" } else { "" };
            Some(format!(
                "`{}` <- `{}`{carried}",
                a.var(*v).name,
                &f.text[o.operand.as_usize()]
            ))
        })
        .collect();
    if !rows.is_empty() {
        let _ = writeln!(s, "\ncall site: {}", rows.join(", "));
    }
    if let JaxprOrigin::Param { eqn, .. } = info.origin
        && let Some(syn) = find_eqn(&f.parse.file, a.eqn(eqn).range)
        && let Some(n) = syn
            .param("body_nconsts")
            .or_else(|| syn.param("num_consts"))
        && let Some(k) = n.value.as_int().filter(|k| *k > 0)
    {
        let _ = writeln!(
            s,
            "\n{}={k}: the first {k} operand(s) are constants of the body, passed unchanged to every iteration",
            n.name.text
        );
    }
}

/// One line for an equation as printed, without its comments:
/// `c:f32[8,3] = mul a b` (nested jaxprs shown as `{ lambda ... }`). For
/// tools that show equations away from the jaxpr (the Python file's hover).
pub fn equation_summary(f: &FileView, e: EqnId) -> String {
    let eqn = f.analysis.eqn(e);
    let Some(syn) = find_eqn(&f.parse.file, eqn.range) else {
        return eqn.primitive.to_string();
    };
    let squash = |r: TextRange| {
        f.text[r.as_usize()]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut s = syn
        .outs
        .iter()
        .map(|b| squash(b.range))
        .collect::<Vec<_>>()
        .join(" ");
    let _ = write!(s, " = {}", eqn.primitive);
    if !syn.params.is_empty() {
        let params: Vec<String> = syn
            .params
            .iter()
            .map(|p| param_summary(f.text, p))
            .collect();
        let _ = write!(s, "[{}]", params.join(" "));
    }
    for arg in syn.args.iter() {
        let r = match arg {
            ast::Atom::Var(n) => n.range,
            ast::Atom::Lit(l) => l.range,
        };
        let _ = write!(s, " {}", squash(r));
    }
    s
}

/// The jaxprs an equation calls, each with where it sits and its
/// `in_type`/`out_type`: `(description, in_type, out_type)`.
pub fn callee_signatures(f: &FileView, e: EqnId) -> Vec<(String, String, String)> {
    f.analysis
        .eqn(e)
        .callees
        .iter()
        .map(|(_, j)| {
            let sig = &f.analysis.jaxpr(*j).signature;
            (
                describe_jaxpr(f.analysis, *j, f.lines),
                sig.render_in(),
                sig.render_out(),
            )
        })
        .collect()
}
