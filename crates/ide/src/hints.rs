//! Inlay hints: which binders and outputs of a jaxpr are implicit, the
//! `InDBIdx`/`OutDBIdx` type of an output, and the inferred type of a
//! dropped result `_` printed without one. Positions (the numbers a
//! `DBIdx`/`OutDBIdx` names) are in the tooltips.
//!
//! Hints go only where they add to the text. An explicit binder's written
//! type already names its dimension variables, so it gets no hint, nor does
//! an explicit output whose type has no de Bruijn index: a label after every
//! binder and output pushed the later binders of a `lambda` line (the ones
//! go-to-definition lands on) past the editor's right edge. The full
//! `in_type` is in the implicit binders' tooltips and in the hover.

use super::FileView;
use jaxpr_check::signature::{SigDim, SigEntry};
use jaxpr_syntax::TextRange;
use jaxpr_types::DimNames;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InlayHint {
    /// Shown just after this offset.
    pub offset: u32,
    pub label: String,
    pub tooltip: String,
}

fn has_dbidx(e: &SigEntry) -> bool {
    e.shape.iter().any(|d| {
        matches!(
            d,
            SigDim::DBIdx(_) | SigDim::InDBIdx(_) | SigDim::OutDBIdx(_)
        )
    })
}

/// Hints whose offset lies in `range`.
pub fn inlay_hints(f: &FileView, range: TextRange) -> Vec<InlayHint> {
    let a = f.analysis;
    let mut out = Vec::new();
    let visible = |r: TextRange| range.start <= r.end && r.end <= range.end;
    for j in &a.jaxprs {
        if j.range.end < range.start || j.range.start > range.end {
            continue;
        }
        let sig = &j.signature;
        for (i, (v, e)) in j.invars.iter().zip(&sig.in_type).enumerate() {
            let r = a.var(*v).binder_range;
            if e.explicit || !visible(r) {
                continue;
            }
            out.push(InlayHint {
                offset: r.end,
                label: "implicit".into(),
                tooltip: format!(
                    "in_type entry {i}: {e}. An implicit argument: a dimension that later binders refer to as DBIdx({i}); the caller passes the size. in_type: {}",
                    sig.in_type
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
        // An output's type is its atom's, written where that is bound: only
        // being implicit or a type in de Bruijn form says more.
        for (k, (o, e)) in j.outs.iter().zip(&sig.out_type).enumerate() {
            if (e.explicit && !has_dbidx(e)) || !visible(o.range) {
                continue;
            }
            let (label, tooltip) = if e.explicit {
                (e.render_type(), format!("out_type entry {k}: {e}"))
            } else {
                (
                    "implicit".into(),
                    format!(
                        "out_type entry {k}: {e}. An implicit output: a dimension that later outputs refer to as OutDBIdx({k})."
                    ),
                )
            };
            out.push(InlayHint {
                offset: o.range.end,
                label,
                tooltip,
            });
        }
    }
    // Dropped results printed without a type.
    for e in &a.eqns {
        if e.range.end < range.start || e.range.start > range.end {
            continue;
        }
        let Some(inferred) = &e.inferred else {
            continue;
        };
        let Some(syn) = super::find_eqn(&f.parse.file, e.range) else {
            continue;
        };
        for (b, ty) in syn.outs.iter().zip(inferred) {
            if b.is_dropped() && b.ty.is_none() && visible(b.range) {
                out.push(InlayHint {
                    offset: b.range.end,
                    label: format!(":{}", a.ty(ty)),
                    tooltip: "type of the dropped result, as inferred".into(),
                });
            }
        }
    }
    out.sort_by_key(|h| h.offset);
    out
}
