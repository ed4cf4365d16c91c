//! Semantic tokens: what each name, number and keyword is, from the syntax
//! tree and the resolved references (so a dimension variable is told apart
//! from an array variable, and an inner `p` from an outer one).

use super::FileView;
use jaxpr_check::RefKind;
use jaxpr_syntax::{TextRange, ast};
use jaxpr_types::{Dim, VarId};
use std::collections::HashSet;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TokenKind {
    Variable,
    /// A dimension variable (an integer scalar used as a size) or a symbolic dimension.
    DimensionVariable,
    Primitive,
    Parameter,
    DType,
    Literal,
    Keyword,
    Comment,
    String,
    /// The name of a `let`-bound jaxpr.
    JaxprName,
}

impl TokenKind {
    pub const ALL: [TokenKind; 10] = [
        TokenKind::Variable,
        TokenKind::DimensionVariable,
        TokenKind::Primitive,
        TokenKind::Parameter,
        TokenKind::DType,
        TokenKind::Literal,
        TokenKind::Keyword,
        TokenKind::Comment,
        TokenKind::String,
        TokenKind::JaxprName,
    ];
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SemanticToken {
    pub range: TextRange,
    pub kind: TokenKind,
    /// A binder (the definition of the name).
    pub declaration: bool,
}

/// Tokens of the file that intersect `within` (touching its ends counts),
/// or of the whole file; sorted and non-overlapping. Only the equations,
/// references and lines that intersect `within` are visited, so the cost
/// of a range is that of the range, not of the file.
pub fn semantic_tokens(f: &FileView, within: Option<TextRange>) -> Vec<SemanticToken> {
    let a = f.analysis;
    let w = within.unwrap_or(TextRange::new(0, f.text.len() as u32));
    let dims: HashSet<VarId> = a
        .vars
        .iter()
        .flat_map(|v| v.ty.shape.iter())
        .filter_map(|d| match d {
            Dim::Var(v) => Some(*v),
            _ => None,
        })
        .collect();
    let mut out: Vec<SemanticToken> = Vec::new();
    // A whole-file analysis keeps its references in text order.
    let first_ref = a.refs.partition_point(|r| r.range.end < w.start);
    for r in a.refs[first_ref..]
        .iter()
        .take_while(|r| r.range.start <= w.end)
    {
        let kind = if dims.contains(&r.var) {
            TokenKind::DimensionVariable
        } else {
            TokenKind::Variable
        };
        out.push(SemanticToken {
            range: r.range,
            kind,
            declaration: r.kind == RefKind::Def,
        });
    }
    for info in a.symbols.values() {
        for r in info.uses.iter().filter(|r| touches(w, **r)) {
            out.push(SemanticToken {
                range: *r,
                kind: TokenKind::DimensionVariable,
                declaration: Some(*r) == info.first,
            });
        }
    }
    for (r, _) in a.let_refs.iter().filter(|(r, _)| touches(w, *r)) {
        out.push(SemanticToken {
            range: *r,
            kind: TokenKind::JaxprName,
            declaration: false,
        });
    }
    let mut walker = Walker {
        text: f.text,
        within: w,
        out: &mut out,
    };
    for l in f.parse.file.lets.iter().filter(|l| touches(w, l.range)) {
        walker.push(l.name.range, TokenKind::JaxprName, true);
        walker.jaxpr(&l.jaxpr);
    }
    if let Some(m) = &f.parse.file.main {
        walker.jaxpr(m);
    }
    // Comments: whole-line and trailing ones, on the lines `within` touches.
    let from = f.text[..(w.start as usize).min(f.text.len())]
        .rfind('\n')
        .map_or(0, |i| i + 1);
    for (start, line) in line_starts(&f.text[from..]) {
        let start = from + start;
        if start > w.end as usize {
            break;
        }
        if let Some(i) = comment_start(line) {
            let r = TextRange::new((start + i) as u32, (start + line.len()) as u32);
            out.push(SemanticToken {
                range: r,
                kind: TokenKind::Comment,
                declaration: false,
            });
        }
    }
    out.retain(|t| touches(w, t.range));
    out.sort_by_key(|t| (t.range.start, std::cmp::Reverse(t.range.end)));
    // Keep the first of overlapping tokens (resolved names come before syntax guesses
    // at equal starts because `sort_by_key` is stable).
    let mut end = 0;
    out.retain(|t| {
        if t.range.start < end || t.range.is_empty() {
            return false;
        }
        end = t.range.end;
        true
    });
    out
}

/// Whether `r` intersects `w` or touches one of its ends.
fn touches(w: TextRange, r: TextRange) -> bool {
    r.end >= w.start && r.start <= w.end
}

fn line_starts(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut start = 0;
    text.split('\n').map(move |l| {
        let s = start;
        start += l.len() + 1;
        (s, l.strip_suffix('\r').unwrap_or(l))
    })
}

/// Byte index of a `#` comment in a line, outside string literals.
fn comment_start(line: &str) -> Option<usize> {
    let mut quote: Option<u8> = None;
    for (i, b) in line.bytes().enumerate() {
        match (quote, b) {
            (None, b'#') => return Some(i),
            (None, b'\'' | b'"') => quote = Some(b),
            (Some(q), b) if b == q => quote = None,
            _ => {}
        }
    }
    None
}

struct Walker<'a, 'o> {
    text: &'a str,
    /// Equations and jaxprs outside it are not visited.
    within: TextRange,
    out: &'o mut Vec<SemanticToken>,
}

impl Walker<'_, '_> {
    fn push(&mut self, range: TextRange, kind: TokenKind, declaration: bool) {
        self.out.push(SemanticToken {
            range,
            kind,
            declaration,
        });
    }

    fn jaxpr(&mut self, j: &ast::Jaxpr) {
        if !touches(self.within, j.range) {
            return;
        }
        self.push(j.lambda_range, TokenKind::Keyword, false);
        for b in j.constvars.iter().chain(&j.invars) {
            self.binder(b);
        }
        // `let` follows the binders' `.`; find it in the text.
        let after = j
            .invars
            .last()
            .or(j.constvars.last())
            .map_or(j.lambda_range.end, |b| b.range.end);
        if let Some(i) = self
            .text
            .get(after as usize..j.range.end as usize)
            .and_then(|s| s.find("let"))
        {
            let s = after + i as u32;
            self.push(TextRange::new(s, s + 3), TokenKind::Keyword, false);
        }
        // Equations are in text order and do not overlap.
        let w = self.within;
        let first = j.eqns.partition_point(|e| e.range.end < w.start);
        for e in j.eqns[first..]
            .iter()
            .take_while(|e| e.range.start <= w.end)
        {
            for b in &e.outs {
                self.binder(b);
            }
            self.push(e.primitive.range, TokenKind::Primitive, false);
            for p in &e.params {
                self.push(p.name.range, TokenKind::Parameter, false);
                self.expr(&p.value);
            }
            for arg in &e.args {
                self.atom(arg);
            }
        }
        if let Some(r) = j.in_range {
            self.push(r, TokenKind::Keyword, false);
        }
        for o in &j.outvars {
            self.atom(o);
        }
    }

    fn binder(&mut self, b: &ast::Binder) {
        if let Some(t) = &b.ty {
            self.ty(t);
        }
    }

    fn ty(&mut self, t: &ast::TypeExpr) {
        self.push(t.dtype.range, TokenKind::DType, false);
        for d in &t.dims {
            self.expr(d);
        }
    }

    fn atom(&mut self, a: &ast::Atom) {
        if let ast::Atom::Lit(l) = a {
            let value_end =
                l.ty.as_ref()
                    .map_or(l.range.end, |t| t.range.start.saturating_sub(1));
            self.push(
                TextRange::new(l.range.start, value_end.max(l.range.start)),
                TokenKind::Literal,
                false,
            );
            if let Some(t) = &l.ty {
                self.ty(t);
            }
        }
    }

    fn expr(&mut self, x: &ast::Expr) {
        match &x.kind {
            ast::ExprKind::Int(_) | ast::ExprKind::Number(_) => {
                self.push(x.range, TokenKind::Literal, false)
            }
            ast::ExprKind::Str(_) => self.push(x.range, TokenKind::String, false),
            ast::ExprKind::Path(p) => {
                let kind = match &**p {
                    "True" | "False" | "None" => TokenKind::Literal,
                    p if jaxpr_types::DType::from_numpy(p).is_some() => TokenKind::DType,
                    // Other paths are names resolved by the checker (dimensions) or enum-like values.
                    _ => return,
                };
                self.push(x.range, kind, false);
            }
            ast::ExprKind::Neg(e) | ast::ExprKind::Pow(e, _) | ast::ExprKind::Sharded(e, _) => {
                self.expr(e)
            }
            ast::ExprKind::Binary(_, l, r) => {
                self.expr(l);
                self.expr(r);
            }
            ast::ExprKind::Call(c) => {
                for a in &c.args {
                    if let Some(n) = &a.name {
                        self.push(n.range, TokenKind::Parameter, false);
                    }
                    self.expr(&a.value);
                }
            }
            ast::ExprKind::Tuple(xs) | ast::ExprKind::List(xs) => {
                xs.iter().for_each(|x| self.expr(x))
            }
            ast::ExprKind::Jaxpr(j) => self.jaxpr(j),
            ast::ExprKind::DbIdx(..) => self.push(x.range, TokenKind::Literal, false),
            ast::ExprKind::Error => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
let double = { lambda ; a:f32[3]. let b:f32[3] = add a a in (b,) } in
# a comment line
{ lambda ; n:i32[] x:f32[n] y:f32[3]. let
    z:f32[n] = sin x  # trailing
    w:f32[3] = pjit[name=double jaxpr=double] y
    _:i32[] v:f32[n] = cond[
      branches=[{ lambda ; m:i32[] p:f32[m]. let q:f32[m] = cos p in (m, q) }]
    ] 0:i32[] n z
  in (v, w) }
";

    /// The tokens of a range are the whole file's tokens that touch it.
    #[test]
    fn a_range_has_the_tokens_of_the_whole_file_that_touch_it() {
        let parse = jaxpr_syntax::parse(TEXT);
        let analysis = jaxpr_check::check(&parse.file);
        assert!(
            analysis.diagnostics.is_empty(),
            "{:?}",
            analysis.diagnostics
        );
        let lines = jaxpr_syntax::LineIndex::new(TEXT);
        let f = FileView {
            text: TEXT,
            parse: &parse,
            analysis: &analysis,
            lines: &lines,
            costs: None,
        };
        let whole = semantic_tokens(&f, None);
        let kinds: HashSet<TokenKind> = whole.iter().map(|t| t.kind).collect();
        assert_eq!(
            kinds.len(),
            TokenKind::ALL.len() - 1,
            "every kind but strings: {kinds:?}"
        );
        let n = TEXT.len() as u32;
        for start in (0..n).step_by(7) {
            for len in [0, 1, 13, 80, 400] {
                let w = TextRange::new(start, (start + len).min(n));
                let expected: Vec<_> = whole
                    .iter()
                    .copied()
                    .filter(|t| touches(w, t.range))
                    .collect();
                assert_eq!(semantic_tokens(&f, Some(w)), expected, "in {w:?}");
            }
        }
    }
}
