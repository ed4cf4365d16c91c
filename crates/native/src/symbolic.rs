//! Primitives whose parameters are symbolic dimensions (jax.export's
//! shape-polymorphic programs: `slice[limit_indices=(b, 5)]`): the
//! parameters are evaluated from the symbols' values at run time, as the
//! extents of symbolic shapes are, and checked before they are used.

use super::{Arr, Codegen, Cx, Env, dtype};
use crate::MAX_BYTES;
use crate::random;
use inkwell::IntPredicate;
use inkwell::values::IntValue;
use jaxpr_check::registry::Prim;
use jaxpr_lower::symbol_value;
use jaxpr_lower::{LowerResult, err};
use jaxpr_syntax::TextRange;
use jaxpr_types::AType;
use jaxpr_types::Dim;
use jaxpr_types::Poly;
use jaxpr_types::poly::Factor;

/// Whether the tuple parameter `name` is present and not all integers.
fn symbolic(cx: &Cx<'_, '_>, name: &str) -> bool {
    cx.e.param(name)
        .is_some_and(|p| !p.value.is_none() && p.value.as_int_seq().is_none())
}

impl<'c> Codegen<'c, '_> {
    /// The lowering of an equation with symbolic parameters, or None when
    /// its parameters are integers (the static lowerings of `ops.rs`).
    pub(crate) fn lower_symbolic(
        &self,
        env: &Env<'c>,
        cx: &Cx<'_, 'c>,
    ) -> LowerResult<Option<Arr<'c>>> {
        Ok(Some(match cx.prim {
            Prim::Slice
                if ["start_indices", "limit_indices", "strides"]
                    .iter()
                    .any(|n| symbolic(cx, n)) =>
            {
                let start = cx.dims_param("start_indices")?;
                let limit = cx.dims_param("limit_indices")?;
                let strides = cx.dims_param_or("strides", vec![Dim::Const(1); start.len()])?;
                let src = &cx.args[0];
                let r = src.v.dims.len();
                if start.len() != r || limit.len() != r || strides.len() != r {
                    return err(cx.at(), "`slice` parameters do not match the operand");
                }
                let values = |ds: &[Dim]| {
                    ds.iter()
                        .map(|d| self.dim(env, d, cx.at()))
                        .collect::<LowerResult<Vec<_>>>()
                };
                let (start, limit, strides) = (values(&start)?, values(&limit)?, values(&strides)?);
                let mut out: Vec<IntValue> = Vec::with_capacity(r);
                for k in 0..r {
                    let bad = self.or(
                        self.or(
                            self.icmp(IntPredicate::SLT, strides[k], self.i64(1)),
                            self.icmp(IntPredicate::SLT, limit[k], start[k]),
                        ),
                        self.icmp(IntPredicate::SLT, src.v.dims[k], limit[k]),
                    );
                    self.fail_if(
                        bad,
                        &format!(
                            "`slice` at byte {}: its bounds do not fit the operand",
                            cx.at().start
                        ),
                        &[],
                    );
                    // ceil((limit - start) / stride), all non-negative here.
                    let span = self.add(
                        self.sub(limit[k], start[k]),
                        self.sub(strides[k], self.i64(1)),
                    );
                    out.push(
                        self.builder
                            .build_int_signed_div(span, strides[k], "")
                            .expect("div"),
                    );
                }
                self.remap(&dtype(&cx.outs[0])?, &out, src, None, &mut |idx| {
                    let at: Vec<IntValue> = (0..r)
                        .map(|k| self.add(start[k], self.mul(idx[k], strides[k])))
                        .collect();
                    Ok((self.offset(&at, &src.v.dims), None))
                })?
            }
            _ => return Ok(None),
        }))
    }
}

impl<'c, 'f> Codegen<'c, 'f> {
    /// A dimension's run-time extent. Extents computed from run-time values
    /// (dimension variables, symbolic dimensions) are checked before
    /// anything is sized by them: the call fails, naming the dimension,
    /// when one is negative, above [`MAX_BYTES`] or overflows on the way.
    pub fn dim(&self, env: &Env<'c>, d: &Dim, at: TextRange) -> LowerResult<IntValue<'c>> {
        match d {
            Dim::Const(c) => Ok(self.i64(jaxpr_lower::walk::static_extent(*c, at)?)),
            Dim::Var(v) => match env.vals.get(v) {
                Some(x) => {
                    let value = self.scalar_i64(x, at)?;
                    let name = &self.analysis.var(*v).name;
                    self.fail_unless_extent(value, &format!("the dimension variable `{name}`"));
                    Ok(value)
                }
                None => err(
                    at,
                    format!(
                        "the dimension variable `{}` has no value here",
                        self.analysis.var(*v).name
                    ),
                ),
            },
            Dim::Sym(p) => self.sym_extent(env, p, at, &format!("the dimension `{p}`")),
            Dim::Unknown => err(at, "a dimension that is not known cannot be built"),
        }
    }

    pub fn dims(&self, env: &Env<'c>, t: &AType, at: TextRange) -> LowerResult<Vec<IntValue<'c>>> {
        random::physical(t)
            .shape
            .iter()
            .map(|d| self.dim(env, d, at))
            .collect()
    }

    /// Fails the call unless `0 <= value <= MAX_BYTES`; `what` names the
    /// extent in the message.
    pub(crate) fn fail_unless_extent(&self, value: IntValue<'c>, what: &str) {
        let bad = self.or(
            self.icmp(IntPredicate::SLT, value, self.i64(0)),
            self.icmp(IntPredicate::SGT, value, self.i64(MAX_BYTES)),
        );
        self.fail_if(
            bad,
            &format!("{what} is %lld: an extent must be between 0 and {MAX_BYTES}"),
            &[value.into()],
        );
    }

    /// A symbolic dimension's value, checked as [`Codegen::dim`] checks extents.
    pub(crate) fn sym_extent(
        &self,
        env: &Env<'c>,
        p: &Poly,
        at: TextRange,
        what: &str,
    ) -> LowerResult<IntValue<'c>> {
        let (value, overflow) = self.poly(env, p, at)?;
        self.fail_if(overflow, &format!("{what} overflows 64 bits"), &[]);
        self.fail_unless_extent(value, what);
        Ok(value)
    }

    /// A polynomial's value in checked arithmetic: the value and whether
    /// any step overflowed (then the value is meaningless).
    pub(crate) fn poly(
        &self,
        env: &Env<'c>,
        p: &Poly,
        at: TextRange,
    ) -> LowerResult<(IntValue<'c>, IntValue<'c>)> {
        let mut over = self.context.bool_type().const_zero();
        let mut sum = self.i64(0);
        for (mono, coef) in p.terms() {
            let mut prod = self.i64(coef);
            for (f, exp) in mono {
                let x = self.factor(env, f, at, &mut over)?;
                for _ in 0..*exp {
                    prod = self.checked("llvm.smul.with.overflow", prod, x, &mut over)?;
                }
            }
            sum = self.checked("llvm.sadd.with.overflow", sum, prod, &mut over)?;
        }
        Ok((sum, over))
    }

    /// `x OP y` by an LLVM `*.with.overflow` intrinsic; its overflow bit is
    /// or-ed into `over`.
    pub(crate) fn checked(
        &self,
        intrinsic: &str,
        x: IntValue<'c>,
        y: IntValue<'c>,
        over: &mut IntValue<'c>,
    ) -> LowerResult<IntValue<'c>> {
        let r = self
            .intrinsic(
                intrinsic,
                self.context.i64_type().into(),
                &[x.into(), y.into()],
            )?
            .into_struct_value();
        let value = self.builder.build_extract_value(r, 0, "").expect("extract");
        let bit = self.builder.build_extract_value(r, 1, "").expect("extract");
        *over = self.or(*over, bit.into_int_value());
        Ok(value.into_int_value())
    }

    pub(crate) fn factor(
        &self,
        env: &Env<'c>,
        f: &Factor,
        at: TextRange,
        over: &mut IntValue<'c>,
    ) -> LowerResult<IntValue<'c>> {
        if let Factor::Sym(s) = f {
            return symbol_value(&env.syms, s, at);
        }
        let (x, y) = f.operands().expect("operation factor");
        let ((x, ox), (y, oy)) = (self.poly(env, x, at)?, self.poly(env, y, at)?);
        *over = self.or(*over, self.or(ox, oy));
        // Divisors of dimension expressions are positive; guard anyway.
        let y1 = self.select_int(self.icmp(IntPredicate::SLE, y, self.i64(0)), self.i64(1), y);
        // Floor division and modulo: a dividend may be negative
        // (`mod(- 2, b)`), where truncation rounds the other way.
        let r = self.builder.build_int_signed_rem(x, y1, "").expect("rem");
        let below = self.icmp(IntPredicate::SLT, r, self.i64(0));
        Ok(match f {
            Factor::FloorDiv(..) => {
                let q = self.builder.build_int_signed_div(x, y1, "").expect("div");
                self.select_int(below, self.sub(q, self.i64(1)), q)
            }
            Factor::Mod(..) => self.select_int(below, self.add(r, y1), r),
            Factor::Max(..) => self.select_int(self.icmp(IntPredicate::SGT, x, y), x, y),
            _ => self.select_int(self.icmp(IntPredicate::SLT, x, y), x, y),
        })
    }

    /// The element count of an array of extents `dims` about to be
    /// allocated, checked: every extent is at least 0 and the product of
    /// the nonzero ones at most `MAX_BYTES / size` (so no product of some
    /// of the extents, which loops and offsets compute, overflows either).
    /// `what` names the array in the message.
    pub(crate) fn checked_count(
        &self,
        dims: &[IntValue<'c>],
        size: i64,
        what: &str,
    ) -> IntValue<'c> {
        let limit = MAX_BYTES / size;
        let mut nonzero = self.i64(1);
        let mut count = self.i64(1);
        for (j, &d) in dims.iter().enumerate() {
            let nz = self.select_int(self.icmp(IntPredicate::EQ, d, self.i64(0)), self.i64(1), d);
            let room = self
                .builder
                .build_int_signed_div(self.i64(limit), nonzero, "")
                .expect("div");
            let bad = self.or(
                self.icmp(IntPredicate::SLT, d, self.i64(0)),
                self.icmp(IntPredicate::SGT, nz, room),
            );
            self.fail_if(
                bad,
                &format!(
                    "{what}: extent %lld of dimension {j} is negative or makes more than {limit} elements"
                ),
                &[d.into()],
            );
            nonzero = self.mul(nonzero, nz);
            count = self.mul(count, d);
        }
        count
    }

    // ---- the library -------------------------------------------------------------
}
