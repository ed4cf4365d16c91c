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
    /// The variable at a current offset inside a changed equation, read
    /// against the earlier analysis, where that is known
    /// ([`jaxpr_db::earlier::edited_variable`]).
    pub edited_variable: Option<&'a dyn Fn(u32) -> Option<jaxpr_db::earlier::EditedVar>>,
}

impl<'a> EarlierView<'a> {
    pub fn of(e: &'a jaxpr_db::Earlier) -> EarlierView<'a> {
        EarlierView {
            view: FileView {
                text: &e.text,
                parse: &e.parse,
                analysis: &e.analysis,
                lines: &e.lines,
                costs: None,
            },
            changes: &e.changes,
            edited_variable: None,
        }
    }

    /// The earlier offset of current offset `now`, outside the changes.
    fn to_earlier(self, now: u32) -> Option<u32> {
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
    fn to_now(self, r: TextRange) -> Option<TextRange> {
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
    /// analysis gives: the occurrence's current range, the variable, and
    /// where its answers come from. Other targets read more (symbols are
    /// file-wide, jaxprs and primitives their whole item).
    fn answerable(&self, offset: u32) -> Option<(TextRange, VarId, Source)> {
        match self.to_earlier(offset) {
            Some(at) => {
                let (range, Target::Var(v)) = target_at(self.view.analysis, at)? else {
                    return None;
                };
                let now = self.to_now(range)?;
                self.var_answer_unchanged(v)
                    .then_some((now, v, Source::At(at)))
            }
            None => {
                let e = (self.edited_variable?)(offset)?;
                match e.bound_by {
                    // A binder of a changed equation: its answers read its
                    // name, type and jaxpr (the main one), as they were.
                    Some(bound_by) => Some((e.range, e.var, Source::Binder(bound_by))),
                    None => (self.var_answer_unchanged(e.var)).then_some((
                        e.range,
                        e.var,
                        Source::Operand,
                    )),
                }
            }
        }
    }

    /// [`hover`] at current offset `offset` from the earlier analysis;
    /// None when it cannot answer for the current text.
    pub fn hover(&self, offset: u32) -> Option<Option<(TextRange, String)>> {
        let (now, v, source) = self.answerable(offset)?;
        Some(match source {
            Source::At(at) => hover(&self.view, at).map(|(_, md)| (now, md)),
            Source::Operand => Some((now, var_hover(&self.view, v, None))),
            Source::Binder((primitive, line)) => {
                Some((now, var_hover(&self.view, v, Some((&primitive, line)))))
            }
        })
    }

    /// [`definition`] at current offset `offset` from the earlier analysis;
    /// None when it cannot answer for the current text.
    pub fn definition(&self, offset: u32) -> Option<Option<NavTarget>> {
        let (now, v, source) = self.answerable(offset)?;
        let here = |r| self.to_now(r).map(NavTarget::Here);
        Some(match source {
            Source::At(at) => match definition(self.view.analysis, at) {
                Some(NavTarget::Here(r)) => Some(here(r)?),
                other => other,
            },
            Source::Operand => Some(here(self.view.analysis.var(v).range)?),
            // A binder of the main jaxpr (which receives no call-site operand).
            Source::Binder(_) => Some(NavTarget::Here(now)),
        })
    }
}

/// Where the answers on a variable come from.
enum Source {
    /// The earlier analysis at this earlier offset.
    At(u32),
    /// The variable an operand of a changed equation names.
    Operand,
    /// A binder of a changed equation, whose primitive is now this one, on
    /// this line (from 0).
    Binder((jaxpr_syntax::ast::SmolStr, u32)),
}
