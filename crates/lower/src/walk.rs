//! What every back end shares: the walk over a checked file's jaxprs
//! (their syntax and resolved variable uses), one equation with its
//! operands and parameter helpers, lowering errors, and the table of
//! call-like primitives.

use jaxpr_check::params::{
    BadField, ConstantData, ConvSpecs, ConvWindow, DotDims, GatherDims, IndexMode, ScatterDims,
    WindowParams,
};
use jaxpr_check::registry::{self, Family, Lowering, Prim, Primitive};
use jaxpr_check::{Analysis, EqnId, JaxprId, JaxprOrigin, literals};
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast::{self, BinOp, Expr, ExprKind};
use jaxpr_syntax::diagnostics::{DiagKind, Diagnostic};
use jaxpr_types::poly::{Factor, Symbol};
use jaxpr_types::{AType, DType, Dim, Poly, Shape, VarId};
use rustc_hash::FxHashMap as HashMap;
use std::borrow::{Borrow, Cow};

/// Why an equation could not be lowered.
#[derive(Debug)]
pub struct LowerError {
    pub range: TextRange,
    pub message: String,
    pub help: Option<String>,
    pub kind: LowerErrorKind,
}

/// A documented limit (J0012) or a bug of the back end (J0016): a bug is
/// never reported as a limit.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum LowerErrorKind {
    /// The back end does not lower this (a registry row, a dtype, a
    /// parameter value, a dynamic shape): `unsupported`.
    Refused,
    /// The back end contradicts itself or the checker (a value of another
    /// rank than its binder, IR that does not verify): `internal-error`.
    Internal,
}

pub type LowerResult<T> = Result<T, LowerError>;

/// The value a back end computed for the symbolic dimension `s` from the
/// input shapes (`syms`); an error at `at` when no input shape determines it.
pub fn symbol_value<V: Copy>(
    syms: &HashMap<Symbol, V>,
    s: &Symbol,
    at: TextRange,
) -> LowerResult<V> {
    match syms.get(s) {
        Some(&v) => Ok(v),
        None => err(
            at,
            format!("the symbolic dimension `{s}` is not determined by the input shapes"),
        ),
    }
}

/// A static extent as written in a type; a negative one (`f32[-1]`) has
/// no array and is refused, so no back end emits it.
pub fn static_extent(c: i64, at: TextRange) -> LowerResult<i64> {
    if c < 0 {
        return err(at, format!("the extent {c} is negative: no array has it"));
    }
    Ok(c)
}

/// A complex literal as JAX prints it (Python's repr: `(1+0j)`, `-2j`,
/// `(nan+infj)`, `(1e-05-0j)`, or a real number): its real and imaginary
/// parts, or None when the text is not one.
pub fn complex_literal(text: &str) -> Option<(f64, f64)> {
    let t = text.trim();
    let inner = t
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .unwrap_or(t);
    let part = |s: &str| -> Option<f64> { s.parse::<f64>().ok() };
    let Some(body) = inner.strip_suffix(['j', 'J']) else {
        return Some((part(inner)?, 0.0));
    };
    // The imaginary part starts at the last sign that is not an exponent's.
    let bytes = body.as_bytes();
    let split = (1..bytes.len())
        .rev()
        .find(|&i| matches!(bytes[i], b'+' | b'-') && !matches!(bytes[i - 1], b'e' | b'E'));
    match split {
        Some(i) => Some((part(&body[..i])?, part(&body[i..])?)),
        None => Some((0.0, part(body)?)),
    }
}

/// `x^e` by repeated squaring with `mul` (`integer_pow`), None for `e = 0`.
pub fn power_by_squaring<T: Copy>(
    x: T,
    e: u64,
    mut mul: impl FnMut(T, T) -> LowerResult<T>,
) -> LowerResult<Option<T>> {
    let (mut acc, mut base, mut e) = (None, x, e);
    while e > 0 {
        if e & 1 == 1 {
            acc = Some(match acc {
                None => base,
                Some(a) => mul(a, base)?,
            });
        }
        e >>= 1;
        if e > 0 {
            base = mul(base, base)?;
        }
    }
    Ok(acc)
}

/// A refusal at `range`: what the back end does not lower (J0012).
pub fn err<T>(range: TextRange, message: impl Into<String>) -> LowerResult<T> {
    Err(LowerError {
        range,
        message: message.into(),
        help: None,
        kind: LowerErrorKind::Refused,
    })
}

/// A bug of the back end found at `range` (J0016), with the help line
/// every internal error carries.
pub fn internal<T>(range: TextRange, message: impl Into<String>) -> LowerResult<T> {
    Err(LowerError {
        range,
        message: message.into(),
        help: Some(INTERNAL_ERROR_HELP.into()),
        kind: LowerErrorKind::Internal,
    })
}

/// The help line of every internal error, from either back end.
pub const INTERNAL_ERROR_HELP: &str =
    "this is a bug in jaxpr, not in the program: please report it with the file and the command";

impl LowerError {
    pub fn into_diagnostic(self) -> Diagnostic {
        let kind = match self.kind {
            LowerErrorKind::Refused => DiagKind::Unsupported,
            LowerErrorKind::Internal => DiagKind::InternalError,
        };
        let d = Diagnostic::error(kind, self.range, self.message);
        match self.help {
            Some(h) => d.with_help(h),
            None => d,
        }
    }
}

/// A lowered operand: its value and its jaxpr type (owned, or borrowed
/// from the analysis by a back end that does not change types: `T` is
/// `AType` or `Cow<AType>`).
#[derive(Clone)]
pub struct Operand<X, T = AType> {
    pub v: X,
    pub ty: T,
}

/// One equation being lowered: its syntax, operands and result types.
pub struct EqnCx<'e, X, T = AType> {
    pub e: &'e ast::Eqn,
    /// Its primitive, which the back end lowers ([`check_lowered`]).
    pub prim: Prim,
    pub id: EqnId,
    pub args: Vec<Operand<X, T>>,
    pub outs: Vec<T>,
}

/// The parts of a `while` / `while_loop`: operands `cond_consts ++
/// body_consts ++ carried`.
pub struct WhileLayout {
    pub body: JaxprId,
    pub cond: JaxprId,
    pub cond_nconsts: usize,
    pub body_nconsts: usize,
}

/// The parts of a Catalyst `for_loop`: operands `consts ++ implicits ++
/// [lower, upper, step, start] ++ explicit`; the body sees `consts ++
/// implicits ++ [index] ++ explicit` and returns `implicits ++ explicit`.
pub struct ForLayout {
    pub body: JaxprId,
    pub nconsts: usize,
    pub nimplicit: usize,
}

/// The parts of a `scan`: operands `consts ++ carry ++ xs`; the body sees
/// `consts ++ carry ++ x[i]` and returns `carry ++ y[i]`; results `carry ++
/// ys`.
pub struct ScanLayout {
    pub body: JaxprId,
    pub nconsts: usize,
    pub ncarry: usize,
    /// A constant, or symbolic in a shape-polymorphic program (`length=b`).
    pub length: Dim,
    pub reverse: bool,
}

impl ForLayout {
    /// Operands before the loop bounds (constants and implicit arguments).
    pub fn header(&self) -> usize {
        self.nconsts + self.nimplicit
    }
}

impl<X, T: Borrow<AType>> EqnCx<'_, X, T> {
    /// The jaxprs a parameter of this equation holds, in order.
    pub fn callees(&self, a: &Analysis, param: &str) -> Vec<JaxprId> {
        a.eqn(self.id)
            .callees
            .iter()
            .filter(|(p, _)| p.as_str() == param)
            .map(|(_, j)| *j)
            .collect()
    }

    /// `custom_linear_solve`, as JAX computes it (`_custom_linear_solve_impl`):
    /// a call of its `solve` jaxpr on the solve's constants and the
    /// right-hand sides. Gives that jaxpr and the operands it takes (the
    /// operands are the constants of `matvec`, `vecmat`, `solve` and
    /// `transpose_solve`, by `const_lengths`, then the right-hand sides).
    pub fn linear_solve(&self, a: &Analysis) -> LowerResult<(JaxprId, Vec<usize>)> {
        const FIELDS: [&str; 4] = ["matvec", "vecmat", "solve", "transpose_solve"];
        let lengths = self.param("const_lengths")?;
        let jaxprs = self.param("jaxprs")?;
        let bad = |what: &str| {
            err(
                self.at(),
                format!("`custom_linear_solve` {what} to be built"),
            )
        };
        let mut counts = [0usize; 4];
        for (c, f) in counts.iter_mut().zip(FIELDS) {
            match lengths.field(f).and_then(Expr::as_int) {
                Some(n) if n >= 0 => *c = n as usize,
                _ => return bad("needs `const_lengths` with four lengths"),
            }
        }
        // The equation's callees are the jaxpr-valued fields, in order.
        let has: Vec<bool> = FIELDS
            .iter()
            .map(|f| matches!(jaxprs.field(f).map(|e| &e.kind), Some(ExprKind::Jaxpr(_))))
            .collect();
        let callees = self.callees(a, "jaxprs");
        if !has[2] || callees.len() != has.iter().filter(|h| **h).count() {
            return bad("needs its `solve` jaxpr");
        }
        let solve = callees[has[..2].iter().filter(|h| **h).count()];
        let consts: usize = counts.iter().sum();
        let first = counts[0] + counts[1];
        if self.e.args.len() < consts {
            return bad("needs its constants");
        }
        Ok((
            solve,
            (first..first + counts[2])
                .chain(consts..self.e.args.len())
                .collect(),
        ))
    }

    /// The jaxpr a call-like primitive calls (the first of the registry's
    /// callee parameters this equation has); `None` for other primitives.
    pub fn call_target(&self, a: &Analysis) -> LowerResult<Option<JaxprId>> {
        let Some(params) = registry::call_params(&self.e.primitive.text) else {
            return Ok(None);
        };
        match params
            .iter()
            .find_map(|p| self.callees(a, p).first().copied())
        {
            Some(callee) => Ok(Some(callee)),
            None => err(
                self.at(),
                format!("`{}` has no jaxpr to call", self.e.primitive.text),
            ),
        }
    }

    pub fn while_layout(&self, a: &Analysis) -> LowerResult<WhileLayout> {
        let (Some(&body), Some(&cond)) = (
            self.callees(a, "body_jaxpr").first(),
            self.callees(a, "cond_jaxpr").first(),
        ) else {
            return err(self.at(), "the loop needs `body_jaxpr` and `cond_jaxpr`");
        };
        let cond_nconsts = self.int("cond_nconsts").unwrap_or(0) as usize;
        let body_nconsts = self.int("body_nconsts").unwrap_or(0) as usize;
        if self.args.len() < cond_nconsts + body_nconsts {
            return err(self.at(), "the loop has fewer operands than constants");
        }
        Ok(WhileLayout {
            body,
            cond,
            cond_nconsts,
            body_nconsts,
        })
    }

    pub fn for_layout(&self, a: &Analysis) -> LowerResult<ForLayout> {
        let Some(&body) = self.callees(a, "body_jaxpr").first() else {
            return err(self.at(), "`for_loop` needs `body_jaxpr`");
        };
        let l = ForLayout {
            body,
            nconsts: self.int("body_nconsts").unwrap_or(0) as usize,
            nimplicit: self
                .int("num_implicit_inputs")
                .or_else(|_| self.int("nimplicit"))
                .unwrap_or(0) as usize,
        };
        if self.args.len() < l.header() + 4 {
            return err(self.at(), "`for_loop` has too few operands");
        }
        Ok(l)
    }

    pub fn scan_layout(&self, a: &Analysis) -> LowerResult<ScanLayout> {
        let Some(&body) = self.callees(a, "jaxpr").first() else {
            return err(self.at(), "`scan` needs `jaxpr`");
        };
        let l = ScanLayout {
            body,
            nconsts: self.int("num_consts")? as usize,
            ncarry: self.int("num_carry")? as usize,
            length: match self.int("length") {
                Ok(n) => Dim::Const(n),
                Err(_) => {
                    let p = self.param("length")?;
                    match expr_poly(p) {
                        Some(poly) => Dim::from_poly(poly),
                        None => return err(p.range, "`length` must be a dimension to be built"),
                    }
                }
            },
            reverse: self.bool_or("reverse", false),
        };
        if self.args.len() < l.nconsts + l.ncarry || self.outs.len() < l.ncarry {
            return err(
                self.at(),
                "`scan` has fewer operands than constants and carry",
            );
        }
        Ok(l)
    }

    /// `conv_general_dilated`'s dimension numbers, decoded as the checker
    /// decoded them, for operands of the lhs's rank.
    pub fn conv_specs(&self) -> LowerResult<ConvSpecs> {
        let dn = self.param("dimension_numbers")?;
        let rank = |i: usize| self.args.get(i).map(|a| a.ty.borrow().rank());
        let n = rank(0).unwrap_or(0);
        match ConvSpecs::decode(dn, n) {
            Ok(specs) if n >= 2 && rank(1) == Some(n) => Ok(specs),
            // The checker reported it: a build of it is our bug.
            _ => internal(
                dn.range,
                "convolution specs the checker accepted do not match the operands",
            ),
        }
    }

    /// `conv_general_dilated`'s window and feature groups, decoded once
    /// for the back ends and the cost model ([`ConvWindow`]), one entry per
    /// spatial dimension of the operands.
    pub fn conv_window(&self) -> LowerResult<ConvWindow> {
        let spatial = self
            .args
            .first()
            .map_or(0, |a| a.ty.borrow().rank())
            .saturating_sub(2);
        match ConvWindow::decode(|name| self.e.param(name).map(|p| &p.value)) {
            Some(w)
                if [
                    w.strides.len(),
                    w.padding.len(),
                    w.lhs_dilation.len(),
                    w.rhs_dilation.len(),
                ]
                .iter()
                .all(|&k| k == spatial) =>
            {
                Ok(w)
            }
            _ => {
                // The parameter at fault, at its own range (symbolic
                // padding, most often).
                self.pairs("padding")?;
                for name in ["window_strides", "lhs_dilation", "rhs_dilation"] {
                    if self.e.param(name).is_some() {
                        self.ints(name)?;
                    }
                }
                err(
                    self.at(),
                    "the window of `conv_general_dilated` (`window_strides`, `padding`, the dilations, the group counts) is built only as integers, one per spatial dimension",
                )
            }
        }
    }

    /// A window reduction's window over operand `k` ([`WindowParams`],
    /// decoded once for both back ends).
    pub fn window(&self, k: usize) -> LowerResult<WindowParams> {
        let rank = self.args.get(k).map_or(0, |a| a.ty.borrow().rank());
        match WindowParams::decode(|name| self.e.param(name).map(|p| &p.value), rank) {
            Some(w) => Ok(w),
            None => {
                // The parameter at fault, at its own range.
                self.ints("window_dimensions")?;
                for name in ["window_strides", "base_dilation", "window_dilation"] {
                    self.ints_or(name, Vec::new())?;
                }
                if self.e.param("padding").is_some() {
                    self.pairs("padding")?;
                }
                err(self.at(), "window parameters do not match the operand")
            }
        }
    }

    /// A `constant`'s value, decoded as the checker decoded it.
    pub fn constant_data(&self) -> LowerResult<ConstantData> {
        match ConstantData::decode(|name| self.e.param(name).map(|p| &p.value)) {
            Ok(c) => Ok(c),
            // The checker reported it: a build of it is our bug.
            Err(_) => internal(self.at(), "a constant the checker accepted does not decode"),
        }
    }

    /// What a `scatter` does with an update: its combining primitive
    /// (`scatter-add` -> `add`), or `None` (replace) for `scatter`, whose
    /// `update_jaxpr` must then be `None` or return its second operand
    /// (any other update function has no lowering: it is refused rather
    /// than replaced by a store).
    pub fn scatter_combiner(&self) -> LowerResult<Option<Prim>> {
        let combiner = match self.prim {
            Prim::Scatter => None,
            Prim::ScatterAdd => Some(Prim::Add),
            Prim::ScatterSub => Some(Prim::Sub),
            Prim::ScatterMul => Some(Prim::Mul),
            Prim::ScatterMin => Some(Prim::Min),
            Prim::ScatterMax => Some(Prim::Max),
            _ => return err(self.at(), format!("`{}` has no lowering", self.name())),
        };
        if combiner.is_some() {
            return Ok(combiner);
        }
        let replaces = match self.e.param("update_jaxpr").map(|p| &p.value.kind) {
            None => true,
            Some(ExprKind::Path(p)) => &**p == "None",
            Some(ExprKind::Jaxpr(j)) => {
                j.eqns.is_empty()
                    && j.invars.len() == 2
                    && matches!(&j.outvars[..], [jaxpr_syntax::ast::Atom::Var(v)] if v.text == j.invars[1].name.text)
            }
            Some(_) => false,
        };
        if replaces {
            Ok(None)
        } else {
            err(
                self.at(),
                "`scatter` with an `update_jaxpr` other than replacing has no lowering (scatter-add, -mul, -min and -max are lowered)",
            )
        }
    }

    /// `platform_index[platforms=(('cpu',), None)]` on the CPU both back
    /// ends build for: the position of the first entry naming `cpu`, else
    /// of the default entry (`None`).
    pub fn cpu_platform_index(&self) -> LowerResult<i64> {
        let p = self.param("platforms")?;
        let Some(entries) = p.as_seq() else {
            return err(p.range, "`platforms` must be a tuple of platform tuples");
        };
        let names_cpu = |e: &Expr| {
            e.as_seq().is_some_and(|names| {
                names.iter().any(
                    |n| matches!(&n.kind, ExprKind::Str(t) if t.trim_matches(['\'', '"']) == "cpu"),
                )
            })
        };
        let is_default = |e: &Expr| matches!(&e.kind, ExprKind::Path(t) if &**t == "None");
        match entries
            .iter()
            .position(names_cpu)
            .or_else(|| entries.iter().position(is_default))
        {
            Some(i) => Ok(i as i64),
            None => err(
                self.at(),
                "`platform_index` names no CPU platform and has no default: the program has no CPU lowering",
            ),
        }
    }

    pub fn at(&self) -> TextRange {
        self.e.primitive.range
    }
    pub fn name(&self) -> &str {
        &self.e.primitive.text
    }
    pub fn param(&self, name: &str) -> LowerResult<&Expr> {
        match self.e.param(name) {
            Some(p) => Ok(&p.value),
            None => err(
                self.at(),
                format!("`{}` needs the parameter `{name}` to be built", self.name()),
            ),
        }
    }
    /// `dot_general`'s dimension numbers, decoded as the checker decoded them.
    pub fn dot_dims(&self) -> LowerResult<DotDims> {
        let p = self.param("dimension_numbers")?;
        match DotDims::decode(p) {
            Some(dims) => Ok(dims),
            // The checker reported it: a build of it is our bug.
            None => internal(
                p.range,
                "`dimension_numbers` the checker accepted is not ((lc, rc), (lb, rb))",
            ),
        }
    }
    /// `gather`'s dimension numbers, decoded as the checker decoded them.
    pub fn gather_dims(&self) -> LowerResult<GatherDims> {
        let p = self.param("dimension_numbers")?;
        GatherDims::decode(p).or_else(|bad| bad_field(p, bad))
    }
    /// `scatter*`'s dimension numbers, decoded as the checker decoded them.
    pub fn scatter_dims(&self) -> LowerResult<ScatterDims> {
        let p = self.param("dimension_numbers")?;
        ScatterDims::decode(p).or_else(|bad| bad_field(p, bad))
    }
    /// A gather's or scatter's `mode`; absent or unreadable, indices are
    /// taken as promised in bounds (XLA's own semantics, no masking).
    pub fn index_mode(&self) -> IndexMode {
        IndexMode::of(self.e).unwrap_or(IndexMode::PromiseInBounds)
    }
    pub fn ints(&self, name: &str) -> LowerResult<Vec<i64>> {
        let p = self.param(name)?;
        match p.as_int_seq() {
            Some(v) => Ok(v),
            None => err(
                p.range,
                format!("`{name}` must be a tuple of integers to be built"),
            ),
        }
    }
    /// The axes of a collective (`psum`) when they are all positional, as
    /// `vmap` with an `axis_name` leaves them: JAX lowers those as a
    /// reduction of each operand. A named axis is a collective across the
    /// devices of a multi-device program, which neither back end builds.
    pub fn positional_axes(&self) -> LowerResult<Vec<i64>> {
        let p = self.param("axes")?;
        let Some(items) = p.as_seq() else {
            return err(
                p.range,
                "`axes` must be a tuple of axis names or positions to be built",
            );
        };
        let named: Vec<String> = items
            .iter()
            .filter(|a| a.as_int().is_none())
            .map(|a| format!("`{}`", expr_text(a)))
            .collect();
        if !named.is_empty() {
            return err(
                p.range,
                format!(
                    "`{}` over the named axes {} has no lowering: it is a collective across the devices of a multi-device program (positional axes, what `vmap` leaves, are built)",
                    self.name(),
                    named.join(", ")
                ),
            );
        }
        Ok(items.iter().filter_map(Expr::as_int).collect())
    }
    /// A tuple parameter of dimensions, which may be symbolic
    /// (`limit_indices=(b, 5)` in a shape-polymorphic program): each entry
    /// a constant or a polynomial of the program's symbols.
    pub fn dims_param(&self, name: &str) -> LowerResult<Vec<Dim>> {
        let p = self.param(name)?;
        let bad = || format!("`{name}` must be a tuple of dimensions to be built");
        let Some(items) = p.as_seq() else {
            return err(p.range, bad());
        };
        items
            .iter()
            .map(|e| match expr_poly(e) {
                Some(poly) => Ok(Dim::from_poly(poly)),
                None => err(e.range, bad()),
            })
            .collect()
    }
    /// [`Self::dims_param`] that may be `None` (then `default`).
    pub fn dims_param_or(&self, name: &str, default: Vec<Dim>) -> LowerResult<Vec<Dim>> {
        match self.e.param(name) {
            Some(p) if !p.value.is_none() => self.dims_param(name),
            _ => Ok(default),
        }
    }
    /// `select_prim` of `select_and_gather_add` and `select_and_scatter_add`:
    /// true for `ge` (a window selects its largest element, the first of
    /// equal ones), false for `le` (its smallest).
    pub fn select_ge(&self) -> LowerResult<bool> {
        let p = self.param("select_prim")?;
        match p
            .as_path()
            .map(|s| s.rsplit('.').next().unwrap_or(s).trim_end_matches("_p"))
        {
            Some("ge") => Ok(true),
            Some("le") => Ok(false),
            _ => err(p.range, "`select_prim` must be `ge` or `le` to be built"),
        }
    }
    /// An integer tuple parameter that may be `None` (then `default`).
    pub fn ints_or(&self, name: &str, default: Vec<i64>) -> LowerResult<Vec<i64>> {
        match self.e.param(name) {
            Some(p) if !p.value.is_none() => self.ints(name),
            _ => Ok(default),
        }
    }
    pub fn int(&self, name: &str) -> LowerResult<i64> {
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
    pub fn pairs(&self, name: &str) -> LowerResult<Vec<(i64, i64)>> {
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
    pub fn out_dtype(&self, i: usize) -> LowerResult<DType> {
        match self.outs.get(i).and_then(|t| t.borrow().dtype.clone()) {
            Some(d) => Ok(d),
            None => err(self.at(), "the result has no dtype"),
        }
    }
    pub fn arg_dtype(&self, i: usize) -> LowerResult<DType> {
        match self.args.get(i).and_then(|t| t.ty.borrow().dtype.clone()) {
            Some(d) => Ok(d),
            None => err(self.at(), "the operand has no dtype"),
        }
    }
}

/// A back end, as the primitive registry names its support.
#[derive(Clone, Copy)]
pub enum Backend {
    Stablehlo,
    Native,
}

impl Backend {
    fn support(self, p: &Primitive) -> Lowering {
        match self {
            Backend::Stablehlo => p.stablehlo,
            Backend::Native => p.native,
        }
    }
    fn complex_support(self, p: &Primitive) -> Lowering {
        match self {
            Backend::Stablehlo => p.complex.stablehlo,
            Backend::Native => p.complex.native,
        }
    }
    fn title(self) -> &'static str {
        match self {
            Backend::Stablehlo => "StableHLO",
            Backend::Native => "native",
        }
    }
}

/// The registry's primitive of equation `e`; J0012 at the primitive when
/// the registry does not know it (a program the checker only warned about).
pub fn prim_of(e: &ast::Eqn, backend: Backend) -> LowerResult<Prim> {
    match Prim::from_name(&e.primitive.text) {
        Some(p) => Ok(p),
        None => check_lowered(e, backend),
    }
}

/// The primitive of equation `e`, which `backend` lowers; J0012 at the
/// primitive unless the registry says it does.
pub fn check_lowered(e: &ast::Eqn, backend: Backend) -> LowerResult<Prim> {
    let (name, at) = (e.primitive.text.as_str(), e.primitive.range);
    let title = backend.title();
    match Prim::from_name(name) {
        Some(p) => match backend.support(p.row()) {
            Lowering::Lowered => Ok(p),
            Lowering::Refused(why) => Err(LowerError {
                range: at,
                message: format!("`{name}` has no {title} lowering: {why}"),
                help: Some("`jaxpr check` still checks this equation; docs/primitives.md lists what each back end lowers".into()),
                kind: LowerErrorKind::Refused,
            }),
        },
        None => Err(LowerError {
            range: at,
            message: format!("`{name}` has no {title} lowering"),
            help: Some(
                "it is not a primitive the checker knows (docs/primitives.md lists them); \
                 `jaxpr check` still resolves its operands"
                    .into(),
            ),
            kind: LowerErrorKind::Refused,
        }),
    }
}

/// J0012 at the primitive when an operand or result of the equation is
/// complex and the registry's row says `backend` does not lower it for
/// complex dtypes (checked after [`check_lowered`], with the operands'
/// types known).
pub fn check_lowered_complex<'t>(
    prim: Prim,
    at: TextRange,
    types: impl IntoIterator<Item = &'t AType>,
    backend: Backend,
) -> LowerResult<()> {
    let complex = types
        .into_iter()
        .find_map(|t| t.dtype.as_ref().filter(|d| d.is_complex()));
    let Some(dt) = complex else {
        return Ok(());
    };
    let name = prim.name();
    match backend.complex_support(prim.row()) {
        Lowering::Lowered => Ok(()),
        Lowering::Refused(why) => Err(LowerError {
            range: at,
            message: format!(
                "`{name}` on {dt} has no {} lowering: {why}",
                backend.title()
            ),
            help: Some(
                "docs/primitives.md lists what each back end lowers for complex dtypes".into(),
            ),
            kind: LowerErrorKind::Refused,
        }),
    }
}

/// The registry's row of a primitive it marks as lowered but the back end
/// has no arm for: a bug in one of the two, said as such.
pub fn missing_lowering<T>(name: &str, at: TextRange, backend: Backend) -> LowerResult<T> {
    internal(
        at,
        format!(
            "the primitive registry marks `{name}` as lowered by the {} back end, but it has no lowering",
            backend.title()
        ),
    )
}

/// A field of dimension numbers that is not a tuple of integers: the
/// checker reported it, so a build of it is our bug.
fn bad_field<T>(p: &Expr, BadField(field): BadField) -> LowerResult<T> {
    internal(
        p.range,
        format!("`{field}` in `dimension_numbers` the checker accepted is not a tuple of integers"),
    )
}

/// Primitives whose result is their operand on one device.
pub fn is_identity(prim: Prim) -> bool {
    prim.row().family == Family::Identity
}

/// The syntax of a checked file, indexed for lowering: every jaxpr by the
/// start of its range, every variable use by the start of its name.
pub struct Syntax<'f> {
    uses: VarUses,
    jaxprs: HashMap<u32, &'f ast::Jaxpr>,
    /// The top-level equation a view of one equation is of (whose jaxpr,
    /// the main one, it does not index).
    eqn: Option<&'f ast::Eqn>,
    /// What a view of one equation falls back to: the `let` jaxprs' syntax.
    base: Option<&'f Syntax<'f>>,
}

/// The variable each use refers to, by the start of its name, sorted by
/// position. Lowering asks in text order, most often for the use right
/// after the previous one, so a lookup first tries the entries after the
/// last one found (a hash map of every use of a large file misses the
/// cache at each lookup).
pub struct VarUses {
    uses: Vec<(u32, VarId)>,
    next: std::cell::Cell<usize>,
}

impl VarUses {
    fn new(a: &Analysis) -> Self {
        VarUses::sorted(jaxpr_check::uses_of(&a.refs))
    }

    /// Uses already sorted by position.
    fn sorted(uses: Vec<(u32, VarId)>) -> Self {
        VarUses {
            uses,
            next: Default::default(),
        }
    }

    /// The variable used at `start`.
    pub fn get(&self, start: &u32) -> Option<&VarId> {
        /// How far past the last lookup to look before searching.
        const NEAR: usize = 4;
        let from = self.next.get().min(self.uses.len());
        let near = &self.uses[from..(from + NEAR).min(self.uses.len())];
        let k = match near.iter().position(|(at, _)| at == start) {
            Some(k) => from + k,
            None => self.uses.binary_search_by_key(start, |&(at, _)| at).ok()?,
        };
        self.next.set(k + 1);
        Some(&self.uses[k].1)
    }
}

impl<'f> Syntax<'f> {
    pub fn new(file: &'f ast::SourceFile, a: &Analysis) -> Self {
        let mut jaxprs = HashMap::default();
        for j in file.lets.iter().map(|l| &l.jaxpr).chain(&file.main) {
            index_jaxpr(j, &mut jaxprs);
        }
        Syntax {
            uses: VarUses::new(a),
            jaxprs,
            eqn: None,
            base: None,
        }
    }

    /// The syntax of the `let` jaxprs alone, with the uses in them (sorted
    /// by position): what [`Syntax::of_eqn`] views fall back to.
    pub fn of_lets(lets: &'f [ast::LetJaxpr], uses: Vec<(u32, VarId)>) -> Self {
        let mut jaxprs = HashMap::default();
        for l in lets {
            index_jaxpr(&l.jaxpr, &mut jaxprs);
        }
        Syntax {
            uses: VarUses::sorted(uses),
            jaxprs,
            eqn: None,
            base: None,
        }
    }

    /// The syntax of one top-level equation of the main jaxpr (the
    /// equation, the jaxprs of its parameters, and the uses in it sorted by
    /// position), over `lets`; `None`: of the main jaxpr's outputs.
    pub fn of_eqn(
        lets: &'f Syntax<'f>,
        eqn: Option<&'f ast::Eqn>,
        uses: Vec<(u32, VarId)>,
    ) -> Self {
        let mut jaxprs = HashMap::default();
        for p in eqn.iter().flat_map(|e| &e.params) {
            index_expr(&p.value, &mut jaxprs);
        }
        Syntax {
            uses: VarUses::sorted(uses),
            jaxprs,
            eqn,
            base: Some(lets),
        }
    }

    /// The syntax of checked equation `id`.
    pub fn eqn(&self, a: &Analysis, id: EqnId) -> Option<&'f ast::Eqn> {
        let info = a.eqn(id);
        if let Some(e) = self.eqn.filter(|e| e.range == info.range) {
            return Some(e);
        }
        let eqns = &self.jaxpr(a.jaxpr(info.jaxpr).range)?.eqns;
        let k = eqns
            .binary_search_by_key(&info.range.start, |e| e.range.start)
            .ok()?;
        Some(&eqns[k])
    }

    /// The syntax of the jaxpr whose range is `range`.
    pub fn jaxpr(&self, range: TextRange) -> Option<&'f ast::Jaxpr> {
        match self.jaxprs.get(&range.start) {
            Some(&j) => Some(j),
            None => self.base?.jaxpr(range),
        }
    }

    /// The variable used at `start`.
    pub fn use_at(&self, start: u32) -> Option<VarId> {
        match self.uses.get(&start) {
            Some(&v) => Some(v),
            None => self.base?.use_at(start),
        }
    }

    /// A checked jaxpr's equations, each with its id, and its outputs: what
    /// a back end walks to lower its body.
    pub fn body<'a>(
        &self,
        a: &'a Analysis,
        j: JaxprId,
    ) -> LowerResult<(
        impl Iterator<Item = (&'f ast::Eqn, EqnId)> + use<'a, 'f>,
        &'f [ast::Atom],
    )> {
        let info = a.jaxpr(j);
        let Some(syn) = self.jaxpr(info.range) else {
            return internal(info.range, "no syntax for this jaxpr");
        };
        if let Some(e) = syn.eqns.get(info.eqns.len()) {
            return internal(e.range, "equation not checked");
        }
        Ok((syn.eqns.iter().zip(info.eqns.iter().copied()), &syn.outvars))
    }
}

/// Indexes jaxpr `j` and the jaxprs nested in it by the start of their range.
fn index_jaxpr<'f>(j: &'f ast::Jaxpr, out: &mut HashMap<u32, &'f ast::Jaxpr>) {
    index_nested(vec![j], Vec::new(), out);
}

/// Indexes the jaxprs in parameter value `x` (and those nested in them).
fn index_expr<'f>(x: &'f Expr, out: &mut HashMap<u32, &'f ast::Jaxpr>) {
    index_nested(Vec::new(), vec![x], out);
}

/// Indexes `jaxprs`, the jaxprs in the parameter values `values`, and every
/// jaxpr nested in them (in parameters, and the `let`s a parameter value
/// holds). Iterative: a program's nesting depth is not bounded by this
/// walk's stack.
fn index_nested<'f>(
    mut jaxprs: Vec<&'f ast::Jaxpr>,
    mut values: Vec<&'f Expr>,
    out: &mut HashMap<u32, &'f ast::Jaxpr>,
) {
    loop {
        while let Some(j) = jaxprs.pop() {
            out.insert(j.range.start, j);
            jaxprs.extend(j.lets.iter().map(|l| &l.jaxpr));
            values.extend(
                j.eqns
                    .iter()
                    .flat_map(|e| e.params.iter().map(|p| &p.value)),
            );
        }
        let Some(x) = values.pop() else {
            return;
        };
        match &x.kind {
            ExprKind::Jaxpr(j) => jaxprs.push(j),
            ExprKind::Tuple(xs) | ExprKind::List(xs) => values.extend(xs.iter()),
            // Named tuples of jaxprs (`custom_linear_solve`'s `jaxprs`).
            ExprKind::Call(c) => values.extend(c.args.iter().map(|a| &a.value)),
            _ => {}
        }
    }
}

/// The result types of an equation: its variables' types, or the printed
/// type of a dropped binder.
pub fn result_types(a: &Analysis, e: &ast::Eqn, id: EqnId) -> Vec<AType> {
    result_type_refs(a, e, id)
        .into_iter()
        .map(Cow::into_owned)
        .collect()
}

/// [`result_types`], borrowing the variables' types from the analysis.
pub fn result_type_refs<'a>(a: &'a Analysis, e: &ast::Eqn, id: EqnId) -> Vec<Cow<'a, AType>> {
    let info = a.eqn(id);
    e.outs
        .iter()
        .enumerate()
        .map(|(i, bnd)| match info.outs.get(i).copied().flatten() {
            Some(v) => Cow::Borrowed(&a.var(v).ty),
            None => Cow::Owned(binder_type(bnd)),
        })
        .collect()
}

/// A lowering gives one value per binder of its equation.
pub fn expect_results(e: &ast::Eqn, results: usize) -> LowerResult<()> {
    if results == e.outs.len() {
        return Ok(());
    }
    internal(
        e.primitive.range,
        format!(
            "the lowering of `{}` gave {} results for {} binders",
            e.primitive.text,
            results,
            e.outs.len()
        ),
    )
}

/// The binders (constvars, then invars) of a nested jaxpr that a back end
/// calls with `inputs` values.
pub fn nested_binders(
    a: &Analysis,
    j: JaxprId,
    inputs: usize,
    at: TextRange,
) -> LowerResult<Vec<VarId>> {
    let info = a.jaxpr(j);
    let binders: Vec<VarId> = info.constvars.iter().chain(&info.invars).copied().collect();
    if !info.constvars.is_empty() && inputs == info.invars.len() {
        // A closed jaxpr's constants, as JAX prints a nested one
        // (`{ lambda bo:f32[] bp:f32[]; bm:bool[12,12] ...`): their names
        // and types are printed, their values are not, and the call site
        // passes only the jaxpr's arguments.
        let names: Vec<String> = info
            .constvars
            .iter()
            .map(|&v| format!("`{}`", a.var(v).name))
            .collect();
        return err(
            at,
            format!(
                "the constants {} of this nested jaxpr have no values in the text (JAX prints a closed jaxpr's constants by name only), so it cannot be built",
                names.join(", ")
            ),
        );
    }
    if binders.len() != inputs {
        return internal(
            at,
            format!(
                "nested jaxpr has {} inputs, the lowering passes {}",
                binders.len(),
                inputs
            ),
        );
    }
    Ok(binders)
}

/// The refusal of an operand or output that JAX printed as `_` and that
/// is read ([`unread_output`] says which outputs are not): its printer
/// names `_` every variable that the outermost jaxpr does not use, and a
/// `jit`'s nested jaxpr takes the names of the call's operands and results,
/// `_` included, so a nested jaxpr may read or return a `_` whose value
/// the text does not identify.
pub fn unnamed_value<T>(at: TextRange) -> LowerResult<T> {
    Err(LowerError {
        range: at,
        message: "this value is printed as `_` (JAX's printer names so every variable the outermost jaxpr does not use), so the text does not say which value it is: it cannot be built".to_string(),
        help: Some(
            "a `_` is built only where nothing reads it: an output of a nested jaxpr whose result the call drops (docs/build-refusals.md)"
                .into(),
        ),
        kind: LowerErrorKind::Refused,
    })
}

/// The dtype and shape of output `k` (at `at`) of nested jaxpr `j`,
/// printed as `_`, when nothing reads it, so that a back end builds it as
/// zeros of that type; else the J0012 of [`unnamed_value`].
///
/// JAX's printer names a `jit`'s nested outputs after the call's results,
/// so the outputs `in (b, _)` of `_:f32[4,4] b:f32[4] = jit[...]` are `_`
/// where the call drops its result. Such an output is read nowhere when it
/// flows only to that dropped result: the results of a call-like primitive
/// (the registry's `Call` family, one result per output of its jaxpr), of
/// a `cond` (one per output of each branch), and the stacked outputs `ys`
/// of a `scan` (after its `num_carry` carried values). A loop's carried
/// output is read by the next iteration, and a `let` jaxpr's or the main
/// jaxpr's by every caller: those stay refused. The value may be read in
/// the enclosing jaxpr only as another `_`, which is held to the same
/// rule. The type is the call site's dropped binder's (`_:f32[4,4]`, as
/// the checker resolved it: symbolic dimensions included), less the
/// leading axis of a stacked one.
pub fn unread_output(
    a: &Analysis,
    syntax: &Syntax<'_>,
    j: JaxprId,
    k: usize,
    at: TextRange,
) -> LowerResult<(DType, Shape)> {
    let info = a.jaxpr(j);
    let JaxprOrigin::Param { eqn, param, .. } = &info.origin else {
        return unnamed_value(at);
    };
    let site = a.eqn(*eqn);
    let one_result_per_output = info.outs.len() == site.outs.len();
    let call = site
        .prim
        .map(Prim::row)
        .is_some_and(|p| p.family == Family::Call && p.jaxpr_params.contains(&param.as_str()));
    let stacked = match (site.prim, param.as_str()) {
        _ if call && one_result_per_output => false,
        (Some(Prim::Cond), "branches" | "branch_jaxprs") if one_result_per_output => false,
        (Some(Prim::Scan), "jaxpr") if one_result_per_output => {
            let Some(e) = syntax.eqn(a, *eqn) else {
                return internal(at, "no syntax for the equation calling this jaxpr");
            };
            match e.param("num_carry").and_then(|p| p.value.as_int()) {
                Some(n) if n >= 0 && k >= n as usize => true,
                _ => return unnamed_value(at),
            }
        }
        _ => return unnamed_value(at),
    };
    // A dropped binder has a variable (named `_`, which no use resolves
    // to) with the type the checker resolved from its printed one.
    let dropped = site
        .outs
        .get(k)
        .copied()
        .flatten()
        .map(|v| a.var(v))
        .filter(|v| v.name == "_");
    match dropped {
        Some(result) => {
            let mut shape = result.ty.shape.clone();
            if stacked && !shape.is_empty() {
                shape.remove(0);
            }
            // A dimension variable (Catalyst's dynamic shapes) is the
            // caller's, with no value in the nested jaxpr.
            let static_or_symbolic = shape
                .iter()
                .all(|d| matches!(d, Dim::Const(_) | Dim::Sym(_)));
            let Some(dtype) = result.ty.dtype.clone().filter(|_| static_or_symbolic) else {
                return err(
                    result.binder_range,
                    "this result is dropped and the nested jaxpr returns it as `_`, which is built as zeros of the result's type, but that type is not an array whose dimensions are numbers or symbols",
                );
            };
            Ok((dtype, shape))
        }
        _ => unnamed_value(at),
    }
}

/// The type of a dropped binder (`_:f32[3]`): it has no variable, and only
/// its tensor type matters.
fn binder_type(b: &ast::Binder) -> AType {
    let Some(t) = &b.ty else {
        return AType {
            dtype: None,
            shape: Shape::new(),
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
pub fn expr_text(e: &Expr) -> String {
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
pub fn expr_poly(e: &Expr) -> Option<Poly> {
    Some(match &e.kind {
        ExprKind::Int(i) => Poly::constant(*i),
        // `np.int64(0)`: JAX prints a numpy integer of a parameter so.
        ExprKind::Call(c) if c.callee.starts_with("np.") && c.args.len() == 1 => {
            expr_poly(&c.args[0].value)?
        }
        ExprKind::Path(p) if !p.contains('.') => Poly::symbol(p),
        ExprKind::Neg(x) => expr_poly(x)?.neg().ok()?,
        ExprKind::Pow(x, e) => expr_poly(x)?.pow(*e).ok()?,
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
pub fn solvable<T>(p: &Poly, known: &HashMap<Symbol, T>) -> Option<(Symbol, i64, Poly)> {
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

// ---- untyped literals ----

/// The text of an untyped literal operand ([`jaxpr_check::literals::untyped_literal_text`]),
/// with variable uses resolved through `syntax`.
pub fn untyped_literal_text<'a>(syntax: &Syntax<'_>, x: &'a ast::Atom) -> Option<&'a str> {
    literals::untyped_literal_text(&|n: &ast::Name| syntax.use_at(n.range.start), x)
}

pub use literals::literal_dtype_of_text;

/// The dtype of each operand of equation `e` that is an untyped literal, as
/// the checker's layer defines it ([`jaxpr_check::literals::untyped_literal_dtypes`]),
/// with variable uses resolved through `syntax`.
pub fn untyped_literal_dtypes<T: Borrow<AType>>(
    a: &Analysis,
    syntax: &Syntax<'_>,
    e: &ast::Eqn,
    id: EqnId,
    outs: &[T],
) -> Vec<Option<DType>> {
    literals::untyped_literal_dtypes(
        a,
        &|n: &ast::Name| syntax.use_at(n.range.start),
        e,
        id,
        outs,
    )
}

#[cfg(test)]
mod tests {
    use super::{Backend, Syntax, complex_literal, err, missing_lowering, untyped_literal_dtypes};
    use jaxpr_syntax::TextRange;
    use jaxpr_syntax::diagnostics::DiagKind;
    use jaxpr_types::{AType, DType};

    /// A refusal is J0012; a back end contradicting the registry is a bug,
    /// J0016 with the help line asking for a report, never a J0012.
    #[test]
    fn bugs_are_internal_errors_and_refusals_unsupported() {
        let at = TextRange::new(3, 7);
        let refused = err::<()>(at, "no lowering yet")
            .unwrap_err()
            .into_diagnostic();
        assert_eq!(
            (refused.kind, refused.kind.code()),
            (DiagKind::Unsupported, "J0012")
        );
        let bug = missing_lowering::<()>("sin", at, Backend::Native)
            .unwrap_err()
            .into_diagnostic();
        assert_eq!(
            (bug.kind, bug.kind.code(), bug.range),
            (DiagKind::InternalError, "J0016", at)
        );
        assert!(
            bug.message
                .starts_with("the primitive registry marks `sin` as lowered"),
            "{}",
            bug.message
        );
        assert!(
            bug.help
                .as_deref()
                .is_some_and(|h| h.contains("a bug in jaxpr")),
            "{:?}",
            bug.help
        );
    }

    /// The dtypes of the untyped literals among the operands of the first
    /// equation of `text`'s main jaxpr, whose results have types `outs`.
    fn literal_dtypes(text: &str, outs: &[AType]) -> Vec<Option<DType>> {
        let parse = jaxpr_syntax::parse(text);
        let a = jaxpr_check::check(&parse.file);
        let syntax = Syntax::new(&parse.file, &a);
        let e = &parse.file.main.as_ref().unwrap().eqns[0];
        let id = a.eqn_with_primitive_at(e.primitive.range.start).unwrap();
        untyped_literal_dtypes(&a, &syntax, e, id, outs)
    }

    /// Catalyst 0.10 (jax 0.4.28) prints its loops' and `cond`s' literals
    /// untyped: each has the dtype of the binder it is passed to, or the
    /// library reads 8 bytes of a 4-byte `0` (a `while_loop` counter).
    #[test]
    fn untyped_literals_of_catalysts_control_flow_have_their_binders_dtypes() {
        let while_loop = "{ lambda ; a:i64[]. let
    b:f64[] _:i64[] = while_loop[
      body_jaxpr={ lambda ; d:f64[] g:i64[]. let i:i64[] = add g 1 in (d, i) }
      body_nconsts=0
      cond_jaxpr={ lambda ; k:i64[] l:i64[]. let m:bool[] = lt l k in (m,) }
      cond_nconsts=1
      nimplicit=0
      preserve_dimensions=True
    ] a 2.0 0
  in (b,) }";
        assert_eq!(
            literal_dtypes(while_loop, &[]),
            [
                None,
                Some(DType::Float(jaxpr_types::FloatKind::F64)),
                Some(DType::Int(64))
            ]
        );
        let for_loop = "{ lambda ; a:f64[]. let
    b:f64[] = for_loop[
      apply_reverse_transform=False
      body_jaxpr={ lambda ; c:f64[] i:i64[] x:f64[]. let y:f64[] = add x c in (y,) }
      body_nconsts=1
      nimplicit=0
      preserve_dimensions=True
    ] a 0 10 1 0 1.0
  in (b,) }";
        let i64 = Some(DType::Int(64));
        assert_eq!(
            literal_dtypes(for_loop, &[]),
            [
                None,
                i64.clone(),
                i64.clone(),
                i64.clone(),
                i64,
                Some(DType::Float(jaxpr_types::FloatKind::F64))
            ]
        );
        let cond = "{ lambda ; a:bool[] b:i64[]. let
    c:i64[] = cond[
      branch_jaxprs=[{ lambda ; x:i64[]. let  in (x,) }, { lambda ; y:i64[]. let z:i64[] = add y 1 in (z,) }]
      nimplicit_outputs=0
    ] True 3
  in (c,) }";
        assert_eq!(
            literal_dtypes(cond, &[]),
            [Some(DType::Bool), Some(DType::Int(64))]
        );
    }

    /// jax 0.4.30 prints `random_seed[impl=fry] 0`: the seed is a Python
    /// integer (i32 with 64-bit types off), not a key of the result's dtype.
    #[test]
    fn an_untyped_seed_is_an_integer() {
        let seed = "{ lambda ; . let
    g:key<fry>[] = random_seed[impl=fry] 0
  in (g,) }";
        let outs = [AType::scalar(DType::Key("fry".into()))];
        assert_eq!(literal_dtypes(seed, &outs), [Some(DType::Int(32))]);
    }

    /// Catalyst 0.12 prints a gate's angle untyped (`qinst[...] j 2.2`):
    /// Catalyst traces with 64-bit types on, so it is f64 (an f32 `2.2`
    /// moved the expectation value by 1e-8).
    #[test]
    fn an_untyped_gate_angle_is_f64() {
        let gate = "{ lambda ; . let
    j:AbstractQbit() = qinst[adjoint=False ctrl_len=0 op=RX params_len=1 qubits_len=1] j 2.2
  in () }";
        assert_eq!(
            literal_dtypes(gate, &[])[1],
            Some(DType::Float(jaxpr_types::FloatKind::F64))
        );
    }

    #[test]
    fn python_reprs_of_complex_numbers_are_read() {
        assert_eq!(complex_literal("(1+0j)"), Some((1.0, 0.0)));
        assert_eq!(complex_literal("0j"), Some((0.0, 0.0)));
        assert_eq!(complex_literal("-2.5j"), Some((0.0, -2.5)));
        assert_eq!(complex_literal("(1e-05-3e+02j)"), Some((1e-5, -300.0)));
        assert_eq!(complex_literal("(-inf+0j)"), Some((f64::NEG_INFINITY, 0.0)));
        assert_eq!(complex_literal("3"), Some((3.0, 0.0)));
        let (re, im) = complex_literal("(nan-infj)").unwrap();
        assert!(re.is_nan() && im == f64::NEG_INFINITY);
        assert!(complex_literal("(1+j)").is_none());
        assert!(complex_literal("(1+2)").is_none());
    }
}
