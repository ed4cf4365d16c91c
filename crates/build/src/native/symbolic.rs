//! Primitives whose parameters are symbolic dimensions (jax.export's
//! shape-polymorphic programs: `slice[limit_indices=(b, 5)]`): the
//! parameters are evaluated from the symbols' values at run time, as the
//! extents of symbolic shapes are, and checked before they are used.

use super::{Arr, Cx, Env, G, dtype};
use crate::{R, err};
use inkwell::IntPredicate;
use inkwell::values::IntValue;
use jaxpr_types::Dim;

/// Whether the tuple parameter `name` is present and not all integers.
fn symbolic(cx: &Cx<'_, '_>, name: &str) -> bool {
    cx.e.param(name)
        .is_some_and(|p| !p.value.is_none() && p.value.as_int_seq().is_none())
}

impl<'c> G<'c, '_> {
    /// The lowering of an equation with symbolic parameters, or None when
    /// its parameters are integers (the static lowerings of `ops.rs`).
    pub(crate) fn lower_symbolic(&self, env: &Env<'c>, cx: &Cx<'_, 'c>) -> R<Option<Arr<'c>>> {
        Ok(Some(match cx.name() {
            "slice" if ["start_indices", "limit_indices", "strides"].iter().any(|n| symbolic(cx, n)) => {
                let start = cx.dims_param("start_indices")?;
                let limit = cx.dims_param("limit_indices")?;
                let strides = cx.dims_param_or("strides", vec![Dim::Const(1); start.len()])?;
                let src = &cx.args[0];
                let r = src.v.dims.len();
                if start.len() != r || limit.len() != r || strides.len() != r {
                    return err(cx.at(), "`slice` parameters do not match the operand");
                }
                let values = |ds: &[Dim]| ds.iter().map(|d| self.dim(env, d, cx.at())).collect::<R<Vec<_>>>();
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
                        &format!("`slice` at byte {}: its bounds do not fit the operand", cx.at().start),
                        &[],
                    );
                    // ceil((limit - start) / stride), all non-negative here.
                    let span = self.add(self.sub(limit[k], start[k]), self.sub(strides[k], self.i64(1)));
                    out.push(self.b.build_int_signed_div(span, strides[k], "").expect("div"));
                }
                self.remap(&dtype(&cx.outs[0])?, &out, src, None, &mut |idx| {
                    let at: Vec<IntValue> = (0..r).map(|k| self.add(start[k], self.mul(idx[k], strides[k]))).collect();
                    Ok((self.offset(&at, &src.v.dims), None))
                })?
            }
            _ => return Ok(None),
        }))
    }
}
