//! What a check added to the analysis since a point: a streamed check
//! forgets it for each top-level equation (but what later equations read),
//! and the incremental path moves its positions.

use crate::checker::Checker;
use crate::recheck::Mover;
use crate::{Analysis, EqnId, JaxprOrigin};
use jaxpr_types::VarId;

/// The lengths of the analysis' tables at one point of a check: what was
/// added after it can be told apart.
pub(crate) struct Mark {
    pub(crate) vars: usize,
    pub(crate) eqns: usize,
    pub(crate) jaxprs: usize,
    pub(crate) refs: usize,
    pub(crate) let_refs: usize,
}

impl Mark {
    pub(crate) fn of(a: &Analysis) -> Mark {
        Mark {
            vars: a.vars.len(),
            eqns: a.eqns.len(),
            jaxprs: a.jaxprs.len(),
            refs: a.refs.len(),
            let_refs: a.let_refs.len(),
        }
    }

    /// Moves every position recorded after the mark.
    pub(crate) fn move_since(&self, a: &mut Analysis, moved: Mover) {
        for j in &mut a.jaxprs[self.jaxprs..] {
            j.range = moved(j.range);
            j.lambda_range = moved(j.lambda_range);
            if let JaxprOrigin::Let { name_range, .. } = &mut j.origin {
                *name_range = moved(*name_range);
            }
            for o in &mut j.outs {
                o.range = moved(o.range);
            }
        }
        for v in &mut a.vars[self.vars..] {
            v.range = moved(v.range);
            v.binder_range = moved(v.binder_range);
        }
        for e in &mut a.eqns[self.eqns..] {
            e.range = moved(e.range);
            e.primitive_range = moved(e.primitive_range);
        }
        for (v, o) in a.origins.iter_mut() {
            if v.0 as usize >= self.vars {
                o.operand = moved(o.operand);
            }
        }
        for r in &mut a.refs[self.refs..] {
            r.range = moved(r.range);
        }
        for (r, _) in &mut a.let_refs[self.let_refs..] {
            *r = moved(*r);
        }
    }
}

impl Checker {
    /// Room for `vars` variables kept by a streamed check (of each
    /// top-level equation, its results), made before the main jaxpr is
    /// begun: growing the table of variables copied it each time (about
    /// 4 MB in all on transformer150). Room that is never used is never
    /// touched, so costs nothing. (Not the main jaxpr's names: a hash table
    /// touches all of its room, and a generous one took more page faults
    /// than its growth.)
    pub(crate) fn reserve_kept(&mut self, vars: usize) {
        self.a.vars.reserve(vars);
    }

    /// How many result variables top-level equation `id`, checked from
    /// `mark` on, has: the first variables it added.
    pub(crate) fn results_of(&self, mark: &Mark, id: EqnId) -> usize {
        let outs = &self.a.eqn(id).outs;
        let results = outs.iter().flatten().count();
        debug_assert!(
            outs.iter()
                .flatten()
                .all(|v| (v.0 as usize) < mark.vars + results)
        );
        results
    }

    /// Forgets what checking a top-level equation (from `mark` on, with
    /// `results` result variables) added that no later equation reads: all
    /// but its results' variables. Ids of what is forgotten are given again
    /// to the next equation's.
    pub(crate) fn forget_eqn(&mut self, mark: &Mark, results: usize) {
        let a = &mut self.a;
        let vars = mark.vars;
        a.vars.truncate(vars + results);
        a.eqns.truncate(mark.eqns);
        a.jaxprs.truncate(mark.jaxprs);
        a.refs.truncate(mark.refs);
        a.let_refs.truncate(mark.let_refs);
        // Variables past the results are gone: their ids will be reused.
        let kept = |v: &VarId| (v.0 as usize) < vars + results;
        if !a.origins.is_empty() {
            a.origins.retain(|v, _| kept(v));
        }
        if !a.shard_maps.is_empty() {
            a.shard_maps.retain(|e, _| (e.0 as usize) < mark.eqns);
        }
        if !self.bad_dims.is_empty() {
            self.bad_dims.retain(kept);
        }
    }
}
