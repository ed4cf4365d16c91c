//! A check fed by the parser that shows each checked top-level equation of
//! the main jaxpr, with the analysis as it is right then, to a [`Checked`]
//! before it forgets it: `jaxpr build` lowers each equation there, while
//! the parser reads the next ones on its own thread.
//!
//! The checker keeps what `jaxpr check` keeps ([`super::diagnostics_streaming`]):
//! of each top-level equation, only its results' variables. The ids of the
//! rest are given again to the next equation's, so [`Checked::eqn`] says
//! from which variable id on ids are given again.

use super::{
    Analysis, Checker, EqnId, JaxprId, Mark, PIPELINE_BYTES, RefKind, VarRef, check_full,
    let_after_main, pipelined,
};
use jaxpr_syntax::diagnostics::Diagnostic;
use jaxpr_syntax::ast::{self, Jaxpr};
use jaxpr_types::VarId;

/// What sees the checked main jaxpr, piece by piece, in this order:
/// `begin`, `eqn` (each top-level equation), `end`. The check stops showing
/// at its first error (what follows may not lower), so one that saw `end`
/// saw everything of a file whose check found no error in its equations;
/// the caller still looks at the diagnostics (a syntax error, an error
/// about the outputs). `refs`: the references to variables in the piece
/// (in check order; [`uses_of`] sorts its uses).
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

/// The diagnostics of a whole-file check of `text` (its syntax errors, then
/// the checker's), as [`super::diagnostics_streaming`] finds them, showing
/// what it checks to `to` as it goes (see [`Checked`]). A file with a `let`
/// jaxpr after the main one is checked whole, and `to` sees no `end`.
pub fn parse_and_check_showing(text: &str, to: &mut dyn Checked) -> Vec<Diagnostic> {
    let mut sink = Showing {
        c: Checker::new(Analysis::default()),
        main: None,
        to,
        live: true,
        seen: 0,
        // At most one kept variable per line, but for the rare equation
        // with several results (a hint: tables still grow past it).
        lines: memchr::memchr_iter(b'\n', text.as_bytes()).count() + 1,
    };
    let parse = if text.len() < PIPELINE_BYTES {
        jaxpr_syntax::parse_streaming(text, &mut sink)
    } else {
        pipelined(text, &mut sink)
    };
    let file = parse.file;
    if let_after_main(&file) {
        let p = jaxpr_syntax::parse(text);
        let mut all = p.errors;
        all.extend(check_full(&p.file).0.diagnostics);
        return all;
    }
    match (sink.main, &file.main) {
        (Some(id), Some(m)) => {
            let mark = Mark::of(&sink.c.a);
            sink.c.end_jaxpr(id, m);
            sink.c.check_symbol_scope(&file);
            if parse.errors.iter().all(|d| !d.is_error()) && sink.clean() {
                let a = &sink.c.a;
                sink.to.end(a, id, &m.outvars, &a.refs[mark.refs..]);
            }
        }
        // No main jaxpr was begun: its header did not parse.
        _ => {
            sink.c.check_lets(&file.lets);
            sink.c.check_symbol_scope(&file);
        }
    }
    let mut all = parse.errors;
    all.append(&mut sink.c.a.diagnostics);
    all
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

struct Showing<'t> {
    c: Checker,
    main: Option<JaxprId>,
    to: &'t mut dyn Checked,
    /// Whether the check still shows what it checks: not after an error.
    live: bool,
    /// How many diagnostics were looked at for errors.
    seen: usize,
    /// Lines of the text: how many variables the check may keep.
    lines: usize,
}

impl Showing<'_> {
    /// Whether the check is still showing, after looking for errors among
    /// the diagnostics found since the last look.
    fn clean(&mut self) -> bool {
        let found = &self.c.a.diagnostics[self.seen..];
        if found.iter().any(|d| d.is_error()) {
            self.live = false;
        }
        self.seen = self.c.a.diagnostics.len();
        self.live
    }
}

impl jaxpr_syntax::MainSink for Showing<'_> {
    fn begin(&mut self, lets: &[ast::LetJaxpr], main: &Jaxpr) {
        self.c.reserve_kept(self.lines);
        self.to.reserve(self.lines);
        let id = self.c.begin_main(lets, main);
        self.main = Some(id);
        if self.clean() {
            self.to.begin(&self.c.a, lets, id, &self.c.a.refs);
        }
    }

    fn eqn(&mut self, e: ast::Eqn) -> Option<ast::Eqn> {
        let Some(main) = self.main else {
            return Some(e);
        };
        let mark = Mark::of(&self.c.a);
        let id = self.c.check_eqn(&e, main);
        if self.clean() {
            let a = &self.c.a;
            self.to.eqn(a, &e, id, mark.vars, &a.refs[mark.refs..]);
        }
        let results = self.c.results_of(&mark, id);
        self.c.forget_eqn(&mark, results);
        Some(e)
    }
}

/// What `jaxpr check` shows the checked pieces to: nothing.
pub(super) struct Unseen;

impl Checked for Unseen {
    fn begin(&mut self, _: &Analysis, _: &[ast::LetJaxpr], _: JaxprId, _: &[VarRef]) {}
    fn eqn(&mut self, _: &Analysis, _: &ast::Eqn, _: EqnId, _: usize, _: &[VarRef]) {}
    fn end(&mut self, _: &Analysis, _: JaxprId, _: &[ast::Atom], _: &[VarRef]) {}
}
