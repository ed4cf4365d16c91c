//! From a checked file (or its text, checked as it is lowered) to a
//! verified module written as it is printed.

use super::{Lower, LowerState, Lowered, Timings, print};
use crate::lower::MainHead;
use jaxpr_check::{self as check, Analysis, EqnId, JaxprId, VarRef};
use jaxpr_lower::{Failure, LowerResult, Syntax};
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast::{self, Atom};
use jaxpr_syntax::diagnostics::{DiagKind, Diagnostic};
use melior::Context;
use melior::ir::operation::OperationLike;
use melior::ir::{Location, Module};
use std::io::Write;
use std::sync::{Arc, Mutex};

/// What a lowering starts from.
pub(crate) enum Source<'f> {
    Checked {
        file: &'f ast::SourceFile,
        a: &'f Analysis,
    },
    Text(&'f str),
}

pub(crate) fn lower_source_into<W: Write>(
    source: Source,
    opts: crate::Options,
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
        let st = LowerState {
            threefry: opts.threefry,
            ..LowerState::default()
        };
        let module = Module::new(Location::unknown(&cx));
        let lowered = match source {
            Source::Checked { file, a } => {
                let syntax = Syntax::new(file, a);
                Lower::new(&cx, a, &syntax, &st)
                    .main(&module)
                    .map(|()| true)
            }
            Source::Text(text) => lower_text(&cx, &st, &module, text)?,
        };
        if !lowered.map_err(|e| Failure::Diagnostics(vec![e.into_diagnostic()]))? {
            return Ok(None);
        }
        if let Some(devices) = st.partitions.get() {
            super::multi_device::annotate_module(&cx, &module, devices)
                .map_err(|e| Failure::Diagnostics(vec![e.into_diagnostic()]))?;
        }
        t.lower = lap();
        match write_verified(&module, st.ops.get(), opts.bytecode(), t, open) {
            Ok(out) => Ok(Some((out, keep(module)))),
            Err(Unwritten::Io(e)) => Err(Failure::Io(e)),
            Err(Unwritten::NotVerified) => {
                let msgs = messages.lock().map(|m| m.join("; ")).unwrap_or_default();
                Err(Failure::Diagnostics(vec![
                    Diagnostic::error(
                        DiagKind::InternalError,
                        whole,
                        format!("the lowered module does not verify: {msgs}"),
                    )
                    .with_help(jaxpr_lower::INTERNAL_ERROR_HELP),
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
pub(crate) fn lower_text<'c>(
    cx: &'c Context,
    st: &LowerState<'c>,
    module: &Module<'c>,
    text: &str,
) -> Result<LowerResult<bool>, Failure> {
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
pub(crate) struct LowerAsChecked<'c, 'a> {
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
    outcome: LowerResult<bool>,
}

impl<'c> check::Checked for LowerAsChecked<'c, '_> {
    fn reserve(&mut self, vars: usize) {
        self.st.reserve_vars(vars);
    }

    fn begin(&mut self, a: &Analysis, lets: &[ast::LetJaxpr], main: JaxprId, refs: &[VarRef]) {
        let lets = self.lets.get_or_init(|| lets.to_vec());
        self.top_jaxprs = a.jaxprs.len();
        let syntax = self
            .syntax
            .insert(Syntax::of_lets(lets, check::uses_of(refs)));
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
        let syntax = Syntax::of_eqn(lets, Some(e), check::uses_of(refs));
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
        let syntax = Syntax::of_eqn(lets, None, check::uses_of(refs));
        self.outcome = Lower::new(self.cx, a, &syntax, self.st)
            .end_main(self.module, head, main, outvars)
            .map(|()| true);
    }
}

/// Why a module was not written.
#[derive(Debug)]
pub(crate) enum Unwritten {
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
///
/// MLIR's writers (bytecode, its printer) make attributes while they run:
/// they run after the verifier.
pub(crate) fn write_verified<W: Write>(
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
pub(crate) fn keep(module: Module) -> mlir_sys::MlirModule {
    let raw = module.to_raw();
    std::mem::forget(module);
    raw
}

/// The module to verify on another thread.
pub(crate) struct Verifying(mlir_sys::MlirOperation);

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
pub(crate) fn context() -> Context {
    let cx = Context::new_with_threading(false);
    melior::dialect::DialectHandle::func().load_dialect(&cx);
    cx.set_allow_unregistered_dialects(true);
    cx
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ModuleValue;
    use melior::ir::attribute::{Attribute, StringAttribute, TypeAttribute};
    use melior::ir::operation::OperationBuilder;
    use melior::ir::r#type::FunctionType;
    use melior::ir::{Block, BlockLike, Identifier, Region, RegionLike, Type, ValueLike};

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
        let c: ModuleValue = unsafe { ModuleValue::from_raw(c.result(0).unwrap().to_raw()) };
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
