//! J0013 `key-reuse`: JAX's key-reuse rule (`jax/experimental/key_reuse/
//! _core.py`, jax 0.10.2) over the printed program. Each primitive has a
//! signature: which key operands it consumes (sinks, with a mask over the
//! elements of a key array), which key results are fresh (sources), and
//! which results are its operands again (forwards). A key consumed twice is
//! a reuse: both uses draw the same random bits. Nested jaxprs have the
//! signature of their body (`jit`, `shard_map`, `checkpoint`), of their
//! branches (`cond`), or of their body with the rule that a loop may consume
//! a carried key only if it carries a fresh one to the next iteration
//! (`scan`, `while`). A primitive without a signature consumes every key it
//! reads, and its key results are consumed already, as JAX treats it.
//!
//! Beyond JAX's checker, with [`SharpConfig::raw_keys`]: raw `uint32` key
//! data that a jaxpr takes as an input and wraps with `random_wrap` at each
//! use (`jax.random.PRNGKey`) is followed as the key it stands for, and so
//! is what the program makes of it: the keys split or folded from it, their
//! data (`random_unwrap`, as `jax.random.split` of raw data returns it), and
//! slices of that data's rows, each row a key of its own, as JAX's rule has
//! it for the *typed twin* (the same program given a typed key).

use super::{Ids, Program, SharpConfig};
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast;
use jaxpr_syntax::diagnostics::{DiagKind, Diagnostic};
use jaxpr_types::{AType, DType, VarId};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use smol_str::SmolStr;

/// Primitives without a signature that take a typed key as readily as raw
/// key data: following raw keys, they consume raw key data as JAX consumes
/// the typed twin's keys, and their raw results count as consumed keys.
/// (Not `select_n`: JAX's own uint32 arithmetic selects among data shaped
/// as keys, `jnp.gcd` of `u32[3,2]` among them.)
const TRANSPARENT: [&str; 5] = [
    "stop_gradient",
    "custom_jvp_call",
    "custom_vjp_call",
    "custom_vjp_call_jaxpr",
    "optimization_barrier",
];

/// Key arrays with more elements than this are followed as a whole.
const MASK_ELEMENTS: usize = 1 << 16;

pub(crate) const HELP: &str =
    "split the key with `jax.random.split` (or `jax.random.fold_in`) and give each use its own key";

/// Which elements of a key array: all (or none), or each.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Mask {
    All(bool),
    Elems(Box<[bool]>),
}

impl Mask {
    fn any(&self) -> bool {
        match self {
            Mask::All(b) => *b,
            Mask::Elems(e) => e.iter().any(|&b| b),
        }
    }
    fn zip(&self, other: &Mask, f: fn(bool, bool) -> bool) -> Mask {
        match (self, other) {
            (Mask::All(a), Mask::All(b)) => Mask::All(f(*a, *b)),
            (Mask::All(a), Mask::Elems(e)) | (Mask::Elems(e), Mask::All(a)) => {
                Mask::Elems(e.iter().map(|&b| f(*a, b)).collect())
            }
            (Mask::Elems(x), Mask::Elems(y)) if x.len() == y.len() => {
                Mask::Elems(x.iter().zip(y.iter()).map(|(&a, &b)| f(a, b)).collect())
            }
            // Arrays of other shapes through a forward (a reshape): as wholes.
            _ => Mask::All(f(self.any(), other.any())),
        }
    }
    fn or(&self, other: &Mask) -> Mask {
        self.zip(other, |a, b| a || b)
    }
    fn and(&self, other: &Mask) -> Mask {
        self.zip(other, |a, b| a && b)
    }
}

/// What a primitive (or a jaxpr) does to the keys it reads and makes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeySignature {
    /// Operand index, the elements consumed, where (inside a nested jaxpr).
    sinks: Vec<(usize, Mask, Option<TextRange>)>,
    sources: Vec<usize>,
    /// (operand, result)
    forwards: Vec<(usize, usize)>,
}

impl KeySignature {
    fn sink(i: usize) -> (usize, Mask, Option<TextRange>) {
        (i, Mask::All(true), None)
    }
    fn forward0() -> KeySignature {
        KeySignature {
            forwards: vec![(0, 0)],
            ..Default::default()
        }
    }
}

/// How a key came to be consumed: the use a reuse points back to.
#[derive(Clone, Debug)]
struct First {
    range: TextRange,
    what: String,
}

#[derive(Clone, Debug)]
struct Consumed {
    mask: Mask,
    first: Option<First>,
}

/// The state of one jaxpr's keys as its equations go.
#[derive(Default)]
struct Flow {
    consumed: HashMap<VarId, Consumed>,
    forwards: HashMap<VarId, VarId>,
    /// The jaxpr's binders (raw key data is followed from these only).
    binders: HashSet<VarId>,
    /// Raw key lineage (following raw keys): `uint32` data that is key data
    /// made from a binder's (a split's rows), and the keys made from raw key
    /// data (a split of a wrapped binder).
    raw: HashSet<VarId>,
}

impl Flow {
    fn resolve(&self, mut v: VarId) -> VarId {
        for _ in 0..=self.forwards.len() {
            match self.forwards.get(&v) {
                Some(&w) => v = w,
                None => return v,
            }
        }
        v
    }
    fn consumed(&self, v: VarId) -> Mask {
        self.consumed
            .get(&v)
            .map_or(Mask::All(false), |c| c.mask.clone())
    }
}

pub(crate) struct KeyRule {
    config: SharpConfig,
    lets: HashMap<SmolStr, KeySignature>,
    held: HashMap<SmolStr, Held>,
    main: Flow,
}

/// A `let` jaxpr's findings, held until the main jaxpr reaches it through
/// a primitive whose signature is its body's (`jit`, `cond`, `scan`, ...),
/// directly or through other such `let`s. JAX's checker enters a jaxpr only
/// that way: the bodies of `custom_jvp_call`/`custom_vjp_call` (primitives
/// without a signature) are never checked, nor is a `let` only they name.
#[derive(Default)]
struct Held {
    diagnostics: Vec<Diagnostic>,
    /// The `let`s its own signature was computed from.
    lets: Vec<SmolStr>,
}

/// What a signature is computed with.
struct Cx<'p, 'a> {
    p: &'p Program<'a>,
    config: SharpConfig,
    let_jaxprs: &'p HashMap<SmolStr, &'p ast::Jaxpr>,
    lets: &'p mut HashMap<SmolStr, KeySignature>,
    held: &'p mut HashMap<SmolStr, Held>,
    /// The `let`s whose signatures are being computed, innermost last.
    within: Vec<SmolStr>,
    in_progress: HashSet<SmolStr>,
    diagnostics: &'p mut Vec<Diagnostic>,
}

impl KeyRule {
    pub(crate) fn new(config: SharpConfig) -> KeyRule {
        KeyRule {
            config,
            lets: HashMap::default(),
            held: HashMap::default(),
            main: Flow::default(),
        }
    }

    pub(crate) fn begin(
        &mut self,
        p: &Program,
        lets: &[ast::LetJaxpr],
        main: &ast::Jaxpr,
        diagnostics: &mut Vec<Diagnostic>,
    ) {
        let let_jaxprs: HashMap<SmolStr, &ast::Jaxpr> = lets
            .iter()
            .map(|l| (l.name.text.clone(), &l.jaxpr))
            .collect();
        let mut cx = Cx {
            p,
            config: self.config,
            let_jaxprs: &let_jaxprs,
            lets: &mut self.lets,
            held: &mut self.held,
            within: Vec::new(),
            in_progress: HashSet::default(),
            diagnostics,
        };
        for l in lets {
            cx.let_computed(&l.name.text);
        }
        self.main.binders = binders(p.ids, main).collect();
    }

    pub(crate) fn eqn(&mut self, p: &Program, e: &ast::Eqn, diagnostics: &mut Vec<Diagnostic>) {
        let none = HashMap::default();
        let mut cx = Cx {
            p,
            config: self.config,
            let_jaxprs: &none,
            lets: &mut self.lets,
            held: &mut self.held,
            within: Vec::new(),
            in_progress: HashSet::default(),
            diagnostics,
        };
        cx.step(&mut self.main, e);
    }
}

fn binders<'i>(ids: &'i Ids, j: &'i ast::Jaxpr) -> impl Iterator<Item = VarId> + 'i {
    j.invars
        .iter()
        .chain(j.constvars.iter())
        .filter_map(|b| ids.name(&b.name))
}

fn is_typed_key(ty: &AType) -> bool {
    ty.dtype.as_ref().is_some_and(DType::is_key)
}

fn is_u32(ty: &AType) -> bool {
    ty.dtype == Some(DType::UInt(32))
}

/// `uint32` data shaped as key data: a last axis of 2 (threefry) or 4 words
/// (rbg, unsafe_rbg).
fn is_key_data(ty: &AType) -> bool {
    is_u32(ty) && matches!(ty.shape.last().and_then(|d| d.as_const()), Some(2 | 4))
}

impl Cx<'_, '_> {
    fn ty(&self, v: VarId) -> &AType {
        self.p.ty(v)
    }
    /// Whether a consumed variable counts: a key, or (following raw keys)
    /// `uint32` data, which a raw-key forward leads to.
    fn sinks_to(&self, v: VarId) -> bool {
        let ty = self.ty(v);
        is_typed_key(ty) || (self.config.raw_keys && is_u32(ty))
    }

    /// Whether `v` is of raw key lineage (following raw keys): key data a
    /// jaxpr takes in or made from it, or a key made from such data.
    fn is_raw(&self, flow: &Flow, v: VarId) -> bool {
        if !self.config.raw_keys {
            return false;
        }
        let root = flow.resolve(v);
        flow.raw.contains(&root) || (flow.binders.contains(&root) && is_key_data(self.ty(root)))
    }

    /// Whether a sink on `v` counts: a typed key, or raw key data.
    fn consumable(&self, flow: &Flow, v: VarId) -> bool {
        is_typed_key(self.ty(v)) || (is_u32(self.ty(v)) && self.is_raw(flow, v))
    }

    /// The signature of the `let` a signature's jaxpr names: its findings
    /// are reported when the main jaxpr reaches it (see [`Held`]).
    fn let_signature(&mut self, name: &str) -> Option<KeySignature> {
        let sig = self.let_computed(name)?;
        match self.within.last() {
            Some(outer) => self
                .held
                .entry(outer.clone())
                .or_default()
                .lets
                .push(name.into()),
            None => self.reach(name),
        }
        Some(sig)
    }

    /// A `let`'s signature, computed once; its findings held.
    fn let_computed(&mut self, name: &str) -> Option<KeySignature> {
        if let Some(s) = self.lets.get(name) {
            return Some(s.clone());
        }
        let j = *self.let_jaxprs.get(name)?;
        if !self.in_progress.insert(name.into()) {
            return None;
        }
        let outer = std::mem::take(self.diagnostics);
        self.within.push(name.into());
        let sig = self.signature_of(j);
        self.within.pop();
        let own = std::mem::replace(self.diagnostics, outer);
        self.held.entry(name.into()).or_default().diagnostics = own;
        self.in_progress.remove(name);
        self.lets.insert(name.into(), sig.clone());
        Some(sig)
    }

    /// The main jaxpr reaches `let` `name`: its findings and those of the
    /// `let`s it reaches are reported, each once.
    fn reach(&mut self, name: &str) {
        let Some(held) = self.held.remove(name) else {
            return;
        };
        self.diagnostics.extend(held.diagnostics);
        for l in &held.lets {
            self.reach(l);
        }
    }

    /// The signatures of the jaxprs a parameter holds (None: one that is
    /// not there to read).
    fn jaxprs(&mut self, value: &ast::Expr) -> Vec<Option<KeySignature>> {
        match &value.kind {
            ast::ExprKind::Jaxpr(j) => vec![Some(self.signature_of(j))],
            ast::ExprKind::Path(name) => vec![self.let_signature(name)],
            ast::ExprKind::Tuple(items) | ast::ExprKind::List(items) => {
                items.iter().flat_map(|e| self.jaxprs(e)).collect()
            }
            _ => vec![None],
        }
    }

    fn one_jaxpr(&mut self, e: &ast::Eqn, param: &str) -> Option<KeySignature> {
        let p = e.param(param)?;
        let mut all = self.jaxprs(&p.value);
        if all.len() == 1 {
            all.pop().flatten()
        } else {
            None
        }
    }

    /// A jaxpr's signature, its own reuses reported as it goes.
    fn signature_of(&mut self, j: &ast::Jaxpr) -> KeySignature {
        let ids = self.p.ids;
        let mut flow = Flow {
            binders: binders(ids, j).collect(),
            ..Default::default()
        };
        for e in j.eqns.iter() {
            self.step(&mut flow, e);
        }
        let inputs: Vec<VarId> = binders(ids, j).collect();
        let mut sig = KeySignature::default();
        for (i, &v) in inputs.iter().enumerate() {
            if !self.sinks_to(v) {
                continue;
            }
            if let Some(c) = flow.consumed.get(&v).filter(|c| c.mask.any()) {
                sig.sinks
                    .push((i, c.mask.clone(), c.first.as_ref().map(|f| f.range)));
            }
        }
        for (k, out) in j.outvars.iter().enumerate() {
            let Some(v) = ids.atom(out) else { continue };
            if !self.sinks_to(v) {
                continue;
            }
            let r = flow.resolve(v);
            match inputs.iter().position(|&i| i == r) {
                Some(i) => sig.forwards.push((i, k)),
                None if flow.consumed(v).any() => {}
                // Raw data is a fresh key only if it is key data.
                None if is_typed_key(self.ty(v)) || self.is_raw(&flow, v) => sig.sources.push(k),
                None => {}
            }
        }
        sig
    }

    /// The signature of equation `e`, loop rules checked.
    fn signature(&mut self, flow: &Flow, e: &ast::Eqn) -> KeySignature {
        let ids = self.p.ids;
        let arity = e.args.len();
        let operand_ty = |k: usize| e.args.get(k).and_then(|a| self.p.atom_ty(a));
        let all = |f: fn(usize) -> (usize, usize)| KeySignature {
            forwards: (0..arity).map(f).collect(),
            ..Default::default()
        };
        let source0 = KeySignature {
            sources: vec![0],
            ..Default::default()
        };
        match &*e.primitive.text {
            "random_clone" | "random_fold_in" | "random_seed" => source0,
            "random_bits" | "random_gamma" => KeySignature {
                sinks: vec![KeySignature::sink(0)],
                ..Default::default()
            },
            "random_split" => KeySignature {
                sinks: vec![KeySignature::sink(0)],
                sources: vec![0],
                ..Default::default()
            },
            "consume" => KeySignature {
                sinks: vec![KeySignature::sink(0)],
                forwards: vec![(0, 0)],
                ..Default::default()
            },
            "assert_consumed_value"
            | "broadcast_in_dim"
            | "copy"
            | "convert_element_type"
            | "reshape"
            | "squeeze"
            | "layout_constraint"
            | "sharding_constraint"
            | "reshard"
            | "dynamic_slice"
            | "gather" => KeySignature::forward0(),
            "random_wrap" => {
                // Raw key data followed: the wrapped key is that data.
                let raw = e
                    .args
                    .first()
                    .and_then(|a| ids.atom(a))
                    .is_some_and(|v| is_u32(self.ty(v)) && self.is_raw(flow, v));
                if raw {
                    KeySignature::forward0()
                } else {
                    source0
                }
            }
            "random_unwrap" | "debug_callback" | "eq" | "ne" => KeySignature::default(),
            "dynamic_update_slice" => KeySignature {
                sinks: vec![KeySignature::sink(1)],
                forwards: vec![(0, 0)],
                ..Default::default()
            },
            "scatter" => KeySignature {
                sinks: vec![KeySignature::sink(2)],
                forwards: vec![(0, 0)],
                ..Default::default()
            },
            "device_put" => all(|i| (i, i)),
            "slice" => match (operand_ty(0), e.args.first().and_then(|a| ids.atom(a))) {
                (Some(ty), _) if is_typed_key(ty) => slice_signature(e, ty, 0),
                // Rows of raw key data: keys of their own, as in the typed twin.
                (Some(ty), Some(v)) if is_key_data(ty) && self.is_raw(flow, v) => {
                    slice_signature(e, ty, 1)
                }
                _ => KeySignature::forward0(),
            },
            "concatenate" if arity == 1 => KeySignature::forward0(),
            "concatenate" => KeySignature {
                sinks: (0..arity).map(KeySignature::sink).collect(),
                sources: vec![0],
                ..Default::default()
            },
            "jit" | "pjit" | "shard_map" => self.one_jaxpr(e, "jaxpr").unwrap_or_default(),
            // `remat2` is how jax 0.10.2 prints `jax.checkpoint`'s primitive.
            "checkpoint" | "remat" | "remat2" => {
                let differentiated = e.param("differentiated").and_then(|p| p.value.as_bool());
                if differentiated == Some(true) {
                    KeySignature::default()
                } else {
                    self.one_jaxpr(e, "jaxpr").unwrap_or_default()
                }
            }
            // `vmap` of a `custom_jvp` with a key as a nondifferentiable
            // argument: the batch rule of its `stop_gradient` binds one on
            // raw data but returns a key as it is (`lax._stop_gradient` of
            // an extended dtype), so the twin has no `stop_gradient` and
            // its `custom_jvp_call` consumes the key once. The printed
            // text cannot tell this from a key array given unbatched (a
            // `stop_gradient` of keys in the twin); the array is taken as
            // batched, and raw data of a single key as the unbatched one.
            "stop_gradient"
                if e.args.first().and_then(|a| ids.atom(a)).is_some_and(|v| {
                    is_key_data(self.ty(v)) && self.ty(v).shape.len() > 1 && self.is_raw(flow, v)
                }) =>
            {
                KeySignature::forward0()
            }
            "cond" => self.cond_signature(e),
            "scan" => self.scan_signature(e),
            "while" => self.while_signature(e),
            prim => KeySignature {
                sinks: e
                    .args
                    .iter()
                    .enumerate()
                    .filter(|(_, a)| {
                        ids.atom(a).is_some_and(|v| {
                            is_typed_key(self.ty(v))
                                || (TRANSPARENT.contains(&prim) && self.is_raw(flow, v))
                        })
                    })
                    .map(|(i, _)| KeySignature::sink(i))
                    .collect(),
                ..Default::default()
            },
        }
    }

    fn cond_signature(&mut self, e: &ast::Eqn) -> KeySignature {
        let Some(p) = e.param("branches") else {
            return KeySignature::default();
        };
        let branches: Option<Vec<KeySignature>> = self.jaxprs(&p.value).into_iter().collect();
        let Some(branches) = branches.filter(|b| !b.is_empty()) else {
            return KeySignature::default();
        };
        let mut sig = KeySignature::default();
        for b in &branches {
            for (i, mask, at) in &b.sinks {
                match sig.sinks.iter_mut().find(|s| s.0 == i + 1) {
                    Some(s) => s.1 = s.1.or(mask),
                    None => sig.sinks.push((i + 1, mask.clone(), *at)),
                }
            }
            for &k in &b.sources {
                if !sig.sources.contains(&k) {
                    sig.sources.push(k);
                }
            }
        }
        sig.forwards = branches[0]
            .forwards
            .iter()
            .filter(|f| branches.iter().all(|b| b.forwards.contains(f)))
            .map(|&(i, k)| (i + 1, k))
            .collect();
        sig
    }

    fn int_param(e: &ast::Eqn, name: &str) -> Option<usize> {
        usize::try_from(e.param(name)?.value.as_int()?).ok()
    }

    fn scan_signature(&mut self, e: &ast::Eqn) -> KeySignature {
        let Some(sig) = self.one_jaxpr(e, "jaxpr") else {
            return KeySignature::default();
        };
        let (Some(consts), Some(carry)) = (
            Self::int_param(e, "num_consts"),
            Self::int_param(e, "num_carry"),
        ) else {
            return sig;
        };
        for (i, mask, at) in &sig.sinks {
            if *i < consts && mask.any() {
                self.loop_reuse(
                    e,
                    *i,
                    *at,
                    "a key the loop body reads as a constant is consumed in every iteration",
                );
            } else if (consts..consts + carry).contains(i)
                && mask.any()
                && !sig.sources.contains(&(i - consts))
            {
                self.loop_reuse(e, *i, *at, "a carried key is consumed in every iteration, but the body does not carry a fresh key to the next one");
            }
        }
        sig
    }

    fn while_signature(&mut self, e: &ast::Eqn) -> KeySignature {
        let (Some(cond), Some(body)) = (
            self.one_jaxpr(e, "cond_jaxpr"),
            self.one_jaxpr(e, "body_jaxpr"),
        ) else {
            return KeySignature::default();
        };
        let (Some(cond_consts), Some(body_consts)) = (
            Self::int_param(e, "cond_nconsts"),
            Self::int_param(e, "body_nconsts"),
        ) else {
            return KeySignature::default();
        };
        let carried = |i: usize, consts: usize| i.checked_sub(consts);
        for (i, mask, at) in &cond.sinks {
            if !mask.any() {
                continue;
            }
            match carried(*i, cond_consts) {
                None => self.loop_reuse(e, *i, *at, "the loop's condition consumes a key it reads as a constant, in every iteration"),
                Some(c) if !body.sources.contains(&c) => self.loop_reuse(e, *i, *at, "the loop's condition consumes a carried key in every iteration, but the body does not carry a fresh key to the next one"),
                Some(c) if body.sinks.iter().any(|s| carried(s.0, body_consts) == Some(c) && s.1.any()) => {
                    self.loop_reuse(e, *i, *at, "the loop's condition and its body both consume the same carried key")
                }
                Some(_) => {}
            }
        }
        for (i, mask, at) in &body.sinks {
            if !mask.any() {
                continue;
            }
            let operand = i + cond_consts;
            match carried(*i, body_consts) {
                None => self.loop_reuse(e, operand, *at, "the loop body consumes a key it reads as a constant, in every iteration"),
                Some(c) if !body.sources.contains(&c) => self.loop_reuse(e, operand, *at, "a carried key is consumed in every iteration, but the body does not carry a fresh key to the next one"),
                Some(_) => {}
            }
        }
        // As JAX's rule has it: the body's signature, its operand indices
        // read as the `while`'s own (which start with the condition's
        // constants). A key the body consumes is then not marked consumed
        // at the call site when the condition has constants, which JAX's
        // own samplers rely on (`poisson` runs two samplers on one key).
        body
    }

    /// A loop that consumes the same key in each iteration: reported at the
    /// use in its body (the second iteration's use is the same one).
    fn loop_reuse(&mut self, e: &ast::Eqn, operand: usize, inside: Option<TextRange>, why: &str) {
        let prim = &e.primitive.text;
        let operand_range = e.args.get(operand).map_or(e.primitive.range, |a| a.range());
        let raw = e
            .args
            .get(operand)
            .and_then(|a| self.p.atom_ty(a))
            .is_some_and(|t| !is_typed_key(t));
        let what = if raw { "raw key data" } else { "key" };
        let at = inside.unwrap_or(operand_range);
        let mut d = Diagnostic::warning(
            DiagKind::KeyReuse,
            at,
            format!("{what} reused across iterations of `{prim}`: {why}, so every iteration draws the same random bits"),
        )
        .with_help("split the key in the loop body with `jax.random.split`: use one half in this iteration and carry the other to the next");
        if inside.is_some() {
            d = d.with_related(
                operand_range,
                format!("the {what} enters the `{prim}` here"),
            );
        }
        self.diagnostics.push(d);
    }

    /// One equation of a jaxpr, as JAX's `jaxpr_type_signature` steps.
    fn step(&mut self, flow: &mut Flow, e: &ast::Eqn) {
        let sig = self.signature(flow, e);
        let ids = self.p.ids;
        let outs: Vec<Option<VarId>> = e.outs.iter().map(|b| ids.name(&b.name)).collect();
        for &(i, k) in &sig.forwards {
            if let (Some(Some(out)), Some(Some(operand))) =
                (outs.get(k), e.args.get(i).map(|a| ids.atom(a)))
            {
                flow.forwards.insert(*out, operand);
            }
        }
        for (i, mask, _) in &sig.sinks {
            let Some(atom) = e.args.get(*i) else { continue };
            let Some(v) = ids.atom(atom) else { continue };
            if !self.consumable(flow, v) {
                continue;
            }
            let root = flow.resolve(v);
            let before = flow.consumed(root);
            if before.and(mask).any() {
                let first = flow.consumed.get(&root).and_then(|c| c.first.clone());
                self.report(e, atom, v, root, first);
                continue;
            }
            let first = First {
                range: atom.range(),
                what: format!("consumed here by `{}`", e.primitive.text),
            };
            let entry = flow.consumed.entry(root).or_insert(Consumed {
                mask: Mask::All(false),
                first: None,
            });
            entry.mask = entry.mask.or(mask);
            entry.first.get_or_insert(first);
        }
        let forwarded: HashSet<VarId> = sig
            .forwards
            .iter()
            .filter_map(|&(_, k)| outs.get(k).copied().flatten())
            .collect();
        self.raw_lineage(flow, e, &sig, &outs, &forwarded);
        for (k, out) in outs.iter().enumerate() {
            let Some(v) = *out else { continue };
            // Raw key data out of a primitive without a signature is a
            // key JAX would count as consumed (other raw data is fresh).
            let raw_out = flow.raw.contains(&v) && TRANSPARENT.contains(&&*e.primitive.text);
            if forwarded.contains(&v) || !(is_typed_key(self.ty(v)) || raw_out) {
                continue;
            }
            let fresh = sig.sources.contains(&k);
            let first = (!fresh).then(|| First {
                range: e.outs[k].name.range,
                what: format!("comes out of `{}` already consumed (JAX treats the keys this primitive returns as used)", e.primitive.text),
            });
            flow.consumed.insert(
                v,
                Consumed {
                    mask: Mask::All(!fresh),
                    first,
                },
            );
        }
    }

    /// Following raw keys: the fresh keys and key data an equation makes
    /// from raw key lineage are of it too. `random_unwrap` of a key made
    /// from raw data is key data (`jax.random.split` of raw data); of the
    /// raw data's own wrapped key (`jax.random.key_data`) it is not, as in
    /// the typed twin, where JAX does not follow a key's data.
    fn raw_lineage(
        &self,
        flow: &mut Flow,
        e: &ast::Eqn,
        sig: &KeySignature,
        outs: &[Option<VarId>],
        forwarded: &HashSet<VarId>,
    ) {
        if !self.config.raw_keys {
            return;
        }
        let ids = self.p.ids;
        let operands: Vec<VarId> = e.args.iter().filter_map(|a| ids.atom(a)).collect();
        if e.primitive.text == "random_unwrap" {
            let from_key = operands.first().is_some_and(|&v| {
                let root = flow.resolve(v);
                is_typed_key(self.ty(root)) && flow.raw.contains(&root)
            });
            if let (true, Some(Some(out))) = (from_key, outs.first()) {
                flow.raw.insert(*out);
            }
            return;
        }
        if !operands.iter().any(|&v| self.is_raw(flow, v)) {
            return;
        }
        if TRANSPARENT.contains(&&*e.primitive.text) {
            for v in outs.iter().flatten() {
                if is_key_data(self.ty(*v)) {
                    flow.raw.insert(*v);
                }
            }
        }
        for &k in &sig.sources {
            if let Some(Some(v)) = outs.get(k)
                && !forwarded.contains(v)
            {
                flow.raw.insert(*v);
            }
        }
    }

    fn report(
        &mut self,
        e: &ast::Eqn,
        atom: &ast::Atom,
        v: VarId,
        root: VarId,
        first: Option<First>,
    ) {
        let raw = !is_typed_key(self.ty(root));
        let name = &self.p.a.var(v).name;
        let root_name = &self.p.a.var(root).name;
        let what = if raw { "raw key data" } else { "key" };
        let via = if root == v {
            String::new()
        } else {
            format!(" (it is `{root_name}`)")
        };
        let mut d = Diagnostic::warning(
            DiagKind::KeyReuse,
            atom.range(),
            format!("{what} `{name}`{via} is consumed again by `{}`: both uses draw the same random bits", e.primitive.text),
        )
        .with_help(HELP);
        if let Some(f) = first {
            d = d.with_related(f.range, f.what);
        }
        self.diagnostics.push(d);
    }
}

/// `slice` of a key array: consumes the sliced elements, and its result is
/// a fresh key array. Of raw key data (`words` 1: its last axis the words
/// of each key), only a slice of whole keys is one: a slice of words is
/// data that is not a key (a forward, as any slice of data).
fn slice_signature(e: &ast::Eqn, ty: &AType, words: usize) -> KeySignature {
    let shape: Option<Vec<i64>> = ty.shape.iter().map(|d| d.as_const()).collect();
    let Some(mut shape) = shape else {
        return KeySignature::forward0();
    };
    let source = KeySignature {
        sources: vec![0],
        ..Default::default()
    };
    // What a slice the rule cannot read is: a fresh key array, or data.
    let unread = if words == 0 {
        source.clone()
    } else {
        KeySignature::forward0()
    };
    let ints = |n: &str| e.param(n).and_then(|p| p.value.as_int_seq());
    let (Some(mut start), Some(mut limit)) = (ints("start_indices"), ints("limit_indices")) else {
        return unread;
    };
    let mut strides = ints("strides").unwrap_or_else(|| vec![1; start.len()]);
    if start.len() != shape.len() || limit.len() != shape.len() || strides.len() != shape.len() {
        return unread;
    }
    if words == 1 {
        let whole = |v: Option<&i64>, want: i64| v == Some(&want);
        let last = shape.last().copied().unwrap_or(0);
        if !(whole(start.last(), 0) && whole(limit.last(), last) && whole(strides.last(), 1)) {
            return KeySignature::forward0();
        }
        for v in [&mut shape, &mut start, &mut limit, &mut strides] {
            v.pop();
        }
    }
    let n = shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(usize::try_from(d).ok()?));
    let Some(n) = n.filter(|&n| n <= MASK_ELEMENTS) else {
        return source;
    };
    let mut mask = vec![false; n];
    let mut index = vec![0i64; shape.len()];
    for (flat, m) in mask.iter_mut().enumerate() {
        let mut rest = flat as i64;
        for ax in (0..shape.len()).rev() {
            index[ax] = rest % shape[ax];
            rest /= shape[ax];
        }
        *m = (0..shape.len()).all(|ax| {
            let i = index[ax];
            i >= start[ax] && i < limit[ax] && strides[ax] > 0 && (i - start[ax]) % strides[ax] == 0
        });
    }
    KeySignature {
        sinks: vec![(0, Mask::Elems(mask.into()), None)],
        sources: vec![0],
        forwards: Vec::new(),
    }
}
