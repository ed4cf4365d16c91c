//! Answers read from an earlier whole-file analysis while the current text
//! differs from it only inside some top-level equations, of the main jaxpr
//! or of `let` jaxprs ([`jaxpr_db::earlier`]): everything else reads and
//! means the same, so an answer that depends only on that is the current
//! answer with its ranges moved. Anything else returns `None`,
//! and the caller asks the current analysis.

use crate::{FileView, NavTarget, Target, definition, hover, target_at};
use jaxpr_check::{JaxprOrigin, VarRole};
use jaxpr_syntax::TextRange;

/// A view of an earlier text and how the current one differs from it.
#[derive(Clone, Copy)]
pub struct EarlierView<'a> {
    pub view: FileView<'a>,
    /// The bytes of the earlier text that changed (whole top-level
    /// equations), in text order, each with how many bytes longer it is now.
    pub changes: &'a [jaxpr_db::earlier::Change],
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

    /// The earlier ranges a variable's hover and definition read (its
    /// binder, the equation or call site that binds it, its jaxpr's
    /// origin), or None for a target whose answer reads more (symbols are
    /// file-wide, jaxprs and primitives read their whole item).
    fn var_answer_reads(&self, offset: u32) -> Option<(Vec<TextRange>, u32)> {
        let a = self.view.analysis;
        let offset = self.to_earlier(offset)?;
        let (range, Target::Var(v)) = target_at(a, offset)? else {
            return None;
        };
        let info = a.var(v);
        let mut reads = vec![range, info.range, info.binder_range];
        if let VarRole::Result { eqn, .. } = info.role {
            reads.push(a.eqn(eqn).primitive_range);
        }
        if let JaxprOrigin::Param { eqn, .. } = a.jaxpr(info.jaxpr).origin {
            reads.push(a.eqn(eqn).primitive_range);
        }
        if let Some(o) = a.origins.get(&v) {
            reads.push(o.operand);
        }
        Some((reads, offset))
    }

    fn answerable(&self, offset: u32) -> Option<u32> {
        let (reads, offset) = self.var_answer_reads(offset)?;
        reads
            .iter()
            .all(|r| self.to_now(*r).is_some())
            .then_some(offset)
    }

    /// [`hover`] at current offset `offset` from the earlier analysis;
    /// None when it cannot answer for the current text.
    pub fn hover(&self, offset: u32) -> Option<Option<(TextRange, String)>> {
        let offset = self.answerable(offset)?;
        Some(hover(&self.view, offset).map(|(r, md)| (self.to_now(r).expect("read above"), md)))
    }

    /// [`definition`] at current offset `offset` from the earlier analysis;
    /// None when it cannot answer for the current text.
    pub fn definition(&self, offset: u32) -> Option<Option<NavTarget>> {
        let offset = self.answerable(offset)?;
        Some(match definition(self.view.analysis, offset) {
            Some(NavTarget::Here(r)) => Some(NavTarget::Here(self.to_now(r)?)),
            other => other,
        })
    }
}
