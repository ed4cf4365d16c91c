//! Inlay hints: the de Bruijn view of binders (position, implicit or
//! explicit, type with `DBIdx`) on jaxprs that have dimension variables, the
//! `InDBIdx`/`OutDBIdx` form of their outputs, and the inferred type of a
//! dropped result `_` printed without one.

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
        if sig.in_type.iter().any(|e| !e.explicit || has_dbidx(e)) {
            for (i, (v, e)) in j.invars.iter().zip(&sig.in_type).enumerate() {
                let r = a.var(*v).binder_range;
                if !visible(r) {
                    continue;
                }
                let label = if e.explicit {
                    format!("#{i} explicit {}", e.render_type())
                } else {
                    format!("#{i} implicit")
                };
                let tooltip = format!(
                    "in_type entry {i}: {e}. {}",
                    if e.explicit {
                        "An explicit argument: the caller passes it."
                    } else {
                        "An implicit argument: a dimension that later binders refer to as DBIdx; the caller passes the size."
                    }
                );
                out.push(InlayHint {
                    offset: r.end,
                    label,
                    tooltip,
                });
            }
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
