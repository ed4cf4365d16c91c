//! What every back end shares: the walk over a checked file's jaxprs
//! (their syntax and resolved variable uses), one equation with its
//! operands and parameter helpers, lowering errors, and the table of
//! call-like primitives.

use crate::check::{Analysis, EqnId};
use crate::diagnostics::{DiagKind, Diagnostic};
use crate::syntax::TextRange;
use crate::syntax::ast::{self, BinOp, Expr, ExprKind};
use crate::types::poly::{Factor, Symbol};
use crate::types::{AType, DType, Dim, Poly, VarId};
use rustc_hash::FxHashMap as HashMap;

/// Why an equation could not be lowered.
pub(crate) struct LowerError {
    pub range: TextRange,
    pub message: String,
    pub help: Option<String>,
}

pub(crate) type R<T> = Result<T, LowerError>;

pub(crate) fn err<T>(range: TextRange, message: impl Into<String>) -> R<T> {
    Err(LowerError {
        range,
        message: message.into(),
        help: None,
    })
}

impl LowerError {
    pub fn into_diagnostic(self) -> Diagnostic {
        let d = Diagnostic::error(DiagKind::Unsupported, self.range, self.message);
        match self.help {
            Some(h) => d.with_help(h),
            None => d,
        }
    }
}

/// A lowered operand: its value and its jaxpr type.
#[derive(Clone)]
pub(crate) struct Operand<X> {
    pub v: X,
    pub ty: AType,
}

/// One equation being lowered: its syntax, operands and result types.
pub(crate) struct EqnCx<'e, X> {
    pub e: &'e ast::Eqn,
    pub id: EqnId,
    pub args: Vec<Operand<X>>,
    pub outs: Vec<AType>,
}

impl<X> EqnCx<'_, X> {
    pub fn at(&self) -> TextRange {
        self.e.primitive.range
    }
    pub fn name(&self) -> &str {
        &self.e.primitive.text
    }
    pub fn param(&self, name: &str) -> R<&Expr> {
        match self.e.param(name) {
            Some(p) => Ok(&p.value),
            None => err(
                self.at(),
                format!("`{}` needs the parameter `{name}` to be built", self.name()),
            ),
        }
    }
    pub fn ints(&self, name: &str) -> R<Vec<i64>> {
        let p = self.param(name)?;
        match p.as_int_seq() {
            Some(v) => Ok(v),
            None => err(
                p.range,
                format!("`{name}` must be a tuple of integers to be built"),
            ),
        }
    }
    /// An integer tuple parameter that may be `None` (then `default`).
    pub fn ints_or(&self, name: &str, default: Vec<i64>) -> R<Vec<i64>> {
        match self.e.param(name) {
            Some(p) if !p.value.is_none() => self.ints(name),
            _ => Ok(default),
        }
    }
    pub fn int(&self, name: &str) -> R<i64> {
        let p = self.param(name)?;
        match p.as_int() {
            Some(v) => Ok(v),
            None => err(p.range, format!("`{name}` must be an integer to be built")),
        }
    }
    pub fn bool_or(&self, name: &str, default: bool) -> bool {
        self.e
            .param(name)
            .and_then(|p| p.value.as_bool())
            .unwrap_or(default)
    }
    /// Pairs `((lo, hi), ...)` (paddings).
    pub fn pairs(&self, name: &str) -> R<Vec<(i64, i64)>> {
        let p = self.param(name)?;
        let bad = || err(p.range, format!("`{name}` must be pairs of integers"));
        let Some(items) = p.as_seq() else {
            return bad();
        };
        let mut out = Vec::new();
        for it in items {
            match it.as_int_seq().as_deref() {
                Some([lo, hi]) => out.push((*lo, *hi)),
                _ => return bad(),
            }
        }
        Ok(out)
    }
    pub fn out_dtype(&self, i: usize) -> R<DType> {
        match self.outs.get(i).and_then(|t| t.dtype.clone()) {
            Some(d) => Ok(d),
            None => err(self.at(), "the result has no dtype"),
        }
    }
    pub fn arg_dtype(&self, i: usize) -> R<DType> {
        match self.args.get(i).and_then(|t| t.ty.dtype.clone()) {
            Some(d) => Ok(d),
            None => err(self.at(), "the operand has no dtype"),
        }
    }
}

/// Call-like primitives and the parameter that holds the called jaxpr.
/// Identities on their operands (every back end passes them through).
pub(crate) const IDENTITY: &[&str] = &[
    "stop_gradient",
    "copy",
    "copy_p",
    "optimization_barrier",
    "device_put",
    "sharding_constraint",
    "reduce_precision",
];

pub(crate) const CALLS: &[(&str, &[&str])] = &[
    ("jit", &["jaxpr"]),
    ("pjit", &["jaxpr"]),
    ("closed_call", &["call_jaxpr"]),
    ("core_call", &["call_jaxpr"]),
    ("remat", &["jaxpr"]),
    ("remat2", &["jaxpr"]),
    ("checkpoint", &["jaxpr"]),
    ("custom_jvp_call", &["call_jaxpr", "fun_jaxpr"]),
    ("custom_vjp_call", &["call_jaxpr", "fun_jaxpr"]),
    ("custom_vjp_call_jaxpr", &["fun_jaxpr", "call_jaxpr"]),
    ("custom_lin", &["jaxpr"]),
];

/// The syntax of a checked file, indexed for lowering: every jaxpr by the
/// start of its range, every variable use by the start of its name.
pub(crate) struct Syntax<'f> {
    pub uses: HashMap<u32, VarId>,
    jaxprs: HashMap<u32, &'f ast::Jaxpr>,
}

impl<'f> Syntax<'f> {
    pub fn new(file: &'f ast::SourceFile, a: &Analysis) -> Self {
        let uses = a
            .refs
            .iter()
            .filter(|r| r.kind == crate::check::RefKind::Use)
            .map(|r| (r.range.start, r.var))
            .collect();
        let mut jaxpr_syntax = HashMap::default();
        fn walk<'f>(j: &'f ast::Jaxpr, out: &mut HashMap<u32, &'f ast::Jaxpr>) {
            out.insert(j.range.start, j);
            for e in &j.eqns {
                for p in &e.params {
                    expr(&p.value, out);
                }
            }
        }
        fn expr<'f>(x: &'f ast::Expr, out: &mut HashMap<u32, &'f ast::Jaxpr>) {
            match &x.kind {
                ExprKind::Jaxpr(j) => walk(j, out),
                ExprKind::Tuple(xs) | ExprKind::List(xs) => xs.iter().for_each(|x| expr(x, out)),
                _ => {}
            }
        }
        for j in file.lets.iter().map(|l| &l.jaxpr).chain(&file.main) {
            walk(j, &mut jaxpr_syntax);
        }
        Syntax {
            uses,
            jaxprs: jaxpr_syntax,
        }
    }

    /// The syntax of the jaxpr whose range is `range`.
    pub fn jaxpr(&self, range: TextRange) -> Option<&'f ast::Jaxpr> {
        self.jaxprs.get(&range.start).copied()
    }
}

/// The type of a dropped binder (`_:f32[3]`): it has no variable, and only
/// its tensor type matters.
pub(crate) fn binder_type(b: &ast::Binder) -> AType {
    let Some(t) = &b.ty else {
        return AType {
            dtype: None,
            shape: Vec::new(),
        };
    };
    AType {
        dtype: DType::from_short(&t.dtype.text),
        shape: t
            .dims
            .iter()
            .map(|d| d.as_int().map_or(Dim::Unknown, Dim::Const))
            .collect(),
    }
}

/// A literal parameter as text (`fill_value=0.0`).
pub(crate) fn expr_text(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Int(i) => i.to_string(),
        ExprKind::Number(n) => n.to_string(),
        ExprKind::Path(p) => p.to_string(),
        ExprKind::Neg(x) => format!("-{}", expr_text(x)),
        ExprKind::Call(c) if c.args.len() == 1 => expr_text(&c.args[0].value),
        _ => String::new(),
    }
}

/// A dimension expression of a parameter (`dim=2*b`) as a polynomial in
/// its symbols (parameters of jax.export jaxprs name symbols only).
pub(crate) fn expr_poly(e: &Expr) -> Option<Poly> {
    Some(match &e.kind {
        ExprKind::Int(i) => Poly::constant(*i),
        ExprKind::Path(p) if !p.contains('.') => Poly::symbol(p),
        ExprKind::Neg(x) => expr_poly(x)?.neg().ok()?,
        ExprKind::Binary(op, x, y) => {
            let (x, y) = (expr_poly(x)?, expr_poly(y)?);
            match op {
                BinOp::Add => x.add(&y).ok()?,
                BinOp::Sub => x.sub(&y).ok()?,
                BinOp::Mul => x.mul(&y).ok()?,
                BinOp::FloorDiv => x.floordiv(&y).ok()?,
                BinOp::Mod => x.modulo(&y).ok()?,
            }
        }
        ExprKind::Call(c) if c.args.len() == 2 => {
            let (x, y) = (expr_poly(&c.args[0].value)?, expr_poly(&c.args[1].value)?);
            match c.callee.as_ref() {
                "floordiv" => x.floordiv(&y).ok()?,
                "mod" => x.modulo(&y).ok()?,
                "max" => Poly::max(&x, &y).ok()?,
                "min" => Poly::min(&x, &y).ok()?,
                _ => return None,
            }
        }
        _ => return None,
    })
}

/// `p = coef * s + rest` with `s` the only unknown symbol of `p`, appearing
/// in one linear term: the symbol, its coefficient and `rest`.
pub(crate) fn solvable<T>(p: &Poly, known: &HashMap<Symbol, T>) -> Option<(Symbol, i64, Poly)> {
    let unknown: Vec<Symbol> = p
        .symbols()
        .into_iter()
        .filter(|s| !known.contains_key(s))
        .collect();
    let [s] = unknown.as_slice() else {
        return None;
    };
    let mut found = None;
    for (mono, coef) in p.terms() {
        let mentions = mono.iter().any(|(f, _)| factor_mentions(f, s));
        if !mentions {
            continue;
        }
        match mono {
            [(Factor::Sym(x), 1)] if x == s && found.is_none() => found = Some(coef),
            _ => return None,
        }
    }
    let coef = found?;
    let rest = p.sub(&Poly::symbol(s).scale(coef).ok()?).ok()?;
    Some((s.clone(), coef, rest))
}

fn factor_mentions(f: &Factor, s: &Symbol) -> bool {
    match f {
        Factor::Sym(x) => x == s,
        _ => {
            let (a, b) = f.operands().expect("operation factor");
            a.symbols().contains(s) || b.symbols().contains(s)
        }
    }
}
