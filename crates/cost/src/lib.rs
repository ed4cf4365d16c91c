//! What a checked jaxpr costs, computed from its types: for every equation,
//! jaxpr and file the FLOPs, transcendentals and bytes accessed as XLA's
//! HLO cost analysis counts JAX's lowering of it (`jax.jit(f).lower(*args)
//! .cost_analysis()`), and the peak of the bytes live at once, with the
//! equation that reaches it. Counts stay symbolic in the file's symbolic
//! dimensions and dimension variables ([`Amount`]).
//!
//! Each primitive's rule is its row of the primitive registry
//! (`jaxpr_check::registry`, [`CostRule`]); this crate applies the rules to
//! the types and walks the nested jaxprs. Reference: `docs/cost.md`.

mod amount;
mod communication;
mod formulas;
mod memory;
mod rules;
pub mod tolerance;

pub use amount::{Amount, bytes, element_bytes, elements, product};
pub use communication::{Communication, UnknownRuns, communication, runs};
pub use jaxpr_check::registry::Exchange;
pub use jaxpr_check::registry::{CostRule, XlaCount};
pub use memory::Peak;
pub use tolerance::Slack;

use jaxpr_check::registry::{LoopLowering, Prim};
use jaxpr_check::{Analysis, EqnId, JaxprId};
use jaxpr_syntax::ast;
use rustc_hash::FxHashMap as HashMap;

/// FLOPs, transcendentals and bytes accessed, and the bytes a device sends
/// to the others through collectives (as many as it receives, for the
/// algorithms [`Communication`] assumes). In a multi-device body the
/// counts are one device's.
#[derive(Clone, PartialEq, Eq, Debug, Hash)]
pub struct Cost {
    pub flops: Amount,
    pub transcendentals: Amount,
    pub bytes_accessed: Amount,
    pub communicated: Amount,
}

impl Cost {
    pub fn zero() -> Cost {
        Cost {
            flops: Amount::zero(),
            transcendentals: Amount::zero(),
            bytes_accessed: Amount::zero(),
            communicated: Amount::zero(),
        }
    }
    pub fn unknown() -> Cost {
        Cost {
            flops: Amount::unknown(),
            transcendentals: Amount::unknown(),
            bytes_accessed: Amount::unknown(),
            communicated: Amount::unknown(),
        }
    }
    pub(crate) fn zip(&self, other: &Cost, op: impl Fn(&Amount, &Amount) -> Amount) -> Cost {
        Cost {
            flops: op(&self.flops, &other.flops),
            transcendentals: op(&self.transcendentals, &other.transcendentals),
            bytes_accessed: op(&self.bytes_accessed, &other.bytes_accessed),
            communicated: op(&self.communicated, &other.communicated),
        }
    }
    pub fn add(&self, other: &Cost) -> Cost {
        self.zip(other, Amount::add)
    }
    /// Each count the larger of the two (XLA's rule for a conditional).
    pub fn max(&self, other: &Cost) -> Cost {
        self.zip(other, Amount::max)
    }
    pub fn times(&self, count: &Amount) -> Cost {
        Cost {
            flops: self.flops.mul(count),
            transcendentals: self.transcendentals.mul(count),
            bytes_accessed: self.bytes_accessed.mul(count),
            communicated: self.communicated.mul(count),
        }
    }
}

/// How loops count their body.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum LoopCount {
    /// A `scan` body once per iteration (`length` times); a `while` body
    /// once, its trip count being unknown.
    #[default]
    Iterations,
    /// Every loop body once, as XLA's cost analysis counts the `while`
    /// loop JAX lowers a `scan` to (what `tests/xla.rs` compares).
    Xla,
}

/// What the analysis is asked.
#[derive(Clone, PartialEq, Debug, Default)]
pub struct Options {
    pub loops: LoopCount,
    /// The closed-over constants whose elements are all one value (which
    /// JAX's lowering writes as splat constants, so that StableHLO's
    /// canonicalisation folds what they feed), with that value, by binder
    /// name: known from the values recorded beside the text
    /// (`NAME.recorded.json`); the text holds none.
    pub splat_constants: std::collections::BTreeMap<String, f64>,
}

/// One equation's cost.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct EqnCost {
    /// The equation with the jaxprs it runs (a loop's body as
    /// [`Options::loops`] says).
    pub total: Cost,
    /// Whether `total` is what XLA counts for JAX's lowering: the first
    /// reason it is not, from this equation or one it runs.
    pub xla: XlaCount,
    /// Why JAX's lowering drops the equation before XLA sees it, when it
    /// does: nothing reads its results, or its operands are constants
    /// (StableHLO's canonicalisation folds it; a folded array that
    /// something reads costs the broadcast of its value).
    pub dropped: Option<&'static str>,
    /// The equations counted in `total` that XLA counts otherwise (this
    /// one, the ones it runs), for [`tolerance`]'s bounds.
    pub slack: Slack,
}

/// One jaxpr's totals.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct JaxprCost {
    /// The sum of its equations' totals.
    pub total: Cost,
    pub xla: XlaCount,
    /// Its equations' [`EqnCost::slack`], summed.
    pub slack: Slack,
    /// The most bytes live at once while it runs.
    pub peak: Peak,
    /// On how many devices its counts are per device: the most devices a
    /// multi-device body it is or runs (`shard_map`, `xla_pmap`) is
    /// manual over; 1 when it runs none.
    pub devices: i64,
}

/// The costs of a checked file, by equation and jaxpr.
#[derive(Clone, Debug, Default)]
pub struct FileCost {
    /// By [`EqnId`].
    pub eqns: Vec<EqnCost>,
    /// By [`JaxprId`].
    pub jaxprs: Vec<JaxprCost>,
}

impl FileCost {
    pub fn eqn(&self, e: EqnId) -> &EqnCost {
        &self.eqns[e.0 as usize]
    }
    pub fn jaxpr(&self, j: JaxprId) -> &JaxprCost {
        &self.jaxprs[j.0 as usize]
    }
}

/// The costs of every equation and jaxpr of a file checked whole
/// (`Keep::Everything`: the analysis must hold every equation and
/// occurrence).
pub fn analyse(file: &ast::SourceFile, analysis: &Analysis, options: Options) -> FileCost {
    let every: Vec<JaxprId> = (0..analysis.jaxprs.len() as u32).map(JaxprId).collect();
    analyse_jaxprs(file, analysis, options, &every)
}

/// The costs of the jaxprs `roots`, and of every jaxpr they hold or call,
/// in a file checked whole; the other entries are unknown (`not
/// analysed`). Only the syntax of the top-level jaxprs (`let`s or main)
/// holding a root, and of the `let`s (which any jaxpr may call), is read,
/// so the cost of a small `let` does not read a large main jaxpr.
pub fn analyse_jaxprs(
    file: &ast::SourceFile,
    analysis: &Analysis,
    options: Options,
    roots: &[JaxprId],
) -> FileCost {
    let top_starts: Vec<u32> = roots
        .iter()
        .map(|&j| analysis.jaxpr(top_level(analysis, j)).range.start)
        .collect();
    let holds_root =
        |jaxpr: &ast::Jaxpr| top_starts.iter().any(|&start| jaxpr.range.contains(start));
    let mut syntax = HashMap::default();
    for let_jaxpr in &file.lets {
        index_eqns(&let_jaxpr.jaxpr, &mut syntax);
    }
    if let Some(main) = file.main.as_ref().filter(|main| holds_root(main)) {
        index_eqns(main, &mut syntax);
    }
    let mut walk = Walk {
        analysis,
        syntax,
        options,
        eqns: vec![None; analysis.eqns.len()],
        jaxprs: vec![None; analysis.jaxprs.len()],
        visiting: vec![false; analysis.jaxprs.len()],
        splats: HashMap::default(),
        splat_constants: Default::default(),
        constants: Default::default(),
        read: Default::default(),
        resliced: Default::default(),
    };
    for &j in roots {
        walk.jaxpr(j);
        // The nested jaxprs of a root, which its totals count but whose own
        // entries a walk from a `let` that calls nothing may not fill.
        for nested in nested_jaxprs(analysis, j) {
            walk.jaxpr(nested);
        }
    }
    let Walk { eqns, jaxprs, .. } = walk;
    FileCost {
        eqns: eqns
            .into_iter()
            .map(|e| {
                e.unwrap_or(EqnCost {
                    total: Cost::unknown(),
                    xla: XlaCount::Differs("not analysed"),
                    dropped: None,
                    slack: Slack::default(),
                })
            })
            .collect(),
        jaxprs: jaxprs
            .into_iter()
            .map(|j| {
                j.unwrap_or(JaxprCost {
                    total: Cost::unknown(),
                    xla: XlaCount::Differs("not analysed"),
                    slack: Slack::default(),
                    peak: Peak::unknown(),
                    devices: 1,
                })
            })
            .collect(),
    }
}

/// The syntax of every equation of a file, nested ones included, by the
/// start of its range (`EqnInfo::range`).
pub fn eqns_by_start(file: &ast::SourceFile) -> HashMap<u32, &ast::Eqn> {
    let mut syntax = HashMap::default();
    for let_jaxpr in &file.lets {
        index_eqns(&let_jaxpr.jaxpr, &mut syntax);
    }
    if let Some(main) = &file.main {
        index_eqns(main, &mut syntax);
    }
    syntax
}

/// The top-level jaxpr (a `let` or the main jaxpr) that holds `j`.
pub fn top_level(analysis: &Analysis, mut j: JaxprId) -> JaxprId {
    while let Some(parent) = analysis.jaxpr(j).parent {
        j = parent;
    }
    j
}

/// The jaxprs held by the equations of `j`, at every depth (not the
/// `let`s they name).
fn nested_jaxprs(analysis: &Analysis, j: JaxprId) -> Vec<JaxprId> {
    let mut out = Vec::new();
    let mut stack = vec![j];
    while let Some(j) = stack.pop() {
        for &e in &analysis.jaxpr(j).eqns {
            for &(_, callee) in &analysis.eqn(e).callees {
                if analysis.jaxpr(callee).parent == Some(j) {
                    out.push(callee);
                    stack.push(callee);
                }
            }
        }
    }
    out
}

/// The syntax of every equation, nested ones included, by the start of its range.
fn index_eqns<'f>(jaxpr: &'f ast::Jaxpr, out: &mut HashMap<u32, &'f ast::Eqn>) {
    for let_jaxpr in jaxpr.lets.iter() {
        index_eqns(&let_jaxpr.jaxpr, out);
    }
    for eqn in jaxpr.eqns.iter() {
        out.insert(eqn.range.start, eqn);
        for param in eqn.params.iter() {
            index_param_jaxprs(&param.value, out);
        }
    }
}

fn index_param_jaxprs<'f>(expr: &'f ast::Expr, out: &mut HashMap<u32, &'f ast::Eqn>) {
    match &expr.kind {
        ast::ExprKind::Jaxpr(j) => index_eqns(j, out),
        ast::ExprKind::Tuple(items) | ast::ExprKind::List(items) => {
            for item in items.iter() {
                index_param_jaxprs(item, out);
            }
        }
        ast::ExprKind::Call(call) => {
            for arg in call.args.iter() {
                index_param_jaxprs(&arg.value, out);
            }
        }
        _ => {}
    }
}

struct Walk<'a, 'f> {
    analysis: &'a Analysis,
    syntax: HashMap<u32, &'f ast::Eqn>,
    options: Options,
    eqns: Vec<Option<EqnCost>>,
    jaxprs: Vec<Option<JaxprCost>>,
    /// Jaxprs being walked (a call cycle, which a checked file cannot
    /// have, is cut instead of recursing).
    visiting: Vec<bool>,
    /// Values known to be one number broadcast, by variable.
    splats: HashMap<jaxpr_types::VarId, f64>,
    /// The splat constants each lowered function already holds.
    splat_constants: rustc_hash::FxHashSet<rules::SplatConstant>,
    /// Values StableHLO's canonicalisation folds to constants, by variable.
    constants: rustc_hash::FxHashSet<jaxpr_types::VarId>,
    /// Values some equation or a jaxpr's outputs read.
    read: rustc_hash::FxHashSet<jaxpr_types::VarId>,
    /// Slices that read an operand of the `concatenate` they slice instead
    /// of it ([`rules::sliced_concatenates`]).
    resliced: rustc_hash::FxHashSet<EqnId>,
}

const DEAD: &str = "nothing reads its results: JAX's lowering drops it";
const EMPTY_CALL: &str = "its results are empty arrays, which what reads them gets as empty constants: JAX's lowering drops the call";
const ONE_VALUE: &str = "selects between one value: folded to that value before XLA sees it";
const UNREAD_ONCE_FOLDED: &str =
    "only equations folded without reading it read its results: erased";
const FOLDED: &str = "its operands are constants: folded into a constant before XLA sees it";

/// The first reason of two that a count is not XLA's.
fn first_difference(a: XlaCount, b: XlaCount) -> XlaCount {
    match a {
        XlaCount::Equal => b,
        differs => differs,
    }
}

impl Walk<'_, '_> {
    fn jaxpr(&mut self, id: JaxprId) -> JaxprCost {
        if let Some(done) = &self.jaxprs[id.0 as usize] {
            return done.clone();
        }
        if self.visiting[id.0 as usize] {
            return JaxprCost {
                total: Cost::unknown(),
                xla: XlaCount::Differs("a jaxpr that calls itself"),
                slack: Slack::default(),
                peak: Peak::unknown(),
                devices: 1,
            };
        }
        self.visiting[id.0 as usize] = true;
        let info = self.analysis.jaxpr(id);
        for (e, why) in self.dead_eqns(id) {
            self.record(e, Cost::zero(), Some(why));
        }
        let (folded, splat_constants) = rules::folded_eqns(self, id);
        for (e, total) in folded {
            self.record(e, total, Some(FOLDED));
        }
        for e in self.unread_once_folded(id) {
            self.record(e, Cost::zero(), Some(UNREAD_ONCE_FOLDED));
        }
        let reshapes = rules::reshape_chains(self, id);
        self.compose_chains(reshapes);
        let broadcasts = rules::broadcast_chains(self, id);
        self.compose_chains(broadcasts);
        let (sliced, resliced) = rules::sliced_concatenates(self, id);
        self.resliced.extend(resliced);
        for (e, total, dropped) in sliced {
            self.record(e, total, dropped);
        }
        for e in rules::nested_concatenates(self, id) {
            self.record(e, Cost::zero(), Some(rules::CONCATENATED));
        }
        // Closed-over splat constants that kept equations read.
        let mut total = splat_constants;
        let mut xla = XlaCount::Equal;
        let mut slack = Slack::default();
        for &e in &info.eqns {
            let cost = self.eqn(e);
            total = total.add(&cost.total);
            xla = first_difference(xla, cost.xla);
            slack.add(&cost.slack);
        }
        // A closed-over constant is free in the model, but the printed
        // jaxpr does not hold its values: one whose elements are all equal
        // is a splat constant, which the export writes as a broadcast.
        for &constvar in &info.constvars {
            let ty = &self.analysis.var(constvar).ty;
            if elements(ty, self.analysis)
                .as_constant()
                .is_some_and(|n| n > 1)
                && self.read.contains(&constvar)
                && !self.splats.contains_key(&constvar)
            {
                let units = tolerance::Units {
                    eqns: Amount::constant(1),
                    elements: elements(ty, self.analysis),
                    bytes: bytes(ty, None, self.analysis),
                    body: Cost::zero(),
                };
                slack.record(tolerance::CLOSED_OVER, tolerance::CLOSED_OVER_REASON, units);
            }
        }
        // A jaxpr lowered to a function of several results returns them as
        // a tuple, which XLA counts as a table of 8-byte pointers.
        if info.outs.len() > 1 {
            let table = Amount::constant(8 * info.outs.len() as i64);
            total.bytes_accessed = total.bytes_accessed.add(&table);
        }
        let peak = memory::peak(self, id);
        let own_devices = self
            .analysis
            .device_bodies
            .get(&id)
            .map_or(1, |mesh| mesh.devices());
        let devices = info
            .eqns
            .iter()
            .flat_map(|&e| &self.analysis.eqn(e).callees)
            .filter_map(|&(_, j)| self.jaxprs[j.0 as usize].as_ref())
            .map(|j| j.devices)
            .fold(own_devices, i64::max);
        let out = JaxprCost {
            total,
            xla,
            slack,
            peak,
            devices,
        };
        self.visiting[id.0 as usize] = false;
        self.jaxprs[id.0 as usize] = Some(out.clone());
        out
    }

    /// The equations whose results nothing reads, directly or through
    /// other such equations, and which have no effect: JAX's lowering
    /// drops them (dead-code elimination), so XLA never counts them. And
    /// the `select_n`s whose cases are all one value (`select_n p x
    /// (stop_gradient x)`, which `cond` under `vmap` makes): StableHLO's
    /// canonicalisation folds them to the value, so that the predicate is
    /// not read, and what only it reads is dropped in turn.
    fn dead_eqns(&mut self, id: JaxprId) -> Vec<(EqnId, &'static str)> {
        let analysis = self.analysis;
        let info = analysis.jaxpr(id);
        let one_value = self.selects_of_one_value(id);
        let mut read: rustc_hash::FxHashSet<jaxpr_types::VarId> =
            info.outs.iter().filter_map(|o| o.var).collect();
        // What instructions of empty results read: they fold to empty
        // constants, but JAX's own dead-code elimination, before lowering,
        // saw them read it.
        let mut read_by_empty: rustc_hash::FxHashSet<jaxpr_types::VarId> = Default::default();
        let mut dead = Vec::new();
        for &e in info.eqns.iter().rev() {
            let eqn_info = analysis.eqn(e);
            let Some(&syntax) = self.syntax.get(&eqn_info.range.start) else {
                continue;
            };
            let rule = eqn_info.prim.map(Prim::row).map(|row| row.cost().rule);
            // A `transpose` (free to XLA, but a `reshape` when it moves
            // only size-1 axes) only computes its result too.
            let pure =
                rule.is_some_and(CostRule::is_pure) || eqn_info.prim == Some(Prim::Transpose);
            let unread = eqn_info
                .outs
                .iter()
                .all(|v| v.is_none_or(|v| !read.contains(&v)));
            let empty = !eqn_info.outs.is_empty()
                && rules::result_types(analysis, eqn_info).iter().all(|ty| {
                    ty.as_ref()
                        .is_some_and(|ty| elements(ty, analysis).is_zero())
                });
            let operands = || {
                syntax
                    .args
                    .iter()
                    .filter_map(|atom| rules::atom_var(analysis, atom))
            };
            // What JAX lowers to a call that only such instructions read is
            // kept ([`jaxpr_check::registry::Cost::called`]).
            let read_only_by_empty = || {
                eqn_info
                    .outs
                    .iter()
                    .any(|v| v.is_some_and(|v| read_by_empty.contains(&v)))
            };
            let called = eqn_info.prim.is_some_and(|p| p.row().cost().called);
            if pure && unread && eqn_info.callees.is_empty() && !(called && read_only_by_empty()) {
                // What only instructions of empty results read (`concatenate`
                // of empty slices, a `reshape` only an empty broadcast
                // reads) is erased, but still reads its operands for JAX: a
                // call among them is kept.
                if read_only_by_empty() {
                    read_by_empty.extend(operands());
                }
                dead.push((e, DEAD));
                continue;
            }
            // A call, loop or conditional nothing reads whose jaxprs have no
            // effect: JAX's lowering (`pe.dce_jaxpr`) drops it, and what
            // only it reads.
            let no_effect = rule.is_some_and(|r| r != CostRule::Unmodelled)
                && eqn_info.callees.iter().all(|&(_, j)| self.has_no_effect(j));
            // A `jit` that only such instructions read is still lowered,
            // to a `func.call` the canonicalisation keeps (XLA counts it).
            // So is a loop or conditional that calls a function inside, and
            // a `scan` (its counter's loop is kept: measured, jax 0.10.2).
            let kept_call = (matches!(
                eqn_info.prim,
                Some(Prim::Jit | Prim::ClosedCall | Prim::CoreCall)
            ) || matches!(rule, Some(CostRule::Scan(_)))
                || eqn_info
                    .callees
                    .iter()
                    .any(|&(_, j)| self.calls_a_function(j)))
                && read_only_by_empty();
            if unread && !eqn_info.callees.is_empty() && no_effect && !kept_call {
                dead.push((e, DEAD));
                continue;
            }
            // A `while` whose read results are all empty: they become empty
            // constants, and the canonicalisation erases the `while` nothing
            // then uses. (JAX's `scan` keeps its counter's loop: measured,
            // jax 0.10.2, a `scan` or `fori_loop` of an empty carry costs
            // the counter's `add` and `lt`.)
            let read_empty = eqn_info
                .outs
                .iter()
                .zip(rules::result_types(analysis, eqn_info))
                .all(|(v, ty)| {
                    v.is_none_or(|v| !read.contains(&v) && !read_by_empty.contains(&v))
                        || ty.is_some_and(|ty| elements(&ty, analysis).is_zero())
                });
            // A body or condition that calls a function (a `jit`, a
            // primitive JAX lowers to a call) keeps it: the canonicalisation
            // does not know the call has no effect.
            if read_empty
                && no_effect
                && matches!(rule, Some(CostRule::While(LoopLowering::HloWhile)))
                && !eqn_info
                    .callees
                    .iter()
                    .any(|&(_, j)| self.calls_a_function(j))
            {
                dead.push((e, EMPTY_CALL));
                continue;
            }
            if empty && unread && rule.is_some_and(CostRule::is_call) && !kept_call {
                dead.push((e, EMPTY_CALL));
                continue;
            }
            // An instruction of empty results is replaced by an empty
            // constant: it reads nothing.
            if empty && pure {
                read_by_empty.extend(operands());
                continue;
            }
            let cases = if one_value.contains(&e) {
                dead.push((e, ONE_VALUE));
                1
            } else {
                0
            };
            // A `jit` or `closed_call` some of whose results nothing reads
            // is pruned by JAX's lowering to the results read, and then to
            // the operands those need (`dce_jaxpr_pjit_rule`).
            let needed = match (eqn_info.prim, &eqn_info.callees[..]) {
                (Some(Prim::Jit | Prim::ClosedCall | Prim::CoreCall), [(_, callee)])
                    if no_effect =>
                {
                    let used: Vec<bool> = eqn_info
                        .outs
                        .iter()
                        .map(|v| v.is_some_and(|v| read.contains(&v) || read_by_empty.contains(&v)))
                        .collect();
                    Some(self.needed_inputs(*callee, &used))
                        .filter(|needed| needed.len() == syntax.args.len())
                }
                _ => None,
            };
            for (i, atom) in syntax.args.iter().enumerate().skip(cases) {
                if let ast::Atom::Var(name) = atom
                    && let Some(r) = analysis.ref_at(name.range)
                    && needed.as_ref().is_none_or(|needed| needed[i])
                {
                    read.insert(r.var);
                }
            }
        }
        self.read.extend(read);
        dead
    }

    /// Which inputs of a jaxpr the results marked `used` depend on
    /// (every input an equation with an effect reads counts).
    fn needed_inputs(&self, id: JaxprId, used: &[bool]) -> Vec<bool> {
        self.live_in(id, used).0
    }

    /// Which inputs of a jaxpr the results marked `used` depend on, and
    /// the equations they need (with every equation that has an effect):
    /// what `pe.dce_jaxpr` keeps.
    fn live_in(&self, id: JaxprId, used: &[bool]) -> (Vec<bool>, rustc_hash::FxHashSet<EqnId>) {
        let analysis = self.analysis;
        let info = analysis.jaxpr(id);
        let mut live: rustc_hash::FxHashSet<jaxpr_types::VarId> = info
            .outs
            .iter()
            .zip(used)
            .filter(|(_, u)| **u)
            .filter_map(|(o, _)| o.var)
            .collect();
        let mut eqns = rustc_hash::FxHashSet::default();
        for &e in info.eqns.iter().rev() {
            let eqn_info = analysis.eqn(e);
            let pure = eqn_info.prim.map(Prim::row).is_some_and(|row| {
                row.cost().rule.is_pure()
                    || matches!(row.cost().rule, CostRule::Free | CostRule::PassThrough)
            }) && eqn_info.callees.iter().all(|&(_, j)| self.has_no_effect(j));
            let wanted = eqn_info
                .outs
                .iter()
                .any(|v| v.is_some_and(|v| live.contains(&v)));
            if !pure || wanted {
                let Some(&syntax) = self.syntax.get(&eqn_info.range.start) else {
                    return (
                        vec![true; info.invars.len()],
                        info.eqns.iter().copied().collect(),
                    );
                };
                eqns.insert(e);
                live.extend(
                    syntax
                        .args
                        .iter()
                        .filter_map(|atom| rules::atom_var(analysis, atom)),
                );
            }
        }
        (info.invars.iter().map(|v| live.contains(v)).collect(), eqns)
    }

    /// Records the costs of chains the canonicalisation composes
    /// ([`rules::reshape_chains`], [`rules::broadcast_chains`]).
    fn compose_chains(&mut self, chains: Vec<(EqnId, Cost, Option<&'static str>)>) {
        for (e, total, dropped) in chains {
            // An inner equation may be an outer one too: the drop wins.
            if self.eqns[e.0 as usize]
                .as_ref()
                .is_none_or(|c| c.dropped.is_none())
            {
                self.record(e, total, dropped);
            }
        }
    }

    /// Records equation `e`'s cost as the canonicalisation leaves it: XLA's
    /// count, `dropped` saying why when nothing of it is left.
    fn record(&mut self, e: EqnId, total: Cost, dropped: Option<&'static str>) {
        self.eqns[e.0 as usize] = Some(EqnCost {
            total,
            xla: XlaCount::Equal,
            dropped,
            slack: Slack::default(),
        });
    }

    /// The equations of jaxpr `id` that only computed what folded
    /// equations read: a comparison of a value with itself folds without
    /// reading it (`x != x` of integers), and the canonicalisation then
    /// erases what computed it. Only results something read before folding
    /// are considered (what is kept for another reason stays).
    fn unread_once_folded(&self, id: JaxprId) -> Vec<EqnId> {
        let analysis = self.analysis;
        let info = analysis.jaxpr(id);
        let mut live: rustc_hash::FxHashSet<jaxpr_types::VarId> =
            info.outs.iter().filter_map(|o| o.var).collect();
        let mut unread = Vec::new();
        for &e in info.eqns.iter().rev() {
            if self.eqns[e.0 as usize]
                .as_ref()
                .is_some_and(|c| c.dropped.is_some())
            {
                continue;
            }
            let eqn_info = analysis.eqn(e);
            let Some(&syntax) = self.syntax.get(&eqn_info.range.start) else {
                continue;
            };
            let pure = eqn_info.callees.is_empty()
                && (eqn_info.prim == Some(Prim::Transpose)
                    || eqn_info.prim.is_some_and(|p| p.row().cost().rule.is_pure()));
            let outs: Vec<_> = eqn_info.outs.iter().flatten().collect();
            if pure
                && !outs.is_empty()
                && outs
                    .iter()
                    .all(|v| self.read.contains(v) && !live.contains(v))
            {
                unread.push(e);
                continue;
            }
            live.extend(
                syntax
                    .args
                    .iter()
                    .filter_map(|atom| rules::atom_var(analysis, atom)),
            );
        }
        unread
    }

    /// Whether jaxpr `id`, or one it holds, lowers to a `func.call`: a
    /// call primitive, or one JAX lowers to a call
    /// ([`jaxpr_check::registry::Cost::called`]).
    fn calls_a_function(&self, id: JaxprId) -> bool {
        self.analysis.jaxpr(id).eqns.iter().any(|&e| {
            let info = self.analysis.eqn(e);
            matches!(
                info.prim,
                Some(Prim::Jit | Prim::ClosedCall | Prim::CoreCall)
            ) || info.prim.is_some_and(|p| p.row().cost().called)
                || info.callees.iter().any(|&(_, j)| self.calls_a_function(j))
        })
    }

    /// Whether a jaxpr only computes its results: every equation pure, a
    /// marker, or a call, loop or conditional of such jaxprs (JAX's
    /// `dce_jaxpr` drops a `while` nothing reads, having no rule of its
    /// own, and `cond`'s and `scan`'s rules do the same).
    fn has_no_effect(&self, id: JaxprId) -> bool {
        self.analysis.jaxpr(id).eqns.iter().all(|&e| {
            let info = self.analysis.eqn(e);
            match info.prim.map(Prim::row).map(|row| row.cost().rule) {
                Some(rule)
                    if rule.is_call()
                        || matches!(
                            rule,
                            CostRule::While(_) | CostRule::Scan(_) | CostRule::Cond
                        ) =>
                {
                    info.callees.iter().all(|&(_, j)| self.has_no_effect(j))
                }
                Some(rule) => {
                    (rule.is_pure() || matches!(rule, CostRule::Free | CostRule::PassThrough))
                        && info.callees.is_empty()
                }
                None => false,
            }
        })
    }

    /// The `select_n`s of a jaxpr whose cases are all one value, seen
    /// through the equations lowered to their operand
    /// (`CostRule::PassThrough`: `stop_gradient`, `copy`) and through
    /// other such selects.
    fn selects_of_one_value(&self, id: JaxprId) -> rustc_hash::FxHashSet<EqnId> {
        let analysis = self.analysis;
        let mut source: HashMap<jaxpr_types::VarId, jaxpr_types::VarId> = HashMap::default();
        let mut selects = rustc_hash::FxHashSet::default();
        for &e in &analysis.jaxpr(id).eqns {
            let eqn_info = analysis.eqn(e);
            let Some(&syntax) = self.syntax.get(&eqn_info.range.start) else {
                continue;
            };
            let Some(rule) = eqn_info.prim.map(Prim::row).map(|row| row.cost().rule) else {
                continue;
            };
            let [Some(out)] = eqn_info.outs[..] else {
                continue;
            };
            let root = |atom: &ast::Atom| match atom {
                ast::Atom::Var(name) => analysis
                    .ref_at(name.range)
                    .map(|r| source.get(&r.var).copied().unwrap_or(r.var)),
                ast::Atom::Lit(_) => None,
            };
            let same = match (rule, &syntax.args[..]) {
                (CostRule::PassThrough, [operand]) => root(operand),
                (CostRule::Select, [_, first, rest @ ..]) if !rest.is_empty() => {
                    root(first).filter(|value| rest.iter().all(|case| root(case) == Some(*value)))
                }
                _ => None,
            };
            if let Some(value) = same {
                source.insert(out, value);
                if rule == CostRule::Select {
                    selects.insert(e);
                }
            }
        }
        selects
    }

    fn eqn(&mut self, id: EqnId) -> EqnCost {
        if let Some(done) = &self.eqns[id.0 as usize] {
            return done.clone();
        }
        let out = rules::eqn_cost(self, id);
        self.eqns[id.0 as usize] = Some(out.clone());
        out
    }
}
