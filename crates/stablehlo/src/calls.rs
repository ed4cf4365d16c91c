//! `let` jaxprs as functions: each `let` jaxpr a program calls becomes one
//! `func.func private` that every call site calls with `func.call`
//! (inlining them made a "diamond" of `let`s, each calling the previous
//! twice, grow exponentially), and the functions' bodies are lowered from a
//! worklist after `@main`, never from inside the body that calls them
//! (lowering them where they were called recursed once per `let` of a
//! chain and overflowed the stack at ten thousand).
//!
//! A let function takes the jaxpr's binders (constvars, then invars), then
//! the values of the symbolic dimensions in scope at the call
//! (`tensor<i64>`, sorted by name), and returns the jaxpr's outputs.

use super::{Env, Lower, ModuleBlock, ModuleValue};
use jaxpr_check::JaxprId;
use jaxpr_lower::LowerResult;
use jaxpr_syntax::TextRange;
use jaxpr_types::VarId;
use jaxpr_types::poly::Symbol;
use melior::ir::attribute::FlatSymbolRefAttribute;
use melior::ir::block::BlockLike;
use melior::ir::{Module, Type};

/// A let function declared by a call and not yet lowered.
pub(crate) struct Pending {
    name: String,
    j: JaxprId,
    syms: Vec<Symbol>,
    /// The mesh of the `shard_map` it is the body of, if any.
    mesh: Mesh,
}

/// The mesh in scope where a let function is called.
type Mesh = Option<std::rc::Rc<jaxpr_check::ShardMapLayout>>;

/// The let functions of a lowering: their names by jaxpr, symbols passed
/// and the mesh in scope (a body's collectives depend on it), and those
/// whose bodies are still to be lowered.
#[derive(Default)]
pub(crate) struct LetFunctions {
    names: std::collections::HashMap<(JaxprId, Vec<Symbol>, Mesh), String>,
    pending: Vec<Pending>,
    /// How many functions were declared: their names' suffixes (names are
    /// forgotten, numbers never given twice).
    declared: usize,
}

impl<'c> Lower<'c, '_> {
    /// Calls the let jaxpr `j` on `inputs` through its function.
    pub(crate) fn call_let(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        j: JaxprId,
        inputs: &[ModuleValue<'c>],
        at: TextRange,
    ) -> LowerResult<Vec<ModuleValue<'c>>> {
        let binders = jaxpr_lower::walk::nested_binders(self.a, j, inputs.len(), at)?;
        let mut syms: Vec<Symbol> = env.syms.keys().cloned().collect();
        syms.sort();
        let mut args = binders
            .iter()
            .zip(inputs)
            .map(|(&v, &x)| self.fit(b, x, self.var_ty(v)?))
            .collect::<LowerResult<Vec<_>>>()?;
        args.extend(syms.iter().map(|s| env.syms[s]));
        let (_, out_tys) = self.let_signature(j, &binders, syms.len())?;
        let name = self.let_function(j, syms);
        let call = melior::dialect::func::call(
            self.cx,
            FlatSymbolRefAttribute::new(self.cx, &name),
            &args,
            &out_tys,
            self.loc,
        );
        let op = b.append_operation(call);
        Ok((0..out_tys.len())
            .map(|i| op.result(i).expect("result").into())
            .collect())
    }

    /// The argument and result types of `j`'s let function.
    fn let_signature(
        &self,
        j: JaxprId,
        binders: &[VarId],
        syms: usize,
    ) -> LowerResult<(Vec<Type<'c>>, Vec<Type<'c>>)> {
        let mut args = binders
            .iter()
            .map(|&v| self.var_ty(v))
            .collect::<LowerResult<Vec<_>>>()?;
        let size = self.tensor_of("i64", &[])?;
        args.extend(std::iter::repeat_n(size, syms));
        let info = self.a.jaxpr(j);
        let outs = info
            .outs
            .iter()
            .map(|o| self.ty(&o.ty, o.range))
            .collect::<LowerResult<Vec<_>>>()?;
        Ok((args, outs))
    }

    /// The name of `j`'s let function for symbols `syms`, declared (and
    /// queued to be lowered) on first use.
    fn let_function(&self, j: JaxprId, syms: Vec<Symbol>) -> String {
        let mut fns = self.let_functions.borrow_mut();
        let key = (j, syms, self.mesh.borrow().clone());
        if let Some(name) = fns.names.get(&key) {
            return name.clone();
        }
        let base = match &self.a.jaxpr(j).origin {
            jaxpr_check::JaxprOrigin::Let { name, .. } => name
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect(),
            _ => String::from("let"),
        };
        let name = format!("{base}_{}", fns.declared);
        fns.declared += 1;
        fns.names.insert(key.clone(), name.clone());
        fns.pending.push(Pending {
            name: name.clone(),
            j: key.0,
            syms: key.1,
            mesh: key.2,
        });
        name
    }

    /// Lowers the bodies of the let functions declared so far, and of those
    /// their bodies declare, one after another, into `module`.
    pub(crate) fn lower_let_functions(&self, module: &Module<'c>) -> LowerResult<()> {
        self.lower_let_functions_from(module, 0)
    }

    /// Lowers the pending let functions of jaxprs `first` and later (and
    /// those their bodies declare), then forgets their names: a lowering
    /// fed equation by equation calls it after each equation with the
    /// first id the equation's own jaxprs have, which the next equation's
    /// jaxprs get again.
    pub(crate) fn lower_let_functions_from(
        &self,
        module: &Module<'c>,
        first: usize,
    ) -> LowerResult<()> {
        let nested = |j: JaxprId| j.0 as usize >= first;
        loop {
            let next = {
                let mut fns = self.let_functions.borrow_mut();
                let at = fns.pending.iter().rposition(|p| nested(p.j));
                at.map(|i| fns.pending.remove(i))
            };
            let Some(p) = next else { break };
            self.let_body(module, &p)?;
        }
        if first > 0 {
            self.let_functions
                .borrow_mut()
                .names
                .retain(|(j, _, _), _| !nested(*j));
        }
        Ok(())
    }

    fn let_body(&self, module: &Module<'c>, p: &Pending) -> LowerResult<()> {
        let info = self.a.jaxpr(p.j);
        let binders: Vec<VarId> = info.constvars.iter().chain(&info.invars).copied().collect();
        let (in_tys, out_tys) = self.let_signature(p.j, &binders, p.syms.len())?;
        let (block, b, args) = self.new_block(&in_tys);
        for (&v, &x) in binders.iter().zip(&args) {
            self.bind(v, x);
        }
        let mut env = Env::default();
        for (s, &x) in p.syms.iter().zip(&args[binders.len()..]) {
            env.syms.insert(s.clone(), x);
        }
        let outer = self.mesh.replace(p.mesh.clone());
        let outs = self.body(b, &env, p.j);
        *self.mesh.borrow_mut() = outer;
        let outs = outs?
            .iter()
            .zip(&out_tys)
            .map(|(o, &t)| self.fit(b, o.v, t))
            .collect::<LowerResult<Vec<_>>>()?;
        self.append_function(
            module,
            &p.name,
            "private",
            (block, b),
            &outs,
            &in_tys,
            &out_tys,
        );
        Ok(())
    }
}
