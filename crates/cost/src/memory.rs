//! The peak of live memory: the bytes of the values live at once while a
//! jaxpr runs, following its equation order.
//!
//! A jaxpr's arguments (and constants) are live throughout; an equation's
//! results become live when it runs and die after their last use, except
//! the jaxpr's outputs, which live to the end. An equation that runs nested
//! jaxprs adds, while it runs, the largest of their temporaries (a nested
//! peak less its arguments, which are the caller's operands).

use crate::Walk;
use crate::amount::{Amount, bytes};
use crate::rules::result_types;
use jaxpr_check::{EqnId, JaxprId, VarRole};
use jaxpr_syntax::ast;
use jaxpr_types::VarId;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// The most bytes live at once, and the equation where it is first reached
/// (`None`: before any equation runs, or not known to be one of them).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Peak {
    pub bytes: Amount,
    pub at: Option<EqnId>,
    /// The arguments' bytes (constants included), part of `bytes`.
    pub arguments: Amount,
    /// The outputs' bytes.
    pub outputs: Amount,
}

impl Peak {
    pub fn unknown() -> Peak {
        Peak {
            bytes: Amount::unknown(),
            at: None,
            arguments: Amount::unknown(),
            outputs: Amount::unknown(),
        }
    }
}

pub(crate) fn peak(walk: &mut Walk<'_, '_>, id: JaxprId) -> Peak {
    let analysis = walk.analysis;
    let info = analysis.jaxpr(id);
    let var_bytes = |v: VarId| bytes(&analysis.var(v).ty, None, analysis);
    let arguments = info
        .constvars
        .iter()
        .chain(&info.invars)
        .fold(Amount::zero(), |acc, &v| acc.add(&var_bytes(v)));
    let outputs = info.outs.iter().fold(Amount::zero(), |acc, out| {
        acc.add(&bytes(&out.ty, None, analysis))
    });
    let kept: HashSet<VarId> = info.outs.iter().filter_map(|o| o.var).collect();
    // The last equation (by position in this jaxpr) that reads each value.
    let mut last_use: HashMap<VarId, usize> = HashMap::default();
    let mut syntax: Vec<Option<&ast::Eqn>> = Vec::with_capacity(info.eqns.len());
    for (position, &e) in info.eqns.iter().enumerate() {
        let eqn = walk.syntax.get(&analysis.eqn(e).range.start).copied();
        if let Some(eqn) = eqn {
            for atom in eqn.args.iter() {
                if let ast::Atom::Var(name) = atom
                    && let Some(r) = analysis.ref_at(name.range)
                {
                    last_use.insert(r.var, position);
                }
            }
        }
        syntax.push(eqn);
    }
    let mut dying: Vec<Vec<VarId>> = vec![Vec::new(); info.eqns.len()];
    for (&var, &position) in &last_use {
        let temporary = matches!(analysis.var(var).role, VarRole::Result { .. })
            && analysis.var(var).jaxpr == id;
        if temporary && !kept.contains(&var) {
            dying[position].push(var);
        }
    }
    let mut live = arguments.clone();
    let mut best = Peak {
        bytes: live.clone(),
        at: None,
        arguments: arguments.clone(),
        outputs,
    };
    for (position, &e) in info.eqns.iter().enumerate() {
        let eqn_info = analysis.eqn(e);
        let results = result_types(analysis, eqn_info);
        let fallback = results.first().cloned().flatten().and_then(|t| t.dtype);
        let mut produced = Amount::zero();
        let mut unused = Amount::zero();
        for (i, ty) in results.iter().enumerate() {
            let size = match ty {
                Some(ty) => bytes(ty, fallback.as_ref(), analysis),
                None => Amount::unknown(),
            };
            produced = produced.add(&size);
            let var = eqn_info.outs.get(i).copied().flatten();
            if var.is_none_or(|v| !last_use.contains_key(&v) && !kept.contains(&v)) {
                unused = unused.add(&size);
            }
        }
        let mut temporaries = Amount::zero();
        let callees: Vec<JaxprId> = eqn_info.callees.iter().map(|(_, j)| *j).collect();
        for callee in callees {
            let nested = walk.jaxpr(callee).peak;
            temporaries = temporaries.max(&nested.bytes.sub(&nested.arguments));
        }
        let during = live.add(&produced).add(&temporaries);
        if during.surely_ge(&best.bytes) && !best.bytes.surely_ge(&during) {
            best.bytes = during;
            best.at = Some(e);
        } else if !best.bytes.surely_ge(&during) {
            best.bytes = best.bytes.max(&during);
            best.at = Some(e);
        }
        live = live.add(&produced).sub(&unused);
        if syntax[position].is_some() {
            for &var in &dying[position] {
                live = live.sub(&var_bytes(var));
            }
        }
    }
    best
}
