//! What a name refers to: in a jaxpr's equations and types, its own
//! binders and the results bound so far (jaxprs are closed: nothing of an
//! enclosing jaxpr is in scope); in a type, also the file's symbolic
//! dimensions, which the main jaxpr's input types introduce.

use crate::checker::Checker;
use crate::{JaxprId, VarInfo, VarRole};
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast::{self, Expr, ExprKind, Jaxpr};
use jaxpr_syntax::diagnostics::{DiagKind, Diagnostic};
use jaxpr_types::{AType, Shape, VarId};
use rustc_hash::{FxHashMap as HashMap, FxHashSet};
use smol_str::SmolStr;

/// Names visible in the jaxpr being checked.
#[derive(Default)]
pub(crate) struct Scope {
    pub(crate) names: HashMap<SmolStr, VarId>,
    /// Names of enclosing jaxprs, for the hint on an undefined variable.
    pub(crate) outer: Vec<HashMap<SmolStr, VarId>>,
}

/// The names `main`'s constvar and invar types use where no earlier binder
/// of `main` has that name: its symbolic dimensions.
pub(crate) fn symbols_of_inputs(main: &Jaxpr) -> FxHashSet<SmolStr> {
    fn names(e: &Expr, bound: &FxHashSet<&str>, out: &mut FxHashSet<SmolStr>) {
        match &e.kind {
            ExprKind::Path(n) if !n.contains('.') && &**n != "None" && !bound.contains(&**n) => {
                out.insert(SmolStr::new(n));
            }
            ExprKind::Neg(x) => names(x, bound, out),
            ExprKind::Binary(_, l, r) => {
                names(l, bound, out);
                names(r, bound, out);
            }
            ExprKind::Call(c) => c.args.iter().for_each(|a| names(&a.value, bound, out)),
            _ => {}
        }
    }
    let mut bound = FxHashSet::default();
    let mut out = FxHashSet::default();
    for b in main.constvars.iter().chain(main.invars.iter()) {
        for d in b.ty.iter().flat_map(|t| t.dims.iter()) {
            names(d, &bound, &mut out);
        }
        bound.insert(&*b.name.text);
    }
    out
}

impl Checker {
    /// Binds a binder in the current scope. Returns None for `_`.
    pub(crate) fn bind(
        &mut self,
        b: &ast::Binder,
        jaxpr: JaxprId,
        role: VarRole,
        declared: Option<AType>,
    ) -> Option<VarId> {
        let ty = match declared {
            Some(t) => t,
            None => match &b.ty {
                Some(t) => self.resolve_type(t, None),
                None => AType {
                    dtype: None,
                    shape: Shape::new(),
                },
            },
        };
        if b.is_dropped() {
            return None;
        }
        self.report_if_bound(&b.name);
        let v = self.new_var(VarInfo {
            name: b.name.text.clone(),
            range: b.name.range,
            binder_range: b.range,
            ty,
            jaxpr,
            role,
            varying: crate::varying_of(b.ty.as_ref()),
        });
        self.enter_scope(&b.name.text, v);
        Some(v)
    }

    /// Binds `name` in the current scope. A name new to it may be the
    /// similar name of an undefined one, whose hint it changes.
    pub(crate) fn enter_scope(&mut self, name: &SmolStr, v: VarId) {
        if self.env.names.insert(name.clone(), v).is_none() {
            self.forget_hints_near(name);
        }
    }

    /// A variable is bound once per jaxpr.
    pub(crate) fn report_if_bound(&mut self, name: &ast::Name) {
        if let Some(&prev) = self.env.names.get(&name.text) {
            let p = self.a.var(prev).clone();
            self.push_diag(
                Diagnostic::error(
                    DiagKind::DuplicateDefinition,
                    name.range,
                    format!("`{}` is already defined in this jaxpr", name.text),
                )
                .with_related(p.range, format!("`{}` first defined here", p.name))
                .with_help("every variable of a jaxpr is bound exactly once; rename one of them"),
            );
        }
    }

    pub(crate) fn symbol_use(&mut self, name: &str, range: TextRange) {
        let entry = self.a.symbols.entry(name.into()).or_default();
        if entry.first.is_none() && self.main_inputs {
            entry.first = Some(range);
        }
        entry.uses.push(range);
    }

    /// Symbolic dimensions must be introduced by the main jaxpr's input shapes
    /// (jax.export derives every symbol's value from them).
    pub(crate) fn check_symbol_scope(&mut self, file: &ast::SourceFile) {
        if file.main.is_none() {
            return;
        }
        let mut missing = Vec::new();
        for (name, info) in &self.a.symbols {
            if info.first.is_none()
                && let Some(&r) = info.uses.first()
            {
                missing.push((name.clone(), r));
            }
        }
        for (name, r) in missing {
            let d = Diagnostic::error(
                DiagKind::DimensionScope,
                r,
                format!("`{name}` is neither a variable in scope nor a symbolic dimension of the inputs"),
            )
            .with_help(format!(
                "symbolic dimensions must appear in the shapes of the top-level inputs; a dimension variable must be an integer scalar bound earlier in the same jaxpr (is `{name}` defined in another jaxpr?)"
            ));
            self.push_diag(d);
        }
        // Record the first use as the introduction for symbols that have one.
        for info in self.a.symbols.values_mut() {
            if info.first.is_none() {
                info.first = info.uses.first().copied();
            }
        }
    }
}
