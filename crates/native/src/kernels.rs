//! Kernels: each fused loop and each array primitive of static shape is a
//! function of its own, built once per distinct computation and called
//! wherever the program computes it again.
//!
//! Why: LLVM's optimisation and code generation grow faster than a
//! function's size, so a program lowered into one entry function (the
//! value and gradient of a few transformer blocks gives tens of thousands
//! of lines of IR in one function) took minutes to build, and a large
//! one did not finish. As functions of their own, no function grows with
//! the program. And the programs JAX traces repeat the same computations
//! on different arrays (one per unrolled layer, per gradient step):
//! a kernel is keyed by its computation with the arrays it reads taken
//! as parameters, so it is built once, and build time follows the
//! number of distinct kernels rather than of equations.
//!
//! A kernel is `i32 k(ptr in_0, ..., ptr in_n, ptr results)`: the data
//! pointers of the arrays it reads (constants such as literals are not
//! parameters: they are part of the computation), and `results` gets the
//! data pointer of each result, a buffer of the block cache the caller's
//! scope adopts (as a let function's, [`super::calls`]). Only static
//! shapes are kernels, so extents are constants on both sides and are not
//! passed. It returns 0, or 1 having stored the message and given back
//! what it took.

use super::calls::Frame;
use super::fusion::{Access, Node};
use super::{Arr, Codegen, Cx, Env, Op};
use inkwell::IntPredicate;
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::module::Linkage;
use inkwell::types::BasicMetadataTypeEnum;
use inkwell::values::{AsValueRef, BasicValue, FunctionValue, IntValue, PointerValue};
use jaxpr_lower::{LowerResult, Operand};
use jaxpr_syntax::ast::{self, Expr, ExprKind};
use jaxpr_types::{AType, Dim, DimNames};
use std::fmt::Write;

/// What a kernel's key says about one array it reads, and the caller's
/// pointers it is called with, in parameter order.
#[derive(Default)]
pub(crate) struct KernelKey<'c> {
    pub text: String,
    pub inputs: Vec<PointerValue<'c>>,
}

impl<'c> KernelKey<'c> {
    /// Writes a pointer the computation reads: a constant (a global) is
    /// part of the computation, any other pointer a parameter (the same
    /// pointer read twice is one parameter).
    fn pointer(&mut self, p: PointerValue<'c>) {
        if p.is_const() {
            let _ = write!(self.text, "g{:x}", p.as_value_ref() as usize);
            return;
        }
        let k = match self.inputs.iter().position(|q| *q == p) {
            Some(k) => k,
            None => {
                self.inputs.push(p);
                self.inputs.len() - 1
            }
        };
        let _ = write!(self.text, "a{k}");
    }

    /// Writes constant integers; false when one is not a constant.
    fn constants(&mut self, xs: &[IntValue<'c>]) -> bool {
        for x in xs {
            let Some(c) = x.get_sign_extended_constant() else {
                return false;
            };
            let _ = write!(self.text, "{c},");
        }
        self.text.push(';');
        true
    }
}

/// The parameters of an equation as a key: their names and values, without
/// positions; `None` when a value holds a jaxpr (those equations call
/// other code and are not kernels).
fn params_key(e: &ast::Eqn) -> Option<String> {
    fn expr(x: &Expr, out: &mut String) -> Option<()> {
        match &x.kind {
            ExprKind::Int(i) => write!(out, "{i}").ok()?,
            ExprKind::Number(s) | ExprKind::Str(s) | ExprKind::Path(s) => {
                write!(out, "{s:?}").ok()?
            }
            ExprKind::Neg(a) => {
                out.push('-');
                expr(a, out)?;
            }
            ExprKind::Binary(op, a, b) => {
                write!(out, "({op:?} ").ok()?;
                expr(a, out)?;
                out.push(' ');
                expr(b, out)?;
                out.push(')');
            }
            ExprKind::Pow(a, k) => {
                expr(a, out)?;
                write!(out, "^{k}").ok()?;
            }
            ExprKind::Sharded(a, b) => {
                expr(a, out)?;
                out.push('@');
                expr(b, out)?;
            }
            ExprKind::Call(c) => {
                write!(out, "{}(", c.callee).ok()?;
                for a in &c.args {
                    if let Some(n) = &a.name {
                        write!(out, "{}=", n.text).ok()?;
                    }
                    expr(&a.value, out)?;
                    out.push(',');
                }
                out.push(')');
            }
            ExprKind::Tuple(xs) | ExprKind::List(xs) => {
                out.push('(');
                for a in xs.iter() {
                    expr(a, out)?;
                    out.push(',');
                }
                out.push(')');
            }
            ExprKind::DbIdx(kind, k) => write!(out, "{}({k})", kind.name()).ok()?,
            ExprKind::Jaxpr(_) | ExprKind::Error => return None,
        }
        Some(())
    }
    let mut out = e.primitive.text.to_string();
    out.push('[');
    for p in e.params.iter() {
        write!(out, "{}=", p.name.text).ok()?;
        expr(&p.value, &mut out)?;
        out.push(',');
    }
    out.push(']');
    Some(out)
}

/// Whether every extent of a type is a literal.
fn is_static(t: &AType) -> bool {
    t.dtype.is_some() && t.shape.iter().all(|d| matches!(d, Dim::Const(_)))
}

impl<'c, 'f> Codegen<'c, 'f> {
    /// The key of a fused loop computing `node` into an array of `dims`
    /// and `dt`; `None` when its extents or strides are not constants.
    pub(crate) fn node_key(
        &self,
        node: &Node<'f, 'c>,
        dims: &[IntValue<'c>],
        dt: &jaxpr_types::DType,
    ) -> Option<KernelKey<'c>> {
        let mut key = KernelKey::default();
        let _ = write!(key.text, "loop {dt} ");
        if !key.constants(dims) {
            return None;
        }
        self.write_node(node, &mut key).then_some(key)
    }

    fn write_node(&self, node: &Node<'f, 'c>, key: &mut KernelKey<'c>) -> bool {
        match node {
            Node::Leaf { p, dt, access } => {
                let _ = write!(key.text, "<{dt} ");
                key.pointer(*p);
                match access {
                    Access::Same => key.text.push_str(" same"),
                    Access::Scalar => key.text.push_str(" scalar"),
                    Access::Strided(s) => {
                        key.text.push_str(" strided ");
                        if !key.constants(s) {
                            return false;
                        }
                    }
                }
                key.text.push('>');
                true
            }
            Node::Eqn { cx, kids } => {
                let Some(params) = params_key(cx.e) else {
                    return false;
                };
                key.text.push_str(&params);
                for a in &cx.args {
                    let _ = write!(key.text, " {}", self.analysis.ty(&a.ty));
                }
                let _ = write!(key.text, " -> {} (", self.analysis.ty(&cx.outs[0]));
                let all = kids.iter().all(|k| self.write_node(k, key));
                key.text.push(')');
                all
            }
            Node::Product(a, b, dt) => {
                let _ = write!(key.text, "product {dt} (");
                let both = self.write_node(a, key) && self.write_node(b, key);
                key.text.push(')');
                both
            }
        }
    }

    /// The key of an equation lowered on its own (not fused, not a call
    /// of other code), when its operands and results have static shapes
    /// and its operands are computed arrays.
    fn eqn_key(&self, cx: &Cx<'f, 'c>) -> Option<KernelKey<'c>> {
        if !self.analysis.eqn(cx.id).callees.is_empty()
            || jaxpr_lower::is_identity(cx.prim)
            // A call of the quantum runtime has effects: each runs in place.
            || jaxpr_check::registry::lookup(cx.name()).is_some_and(|p| p.family == jaxpr_check::registry::Family::Quantum)
            || !cx.outs.iter().all(is_static)
            || !cx.args.iter().all(|a| is_static(&a.ty) && a.v.lazy.is_none())
        {
            return None;
        }
        let mut key = KernelKey {
            text: params_key(cx.e)?,
            inputs: Vec::new(),
        };
        for a in &cx.args {
            let _ = write!(key.text, " {} ", self.analysis.ty(&a.ty));
            key.pointer(a.v.p);
        }
        for o in &cx.outs {
            let _ = write!(key.text, " -> {}", self.analysis.ty(o));
        }
        Some(key)
    }

    /// Lowers an equation through its kernel when it has one ([`Codegen::eqn_key`]);
    /// `None` when it is lowered in place instead.
    pub(crate) fn eqn_kernel(
        &self,
        env: &Env<'c>,
        cx: &Cx<'f, 'c>,
    ) -> LowerResult<Option<Vec<Arr<'c>>>> {
        // With symbolic dimensions in scope, parameters may name them.
        if !env.syms.is_empty() {
            return Ok(None);
        }
        let Some(key) = self.eqn_key(cx) else {
            return Ok(None);
        };
        let name = cx.name().to_string();
        let results = self.kernel(&name, key, &mut |params| {
            let mut args = Vec::new();
            for a in &cx.args {
                let p = if a.v.p.is_const() {
                    a.v.p
                } else {
                    params[self.param_of(&cx.args, a.v.p)]
                };
                let dims = self.dims(&Env::default(), &a.ty, cx.at())?;
                args.push(Operand {
                    v: Arr::new(p, dims),
                    ty: a.ty.clone(),
                });
            }
            let inner = Cx {
                e: cx.e,
                prim: cx.prim,
                id: cx.id,
                args,
                outs: cx.outs.clone(),
            };
            let outs = self.lower_eqn(&Env::default(), &inner, false)?;
            Ok(outs.into_iter().map(|o| o.p).collect())
        })?;
        let Some(results) = results else {
            return Ok(None);
        };
        results
            .into_iter()
            .zip(&cx.outs)
            .map(|(p, t)| Ok(Arr::new(p, self.dims(&Env::default(), t, cx.at())?)))
            .collect::<LowerResult<Vec<_>>>()
            .map(Some)
    }

    /// A kernel result's pointer read again from the stack word it was
    /// returned in (other pointers as they are), for a use far from its
    /// definition: kernel calls, giving buffers back, outputs. The read is
    /// volatile so that LLVM keeps it: a function calling thousands of
    /// kernels would otherwise hold every buffer's pointer in a register
    /// or spill slot from its kernel to its last use, and register
    /// allocation over those thousands of overlapping live ranges took
    /// most of a large program's build.
    pub(crate) fn reloaded(&self, p: PointerValue<'c>) -> PointerValue<'c> {
        let Some(home) = self.fun.homes.borrow().get(&p).copied() else {
            return p;
        };
        match home {
            super::Home::Slot(at) => self.volatile_load(at),
            super::Home::Table(at) => self.volatile_load(self.table_word(at)),
            super::Home::Input(k) => {
                let inputs = self.fun.io.get().expect("inside the entry point").0;
                self.volatile_load(self.field(inputs, k, 0))
            }
        }
    }

    /// A pointer read from `at` with a volatile load (which LLVM neither
    /// removes nor merges with another).
    pub(crate) fn volatile_load(&self, at: PointerValue<'c>) -> PointerValue<'c> {
        let v = self
            .builder
            .build_load(self.ptr_ty(), at, "")
            .expect("load");
        if let Some(i) = v.as_instruction_value() {
            let _ = i.set_volatile(true);
        }
        v.into_pointer_value()
    }

    /// The parameter of a kernel that a non-constant pointer among `args`
    /// is, in the order [`KernelKey::pointer`] numbers them.
    fn param_of(&self, args: &[Op<'c>], p: PointerValue<'c>) -> usize {
        let mut seen: Vec<PointerValue<'c>> = Vec::new();
        for a in args {
            if !a.v.p.is_const() && !seen.contains(&a.v.p) {
                seen.push(a.v.p);
            }
        }
        seen.iter().position(|q| *q == p).unwrap_or(0)
    }

    /// Calls the kernel of `key`, building it first with `body` (which
    /// gets the kernel's parameters in place of `key.inputs` and returns
    /// its results' data pointers); the results, adopted by the current
    /// scope. `None` when the computation is not a kernel after all: a
    /// result that is not a buffer the body allocated (a view of an
    /// operand), or a body that cannot be built without the caller's
    /// scope; it is then lowered in place.
    pub(crate) fn kernel(
        &self,
        name: &str,
        key: KernelKey<'c>,
        body: &mut dyn FnMut(&[PointerValue<'c>]) -> LowerResult<Vec<PointerValue<'c>>>,
    ) -> LowerResult<Option<Vec<PointerValue<'c>>>> {
        let known = self.items.kernels.borrow().get(&key.text).copied();
        let (f, n_results) = match known {
            Some(None) => return Ok(None),
            Some(Some(k)) => k,
            None => match self.build_kernel(name, key.inputs.len(), body)? {
                Some(k) => {
                    self.items.kernels.borrow_mut().insert(key.text, Some(k));
                    k
                }
                None => {
                    self.items.kernels.borrow_mut().insert(key.text, None);
                    return Ok(None);
                }
            },
        };
        let tabled = self.table_words(n_results);
        let results = tabled.map_or_else(|| self.words(n_results), |(at, _)| at);
        let mut args: Vec<inkwell::values::BasicMetadataValueEnum> = key
            .inputs
            .iter()
            .map(|&p| self.reloaded(p).into())
            .collect();
        args.push(results.into());
        let rc = self.call(f, &args).expect("kernel status").into_int_value();
        // The kernel stored its message; this call only unwinds.
        self.fail_if_reported(self.icmp(IntPredicate::NE, rc, self.i32(0)));
        let outs: Vec<PointerValue<'c>> = (0..n_results)
            .map(|k| {
                let home = self.word(results, k);
                let p = self
                    .builder
                    .build_load(self.ptr_ty(), home, "")
                    .expect("load")
                    .into_pointer_value();
                match tabled {
                    Some((_, first)) => self.tabled_at(p, first + k as u64),
                    None => {
                        self.fun
                            .homes
                            .borrow_mut()
                            .insert(p, super::Home::Slot(home));
                    }
                }
                p
            })
            .collect();
        for &p in &outs {
            self.adopt(p);
        }
        Ok(Some(outs))
    }

    /// Builds a kernel's function: `body` in a scope of its own, whose
    /// results leave it through the last parameter. `None` (and no
    /// function) when a result is not a buffer of that scope.
    fn build_kernel(
        &self,
        name: &str,
        n_inputs: usize,
        body: &mut dyn FnMut(&[PointerValue<'c>]) -> LowerResult<Vec<PointerValue<'c>>>,
    ) -> LowerResult<Option<(FunctionValue<'c>, usize)>> {
        let ptr = self.ptr_ty();
        let params: Vec<BasicMetadataTypeEnum> = vec![ptr.into(); n_inputs + 1];
        let ty = self.context.i32_type().fn_type(&params, false);
        let id = self.items.kernels.borrow().len();
        let f = self
            .module
            .add_function(&format!("jx_k{id}_{name}"), ty, Some(Linkage::Private));
        // Not inlined back into its callers: that would make the one large
        // function again.
        let noinline = Attribute::get_named_enum_kind_id("noinline");
        f.add_attribute(
            AttributeLoc::Function,
            self.context.create_enum_attribute(noinline, 0),
        );
        let here = self.builder.get_insert_block();
        let outer = self.enter_frame(Frame {
            func: Some(f),
            ..Frame::default()
        });
        self.builder
            .position_at_end(self.context.append_basic_block(f, "entry"));
        let inputs: Vec<PointerValue<'c>> = (0..n_inputs)
            .map(|k| {
                f.get_nth_param(k as u32)
                    .expect("param")
                    .into_pointer_value()
            })
            .collect();
        let results_p = f
            .get_nth_param(n_inputs as u32)
            .expect("param")
            .into_pointer_value();
        self.scope_begin();
        let built = body(&inputs).and_then(|outs| {
            let mut owned = self.fun.scopes.borrow().last().cloned().unwrap_or_default();
            for p in &outs {
                match owned.iter().position(|q| q == p) {
                    Some(i) => {
                        owned.swap_remove(i);
                    }
                    None => return Ok(None),
                }
            }
            for p in owned {
                self.give(p)?;
            }
            for (k, &p) in outs.iter().enumerate() {
                self.builder
                    .build_store(self.word(results_p, k), p)
                    .expect("store");
            }
            self.builder.build_return(Some(&self.i32(0))).expect("ret");
            Ok(Some(outs.len()))
        });
        self.enter_frame(outer);
        if let Some(bb) = here {
            self.builder.position_at_end(bb);
        }
        match built {
            Ok(Some(n)) => Ok(Some((f, n))),
            Ok(None) => {
                // SAFETY: nothing refers to the function: it was never called.
                unsafe { f.delete() };
                Ok(None)
            }
            Err(_) => {
                // Lowered in place instead, where an error is reported
                // with what is in scope there.
                unsafe { f.delete() };
                Ok(None)
            }
        }
    }
}
