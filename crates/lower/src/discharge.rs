//! Mutable references and Pallas kernels built with JAX's values: the
//! program is rewritten into one without references, as JAX's
//! `discharge_state` (`jax/_src/state/discharge.py`) and the `pallas_call`
//! interpreter (`jax/_src/pallas/hlo_interpreter.py`,
//! `_pallas_call_impl_interpret` before it) define them, and the rewritten
//! text is checked and built by the back ends like any program. One place
//! for both back ends: they lower only value-level primitives.
//!
//! - a reference is the value it holds: `new_ref x` and `freeze r` rename;
//!   a load is `dynamic_slice` (then `reshape` dropping the dimensions a
//!   scalar index selects); a store is `dynamic_update_slice`, the
//!   reference then naming the new value; `+=` adds then stores. Effects
//!   keep program order because each statement reads the value the
//!   previous one left.
//! - `run_state` runs its body inline; a `cond` whose operands include
//!   references returns their final values as extra results; a `scan`
//!   whose constants include references carries them.
//! - `pallas_call` runs its kernel inline once per grid point, in JAX's
//!   order (row-major over the grid), on the block of each operand and
//!   result its index map selects (block index × block size), and writes
//!   back the blocks it stored to (joined once after the last point when
//!   the points' blocks tile the array); results start as JAX's uninitialised values (NaN,
//!   an integer's least value), or as the aliased operand
//!   (`input_output_aliases`); scratch buffers as uninitialised values.
//!
//! What the text does not say (index maps that jax >= 0.6 does not print,
//! a block that is not the whole array) is one J0012 naming it.

use crate::differentiate::{has_classical_gradient, is_classical_gradient};
use crate::kernel::{KernelBlocks, kernel_blocks};
use crate::recorded::{Access, AccessFacts, Recorded};
use crate::walk::{LowerError, LowerErrorKind, LowerResult, Syntax, err, untyped_literal_text};
use jaxpr_check::registry::Prim;
use jaxpr_check::{Analysis, EqnId, JaxprId};
use jaxpr_syntax::Parse;
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast::{self, Atom, ExprKind, Indexer, RefTransform, StateKind};
use jaxpr_syntax::diagnostics::{DiagKind, Diagnostic};
use jaxpr_types::{AType, DType, Dim, VarId};
use rustc_hash::FxHashMap as HashMap;
use std::fmt::Write;

/// The primitives this rewrite removes.
fn is_state(prim: Option<Prim>) -> bool {
    let Some(prim) = prim else {
        return false;
    };
    matches!(
        prim,
        Prim::Get
            | Prim::Swap
            | Prim::Addupdate
            | Prim::MaskedLoad
            | Prim::MaskedSwap
            | Prim::NewRef
            | Prim::Freeze
            | Prim::RunState
            | Prim::For
            | Prim::PallasCall
            | Prim::ProgramId
            | Prim::NumPrograms
    )
}

/// Whether a checked program has something to rewrite before a back end
/// builds it: references or kernels to discharge, a primitive of
/// [`is_rewritten`], a classical derivative ([`crate::differentiate`]), a
/// nested jaxpr's constants whose values are recorded
/// ([`crate::recorded`]).
pub fn needs_rewrite(a: &Analysis, recorded: &Recorded, text: &str) -> bool {
    a.eqns.iter().any(is_rewritten_eqn)
        || a.eqns
            .iter()
            .any(|e| crate::library::recorded_implementation(a, e, recorded).is_some())
        || has_classical_gradient(a)
        || !with_recorded_constants(a, recorded, text).is_empty()
}

/// Whether jaxpr `j` of `text` was printed with names of its own: it, or a
/// jaxpr it is nested in, is an item of a parameter JAX printed with
/// Python's `repr` (a tuple holding other things too, as Equinox's
/// `static=({ lambda a:f32[3]; ... }, <object ...>, False)`), whose
/// printout starts a naming context of its own: its `a` is not the `a` of
/// the program around it. (JAX's own tuples of jaxprs, `branches=(...)`,
/// share the printout's names and separate their items with newlines, not
/// commas.)
fn named_apart(a: &Analysis, text: &str, j: JaxprId) -> bool {
    let mut k = Some(j);
    while let Some(i) = k {
        let info = a.jaxpr(i);
        if matches!(info.origin, jaxpr_check::JaxprOrigin::Param { .. }) {
            let (start, end) = (info.range.start as usize, info.range.end as usize);
            let before = text.get(..start).map_or("", str::trim_end);
            let after = text.get(end..).map_or("", str::trim_start);
            if before.ends_with(',') || after.starts_with(',') {
                return true;
            }
        }
        k = info.parent;
    }
    false
}

/// The nested jaxprs whose constants all have recorded values (the
/// outermost jaxpr's constants are the program's inputs), those printed
/// with names of their own ([`named_apart`]) left out: the records name
/// the printout's variables.
fn with_recorded_constants(a: &Analysis, recorded: &Recorded, text: &str) -> Vec<JaxprId> {
    if recorded.constants_are_empty() {
        return Vec::new();
    }
    (0..a.jaxprs.len())
        .map(|i| JaxprId(i as u32))
        .filter(|&j| {
            let info = a.jaxpr(j);
            info.parent.is_some() || matches!(info.origin, jaxpr_check::JaxprOrigin::Let { .. })
        })
        .filter(|&j| !named_apart(a, text, j))
        .filter(|&j| {
            let cs = &a.jaxpr(j).constvars;
            !cs.is_empty() && cs.iter().all(|&v| recorded.has_constant(&a.var(v).name))
        })
        .collect()
}

/// The primitives a rewrite always removes: references and kernels, jax <
/// 0.8's `pmap` ([`crate::pmap`]) and `random_gamma` ([`crate::gamma`]).
fn is_rewritten(prim: Option<Prim>) -> bool {
    is_state(prim) || matches!(prim, Some(Prim::XlaPmap | Prim::RandomGamma))
}

/// Whether an equation is one a rewrite always removes: a primitive of
/// [`is_rewritten`], or a library's own of [`crate::library`].
fn is_rewritten_eqn(e: &jaxpr_check::EqnInfo) -> bool {
    is_rewritten(e.prim) || (e.prim.is_none() && crate::library::is_library(&e.primitive))
}

/// Whether a text may hold something to rewrite (before it is checked): a build that lowers as it checks builds such a text whole
/// instead.
pub fn may_need_rewrite(text: &str) -> bool {
    [
        "Ref{",
        "Ref<",
        "pallas_call",
        "run_state",
        "grad[",
        "xla_pmap",
        "random_gamma",
    ]
    .iter()
    .chain(crate::library::LIBRARY)
    .any(|m| text.contains(m))
}

/// A program without references: its text, and where each of its
/// top-level equations came from.
pub struct Rewritten {
    pub text: String,
    /// (start, end) in `text` of each emitted top-level equation, and the
    /// range of the equation of the original program it comes from.
    spans: Vec<(u32, u32, TextRange)>,
    whole: TextRange,
}

impl Rewritten {
    /// Diagnostics of the rewritten program, placed at the equations of the
    /// original they come from.
    pub fn map(&self, ds: Vec<Diagnostic>) -> Vec<Diagnostic> {
        ds.into_iter()
            .map(|mut d| {
                let at = d.range.start;
                d.range = self
                    .spans
                    .iter()
                    .find(|(s, e, _)| *s <= at && at < *e)
                    .map_or(self.whole, |s| s.2);
                d.related.clear();
                d
            })
            .collect()
    }
}

/// A program with something to rewrite ([`needs_rewrite`]), rewritten,
/// parsed and checked: `None` when it has nothing. Errors of the rewritten
/// program's check are ours (J0016).
pub fn rewritten(
    parse: &Parse,
    a: &Analysis,
    recorded: &Recorded,
) -> Option<Result<(Rewritten, Parse, Analysis), Vec<Diagnostic>>> {
    if !needs_rewrite(a, recorded, &parse.text) {
        return None;
    }
    Some(discharge_checked(parse, a, recorded))
}

fn discharge_checked(
    parse: &Parse,
    a: &Analysis,
    recorded: &Recorded,
) -> Result<(Rewritten, Parse, Analysis), Vec<Diagnostic>> {
    let d = discharge(parse, a, recorded).map_err(|e| vec![e.into_diagnostic()])?;
    let (p2, a2) = check_rewritten(
        &d.text,
        "rewriting the program before building it gave one the checker rejects",
        |errors| d.map(errors),
    )?;
    Ok((d, p2, a2))
}

/// A text a rewrite made, parsed and checked. Its errors are ours (J0016):
/// each says `what` and its message, at the range `place` gives it in the
/// program the user wrote.
pub(crate) fn check_rewritten(
    text: &str,
    what: &str,
    place: impl FnOnce(Vec<Diagnostic>) -> Vec<Diagnostic>,
) -> Result<(Parse, Analysis), Vec<Diagnostic>> {
    let (p, a) = jaxpr_check::check_source(
        jaxpr_check::Source::Text(text),
        jaxpr_check::Keep::Everything,
    )
    .parsed();
    let errors: Vec<Diagnostic> = p
        .errors
        .iter()
        .chain(&a.diagnostics)
        .filter(|x| x.is_error())
        .cloned()
        .collect();
    if errors.is_empty() {
        return Ok((p, a));
    }
    Err(place(errors)
        .into_iter()
        .map(|x| {
            Diagnostic::error(
                DiagKind::InternalError,
                x.range,
                format!("{what}: {}", x.message),
            )
            .with_help(crate::INTERNAL_ERROR_HELP)
        })
        .collect())
}

/// What the outermost jaxpr's constants become in a rewrite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outermost {
    /// Inputs of the rewritten program (the C ABI's first inputs).
    Inputs,
    /// `constant` equations of their recorded values (a recorded
    /// implementation, built into the program that calls it).
    BuiltIn,
}

/// Rewrites a checked program (free of errors) into one with nothing of
/// [`needs_rewrite`] left.
pub fn discharge(parse: &Parse, a: &Analysis, recorded: &Recorded) -> LowerResult<Rewritten> {
    discharge_with(parse, a, recorded, Outermost::Inputs)
}

/// [`discharge`], the outermost jaxpr's constants becoming `outermost`.
pub(crate) fn discharge_with(
    parse: &Parse,
    a: &Analysis,
    recorded: &Recorded,
    outermost: Outermost,
) -> LowerResult<Rewritten> {
    let file = &parse.file;
    let text = &*parse.text;
    let syntax = Syntax::new(file, a);
    let Some(main) = file.main.as_ref() else {
        return err(TextRange::new(0, 0), "the file has no main jaxpr");
    };
    let Some(main_id) = a.jaxprs.iter().position(|j| j.range == main.range) else {
        return crate::internal(main.range, "the main jaxpr was not checked");
    };
    if text.len() < main.range.end as usize {
        return crate::internal(
            main.range,
            "the build was given a parse without its text (check it with jaxpr_check::check_source keeping everything)",
        );
    }
    let mut em = Emitter {
        text,
        a,
        syntax: &syntax,
        out: String::new(),
        spans: Vec::new(),
        fresh: 0,
        grid: Vec::new(),
        to_rewrite: to_rewrite(a, recorded, text),
        recorded,
        prints_masks: a.eqns_in_text_order.iter().any(|&id| {
            syntax
                .eqn(a, id)
                .and_then(|e| e.state.as_ref())
                .is_some_and(|st| st.mask.is_some())
        }),
    };
    // The `let` jaxprs with nothing to rewrite at any depth, as printed
    // (equations copied from the original name them); the others are
    // emitted where they are called.
    for l in &file.lets {
        let id = a.jaxprs.iter().position(|j| j.range == l.jaxpr.range);
        if id.is_some_and(|id| !em.to_rewrite.contains(&JaxprId(id as u32))) {
            em.out
                .push_str(&text[l.range.start as usize..l.range.end as usize]);
            em.out.push('\n');
        }
    }
    let j = JaxprId(main_id as u32);
    let info = a.jaxpr(j);
    let mut env = Env::default();
    let mut head = String::from("{ lambda ");
    let mut built_in = Vec::new();
    for &v in &info.constvars {
        let var = a.var(v);
        let ty = ty_text(&var.ty, main.range)?;
        match outermost {
            Outermost::Inputs => {
                let n = em.bind_fresh(&mut env, v);
                write!(head, "{n}:{ty} ").unwrap();
            }
            Outermost::BuiltIn => {
                let Some(eqn) = recorded.constant_params(&var.name, &var.ty, main.range)? else {
                    return err(
                        main.range,
                        format!("its constant `{}` has no recorded value", var.name),
                    );
                };
                built_in.push((v, ty, eqn));
            }
        }
    }
    head.push_str("; ");
    for &v in &info.invars {
        let n = em.bind_fresh(&mut env, v);
        write!(head, "{n}:{} ", ty_text(&a.var(v).ty, main.range)?).unwrap();
    }
    head.push_str(". let\n");
    em.out.push_str(&head);
    for (v, ty, eqn) in built_in {
        let n = em.line(&ty, &eqn);
        env.insert(v, n);
    }
    let outs = em.body(j, &mut env, true)?;
    writeln!(
        em.out,
        "  in ({}{}) }}",
        outs.join(", "),
        if outs.len() == 1 { "," } else { "" }
    )
    .unwrap();
    Ok(Rewritten {
        text: em.out,
        spans: em.spans,
        whole: main.lambda_range,
    })
}

/// The atom (a name of the rewritten program, or a literal) each variable
/// of the original stands for; a reference stands for the value it holds.
pub(crate) type Env = HashMap<VarId, String>;

pub(crate) struct Emitter<'t> {
    pub(crate) text: &'t str,
    pub(crate) a: &'t Analysis,
    pub(crate) syntax: &'t Syntax<'t>,
    pub(crate) out: String,
    spans: Vec<(u32, u32, TextRange)>,
    fresh: usize,
    /// The grid point and grid of the kernel being run (`program_id`).
    grid: Vec<(Vec<i64>, Vec<i64>)>,
    /// The jaxprs holding something to rewrite, at any depth or through a
    /// `let` they call ([`to_rewrite`]).
    to_rewrite: rustc_hash::FxHashSet<JaxprId>,
    /// What was recorded beside the text: nested jaxprs' constants, kernels' blocks.
    recorded: &'t Recorded,
    /// Whether the program prints a masked access: then an unrecorded
    /// store whose result is dropped may be masked unseen.
    prints_masks: bool,
}

/// The jaxprs holding something to rewrite (a state equation, `pmap`,
/// `random_gamma`, a classical derivative, recorded constants), at any
/// depth.
fn to_rewrite(a: &Analysis, recorded: &Recorded, text: &str) -> rustc_hash::FxHashSet<JaxprId> {
    let mut out = rustc_hash::FxHashSet::default();
    let mark = |out: &mut rustc_hash::FxHashSet<JaxprId>, from: JaxprId| {
        let mut j = Some(from);
        while let Some(k) = j {
            if !out.insert(k) {
                break;
            }
            j = a.jaxpr(k).parent;
        }
    };
    for (i, e) in a.eqns.iter().enumerate() {
        if is_rewritten_eqn(e)
            || is_classical_gradient(a, EqnId(i as u32))
            || crate::library::recorded_implementation(a, e, recorded).is_some()
        {
            mark(&mut out, e.jaxpr);
        }
    }
    for j in with_recorded_constants(a, recorded, text) {
        mark(&mut out, j);
    }
    // A jaxpr calling one of those (a `let` jaxpr is called by name, from
    // outside the jaxprs it is nested in), until none is added.
    loop {
        let before = out.len();
        for e in &a.eqns {
            if !out.contains(&e.jaxpr) && e.callees.iter().any(|(_, j)| out.contains(j)) {
                mark(&mut out, e.jaxpr);
            }
        }
        if out.len() == before {
            return out;
        }
    }
}

/// A static type as JAX prints it (a reference's: the array it holds).
pub(crate) fn ty_text(t: &AType, at: TextRange) -> LowerResult<String> {
    let dt = elem(t, at)?;
    let dims = static_shape(t, at)?;
    Ok(format!("{dt}[{}]", join(&dims)))
}

pub(crate) fn static_shape(t: &AType, at: TextRange) -> LowerResult<Vec<i64>> {
    t.shape
        .iter()
        .map(|d| match d {
            Dim::Const(c) => Ok(*c),
            _ => err(
                at,
                "a symbolic shape in a program rewritten before it is built (references and kernels discharged, derivatives, `pmap`, `random_gamma`) is not built: the rewrite needs static sizes",
            ),
        })
        .collect()
}

/// A jaxpr's text from its binders, its equations (emitted by `body`)
/// and its outputs.
pub(crate) fn lambda_text(head: &str, body: &str, outs: &[String]) -> String {
    format!(
        "{{ lambda ; {head}. let\n{body}      in ({}{}) }}",
        outs.join(", "),
        if outs.len() == 1 { "," } else { "" }
    )
}

pub(crate) fn join(xs: &[i64]) -> String {
    xs.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
}

pub(crate) fn tuple(xs: &[i64]) -> String {
    match xs {
        [x] => format!("({x},)"),
        _ => format!(
            "({})",
            xs.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// One dimension of an indexed block: its start (an `i32[]` atom), its
/// size (elements taken), the stride between them, and whether a scalar
/// index drops it.
struct Span {
    start: String,
    size: i64,
    stride: i64,
    dropped: bool,
}

/// Where an access reads and writes: a block of spans (scalars and
/// slices), or the elements an array of indices picks.
enum Place {
    Block(Vec<Span>),
    Gather(Gather),
}

/// The elements arrays of indices pick: `indices`, an `i32[..., rank]`
/// atom (one column per dimension of the reference), and `shape`, the
/// shape the index arrays broadcast to (the access's value).
struct Gather {
    indices: String,
    shape: Vec<i64>,
}

/// What is known of an indexer's strides: JAX prints none.
#[derive(Clone, Copy)]
enum Strides<'r> {
    /// Nothing recorded: a slice of part of a dimension is not built.
    Unknown,
    /// Recorded: one per dimension.
    Known(&'r [i64]),
    /// Recorded as all 1.
    Ones,
}

/// Two integer parameters of a loop (its operands' counts), as `usize`.
fn counts(e: &ast::Eqn, a: &str, b: &str) -> Option<(usize, usize)> {
    let int = |n: &str| e.param(n).and_then(|p| p.value.as_int());
    Some((int(a)? as usize, int(b)? as usize))
}

fn i32_lit(v: i64) -> String {
    format!("{v}:i32[]")
}

impl<'t> Emitter<'t> {
    pub(crate) fn name(&mut self) -> String {
        self.fresh += 1;
        format!("r{}", self.fresh)
    }

    pub(crate) fn bind_fresh(&mut self, env: &mut Env, v: VarId) -> String {
        let n = self.name();
        env.insert(v, n.clone());
        n
    }

    /// Emits `n:ty = rest` and gives `n`.
    pub(crate) fn line(&mut self, ty: &str, rest: &str) -> String {
        let n = self.name();
        writeln!(self.out, "    {n}:{ty} = {rest}").unwrap();
        n
    }

    /// The atom an operand stands for.
    pub(crate) fn atom(&self, env: &Env, x: &Atom) -> LowerResult<String> {
        if untyped_literal_text(self.syntax, x).is_some() {
            return Ok(self.slice(x.range()).to_string());
        }
        match x {
            Atom::Lit(l) => Ok(self.slice(l.range).to_string()),
            Atom::Var(n) => {
                let Some(v) = self.syntax.use_at(n.range.start) else {
                    if &*n.text == "_" {
                        return crate::walk::unnamed_value(n.range);
                    }
                    return crate::internal(n.range, format!("`{}` is not resolved", n.text));
                };
                match self.env_get(env, v) {
                    Some(s) => Ok(s),
                    None => crate::internal(n.range, format!("`{}` has no value here", n.text)),
                }
            }
        }
    }

    /// The atoms `args` stand for.
    pub(crate) fn atoms(&self, env: &Env, args: &[Atom]) -> LowerResult<Vec<String>> {
        args.iter().map(|x| self.atom(env, x)).collect()
    }

    fn env_get(&self, env: &Env, v: VarId) -> Option<String> {
        env.get(&v).cloned()
    }

    pub(crate) fn slice(&self, r: TextRange) -> &'t str {
        &self.text[r.start as usize..r.end as usize]
    }

    /// Emits the equations of jaxpr `j` (its binders bound in `env`) and
    /// gives the atoms of its outputs. `top`: record where each equation
    /// came from.
    pub(crate) fn body(
        &mut self,
        j: JaxprId,
        env: &mut Env,
        top: bool,
    ) -> LowerResult<Vec<String>> {
        let (eqns, outvars) = self.syntax.body(self.a, j)?;
        for (e, id) in eqns {
            let start = self.out.len() as u32;
            self.eqn(e, id, env)?;
            if top {
                self.spans.push((start, self.out.len() as u32, e.range));
            }
        }
        outvars
            .iter()
            .enumerate()
            .map(|(k, o)| {
                if o.is_dropped() {
                    // Read nowhere (else refused): zeros of its type.
                    let (dt, shape) =
                        crate::walk::unread_output(self.a, self.syntax, j, k, o.range())?;
                    let t = AType {
                        dtype: Some(dt),
                        shape,
                    };
                    return self.zeros(&t, o.range());
                }
                self.atom(env, o)
            })
            .collect()
    }

    fn is_ref(&self, v: VarId) -> bool {
        self.a
            .var(v)
            .ty
            .dtype
            .as_ref()
            .is_some_and(|d| d.as_reference().is_some())
    }

    pub(crate) fn operand_var(&self, x: &Atom) -> Option<VarId> {
        match x {
            Atom::Var(n) => self.syntax.use_at(n.range.start),
            Atom::Lit(_) => None,
        }
    }

    pub(crate) fn eqn(&mut self, e: &ast::Eqn, id: EqnId, env: &mut Env) -> LowerResult<()> {
        let info = self.a.eqn(id);
        let outs = info.outs.clone();
        let name = e.primitive.text.as_ref();
        let prim = info.prim;
        let at = e.primitive.range;
        if let Some(st) = e.state.as_deref() {
            return self.state(e, st, &outs, env);
        }
        if prim.is_none() && crate::library::is_library(name) {
            return self.library(e, &outs, env);
        }
        if let Some(imp) = crate::library::recorded_implementation(self.a, info, self.recorded) {
            return self.implemented(e, imp, &outs, env);
        }
        match prim {
            Some(Prim::NewRef | Prim::Freeze) => {
                let x = self.atom(env, &e.args[0])?;
                if let Some(Some(v)) = outs.first() {
                    env.insert(*v, x);
                }
                Ok(())
            }
            Some(Prim::ProgramId | Prim::NumPrograms) => {
                let Some((point, grid)) = self.grid.last() else {
                    return err(at, format!("`{name}` outside a Pallas kernel is not built"));
                };
                let axis = e.param("axis").and_then(|p| p.value.as_int()).unwrap_or(-1);
                let Some(k) = usize::try_from(axis).ok().filter(|&k| k < grid.len()) else {
                    return err(at, format!("`axis={axis}` is not an axis of the grid"));
                };
                let v = if prim == Some(Prim::ProgramId) {
                    point[k]
                } else {
                    grid[k]
                };
                if let Some(Some(o)) = outs.first() {
                    env.insert(*o, i32_lit(v));
                }
                Ok(())
            }
            Some(Prim::RunState) => self.run_state(e, id, &outs, env),
            Some(Prim::PallasCall) => self.pallas_call(e, id, &outs, env),
            Some(Prim::For) => self.for_loop(e, id, &outs, env),
            Some(Prim::XlaPmap) => self.pmap(e, id, &outs, env),
            Some(Prim::RandomGamma) => self.gamma(e, &outs, env),
            Some(Prim::Grad | Prim::ValueAndGrad) if is_classical_gradient(self.a, id) => {
                self.gradient(e, id, &outs, env)
            }
            _ => {
                let refs: Vec<usize> = (0..e.args.len())
                    .filter(|&i| self.operand_var(&e.args[i]).is_some_and(|v| self.is_ref(v)))
                    .collect();
                let inner = self
                    .a
                    .eqn(id)
                    .callees
                    .iter()
                    .any(|(_, j)| self.to_rewrite.contains(j));
                if refs.is_empty() && !inner {
                    return self.copy(e, &outs, env);
                }
                if jaxpr_check::registry::call_params(name).is_some() {
                    return self.inline(e, id, &outs, env);
                }
                match prim {
                    Some(Prim::Cond) => self.cond(e, id, &outs, env, &refs),
                    Some(Prim::Scan) => self.scan(e, id, &outs, env, &refs),
                    Some(Prim::While) => self.while_loop(e, id, &outs, env, &refs),
                    _ if refs.is_empty() => self.copy_rewriting_callees(e, id, &outs, env),
                    _ => err(
                        at,
                        format!(
                            "a reference passed to `{name}` is not built (only `cond`, `scan`, `while`, `run_state` and `pallas_call` take references here)"
                        ),
                    ),
                }
            }
        }
    }

    /// An equation without references, as printed, its binders renamed.
    pub(crate) fn copy(
        &mut self,
        e: &ast::Eqn,
        outs: &[Option<VarId>],
        env: &mut Env,
    ) -> LowerResult<()> {
        let mut line = String::from("    ");
        for (b, v) in e.outs.iter().zip(outs) {
            let ty = &self.text[b.name.range.end as usize..b.range.end as usize];
            match v {
                Some(v) if !b.is_dropped() => {
                    let n = self.bind_fresh(env, *v);
                    write!(line, "{n}{ty} ").unwrap();
                }
                _ => write!(line, "_{ty} ").unwrap(),
            }
        }
        if !e.outs.is_empty() {
            line.push_str("= ");
        }
        let head_end = e.params_range.map_or(e.primitive.range.end, |r| r.end);
        line.push_str(&self.text[e.primitive.range.start as usize..head_end as usize]);
        for x in e.args.iter() {
            line.push(' ');
            line.push_str(&self.atom(env, x)?);
        }
        line.push('\n');
        self.out.push_str(&line);
        Ok(())
    }

    /// An equation whose nested jaxprs hold something to rewrite but take
    /// no reference from outside: as printed, its binders renamed and each
    /// nested jaxpr rewritten in place (its binders and results as they
    /// were).
    fn copy_rewriting_callees(
        &mut self,
        e: &ast::Eqn,
        id: EqnId,
        outs: &[Option<VarId>],
        env: &mut Env,
    ) -> LowerResult<()> {
        let head_end = e.params_range.map_or(e.primitive.range.end, |r| r.end);
        // Where each nested jaxpr is written: in place, or (a `let`'s) the
        // parameter that names it.
        let mut callees: Vec<(TextRange, JaxprId)> = Vec::new();
        for (param, j) in &self.a.eqn(id).callees {
            let r = self.a.jaxpr(*j).range;
            let at = if e.primitive.range.start <= r.start && r.end <= head_end {
                r
            } else {
                match e.param(param) {
                    Some(p) if matches!(p.value.kind, ExprKind::Path(_)) => p.value.range,
                    _ => {
                        return err(
                            e.primitive.range,
                            format!(
                                "`{}` calls a jaxpr bound by `let` that holds something to rewrite, in a form not built",
                                e.primitive.text
                            ),
                        );
                    }
                }
            };
            callees.push((at, *j));
        }
        callees.sort_by_key(|(r, _)| r.start);
        let mut head = String::new();
        let mut from = e.primitive.range.start;
        for (r, j) in callees {
            if r.start < from {
                return crate::internal(e.primitive.range, "nested jaxprs that overlap");
            }
            head.push_str(self.slice(TextRange::new(from, r.start)));
            let order: Vec<usize> = (0..self.a.jaxpr(j).invars.len()).collect();
            head.push_str(&self.nested(j, &order, &[], 0)?);
            from = r.end;
        }
        head.push_str(self.slice(TextRange::new(from, head_end)));
        let args: Vec<String> = self.atoms(env, &e.args)?;
        let binders = self.result_binders(e, outs, env);
        let eq = if binders.is_empty() { "" } else { " =" };
        writeln!(
            self.out,
            "    {}{eq} {head} {}",
            binders.join(" "),
            args.join(" ")
        )
        .unwrap();
        Ok(())
    }

    /// The block of reference `r` (type `ty`) that `place`'s indexers select.
    fn spans(
        &mut self,
        place: &ast::RefPlace,
        ty: &AType,
        strides: Strides<'_>,
        env: &Env,
    ) -> LowerResult<Vec<Span>> {
        let shape = static_shape(ty, place.range)?;
        let ix = match &*place.transforms {
            [] => {
                return Ok(shape
                    .iter()
                    .map(|&n| Span {
                        start: i32_lit(0),
                        size: n,
                        stride: 1,
                        dropped: false,
                    })
                    .collect());
            }
            [RefTransform::Index(ix, _)] => ix,
            _ => {
                return err(
                    place.range,
                    "a reference with transforms other than one indexer (`{bitcast}`, `{reshape}`, chained indexers) is not built",
                );
            }
        };
        let int = |a: &Atom| match a {
            Atom::Lit(l) => l.value.parse::<i64>().ok(),
            _ => None,
        };
        let stride_of = |d: usize| match strides {
            Strides::Unknown => None,
            Strides::Ones => Some(1),
            Strides::Known(s) => s.get(d).copied(),
        };
        if let Strides::Known(s) = strides
            && s.len() != ix.len()
        {
            return err(
                place.range,
                format!(
                    "the recorded strides are for {} dimensions, this indexer has {}: record them again with the text",
                    s.len(),
                    ix.len()
                ),
            );
        }
        let mut out = Vec::new();
        for (d, (i, &n)) in ix.iter().zip(&shape).enumerate() {
            out.push(match i {
                Indexer::At(x) => {
                    let start = match int(x) {
                        Some(c) => i32_lit(c),
                        None => self.index(x, env)?,
                    };
                    Span {
                        start,
                        size: 1,
                        stride: 1,
                        dropped: true,
                    }
                }
                Indexer::Slice {
                    start,
                    stop,
                    plus,
                    range,
                } => {
                    let s0 = start.as_ref().map_or(Some(0), int);
                    let size = match (stop, plus) {
                        (Some(x), true) => int(x),
                        (None, _) => s0.map(|s| n - s),
                        (Some(x), false) => int(x).zip(s0).map(|(e, s)| e - s),
                    };
                    let Some(size) = size else {
                        return err(*range, "a slice of a size that is not an integer is not built");
                    };
                    let whole = size == n && s0 == Some(0);
                    let stride = match stride_of(d) {
                        Some(k) => k,
                        None if whole => 1,
                        None => {
                            return err(
                                *range,
                                format!("this slice takes part of a dimension of {n}, and JAX prints no stride (`pl.ds(start, size, stride)` prints as `start:start+size`), so the text does not say which elements it takes: not built (the Python API and `jaxpr trace` record the strides beside the text, docs/state-build.md)"),
                            );
                        }
                    };
                    let start = match (start, s0) {
                        (_, Some(c)) => i32_lit(c),
                        (Some(x), None) => self.index(x, env)?,
                        (None, None) => i32_lit(0),
                    };
                    Span {
                        start,
                        size,
                        stride,
                        dropped: false,
                    }
                }
            });
        }
        Ok(out)
    }

    /// The shape of operand `x` (a literal's is `[]`).
    fn operand_shape(&self, x: &Atom) -> LowerResult<Vec<i64>> {
        match self.operand_var(x) {
            Some(v) => static_shape(&self.a.var(v).ty, x.range()),
            None => Ok(Vec::new()),
        }
    }

    /// The variable named `name` among those bound in `env`, and its atom:
    /// `None` unless exactly one is (JAX's printer names each variable of
    /// a printout once).
    fn in_scope(&self, env: &Env, name: &str) -> Option<(VarId, String)> {
        let mut found = env.iter().filter(|(v, _)| self.a.var(**v).name == name);
        let (v, atom) = found.next()?;
        found.next().is_none().then(|| (*v, atom.clone()))
    }

    /// A scalar index as an `i32[]` atom.
    fn index(&mut self, x: &Atom, env: &Env) -> LowerResult<String> {
        if !self.operand_shape(x)?.is_empty() {
            return crate::internal(
                x.range(),
                "an array of indices beside slices was not refused",
            );
        }
        self.int32(x, env)
    }

    /// Integer operand `x` (a scalar or an array of indices) as an atom of
    /// dtype `int32`.
    fn int32(&mut self, x: &Atom, env: &Env) -> LowerResult<String> {
        let s = self.atom(env, x)?;
        let Some(v) = self.operand_var(x) else {
            return Ok(s);
        };
        let t = self.a.var(v).ty.clone();
        match &t.dtype {
            Some(DType::Int(32)) => Ok(s),
            Some(d) if d.is_int() => Ok(self.line(
                &format!("i32[{}]", join(&static_shape(&t, x.range())?)),
                &format!("convert_element_type[new_dtype=int32 weak_type=False] {s}"),
            )),
            _ => err(x.range(), "an index that is not an integer is not built"),
        }
    }

    /// Emits the block `spans` of `whole` (dtype `dt`): its atom.
    fn load(&mut self, dt: &DType, whole: &str, full: &[i64], spans: &[Span]) -> String {
        let sizes: Vec<i64> = spans.iter().map(|s| s.size).collect();
        let is_whole = sizes == full && spans.iter().all(|s| s.start == i32_lit(0) && !s.dropped);
        if is_whole {
            return whole.to_string();
        }
        // A strided slice reads the elements its strides span, then takes
        // every stride-th one.
        let extents: Vec<i64> = spans
            .iter()
            .map(|s| (s.size - 1).max(0) * s.stride + 1.min(s.size))
            .collect();
        let starts: Vec<&str> = spans.iter().map(|s| s.start.as_str()).collect();
        let mut block = self.line(
            &format!("{dt}[{}]", join(&extents)),
            &format!(
                "dynamic_slice[slice_sizes={}] {whole} {}",
                tuple(&extents),
                starts.join(" ")
            ),
        );
        if extents != sizes {
            let strides: Vec<i64> = spans.iter().map(|s| s.stride).collect();
            block = self.line(
                &format!("{dt}[{}]", join(&sizes)),
                &format!(
                    "slice[limit_indices={} start_indices={} strides={}] {block}",
                    tuple(&extents),
                    tuple(&vec![0; extents.len()]),
                    tuple(&strides)
                ),
            );
        }
        let kept: Vec<i64> = spans
            .iter()
            .filter(|s| !s.dropped)
            .map(|s| s.size)
            .collect();
        if kept.len() == sizes.len() {
            return block;
        }
        self.line(
            &format!("{dt}[{}]", join(&kept)),
            &format!(
                "reshape[dimensions=None new_sizes={} sharding=None] {block}",
                tuple(&kept)
            ),
        )
    }

    /// Emits `whole` with block `spans` replaced by `value`: its atom.
    fn store(
        &mut self,
        dt: &DType,
        whole: &str,
        full: &[i64],
        spans: &[Span],
        value: &str,
    ) -> String {
        let sizes: Vec<i64> = spans.iter().map(|s| s.size).collect();
        let is_whole = sizes == full && spans.iter().all(|s| s.start == i32_lit(0) && !s.dropped);
        if is_whole {
            return value.to_string();
        }
        let mut value = value.to_string();
        if spans.iter().any(|s| s.dropped) {
            value = self.line(
                &format!("{dt}[{}]", join(&sizes)),
                &format!(
                    "reshape[dimensions=None new_sizes={} sharding=None] {value}",
                    tuple(&sizes)
                ),
            );
        }
        let starts: Vec<&str> = spans.iter().map(|s| s.start.as_str()).collect();
        self.line(
            &format!("{dt}[{}]", join(full)),
            &format!("dynamic_update_slice {whole} {value} {}", starts.join(" ")),
        )
    }

    /// Operand `x` (a variable, or a scalar literal) of dtype `dt`,
    /// broadcast to `shape` as numpy broadcasts (trailing dimensions
    /// aligned, dimensions of 1 stretched): its atom.
    fn broadcast_operand(
        &mut self,
        atom: String,
        from: &[i64],
        at: TextRange,
        dt: &DType,
        shape: &[i64],
    ) -> LowerResult<String> {
        if from == shape {
            return Ok(atom);
        }
        let lead = shape.len().checked_sub(from.len());
        let fits = lead.is_some_and(|lead| {
            from.iter()
                .zip(&shape[lead..])
                .all(|(&f, &t)| f == 1 || f == t)
        });
        let Some(lead) = lead.filter(|_| fits) else {
            return err(
                at,
                format!(
                    "this operand of shape {from:?} does not broadcast to the block's {shape:?}"
                ),
            );
        };
        let dims: Vec<i64> = (lead..shape.len()).map(|d| d as i64).collect();
        Ok(self.line(
            &format!("{dt}[{}]", join(shape)),
            &format!(
                "broadcast_in_dim[broadcast_dimensions={} shape={} sharding=None] {atom}",
                tuple(&dims),
                tuple(shape)
            ),
        ))
    }

    fn state(
        &mut self,
        e: &ast::Eqn,
        st: &ast::StateAccess,
        outs: &[Option<VarId>],
        env: &mut Env,
    ) -> LowerResult<()> {
        let Some(r) = self.operand_var(&e.args[0]) else {
            return crate::internal(st.place.range, "the reference is not resolved");
        };
        let rty = self.a.var(r).ty.clone();
        let dt = elem(&rty, st.place.range)?;
        let full = static_shape(&rty, st.place.range)?;
        let whole = self.atom(env, &e.args[0])?;
        // What JAX's printout of this access lacks, recorded beside it.
        let out = outs.first().copied().flatten();
        let value_var = st.value.as_ref().and_then(|x| self.operand_var(x));
        let facts = self
            .recorded
            .access(
                &self.a.var(r).name,
                out.map(|o| self.a.var(o).name.as_str()),
                value_var.map(|v| self.a.var(v).name.as_str()),
            )
            .map_err(|m| refused(st.place.range, &m))?;
        let strides = match facts {
            AccessFacts::Unknown => Strides::Unknown,
            AccessFacts::Plain => Strides::Ones,
            AccessFacts::Recorded(a) => match &a.strides[..] {
                [] => Strides::Ones,
                [one] => Strides::Known(one),
                _ => {
                    return err(
                        st.place.range,
                        "a reference with transforms other than one indexer (`{bitcast}`, `{reshape}`, chained indexers) is not built",
                    );
                }
            },
        };
        let place = match self.gathered(&st.place, &full, env)? {
            Some(g) => Place::Gather(g),
            None => {
                let spans = self.spans(&st.place, &rty, strides, env)?;
                if st.value.is_some() && spans.iter().any(|s| s.stride != 1) {
                    return err(
                        st.place.range,
                        "a store into a strided slice (`pl.ds(start, size, stride)` with a stride other than 1) is not built",
                    );
                }
                Place::Block(spans)
            }
        };
        let kept: Vec<i64> = match &place {
            Place::Block(spans) => spans
                .iter()
                .filter(|s| !s.dropped)
                .map(|s| s.size)
                .collect(),
            Place::Gather(g) => g.shape.clone(),
        };
        // Pallas's mask (and a load's `other`), broadcast as `jnp.where`
        // broadcasts them to the block; JAX prints a store's mask only when
        // its result is used, and the recorded accesses hold the others.
        let mask = match (&st.mask, facts) {
            (Some(m), _) => {
                let atom = self.atom(env, m)?;
                let from = self.operand_shape(m)?;
                Some(self.broadcast_operand(atom, &from, m.range(), &DType::Bool, &kept)?)
            }
            (
                None,
                AccessFacts::Recorded(Access {
                    mask: Some(name), ..
                }),
            ) => {
                let Some(name) = name else {
                    return err(
                        st.place.range,
                        "this store's recorded mask is a literal, which the record cannot name: not built",
                    );
                };
                let Some((v, atom)) = self.in_scope(env, name) else {
                    return err(
                        st.place.range,
                        format!(
                            "this store's recorded mask `{name}` is not a variable here: record it again with the text"
                        ),
                    );
                };
                let from = static_shape(&self.a.var(v).ty, st.place.range)?;
                Some(self.broadcast_operand(atom, &from, st.place.range, &DType::Bool, &kept)?)
            }
            (None, AccessFacts::Unknown) if st.kind == StateKind::Store && self.prints_masks => {
                return err(
                    st.place.range,
                    "JAX prints a Pallas store's mask only when its result is used, and this program masks other accesses, so the text does not say whether this store is masked: not built (the Python API and `jaxpr trace` record the masks beside the text, docs/state-build.md)",
                );
            }
            (None, _) => None,
        };
        let other = match (&mask, &st.other) {
            (Some(_), Some(o)) => {
                let atom = self.atom(env, o)?;
                let from = self.operand_shape(o)?;
                Some(self.broadcast_operand(atom, &from, o.range(), &dt, &kept)?)
            }
            _ => None,
        };
        let block = format!("{dt}[{}]", join(&kept));
        // A masked swap or store needs the old block too.
        let old = match (st.kind, &mask, &place) {
            (StateKind::Store, None, _) => None,
            // `x.at[indices].add(v)` adds at repeated indices as often as
            // they repeat: a `scatter-add`, which reads nothing before.
            (StateKind::AddUpdate, None, Place::Gather(_)) => None,
            _ => Some(self.load_place(&dt, &whole, &full, &place)),
        };
        let Some(value) = &st.value else {
            // A load: `jnp.where(mask, block, other)` (JAX's
            // `_load_discharge_rule`: without `other`, the block as read).
            let mut loaded = old.unwrap_or_default();
            if let (Some(mask), Some(other)) = (&mask, &other) {
                loaded = self.line(&block, &format!("select_n {mask} {other} {loaded}"));
            }
            if let Some(Some(o)) = outs.first() {
                env.insert(*o, loaded);
            }
            return Ok(());
        };
        let mut value = self.atom(env, value)?;
        // A masked swap (`_swap_discharge_rule`): the result is the old
        // block where the mask holds and the value elsewhere; the value is
        // stored where the mask holds and the old block kept elsewhere.
        let mut result = old.clone();
        if let (Some(mask), Some(old)) = (&mask, &old) {
            result = Some(self.line(&block, &format!("select_n {mask} {value} {old}")));
            value = self.line(&block, &format!("select_n {mask} {old} {value}"));
        }
        if st.kind != StateKind::Store
            && let (Some(result), Some(Some(o))) = (&result, outs.first())
        {
            env.insert(*o, result.clone());
        }
        let new = match (&place, st.kind) {
            (Place::Gather(g), StateKind::AddUpdate) => {
                self.scatter("scatter-add", &dt, &whole, &full, g, &value)
            }
            (Place::Gather(g), _) => self.scatter("scatter", &dt, &whole, &full, g, &value),
            (Place::Block(spans), kind) => {
                if kind == StateKind::AddUpdate {
                    let old = old.unwrap_or_default();
                    value = self.line(
                        &format!("{dt}[{}]", join(&kept)),
                        &format!("add {old} {value}"),
                    );
                }
                self.store(&dt, &whole, &full, spans, &value)
            }
        };
        env.insert(r, new);
        Ok(())
    }

    /// Emits what `place` of `whole` (dtype `dt`, shape `full`) holds: its
    /// atom.
    fn load_place(&mut self, dt: &DType, whole: &str, full: &[i64], place: &Place) -> String {
        match place {
            Place::Block(spans) => self.load(dt, whole, full, spans),
            Place::Gather(g) => {
                let axes = tuple(&(0..full.len() as i64).collect::<Vec<_>>());
                self.line(
                    &format!("{dt}[{}]", join(&g.shape)),
                    &format!(
                        "gather[dimension_numbers=GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims={axes}, start_index_map={axes}, operand_batching_dims=(), start_indices_batching_dims=()) fill_value=None indices_are_sorted=False mode=GatherScatterMode.CLIP slice_sizes={} unique_indices=False] {whole} {}",
                        tuple(&vec![1; full.len()]),
                        g.indices
                    ),
                )
            }
        }
    }

    /// Emits `whole` (dtype `dt`, shape `full`) with `value` written
    /// (`scatter`) or added (`scatter-add`) at the indices of `g`, those
    /// out of bounds dropped (numpy's `x.at[indices]`): its atom.
    fn scatter(
        &mut self,
        prim: &str,
        dt: &DType,
        whole: &str,
        full: &[i64],
        g: &Gather,
        value: &str,
    ) -> String {
        let axes = tuple(&(0..full.len() as i64).collect::<Vec<_>>());
        self.line(
            &format!("{dt}[{}]", join(full)),
            &format!(
                "{prim}[dimension_numbers=ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims={axes}, scatter_dims_to_operand_dims={axes}, operand_batching_dims=(), scatter_indices_batching_dims=()) indices_are_sorted=False mode=GatherScatterMode.FILL_OR_DROP unique_indices=False update_consts=() update_jaxpr=None] {whole} {} {value}",
                g.indices
            ),
        )
    }

    /// The indices of `place` when its indexers are arrays of indices
    /// (numpy's advanced indexing: JAX discharges such a load or store as
    /// `x[indices]` and `x.at[indices].set(v)`, a gather whose indices out
    /// of bounds are clamped, as jax 0.4.30 and 0.10.2 compute it, and a
    /// scatter that drops them), into
    /// a reference of shape `full`: `None` when every index is a scalar or
    /// a slice.
    fn gathered(
        &mut self,
        place: &ast::RefPlace,
        full: &[i64],
        env: &Env,
    ) -> LowerResult<Option<Gather>> {
        let [RefTransform::Index(ix, _)] = &*place.transforms else {
            return Ok(None);
        };
        let mut arrays = Vec::new();
        for i in ix.iter() {
            match i {
                Indexer::At(x) => arrays.push((x, self.operand_shape(x)?)),
                Indexer::Slice { .. } => {}
            }
        }
        if arrays.iter().all(|(_, s)| s.is_empty()) {
            return Ok(None);
        }
        if arrays.len() != ix.len() || ix.len() != full.len() {
            return err(
                place.range,
                "slices beside an array of indices (a gather) into a reference are not built: index every dimension with an array or a scalar",
            );
        }
        // numpy's broadcasting of the index arrays: trailing dimensions
        // aligned, dimensions of 1 stretched.
        let rank = arrays.iter().map(|(_, s)| s.len()).max().unwrap_or(0);
        let mut shape = vec![1; rank];
        for (x, s) in &arrays {
            for (k, &n) in s.iter().enumerate() {
                let d = &mut shape[rank - s.len() + k];
                if *d == 1 {
                    *d = n;
                } else if n != 1 && n != *d {
                    return err(
                        x.range(),
                        format!(
                            "these indices of shape {s:?} do not broadcast with the others ({shape:?})"
                        ),
                    );
                }
            }
        }
        let mut column_shape = shape.clone();
        column_shape.push(1);
        let mut columns = Vec::new();
        for ((x, s), &n) in arrays.iter().zip(full) {
            // A negative index counts from the end (`_normalize_index`).
            let index = match x {
                Atom::Lit(l) if let Ok(c) = l.value.parse::<i64>() => {
                    i32_lit(if c < 0 { c + n } else { c })
                }
                _ => {
                    let a = self.int32(x, env)?;
                    let ty = format!("i32[{}]", join(s));
                    let negative =
                        self.line(&format!("bool[{}]", join(s)), &format!("lt {a} 0:i32[]"));
                    let wrapped = self.line(&ty, &format!("add {a} {n}:i32[]"));
                    self.line(&ty, &format!("select_n {negative} {a} {wrapped}"))
                }
            };
            let dims: Vec<i64> = (rank - s.len()..rank).map(|d| d as i64).collect();
            columns.push(self.line(
                &format!("i32[{}]", join(&column_shape)),
                &format!(
                    "broadcast_in_dim[broadcast_dimensions={} shape={} sharding=None] {index}",
                    tuple(&dims),
                    tuple(&column_shape)
                ),
            ));
        }
        let indices = if columns.len() == 1 {
            columns.remove(0)
        } else {
            let mut ty = shape.clone();
            ty.push(columns.len() as i64);
            self.line(
                &format!("i32[{}]", join(&ty)),
                &format!("concatenate[dimension={rank}] {}", columns.join(" ")),
            )
        };
        Ok(Some(Gather { indices, shape }))
    }

    pub(crate) fn callee(
        &self,
        id: EqnId,
        param: &str,
        at: TextRange,
    ) -> LowerResult<Vec<JaxprId>> {
        let js: Vec<JaxprId> = self
            .a
            .eqn(id)
            .callees
            .iter()
            .filter(|(p, _)| p.as_str() == param)
            .map(|(_, j)| *j)
            .collect();
        if js.is_empty() {
            return crate::internal(at, format!("no checked `{param}` jaxpr"));
        }
        Ok(js)
    }

    /// `run_state`: its body inline, each binder holding an operand.
    fn run_state(
        &mut self,
        e: &ast::Eqn,
        id: EqnId,
        outs: &[Option<VarId>],
        env: &mut Env,
    ) -> LowerResult<()> {
        let j = self.callee(id, "jaxpr", e.primitive.range)?[0];
        let binders = self.a.jaxpr(j).invars.clone();
        for (&b, x) in binders.iter().zip(e.args.iter()) {
            let v = self.atom(env, x)?;
            env.insert(b, v);
        }
        self.body(j, env, false)?;
        for (o, b) in outs.iter().zip(&binders) {
            if let Some(o) = o {
                let v = env[b].clone();
                env.insert(*o, v);
            }
        }
        Ok(())
    }

    /// A call (`pjit`, `closed_call`) of a jaxpr with references or
    /// kernels: its body inline.
    fn inline(
        &mut self,
        e: &ast::Eqn,
        id: EqnId,
        outs: &[Option<VarId>],
        env: &mut Env,
    ) -> LowerResult<()> {
        let callees = &self.a.eqn(id).callees;
        let params = jaxpr_check::registry::call_params(&e.primitive.text).unwrap_or_default();
        let Some(j) = params.iter().find_map(|p| {
            callees
                .iter()
                .find(|(q, _)| q.as_str() == *p)
                .map(|(_, j)| *j)
        }) else {
            return crate::internal(e.primitive.range, "a call without its jaxpr");
        };
        let mut inner = Env::default();
        let binders = self.constants_of(j, &mut inner, e.args.len(), e.primitive.range)?;
        for (&b, x) in binders.iter().zip(e.args.iter()) {
            inner.insert(b, self.atom(env, x)?);
        }
        let results = self.body(j, &mut inner, false)?;
        for (o, r) in outs.iter().zip(results) {
            if let Some(o) = o {
                env.insert(*o, r);
            }
        }
        Ok(())
    }

    /// The binders of nested jaxpr `j` that a call's `inputs` operands
    /// bind ([`crate::walk::nested_binders`]). When `j`'s constants have
    /// recorded values and the call passes only its arguments (as JAX
    /// prints a closed jaxpr's call), each constant is bound in `env` to a
    /// `constant` equation emitted here, and the binders are its invars.
    fn constants_of(
        &mut self,
        j: JaxprId,
        env: &mut Env,
        inputs: usize,
        at: TextRange,
    ) -> LowerResult<Vec<VarId>> {
        let info = self.a.jaxpr(j);
        if info.constvars.is_empty() || inputs != info.invars.len() {
            return crate::walk::nested_binders(self.a, j, inputs, at);
        }
        let mut lines = Vec::with_capacity(info.constvars.len());
        for &v in &info.constvars {
            let var = self.a.var(v);
            match self.recorded.constant_params(&var.name, &var.ty, at)? {
                Some(eqn) => lines.push((v, ty_text(&var.ty, at)?, eqn)),
                // Not recorded: refused as the text alone is.
                None => return crate::walk::nested_binders(self.a, j, inputs, at),
            }
        }
        let invars = info.invars.clone();
        for (v, ty, eqn) in lines {
            let n = self.line(&ty, &eqn);
            env.insert(v, n);
        }
        Ok(invars)
    }

    /// A nested jaxpr whose reference binders take values: `{ lambda ;
    /// binders. let ... in (outputs, final values of refs) }`, its binders
    /// in `order` (indices into its invars).
    fn nested(
        &mut self,
        j: JaxprId,
        order: &[usize],
        ref_outs: &[usize],
        lead: usize,
    ) -> LowerResult<String> {
        self.nested_with(j, order, ref_outs, lead, &[])
    }

    /// [`Self::nested`], with binders of types `unread` after the others
    /// (values the jaxpr is passed and does not read).
    fn nested_with(
        &mut self,
        j: JaxprId,
        order: &[usize],
        ref_outs: &[usize],
        lead: usize,
        unread: &[String],
    ) -> LowerResult<String> {
        let saved = std::mem::take(&mut self.out);
        let info = self.a.jaxpr(j).clone();
        let at = info.range;
        let mut env = Env::default();
        // Recorded constants are equations of the body, before the rest.
        self.constants_of(j, &mut env, info.invars.len(), at)?;
        let mut head = String::from("{ lambda ; ");
        for &k in order {
            let v = info.invars[k];
            let n = self.bind_fresh(&mut env, v);
            write!(head, "{n}:{} ", ty_text(&self.a.var(v).ty, at)?).unwrap();
        }
        for ty in unread {
            let n = self.name();
            write!(head, "{n}:{ty} ").unwrap();
        }
        head.push_str(". let\n");
        let outs = self.body(j, &mut env, false)?;
        let mut results: Vec<String> = ref_outs
            .iter()
            .map(|&k| env[&info.invars[k]].clone())
            .collect();
        // The outputs before the references' values (`lead` of them), then
        // the references', then the rest.
        let rest = outs[lead..].to_vec();
        let mut all = outs[..lead].to_vec();
        all.append(&mut results);
        all.extend(rest);
        let body = std::mem::replace(&mut self.out, saved);
        Ok(format!(
            "{head}{body}      in ({}{}) }}",
            all.join(", "),
            if all.len() == 1 { "," } else { "" }
        ))
    }

    /// Binders for the results: the original ones renamed, and one for
    /// each reference's final value (the reference then names it).
    pub(crate) fn result_binders(
        &mut self,
        e: &ast::Eqn,
        outs: &[Option<VarId>],
        env: &mut Env,
    ) -> Vec<String> {
        e.outs
            .iter()
            .zip(outs)
            .map(|(b, v)| {
                let ty = &self.text[b.name.range.end as usize..b.range.end as usize];
                match v {
                    Some(v) if !b.is_dropped() => {
                        let n = self.bind_fresh(env, *v);
                        format!("{n}{ty}")
                    }
                    _ => format!("_{ty}"),
                }
            })
            .collect()
    }

    fn ref_binders(
        &mut self,
        e: &ast::Eqn,
        refs: &[usize],
        env: &mut Env,
    ) -> LowerResult<Vec<String>> {
        refs.iter()
            .map(|&i| {
                let v = self
                    .operand_var(&e.args[i])
                    .expect("a reference operand is a variable");
                let t = ty_text(&self.a.var(v).ty, e.args[i].range())?;
                let n = self.name();
                env.insert(v, n.clone());
                Ok(format!("{n}:{t}"))
            })
            .collect()
    }

    /// Other parameters as printed, but those in `skip`.
    pub(crate) fn params_except(&self, e: &ast::Eqn, skip: &[&str]) -> String {
        e.params
            .iter()
            .filter(|p| !skip.contains(&p.name.text.as_ref()))
            .map(|p| self.slice(p.range))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// `cond` with references among its operands: each branch returns their
    /// final values after its results.
    fn cond(
        &mut self,
        e: &ast::Eqn,
        id: EqnId,
        outs: &[Option<VarId>],
        env: &mut Env,
        refs: &[usize],
    ) -> LowerResult<()> {
        let branches = self.callee(id, "branches", e.primitive.range)?;
        // Operand 0 is the branch index; the branches take the rest.
        let ops: Vec<usize> = (0..e.args.len() - 1).collect();
        let ref_ins: Vec<usize> = refs.iter().map(|&i| i - 1).collect();
        let nout = outs.len();
        let mut texts = Vec::new();
        for &b in &branches {
            texts.push(self.nested(b, &ops, &ref_ins, nout)?);
        }
        let args: Vec<String> = self.atoms(env, &e.args)?;
        let mut binders = self.result_binders(e, outs, env);
        binders.extend(self.ref_binders(e, refs, env)?);
        let params = self.params_except(e, &["branches"]);
        writeln!(
            self.out,
            "    {} = cond[branches=(\n{}\n    ) {params}] {}",
            binders.join(" "),
            texts.join("\n"),
            args.join(" ")
        )
        .unwrap();
        Ok(())
    }

    /// The atoms of `e`'s operands, in `order`.
    fn atoms_in_order(&self, env: &Env, e: &ast::Eqn, order: &[usize]) -> LowerResult<Vec<String>> {
        order.iter().map(|&i| self.atom(env, &e.args[i])).collect()
    }

    /// `scan` with references among its constants: they become carries.
    fn scan(
        &mut self,
        e: &ast::Eqn,
        id: EqnId,
        outs: &[Option<VarId>],
        env: &mut Env,
        refs: &[usize],
    ) -> LowerResult<()> {
        let at = e.primitive.range;
        let Some((nconsts, ncarry)) = counts(e, "num_consts", "num_carry") else {
            return crate::internal(at, "`scan` without `num_consts` and `num_carry`");
        };
        if refs.iter().any(|&i| i >= nconsts) {
            return err(
                at,
                "a reference carried or scanned over by `scan` is not built (only references among its constants)",
            );
        }
        let body = self.callee(id, "jaxpr", at)?[0];
        let consts: Vec<usize> = (0..nconsts).filter(|i| !refs.contains(i)).collect();
        let mut order = consts.clone();
        order.extend(refs);
        order.extend(nconsts..e.args.len());
        // `linear` (JAX <= 0.5) has one flag per operand: in the new order.
        let linear = match e.param("linear") {
            None => String::new(),
            Some(p) => match p.value.as_seq() {
                Some(flags) if flags.len() == e.args.len() => {
                    let flags: Vec<&str> =
                        order.iter().map(|&i| self.slice(flags[i].range)).collect();
                    format!(
                        "linear=({}{}) ",
                        flags.join(", "),
                        if flags.len() == 1 { "," } else { "" }
                    )
                }
                _ => return err(p.range, "a `linear` of another length than the operands"),
            },
        };
        let text = self.nested(body, &order, refs, 0)?;
        let args = self.atoms_in_order(env, e, &order)?;
        let mut binders = self.ref_binders(e, refs, env)?;
        binders.extend(self.result_binders(e, outs, env));
        let params = self.params_except(e, &["jaxpr", "num_consts", "num_carry", "linear"]);
        writeln!(
            self.out,
            "    {} = scan[jaxpr={text} {linear}num_consts={} num_carry={} {params}] {}",
            binders.join(" "),
            consts.len(),
            ncarry + refs.len(),
            args.join(" ")
        )
        .unwrap();
        Ok(())
    }

    /// `while` whose body's constants include references (JAX's
    /// `_while_discharge_rule`): they become carries after the others, the
    /// condition passed their values unread, the results naming them.
    fn while_loop(
        &mut self,
        e: &ast::Eqn,
        id: EqnId,
        outs: &[Option<VarId>],
        env: &mut Env,
        refs: &[usize],
    ) -> LowerResult<()> {
        let at = e.primitive.range;
        let Some((cn, bn)) = counts(e, "cond_nconsts", "body_nconsts") else {
            return crate::internal(at, "`while` without `cond_nconsts` and `body_nconsts`");
        };
        if refs.iter().any(|&i| i < cn || i >= cn + bn) {
            return err(
                at,
                "a reference read by the condition of `while` or carried by it is not built (only references among its body's constants)",
            );
        }
        let body = self.callee(id, "body_jaxpr", at)?[0];
        let cond = self.callee(id, "cond_jaxpr", at)?[0];
        let ncarry = e.args.len() - cn - bn;
        // In the body's own numbering: constants, then the carry.
        let body_refs: Vec<usize> = refs.iter().map(|&i| i - cn).collect();
        let mut order: Vec<usize> = (0..bn).filter(|i| !body_refs.contains(i)).collect();
        order.extend(bn..bn + ncarry);
        order.extend(&body_refs);
        let body_text = self.nested(body, &order, &body_refs, ncarry)?;
        let ref_types: Vec<String> = refs
            .iter()
            .map(|&i| {
                let v = self.operand_var(&e.args[i]);
                match v {
                    Some(v) => ty_text(&self.a.var(v).ty, e.args[i].range()),
                    None => crate::internal(e.args[i].range(), "a reference is a variable"),
                }
            })
            .collect::<LowerResult<_>>()?;
        let cond_order: Vec<usize> = (0..self.a.jaxpr(cond).invars.len()).collect();
        let cond_text = self.nested_with(cond, &cond_order, &[], 0, &ref_types)?;
        let mut arg_order: Vec<usize> = (0..cn + bn).filter(|i| !refs.contains(i)).collect();
        arg_order.extend(cn + bn..e.args.len());
        arg_order.extend(refs);
        let args = self.atoms_in_order(env, e, &arg_order)?;
        let mut binders = self.result_binders(e, outs, env);
        binders.extend(self.ref_binders(e, refs, env)?);
        let params = self.params_except(
            e,
            &["body_jaxpr", "cond_jaxpr", "body_nconsts", "cond_nconsts"],
        );
        writeln!(
            self.out,
            "    {} = while[body_jaxpr={body_text} body_nconsts={} cond_jaxpr={cond_text} cond_nconsts={cn} {params}] {}",
            binders.join(" "),
            bn - refs.len(),
            args.join(" ")
        )
        .unwrap();
        Ok(())
    }

    /// The older `for` (`jax/_src/lax/control_flow/for_loop.py`, whose
    /// discharge is a `scan`): a `scan` carrying the step and the arrays,
    /// the body seeing step `i` (`nsteps - 1 - i` when `reverse`).
    fn for_loop(
        &mut self,
        e: &ast::Eqn,
        id: EqnId,
        outs: &[Option<VarId>],
        env: &mut Env,
    ) -> LowerResult<()> {
        let at = e.primitive.range;
        let body = self.callee(id, "jaxpr", at)?[0];
        let Some(nsteps) = e.param("nsteps").and_then(|p| p.value.as_int()) else {
            return err(at, "a `for` without an integer `nsteps` is not built");
        };
        let reverse = e
            .param("reverse")
            .is_some_and(|p| matches!(&p.value.kind, ExprKind::Path(x) if x.as_ref() == "True"));
        let info = self.a.jaxpr(body).clone();
        if info.invars.len() != e.args.len() + 1 || !info.constvars.is_empty() {
            return crate::internal(
                info.range,
                "the body of `for` takes the step and one reference per operand",
            );
        }
        let saved = std::mem::take(&mut self.out);
        let mut inner = Env::default();
        let step = self.name();
        let mut head = format!("{{ lambda ; {step}:i32[] ");
        for &v in &info.invars[1..] {
            let n = self.bind_fresh(&mut inner, v);
            write!(head, "{n}:{} ", ty_text(&self.a.var(v).ty, info.range)?).unwrap();
        }
        head.push_str(". let\n");
        let i = if reverse {
            self.line("i32[]", &format!("sub {}:i32[] {step}", nsteps - 1))
        } else {
            step.clone()
        };
        inner.insert(info.invars[0], i);
        self.body(body, &mut inner, false)?;
        let next = self.line("i32[]", &format!("add {step} 1:i32[]"));
        let mut results = vec![next];
        results.extend(info.invars[1..].iter().map(|v| inner[v].clone()));
        let text = std::mem::replace(&mut self.out, saved);
        let args: Vec<String> = self.atoms(env, &e.args)?;
        // Each result is the final value of its operand: a reference
        // operand (a kernel's, passed on) then names it.
        let mut binders = vec!["_:i32[]".to_string()];
        for (k, (x, &b)) in e.args.iter().zip(&info.invars[1..]).enumerate() {
            let n = self.name();
            binders.push(format!("{n}:{}", ty_text(&self.a.var(b).ty, info.range)?));
            if let (Some(Some(o)), Some(out)) = (outs.get(k), e.outs.get(k))
                && !out.is_dropped()
            {
                env.insert(*o, n.clone());
            }
            if let Some(v) = self.operand_var(x)
                && self.is_ref(v)
            {
                env.insert(v, n);
            }
        }
        writeln!(
            self.out,
            "    {} = scan[jaxpr={head}{text}      in ({}) }} length={nsteps} linear=({}) num_consts=0 num_carry={} reverse=False unroll=1] 0:i32[] {}",
            binders.join(" "),
            results.join(", "),
            vec!["False"; args.len() + 1].join(", "),
            args.len() + 1,
            args.join(" ")
        )
        .unwrap();
        Ok(())
    }

    /// `pallas_call`: the kernel inline at each grid point.
    fn pallas_call(
        &mut self,
        e: &ast::Eqn,
        id: EqnId,
        outs: &[Option<VarId>],
        env: &mut Env,
    ) -> LowerResult<()> {
        let at = e.primitive.range;
        let KernelBlocks {
            kernel,
            grid,
            mappings,
            points: indices,
            aliases,
        } = kernel_blocks(self.a, self.syntax, e, id, self.recorded)?;
        let points = indices.len() as i64;
        let mut blocks: Vec<(Vec<Option<i64>>, Vec<i64>)> =
            mappings.into_iter().map(|m| (m.sizes, m.full)).collect();
        // The arrays' values: operands, then results.
        let eq_outs: Vec<AType> = crate::walk::result_types(self.a, e, id);
        let mut arrays: Vec<(String, AType)> = Vec::new();
        for x in e.args.iter() {
            let v = self.operand_var(x);
            let ty = match v {
                Some(v) => self.a.var(v).ty.clone(),
                None => return err(x.range(), "a literal operand of a kernel is not built"),
            };
            arrays.push((self.atom(env, x)?, ty));
        }
        let nin = arrays.len();
        for (k, t) in eq_outs.iter().enumerate() {
            let init = match aliases.get(&k) {
                Some(&i) if i < nin => arrays[i].0.clone(),
                _ => self.uninitialized(t, at)?,
            };
            arrays.push((init, t.clone()));
        }
        let kinfo = self.a.jaxpr(kernel).clone();
        if !kinfo.constvars.is_empty() {
            return err(kinfo.range, "a kernel with constants is not built");
        }
        if kinfo.invars.len() < arrays.len() {
            return crate::internal(
                kinfo.range,
                "the kernel has fewer binders than operands and results",
            );
        }
        // Each grid point's block indices, row-major (the last grid axis
        // moves fastest).
        // Each array padded to whole blocks with uninitialised values, as
        // the interpreter pads it (`_pad_to_block_dimension`): a last block
        // past the end reads them; the results are sliced back at the end.
        let unpadded: Vec<Vec<i64>> = blocks.iter().map(|(_, full)| full.clone()).collect();
        for (k, (sizes, full)) in blocks.iter_mut().enumerate() {
            let padded = padded_to_blocks(sizes, full);
            if padded == *full {
                continue;
            }
            let dt = elem(&arrays[k].1, at)?;
            let fill = uninitialized_literal(&dt, at)?;
            let cfg: Vec<String> = padded
                .iter()
                .zip(full.iter())
                .map(|(p, f)| format!("(0, {}, 0)", p - f))
                .collect();
            arrays[k].0 = self.line(
                &format!("{dt}[{}]", join(&padded)),
                &format!(
                    "pad[padding_config=({}{})] {} {fill}:{dt}[]",
                    cfg.join(", "),
                    if cfg.len() == 1 { "," } else { "" },
                    arrays[k].0
                ),
            );
            *full = padded;
        }
        // A mapping whose grid points each take another block, together
        // tiling its array, is written once after the last point (its
        // blocks joined by `concatenate`): no point reads a block another
        // one wrote, and a `dynamic_update_slice` of the whole array per
        // point would copy it at every point.
        let tiled: Vec<bool> = blocks
            .iter()
            .enumerate()
            .map(|(k, (sizes, full))| {
                let tiles = sizes.iter().zip(full).try_fold(1i64, |n, (s, &f)| {
                    let s = s.unwrap_or(1);
                    (s > 0 && f % s == 0).then(|| n * (f / s))
                });
                let distinct: rustc_hash::FxHashSet<&Vec<i64>> =
                    indices.iter().map(|(_, at)| &at[k]).collect();
                tiles == Some(points) && distinct.len() as i64 == points
            })
            .collect();
        let mut finals: Vec<HashMap<Vec<i64>, String>> = vec![HashMap::default(); blocks.len()];
        let mut written = vec![false; blocks.len()];
        for (point, at_point) in indices {
            let mut kenv = Env::default();
            let mut placed = Vec::new();
            for (k, ((sizes, full), idx)) in blocks.iter().zip(&at_point).enumerate() {
                let spans: Vec<Span> = sizes
                    .iter()
                    .zip(idx)
                    .map(|(s, i)| Span {
                        start: i32_lit(i * s.unwrap_or(1)),
                        size: s.unwrap_or(1),
                        stride: 1,
                        dropped: s.is_none(),
                    })
                    .collect();
                let dt = elem(&arrays[k].1, at)?;
                let block = self.load(&dt, &arrays[k].0, full, &spans);
                kenv.insert(kinfo.invars[k], block.clone());
                placed.push((dt, spans, block));
            }
            for &v in &kinfo.invars[arrays.len()..] {
                let ty = self.a.var(v).ty.clone();
                let z = self.uninitialized(&ty, at)?;
                kenv.insert(v, z);
            }
            self.grid.push((point, grid.clone()));
            self.body(kernel, &mut kenv, false)?;
            self.grid.pop();
            for (k, (dt, spans, loaded)) in placed.iter().enumerate() {
                let block = kenv[&kinfo.invars[k]].clone();
                // A block the kernel did not store to is as it was read.
                written[k] |= block != *loaded;
                if tiled[k] {
                    finals[k].insert(at_point[k].clone(), block);
                } else if block != *loaded {
                    let new = self.store(dt, &arrays[k].0.clone(), &blocks[k].1, spans, &block);
                    arrays[k].0 = new;
                }
            }
        }
        for (k, (sizes, full)) in blocks.iter().enumerate() {
            if tiled[k] && written[k] {
                let dt = elem(&arrays[k].1, at)?;
                let sizes: Vec<(i64, bool)> = sizes
                    .iter()
                    .map(|s| (s.unwrap_or(1), s.is_none()))
                    .collect();
                arrays[k].0 = self.join_blocks(&dt, &sizes, full, &finals[k], &mut Vec::new());
            }
        }
        for (k, (o, (v, _))) in outs.iter().zip(&arrays[nin..]).enumerate() {
            let Some(o) = o else { continue };
            let (full, padded) = (&unpadded[nin + k], &blocks[nin + k].1);
            let value = if full == padded {
                v.clone()
            } else {
                let dt = elem(&arrays[nin + k].1, at)?;
                self.line(
                    &format!("{dt}[{}]", join(full)),
                    &format!(
                        "slice[limit_indices={} start_indices={} strides=None] {v}",
                        tuple(full),
                        tuple(&vec![0; full.len()])
                    ),
                )
            };
            env.insert(*o, value);
        }
        Ok(())
    }

    /// The array of `full` elements tiled by `blocks` (by block index; each
    /// of `sizes`, a squeezed dimension's block printed without it) at the
    /// indices starting with `prefix`: those of the next dimension joined
    /// by `concatenate`, recursively.
    fn join_blocks(
        &mut self,
        dt: &DType,
        sizes: &[(i64, bool)],
        full: &[i64],
        blocks: &HashMap<Vec<i64>, String>,
        prefix: &mut Vec<i64>,
    ) -> String {
        let d = prefix.len();
        if d == full.len() {
            let block = blocks[&*prefix].clone();
            if !sizes.iter().any(|&(_, squeezed)| squeezed) {
                return block;
            }
            let shape: Vec<i64> = sizes.iter().map(|&(s, _)| s).collect();
            return self.line(
                &format!("{dt}[{}]", join(&shape)),
                &format!(
                    "reshape[dimensions=None new_sizes={} sharding=None] {block}",
                    tuple(&shape)
                ),
            );
        }
        let count = full[d] / sizes[d].0;
        let mut parts = Vec::with_capacity(count as usize);
        for i in 0..count {
            prefix.push(i);
            parts.push(self.join_blocks(dt, sizes, full, blocks, prefix));
            prefix.pop();
        }
        if parts.len() == 1 {
            return parts.pop().unwrap_or_default();
        }
        // Dimensions before `d` are one block's, the others whole.
        let shape: Vec<i64> = (0..full.len())
            .map(|k| if k < d { sizes[k].0 } else { full[k] })
            .collect();
        self.line(
            &format!("{dt}[{}]", join(&shape)),
            &format!("concatenate[dimension={d}] {}", parts.join(" ")),
        )
    }

    /// Zeros of type `t` (a reference's: of the array it holds).
    pub(crate) fn zeros(&mut self, t: &AType, at: TextRange) -> LowerResult<String> {
        let dt = elem(t, at)?;
        let zero = match dt {
            DType::Bool => "False".to_string(),
            ref d if d.is_int() => "0".to_string(),
            DType::Float(_) => "0.0".to_string(),
            ref d => return err(at, format!("a kernel buffer of {d} is not built")),
        };
        self.filled(t, &dt, &zero, at)
    }

    /// A kernel's result or scratch buffer before the kernel writes it, as
    /// JAX's interpreter starts it (`primitives.uninitialized_value`): NaN,
    /// an integer type's least value, `False`; what a masked store leaves
    /// unwritten stays so.
    fn uninitialized(&mut self, t: &AType, at: TextRange) -> LowerResult<String> {
        let dt = elem(t, at)?;
        let value = uninitialized_literal(&dt, at)?;
        self.filled(t, &dt, &value, at)
    }

    /// An array of `t`'s shape filled with the literal `value` of `dt`.
    fn filled(&mut self, t: &AType, dt: &DType, value: &str, at: TextRange) -> LowerResult<String> {
        let shape = static_shape(t, at)?;
        Ok(self.line(
            &format!("{dt}[{}]", join(&shape)),
            &format!(
                "broadcast_in_dim[broadcast_dimensions=() shape={} sharding=None] {value}:{dt}[]",
                tuple(&shape)
            ),
        ))
    }
}

/// `full` rounded up to whole blocks of `sizes` in each dimension (a
/// squeezed dimension's blocks are 1).
fn padded_to_blocks(sizes: &[Option<i64>], full: &[i64]) -> Vec<i64> {
    sizes
        .iter()
        .zip(full)
        .map(|(s, &n)| {
            let s = s.unwrap_or(1).max(1);
            (n + s - 1) / s * s
        })
        .collect()
}

/// JAX's uninitialised value of `dt` (`primitives.uninitialized_value`):
/// NaN, an integer type's least value, `False`.
fn uninitialized_literal(dt: &DType, at: TextRange) -> LowerResult<String> {
    Ok(match dt {
        DType::Bool => "False".to_string(),
        DType::Int(bits @ 8..=64) => format!("-{}", 1u64 << (bits - 1)),
        DType::UInt(_) => "0".to_string(),
        DType::Float(_) => "nan".to_string(),
        d => return err(at, format!("a kernel buffer of {d} is not built")),
    })
}

/// The element dtype of an array or reference type (JAX 0.4's
/// `MemRef<None>{float32[4,8]}` names it as numpy does).
pub(crate) fn elem(t: &AType, at: TextRange) -> LowerResult<DType> {
    match &t.dtype {
        Some(d) => Ok(match d.as_reference() {
            None => d.clone(),
            Some((_, DType::Other(s))) => DType::from_numpy(&s).unwrap_or(DType::Other(s)),
            Some((_, e)) => e,
        }),
        None => crate::internal(at, "a type without a dtype"),
    }
}

fn refused(range: TextRange, message: &str) -> LowerError {
    LowerError {
        range,
        message: message.into(),
        help: None,
        kind: LowerErrorKind::Refused,
    }
}
