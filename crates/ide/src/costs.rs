//! Costs where the text is: a summary per jaxpr (its totals and peak) for
//! code lenses and inlay hints, and an equation's cost on its node of the
//! dataflow graph (`jaxpr-graph`'s annotator hook).

use super::{FileView, describe_jaxpr, line_of};
use jaxpr_check::{Analysis, EqnId, JaxprId, JaxprOrigin};
use jaxpr_cost::{Amount, EqnCost, FileCost, JaxprCost, XlaCount};
use jaxpr_graph::{Annotation, EquationAnnotator};
use jaxpr_syntax::{TextRange, ast};
use std::fmt::Write;

/// Where the IDE functions read costs from: the database's per-item query
/// in the server, a [`FileCost`] computed once elsewhere.
pub trait CostSource {
    fn eqn(&self, e: EqnId) -> EqnCost;
    fn jaxpr(&self, j: JaxprId) -> JaxprCost;
}

impl CostSource for FileCost {
    fn eqn(&self, e: EqnId) -> EqnCost {
        FileCost::eqn(self, e).clone()
    }
    fn jaxpr(&self, j: JaxprId) -> JaxprCost {
        FileCost::jaxpr(self, j).clone()
    }
}

impl CostSource for jaxpr_db::Costs<'_> {
    fn eqn(&self, e: EqnId) -> EqnCost {
        jaxpr_db::Costs::eqn(self, e)
    }
    fn jaxpr(&self, j: JaxprId) -> JaxprCost {
        jaxpr_db::Costs::jaxpr(self, j)
    }
}

/// One jaxpr's totals, for a code lens above it or an inlay hint at the end
/// of its `lambda` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CostSummary {
    pub jaxpr: JaxprId,
    /// The `let`'s name, or the jaxpr's `lambda`: where a code lens goes.
    pub anchor: TextRange,
    /// The end of the line holding the `lambda`: where an inlay hint goes.
    pub line_end: u32,
    /// `cost: 120 FLOPs · 15 transcendentals · 188 B accessed · peak 112 B`,
    /// for a code lens, which has the whole line above the jaxpr.
    pub label: String,
    /// `cost: 120 FLOPs · peak 112 B`, for an inlay hint: VS Code cuts inlay
    /// hints after 43 characters by default (`editor.inlayHints.maximumLength`),
    /// so it keeps the two amounts users read first; the tooltip has all.
    pub short_label: String,
    /// The exact amounts, where the peak is reached, and whether XLA counts
    /// the same.
    pub tooltip: String,
}

/// A summary per jaxpr (main, `let`s and nested ones) whose `lambda` lies
/// in `range`, in text order.
pub fn cost_summaries(f: &FileView, range: TextRange) -> Vec<CostSummary> {
    let a = f.analysis;
    let mut shown: Vec<JaxprId> = (0..a.jaxprs.len() as u32)
        .map(JaxprId)
        .filter(|&j| range.touches(a.jaxpr(j).lambda_range.start))
        .collect();
    shown.sort_by_key(|&j| anchor(a, j).start);
    // Without the database, the costs of the items shown are computed once.
    let computed = match f.costs {
        Some(_) => None,
        None => Some(f.computed_costs(&shown)),
    };
    let costs: &dyn CostSource = match (&computed, f.costs) {
        (Some(computed), _) => computed,
        (None, Some(costs)) => costs,
        (None, None) => unreachable!("computed above when the view has no cost source"),
    };
    shown
        .into_iter()
        .map(|j| {
            let totals = costs.jaxpr(j);
            let lambda = a.jaxpr(j).lambda_range.start as usize;
            let line_end = f.text[lambda..]
                .find(['\n', '\r'])
                .map_or(f.text.len(), |n| lambda + n) as u32;
            CostSummary {
                jaxpr: j,
                anchor: anchor(a, j),
                line_end,
                label: format!(
                    "cost: {} · peak {}",
                    compact_cost(&totals.total),
                    compact_bytes(&totals.peak.bytes)
                ),
                short_label: format!(
                    "cost: {} FLOPs · peak {}",
                    compact_amount(&totals.total.flops),
                    compact_bytes(&totals.peak.bytes)
                ),
                tooltip: summary_tooltip(f, j, &totals),
            }
        })
        .collect()
}

fn anchor(a: &Analysis, j: JaxprId) -> TextRange {
    match &a.jaxpr(j).origin {
        JaxprOrigin::Let { name_range, .. } => *name_range,
        _ => a.jaxpr(j).lambda_range,
    }
}

fn summary_tooltip(f: &FileView, j: JaxprId, totals: &JaxprCost) -> String {
    let a = f.analysis;
    let mut s = describe_jaxpr(a, j, f.lines);
    let _ = write!(
        s,
        "\nFLOPs: {}\ntranscendentals: {}\nbytes accessed: {}\npeak: {} bytes live",
        totals.total.flops,
        totals.total.transcendentals,
        totals.total.bytes_accessed,
        totals.peak.bytes
    );
    if !totals.total.communicated.is_zero() {
        let _ = write!(
            s,
            "\ncommunicated: {} bytes sent and received per device",
            totals.total.communicated
        );
    }
    if totals.devices > 1 {
        let _ = write!(s, "\n(counts per device, of {} devices)", totals.devices);
    }
    if let Some(e) = totals.peak.at {
        let eqn = a.eqn(e);
        let _ = write!(
            s,
            " at {} (line {})",
            eqn.primitive,
            line_of(f.lines, eqn.range.start)
        );
    }
    if let XlaCount::Differs(why) = totals.xla {
        let _ = write!(s, "\nXLA's count differs: {why}");
    }
    s
}

/// A count for a label: exact below 10,000, else three significant digits
/// and an SI prefix (`12.6G`); symbolic amounts as they are (`2*b*n`).
pub fn compact_amount(amount: &Amount) -> String {
    let Some(n) = amount.as_constant() else {
        return amount.to_string();
    };
    if n.abs() < 10_000 {
        return n.to_string();
    }
    let mut value = n as f64;
    let mut prefix = "";
    for p in ["k", "M", "G", "T", "P", "E"] {
        if value.abs() < 1000.0 {
            break;
        }
        value /= 1000.0;
        prefix = p;
    }
    let digits = if value.abs() >= 100.0 {
        0
    } else if value.abs() >= 10.0 {
        1
    } else {
        2
    };
    format!("{value:.digits$}{prefix}")
}

/// Bytes for a label: `188 B`, `12.6 GB`, `12*b*n bytes`.
fn compact_bytes(amount: &Amount) -> String {
    let n = compact_amount(amount);
    if amount.as_constant().is_none() {
        return format!("{n} bytes");
    }
    match n.char_indices().last() {
        Some((at, prefix)) if prefix.is_ascii_alphabetic() => format!("{} {prefix}B", &n[..at]),
        _ => format!("{n} B"),
    }
}

/// `120 FLOPs · 15 transcendentals · 188 B accessed`.
fn compact_cost(cost: &jaxpr_cost::Cost) -> String {
    format!(
        "{} FLOPs · {} transcendentals · {} accessed",
        compact_amount(&cost.flops),
        compact_amount(&cost.transcendentals),
        compact_bytes(&cost.bytes_accessed)
    )
}

/// A collective's traffic pattern, for labels.
pub fn exchange_name(exchange: jaxpr_cost::Exchange) -> &'static str {
    match exchange {
        jaxpr_cost::Exchange::AllReduce => "all-reduce",
        jaxpr_cost::Exchange::AllGather => "all-gather",
        jaxpr_cost::Exchange::ReduceScatter => "reduce-scatter",
        jaxpr_cost::Exchange::Permute => "permute",
        jaxpr_cost::Exchange::AllToAll => "all-to-all",
        jaxpr_cost::Exchange::Nothing => "no traffic",
    }
}

/// The graph's annotator: each equation's cost (`cost: 120 FLOPs · 0 tr. ·
/// 188 B`) on its node, from the checked file's analysis.
pub struct CostAnnotations<'a> {
    pub analysis: &'a Analysis,
    pub costs: &'a dyn CostSource,
}

impl EquationAnnotator for CostAnnotations<'_> {
    fn annotate(&self, eqn: &ast::Eqn, out: &mut Vec<Annotation>) {
        let Some(e) = self
            .analysis
            .eqn_with_primitive_at(eqn.primitive.range.start)
        else {
            return;
        };
        let cost = self.costs.eqn(e);
        let total = &cost.total;
        let mut value = format!(
            "{} FLOPs · {} tr. · {}",
            compact_amount(&total.flops),
            compact_amount(&total.transcendentals),
            compact_bytes(&total.bytes_accessed)
        );
        if cost.dropped.is_some() {
            value.push_str(" (not lowered)");
        }
        out.push(Annotation {
            key: "cost".into(),
            value,
        });
        if let Some(c) = jaxpr_cost::communication(self.analysis, eqn, e) {
            out.push(Annotation {
                key: "sends".into(),
                value: format!(
                    "{}/device ({})",
                    compact_bytes(&c.bytes),
                    exchange_name(c.exchange)
                ),
            });
        }
    }

    fn collective(&self, eqn: &ast::Eqn) -> Option<String> {
        let e = self
            .analysis
            .eqn_with_primitive_at(eqn.primitive.range.start)?;
        let c = jaxpr_cost::communication(self.analysis, eqn, e)?;
        Some(format!(
            "{} {}/device, n = {}",
            exchange_name(c.exchange),
            compact_bytes(&c.bytes),
            c.devices
        ))
    }
}
