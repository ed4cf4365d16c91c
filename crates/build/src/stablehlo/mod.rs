//! Lowering a checked jaxpr to StableHLO with MLIR (melior).
//!
//! StableHLO is not an upstream MLIR dialect, so its operations are created
//! with melior's generic operation builder in a context that allows
//! unregistered dialects; its attributes (`#stablehlo.dot<...>`,
//! `#stablehlo<comparison_direction LT>`) are parsed as opaque dialect
//! attributes and printed back verbatim. The printed module is in MLIR's
//! generic form for these operations, which StableHLO's parser accepts.
//! MLIR verifies the module's structure (SSA dominance, function and region
//! types) before it is written.
//!
//! Shapes: a static dimension stays static; a dimension variable (Catalyst)
//! or a symbolic dimension (jax.export) is `?` in the tensor type, and where
//! an operation needs its value, the value is computed at run time from the
//! jaxpr variable that holds it (dimension variables) or from the shapes of
//! the main function's inputs (`get_dimension_size`, symbolic dimensions).
//!
//! Nested jaxprs of call-like primitives are inlined; control flow becomes
//! `stablehlo.while` and `stablehlo.case` with the nested jaxpr lowered into
//! the regions.

mod assembly;
mod calls;
mod control;
mod create;
mod linalg;
mod ops;
mod print;
mod special;
mod symbolic;
mod windows;
mod random;

use super::{Failure, LowerError, R, Syntax, err, solvable, symbol_value};
use jaxpr_check::{self as check, Analysis, EqnId, JaxprId, VarRef};
use jaxpr_syntax::diagnostics::{DiagKind, Diagnostic};
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast::{self, Atom};
use jaxpr_types::poly::{Factor, Symbol};
use jaxpr_types::{AType, DType, Dim, FloatKind, Poly, VarId};
use melior::Context;
use melior::ir::attribute::{StringAttribute, TypeAttribute};
use melior::ir::operation::{OperationBuilder, OperationLike};
use melior::ir::r#type::FunctionType;
use melior::ir::r#type::TypeLike;
use melior::ir::{
    Attribute, AttributeLike, Block, BlockLike, BlockRef, Identifier, Location, Module, Region, RegionLike, Type,
    Value, ValueLike,
};
use rustc_hash::FxHashMap as HashMap;
use smallvec::SmallVec;
use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt::Write as _;
use std::io::Write;
use std::sync::{Arc, Mutex};

/// A value of the module being built. The module owns every operation until
/// the build ends, so values and blocks are used without melior's borrow
/// lifetimes (which cannot express "defined in an enclosing region").
pub(crate) type V<'c> = Value<'c, 'c>;
pub(crate) type B<'c> = BlockRef<'c, 'c>;

/// A lowered operand: its value and its jaxpr type, borrowed from the
/// analysis (which outlives the module) unless the lowering made it.
pub(crate) type Operand<'c, 'f> = super::Operand<V<'c>, Cow<'f, AType>>;

/// The values of the symbolic dimensions where a jaxpr is lowered (shared
/// by every jaxpr of the file, computed once in the entry block).
#[derive(Clone, Default)]
pub(crate) struct Env<'c> {
    syms: HashMap<Symbol, V<'c>>,
}

/// Phase times of one build, for benchmarks (`JAXPR_BUILD_TIMINGS=1`
/// prints them from the CLI).
#[derive(Clone, Copy, Debug, Default)]
pub struct Timings {
    pub context: std::time::Duration,
    pub lower: std::time::Duration,
    /// Verifying the module, on its own thread alongside printing when
    /// the printer prints it.
    pub verify: std::time::Duration,
    /// Printing the module and writing it out.
    pub print: std::time::Duration,
    /// Freeing the module and the MLIR context.
    pub teardown: std::time::Duration,
}

/// The MLIR context and module of a build, freed when dropped. Freeing a
/// large module takes tens of milliseconds (its operations are freed one
/// by one), so a process that exits next may `std::mem::forget` it.
pub struct Lowered {
    module: mlir_sys::MlirModule,
    /// Dropped after the module (fields drop after `drop`).
    _cx: Context,
}

impl Drop for Lowered {
    fn drop(&mut self) {
        // SAFETY: the module is this build's, made in `_cx`, and freed once.
        unsafe { mlir_sys::mlirModuleDestroy(self.module) }
    }
}

/// Lowers a checked file to a StableHLO module, has MLIR verify it, and
/// writes it (text, or bytecode) to the writer `open` gives; returns that
/// writer and the module. The text is printed and written while MLIR
/// verifies the module on another thread: the caller must publish the
/// output only when this returns `Ok` (a module that does not verify is a
/// diagnostic).
pub fn lower_into<W: Write>(
    file: &ast::SourceFile,
    a: &Analysis,
    bytecode: bool,
    t: &mut Timings,
    open: impl FnOnce() -> std::io::Result<W>,
) -> Result<(W, Lowered), Failure> {
    let source = Source::Checked { file, a };
    lower_source_into(source, bytecode, t, open).map(|built| {
        built.expect("a checked file is lowered whole")
    })
}

/// [`lower_into`] from the text itself: each top-level equation of the main
/// jaxpr is lowered right after its check ([`check::check_source`], [`check::Keep::Shown`]),
/// while a large text is parsed on a second thread, and then forgotten. A text with errors is not built: its errors
/// are the diagnostics, as [`super::build`] gives them. `Ok(None)` when the
/// file is to be built whole instead (a `let` jaxpr after the main one).
/// [`Timings::lower`] is then the time of the parse, check and lowering.
pub fn lower_text_into<W: Write>(
    text: &str,
    bytecode: bool,
    t: &mut Timings,
    open: impl FnOnce() -> std::io::Result<W>,
) -> Result<Option<(W, Lowered)>, Failure> {
    lower_source_into(Source::Text(text), bytecode, t, open)
}

/// What a lowering starts from.
enum Source<'f> {
    Checked {
        file: &'f ast::SourceFile,
        a: &'f Analysis,
    },
    Text(&'f str),
}

fn lower_source_into<W: Write>(
    source: Source,
    bytecode: bool,
    t: &mut Timings,
    open: impl FnOnce() -> std::io::Result<W>,
) -> Result<Option<(W, Lowered)>, Failure> {
    let clock = std::time::Instant::now();
    let mut lap = {
        let mut last = clock;
        move || {
            let now = std::time::Instant::now();
            let d = now - last;
            last = now;
            d
        }
    };
    let cx = context();
    // The verifier reports on its thread.
    let messages: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = messages.clone();
    let handler = cx.attach_diagnostic_handler(move |d| {
        if let Ok(mut m) = sink.lock() {
            m.push(d.to_string());
        }
        true
    });
    let whole = match &source {
        Source::Checked { file, .. } => file
            .main
            .as_ref()
            .map_or(TextRange::new(0, 0), |m| m.lambda_range),
        Source::Text(_) => TextRange::new(0, 0),
    };
    t.context = lap();
    let result = (|| {
        let st = LowerState::default();
        let module = Module::new(Location::unknown(&cx));
        let lowered = match source {
            Source::Checked { file, a } => {
                let syntax = Syntax::new(file, a);
                Lower::new(&cx, a, &syntax, &st).main(&module).map(|()| true)
            }
            Source::Text(text) => lower_text(&cx, &st, &module, text)?,
        };
        if !lowered.map_err(|e| Failure::Diagnostics(vec![e.into_diagnostic()]))? {
            return Ok(None);
        }
        t.lower = lap();
        match write_verified(&module, st.ops.get(), bytecode, t, open) {
            Ok(out) => Ok(Some((out, keep(module)))),
            Err(Unwritten::Io(e)) => Err(Failure::Io(e)),
            Err(Unwritten::NotVerified) => {
                let msgs = messages.lock().map(|m| m.join("; ")).unwrap_or_default();
                Err(Failure::Diagnostics(vec![
                    Diagnostic::error(
                        DiagKind::Unsupported,
                        whole,
                        format!("internal error: the lowered module does not verify: {msgs}"),
                    )
                    .with_help(
                        "this is a bug of the StableHLO lowering; please report it with the jaxpr",
                    ),
                ]))
            }
        }
    })();
    cx.detach_diagnostic_handler(handler);
    Ok(result?.map(|(out, module)| (out, Lowered { module, _cx: cx })))
}

/// Lowers `@main` of `text` into `module` while the text is checked, each
/// top-level equation right after its check, with the parser reading ahead
/// on its own thread. Errors of the check come first (`Err` with them);
/// then whether `@main` was lowered (`Ok(Ok(false))`: the file is to be
/// built whole), or why not.
fn lower_text<'c>(
    cx: &'c Context,
    st: &LowerState<'c>,
    module: &Module<'c>,
    text: &str,
) -> Result<R<bool>, Failure> {
    let lets = std::cell::OnceCell::new();
    let mut lowering = LowerAsChecked {
        cx,
        st,
        module,
        lets: &lets,
        syntax: None,
        head: None,
        top_jaxprs: 0,
        outcome: Ok(false),
    };
    let diagnostics =
        check::check_source(check::Source::Text(text), check::Keep::Shown(&mut lowering))
            .diagnostics();
    let errors: Vec<Diagnostic> = diagnostics.into_iter().filter(|d| d.is_error()).collect();
    if !errors.is_empty() {
        return Err(Failure::Diagnostics(errors));
    }
    Ok(lowering.outcome)
}

/// Lowers `@main` as the check shows it: each equation through a view of
/// the analysis as the checker has it right after checking it.
struct LowerAsChecked<'c, 'a> {
    cx: &'c Context,
    st: &'a LowerState<'c>,
    module: &'a Module<'c>,
    /// The `let` jaxprs, kept from `begin` on (their bodies are lowered at
    /// every call).
    lets: &'a std::cell::OnceCell<Vec<ast::LetJaxpr>>,
    /// Their syntax, which the views of the equations fall back to.
    syntax: Option<Syntax<'a>>,
    head: Option<MainHead<'c>>,
    /// How many jaxprs the top-level `let`s and `@main` are: the ids from
    /// there on belong to the equation being checked, and the checker
    /// gives them again to the next one.
    top_jaxprs: usize,
    /// Whether `@main` was lowered, or the first error (no later equation
    /// is lowered).
    outcome: R<bool>,
}

impl<'c> check::Checked for LowerAsChecked<'c, '_> {
    fn reserve(&mut self, vars: usize) {
        self.st.reserve_vars(vars);
    }

    fn begin(&mut self, a: &Analysis, lets: &[ast::LetJaxpr], main: JaxprId, refs: &[VarRef]) {
        let lets = self.lets.get_or_init(|| lets.to_vec());
        self.top_jaxprs = a.jaxprs.len();
        let syntax = self.syntax.insert(Syntax::of_lets(lets, check::uses_of(refs)));
        match Lower::new(self.cx, a, syntax, self.st).begin_main(main) {
            Ok(head) => self.head = Some(head),
            Err(e) => self.outcome = Err(e),
        }
    }

    fn eqn(&mut self, a: &Analysis, e: &ast::Eqn, id: EqnId, reused: usize, refs: &[VarRef]) {
        let (Ok(_), Some(head), Some(lets)) = (&self.outcome, &self.head, &self.syntax) else {
            return;
        };
        self.st.fit_vars(reused, a.vars.len());
        let syntax = Syntax::of_eqn(lets, &e.params, check::uses_of(refs));
        let lower = Lower::new(self.cx, a, &syntax, self.st);
        // The `let`s a parameter value holds are lowered now, while the
        // analysis still has them: their ids go to the next equation's.
        let lowered = lower
            .eqn(head.b, &head.env, e, id)
            .and_then(|()| lower.lower_let_functions_from(self.module, self.top_jaxprs));
        if let Err(e) = lowered {
            self.outcome = Err(e);
        }
    }

    fn end(&mut self, a: &Analysis, main: JaxprId, outvars: &[Atom], refs: &[VarRef]) {
        let (Ok(_), Some(lets)) = (&self.outcome, &self.syntax) else {
            return;
        };
        let Some(head) = self.head.take() else { return };
        let syntax = Syntax::of_eqn(lets, &[], check::uses_of(refs));
        self.outcome = Lower::new(self.cx, a, &syntax, self.st)
            .end_main(self.module, head, main, outvars)
            .map(|()| true);
    }
}

/// Why a module was not written.
#[derive(Debug)]
enum Unwritten {
    /// MLIR's verifier rejects it (its diagnostics went to the context's
    /// handler).
    NotVerified,
    Io(std::io::Error),
}

/// Has MLIR verify the module and writes it to the writer `open` gives
/// (`ops`: the number of operations). When our printer prints the module,
/// verifying and printing run at once, on two threads. This is sound in a
/// context without threads (whose uniquer takes no locks) because:
/// - the verifier's only writes to the module are each operation's cached
///   position in its block and the block's "order valid" bit (from
///   dominance checks, `Operation::isBeforeInBlock`); the printer reads
///   neither (it walks the operation lists, operands, results, regions and
///   the attribute dictionaries of unregistered operations, which are not
///   separate fields of the same words);
/// - the printer never asks the context's uniquer for a type, attribute or
///   name: the function's attributes (properties, whose reading looks them
///   up) are read by `Printable::check` before the verifier starts, the
///   other operations' attributes as they are stored (MLIR's discardable
///   attributes: see `print::generic_op_fits`); types and attributes are
///   printed from their storage;
/// - so what the verifier looks up or adds there (names of symbols; when it
///   fails, its diagnostics print operations, making attributes) never
///   meets the printer; the printer's output is discarded when it fails.
/// MLIR's writers (bytecode, its printer) make attributes while they run:
/// they run after the verifier.
fn write_verified<W: Write>(
    module: &Module,
    ops: usize,
    bytecode: bool,
    t: &mut Timings,
    open: impl FnOnce() -> std::io::Result<W>,
) -> Result<W, Unwritten> {
    let printable = if bytecode {
        None
    } else {
        print::Printable::check(module)
    };
    let Some(printable) = printable else {
        let started = std::time::Instant::now();
        let verified = module.as_operation().verify();
        t.verify = started.elapsed();
        if !verified {
            return Err(Unwritten::NotVerified);
        }
        let started = std::time::Instant::now();
        let mut out = open().map_err(Unwritten::Io)?;
        let bytes = if bytecode {
            module.as_operation().write_bytecode()
        } else {
            print::mlir_text(module)
        };
        out.write_all(&bytes).map_err(Unwritten::Io)?;
        t.print = started.elapsed();
        return Ok(out);
    };
    let verifying = Verifying(module.as_operation().to_raw());
    let (verified, written) = std::thread::scope(|s| {
        let verifier = s.spawn(move || verifying.run());
        let started = std::time::Instant::now();
        let written = open().and_then(|mut out| {
            printable.write(ops, &mut out)?;
            Ok(out)
        });
        t.print = started.elapsed();
        let verified = verifier.join().unwrap_or((false, Default::default()));
        (verified, written)
    });
    t.verify = verified.1;
    if !verified.0 {
        return Err(Unwritten::NotVerified);
    }
    written.map_err(Unwritten::Io)
}

/// The module, to be freed by [`Lowered`].
fn keep(module: Module) -> mlir_sys::MlirModule {
    let raw = module.to_raw();
    std::mem::forget(module);
    raw
}

/// The module to verify on another thread.
struct Verifying(mlir_sys::MlirOperation);

// SAFETY: the module outlives the thread (a scoped thread), and nothing
// changes it while the verifier runs.
unsafe impl Send for Verifying {}

impl Verifying {
    /// Whether the module verifies, and how long it took.
    fn run(self) -> (bool, std::time::Duration) {
        let started = std::time::Instant::now();
        // SAFETY: see the type.
        let ok = unsafe { mlir_sys::mlirOperationVerify(self.0) };
        (ok, started.elapsed())
    }
}

/// An MLIR context for the lowering: the `func` dialect is the only one
/// the module uses that MLIR knows (StableHLO and CHLO are unregistered),
/// so only it is loaded. Without threads: nothing of the build runs in
/// parallel (the module has one function to verify), and a threaded
/// context takes locks for every type, attribute and name it uniques.
fn context() -> Context {
    let cx = Context::new_with_threading(false);
    melior::dialect::DialectHandle::func().load_dialect(&cx);
    cx.set_allow_unregistered_dialects(true);
    cx
}

/// A view of the lowering: the analysis and syntax it reads, and the state
/// it keeps ([`LowerState`], which it derefs to). A whole-file lowering has
/// one view; a lowering fed equation by equation ([`lower_handed`]) makes
/// one per equation, over the analysis as the checker had it then.
pub(crate) struct Lower<'c, 'f> {
    pub cx: &'c Context,
    pub a: &'f Analysis,
    loc: Location<'c>,
    /// Where every jaxpr's syntax and every variable use is.
    syntax: &'f Syntax<'f>,
    st: &'f LowerState<'c>,
}

impl<'c> std::ops::Deref for Lower<'c, '_> {
    type Target = LowerState<'c>;
    fn deref(&self) -> &LowerState<'c> {
        self.st
    }
}

/// What a lowering keeps from one equation to the next.
#[derive(Default)]
pub(crate) struct LowerState<'c> {
    /// The value of each variable, by `VarId`, once its binder is lowered.
    /// One table for the whole file: a variable belongs to one jaxpr, and a
    /// jaxpr lowered again (a second call site, a loop body) binds its
    /// variables again before it reads them.
    vals: RefCell<Vec<Option<V<'c>>>>,
    /// The tensor type of each variable, by `VarId`, once asked for.
    var_tys: RefCell<Vec<Option<Type<'c>>>>,
    /// Types and attributes already made, by their text or (tensors) their
    /// element type and dimensions, and attribute names.
    types: RefCell<HashMap<String, Type<'c>>>,
    tensors: RefCell<HashMap<TensorKey, Type<'c>>>,
    attrs: RefCell<HashMap<String, Attribute<'c>>>,
    idents: RefCell<HashMap<&'static str, Identifier<'c>>>,
    /// Scalar constants already made in a block (by block and type, then
    /// text): a constant dominates the rest of its block and the regions in
    /// it.
    consts: RefCell<HashMap<(usize, usize), BlockConstants<'c>>>,
    /// Static broadcasts already made in a block (by block, value, result
    /// type and dimensions packed by [`ops::packed_dims`]), for the same
    /// reason: elementwise operations broadcast their scalar operands at
    /// every use.
    broadcasts: RefCell<HashMap<(usize, usize, usize, u64), V<'c>>>,
    /// Operations made so far (the printer sizes its buffer from it).
    ops: std::cell::Cell<usize>,
    /// Operation names (None: registered), and attribute dictionaries by
    /// their names and attributes, for [`create`].
    op_names: RefCell<HashMap<Box<str>, Option<*const std::ffi::c_void>>>,
    dictionaries: RefCell<HashMap<DictionaryKey, mlir_sys::MlirAttribute>>,
    /// The functions of the `let` jaxprs called ([`calls`]).
    let_functions: RefCell<calls::LetFunctions>,
}

/// An attribute list: its names and attributes, as MLIR's handles.
type DictionaryKey = SmallVec<[(usize, usize); 2]>;

impl LowerState<'_> {
    /// Room for `vars` variables in the tables by variable (see
    /// `Checker::reserve_kept`).
    fn reserve_vars(&self, vars: usize) {
        self.vals.borrow_mut().reserve(vars);
        self.var_tys.borrow_mut().reserve(vars);
    }

    /// Makes room for `vars` variables, forgetting what it knew of those
    /// from `reused` on (variable ids the checker gives again).
    fn fit_vars(&self, reused: usize, vars: usize) {
        fn refit<T>(table: &mut Vec<Option<T>>, reused: usize, len: usize) {
            table.truncate(reused.min(len));
            table.resize_with(len, || None);
        }
        refit(&mut self.vals.borrow_mut(), reused, vars);
        refit(&mut self.var_tys.borrow_mut(), reused, vars);
    }
}

/// The entry block of `@main` while its equations are lowered.
struct MainHead<'c> {
    block: Block<'c>,
    b: B<'c>,
    env: Env<'c>,
    in_tys: Vec<Type<'c>>,
}

impl<'c, 'f> Lower<'c, 'f> {
    fn new(cx: &'c Context, a: &'f Analysis, syntax: &'f Syntax<'f>, st: &'f LowerState<'c>) -> Self {
        st.fit_vars(usize::MAX, a.vars.len());
        Lower {
            cx,
            a,
            loc: Location::unknown(cx),
            syntax,
            st,
        }
    }

    // ---- the entry function -------------------------------------------------

    fn main(&self, module: &Module<'c>) -> R<()> {
        let Some(main) = self.a.main() else {
            return err(TextRange::new(0, 0), "the file has no main jaxpr to build");
        };
        let head = self.begin_main(main)?;
        let (eqns, outvars) = self.syntax.body(self.a, main)?;
        for (e, id) in eqns {
            self.eqn(head.b, &head.env, e, id)?;
        }
        self.end_main(module, head, main, outvars)
    }

    /// The entry block, with the inputs (constvars first, then invars) and
    /// the symbolic dimensions bound.
    fn begin_main(&self, main: JaxprId) -> R<MainHead<'c>> {
        let info = self.a.jaxpr(main);
        let inputs: Vec<VarId> = info.constvars.iter().chain(&info.invars).copied().collect();
        let in_tys = inputs
            .iter()
            .map(|&v| self.var_ty(v))
            .collect::<R<Vec<_>>>()?;
        let (block, b, args) = self.new_block(&in_tys);
        let mut env = Env::default();
        for (&v, &x) in inputs.iter().zip(&args) {
            self.bind(v, x);
        }
        self.bind_symbols(b, &mut env, &inputs)?;
        Ok(MainHead {
            block,
            b,
            env,
            in_tys,
        })
    }

    /// Returns the outputs and appends `@main` to the module.
    fn end_main(
        &self,
        module: &Module<'c>,
        head: MainHead<'c>,
        main: JaxprId,
        outvars: &[Atom],
    ) -> R<()> {
        let info = self.a.jaxpr(main);
        // Implicit outputs (dimensions of later outputs) are not results of
        // the program: Catalyst returns only the explicit ones.
        let explicit: Vec<bool> = (0..info.outs.len())
            .map(|k| info.signature.out_type.get(k).is_none_or(|e| e.explicit))
            .collect();
        let out_tys = info
            .outs
            .iter()
            .zip(&explicit)
            .filter(|(_, e)| **e)
            .map(|(o, _)| self.ty(&o.ty, o.range))
            .collect::<R<Vec<_>>>()?;
        let MainHead {
            block,
            b,
            in_tys,
            ..
        } = head;
        let outs = outvars
            .iter()
            .map(|o| self.atom(b, o))
            .collect::<R<Vec<_>>>()?;
        let outs = outs
            .into_iter()
            .zip(explicit)
            .filter(|(_, e)| *e)
            .map(|(o, _)| o)
            .zip(&out_tys)
            .map(|(o, &t)| self.fit(b, o.v, t))
            .collect::<R<Vec<_>>>()?;
        self.append_function(module, "main", "public", (block, b), &outs, &in_tys, &out_tys);
        self.lower_let_functions(module)
    }

    /// Ends the body `block` (`b`) returning `outs`, and appends it to
    /// `module` as the function `name` of `visibility`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn append_function(
        &self,
        module: &Module<'c>,
        name: &str,
        visibility: &str,
        (block, b): (Block<'c>, B<'c>),
        outs: &[V<'c>],
        in_tys: &[Type<'c>],
        out_tys: &[Type<'c>],
    ) {
        b.append_operation(melior::dialect::func::r#return(outs, self.loc));
        let region = Region::new();
        region.append_block(block);
        let func = melior::dialect::func::func(
            self.cx,
            StringAttribute::new(self.cx, name),
            TypeAttribute::new(FunctionType::new(self.cx, in_tys, out_tys).into()),
            region,
            &[(
                Identifier::new(self.cx, "sym_visibility"),
                StringAttribute::new(self.cx, visibility).into(),
            )],
            self.loc,
        );
        module.body().append_operation(func);
    }

    /// Values of the symbolic dimensions, from the shapes of the inputs where
    /// they appear: a dimension `k*s + rest` of an input whose other symbols
    /// are known gives `s = (size - rest) / k`. Repeats until nothing new is
    /// learnt, so `f32[a, a + b]` resolves `a` first, then `b`.
    fn bind_symbols(&self, b: B<'c>, env: &mut Env<'c>, inputs: &[VarId]) -> R<()> {
        loop {
            let mut learnt = false;
            for &v in inputs {
                let var = self.a.var(v);
                for (k, d) in var.ty.shape.iter().enumerate() {
                    let Dim::Sym(p) = d else { continue };
                    let Some((s, coef, rest)) = solvable(p, &env.syms) else {
                        continue;
                    };
                    let size = self.op1(
                        b,
                        "stablehlo.get_dimension_size",
                        &[self.value(v, var.range)?],
                        self.tensor_of("i32", &[])?,
                        &[("dimension", format!("{k} : i64"))],
                    )?;
                    let size = self.convert(b, size, &DType::Int(64))?;
                    let rest = self.poly(b, env, &rest, var.range)?;
                    let mut val = self.binary(b, "stablehlo.subtract", size, rest)?;
                    if coef != 1 {
                        let c = self.const_i64(b, coef)?;
                        val = self.binary(b, "stablehlo.divide", val, c)?;
                    }
                    env.syms.insert(s, val);
                    learnt = true;
                }
            }
            if !learnt {
                return Ok(());
            }
        }
    }

    /// Lowers the equations of a jaxpr whose inputs are bound in `env`;
    /// returns its outputs.
    pub(crate) fn body(&self, b: B<'c>, env: &Env<'c>, j: JaxprId) -> R<Vec<Operand<'c, 'f>>> {
        let (eqns, outvars) = self.syntax.body(self.a, j)?;
        for (e, id) in eqns {
            self.eqn(b, env, e, id)?;
        }
        outvars.iter().map(|o| self.atom(b, o)).collect()
    }

    /// Lowers a nested jaxpr with the given inputs (constvars first, then
    /// invars) into block `b`, in a scope of its own; a `let` jaxpr is
    /// called through its function instead ([`calls`]).
    pub(crate) fn call(
        &self,
        b: B<'c>,
        outer: &Env<'c>,
        j: JaxprId,
        inputs: &[V<'c>],
        at: TextRange,
    ) -> R<Vec<Operand<'c, 'f>>> {
        let info = self.a.jaxpr(j);
        if matches!(info.origin, check::JaxprOrigin::Let { .. }) {
            let outs = self.call_let(b, outer, j, inputs, at)?;
            return Ok(outs
                .into_iter()
                .zip(&info.outs)
                .map(|(v, o)| Operand { v, ty: Cow::Borrowed(&o.ty) })
                .collect());
        }
        let binders = super::walk::nested_binders(self.a, j, inputs.len(), at)?;
        for (&v, &x) in binders.iter().zip(inputs) {
            self.bind(v, self.fit(b, x, self.var_ty(v)?)?);
        }
        self.body(b, outer, j)
    }

    fn eqn(&self, b: B<'c>, env: &Env<'c>, e: &ast::Eqn, id: EqnId) -> R<()> {
        super::walk::check_lowered(&e.primitive.text, e.primitive.range, super::walk::Backend::Stablehlo)?;
        let info = self.a.eqn(id);
        let args = e
            .args
            .iter()
            .map(|x| self.atom(b, x))
            .collect::<R<Vec<_>>>()?;
        let outs = super::walk::result_type_refs(self.a, e, id);
        let cx = ops::EqnCx { e, id, args, outs };
        super::walk::check_lowered_complex(
            cx.name(),
            cx.at(),
            cx.args.iter().map(|a| &*a.ty).chain(cx.outs.iter().map(|t| &**t)),
            super::walk::Backend::Stablehlo,
        )?;
        let results = self.lower_eqn(b, env, &cx)?;
        super::walk::expect_results(e, results.len())?;
        for (i, r) in results.into_iter().enumerate() {
            if let Some(v) = info.outs.get(i).copied().flatten() {
                self.bind(v, self.fit(b, r, self.var_ty(v)?)?);
            }
        }
        Ok(())
    }

    fn bind(&self, v: VarId, x: V<'c>) {
        self.vals.borrow_mut()[v.0 as usize] = Some(x);
    }

    /// The value of a variable (`at`: where it is used).
    fn value(&self, v: VarId, at: TextRange) -> R<V<'c>> {
        match self.vals.borrow().get(v.0 as usize).copied().flatten() {
            Some(x) => Ok(x),
            None => err(
                at,
                format!("internal error: `{}` has no value here", self.a.var(v).name),
            ),
        }
    }

    fn atom(&self, b: B<'c>, x: &Atom) -> R<Operand<'c, 'f>> {
        match x {
            Atom::Var(n) => {
                let Some(v) = self.syntax.use_at(n.range.start) else {
                    return err(
                        n.range,
                        format!("internal error: `{}` is not resolved", n.text),
                    );
                };
                Ok(Operand {
                    v: self.value(v, n.range)?,
                    ty: Cow::Borrowed(&self.a.var(v).ty),
                })
            }
            Atom::Lit(l) => {
                let Some(dt) = l.ty.as_ref().and_then(|t| DType::from_short(&t.dtype.text)) else {
                    return err(
                        l.range,
                        format!("the literal `{}` has no dtype to build with", l.value),
                    )
                    .map_err(|e| LowerError {
                        help: Some(
                            "print the jaxpr with a JAX that types its literals (`1.0:f32[]`)"
                                .into(),
                        ),
                        ..e
                    });
                };
                Ok(Operand {
                    v: self.constant(b, &dt, &l.value, l.range)?,
                    ty: Cow::Owned(AType::scalar(dt)),
                })
            }
        }
    }

    // ---- types ---------------------------------------------------------------

    /// A type from its text, parsed once.
    pub(crate) fn parse_ty(&self, s: &str) -> R<Type<'c>> {
        parsed(
            &self.types,
            s,
            |s| Type::parse(self.cx, s),
            || format!("type {s}"),
        )
    }

    /// The tensor type of a variable.
    pub(crate) fn var_ty(&self, v: VarId) -> R<Type<'c>> {
        if let Some(t) = self.var_tys.borrow()[v.0 as usize] {
            return Ok(t);
        }
        let var = self.a.var(v);
        let t = self.ty(&var.ty, var.range)?;
        self.var_tys.borrow_mut()[v.0 as usize] = Some(t);
        Ok(t)
    }

    /// The tensor type of result `i` of an equation.
    pub(crate) fn out_ty(&self, cx: &ops::EqnCx<'_, 'c, 'f>, i: usize) -> R<Type<'c>> {
        match self.a.eqn(cx.id).outs.get(i).copied().flatten() {
            Some(v) => self.var_ty(v),
            None => self.ty(&cx.outs[i], cx.at()),
        }
    }

    /// The tensor type of a jaxpr type (`?` for every non-constant dimension).
    pub(crate) fn ty(&self, t: &AType, at: TextRange) -> R<Type<'c>> {
        let Some(dt) = &t.dtype else {
            return err(at, "a value without a dtype cannot be built");
        };
        self.tensor(dt, &t.shape, at)
    }

    pub(crate) fn tensor(&self, dt: &DType, dims: &[Dim], at: TextRange) -> R<Type<'c>> {
        // A PRNG key array is its key data: uint32 words on a last axis.
        let key_words = crate::random::key_words(dt);
        let Some(elem) = key_words.map_or_else(|| elem_type(dt), |_| Some("ui32")) else {
            return err(at, format!("dtype {dt} has no StableHLO lowering here"));
        };
        let mut sizes: SmallVec<[i64; 6]> = dims
            .iter()
            .map(|d| d.as_const().map_or(Ok(DYNAMIC), |c| crate::walk::static_extent(c, at)))
            .collect::<R<_>>()?;
        sizes.extend(key_words);
        self.tensor_of(elem, &sizes)
    }

    /// `tensor<d0 x d1 x ... x elem>` (`DYNAMIC` for `?`), made through
    /// MLIR's C API once per distinct type: lowering asks for a type at
    /// nearly every operation.
    pub(crate) fn tensor_of(&self, elem: &'static str, sizes: &[i64]) -> R<Type<'c>> {
        // Types made from sizes of parameters come here without `tensor`.
        for &c in sizes.iter().filter(|&&c| c != DYNAMIC) {
            crate::walk::static_extent(c, TextRange::new(0, 0))?;
        }
        let key: TensorKey = (elem.as_ptr() as usize, elem.len(), SmallVec::from_slice(sizes));
        if let Some(&t) = self.tensors.borrow().get(&key) {
            return Ok(t);
        }
        let e = self.parse_ty(elem)?;
        // SAFETY: the element type belongs to this context; a null encoding
        // is "no encoding"; MLIR copies the sizes.
        let t = unsafe {
            Type::from_raw(mlir_sys::mlirRankedTensorTypeGet(
                sizes.len() as isize,
                sizes.as_ptr(),
                e.to_raw(),
                mlir_sys::MlirAttribute {
                    ptr: std::ptr::null(),
                },
            ))
        };
        self.tensors.borrow_mut().insert(key, t);
        Ok(t)
    }

    /// The type of `v` with element type `elem` (same dimensions).
    pub(crate) fn with_elem(&self, v: V<'c>, elem: &'static str) -> R<Type<'c>> {
        let t = v.r#type().to_raw();
        // SAFETY: every value the lowering makes is a ranked tensor.
        let sizes: SmallVec<[i64; 6]> = unsafe {
            (0..mlir_sys::mlirShapedTypeGetRank(t))
                .map(|i| mlir_sys::mlirShapedTypeGetDimSize(t, i as isize))
                .collect()
        };
        self.tensor_of(elem, &sizes)
    }

    pub(crate) fn scalar_ty(&self, dt: &DType) -> R<Type<'c>> {
        self.tensor(dt, &[], TextRange::new(0, 0))
    }

    // ---- building blocks -------------------------------------------------------

    pub(crate) fn new_block(&self, args: &[Type<'c>]) -> (Block<'c>, B<'c>, Vec<V<'c>>) {
        let block = Block::new(&args.iter().map(|&t| (t, self.loc)).collect::<Vec<_>>());
        // SAFETY: the block is moved into a region of the module before the
        // build ends; its address does not change when it is moved.
        let r: B<'c> = unsafe { BlockRef::from_raw(block.to_raw()) };
        let vals = (0..args.len())
            .map(|i| unsafe { V::from_raw(block.argument(i).expect("argument").to_raw()) })
            .collect();
        (block, r, vals)
    }

    /// A region of one block whose arguments have the given types; `f` fills
    /// it and returns the values `stablehlo.return` yields.
    pub(crate) fn region(
        &self,
        args: &[Type<'c>],
        f: impl FnOnce(B<'c>, Vec<V<'c>>) -> R<Vec<V<'c>>>,
    ) -> R<Region<'c>> {
        let (block, b, vals) = self.new_block(args);
        let outs = f(b, vals)?;
        self.op(b, "stablehlo.return", &outs, &[], &[], vec![])?;
        let region = Region::new();
        region.append_block(block);
        Ok(region)
    }

    /// Appends an operation; `attrs` are MLIR attribute syntax.
    pub(crate) fn op(
        &self,
        b: B<'c>,
        name: &str,
        operands: &[V<'c>],
        results: &[Type<'c>],
        attrs: &[(&'static str, String)],
        regions: Vec<Region<'c>>,
    ) -> R<Vec<V<'c>>> {
        let op = self.append(b, name, operands, results, attrs, regions)?;
        Ok((0..results.len()).map(|i| result(op, i)).collect())
    }

    /// An operation with one result.
    pub(crate) fn op1(
        &self,
        b: B<'c>,
        name: &str,
        operands: &[V<'c>],
        result_type: Type<'c>,
        attrs: &[(&'static str, String)],
    ) -> R<V<'c>> {
        let op = self.append(b, name, operands, &[result_type], attrs, Vec::new())?;
        Ok(result(op, 0))
    }

    /// [`Self::op`] and [`Self::op1`]: makes the operation and appends it
    /// to `b`.
    fn append(
        &self,
        b: B<'c>,
        name: &str,
        operands: &[V<'c>],
        results: &[Type<'c>],
        attrs: &[(&'static str, String)],
        regions: Vec<Region<'c>>,
    ) -> R<mlir_sys::MlirOperation> {
        let mut named: SmallVec<[(Identifier<'c>, Attribute<'c>); 4]> = SmallVec::new();
        for (k, text) in attrs {
            named.push((self.ident(k), self.attr(name, k, text)?));
        }
        self.ops.set(self.ops.get() + 1);
        if let Some(op_name) = self.unregistered_name(name) {
            let dictionary = self.dictionary(&named);
            let regions: SmallVec<[mlir_sys::MlirRegion; 2]> =
                regions.into_iter().map(Region::into_raw).collect();
            let results: SmallVec<[mlir_sys::MlirType; 4]> =
                results.iter().map(|t| t.to_raw()).collect();
            // SAFETY: every handle belongs to this context and is alive; the
            // regions are the operation's from here on; a `V` is its C handle
            // (melior's `Value` is `repr(transparent)`).
            let op = unsafe {
                create::jaxpr_operation_append(
                    op_name,
                    self.loc.to_raw(),
                    results.len() as isize,
                    results.as_ptr(),
                    operands.len() as isize,
                    operands.as_ptr().cast(),
                    dictionary,
                    regions.len() as isize,
                    regions.as_ptr(),
                    b.to_raw(),
                )
            };
            return Ok(op);
        }
        let op = OperationBuilder::new(name, self.loc)
            .add_operands(operands)
            .add_results(results)
            .add_attributes(&named)
            .add_regions_vec(regions)
            .build();
        let Ok(op) = op else {
            return err(
                TextRange::new(0, 0),
                format!("internal error: MLIR could not build {name}"),
            );
        };
        Ok(b.append_operation(op).to_raw())
    }

    /// The name of an operation MLIR does not know (StableHLO, CHLO), made
    /// once; None for a registered one.
    fn unregistered_name(&self, name: &str) -> Option<*const std::ffi::c_void> {
        if let Some(&n) = self.op_names.borrow().get(name) {
            return n;
        }
        let raw = mlir_sys::MlirStringRef {
            data: name.as_ptr().cast(),
            length: name.len(),
        };
        // SAFETY: the context is alive; MLIR copies the name.
        let n = unsafe { create::jaxpr_operation_name(self.cx.to_raw(), raw) };
        let n = (!n.is_null()).then_some(n);
        self.op_names.borrow_mut().insert(name.into(), n);
        n
    }

    /// The attribute dictionary of `named`, made once per distinct list.
    fn dictionary(&self, named: &[(Identifier<'c>, Attribute<'c>)]) -> mlir_sys::MlirAttribute {
        let key: DictionaryKey = named
            .iter()
            .map(|(k, v)| (k.to_raw().ptr as usize, v.to_raw().ptr as usize))
            .collect();
        if let Some(&d) = self.dictionaries.borrow().get(&key) {
            return d;
        }
        let elements: SmallVec<[mlir_sys::MlirNamedAttribute; 4]> = named
            .iter()
            .map(|(k, v)| mlir_sys::MlirNamedAttribute {
                name: k.to_raw(),
                attribute: v.to_raw(),
            })
            .collect();
        // SAFETY: the names and attributes belong to this context; MLIR
        // sorts and copies the list.
        let d = unsafe {
            mlir_sys::mlirDictionaryAttrGet(
                self.cx.to_raw(),
                elements.len() as isize,
                elements.as_ptr(),
            )
        };
        self.dictionaries.borrow_mut().insert(key, d);
        d
    }

    /// An attribute name, made once.
    fn ident(&self, name: &'static str) -> Identifier<'c> {
        *self
            .idents
            .borrow_mut()
            .entry(name)
            .or_insert_with(|| Identifier::new(self.cx, name))
    }

    /// An attribute from its text, parsed once (`key` and `op` say where it
    /// goes, for the error).
    fn attr(&self, op: &str, key: &str, text: &str) -> R<Attribute<'c>> {
        parsed(
            &self.attrs,
            text,
            |t| Attribute::parse(self.cx, t),
            || format!("attribute {key} = {text} of {op}"),
        )
    }

    /// An elementwise operation whose result has the type of its first operand.
    pub(crate) fn binary(&self, b: B<'c>, name: &str, x: V<'c>, y: V<'c>) -> R<V<'c>> {
        self.op1(b, name, &[x, y], x.r#type(), &[])
    }

    /// Makes `v` of type `want`: the same value when it already is, else a
    /// `stablehlo.convert` between compatible shapes (`tensor<3xf64>` and
    /// `tensor<?xf64>`), as refinement expects.
    pub(crate) fn fit(&self, b: B<'c>, v: V<'c>, want: Type<'c>) -> R<V<'c>> {
        if v.r#type() == want {
            return Ok(v);
        }
        self.op1(b, "stablehlo.convert", &[v], want, &[])
    }

    /// Converts the element type, keeping the shape.
    pub(crate) fn convert(&self, b: B<'c>, v: V<'c>, to: &DType) -> R<V<'c>> {
        let Some(elem) = elem_type(to) else {
            return err(TextRange::new(0, 0), format!("dtype {to} has no lowering"));
        };
        // Complex to real keeps the real part (as JAX's lowering does):
        // `stablehlo.convert` does not take complex to real.
        if let (false, Some(part)) = (to.is_complex(), complex_part(v)) {
            let re = self.op1(b, "stablehlo.real", &[v], self.with_elem(v, part)?, &[])?;
            return self.convert(b, re, to);
        }
        let want = self.with_elem(v, elem)?;
        self.fit(b, v, want)
    }

    // ---- constants -------------------------------------------------------------

    /// A scalar constant written as JAX prints it (`1.0`, `-inf`, `True`, `3`).
    pub(crate) fn constant(&self, b: B<'c>, dt: &DType, text: &str, at: TextRange) -> R<V<'c>> {
        let bad = || {
            err::<V<'c>>(
                at,
                format!("the literal `{text}` is not a valid {dt} for building"),
            )
        };
        match dt {
            DType::Float(FloatKind::F64 | FloatKind::F32) => {}
            DType::Float(_) => {
                // Narrow floats: through f32, rounded by the conversion
                // (made at each use).
                if literal(&DType::Float(FloatKind::F64), text).is_none() {
                    return bad();
                }
                let f = self.constant(b, &DType::Float(FloatKind::F32), text, at)?;
                return self.convert(b, f, dt);
            }
            DType::Bool | DType::Int(_) | DType::UInt(_) | DType::Complex(64 | 128) => {}
            _ => return err(at, format!("constants of dtype {dt} have no lowering")),
        }
        let t = self.tensor(dt, &[], at)?;
        let place = (b.to_raw().ptr as usize, t.to_raw().ptr as usize);
        // The same text in the same block and type: the same constant (most
        // literals of a program are a few texts used again and again).
        if let Some(&v) = self.consts.borrow().get(&place).and_then(|m| m.by_text.get(text)) {
            return Ok(v);
        }
        let Some(lit) = literal(dt, text) else {
            return bad();
        };
        // Texts that denote the same value (`1.0`, `1.`) share one constant.
        let made = self
            .consts
            .borrow()
            .get(&place)
            .and_then(|m| m.by_value.get(lit.as_str()).copied());
        let v = match made {
            Some(v) => v,
            None => self.op1(
                b,
                "stablehlo.constant",
                &[],
                t,
                &[("value", format!("dense<{lit}> : {t}"))],
            )?,
        };
        let mut consts = self.consts.borrow_mut();
        let m = consts.entry(place).or_default();
        m.by_value.entry(lit.into_boxed_str()).or_insert(v);
        m.by_text.insert(text.into(), v);
        Ok(v)
    }

    pub(crate) fn const_i64(&self, b: B<'c>, x: i64) -> R<V<'c>> {
        self.constant(b, &DType::Int(64), &x.to_string(), TextRange::new(0, 0))
    }

    /// A 1-d `tensor<Nxi64>` constant (shapes, indices).
    pub(crate) fn const_vec_i64(&self, b: B<'c>, xs: &[i64]) -> R<V<'c>> {
        let t = self.tensor_of("i64", &[xs.len() as i64])?;
        let mut value = String::from("dense<[");
        ops::push_joined(&mut value, xs);
        let _ = write!(value, "]> : {t}");
        self.op1(b, "stablehlo.constant", &[], t, &[("value", value)])
    }

    // ---- dimensions ------------------------------------------------------------

    /// The run-time value of a dimension, as `tensor<i64>`.
    pub(crate) fn dim(&self, b: B<'c>, env: &Env<'c>, d: &Dim, at: TextRange) -> R<V<'c>> {
        match d {
            Dim::Const(c) => self.const_i64(b, *c),
            Dim::Var(v) => {
                let x = self.value(*v, at)?;
                self.convert(b, x, &DType::Int(64))
            }
            Dim::Sym(p) => self.poly(b, env, p, at),
            Dim::Unknown => err(at, "a dimension that is not known cannot be built"),
        }
    }

    /// Evaluates a symbolic dimension from the values of its symbols.
    fn poly(&self, b: B<'c>, env: &Env<'c>, p: &Poly, at: TextRange) -> R<V<'c>> {
        let mut sum: Option<V<'c>> = None;
        for (mono, coef) in p.terms() {
            let mut prod = self.const_i64(b, coef)?;
            for (f, exp) in mono {
                let x = self.factor(b, env, f, at)?;
                for _ in 0..*exp {
                    prod = self.binary(b, "stablehlo.multiply", prod, x)?;
                }
            }
            sum = Some(match sum {
                None => prod,
                Some(s) => self.binary(b, "stablehlo.add", s, prod)?,
            });
        }
        match sum {
            Some(s) => Ok(s),
            None => self.const_i64(b, 0),
        }
    }

    fn factor(&self, b: B<'c>, env: &Env<'c>, f: &Factor, at: TextRange) -> R<V<'c>> {
        if let Factor::Sym(s) = f {
            return symbol_value(&env.syms, s, at);
        }
        let (x, y) = f.operands().expect("operation factor");
        let (x, y) = (self.poly(b, env, x, at)?, self.poly(b, env, y, at)?);
        let op = match f {
            Factor::FloorDiv(..) | Factor::Mod(..) => {
                // Floor division and modulo (divisors are positive): a
                // dividend may be negative (`mod(- 2, b)`), where StableHLO's
                // truncating division rounds the other way.
                let r = self.binary(b, "stablehlo.remainder", x, y)?;
                let zero = self.const_i64(b, 0)?;
                let below = self.compare(b, r, zero, "LT", "SIGNED")?;
                let (fixed, plain) = if matches!(f, Factor::Mod(..)) {
                    (self.binary(b, "stablehlo.add", r, y)?, r)
                } else {
                    let q = self.binary(b, "stablehlo.divide", x, y)?;
                    (self.binary(b, "stablehlo.subtract", q, self.const_i64(b, 1)?)?, q)
                };
                return self.op1(b, "stablehlo.select", &[below, fixed, plain], plain.r#type(), &[]);
            }
            Factor::Max(..) => "stablehlo.maximum",
            _ => "stablehlo.minimum",
        };
        self.binary(b, op, x, y)
    }

    /// A shape as a `tensor<Nxi64>` value (for the dynamic operations).
    pub(crate) fn shape_value(
        &self,
        b: B<'c>,
        env: &Env<'c>,
        dims: &[Dim],
        at: TextRange,
    ) -> R<V<'c>> {
        if let Some(cs) = dims.iter().map(Dim::as_const).collect::<Option<Vec<_>>>() {
            return self.const_vec_i64(b, &cs);
        }
        let t1 = self.tensor_of("i64", &[1])?;
        let parts = dims
            .iter()
            .map(|d| {
                let x = self.dim(b, env, d, at)?;
                self.op1(b, "stablehlo.reshape", &[x], t1, &[])
            })
            .collect::<R<Vec<_>>>()?;
        let t = self.tensor_of("i64", &[dims.len() as i64])?;
        self.op1(
            b,
            "stablehlo.concatenate",
            &parts,
            t,
            &[("dimension", "0 : i64".into())],
        )
    }
}

/// `text` parsed by MLIR, once per distinct text (`what` describes it
/// for the error).
fn parsed<T: Copy>(
    cache: &RefCell<HashMap<String, T>>,
    text: &str,
    parse: impl FnOnce(&str) -> Option<T>,
    what: impl FnOnce() -> String,
) -> R<T> {
    if let Some(&x) = cache.borrow().get(text) {
        return Ok(x);
    }
    let Some(x) = parse(text) else {
        return err(
            TextRange::new(0, 0),
            format!("internal error: MLIR rejects {}", what()),
        );
    };
    cache.borrow_mut().insert(text.to_string(), x);
    Ok(x)
}

/// The scalar constants of one type made in one block.
#[derive(Default)]
pub(crate) struct BlockConstants<'c> {
    /// By the literal's text as the jaxpr has it.
    by_text: HashMap<Box<str>, V<'c>>,
    /// By the text of its MLIR value ([`literal`]).
    by_value: HashMap<Box<str>, V<'c>>,
}

/// A literal's value as MLIR's `dense<...>` takes it for a scalar of `dt`
/// (floats as their bits, exactly), or None when the text is not one.
/// Not for floats narrower than f32, which are made from an f32.
fn literal(dt: &DType, text: &str) -> Option<String> {
    Some(match dt {
        DType::Bool => match text {
            "True" | "true" | "1" => "true".to_string(),
            "False" | "false" | "0" => "false".to_string(),
            _ => return None,
        },
        DType::Int(_) | DType::UInt(_) => match text.parse::<i128>() {
            Ok(i) => i.to_string(),
            Err(_) => match text.parse::<f64>() {
                Ok(f) if f.fract() == 0.0 => (f as i128).to_string(),
                _ => return None,
            },
        },
        DType::Float(k) => {
            let x = match text {
                "inf" => f64::INFINITY,
                "-inf" => f64::NEG_INFINITY,
                "nan" | "-nan" => f64::NAN,
                _ => text.parse::<f64>().ok()?,
            };
            match k {
                FloatKind::F64 => format!("0x{:016X}", x.to_bits()),
                FloatKind::F32 => format!("0x{:08X}", (x as f32).to_bits()),
                _ => return None,
            }
        }
        DType::Complex(bits) => {
            let (re, im) = crate::walk::complex_literal(text)?;
            let part = DType::Float(if *bits == 64 { FloatKind::F32 } else { FloatKind::F64 });
            let bits_of = |x: f64| literal(&part, &format!("{x:e}"));
            format!("({}, {})", bits_of(re)?, bits_of(im)?)
        }
        _ => return None,
    })
}

/// The type of the parts (`f32`, `f64`) of a value with complex elements.
pub(crate) fn complex_part(v: V<'_>) -> Option<&'static str> {
    // SAFETY: every value the lowering makes is a ranked tensor.
    unsafe {
        let e = mlir_sys::mlirShapedTypeGetElementType(v.r#type().to_raw());
        if !mlir_sys::mlirTypeIsAComplex(e) {
            return None;
        }
        let part = mlir_sys::mlirComplexTypeGetElementType(e);
        Some(if mlir_sys::mlirTypeIsAF32(part) { "f32" } else { "f64" })
    }
}

/// Result `i` of an operation of the module.
fn result<'c>(op: mlir_sys::MlirOperation, i: usize) -> V<'c> {
    // SAFETY: the operation is in the module, which outlives the lowering;
    // callers ask for results it has.
    unsafe { V::from_raw(mlir_sys::mlirOperationGetResult(op, i as isize)) }
}

/// MLIR's size of a dynamic dimension (`?`).
const DYNAMIC: i64 = i64::MIN;

/// A tensor type: element type and dimension sizes. The element type is
/// the address and length of its static name, not the name: hashing and
/// comparing the name cost more than the rest at each of the lowering's
/// many lookups, and two copies of one name at two addresses only make two
/// keys for the same MLIR type (which MLIR uniques).
type TensorKey = (usize, usize, SmallVec<[i64; 6]>);

/// The StableHLO element type of a dtype.
pub(crate) fn elem_type(dt: &DType) -> Option<&'static str> {
    Some(match dt {
        DType::Bool => "i1",
        DType::Int(8) => "i8",
        DType::Int(16) => "i16",
        DType::Int(32) => "i32",
        DType::Int(64) => "i64",
        DType::UInt(8) => "ui8",
        DType::UInt(16) => "ui16",
        DType::UInt(32) => "ui32",
        DType::UInt(64) => "ui64",
        DType::Float(FloatKind::F16) => "f16",
        DType::Float(FloatKind::BF16) => "bf16",
        DType::Float(FloatKind::F32) => "f32",
        DType::Float(FloatKind::F64) => "f64",
        DType::Complex(64) => "complex<f32>",
        DType::Complex(128) => "complex<f64>",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use melior::ir::attribute::{StringAttribute, TypeAttribute};

    /// `func.func @main() -> tensor<f32>` returning a constant of type
    /// `constant`: a module that verifies when it is `tensor<f32>`.
    fn module_returning<'c>(cx: &'c Context, constant: &str, value: &str) -> Module<'c> {
        let loc = Location::unknown(cx);
        let module = Module::new(loc);
        let f32t = Type::parse(cx, "tensor<f32>").unwrap();
        let ct = Type::parse(cx, constant).unwrap();
        let block = Block::new(&[]);
        let c = block.append_operation(
            OperationBuilder::new("stablehlo.constant", loc)
                .add_results(&[ct])
                .add_attributes(&[(
                    Identifier::new(cx, "value"),
                    Attribute::parse(cx, &format!("dense<{value}> : {constant}")).unwrap(),
                )])
                .build()
                .unwrap(),
        );
        let c: V = unsafe { V::from_raw(c.result(0).unwrap().to_raw()) };
        block.append_operation(melior::dialect::func::r#return(&[c], loc));
        let region = Region::new();
        region.append_block(block);
        module.body().append_operation(melior::dialect::func::func(
            cx,
            StringAttribute::new(cx, "main"),
            TypeAttribute::new(FunctionType::new(cx, &[], &[f32t]).into()),
            region,
            &[],
            loc,
        ));
        module
    }

    #[test]
    fn a_module_is_printed_while_it_is_verified() {
        let cx = context();
        let module = module_returning(&cx, "tensor<f32>", "1.0");
        let text = write_verified(
            &module,
            2,
            false,
            &mut Timings::default(),
            || Ok(Vec::new()),
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "module {\n  func.func @main() -> tensor<f32> {\n    \
             %0 = \"stablehlo.constant\"() {value = dense<1.000000e+00> : tensor<f32>} \
             : () -> tensor<f32>\n    return %0 : tensor<f32>\n  }\n}\n"
        );
    }

    #[test]
    fn a_module_that_does_not_verify_is_not_written() {
        let cx = context();
        let reported: Arc<Mutex<Vec<String>>> = Arc::default();
        let sink = reported.clone();
        cx.attach_diagnostic_handler(move |d| {
            sink.lock().unwrap().push(d.to_string());
            true
        });
        // Returns a tensor<i32> from a function of tensor<f32>.
        let module = module_returning(&cx, "tensor<i32>", "1");
        for bytecode in [false, true] {
            let mut opened = false;
            let written = write_verified(&module, 2, bytecode, &mut Timings::default(), || {
                opened = true;
                Ok(Vec::new())
            });
            assert!(
                matches!(written, Err(Unwritten::NotVerified)),
                "{written:?}"
            );
            // The printer runs alongside the verifier; MLIR's writers after it.
            assert_eq!(opened, !bytecode);
        }
        let reported = reported.lock().unwrap();
        assert_eq!(reported.len(), 2, "{reported:?}");
        assert!(
            reported[0].contains("doesn't match function result type"),
            "{reported:?}"
        );
    }
}
