//! Inlay hints: which binders of a jaxpr with dimension variables are
//! implicit (and their position, the number a `DBIdx` names), the
//! `InDBIdx`/`OutDBIdx` form of its outputs, and the inferred type of a
//! dropped result `_` printed without one.
//!
//! Hints go only where they add to the text. An explicit binder's written
//! type already names its dimension variables, so it gets no hint: a label
//! after every binder pushed the later binders of a `lambda` line (the ones
//! go-to-definition lands on) past the editor's right edge. Its `DBIdx` type
//! is in the implicit binders' tooltips and in the hover.

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
                label: format!("#{i} implicit"),
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
        if sig.out_type.iter().any(|e| !e.explicit || has_dbidx(e)) {
            for (k, (o, e)) in j.outs.iter().zip(&sig.out_type).enumerate() {
                if !visible(o.range) {
                    continue;
                }
                let label = format!(
                    "#{k} {}{}",
                    if e.explicit { "" } else { "implicit " },
                    e.render_type()
                );
                out.push(InlayHint {
                    offset: o.range.end,
                    label,
                    tooltip: format!("out_type entry {k}: {e}"),
                });
            }
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
