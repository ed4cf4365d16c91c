//! The `let` jaxprs of a group (a file's, or a nested jaxpr's own): each
//! is checked after the ones it calls, whatever order JAX printed them in.

use crate::JaxprOrigin;
use crate::checker::Checker;
use jaxpr_syntax::ast::{self, Expr, ExprKind, Jaxpr};
use jaxpr_syntax::diagnostics::{DiagKind, Diagnostic};
use rustc_hash::FxHashMap as HashMap;

impl Checker {
    /// Checks a group of `let` jaxprs, each after the ones it names (JAX
    /// prints the group in no particular order).
    pub(crate) fn check_lets(&mut self, lets: &[ast::LetJaxpr]) {
        self.lets_pending = lets.iter().map(|l| l.name.text.clone()).collect();
        for k in let_order(lets) {
            let l = &lets[k];
            self.lets_pending.remove(&l.name.text);
            let id = self.check_jaxpr(
                &l.jaxpr,
                JaxprOrigin::Let {
                    name: l.name.text.clone(),
                    name_range: l.name.range,
                },
                None,
                None,
            );
            if let Some(prev) = self.lets.insert(l.name.text.clone(), id) {
                let prev_range = self.a.jaxpr(prev).origin.clone();
                let mut d = Diagnostic::error(
                    DiagKind::DuplicateDefinition,
                    l.name.range,
                    format!("the jaxpr `{}` is defined twice", l.name.text),
                );
                if let JaxprOrigin::Let { name_range, .. } = prev_range {
                    d = d.with_related(name_range, "first defined here");
                }
                self.a.diagnostics.push(d);
            }
        }
    }
}

/// The order the whole-file check checks a group of `let`s in (each after
/// the ones it calls), and the `let`s each calls (by index).
pub fn let_calls(lets: &[ast::LetJaxpr]) -> (Vec<usize>, Vec<Vec<usize>>) {
    let index: HashMap<&str, usize> = lets
        .iter()
        .enumerate()
        .map(|(k, l)| (&*l.name.text, k))
        .collect();
    let callees = (lets.iter())
        .map(|l| {
            let mut out = Vec::new();
            let_refs(&l.jaxpr, &mut |name| out.extend(index.get(name).copied()));
            out.sort_unstable();
            out.dedup();
            out
        })
        .collect();
    (let_order(lets), callees)
}

/// The order in which to check a group of `let` jaxprs: each after the
/// ones its equations name (`jaxpr=NAME`), otherwise in text order. A
/// cycle is broken where it closes (the checker reports it there).
fn let_order(lets: &[ast::LetJaxpr]) -> Vec<usize> {
    let index: HashMap<&str, usize> = lets
        .iter()
        .enumerate()
        .map(|(k, l)| (&*l.name.text, k))
        .collect();
    let callees: Vec<Vec<usize>> = lets
        .iter()
        .map(|l| {
            let mut out = Vec::new();
            let_refs(&l.jaxpr, &mut |name| out.extend(index.get(name).copied()));
            out
        })
        .collect();
    // Depth-first, iteratively (a group may be long): a `let` is placed
    // after all its callees.
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        New,
        Open,
        Done,
    }
    let mut state = vec![State::New; lets.len()];
    let mut order = Vec::with_capacity(lets.len());
    for root in 0..lets.len() {
        if state[root] != State::New {
            continue;
        }
        let mut stack = vec![(root, 0usize)];
        state[root] = State::Open;
        while let Some((k, next)) = stack.last_mut() {
            let k = *k;
            if let Some(&c) = callees[k].get(*next) {
                *next += 1;
                if state[c] == State::New {
                    state[c] = State::Open;
                    stack.push((c, 0));
                }
            } else {
                state[k] = State::Done;
                order.push(k);
                stack.pop();
            }
        }
    }
    order
}

/// Calls `f` with each name that a jaxpr-valued parameter of `j` gives
/// (`jaxpr=NAME`), nested jaxprs included.
fn let_refs(j: &Jaxpr, f: &mut dyn FnMut(&str)) {
    fn value(v: &Expr, jaxpr_param: bool, f: &mut dyn FnMut(&str)) {
        match &v.kind {
            ExprKind::Path(name) if jaxpr_param => f(name),
            ExprKind::Jaxpr(j) => let_refs(j, f),
            ExprKind::Tuple(xs) | ExprKind::List(xs) => {
                xs.iter().for_each(|x| value(x, jaxpr_param, f))
            }
            _ => {}
        }
    }
    for e in &j.eqns {
        let jaxpr_params = crate::registry::lookup(&e.primitive.text).map(|p| p.jaxpr_params);
        for p in &e.params {
            let name = &*p.name.text;
            let jaxpr_param = jaxpr_params.map_or(name.contains("jaxpr"), |ps| ps.contains(&name));
            value(&p.value, jaxpr_param, f);
        }
    }
}
