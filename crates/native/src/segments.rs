//! The main jaxpr's equations in functions of bounded size: after every
//! [`SEGMENT_EQNS`] equations (at the first equation after them where it is
//! possible) the entry function calls a new function, `jx_part_N(inputs,
//! outputs, table)`, and the following equations are lowered there; the
//! last one also hands over the outputs and gives the table back.
//!
//! Why: with kernels, the entry function is a call per kernel and nothing
//! else, but it still grew with the program (one block per call and its
//! failure exit), and LLVM's time on one function grows faster than its
//! size: the 108k-equation file took 2.3 times as long per equation as the
//! 27k one. Functions of bounded size keep the time per equation flat, and
//! they are independent parts for code generation on threads ([`super::parts`]).
//!
//! What crosses from one function to the next: the buffer table (its
//! address is a parameter, its words are the same), the caller's arrays
//! (an input's data pointer is read again from `inputs`, [`super::Home::Input`])
//! and constants. So a split is made only where every value still to be
//! used is one of those (a computed array is in the table, an input, or a
//! constant), none is deferred ([`super::fusion`]) and every extent is
//! static; a program with dimension variables or symbolic dimensions is
//! not split. A value's pointer from an earlier function is read again
//! from its table word at its first use in the next ([`Codegen::in_this_function`]).
//! A failure in a part returns 1 to the entry function, which gives back
//! the table as for a failure of its own.

use super::calls::Frame;
use super::{Codegen, Env, Home, Op};
use inkwell::IntPredicate;
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::basic_block::BasicBlock;
use inkwell::module::Linkage;
use inkwell::values::{FunctionValue, PointerValue};
use jaxpr_check::{EqnId, JaxprId};
use jaxpr_lower::LowerResult;
use jaxpr_syntax::ast::{self, Atom};
use jaxpr_types::{AType, Dim, VarId};
use rustc_hash::FxHashMap as HashMap;

/// Equations of the main jaxpr per function, at least.
const SEGMENT_EQNS: usize = 1000;

/// The state of the entry function while its equations go to parts.
pub(crate) struct Segments<'c> {
    /// The entry function's own state, while a part is being built.
    entry: Option<Frame<'c>>,
    entry_table: super::memory::Table<'c>,
    /// The entry function's parameters `inputs` and `outputs`.
    entry_io: (PointerValue<'c>, PointerValue<'c>),
    /// Where the entry function goes on after the last call of a part.
    resume: Option<BasicBlock<'c>>,
    /// The parts made so far.
    pub parts: Vec<FunctionValue<'c>>,
    /// Pointers of earlier functions and what they are read again as in
    /// this one.
    fresh: HashMap<PointerValue<'c>, PointerValue<'c>>,
}

/// The walk of the main jaxpr's equations that splits them.
pub(crate) struct Splitter {
    /// Per variable, the index of the last equation that reads it
    /// (`usize::MAX` for the jaxpr's outputs).
    last_use: HashMap<VarId, usize>,
    /// Variables bound so far whose values cannot cross to another function.
    stuck: Vec<VarId>,
    /// Equations since the current function began.
    since: usize,
}

fn is_static(t: &AType) -> bool {
    t.shape.iter().all(|d| matches!(d, Dim::Const(_)))
}

impl<'c> Codegen<'c, '_> {
    /// Starts splitting the entry function (being built, its table open),
    /// when the program allows it: every input and every equation's result
    /// of the main jaxpr has a static shape.
    pub(crate) fn segments_begin(&self, main: JaxprId, io: (PointerValue<'c>, PointerValue<'c>)) {
        let info = self.analysis.jaxpr(main);
        let inputs_static = info
            .constvars
            .iter()
            .chain(&info.invars)
            .all(|&v| is_static(&self.analysis.var(v).ty));
        let Ok((eqns, _)) = self.syntax.body(self.analysis, main) else {
            return;
        };
        let results_static = eqns.into_iter().all(|(_, id)| {
            self.analysis
                .eqn(id)
                .outs
                .iter()
                .flatten()
                .all(|&v| is_static(&self.analysis.var(v).ty))
        });
        let Some(table) = self.fun.table.get() else {
            return;
        };
        if inputs_static && results_static {
            *self.fun.segments.borrow_mut() = Some(Segments {
                entry: None,
                entry_table: table,
                entry_io: io,
                resume: None,
                parts: Vec::new(),
                fresh: HashMap::default(),
            });
        }
    }

    /// The splitter of a body, when it is the main jaxpr's and the entry
    /// function is being split.
    pub(crate) fn splitter(
        &self,
        j: JaxprId,
        eqns: &[(&ast::Eqn, EqnId)],
        outvars: &[Atom],
    ) -> Option<Splitter> {
        if self.fun.segments.borrow().is_none()
            || self.analysis.main() != Some(j)
            || self.fun.scopes.borrow().len() != 1
        {
            return None;
        }
        let mut last_use = HashMap::default();
        for (i, (e, _)) in eqns.iter().enumerate() {
            for x in e.args.iter() {
                if let Some(v) = self.var_of(x) {
                    last_use.insert(v, i);
                }
            }
        }
        for o in outvars {
            if let Some(v) = self.var_of(o) {
                last_use.insert(v, usize::MAX);
            }
        }
        Some(Splitter {
            last_use,
            stuck: Vec::new(),
            since: 0,
        })
    }

    /// Whether a value can be used in another function than the one that
    /// computed it.
    fn portable(&self, x: &Op<'c>) -> bool {
        let p = x.v.p;
        x.v.lazy.is_none()
            && x.v.dims.iter().all(|d| d.is_const())
            && (p.is_const()
                || matches!(
                    self.fun.homes.borrow().get(&p),
                    Some(Home::Table(_) | Home::Input(_))
                ))
    }

    /// A value as it is read in the function being built: a pointer of an
    /// earlier part is read again from its table word (or the caller's
    /// inputs), once per function.
    pub(crate) fn in_this_function(&self, mut x: Op<'c>) -> Op<'c> {
        let mut segments = self.fun.segments.borrow_mut();
        let Some(s) = segments.as_mut() else {
            return x;
        };
        let p = x.v.p;
        let Some(i) = p.as_instruction() else {
            return x;
        };
        if i.get_parent().and_then(|b| b.get_parent()) == self.fun.func.get() {
            return x;
        }
        if let Some(&q) = s.fresh.get(&p) {
            x.v.p = q;
            return x;
        }
        let Some(home) = self.fun.homes.borrow().get(&p).copied() else {
            return x;
        };
        let at = match home {
            Home::Table(w) => self.table_word(w),
            Home::Input(k) => {
                self.field(self.fun.io.get().expect("inside the entry point").0, k, 0)
            }
            Home::Slot(_) => return x,
        };
        let q = self
            .builder
            .build_load(self.ptr_ty(), at, "")
            .expect("load")
            .into_pointer_value();
        self.fun.homes.borrow_mut().insert(q, home);
        let mut tabled = self.fun.tabled.borrow_mut();
        if tabled.contains(&p) {
            tabled.insert(q);
        }
        s.fresh.insert(p, q);
        x.v.p = q;
        x
    }

    /// Before equation `i` of the main jaxpr: goes on in a new function
    /// when the current one is long enough and every value in `env` still
    /// to be used can cross. A deferred computation still to be used (a
    /// fused product's operand can wait for its one user for thousands of
    /// equations: the forward pass's values in the backward pass) is
    /// computed now, into the table, so that it can.
    pub(crate) fn split_before(
        &self,
        s: &mut Splitter,
        env: &mut Env<'c>,
        i: usize,
    ) -> LowerResult<()> {
        s.since += 1;
        if s.since <= SEGMENT_EQNS {
            return Ok(());
        }
        s.stuck
            .retain(|v| s.last_use.get(v).is_some_and(|&l| l >= i));
        let deferred_only = s.stuck.iter().all(|v| {
            env.vals
                .get(v)
                .is_some_and(|x| x.v.lazy.is_some() && x.v.dims.iter().all(|d| d.is_const()))
        });
        if !deferred_only {
            return Ok(());
        }
        for v in std::mem::take(&mut s.stuck) {
            let Some(x) = env.vals.get(&v) else {
                continue;
            };
            let computed = self.materialized(&x.v)?;
            if let Some(x) = env.vals.get_mut(&v) {
                x.v = computed;
                if !self.portable(x) {
                    s.stuck.push(v);
                }
            }
        }
        if !s.stuck.is_empty() {
            return Ok(());
        }
        s.since = 0;
        self.next_part()
    }

    /// After an equation: notes its results that cannot cross. The
    /// extents of a static result are the type's (a let function's
    /// results are read back from memory, extents too), so that they can.
    pub(crate) fn split_after(&self, s: &mut Splitter, env: &mut Env<'c>, id: EqnId) {
        for v in self.analysis.eqn(id).outs.iter().flatten() {
            let Some(x) = env.vals.get_mut(v) else {
                continue;
            };
            if x.v.lazy.is_none() && x.v.dims.iter().any(|d| !d.is_const()) {
                let extents: Option<Vec<i64>> =
                    x.ty.shape
                        .iter()
                        .map(|d| match d {
                            Dim::Const(c) => Some(*c),
                            _ => None,
                        })
                        .collect();
                if let Some(extents) = extents.filter(|e| e.len() == x.v.dims.len()) {
                    x.v.dims = extents.into_iter().map(|c| self.i64(c)).collect();
                }
            }
            if !self.portable(x) {
                s.stuck.push(*v);
            }
        }
    }

    /// Ends the function being built (a part: it returns 0) and calls a
    /// new part from the entry function, where building goes on.
    fn next_part(&self) -> LowerResult<()> {
        let (entry_table, (in_p, out_p)) = {
            let s = self.fun.segments.borrow();
            let s = s.as_ref().expect("splitting");
            (s.entry_table, s.entry_io)
        };
        self.part_end_to_entry();
        let ptr = self.ptr_ty();
        let ty = self
            .context
            .i32_type()
            .fn_type(&[ptr.into(), ptr.into(), ptr.into()], false);
        let n = self
            .fun
            .segments
            .borrow()
            .as_ref()
            .map_or(0, |s| s.parts.len());
        let f = self
            .module
            .add_function(&format!("jx_part{n}"), ty, Some(Linkage::Private));
        let noinline = Attribute::get_named_enum_kind_id("noinline");
        f.add_attribute(
            AttributeLoc::Function,
            self.context.create_enum_attribute(noinline, 0),
        );
        let base = self.volatile_load(entry_table.base);
        let rc = self
            .call(f, &[in_p.into(), out_p.into(), base.into()])
            .expect("part status")
            .into_int_value();
        // The part stored its message; the entry function gives back the table.
        self.fail_if_reported(self.icmp(IntPredicate::NE, rc, self.i32(0)));
        let resume = self.here();
        let entry = self.enter_frame(Frame {
            func: Some(f),
            scopes: vec![Vec::new()],
            loop_states: Vec::new(),
            unwinds: Default::default(),
        });
        self.builder
            .position_at_end(self.context.append_basic_block(f, "entry"));
        let param = |k: u32| f.get_nth_param(k).expect("param").into_pointer_value();
        self.fun.io.set(Some((param(0), param(1))));
        let home = self.slot(ptr.into());
        self.builder.build_store(home, param(2)).expect("store");
        self.fun.table.set(Some(entry_table.in_part(f, home)));
        let mut segments = self.fun.segments.borrow_mut();
        let s = segments.as_mut().expect("splitting");
        s.entry = Some(entry);
        s.resume = Some(resume);
        s.parts.push(f);
        s.fresh.clear();
        Ok(())
    }

    /// When a part is being built (already complete: it has returned),
    /// goes back to the entry function where it calls the part.
    fn part_end_to_entry(&self) {
        let (entry, resume, table, io) = {
            let mut s = self.fun.segments.borrow_mut();
            let s = s.as_mut().expect("splitting");
            (s.entry.take(), s.resume, s.entry_table, s.entry_io)
        };
        let Some(entry) = entry else {
            return;
        };
        if self.here().get_terminator().is_none() {
            self.builder.build_return(Some(&self.i32(0))).expect("ret");
        }
        self.enter_frame(entry);
        self.fun.table.set(Some(table));
        self.fun.io.set(Some(io));
        if let Some(bb) = resume {
            self.builder.position_at_end(bb);
        }
    }

    /// After the entry point's last code (which a part ends with: it hands
    /// over the outputs and gives back the table): the entry function
    /// returns 0 after the last part's call.
    pub(crate) fn segments_end(&self) {
        if self
            .fun
            .segments
            .borrow()
            .as_ref()
            .is_some_and(|s| s.entry.is_some())
        {
            self.part_end_to_entry();
            self.builder.build_return(Some(&self.i32(0))).expect("ret");
        }
    }

    /// The parts made.
    pub(crate) fn segment_functions(&self) -> Vec<FunctionValue<'c>> {
        self.fun
            .segments
            .borrow()
            .as_ref()
            .map_or_else(Vec::new, |s| s.parts.clone())
    }
}
