//! Document outline (symbols) and folding ranges.

use super::FileView;
use jaxpr_check::{Analysis, JaxprId, JaxprOrigin};
use jaxpr_syntax::{TextRange, ast};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymbolKind {
    /// The main jaxpr or a `let`-bound one.
    Function,
    /// A jaxpr held by a parameter of an equation.
    Closure,
    /// An equation that holds nested jaxprs.
    Equation,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbol {
    pub name: String,
    pub detail: String,
    pub kind: SymbolKind,
    pub range: TextRange,
    pub selection: TextRange,
    pub children: Vec<Symbol>,
}

/// The outline: `let`-bound jaxprs and the main jaxpr, each with the
/// equations that hold nested jaxprs, and those jaxprs in turn.
pub fn document_symbols(f: &FileView) -> Vec<Symbol> {
    let a = f.analysis;
    let mut top: Vec<Symbol> = a
        .jaxprs
        .iter()
        .enumerate()
        .filter(|(_, j)| j.parent.is_none())
        .map(|(i, j)| {
            let name = match &j.origin {
                JaxprOrigin::Let { name, .. } => name.to_string(),
                _ => "main".to_string(),
            };
            let selection = match &j.origin {
                JaxprOrigin::Let { name_range, .. } => *name_range,
                _ => j.lambda_range,
            };
            let mut symbol =
                jaxpr_symbol(a, JaxprId(i as u32), name, SymbolKind::Function, selection);
            // A `let`'s symbol spans its name too (a client rejects a
            // selection outside the symbol's range).
            symbol.range = symbol.range.cover(selection);
            symbol
        })
        .collect();
    top.sort_by_key(|s| s.range.start);
    top
}

fn jaxpr_symbol(
    a: &Analysis,
    j: JaxprId,
    name: String,
    kind: SymbolKind,
    selection: TextRange,
) -> Symbol {
    let info = a.jaxpr(j);
    let children = info
        .eqns
        .iter()
        .map(|e| a.eqn(*e))
        .filter(|e| !e.callees.is_empty())
        .map(|e| {
            let outs: Vec<&str> = e
                .outs
                .iter()
                .map(|v| v.map_or("_", |v| a.var(v).name.as_str()))
                .collect();
            let children = e
                .callees
                .iter()
                .map(|(param, callee)| {
                    let c = a.jaxpr(*callee);
                    let label = match &c.origin {
                        JaxprOrigin::Param { index, .. }
                            if e.callees.iter().filter(|(p, _)| p == param).count() > 1 =>
                        {
                            format!("{param}[{index}]")
                        }
                        JaxprOrigin::Let { name, .. } => format!("{param}={name}"),
                        _ => param.to_string(),
                    };
                    // A let-bound callee is listed at top level; here only its name.
                    if matches!(c.origin, JaxprOrigin::Let { .. }) {
                        return Symbol {
                            name: label,
                            detail: c.signature.render_in(),
                            kind: SymbolKind::Closure,
                            range: e.range,
                            selection: e.primitive_range,
                            children: Vec::new(),
                        };
                    }
                    jaxpr_symbol(a, *callee, label, SymbolKind::Closure, c.lambda_range)
                })
                .collect();
            Symbol {
                name: format!("{} = {}", outs.join(" "), e.primitive),
                detail: String::new(),
                kind: SymbolKind::Equation,
                range: e.range,
                selection: e.primitive_range,
                children,
            }
        })
        .collect();
    Symbol {
        name,
        detail: format!(
            "{} -> {}",
            info.signature.render_in(),
            info.signature.render_out()
        ),
        kind,
        range: info.range,
        selection,
        children,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FoldKind {
    Region,
    Comment,
}

/// A foldable range, by line (0-based, inclusive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fold {
    pub start_line: u32,
    pub end_line: u32,
    pub kind: FoldKind,
}

/// Every jaxpr and every parameter list that spans several lines, and runs
/// of comment lines.
pub fn folding_ranges(f: &FileView) -> Vec<Fold> {
    let mut out = Vec::new();
    let mut add = |r: TextRange, kind| {
        let (s, e) = (f.lines.line_col(r.start).line, f.lines.line_col(r.end).line);
        if e > s {
            out.push(Fold {
                start_line: s,
                end_line: e,
                kind,
            });
        }
    };
    fn jaxpr(j: &ast::Jaxpr, add: &mut dyn FnMut(TextRange, FoldKind)) {
        add(j.range, FoldKind::Region);
        for e in &j.eqns {
            if let Some(r) = e.params_range {
                add(r, FoldKind::Region);
            }
            for p in &e.params {
                expr(&p.value, add);
            }
        }
    }
    fn expr(x: &ast::Expr, add: &mut dyn FnMut(TextRange, FoldKind)) {
        match &x.kind {
            ast::ExprKind::Jaxpr(j) => jaxpr(j, add),
            ast::ExprKind::Tuple(xs) | ast::ExprKind::List(xs) => {
                xs.iter().for_each(|x| expr(x, add))
            }
            _ => {}
        }
    }
    for l in &f.parse.file.lets {
        add(l.range, FoldKind::Region);
        jaxpr(&l.jaxpr, &mut add);
    }
    if let Some(m) = &f.parse.file.main {
        jaxpr(m, &mut add);
    }
    // Runs of whole-line comments.
    let mut run: Option<(u32, u32)> = None;
    for (i, line) in f.text.lines().enumerate() {
        let i = i as u32;
        if line.trim_start().starts_with('#') {
            run = Some(run.map_or((i, i), |(s, _)| (s, i)));
        } else if let Some((s, e)) = run.take()
            && e > s
        {
            out.push(Fold {
                start_line: s,
                end_line: e,
                kind: FoldKind::Comment,
            });
        }
    }
    if let Some((s, e)) = run
        && e > s
    {
        out.push(Fold {
            start_line: s,
            end_line: e,
            kind: FoldKind::Comment,
        });
    }
    out.sort_by_key(|f| (f.start_line, std::cmp::Reverse(f.end_line)));
    out.dedup();
    out
}
