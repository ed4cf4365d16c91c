//! Printed types: a binder's, a literal's or a result's type expression
//! resolved to an [`AType`], each dimension a constant, a dimension
//! variable, a symbolic polynomial, or (in a result's type) a de Bruijn
//! index to an operand or result of its equation.

use crate::checker::Checker;
use crate::operands::Operand;
use crate::{RefKind, VarRef, dims, rules};
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast::{self, DbIdxKind, Expr, ExprKind};
use jaxpr_syntax::diagnostics::{DiagKind, Diagnostic};
use jaxpr_types::{AType, DType, Dim, DimNames, Poly, Shape, VarId};

impl Checker {
    /// Resolves a printed type. `call` gives the operands and results of the
    /// equation whose result types are being read, for leaked `InDBIdx`/`OutDBIdx`.
    pub(crate) fn resolve_type(
        &mut self,
        t: &ast::TypeExpr,
        call: Option<(&[Operand], &[Option<VarId>])>,
    ) -> AType {
        if let Some(of) = t.of() {
            // JAX 0.4 prints the array's dtype by its NumPy name: `Ref{float32[3]}`.
            let short = DType::from_short(&of.dtype.text)
                .is_none()
                .then(|| DType::from_numpy(&of.dtype.text))
                .flatten();
            let inner = match short {
                Some(d) => {
                    let mut of = of.clone();
                    of.dtype.text = d.to_string().into();
                    self.resolve_type(&of, call)
                }
                None => self.resolve_type(of, call),
            };
            return AType {
                dtype: inner.dtype.map(|d| DType::reference(&t.dtype.text, &d)),
                shape: inner.shape,
            };
        }
        if let Some(args) = t.args() {
            return AType {
                dtype: Some(rules::abstract_value(&t.dtype.text, args)),
                shape: Shape::new(),
            };
        }
        let dtype = match DType::from_short(&t.dtype.text) {
            Some(d) => Some(d),
            None => {
                self.push_diag(Diagnostic::error(
                    DiagKind::Syntax,
                    t.dtype.range,
                    format!("unknown dtype `{}`", t.dtype.text),
                ));
                None
            }
        };
        let mut shape: Shape = t.dims.iter().map(|e| self.resolve_dim(e, call)).collect();
        for (d, e) in shape.iter_mut().zip(&t.dims) {
            if let Dim::Const(c) = *d
                && c < 0
            {
                self.push_diag(Diagnostic::error(
                    DiagKind::ShapeMismatch,
                    e.range,
                    format!("a dimension cannot be negative: {c}"),
                ));
                // Reported once, here: not again where the type is compared.
                *d = Dim::Unknown;
            }
        }
        AType { dtype, shape }
    }

    /// A dimension expression: a constant, a dimension variable (an integer
    /// scalar bound earlier in this jaxpr), or a symbolic polynomial.
    pub(crate) fn resolve_dim(
        &mut self,
        e: &Expr,
        call: Option<(&[Operand], &[Option<VarId>])>,
    ) -> Dim {
        match &e.kind {
            // What `dim_poly` makes of an integer, without building a polynomial.
            ExprKind::Int(i) => Dim::Const(*i),
            // The size, whatever mesh axis it is sharded over.
            ExprKind::Sharded(size, _) => self.resolve_dim(size, call),
            ExprKind::Path(p) if p.as_ref() == "None" => Dim::Unknown,
            ExprKind::Path(name) if !name.contains('.') => {
                let pending = self.pending_results.get(name.as_ref()).copied();
                let var = pending.or_else(|| self.env.names.get(name.as_ref()).copied());
                if let Some(v) = var.filter(|_| !self.input_symbols.contains(name.as_ref())) {
                    let info = self.a.var(v);
                    if info.ty.is_int_scalar() {
                        self.a.refs.push(VarRef {
                            range: e.range,
                            var: v,
                            kind: RefKind::DimUse,
                        });
                        return Dim::Var(v);
                    }
                    if info.ty.is_scalar() && info.ty.dtype.is_some() {
                        if !self.bad_dims.insert(v) {
                            return Dim::Unknown;
                        }
                        let (ty, r) = (self.a.ty(&info.ty), info.range);
                        self.push_diag(
                            Diagnostic::error(
                                DiagKind::DimensionScope,
                                e.range,
                                format!("`{name}` is used as a dimension but it is {ty}, not an integer scalar"),
                            )
                            .with_related(r, format!("`{name}` is bound here as {ty}"))
                            .with_help("a dimension variable must be an integer scalar (e.g. `i64[]`) bound before the type that uses it"),
                        );
                        return Dim::Unknown;
                    }
                }
                self.symbol_use(name, e.range);
                Dim::Sym(jaxpr_types::intern_poly(Poly::symbol(name)))
            }
            ExprKind::DbIdx(kind, k) => {
                let k = *k as usize;
                match (kind, call) {
                    (DbIdxKind::InOfCall, Some((ops, _))) if k < ops.len() => {
                        dims::operand_value(&ops[k])
                    }
                    (DbIdxKind::Out, Some((_, outs))) if k < outs.len() => {
                        outs[k].map_or(Dim::Unknown, Dim::Var)
                    }
                    _ => self.misplaced_db_idx(kind.name(), e.range),
                }
            }
            ExprKind::Call(c) if DbIdxKind::from_name(&c.callee).is_some() => {
                self.misplaced_db_idx(&c.callee, e.range)
            }
            _ => match self.dim_poly(e) {
                Ok(p) => Dim::from_poly(p),
                Err(msg) => {
                    self.push_diag(Diagnostic::error(DiagKind::InvalidParameter, e.range, msg));
                    Dim::Unknown
                }
            },
        }
    }

    /// A de Bruijn index where none can be resolved: outside an equation's
    /// result types, past its operands or results, or not `NAME(val=K)`.
    fn misplaced_db_idx(&mut self, callee: &str, range: TextRange) -> Dim {
        self.push_diag(Diagnostic::error(
            DiagKind::DimensionScope,
            range,
            format!("`{callee}` does not refer to an operand or result of this equation"),
        ));
        Dim::Unknown
    }

    /// Arithmetic dimension expressions (`2*b`, `b + 15`, `floordiv(a, 2)`).
    fn dim_poly(&mut self, e: &Expr) -> Result<Poly, String> {
        use jaxpr_syntax::ast::BinOp;
        let err = |e: jaxpr_types::poly::PolyError| format!("invalid dimension expression: {e:?}");
        Ok(match &e.kind {
            ExprKind::Int(i) => Poly::constant(*i),
            ExprKind::Path(name) if !name.contains('.') => {
                if let Some(&v) = self.env.names.get(name.as_ref())
                    && !self.input_symbols.contains(name.as_ref())
                    && self.a.var(v).ty.is_int_scalar()
                {
                    return Err(format!(
                        "dimension variable `{name}` cannot take part in arithmetic in a type; only symbolic dimensions can"
                    ));
                }
                self.symbol_use(name, e.range);
                Poly::symbol(name)
            }
            ExprKind::Neg(x) => self.dim_poly(x)?.neg().map_err(err)?,
            ExprKind::Pow(x, n) => {
                // Far beyond any printed shape; bounds the multiplications.
                if *n > 64 {
                    return Err(format!("the exponent {n} is too large for a dimension"));
                }
                let x = self.dim_poly(x)?;
                let mut p = Poly::constant(1);
                for _ in 0..*n {
                    p = p.mul(&x).map_err(err)?;
                }
                p
            }
            ExprKind::Binary(op, l, r) => {
                let (l, r) = (self.dim_poly(l)?, self.dim_poly(r)?);
                match op {
                    BinOp::Add => l.add(&r),
                    BinOp::Sub => l.sub(&r),
                    BinOp::Mul => l.mul(&r),
                    BinOp::FloorDiv => l.floordiv(&r),
                    BinOp::Mod => l.modulo(&r),
                }
                .map_err(err)?
            }
            ExprKind::Call(c)
                if matches!(c.callee.as_ref(), "floordiv" | "mod" | "max" | "min")
                    && c.args.len() == 2 =>
            {
                let (callee, args) = (&c.callee, &c.args);
                let (l, r) = (
                    self.dim_poly(&args[0].value)?,
                    self.dim_poly(&args[1].value)?,
                );
                match callee.as_ref() {
                    "floordiv" => l.floordiv(&r),
                    "mod" => l.modulo(&r),
                    "max" => Poly::max(&l, &r),
                    _ => Poly::min(&l, &r),
                }
                .map_err(err)?
            }
            ExprKind::Call(_) if e.as_int().is_some() => Poly::constant(e.as_int().unwrap_or(0)),
            _ => return Err(
                "expected a dimension (an integer, a dimension variable or a symbolic expression)"
                    .to_string(),
            ),
        })
    }
}
