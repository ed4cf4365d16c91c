//! The one check entry, [`check_source`]: every caller (the database's
//! whole-file analysis, `jaxpr check`, `jaxpr types`, both builds) checks a
//! file through it, and says what it wants kept ([`Keep`]). The order of
//! the check and what spans equations (the `let` jaxprs before the main
//! one, the main jaxpr's binders, each top-level equation, its outputs,
//! the symbolic-dimension scope, a `let` after the main jaxpr, a file
//! without one) is written once here, whatever feeds the equations: a
//! syntax tree, the parser as it reads them, or the parser on a thread of
//! its own for a large text.
//!
//! What is not kept is forgotten as the check goes: of each top-level
//! equation of the main jaxpr only its results' variables stay (what a
//! later equation can read), and the ids of the rest are given again to
//! the next equation's, so [`Checked::eqn`] says from which variable id on
//! ids are given again. The memory of such a check is about the size of the
//! `let` jaxprs and the main jaxpr's variables, not the syntax tree's plus
//! the whole analysis'.

use crate::checker::Checker;
use crate::mark::Mark;
use crate::sharp::{SharpBits, SharpConfig};
use crate::{Analysis, EqnId, Extras, JaxprId, RefKind, VarRef};
use jaxpr_syntax::Parse;
use jaxpr_syntax::ast::{self, Jaxpr};
use jaxpr_syntax::diagnostics::Diagnostic;
use jaxpr_types::VarId;

/// What a check starts from.
#[derive(Clone, Copy)]
pub enum Source<'t> {
    /// A text, parsed as it is checked (on a thread of its own from
    /// [`PIPELINE_BYTES`] on). The syntax tree carries no comments (as
    /// [`jaxpr_syntax::parse_streaming`]'s), so the analysis has no
    /// equation source info.
    Text(&'t str),
    /// A syntax tree parsed whole (with comments) by the caller.
    Tree(&'t ast::SourceFile),
}

/// What the caller keeps of the check.
pub enum Keep<'k> {
    /// The whole analysis, every occurrence in text order (and, of a text,
    /// the whole syntax tree): editor questions, the native build.
    Everything,
    /// The diagnostics (`jaxpr check`).
    Diagnostics,
    /// The diagnostics, each checked piece shown to a [`Checked`] before it
    /// is forgotten (the StableHLO build lowers each top-level equation
    /// there, while the parser reads the next ones).
    Shown(&'k mut dyn Checked),
}

/// What a check found, and what it kept.
#[derive(Debug)]
pub struct Outcome {
    /// The parse of a [`Source::Text`]: its syntax errors, and its tree
    /// (without the main jaxpr's equations unless everything was kept).
    pub parse: Option<Parse>,
    /// Everything the check learnt ([`Keep::Everything`]), or what was not
    /// forgotten, with every diagnostic of the checker.
    pub analysis: Analysis,
    pub extras: Extras,
}

impl Outcome {
    /// The parse and the analysis (of a [`Source::Tree`], which its caller
    /// holds, an empty parse).
    pub fn parsed(self) -> (Parse, Analysis) {
        let parse = self.parse.unwrap_or_else(|| Parse {
            file: ast::SourceFile::default(),
            errors: Vec::new(),
            text: "".into(),
        });
        (parse, self.analysis)
    }

    /// The syntax errors, then the checker's diagnostics (unsorted).
    pub fn diagnostics(self) -> Vec<Diagnostic> {
        let mut all = self.parse.map(|p| p.errors).unwrap_or_default();
        all.extend(self.analysis.diagnostics);
        all
    }
}

/// What sees the checked main jaxpr, piece by piece, in this order:
/// `begin`, `eqn` (each top-level equation), `end`. The check stops showing
/// at its first error (what follows may not lower), so one that saw `end`
/// saw everything of a file whose check found no error in its equations;
/// the caller still looks at the diagnostics (a syntax error, an error
/// about the outputs). A text with a `let` jaxpr after the main one is
/// checked whole, and shows nothing. `refs`: the references to variables
/// in the piece (in check order; [`uses_of`] sorts its uses).
pub trait Checked {
    /// About how many variables the check will keep (see
    /// [`Checker::reserve_kept`]), before `begin`: room for tables by
    /// variable, made once.
    fn reserve(&mut self, _vars: usize) {}
    /// The `let` jaxprs are checked and the main jaxpr's binders bound.
    fn begin(&mut self, a: &Analysis, lets: &[ast::LetJaxpr], main: JaxprId, refs: &[VarRef]);
    /// Top-level equation `e` of the main jaxpr is checked, as `id`. Ids of
    /// variables from `reused` on were given before, to what an earlier
    /// equation's check added and the checker forgot.
    fn eqn(&mut self, a: &Analysis, e: &ast::Eqn, id: EqnId, reused: usize, refs: &[VarRef]);
    /// The main jaxpr's outputs are checked (its info is complete).
    fn end(&mut self, a: &Analysis, main: JaxprId, outvars: &[ast::Atom], refs: &[VarRef]);
}

/// Checks `source`, keeping what `keep` says.
pub fn check_source(source: Source, keep: Keep) -> Outcome {
    match source {
        Source::Tree(file) => {
            let mut run = Run::new(
                keep,
                Checker::for_jaxprs(file.lets.iter().map(|l| &l.jaxpr).chain(&file.main)),
            );
            if let Some(m) = &file.main {
                run.begin(&file.lets, m);
                for e in &m.eqns {
                    jaxpr_syntax::interrupt::checkpoint();
                    run.eqn(e);
                }
            }
            run.end(file, true)
        }
        Source::Text(text) => {
            let forgets = !matches!(keep, Keep::Everything);
            let mut run = Run::new(keep, Checker::new(Analysis::default()));
            if forgets {
                // At most one kept variable per line, but for the rare
                // equation with several results (a hint: tables still
                // grow past it).
                run.reserve = memchr::memchr_iter(b'\n', text.as_bytes()).count() + 1;
            }
            let mut parse = if text.len() < PIPELINE_BYTES {
                jaxpr_syntax::parse_streaming(text, &mut run)
            } else {
                pipelined(text, &mut run)
            };
            if let_after_main(&parse.file) {
                // `let`s are checked before the main jaxpr wherever they
                // are, but a check fed by the parser has checked only the
                // ones before it: such a (rare) file is checked whole.
                let whole = jaxpr_syntax::parse(text);
                let keep = match run.keep {
                    Keeping::Shown { .. } => Keep::Diagnostics,
                    Keeping::Everything(_) => Keep::Everything,
                    Keeping::Diagnostics => Keep::Diagnostics,
                };
                let mut out = check_source(Source::Tree(&whole.file), keep);
                out.parse = Some(whole);
                return out;
            }
            if let Keeping::Everything(eqns) = &mut run.keep {
                if let Some(m) = &mut parse.file.main {
                    m.eqns = std::mem::take(eqns).into_boxed_slice();
                }
                // The whole tree is kept, and with it the text its ranges
                // index (a streamed parse keeps no copy).
                parse.text = text.into();
            }
            let syntax_ok = parse.errors.iter().all(|d| !d.is_error());
            let mut out = run.end(&parse.file, syntax_ok);
            out.parse = Some(parse);
            out
        }
    }
}

/// Whether a `let` jaxpr follows the main one.
fn let_after_main(file: &ast::SourceFile) -> bool {
    file.main
        .as_ref()
        .is_some_and(|m| file.lets.iter().any(|l| l.range.start > m.range.start))
}

/// The uses of variables among `refs` (start of the name, variable),
/// sorted by position.
pub fn uses_of(refs: &[VarRef]) -> Vec<(u32, VarId)> {
    let mut uses: Vec<(u32, VarId)> = refs
        .iter()
        .filter(|r| r.kind == RefKind::Use)
        .map(|r| (r.range.start, r.var))
        .collect();
    uses.sort_unstable_by_key(|&(at, _)| at);
    uses
}

/// A check in progress: the checker and what it keeps.
struct Run<'k> {
    c: Checker,
    main: Option<JaxprId>,
    keep: Keeping<'k>,
    /// How many variables a forgetting check may keep (0: no hint).
    reserve: usize,
    /// The sharp-bits rules, fed each checked piece.
    sharp: SharpBits,
}

enum Keeping<'k> {
    /// The main jaxpr's equations the parser handed over, to give back
    /// to its tree.
    Everything(Vec<ast::Eqn>),
    Diagnostics,
    Shown {
        to: &'k mut dyn Checked,
        /// Whether the check still shows what it checks: not after an error.
        live: bool,
        /// How many diagnostics were looked at for errors.
        seen: usize,
    },
}

/// What a [`Keep::Shown`] check still shows to, after looking for errors
/// among the diagnostics of `a` found since the last look: nothing after
/// the first.
fn showing<'s, 'k>(keep: &'s mut Keeping<'k>, a: &Analysis) -> Option<&'s mut (dyn Checked + 'k)> {
    let Keeping::Shown { to, live, seen } = keep else {
        return None;
    };
    if a.diagnostics[*seen..].iter().any(|d| d.is_error()) {
        *live = false;
    }
    *seen = a.diagnostics.len();
    if *live { Some(&mut **to) } else { None }
}

impl<'k> Run<'k> {
    fn new(keep: Keep<'k>, c: Checker) -> Run<'k> {
        let keep = match keep {
            Keep::Everything => Keeping::Everything(Vec::new()),
            Keep::Diagnostics => Keeping::Diagnostics,
            Keep::Shown(to) => Keeping::Shown {
                to,
                live: true,
                seen: 0,
            },
        };
        Run {
            c,
            main: None,
            keep,
            reserve: 0,
            sharp: SharpBits::new(SharpConfig::default()),
        }
    }

    /// The `let` jaxprs, then the main jaxpr's binders.
    fn begin(&mut self, lets: &[ast::LetJaxpr], main: &Jaxpr) {
        if self.reserve > 0 {
            self.c.reserve_kept(self.reserve);
            if let Keeping::Shown { to, .. } = &mut self.keep {
                to.reserve(self.reserve);
            }
        }
        let id = self.c.begin_main(lets, main);
        self.main = Some(id);
        let a = &self.c.a;
        self.sharp.begin(a, lets, main, &a.refs);
        if let Some(to) = showing(&mut self.keep, a) {
            to.begin(a, lets, id, &a.refs);
        }
    }

    /// One top-level equation of the main jaxpr.
    fn eqn(&mut self, e: &ast::Eqn) {
        let Some(main) = self.main else { return };
        let mark = Mark::of(&self.c.a);
        let id = self.c.check_eqn(e, main);
        self.sharp.eqn(&self.c.a, e, &self.c.a.refs[mark.refs..]);
        if let Keeping::Everything(_) = self.keep {
            self.c.a.jaxprs[main.0 as usize].eqns.push(id);
            return;
        }
        let a = &self.c.a;
        if let Some(to) = showing(&mut self.keep, a) {
            to.eqn(a, e, id, mark.vars, &a.refs[mark.refs..]);
        }
        let results = self.c.results_of(&mark, id);
        self.c.forget_eqn(&mark, results);
    }

    /// The main jaxpr's outputs and the file-wide rules, once every
    /// equation was checked; `file` is the tree (with the main jaxpr's
    /// equations when they are kept).
    fn end(mut self, file: &ast::SourceFile, syntax_ok: bool) -> Outcome {
        match (self.main, &file.main) {
            (Some(id), Some(m)) => {
                let mark = Mark::of(&self.c.a);
                self.c.end_jaxpr(id, m);
                self.c.check_symbol_scope(file);
                let a = &self.c.a;
                if let Some(to) = showing(&mut self.keep, a)
                    && syntax_ok
                {
                    to.end(a, id, &m.outvars, &a.refs[mark.refs..]);
                }
            }
            // No main jaxpr was begun: there is none, or its header did
            // not parse.
            _ => {
                self.c.check_lets(&file.lets);
                self.c.check_symbol_scope(file);
            }
        }
        let mut c = self.c;
        c.a.diagnostics.extend(self.sharp.finish());
        let extras = Extras {
            unknown_uses: std::mem::take(&mut c.unknown_uses),
            bad_dims: !c.bad_dims.is_empty(),
        };
        if let Keeping::Everything(_) = self.keep {
            c.a.index_positions();
        }
        Outcome {
            parse: None,
            analysis: c.a,
            extras,
        }
    }
}

impl jaxpr_syntax::MainSink for Run<'_> {
    fn begin(&mut self, lets: &[ast::LetJaxpr], main: &Jaxpr) {
        Run::begin(self, lets, main);
    }

    fn eqn(&mut self, e: ast::Eqn) -> Option<ast::Eqn> {
        if self.main.is_none() {
            return Some(e);
        }
        Run::eqn(self, &e);
        match &mut self.keep {
            Keeping::Everything(eqns) => {
                eqns.push(e);
                None
            }
            _ => Some(e),
        }
    }
}

/// Texts from this size on are parsed on a thread of their own while the
/// equations read so far are checked (the parse is about 40% of a check).
pub const PIPELINE_BYTES: usize = 1 << 20;

/// Equations handed from the parsing thread to the checking one at a time,
/// and how many such batches may wait: what bounds the syntax in memory.
const BATCH: usize = 128;
const BATCHES_WAITING: usize = 2;

/// What the parsing thread hands over.
enum Piece {
    Begin(Vec<ast::LetJaxpr>, Jaxpr),
    Eqns(Vec<ast::Eqn>),
}

/// [`jaxpr_syntax::parse_streaming`] on a thread of its own, `sink` fed on
/// this one. The equations the sink gives back go back to the parsing
/// thread to be freed: it allocated them (a free from another thread costs
/// more in the allocator), and it is the less busy thread.
fn pipelined(text: &str, sink: &mut dyn jaxpr_syntax::MainSink) -> Parse {
    let (tx, rx) = std::sync::mpsc::sync_channel(BATCHES_WAITING);
    let (back, returned) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        let parser = s.spawn(move || {
            let mut handoff = Handoff {
                tx,
                batch: Vec::with_capacity(BATCH),
                returned,
            };
            let parse = jaxpr_syntax::parse_streaming(text, &mut handoff);
            handoff.send_batch();
            let Handoff { tx, returned, .. } = handoff;
            drop(tx);
            // What the checker gives back from now on, until it is done.
            returned.into_iter().for_each(drop);
            parse
        });
        for piece in rx {
            match piece {
                Piece::Begin(lets, main) => sink.begin(&lets, &main),
                Piece::Eqns(eqns) => {
                    let done: Vec<ast::Eqn> =
                        eqns.into_iter().filter_map(|e| sink.eqn(e)).collect();
                    // Fails only once the parsing thread is gone (unwinding).
                    let _ = back.send(done);
                }
            }
        }
        drop(back);
        parser
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e))
    })
}

/// The parsing thread's sink: batches of equations to the checking thread.
/// (A send fails only once the checking thread is gone, unwinding.)
struct Handoff {
    tx: std::sync::mpsc::SyncSender<Piece>,
    batch: Vec<ast::Eqn>,
    /// Batches the checking thread is done with, to free here; a batch's
    /// vector is used again for the next one.
    returned: std::sync::mpsc::Receiver<Vec<ast::Eqn>>,
}

impl Handoff {
    fn send_batch(&mut self) {
        let mut next = None;
        while let Ok(mut done) = self.returned.try_recv() {
            done.clear();
            next = Some(done);
        }
        let next = next.unwrap_or_else(|| Vec::with_capacity(BATCH));
        let eqns = std::mem::replace(&mut self.batch, next);
        if !eqns.is_empty() {
            let _ = self.tx.send(Piece::Eqns(eqns));
        }
    }
}

impl jaxpr_syntax::MainSink for Handoff {
    fn begin(&mut self, lets: &[ast::LetJaxpr], main: &Jaxpr) {
        let _ = self.tx.send(Piece::Begin(lets.to_vec(), main.clone()));
    }

    fn eqn(&mut self, eqn: ast::Eqn) -> Option<ast::Eqn> {
        self.batch.push(eqn);
        if self.batch.len() == BATCH {
            self.send_batch();
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records what a [`Keep::Shown`] check shows.
    #[derive(Default)]
    struct Log(Vec<String>);

    impl Checked for Log {
        fn begin(&mut self, a: &Analysis, lets: &[ast::LetJaxpr], main: JaxprId, _: &[VarRef]) {
            let binders = a.jaxpr(main).invars.len();
            self.0
                .push(format!("begin {} lets, {binders} binders", lets.len()));
        }
        fn eqn(&mut self, a: &Analysis, e: &ast::Eqn, id: EqnId, _: usize, _: &[VarRef]) {
            assert_eq!(a.eqn(id).primitive, e.primitive.text);
            self.0.push(format!("eqn {}", e.primitive.text));
        }
        fn end(&mut self, a: &Analysis, main: JaxprId, outvars: &[ast::Atom], _: &[VarRef]) {
            assert_eq!(a.jaxpr(main).outs.len(), outvars.len());
            self.0.push("end".into());
        }
    }

    fn sorted(mut d: Vec<Diagnostic>) -> Vec<Diagnostic> {
        d.sort_by_key(|d| (d.range.start, d.severity, d.kind));
        d
    }

    /// Every way in and every way of keeping finds the same diagnostics, and
    /// a text kept whole gives the analysis of its tree (but source info).
    #[test]
    fn every_source_and_keep_finds_the_same() {
        let texts = [
            "{ lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n    c:f32[3] = mul b a\n  in (c,) }\n",
            "{ lambda ; a:f32[3]. let\n    b:f32[3] = sin x\n    c:f32[4] = mul b a\n  in (c,) }\n",
            "let f = { lambda ; x:f32[]. let  in (x,) } in\n{ lambda ; a:f32[]. let\n    b:f32[] = pjit[name=f jaxpr=f] a\n  in (b,) }\n",
            "{ lambda ; a:f32[]. let\n    b:f32[] = pjit[name=f jaxpr=f] a\n  in (b,) }\nlet f = { lambda ; x:f32[]. let  in (x,) } in\n",
            "let f = { lambda ; x:f32[]. let  in (x,) } in\n",
            "{ lambda ; a:f32[ . let\n    b:f32[] = sin a\n  in (b,) }\n",
            "{ lambda ; a:f32[v]. let\n    b:f32[w] = sin a\n  in (b,) }\n",
            // Sharp bits span equations: a key consumed twice, a constant index.
            "let f = { lambda ; k:key<fry>[]. let b:u32[2] = random_bits[bit_width=32 shape=(2,)] k in (b,) } in\n{ lambda ; a:key<fry>[] x:f32[5]. let\n    b:u32[2] = jit[name=f jaxpr=f] a\n    c:i32[] = add 3:i32[] 4:i32[]\n    d:f32[2] = dynamic_slice[slice_sizes=(2,)] x c\n    e:u32[2] = random_bits[bit_width=32 shape=(2,)] a\n  in (b, d, e) }\n",
        ];
        for text in texts {
            let whole = jaxpr_syntax::parse(text);
            let tree = check_source(Source::Tree(&whole.file), Keep::Everything);
            let mut want = whole.errors.clone();
            want.extend(tree.analysis.diagnostics.clone());
            let want = sorted(want);
            let (parse, analysis) = check_source(Source::Text(text), Keep::Everything).parsed();
            assert_eq!(parse.errors, whole.errors, "{text}");
            let mut a = analysis.clone();
            let mut b = tree.analysis.clone();
            for e in a.eqns.iter_mut().chain(b.eqns.iter_mut()) {
                e.source_info = None;
            }
            assert_eq!(a, b, "{text}");
            for keep in [Keep::Diagnostics, Keep::Shown(&mut Log::default())] {
                let got = check_source(Source::Text(text), keep).diagnostics();
                assert_eq!(sorted(got), want, "{text}");
            }
            let got = check_source(Source::Tree(&whole.file), Keep::Diagnostics);
            assert_eq!(
                sorted(got.analysis.diagnostics),
                sorted(tree.analysis.diagnostics)
            );
        }
    }

    /// A shown check shows the `let`s and binders, each equation, then the
    /// outputs, and stops at the first error.
    #[test]
    fn a_shown_check_shows_each_piece_until_the_first_error() {
        let mut log = Log::default();
        let text =
            "{ lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n    c:f32[3] = cos b\n  in (c,) }\n";
        let d = check_source(Source::Text(text), Keep::Shown(&mut log)).diagnostics();
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(
            log.0,
            ["begin 0 lets, 1 binders", "eqn sin", "eqn cos", "end"]
        );
        let mut log = Log::default();
        let text = text.replace("sin a", "sin x");
        let d = check_source(Source::Text(&text), Keep::Shown(&mut log)).diagnostics();
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(log.0, ["begin 0 lets, 1 binders"]);
    }
}
