//! Type rules per primitive. Each rule reads the resolved operands and the
//! parameters of one equation and returns the result types it infers; the
//! driver compares them with the printed types. Rules report their own
//! errors (anchored on the primitive name, with the operands as related
//! locations) and return `None` when nothing can be inferred, in which case
//! the printed types are trusted.
//!
//! Primitives that behave alike are described by data (`elementwise`,
//! `reductions`), so adding one is a single table entry.

mod collective;
mod compute;
mod control;
mod elementwise;
mod linalg;
mod pallas;
mod quantum;
mod shape;
mod shard_map;
mod state;

pub(crate) use shard_map::Manual;
pub use shard_map::axis_names;

pub use compute::{key_data_size, prng_impl};
pub use quantum::{
    GateArity, GateKind, GateLengths, GateOperands, GateParams, Wire, abstract_value,
    is_abstract_value,
};

use crate::checker::Checker;
use crate::{DimEq, EqnId, Operand};
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast::{self, Expr};
use jaxpr_syntax::diagnostics::{DiagKind, Diagnostic};
use jaxpr_types::{AType, DType, Dim, DimNames, Shape, VarId};

/// A rule table's entries by primitive name (the first entry of a name
/// wins, as in a linear search), built on first use: every equation looks
/// its primitive up in several tables.
pub(super) struct Index(std::sync::OnceLock<rustc_hash::FxHashMap<&'static str, usize>>);

impl Index {
    pub(super) const fn new() -> Self {
        Index(std::sync::OnceLock::new())
    }
    pub(super) fn find<T>(
        &self,
        table: &'static [T],
        name_of: fn(&T) -> &'static str,
        name: &str,
    ) -> Option<&'static T> {
        let map = self.0.get_or_init(|| {
            let mut m = rustc_hash::FxHashMap::default();
            for (i, e) in table.iter().enumerate() {
                m.entry(name_of(e)).or_insert(i);
            }
            m
        });
        map.get(name).map(|&i| &table[i])
    }
}

/// Inferred result types; `None` when the rule reported an error or cannot infer.
pub type Infer = Option<Vec<AType>>;

/// Related locations of a mismatch, described only when it is reported
/// (describing operands formats their types: too costly for every check).
pub enum Related<'a> {
    /// `operand i is ...` for each listed operand.
    Operands(&'a [usize]),
    /// Each listed operand's description alone.
    Args(&'a [usize]),
    Given(Vec<(TextRange, String)>),
}

pub struct EqnCx<'c> {
    pub(crate) ck: &'c mut Checker,
    pub eqn: &'c ast::Eqn,
    pub id: EqnId,
    pub args: &'c [Operand],
    pub declared: &'c [AType],
    pub out_vars: &'c [Option<VarId>],
    /// An error was reported for this equation.
    pub failed: bool,
}

/// One-line descriptions of primitives, for hover and completion.
pub fn describe(name: &str) -> Option<&'static str> {
    crate::registry::lookup(name).map(|p| p.doc)
}

/// Every primitive with a type rule (names and aliases).
pub fn known_primitives() -> Vec<&'static str> {
    crate::registry::all_names()
}

/// The names the rule tables answer for; the registry's rows must be
/// exactly these.
#[cfg(test)]
fn rule_names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = Vec::new();
    v.extend(elementwise::names());
    v.extend(shape::names());
    v.extend(compute::names());
    v.extend(control::names());
    v.extend(quantum::names());
    v.extend(linalg::names());
    v.extend(collective::names());
    v.extend(shard_map::names());
    v.extend(state::names());
    v.extend(pallas::names());
    v.sort_unstable();
    v.dedup();
    v
}

pub(crate) fn infer(cx: &mut EqnCx) -> Infer {
    let name = cx.eqn.primitive.text.clone();
    if crate::registry::lookup(&name).is_none() {
        return unknown(cx, name);
    }
    if let Some(r) = collective::infer(cx, &name) {
        return r;
    }
    if let Some(r) = shard_map::infer(cx, &name) {
        return r;
    }
    if let Some(r) = elementwise::infer(cx, &name) {
        return r;
    }
    if let Some(r) = control::infer(cx, &name) {
        return r;
    }
    if let Some(r) = shape::infer(cx, &name) {
        return r;
    }
    if let Some(r) = compute::infer(cx, &name) {
        return r;
    }
    if let Some(r) = quantum::infer(cx, &name) {
        return r;
    }
    if let Some(r) = linalg::infer(cx, &name) {
        return r;
    }
    if let Some(r) = state::infer(cx, &name) {
        return r;
    }
    if let Some(r) = pallas::infer(cx, &name) {
        return r;
    }
    unknown(cx, name)
}

/// For a family listed by `names`: `None` when `name` is not one of them,
/// else whether every operand resolved (one that did not was reported
/// already, and its type means nothing).
fn operands_resolved(cx: &EqnCx, names: &[&str], name: &str) -> Option<bool> {
    names
        .contains(&name)
        .then(|| cx.args.iter().all(|a| a.known))
}

fn unknown(cx: &mut EqnCx, name: ast::SmolStr) -> Infer {
    // Unknown primitive: trust the printed result types, but still check the
    // jaxprs it carries, on their own.
    // A set rather than a scan of the earlier equations: a file of many
    // distinct unknown primitives made that quadratic.
    let first = cx.ck.unknown_seen.insert(name.clone());
    cx.ck
        .unknown_uses
        .push((name.clone(), cx.eqn.primitive.range));
    if first {
        let d = unknown_primitive(&name, cx.eqn.primitive.range);
        cx.ck.a.diagnostics.push(d);
    }
    control::check_params_standalone(cx);
    None
}

/// The warning on the first equation of an unknown primitive.
pub fn unknown_primitive(name: &str, range: TextRange) -> Diagnostic {
    Diagnostic::warning(
        DiagKind::UnknownPrimitive,
        range,
        format!("unknown primitive `{name}`: its result types are taken as printed"),
    )
    .with_help("the checker has no type rule for this primitive; results are trusted, operands are still resolved")
}

impl<'c> EqnCx<'c> {
    pub(crate) fn new(
        ck: &'c mut Checker,
        eqn: &'c ast::Eqn,
        id: EqnId,
        args: &'c [Operand],
        declared: &'c [AType],
        out_vars: &'c [Option<VarId>],
    ) -> Self {
        EqnCx {
            ck,
            eqn,
            id,
            args,
            declared,
            out_vars,
            failed: false,
        }
    }

    pub fn name(&self) -> &str {
        &self.eqn.primitive.text
    }
    pub fn prim_range(&self) -> TextRange {
        self.eqn.primitive.range
    }

    // ---- types and names ----------------------------------------------

    pub fn ty(&self, t: &AType) -> String {
        self.ck.a.ty(t)
    }
    pub fn dim_str(&self, d: &Dim) -> String {
        self.ck.a.dim(d)
    }
    pub fn shape_str(&self, s: &[Dim]) -> String {
        self.ck.a.shape(s)
    }
    /// `` `x` (f32[3]) `` or `` the literal `1.0:f32[]` ``.
    pub fn arg_str(&self, i: usize) -> String {
        let a = &self.args[i];
        match a.var {
            Some(v) => format!("`{}` ({})", self.ck.a.var(v).name, self.ty(&a.ty)),
            None => format!("the literal {}", self.ty(&a.ty)),
        }
    }

    // ---- errors -------------------------------------------------------

    /// Reports an error on the primitive name.
    pub fn error(&mut self, kind: DiagKind, message: impl Into<String>) -> Diagnostic {
        Diagnostic::error(kind, self.prim_range(), message)
    }
    pub fn report(&mut self, d: Diagnostic) {
        if d.is_error() {
            self.failed = true;
        }
        self.ck.a.diagnostics.push(d);
    }
    /// Adds the listed operands as related locations (`operand i is ...`).
    pub fn with_operands(&self, mut d: Diagnostic, args: &[usize]) -> Diagnostic {
        for &i in args {
            if let Some(a) = self.args.get(i) {
                let text = self.arg_str(i);
                d = d.with_related(a.range, format!("operand {i} is {text}"));
            }
        }
        d
    }
    /// Adds related locations, described now that they are reported.
    fn with_related(&self, mut d: Diagnostic, related: Related) -> Diagnostic {
        match related {
            Related::Operands(args) => return self.with_operands(d, args),
            Related::Args(args) => {
                for &i in args {
                    if let Some(a) = self.args.get(i) {
                        d = d.with_related(a.range, self.arg_str(i));
                    }
                }
            }
            Related::Given(given) => {
                for (r, m) in given {
                    d = d.with_related(r, m);
                }
            }
        }
        d
    }
    /// Reports an error with related locations on the listed operands.
    pub fn report_on_args(
        &mut self,
        kind: DiagKind,
        message: impl Into<String>,
        args: &[usize],
        help: Option<String>,
    ) {
        let d = self.error(kind, message);
        let mut d = self.with_operands(d, args);
        if let Some(h) = help {
            d = d.with_help(h);
        }
        self.report(d);
    }
    /// An invalid parameter, with the parameter as related location.
    pub fn param_error(&mut self, param: &str, message: impl Into<String>) {
        let mut d = self.error(DiagKind::InvalidParameter, message);
        if let Some(p) = self.eqn.param(param) {
            d = d.with_related(p.range, format!("`{param}` is given here"));
        }
        self.report(d);
    }

    // ---- arity --------------------------------------------------------

    pub fn expect_args(&mut self, n: usize) -> bool {
        if self.args.len() == n {
            return true;
        }
        let msg = format!(
            "`{}` takes {n} operand{}, but {} {} given",
            self.name(),
            if n == 1 { "" } else { "s" },
            self.args.len(),
            if self.args.len() == 1 { "is" } else { "are" }
        );
        let d = self.error(DiagKind::ArityMismatch, msg);
        self.report(d);
        false
    }
    pub fn expect_args_at_least(&mut self, n: usize) -> bool {
        if self.args.len() >= n {
            return true;
        }
        let msg = format!(
            "`{}` takes at least {n} operands, but {} are given",
            self.name(),
            self.args.len()
        );
        let d = self.error(DiagKind::ArityMismatch, msg);
        self.report(d);
        false
    }

    // ---- parameters ---------------------------------------------------

    pub fn param(&self, name: &str) -> Option<&'c Expr> {
        self.eqn.param(name).map(|p| &p.value)
    }
    pub fn has_param(&self, name: &str) -> bool {
        self.eqn.param(name).is_some()
    }
    /// An integer parameter; reports `invalid-parameter` when present but not an integer.
    pub fn int_param(&mut self, name: &str) -> Option<i64> {
        let e = self.param(name)?;
        match e.as_int() {
            Some(i) => Some(i),
            None => {
                if !e.is_none() {
                    self.param_error(name, format!("`{name}` must be an integer"));
                }
                None
            }
        }
    }
    /// A parameter that is one dimension: an integer or, in shape-polymorphic
    /// programs, a symbolic expression (`scan[length=t]`, `top_k[k=b]`).
    pub fn dim_param(&mut self, name: &str) -> Option<Dim> {
        let e = self.param(name)?;
        if e.is_none() {
            return None;
        }
        match self.ck.resolve_dim(e, None) {
            Dim::Unknown => None,
            d => Some(d),
        }
    }
    pub fn bool_param(&self, name: &str) -> Option<bool> {
        self.param(name)?.as_bool()
    }
    /// A tuple of integers (`axes=(0, 1)`); reports when malformed.
    pub fn ints_param(&mut self, name: &str) -> Option<Vec<i64>> {
        let e = self.param(name)?;
        if e.is_none() {
            return None;
        }
        match e.as_int_seq() {
            Some(v) => Some(v),
            None => {
                self.param_error(name, format!("`{name}` must be a tuple of integers"));
                None
            }
        }
    }
    /// Axis indices, each checked against `rank`.
    pub fn axes_param(&mut self, name: &str, rank: usize) -> Option<Vec<usize>> {
        let v = self.ints_param(name)?;
        let mut out = Vec::with_capacity(v.len());
        for a in v {
            if a < 0 || a as usize >= rank {
                self.param_error(
                    name,
                    format!("axis {a} in `{name}` is out of range for rank {rank}"),
                );
                return None;
            }
            out.push(a as usize);
        }
        Some(out)
    }
    pub fn dtype_param(&mut self, name: &str) -> Option<DType> {
        let e = self.param(name)?;
        let text = match &e.kind {
            ast::ExprKind::Path(p) => p.to_string(),
            ast::ExprKind::Str(s) => s.to_string(),
            ast::ExprKind::Call(c) if c.args.len() == 1 => match &c.args[0].value.kind {
                ast::ExprKind::Str(s) => s.to_string(),
                _ => String::new(),
            },
            _ => String::new(),
        };
        if text == "None" {
            return None;
        }
        // `<class 'jax.numpy.float32'>`: a dtype given as its numpy scalar type.
        let text = match text
            .strip_prefix("<class '")
            .and_then(|t| t.strip_suffix("'>"))
        {
            Some(class) => class.rsplit('.').next().unwrap_or(class).to_string(),
            None => text,
        };
        match DType::from_numpy(&text).or_else(|| DType::from_short(&text)) {
            Some(d) => Some(d),
            None => {
                self.param_error(name, format!("`{name}` must be a dtype, found `{text}`"));
                None
            }
        }
    }
    /// A tuple of dimensions (`shape=(3, 4)`, `slice_sizes=(a, 1)`,
    /// `new_sizes=(4*b,)`); `None` entries become `Dim::Unknown`.
    pub fn dims_param(&mut self, name: &str) -> Option<Shape> {
        let e = self.param(name)?;
        if e.is_none() {
            return None;
        }
        let Some(items) = e.as_seq() else {
            self.param_error(name, format!("`{name}` must be a tuple of dimensions"));
            return None;
        };
        Some(items.iter().map(|x| self.ck.resolve_dim(x, None)).collect())
    }

    // ---- comparisons --------------------------------------------------

    pub fn dims_eq(&mut self, a: &Dim, b: &Dim) -> DimEq {
        let at = self.prim_range();
        self.ck.dims_eq(a, b, at)
    }
    pub fn same_dim(&mut self, a: &Dim, b: &Dim) -> bool {
        self.dims_eq(a, b) == DimEq::Equal
    }
    /// Checks that two shapes are equal; on failure reports a shape mismatch
    /// naming the dimension and explaining the dimension variables involved.
    pub fn require_same_shape(
        &mut self,
        what: impl std::fmt::Display,
        a: &[Dim],
        b: &[Dim],
        related: Related,
    ) -> bool {
        if a.len() != b.len() {
            let msg = format!(
                "{what}: {} and {} have different ranks ({} and {})",
                self.shape_str(a),
                self.shape_str(b),
                a.len(),
                b.len()
            );
            let d = self.error(DiagKind::ShapeMismatch, msg);
            let d = self.with_related(d, related);
            self.report(d);
            return false;
        }
        for (k, (x, y)) in a.iter().zip(b).enumerate() {
            if let DimEq::NotEqual(why) = self.dims_eq(x, y) {
                let msg = format!(
                    "{what}: {} and {} differ in dimension {k} (`{}` vs `{}`)",
                    self.shape_str(a),
                    self.shape_str(b),
                    self.dim_str(x),
                    self.dim_str(y)
                );
                let d = self.error(DiagKind::ShapeMismatch, msg);
                let d = self.with_related(d, related);
                let d = self.ck.explain_dims(d, &[x, y], why);
                self.report(d);
                return false;
            }
        }
        true
    }
    /// Checks that operands `i` and `j` have the same dtype (untyped literals adapt).
    pub fn require_same_dtype(&mut self, i: usize, j: usize) -> bool {
        let (a, b) = (&self.args[i].ty.dtype, &self.args[j].ty.dtype);
        match (a, b) {
            (Some(x), Some(y)) if x != y => {
                let msg = format!(
                    "`{}` operands must have the same dtype, but operand {i} is {x} and operand {j} is {y}",
                    self.name()
                );
                let help = format!(
                    "convert one of them first, e.g. `convert_element_type[new_dtype={} weak_type=False]`",
                    numpy_name(x)
                );
                self.report_on_args(DiagKind::DtypeMismatch, msg, &[i, j], Some(help));
                false
            }
            _ => true,
        }
    }
    /// Checks a dimension against an expected one; reports with context on failure.
    pub fn require_dim(
        &mut self,
        what: impl std::fmt::Display,
        got: &Dim,
        expected: &Dim,
        args: &[usize],
    ) -> bool {
        match self.dims_eq(got, expected) {
            DimEq::Equal => true,
            DimEq::NotEqual(why) => {
                let msg = format!(
                    "{what}: `{}` is not `{}`",
                    self.dim_str(got),
                    self.dim_str(expected)
                );
                let d = self.error(DiagKind::ShapeMismatch, msg);
                let d = self.with_operands(d, args);
                let d = self.ck.explain_dims(d, &[got, expected], why);
                self.report(d);
                false
            }
        }
    }
    /// Arithmetic on dimensions (for `concatenate`, `pad`, `slice`...):
    /// constants and symbolic dimensions only.
    pub fn dim_add(&self, a: &Dim, b: &Dim) -> Dim {
        if let (Dim::Const(x), Dim::Const(y)) = (a, b)
            && let Some(c) = x.checked_add(*y)
        {
            return Dim::Const(c);
        }
        match (a.as_poly(), b.as_poly()) {
            (Some(p), Some(q)) => p.add(&q).map(Dim::from_poly).unwrap_or(Dim::Unknown),
            _ => Dim::Unknown,
        }
    }
    pub fn dim_mul(&self, a: &Dim, b: &Dim) -> Dim {
        if let (Dim::Const(x), Dim::Const(y)) = (a, b)
            && let Some(c) = x.checked_mul(*y)
        {
            return Dim::Const(c);
        }
        match (a.as_poly(), b.as_poly()) {
            (Some(p), Some(q)) => p.mul(&q).map(Dim::from_poly).unwrap_or(Dim::Unknown),
            _ => Dim::Unknown,
        }
    }
    pub fn dim_sub(&self, a: &Dim, b: &Dim) -> Dim {
        if let (Dim::Const(x), Dim::Const(y)) = (a, b)
            && let Some(c) = x.checked_sub(*y)
        {
            return Dim::Const(c);
        }
        match (a.as_poly(), b.as_poly()) {
            (Some(p), Some(q)) => p.sub(&q).map(Dim::from_poly).unwrap_or(Dim::Unknown),
            _ => Dim::Unknown,
        }
    }
    /// `floor(a / b)` for constants and symbolic dimensions.
    pub fn dim_floordiv(&self, a: &Dim, b: &Dim) -> Dim {
        match (a.as_poly(), b.as_poly()) {
            (Some(p), Some(q)) => p.floordiv(&q).map(Dim::from_poly).unwrap_or(Dim::Unknown),
            _ => Dim::Unknown,
        }
    }
    /// The product of a shape's dimensions (element count), when expressible.
    pub fn num_elements(&self, s: &[Dim]) -> Dim {
        s.iter().fold(Dim::Const(1), |acc, d| self.dim_mul(&acc, d))
    }
}

pub fn numpy_name(d: &DType) -> String {
    use jaxpr_types::FloatKind;
    match d {
        DType::Bool => "bool".into(),
        DType::Int(b) => format!("int{b}"),
        DType::UInt(b) => format!("uint{b}"),
        DType::Float(FloatKind::F16) => "float16".into(),
        DType::Float(FloatKind::BF16) => "bfloat16".into(),
        DType::Float(FloatKind::F32) => "float32".into(),
        DType::Float(FloatKind::F64) => "float64".into(),
        DType::Complex(b) => format!("complex{b}"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod registry_tests {
    use crate::registry::{self, PRIMITIVES};

    #[test]
    fn every_rule_has_a_registry_row_and_every_row_a_rule() {
        let rules = super::rule_names();
        let rows = registry::all_names();
        let missing_rows: Vec<_> = rules.iter().filter(|n| !rows.contains(n)).collect();
        let missing_rules: Vec<_> = rows.iter().filter(|n| !rules.contains(n)).collect();
        assert!(
            missing_rows.is_empty() && missing_rules.is_empty(),
            "rules without a registry row: {missing_rows:?}; rows without a rule: {missing_rules:?}"
        );
    }

    #[test]
    fn registry_rows_are_well_formed() {
        let mut seen = std::collections::HashSet::new();
        for p in PRIMITIVES {
            for n in std::iter::once(&p.name).chain(p.aliases) {
                assert!(seen.insert(*n), "`{n}` is named by two rows");
            }
            assert!(!p.doc.is_empty(), "`{}` has no doc line", p.name);
            for j in p.jaxpr_params {
                assert!(
                    p.params.contains(j),
                    "`{}`: jaxpr parameter `{j}` is not among its parameters",
                    p.name
                );
            }
            assert_eq!(registry::lookup(p.name).map(|r| r.name), Some(p.name));
        }
    }

    /// `prim.rs` is generated from the registry's rows; `UPDATE_DOCS=1`
    /// rewrites it.
    #[test]
    fn registry_prim_enum_is_generated_from_the_registry() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/prim.rs");
        let source = registry::prim_enum_source();
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(path, &source).unwrap();
        }
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            on_disk == source,
            "src/prim.rs differs from the registry: run `UPDATE_DOCS=1 cargo test -p jaxpr-check registry`"
        );
        for (p, row) in registry::Prim::ALL.iter().zip(registry::PRIMITIVES) {
            assert_eq!(p.name(), row.name);
            assert_eq!(registry::Prim::from_name(row.name), Some(*p));
        }
        assert_eq!(registry::Prim::ALL.len(), registry::PRIMITIVES.len());
    }

    /// `docs/primitives.md` is the registry's table; `UPDATE_DOCS=1` rewrites it.
    #[test]
    fn docs_support_table_is_generated_from_the_registry() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/primitives.md");
        let table = registry::support_table();
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(path, &table).unwrap();
        }
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            on_disk == table,
            "docs/primitives.md differs from the registry: run `UPDATE_DOCS=1 cargo test -p jaxpr-check registry`"
        );
    }
}
