//! Inlay hints: what the text of a jaxpr cannot show. Which binders and
//! outputs are implicit (the tooltip gives the position a `DBIdx` or
//! `OutDBIdx` names, and the whole `in_type`/`out_type`), and the inferred
//! type of a dropped result `_` printed without one.
//!
//! The de Bruijn form of a written type (`b:f64[a]` is `f64[DBIdx(0)]`) is
//! not repeated after every binder and output: the names in the text already
//! say it, the hover on `lambda` shows it, and such labels pushed the later
//! binders of a `lambda` line (where go-to-definition lands) to the editor's
//! right edge.

use super::FileView;
use jaxpr_check::signature::SigEntry;
use jaxpr_syntax::TextRange;
use jaxpr_types::DimNames;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InlayHint {
    /// Shown just after this offset.
    pub offset: u32,
    pub label: String,
    pub tooltip: String,
}

fn entries(sig: &[SigEntry]) -> String {
    sig.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
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
                    entries(&sig.in_type)
                ),
            });
        }
        for (k, (o, e)) in j.outs.iter().zip(&sig.out_type).enumerate() {
            if e.explicit || !visible(o.range) {
                continue;
            }
            out.push(InlayHint {
                offset: o.range.end,
                label: "implicit".into(),
                tooltip: format!(
                    "out_type entry {k}: {e}. An implicit output: a dimension that later outputs refer to as OutDBIdx({k}). out_type: {}",
                    entries(&sig.out_type)
                ),
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
