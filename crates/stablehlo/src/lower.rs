//! The lowering of one module ([`Lower`]): the values of jaxpr variables,
//! the main function, bodies of nested jaxprs and each equation.

use super::{BlockConstants, ops};
use crate::builder::TensorKey;
use crate::calls;
use jaxpr_check::{self as check, Analysis, EqnId, JaxprId};
use jaxpr_lower::{LowerResult, Syntax, err, internal, solvable};
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast::{self, Atom};
use jaxpr_types::poly::Symbol;
use jaxpr_types::{AType, DType, Dim, VarId};
use melior::Context;
use melior::ir::attribute::{StringAttribute, TypeAttribute};
use melior::ir::r#type::FunctionType;
use melior::ir::{
    Attribute, Block, BlockLike, BlockRef, Identifier, Location, Module, Region, RegionLike, Type,
    Value,
};
use rustc_hash::FxHashMap as HashMap;
use smallvec::SmallVec;
use std::borrow::Cow;
use std::cell::RefCell;

/// A value of the module being built. The module owns every operation until
/// the build ends, so values and blocks are used without melior's borrow
/// lifetimes (which cannot express "defined in an enclosing region").
pub(crate) type ModuleValue<'c> = Value<'c, 'c>;
pub(crate) type ModuleBlock<'c> = BlockRef<'c, 'c>;

/// A lowered operand: its value and its jaxpr type, borrowed from the
/// analysis (which outlives the module) unless the lowering made it.
pub(crate) type Operand<'c, 'f> = jaxpr_lower::Operand<ModuleValue<'c>, Cow<'f, AType>>;

/// The values of the symbolic dimensions where a jaxpr is lowered (shared
/// by every jaxpr of the file, computed once in the entry block).
#[derive(Clone, Default)]
pub(crate) struct Env<'c> {
    pub(crate) syms: HashMap<Symbol, ModuleValue<'c>>,
}

/// A view of the lowering: the analysis and syntax it reads, and the state
/// it keeps ([`LowerState`], which it derefs to). A whole-file lowering has
/// one view; a lowering fed equation by equation ([`lower_handed`]) makes
/// one per equation, over the analysis as the checker had it then.
pub(crate) struct Lower<'c, 'f> {
    pub cx: &'c Context,
    pub a: &'f Analysis,
    pub(crate) loc: Location<'c>,
    /// Where every jaxpr's syntax and every variable use is.
    pub(crate) syntax: &'f Syntax<'f>,
    pub(crate) st: &'f LowerState<'c>,
}

impl<'c> std::ops::Deref for Lower<'c, '_> {
    type Target = LowerState<'c>;
    fn deref(&self) -> &LowerState<'c> {
        self.st
    }
}

/// What a lowering keeps from one equation to the next.
#[derive(Default)]
pub(crate) struct LowerState<'c> {
    /// The build's `jax_threefry_partitionable` ([`crate::Options`]).
    pub(crate) threefry: jaxpr_lower::random::Threefry,
    /// The value of each variable, by `VarId`, once its binder is lowered.
    /// One table for the whole file: a variable belongs to one jaxpr, and a
    /// jaxpr lowered again (a second call site, a loop body) binds its
    /// variables again before it reads them.
    pub(crate) vals: RefCell<Vec<Option<ModuleValue<'c>>>>,
    /// The tensor type of each variable, by `VarId`, once asked for.
    pub(crate) var_tys: RefCell<Vec<Option<Type<'c>>>>,
    /// Types and attributes already made, by their text or (tensors) their
    /// element type and dimensions, and attribute names.
    pub(crate) types: RefCell<HashMap<String, Type<'c>>>,
    pub(crate) tensors: RefCell<HashMap<TensorKey, Type<'c>>>,
    pub(crate) attrs: RefCell<HashMap<String, Attribute<'c>>>,
    pub(crate) idents: RefCell<HashMap<&'static str, Identifier<'c>>>,
    /// Scalar constants already made in a block (by block and type, then
    /// text): a constant dominates the rest of its block and the regions in
    /// it.
    pub(crate) consts: RefCell<HashMap<(usize, usize), BlockConstants<'c>>>,
    /// Static broadcasts already made in a block (by block, value, result
    /// type and dimensions packed by [`ops::packed_dims`]), for the same
    /// reason: elementwise operations broadcast their scalar operands at
    /// every use.
    pub(crate) broadcasts: RefCell<HashMap<(usize, usize, usize, u64), ModuleValue<'c>>>,
    /// Operations made so far (the printer sizes its buffer from it).
    pub(crate) ops: std::cell::Cell<usize>,
    /// Operation names (None: registered), and attribute dictionaries by
    /// their names and attributes, for [`create`].
    pub(crate) op_names: RefCell<HashMap<Box<str>, Option<*const std::ffi::c_void>>>,
    pub(crate) dictionaries: RefCell<HashMap<DictionaryKey, mlir_sys::MlirAttribute>>,
    /// The functions of the `let` jaxprs called ([`calls`]).
    pub(crate) let_functions: RefCell<calls::LetFunctions>,
    /// The mesh of the `shard_map` whose body is being lowered
    /// ([`multi_device`]), read by its collectives.
    pub(crate) mesh: RefCell<Option<std::rc::Rc<jaxpr_check::ShardMapLayout>>>,
    /// The devices the module runs on, once a `shard_map` says.
    pub(crate) partitions: std::cell::Cell<Option<i64>>,
}

/// An attribute list: its names and attributes, as MLIR's handles.
pub(crate) type DictionaryKey = SmallVec<[(usize, usize); 2]>;

impl LowerState<'_> {
    /// Room for `vars` variables in the tables by variable (see
    /// `Checker::reserve_kept`).
    pub(crate) fn reserve_vars(&self, vars: usize) {
        self.vals.borrow_mut().reserve(vars);
        self.var_tys.borrow_mut().reserve(vars);
    }

    /// Makes room for `vars` variables, forgetting what it knew of those
    /// from `reused` on (variable ids the checker gives again).
    pub(crate) fn fit_vars(&self, reused: usize, vars: usize) {
        fn refit<T>(table: &mut Vec<Option<T>>, reused: usize, len: usize) {
            table.truncate(reused.min(len));
            table.resize_with(len, || None);
        }
        refit(&mut self.vals.borrow_mut(), reused, vars);
        refit(&mut self.var_tys.borrow_mut(), reused, vars);
    }
}

/// The entry block of `@main` while its equations are lowered.
pub(crate) struct MainHead<'c> {
    pub(crate) block: Block<'c>,
    pub(crate) b: ModuleBlock<'c>,
    pub(crate) env: Env<'c>,
    pub(crate) in_tys: Vec<Type<'c>>,
}

impl<'c, 'f> Lower<'c, 'f> {
    pub(crate) fn new(
        cx: &'c Context,
        a: &'f Analysis,
        syntax: &'f Syntax<'f>,
        st: &'f LowerState<'c>,
    ) -> Self {
        st.fit_vars(usize::MAX, a.vars.len());
        Lower {
            cx,
            a,
            loc: Location::unknown(cx),
            syntax,
            st,
        }
    }

    // ---- the entry function -------------------------------------------------

    pub(crate) fn main(&self, module: &Module<'c>) -> LowerResult<()> {
        let Some(main) = self.a.main() else {
            return err(TextRange::new(0, 0), "the file has no main jaxpr to build");
        };
        let head = self.begin_main(main)?;
        let (eqns, outvars) = self.syntax.body(self.a, main)?;
        for (e, id) in eqns {
            self.eqn(head.b, &head.env, e, id)?;
        }
        self.end_main(module, head, main, outvars)
    }

    /// The entry block, with the inputs (constvars first, then invars) and
    /// the symbolic dimensions bound.
    pub(crate) fn begin_main(&self, main: JaxprId) -> LowerResult<MainHead<'c>> {
        let info = self.a.jaxpr(main);
        let inputs: Vec<VarId> = info.constvars.iter().chain(&info.invars).copied().collect();
        let in_tys = inputs
            .iter()
            .map(|&v| self.var_ty(v))
            .collect::<LowerResult<Vec<_>>>()?;
        let (block, b, args) = self.new_block(&in_tys);
        let mut env = Env::default();
        for (&v, &x) in inputs.iter().zip(&args) {
            self.bind(v, x);
        }
        self.bind_symbols(b, &mut env, &inputs)?;
        Ok(MainHead {
            block,
            b,
            env,
            in_tys,
        })
    }

    /// Returns the outputs and appends `@main` to the module.
    pub(crate) fn end_main(
        &self,
        module: &Module<'c>,
        head: MainHead<'c>,
        main: JaxprId,
        outvars: &[Atom],
    ) -> LowerResult<()> {
        let info = self.a.jaxpr(main);
        // Implicit outputs (dimensions of later outputs) are not results of
        // the program: Catalyst returns only the explicit ones.
        let explicit: Vec<bool> = (0..info.outs.len())
            .map(|k| info.signature.out_type.get(k).is_none_or(|e| e.explicit))
            .collect();
        let out_tys = info
            .outs
            .iter()
            .zip(&explicit)
            .filter(|(_, e)| **e)
            .map(|(o, _)| self.ty(&o.ty, o.range))
            .collect::<LowerResult<Vec<_>>>()?;
        let MainHead {
            block, b, in_tys, ..
        } = head;
        let outs = outvars
            .iter()
            .map(|o| self.atom(b, o))
            .collect::<LowerResult<Vec<_>>>()?;
        let outs = outs
            .into_iter()
            .zip(explicit)
            .filter(|(_, e)| *e)
            .map(|(o, _)| o)
            .zip(&out_tys)
            .map(|(o, &t)| self.fit(b, o.v, t))
            .collect::<LowerResult<Vec<_>>>()?;
        self.append_function(
            module,
            "main",
            "public",
            (block, b),
            &outs,
            &in_tys,
            &out_tys,
        );
        self.lower_let_functions(module)
    }

    /// Ends the body `block` (`b`) returning `outs`, and appends it to
    /// `module` as the function `name` of `visibility`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn append_function(
        &self,
        module: &Module<'c>,
        name: &str,
        visibility: &str,
        (block, b): (Block<'c>, ModuleBlock<'c>),
        outs: &[ModuleValue<'c>],
        in_tys: &[Type<'c>],
        out_tys: &[Type<'c>],
    ) {
        b.append_operation(melior::dialect::func::r#return(outs, self.loc));
        let region = Region::new();
        region.append_block(block);
        let func = melior::dialect::func::func(
            self.cx,
            StringAttribute::new(self.cx, name),
            TypeAttribute::new(FunctionType::new(self.cx, in_tys, out_tys).into()),
            region,
            &[(
                Identifier::new(self.cx, "sym_visibility"),
                StringAttribute::new(self.cx, visibility).into(),
            )],
            self.loc,
        );
        module.body().append_operation(func);
    }

    /// Values of the symbolic dimensions, from the shapes of the inputs where
    /// they appear: a dimension `k*s + rest` of an input whose other symbols
    /// are known gives `s = (size - rest) / k`. Repeats until nothing new is
    /// learnt, so `f32[a, a + b]` resolves `a` first, then `b`.
    pub(crate) fn bind_symbols(
        &self,
        b: ModuleBlock<'c>,
        env: &mut Env<'c>,
        inputs: &[VarId],
    ) -> LowerResult<()> {
        loop {
            let mut learnt = false;
            for &v in inputs {
                let var = self.a.var(v);
                for (k, d) in var.ty.shape.iter().enumerate() {
                    let Dim::Sym(p) = d else { continue };
                    let Some((s, coef, rest)) = solvable(p, &env.syms) else {
                        continue;
                    };
                    let size = self.op1(
                        b,
                        "stablehlo.get_dimension_size",
                        &[self.value(v, var.range)?],
                        self.tensor_of("i32", &[])?,
                        &[("dimension", format!("{k} : i64"))],
                    )?;
                    let size = self.convert(b, size, &DType::Int(64))?;
                    let rest = self.poly(b, env, &rest, var.range)?;
                    let mut val = self.binary(b, "stablehlo.subtract", size, rest)?;
                    if coef != 1 {
                        let c = self.const_i64(b, coef)?;
                        val = self.binary(b, "stablehlo.divide", val, c)?;
                    }
                    env.syms.insert(s, val);
                    learnt = true;
                }
            }
            if !learnt {
                return Ok(());
            }
        }
    }

    /// Lowers the equations of a jaxpr whose inputs are bound in `env`;
    /// returns its outputs.
    pub(crate) fn body(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        j: JaxprId,
    ) -> LowerResult<Vec<Operand<'c, 'f>>> {
        let (eqns, outvars) = self.syntax.body(self.a, j)?;
        for (e, id) in eqns {
            self.eqn(b, env, e, id)?;
        }
        outvars
            .iter()
            .enumerate()
            .map(|(k, o)| match o {
                Atom::Var(n) if o.is_dropped() => self.unread_output(b, env, j, k, n.range),
                _ => self.atom(b, o),
            })
            .collect()
    }

    /// Output `k` of nested jaxpr `j`, printed as `_` at `at`: zeros of its
    /// type when nothing reads it (`jaxpr_lower::walk::unread_output`).
    fn unread_output(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        j: JaxprId,
        k: usize,
        at: TextRange,
    ) -> LowerResult<Operand<'c, 'f>> {
        let (dt, shape) = jaxpr_lower::walk::unread_output(self.a, self.syntax, j, k, at)?;
        let zero = self.init(b, &dt, ops::Init::Zero)?;
        let ty = AType::new(dt, shape);
        let v = if ty.shape.is_empty() {
            zero
        } else {
            self.broadcast(b, env, zero, &ty, &[], at)?
        };
        Ok(Operand {
            v,
            ty: Cow::Owned(ty),
        })
    }

    /// Lowers a nested jaxpr with the given inputs (constvars first, then
    /// invars) into block `b`, in a scope of its own; a `let` jaxpr is
    /// called through its function instead ([`calls`]).
    pub(crate) fn call(
        &self,
        b: ModuleBlock<'c>,
        outer: &Env<'c>,
        j: JaxprId,
        inputs: &[ModuleValue<'c>],
        at: TextRange,
    ) -> LowerResult<Vec<Operand<'c, 'f>>> {
        let info = self.a.jaxpr(j);
        if matches!(info.origin, check::JaxprOrigin::Let { .. }) {
            let outs = self.call_let(b, outer, j, inputs, at)?;
            return Ok(outs
                .into_iter()
                .zip(&info.outs)
                .map(|(v, o)| Operand {
                    v,
                    ty: Cow::Borrowed(&o.ty),
                })
                .collect());
        }
        let binders = jaxpr_lower::walk::nested_binders(self.a, j, inputs.len(), at)?;
        for (&v, &x) in binders.iter().zip(inputs) {
            self.bind(v, self.fit(b, x, self.var_ty(v)?)?);
        }
        self.body(b, outer, j)
    }

    /// Lowers equation `e`; a panic in it is J0016 at it
    /// (`jaxpr_lower::catching_eqn`).
    pub(crate) fn eqn(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        e: &ast::Eqn,
        id: EqnId,
    ) -> LowerResult<()> {
        jaxpr_lower::catching_eqn(e, || {
            jaxpr_lower::lower_equation(
                &mut EquationSite {
                    lower: self,
                    b,
                    env,
                },
                e,
                id,
            )
        })
    }

    pub(crate) fn bind(&self, v: VarId, x: ModuleValue<'c>) {
        self.vals.borrow_mut()[v.0 as usize] = Some(x);
    }

    /// The value of a variable (`at`: where it is used).
    pub(crate) fn value(&self, v: VarId, at: TextRange) -> LowerResult<ModuleValue<'c>> {
        match self.vals.borrow().get(v.0 as usize).copied().flatten() {
            Some(x) => Ok(x),
            None => internal(at, format!("`{}` has no value here", self.a.var(v).name)),
        }
    }

    pub(crate) fn atom(&self, b: ModuleBlock<'c>, x: &Atom) -> LowerResult<Operand<'c, 'f>> {
        self.atom_as(b, x, None)
    }

    /// [`Self::atom`], an untyped literal (JAX ≤ 0.5) having dtype
    /// `untyped` (`jaxpr_lower::walk::untyped_literal_dtypes`), or else its
    /// text's (`jaxpr_lower::walk::literal_dtype_of_text`).
    pub(crate) fn atom_as(
        &self,
        b: ModuleBlock<'c>,
        x: &Atom,
        untyped: Option<&DType>,
    ) -> LowerResult<Operand<'c, 'f>> {
        match x {
            Atom::Var(n) if jaxpr_lower::walk::untyped_literal_text(self.syntax, x).is_some() => {
                let dt = untyped
                    .cloned()
                    .unwrap_or_else(|| jaxpr_lower::walk::literal_dtype_of_text(&n.text));
                Ok(Operand {
                    v: self.constant(b, &dt, &n.text, n.range)?,
                    ty: Cow::Owned(AType::scalar(dt)),
                })
            }
            Atom::Var(n) => {
                let Some(v) = self.syntax.use_at(n.range.start) else {
                    if n.text == "_" {
                        return jaxpr_lower::walk::unnamed_value(n.range);
                    }
                    return internal(n.range, format!("`{}` is not resolved", n.text));
                };
                Ok(Operand {
                    v: self.value(v, n.range)?,
                    ty: Cow::Borrowed(&self.a.var(v).ty),
                })
            }
            Atom::Lit(l) => {
                let dt = match &l.ty {
                    Some(t) => match DType::from_short(&t.dtype.text) {
                        Some(d) => d,
                        None => {
                            return err(
                                l.range,
                                format!("the literal `{}` has no dtype to build with", l.value),
                            );
                        }
                    },
                    None => untyped
                        .cloned()
                        .unwrap_or_else(|| jaxpr_lower::walk::literal_dtype_of_text(&l.value)),
                };
                Ok(Operand {
                    v: self.constant(b, &dt, &l.value, l.range)?,
                    ty: Cow::Owned(AType::scalar(dt)),
                })
            }
        }
    }

    // ---- types ---------------------------------------------------------------
}

/// Where an equation is lowered: the block it goes in and the values in
/// scope ([`jaxpr_lower::lower_equation`]).
struct EquationSite<'a, 'c, 'f> {
    lower: &'a Lower<'c, 'f>,
    b: ModuleBlock<'c>,
    env: &'a Env<'c>,
}

impl<'e, 'c, 'f> jaxpr_lower::EquationLowering<'e> for EquationSite<'_, 'c, 'f> {
    type Value = ModuleValue<'c>;
    type Type = Cow<'f, AType>;
    const BACKEND: jaxpr_lower::Backend = jaxpr_lower::Backend::Stablehlo;

    fn analysis(&self) -> &Analysis {
        self.lower.a
    }

    fn syntax(&self) -> &Syntax<'_> {
        self.lower.syntax
    }

    fn result_types(&self, e: &ast::Eqn, id: EqnId) -> Vec<Cow<'f, AType>> {
        jaxpr_lower::walk::result_type_refs(self.lower.a, e, id)
    }

    fn operand(&mut self, x: &Atom, untyped: Option<&DType>) -> LowerResult<Operand<'c, 'f>> {
        self.lower.atom_as(self.b, x, untyped)
    }

    fn lower(&mut self, cx: ops::EqnCx<'e, 'c, 'f>) -> LowerResult<Vec<ModuleValue<'c>>> {
        self.lower.lower_eqn(self.b, self.env, &cx)
    }

    fn bind(&mut self, v: VarId, value: ModuleValue<'c>) -> LowerResult<()> {
        let fitted = self.lower.fit(self.b, value, self.lower.var_ty(v)?)?;
        let rank = self.lower.a.var(v).ty.rank();
        let annotated = self.lower.in_manual_subgroup(self.b, fitted, rank)?;
        self.lower.bind(v, annotated);
        Ok(())
    }
}
