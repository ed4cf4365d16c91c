//! The sharp bits: what JAX does silently at run time that a jaxpr already
//! shows ("JAX – The Sharp Bits"). Three rules, each a warning:
//!
//! - `keys` (J0013 `key-reuse`): a PRNG key consumed twice, by JAX's own
//!   key-reuse rule (`jax.experimental.key_reuse`), and beyond it raw
//!   `uint32` key data.
//! - `bounds` (J0014 `out-of-bounds-index`): a constant index out of range
//!   of a `gather`, `scatter`, `dynamic_slice` or `dynamic_update_slice`,
//!   with what JAX does instead (clamp, fill, drop).
//! - `dtypes` (J0015 `dtype-surprise`): a 64-bit dtype requested in a
//!   program whose own types show it was traced with x64 off.
//!
//! They read the checked program: the syntax of each equation and the
//! types the checker gave its variables. [`SharpBits`] is fed as the check
//! goes (`run.rs`): the `let` jaxprs and the main jaxpr's binders, then each
//! top-level equation before the check forgets it; its state is what later
//! equations need (the keys consumed so far, the constants), not the file.

mod bounds;
mod dtypes;
mod keys;

use crate::{Analysis, RefKind, VarRef};
use jaxpr_syntax::ast;
use jaxpr_syntax::diagnostics::{DiagKind, Diagnostic};
use jaxpr_types::{AType, VarId};
use rustc_hash::FxHashMap as HashMap;
use smol_str::SmolStr;

pub use keys::KeySignature;

/// The diagnostic kinds of the sharp-bits rules.
pub const KINDS: [DiagKind; 3] = [
    DiagKind::KeyReuse,
    DiagKind::OutOfBoundsIndex,
    DiagKind::DtypeSurprise,
];

/// Whether a text has anything the sharp-bits rules look at (a key type,
/// an indexing primitive, or a 64-bit dtype parameter beside a weakly typed
/// conversion): a text without any has no sharp-bits finding, and an
/// incremental check need not look.
pub fn may_find(text: &str) -> bool {
    const INDEXING: [&str; 5] = ["key<", "random_wrap", "gather", "scatter", "dynamic_"];
    let has = |w: &str| memchr::memmem::find(text.as_bytes(), w.as_bytes()).is_some();
    // A dtype parameter (`type=` ends every one of their names) whose
    // value names a 64-bit dtype within its first characters.
    let wide_dtype = || {
        memchr::memmem::find_iter(text.as_bytes(), b"type=").any(|at| {
            let value = &text.as_bytes()[at + 5..(at + 40).min(text.len())];
            let value = &value[..value
                .iter()
                .position(|&b| b == b' ' || b == b'\n')
                .unwrap_or(value.len())];
            memchr::memmem::find(value, b"64").is_some()
                || memchr::memmem::find(value, b"128").is_some()
        })
    };
    // An infinite scalar in a narrow float dtype (an overflowed Python scalar).
    let narrow_inf = || has("inf:f16[]") || has("inf:f8");
    INDEXING.iter().any(|w| has(w)) || (has("weak_type=True") && wide_dtype()) || narrow_inf()
}

/// What a sharp-bits finding means at run time, for the hover on it.
pub fn explain(kind: DiagKind) -> &'static str {
    match kind {
        DiagKind::KeyReuse => {
            "A JAX PRNG key is a value, not a generator: every random function given the same key returns the same bits. JAX's key-reuse checker (`jax_debug_key_reuse`) consumes a key at each `random_bits`, `random_split`, sampler or unknown use, and a second use of a consumed key is this. Each use needs its own key from `jax.random.split`."
        }
        DiagKind::OutOfBoundsIndex => {
            "JAX cannot raise an error from compiled code: an out-of-bounds index is clamped (`dynamic_slice`, `dynamic_update_slice`, `gather` in clip or promise_in_bounds mode), filled (`gather` in fill_or_drop mode: NaN for floats) or dropped (`scatter`), silently."
        }
        DiagKind::DtypeSurprise => {
            "With x64 off (JAX's default, `jax_enable_x64=False`) JAX canonicalizes 64-bit dtypes to 32 bits: a float64 request computes in float32, with no error. And a Python scalar takes the dtype of the array it meets (weak typing): in float16 one beyond ±65504 becomes infinite."
        }
        _ => "",
    }
}

/// Which of the sharp-bits rules follow what.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharpConfig {
    /// Follow raw `uint32` key data (`jax.random.PRNGKey`, wrapped by
    /// `random_wrap` at each use) as keys, which JAX's checker does not.
    pub raw_keys: bool,
}

impl Default for SharpConfig {
    fn default() -> Self {
        SharpConfig { raw_keys: true }
    }
}

/// The variables of a piece of the check by where their names start: the
/// rules read the syntax, and the checker resolved every name of it.
pub(crate) struct Ids(HashMap<u32, VarId>);

impl Ids {
    pub(crate) fn of(refs: &[VarRef]) -> Ids {
        Ids(refs
            .iter()
            .filter(|r| r.kind != RefKind::DimUse)
            .map(|r| (r.range.start, r.var))
            .collect())
    }
    fn name(&self, n: &ast::Name) -> Option<VarId> {
        self.0.get(&n.range.start).copied()
    }
    fn atom(&self, a: &ast::Atom) -> Option<VarId> {
        match a {
            ast::Atom::Var(n) => self.name(n),
            _ => None,
        }
    }
}

/// What the rules read of a piece of the check.
pub(crate) struct Program<'a> {
    pub(crate) a: &'a Analysis,
    pub(crate) ids: &'a Ids,
}

impl Program<'_> {
    fn ty(&self, v: VarId) -> &AType {
        &self.a.var(v).ty
    }
    fn atom_ty(&self, atom: &ast::Atom) -> Option<&AType> {
        self.ids.atom(atom).map(|v| self.ty(v))
    }
}

/// The sharp-bits rules over one check, fed piece by piece.
pub struct SharpBits {
    keys: keys::KeyRule,
    bounds: bounds::BoundsRule,
    dtypes: dtypes::DtypeRule,
    diagnostics: Vec<Diagnostic>,
}

impl SharpBits {
    pub fn new(config: SharpConfig) -> SharpBits {
        SharpBits {
            keys: keys::KeyRule::new(config),
            bounds: bounds::BoundsRule::default(),
            dtypes: dtypes::DtypeRule::default(),
            diagnostics: Vec::new(),
        }
    }

    /// The `let` jaxprs are checked and the main jaxpr's binders bound;
    /// `refs`: every occurrence recorded so far.
    pub fn begin(
        &mut self,
        a: &Analysis,
        lets: &[ast::LetJaxpr],
        main: &ast::Jaxpr,
        refs: &[VarRef],
    ) {
        self.begin_with(
            &Program {
                a,
                ids: &Ids::of(refs),
            },
            lets,
            main,
        );
    }

    fn begin_with(&mut self, p: &Program, lets: &[ast::LetJaxpr], main: &ast::Jaxpr) {
        self.keys.begin(p, lets, main, &mut self.diagnostics);
        for l in lets {
            self.bounds.jaxpr(p, &l.jaxpr, &mut self.diagnostics);
            self.dtypes.jaxpr(p, &l.jaxpr);
        }
    }

    /// Top-level equation `e` of the main jaxpr is checked; `refs`: the
    /// occurrences in it.
    pub fn eqn(&mut self, a: &Analysis, e: &ast::Eqn, refs: &[VarRef]) {
        if worth_a_look(e) {
            self.eqn_with(
                &Program {
                    a,
                    ids: &Ids::of(refs),
                },
                e,
            );
        }
    }

    fn eqn_with(&mut self, p: &Program, e: &ast::Eqn) {
        self.keys.eqn(p, e, &mut self.diagnostics);
        self.bounds.eqn(p, e, &mut self.diagnostics);
        self.dtypes.eqn(p, e);
    }

    /// The rules over a whole file's analysis (kept whole), with `config`.
    pub fn check_analysis(
        a: &Analysis,
        file: &ast::SourceFile,
        config: SharpConfig,
    ) -> Vec<Diagnostic> {
        let mut rules = SharpBits::new(config);
        let ids = Ids::of(&a.refs);
        let p = Program { a, ids: &ids };
        if let Some(main) = &file.main {
            rules.begin_with(&p, &file.lets, main);
            for e in main.eqns.iter().filter(|e| worth_a_look(e)) {
                rules.eqn_with(&p, e);
            }
        }
        rules.finish()
    }

    pub fn finish(mut self) -> Vec<Diagnostic> {
        self.diagnostics.extend(self.dtypes.finish());
        self.diagnostics
    }
}

/// Whether an equation can matter to a rule: most equations of a large
/// file are elementwise arithmetic on floats, and skipping them keeps the
/// rules' cost out of the check's.
fn worth_a_look(e: &ast::Eqn) -> bool {
    let interesting = |b: &ast::Binder| {
        b.ty.as_ref().is_none_or(|t| {
            let d = &t.dtype.text;
            d.starts_with("key<")
                || d.starts_with('i')
                || d.starts_with('u')
                || dtypes::is_narrow_float(d)
        })
    };
    !e.params.is_empty()
        || e.outs.iter().any(interesting)
        || e.primitive.text == "dynamic_update_slice"
}

/// The jaxprs a parameter value holds: inline, or `let` names.
pub(crate) fn jaxprs_of<'j>(
    value: &'j ast::Expr,
    lets: &dyn Fn(&str) -> Option<&'j ast::Jaxpr>,
) -> Vec<Option<&'j ast::Jaxpr>> {
    match &value.kind {
        ast::ExprKind::Jaxpr(j) => vec![Some(j)],
        ast::ExprKind::Path(p) => vec![lets(p)],
        ast::ExprKind::Tuple(v) | ast::ExprKind::List(v) => {
            v.iter().flat_map(|e| jaxprs_of(e, lets)).collect()
        }
        _ => vec![None],
    }
}

/// A parameter's value as a dtype name (`float64`, `dtype('float64')`),
/// with the value's range.
pub(crate) fn dtype_param(e: &ast::Eqn, name: &str) -> Option<(SmolStr, jaxpr_syntax::TextRange)> {
    let p = e.param(name)?;
    let text: &str = match &p.value.kind {
        ast::ExprKind::Path(s) | ast::ExprKind::Str(s) => s,
        ast::ExprKind::Call(c) => match &c.args.first()?.value.kind {
            ast::ExprKind::Path(s) | ast::ExprKind::Str(s) => s,
            _ => return None,
        },
        _ => return None,
    };
    let text = text.trim_matches(['\'', '"']);
    let text = text.rsplit('.').next().unwrap_or(text);
    Some((SmolStr::new(text), p.value.range))
}
