//! Answers read from an earlier whole-file analysis while the current text
//! differs from it only inside some top-level equations, of the main jaxpr
//! or of `let` jaxprs ([`jaxpr_db::earlier`]): everything else reads and
//! means the same, so an answer that depends only on that is the current
//! answer with its ranges moved. Anything else returns `None`,
//! and the caller asks the current analysis.

use crate::{FileView, NavTarget, Target, definition, hover, target_at, var_hover};
use jaxpr_check::{JaxprOrigin, VarRole};
use jaxpr_syntax::TextRange;
use jaxpr_types::VarId;

/// A view of an earlier text and how the current one differs from it.
#[derive(Clone, Copy)]
pub struct EarlierView<'a> {
    pub view: FileView<'a>,
    /// The bytes of the earlier text that changed (whole top-level
    /// equations), in text order, each with how many bytes longer it is now.
    pub changes: &'a [jaxpr_db::earlier::Change],
    /// The operand at a current offset inside a changed equation and the
    /// earlier variable it names, where that is known
    /// ([`jaxpr_db::earlier::edited_operand`]).
    pub edited_operand: Option<&'a dyn Fn(u32) -> Option<(TextRange, VarId)>>,
}

impl<'a> EarlierView<'a> {
    pub fn of(e: &'a jaxpr_db::Earlier) -> EarlierView<'a> {
        EarlierView {
            view: FileView {
                text: &e.text,
                parse: &e.parse,
                analysis: &e.analysis,
                lines: &e.lines,
            },
            changes: &e.changes,
            edited_operand: None,
        }
    }

    /// The earlier offset of current offset `now`, outside the changes.
    fn to_earlier(&self, now: u32) -> Option<u32> {
        let mut moved = 0;
        for &(old, grew) in self.changes {
            if (now as i64) < old.start as i64 + moved {
                break;
            }
            if now as i64 <= old.end as i64 + moved + grew {
                return None;
            }
            moved += grew;
        }
        Some((now as i64 - moved) as u32)
    }

    /// Where earlier range `r` is now, if it lies outside the changes.
    fn to_now(&self, r: TextRange) -> Option<TextRange> {
        let mut moved = 0;
        for &(old, grew) in self.changes {
            if r.end < old.start {
                break;
            }
            if r.start <= old.end {
                return None;
            }
            moved += grew;
        }
        let d = |o: u32| (o as i64 + moved) as u32;
        Some(TextRange::new(d(r.start), d(r.end)))
    }

    /// The earlier ranges variable `v`'s hover and definition read (its
    /// binder, the equation or call site that binds it, its jaxpr's
    /// origin) lie outside the changes.
    fn var_answer_unchanged(&self, v: VarId) -> bool {
        let a = self.view.analysis;
        let info = a.var(v);
        let mut reads = vec![info.range, info.binder_range];
        if let VarRole::Result { eqn, .. } = info.role {
            reads.push(a.eqn(eqn).primitive_range);
        }
        if let JaxprOrigin::Param { eqn, .. } = a.jaxpr(info.jaxpr).origin {
            reads.push(a.eqn(eqn).primitive_range);
        }
        if let Some(o) = a.origins.get(&v) {
            reads.push(o.operand);
        }
        reads.iter().all(|r| self.to_now(*r).is_some())
    }

    /// The variable at current offset `offset` whose answers the earlier
    /// analysis gives: the occurrence's current range and the variable,
    /// and the earlier offset to ask at (None for an operand of a changed
    /// equation, answered from the variable alone). Other targets read
    /// more (symbols are file-wide, jaxprs and primitives their whole item).
    fn answerable(&self, offset: u32) -> Option<(TextRange, VarId, Option<u32>)> {
        let (now, v, at) = match self.to_earlier(offset) {
            Some(at) => {
                let (range, Target::Var(v)) = target_at(self.view.analysis, at)? else {
                    return None;
                };
                (self.to_now(range)?, v, Some(at))
            }
            None => {
                let (now, v) = (self.edited_operand?)(offset)?;
                (now, v, None)
            }
        };
        self.var_answer_unchanged(v).then_some((now, v, at))
    }

    /// [`hover`] at current offset `offset` from the earlier analysis;
    /// None when it cannot answer for the current text.
    pub fn hover(&self, offset: u32) -> Option<Option<(TextRange, String)>> {
        let (now, v, at) = self.answerable(offset)?;
        Some(match at {
            Some(at) => hover(&self.view, at).map(|(_, md)| (now, md)),
            None => Some((now, var_hover(&self.view, v))),
        })
    }

    /// [`definition`] at current offset `offset` from the earlier analysis;
    /// None when it cannot answer for the current text.
    pub fn definition(&self, offset: u32) -> Option<Option<NavTarget>> {
        let (_, v, at) = self.answerable(offset)?;
        let here = |r| self.to_now(r).map(NavTarget::Here);
        Some(match at.map(|at| definition(self.view.analysis, at)) {
            Some(Some(NavTarget::Here(r))) => Some(here(r)?),
            Some(other) => other,
            None => Some(here(self.view.analysis.var(v).range)?),
        })
    }
}
