//! `let` jaxprs as functions. Each `let` jaxpr a program calls is emitted
//! once, as a private LLVM function that every call site calls (inlining
//! them made a "diamond" of `let`s, each calling the previous twice, grow
//! exponentially), and function bodies are built from a worklist after the
//! entry function, never from inside the body that calls them (building
//! them where they were called recursed once per `let` of a chain and
//! overflowed the stack at a few thousand).
//!
//! A let function is `i32 f(ptr args, ptr results)`. `args` holds, per
//! binder of the jaxpr (constvars, then invars), its data pointer and then
//! its extents, one 8-byte word each, and after them the values of the
//! symbolic dimensions in scope at the call; `results` gets each output the
//! same way. It returns 0, or 1 after storing the error message, having
//! given back everything it took and written no result. Outputs are buffers
//! of the block cache ([`Codegen::take`]) that the caller's scope adopts.

use super::random::physical_rank;
use super::{Arr, Codegen, Env, Op};
use inkwell::IntPredicate;
use inkwell::module::Linkage;
use inkwell::values::{FunctionValue, IntValue, PointerValue};
use jaxpr_check::JaxprId;
use jaxpr_lower::{LowerResult, Operand};
use jaxpr_syntax::TextRange;
use jaxpr_types::poly::Symbol;

/// A let function declared by a call and not yet built.
pub(crate) struct Pending<'c> {
    f: FunctionValue<'c>,
    j: JaxprId,
    syms: Vec<Symbol>,
}

/// What the generator holds for the function being built, which another
/// function's body replaces while it is built.
#[derive(Default)]
pub(crate) struct Frame<'c> {
    pub func: Option<FunctionValue<'c>>,
    pub scopes: Vec<Vec<PointerValue<'c>>>,
    pub loop_states: Vec<Vec<PointerValue<'c>>>,
    pub unwinds: super::Unwinds<'c>,
}

impl<'c> Codegen<'c, '_> {
    /// Calls the let jaxpr `j` on `inputs` (materialized arrays) through
    /// its function; the outputs, owned by the current scope.
    pub(crate) fn call_let(
        &self,
        env: &Env<'c>,
        j: JaxprId,
        inputs: &[Op<'c>],
        at: TextRange,
    ) -> LowerResult<Vec<Arr<'c>>> {
        let binders = jaxpr_lower::walk::nested_binders(self.analysis, j, inputs.len(), at)?;
        let mut syms: Vec<Symbol> = env.syms.keys().cloned().collect();
        syms.sort();
        let f = self.let_function(j, syms.clone());
        let arg_words: usize = binders
            .iter()
            .map(|&v| 1 + physical_rank(&self.analysis.var(v).ty))
            .sum::<usize>()
            + syms.len();
        let info = self.analysis.jaxpr(j);
        let out_ranks: Vec<usize> = info.outs.iter().map(|o| physical_rank(&o.ty)).collect();
        let result_words: usize = out_ranks.iter().map(|r| 1 + r).sum();
        let args = self.words(arg_words);
        let results = self.words(result_words);
        let mut w = 0;
        for (x, &v) in inputs.iter().zip(&binders) {
            if x.v.dims.len() != physical_rank(&self.analysis.var(v).ty) {
                return jaxpr_lower::internal(
                    at,
                    "a call passes an array of another rank than its binder's",
                );
            }
            self.put_array(args, &mut w, &self.materialized(&x.v)?);
        }
        for s in &syms {
            self.builder
                .build_store(self.word(args, w), env.syms[s])
                .expect("store");
            w += 1;
        }
        let rc = self
            .call(f, &[args.into(), results.into()])
            .expect("let function result")
            .into_int_value();
        // The function stored its message; this call only unwinds.
        self.fail_if_reported(self.icmp(IntPredicate::NE, rc, self.i32(0)));
        let mut w = 0;
        let outs: Vec<Arr<'c>> = out_ranks
            .iter()
            .map(|&r| self.get_array(results, &mut w, r))
            .collect();
        for o in &outs {
            self.adopt(o.p);
        }
        Ok(outs)
    }

    /// The function of let jaxpr `j` called with symbols `syms`, declared
    /// (and queued to be built) on first use.
    fn let_function(&self, j: JaxprId, syms: Vec<Symbol>) -> FunctionValue<'c> {
        let key = (j, syms);
        if let Some(&f) = self.items.let_functions.borrow().get(&key) {
            return f;
        }
        let ptr = self.ptr_ty();
        let ty = self
            .context
            .i32_type()
            .fn_type(&[ptr.into(), ptr.into()], false);
        let name = match &self.analysis.jaxpr(j).origin {
            jaxpr_check::JaxprOrigin::Let { name, .. } => format!("jx_let_{name}"),
            _ => "jx_let".to_string(),
        };
        let f = self.module.add_function(&name, ty, Some(Linkage::Private));
        // Not inlined: LLVM's inliner, run on a chain of `let`s each calling
        // the previous one, copies ever larger bodies (its time grows
        // faster than the chain), and a diamond's would grow exponentially
        // again.
        let noinline = inkwell::attributes::Attribute::get_named_enum_kind_id("noinline");
        f.add_attribute(
            inkwell::attributes::AttributeLoc::Function,
            self.context.create_enum_attribute(noinline, 0),
        );
        self.items.let_functions.borrow_mut().insert(key.clone(), f);
        self.items.pending.borrow_mut().push(Pending {
            f,
            j: key.0,
            syms: key.1,
        });
        f
    }

    /// Builds the bodies of the let functions declared so far, and of those
    /// their bodies declare, one after another.
    pub(crate) fn build_let_functions(&self) -> LowerResult<()> {
        let here = self.builder.get_insert_block();
        let built = loop {
            let Some(p) = self.items.pending.borrow_mut().pop() else {
                break Ok(());
            };
            let outer = self.enter_frame(Frame {
                func: Some(p.f),
                scopes: Vec::new(),
                loop_states: Vec::new(),
                unwinds: Default::default(),
            });
            let built = self.let_body(&p);
            self.enter_frame(outer);
            if built.is_err() {
                break built;
            }
        };
        if let Some(bb) = here {
            self.builder.position_at_end(bb);
        }
        built
    }

    fn let_body(&self, p: &Pending<'c>) -> LowerResult<()> {
        self.builder
            .position_at_end(self.context.append_basic_block(p.f, "entry"));
        let args = p.f.get_nth_param(0).expect("param").into_pointer_value();
        let results = p.f.get_nth_param(1).expect("param").into_pointer_value();
        let binders = {
            let info = self.analysis.jaxpr(p.j);
            info.constvars
                .iter()
                .chain(&info.invars)
                .copied()
                .collect::<Vec<_>>()
        };
        let mut env = Env::default();
        let mut w = 0;
        for &v in &binders {
            let ty = self.analysis.var(v).ty.clone();
            let x = self.get_array(args, &mut w, physical_rank(&ty));
            env.vals.insert(v, Operand { v: x, ty });
        }
        for s in &p.syms {
            let value = self
                .builder
                .build_load(self.context.i64_type(), self.word(args, w), "")
                .expect("load");
            env.syms.insert(s.clone(), value.into_int_value());
            w += 1;
        }
        self.scope_begin();
        let outs = self.body(&mut env, p.j, false)?;
        let kept = self.scope_end(&outs)?;
        let mut w = 0;
        for x in &kept {
            self.put_array(results, &mut w, x);
        }
        self.builder.build_return(Some(&self.i32(0))).expect("ret");
        Ok(())
    }

    /// Swaps the generator's per-function state for `frame`'s; the state
    /// it had.
    pub(crate) fn enter_frame(&self, frame: Frame<'c>) -> Frame<'c> {
        Frame {
            func: self.fun.func.replace(frame.func),
            scopes: self.fun.scopes.replace(frame.scopes),
            loop_states: self.fun.loop_states.replace(frame.loop_states),
            unwinds: self.fun.unwinds.replace(frame.unwinds),
        }
    }

    /// `n` words of the entry block's stack frame.
    pub(crate) fn words(&self, n: usize) -> PointerValue<'c> {
        self.slot(self.context.i64_type().array_type(n.max(1) as u32).into())
    }

    pub(crate) fn word(&self, base: PointerValue<'c>, w: usize) -> PointerValue<'c> {
        // SAFETY (of the generated code): `w` is within the words the
        // caller laid out for this function's arguments or results.
        unsafe {
            self.builder
                .build_gep(self.context.i64_type(), base, &[self.i64(w as i64)], "")
                .expect("gep")
        }
    }

    /// Writes an array (data pointer, then extents) at word `w`.
    fn put_array(&self, base: PointerValue<'c>, w: &mut usize, x: &Arr<'c>) {
        self.builder
            .build_store(self.word(base, *w), x.p)
            .expect("store");
        for (k, &d) in x.dims.iter().enumerate() {
            self.builder
                .build_store(self.word(base, *w + 1 + k), d)
                .expect("store");
        }
        *w += 1 + x.dims.len();
    }

    /// Reads an array of `rank` written by [`Codegen::put_array`] at word `w`.
    fn get_array(&self, base: PointerValue<'c>, w: &mut usize, rank: usize) -> Arr<'c> {
        let p = self
            .builder
            .build_load(self.ptr_ty(), self.word(base, *w), "")
            .expect("load")
            .into_pointer_value();
        let dims: Vec<IntValue<'c>> = (0..rank)
            .map(|k| {
                self.builder
                    .build_load(self.context.i64_type(), self.word(base, *w + 1 + k), "")
                    .expect("load")
                    .into_int_value()
            })
            .collect();
        *w += 1 + rank;
        Arr::new(p, dims)
    }
}
