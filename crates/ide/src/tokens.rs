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

/// Tokens of the whole file, sorted and non-overlapping.
pub fn semantic_tokens(f: &FileView) -> Vec<SemanticToken> {
    let a = f.analysis;
    let dims: HashSet<VarId> = a
        .vars
        .iter()
        .flat_map(|v| v.ty.shape.iter())
        .filter_map(|d| match d {
            Dim::Var(v) => Some(*v),
            _ => None,
        })
        .collect();
    let mut out: Vec<SemanticToken> = Vec::with_capacity(a.refs.len() * 2);
    for r in &a.refs {
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
        for r in &info.uses {
            out.push(SemanticToken {
                range: *r,
                kind: TokenKind::DimensionVariable,
                declaration: Some(*r) == info.first,
            });
        }
    }
    for (r, _) in &a.let_refs {
        out.push(SemanticToken {
            range: *r,
            kind: TokenKind::JaxprName,
            declaration: false,
        });
    }
    let mut w = Walker {
        text: f.text,
        out: &mut out,
    };
    for l in &f.parse.file.lets {
        w.push(l.name.range, TokenKind::JaxprName, true);
        w.jaxpr(&l.jaxpr);
    }
    if let Some(m) = &f.parse.file.main {
        w.jaxpr(m);
    }
    // Comments: whole-line and trailing ones.
    for (start, line) in line_starts(f.text) {
        if let Some(i) = comment_start(line) {
            let r = TextRange::new((start + i) as u32, (start + line.len()) as u32);
            out.push(SemanticToken {
                range: r,
                kind: TokenKind::Comment,
                declaration: false,
            });
        }
    }
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
        for e in &j.eqns {
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
