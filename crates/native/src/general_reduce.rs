//! `reduce` and `reduce_window` with their combining function as a
//! `jaxpr` and their initial value as an operand (`lax.reduce`,
//! `lax.reduce_window` with a Python function). The function must be one
//! commutative binary primitive of its two inputs (`add c d`, `max c d`):
//! each result element then starts at the initial value and folds its
//! elements in order, as XLA's CPU loops do; a window's padding and
//! dilation holes are the initial value (XLA pads with it). Other
//! functions (several operands, several equations) are refused.

use super::{Arr, Codegen, Cx, Env, dtype};
use inkwell::values::IntValue;
use jaxpr_check::reductions::Combiner;
use jaxpr_check::registry::Prim;
use jaxpr_lower::{LowerResult, err};
use jaxpr_syntax::ast::{Atom, ExprKind};

/// The primitive of a `jaxpr` that is `{ lambda ; a b. let c = op a b in (c,) }`
/// (or `op b a`) for a commutative, associative `op`.
fn combiner(cx: &Cx<'_, '_>) -> Option<Combiner> {
    let ExprKind::Jaxpr(j) = &cx.e.param("jaxpr")?.value.kind else {
        return None;
    };
    let ([a, b], [e], [Atom::Var(out)]) = (&j.invars[..], &j.eqns[..], &j.outvars[..]) else {
        return None;
    };
    let op = Prim::from_name(&e.primitive.text).and_then(Combiner::of_prim)?;
    if !j.constvars.is_empty() {
        return None;
    }
    let ([r], [Atom::Var(x), Atom::Var(y)]) = (&e.outs[..], &e.args[..]) else {
        return None;
    };
    let names = [&*x.text, &*y.text];
    let inputs = names == [&*a.name.text, &*b.name.text] || names == [&*b.name.text, &*a.name.text];
    (inputs && a.name.text != b.name.text && r.name.text == out.text).then_some(op)
}

impl<'c> Codegen<'c, '_> {
    /// `reduce` or `reduce_window` with a `jaxpr`, or None for another primitive.
    pub(crate) fn lower_general_reduce(
        &self,
        env: &Env<'c>,
        cx: &Cx<'_, 'c>,
    ) -> LowerResult<Option<Arr<'c>>> {
        let (name, prim) = (cx.name(), cx.prim);
        if !matches!(prim, Prim::Reduce | Prim::ReduceWindow) {
            return Ok(None);
        }
        let Some(op) = combiner(cx) else {
            return err(
                cx.at(),
                format!(
                    "`{name}` with a `jaxpr` other than one commutative binary primitive (add, mul, max, min, and, or, xor) of one operand has no native lowering"
                ),
            );
        };
        if cx.args.len() != 2 {
            return err(
                cx.at(),
                format!("`{name}` of several operands has no native lowering"),
            );
        }
        let (x, init) = (&cx.args[0], &cx.args[1]);
        let dt = dtype(&x.ty)?;
        let init = self.load(&dt, init.v.p, self.i64(0))?;
        let dims = &x.v.dims;
        let r = dims.len();
        if prim == Prim::Reduce {
            let axes = cx.ints("dimensions")?;
            if axes.iter().any(|&a| a < 0 || a as usize >= r) {
                return err(cx.at(), "`dimensions` out of range");
            }
            let kept: Vec<usize> = (0..r).filter(|&k| !axes.contains(&(k as i64))).collect();
            let out: Vec<IntValue> = kept.iter().map(|&k| dims[k]).collect();
            let res = self.alloc(&dt, &out)?;
            self.for_range(self.numel(&out), &mut |i| self.store(&dt, res.p, i, init))?;
            self.nest(dims, &mut |idx| {
                let k: Vec<IntValue> = kept.iter().map(|&k| idx[k]).collect();
                let at = self.offset(&k, &out);
                let v = self.load(&dt, x.v.p, self.offset(idx, dims))?;
                let cur = self.load(&dt, res.p, at)?;
                self.store(&dt, res.p, at, self.combine(op, &dt, cur, v, cx)?)
            })?;
            return Ok(Some(res));
        }
        let window = cx.window(0)?;
        let (win, strides, pad, based, wdil) = window.parts();
        let out = self.dims(env, &cx.outs[0], cx.at())?;
        let res = self.alloc(&dt, &out)?;
        let wdims: Vec<IntValue> = win.iter().map(|&w| self.i64(w)).collect();
        let t = self.elem(&dt, cx.at())?;
        self.nest(&out, &mut |oi| {
            let acc = self.acc(&dt, init)?;
            self.nest(&wdims, &mut |wi| {
                let (at, real) = self.window_pos(oi, wi, strides, pad, based, wdil, dims);
                let v = self.load(&dt, x.v.p, self.offset(&at, dims))?;
                let v = self
                    .builder
                    .build_select(real, v, init, "")
                    .expect("select");
                let a = self.builder.build_load(t, acc, "").expect("load");
                self.builder
                    .build_store(acc, self.combine(op, &dt, a, v, cx)?)
                    .expect("store");
                Ok(())
            })?;
            let a = self.builder.build_load(t, acc, "").expect("load");
            self.store(&dt, res.p, self.offset(oi, &out), a)
        })?;
        Ok(Some(res))
    }
}
