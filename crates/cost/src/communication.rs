//! What a collective moves between devices: the bytes each device of its
//! group sends (and receives), by the algorithm its registry row names
//! ([`Exchange`]). The group is the mesh axes the checker found the
//! collective runs over (`Analysis::collective_axes`). Reference: `docs/cost.md`.

use crate::Amount;
use crate::rules::{operand_types, result_types, scan_length, sum_bytes};
use jaxpr_check::JaxprOrigin;
use jaxpr_check::registry::CostRule;
use jaxpr_check::registry::Exchange;
use jaxpr_check::registry::Prim;
use jaxpr_check::{Analysis, EqnId};
use jaxpr_syntax::ast;
use smol_str::SmolStr;

/// One collective's traffic, per device.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Communication {
    pub exchange: Exchange,
    /// The mesh axes it runs over, with their sizes.
    pub axes: Vec<(SmolStr, i64)>,
    /// The devices of one group (`n`): the product of the axes' sizes.
    pub devices: i64,
    /// The bytes each device sends, as many as it receives (for
    /// `ppermute`, a device that is a source of `perm`).
    pub bytes: Amount,
    /// `ppermute`: how many devices of the group send (the pairs of `perm`).
    pub senders: Option<i64>,
}

impl Communication {
    /// The algorithm the count assumes, with `n`:
    /// `ring all-reduce: 2(n−1)/n × the operand's 96 B, n = 8 (x)`.
    pub fn algorithm(&self) -> String {
        let n = self.devices;
        let axes: Vec<String> = self
            .axes
            .iter()
            .map(|(a, size)| format!("{a}: {size}"))
            .collect();
        let group = format!("n = {n} ({})", axes.join(", "));
        match self.exchange {
            Exchange::AllReduce => {
                format!("ring all-reduce, 2(n−1)/n × the operand's bytes, {group}")
            }
            Exchange::AllGather => {
                format!("ring all-gather, (n−1)/n × the result's bytes, {group}")
            }
            Exchange::ReduceScatter => {
                format!("ring reduce-scatter, (n−1)/n × the operand's bytes, {group}")
            }
            Exchange::AllToAll => format!("all-to-all, (n−1)/n × the operand's bytes, {group}"),
            Exchange::Permute => match self.senders {
                Some(k) => format!(
                    "permutation, the operand's bytes from each of the {k} sources of `perm`, {group}"
                ),
                None => format!("permutation, the operand's bytes from each source, {group}"),
            },
            Exchange::Nothing => format!("moves nothing between devices, {group}"),
        }
    }
}

/// The traffic of equation `id` (its syntax `eqn`), when it is a collective
/// over mesh axes; `None` otherwise (a `psum` over a named `vmap` axis is a
/// reduction on one device).
pub fn communication(analysis: &Analysis, eqn: &ast::Eqn, id: EqnId) -> Option<Communication> {
    let info = analysis.eqn(id);
    let exchange = info.prim.map(Prim::row)?.exchange?;
    let mesh = analysis.collective_axes(id)?;
    let n = mesh.devices();
    let operands = operand_types(analysis, eqn);
    let results = result_types(analysis, info);
    let operand_bytes = sum_bytes(&operands, None, analysis);
    let result_bytes = sum_bytes(&results, None, analysis);
    let mut senders = None;
    let bytes = match exchange {
        Exchange::Nothing => Amount::zero(),
        // Each value reduced on its own: 2(n−1) chunks of ⌈bytes/n⌉ (a
        // positional `psum` axis reduces first, so the result is what moves).
        Exchange::AllReduce => results
            .iter()
            .map(|ty| sum_bytes([ty], None, analysis))
            .map(|b| b.ceil_div(n).scale(2 * (n - 1)))
            .fold(Amount::zero(), |acc, b| acc.add(&b)),
        // (n−1)/n of the result, which is n operands: n−1 operands.
        Exchange::AllGather => operand_bytes.scale(n - 1),
        // (n−1)/n of the operand, which is n results: n−1 results.
        Exchange::ReduceScatter => result_bytes.scale(n - 1),
        Exchange::AllToAll => operand_bytes.ceil_div(n).scale(n - 1),
        Exchange::Permute => {
            senders = eqn
                .param("perm")
                .and_then(|p| p.value.as_seq())
                .map(|pairs| pairs.len() as i64);
            operand_bytes
        }
    };
    Some(Communication {
        exchange,
        axes: mesh.axes,
        devices: n,
        bytes,
        senders,
    })
}

/// Why an equation's number of runs per call is not known from the program:
/// the equation around it that decides (a `while` loop, whose trip count is
/// a value; one branch of a `cond`; a loop whose length is not a parameter).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct UnknownRuns {
    pub around: EqnId,
    pub why: &'static str,
}

/// How many times equation `id` runs in one call of the program, on each
/// device (every device runs the same program): the product of the `scan`
/// lengths around it (symbolic in a shape-polymorphic program), summed
/// over the call sites of a `let` jaxpr it is in. `syntax` is
/// [`crate::eqns_by_start`] of the file.
pub fn runs(
    analysis: &Analysis,
    syntax: &rustc_hash::FxHashMap<u32, &ast::Eqn>,
    id: EqnId,
) -> Result<Amount, UnknownRuns> {
    jaxpr_runs(analysis, syntax, analysis.eqn(id).jaxpr, 0)
}

fn jaxpr_runs(
    analysis: &Analysis,
    syntax: &rustc_hash::FxHashMap<u32, &ast::Eqn>,
    j: jaxpr_check::JaxprId,
    depth: usize,
) -> Result<Amount, UnknownRuns> {
    // Deeper than any program nests: a cycle of `let`s the checker let
    // through is not followed.
    if depth > 256 {
        return Ok(Amount::unknown());
    }
    let holder_runs = |holder: EqnId| -> Result<Amount, UnknownRuns> {
        let outer = jaxpr_runs(analysis, syntax, analysis.eqn(holder).jaxpr, depth + 1)?;
        let unknown = |why| {
            Err(UnknownRuns {
                around: holder,
                why,
            })
        };
        let rule = analysis
            .eqn(holder)
            .prim
            .map(|p| p.row().cost.unwrap_or(p.row().family.cost()).rule);
        match rule {
            Some(CostRule::Scan(_)) => {
                let length = syntax
                    .get(&analysis.eqn(holder).range.start)
                    .and_then(|e| e.param("length"))
                    .map(|p| scan_length(&p.value));
                match length {
                    Some(n) if n.poly().is_some() => Ok(outer.mul(&n)),
                    _ => unknown("a loop whose number of iterations is a value"),
                }
            }
            Some(CostRule::While(_)) => unknown("a `while` loop, whose trip count is a value"),
            Some(CostRule::Cond) => unknown("one branch of a `cond`, chosen by a value"),
            _ => Ok(outer),
        }
    };
    match &analysis.jaxpr(j).origin {
        JaxprOrigin::Main => Ok(Amount::constant(1)),
        JaxprOrigin::Param { eqn, .. } => holder_runs(*eqn),
        JaxprOrigin::Let { .. } => {
            let mut total = Amount::constant(0);
            for (k, e) in analysis.eqns.iter().enumerate() {
                for (_, callee) in &e.callees {
                    if *callee == j {
                        total = total.add(&holder_runs(EqnId(k as u32))?);
                    }
                }
            }
            Ok(total)
        }
    }
}
