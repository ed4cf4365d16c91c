//! The tiling picture's data ([`jaxpr_graph::tiling::Tiling`]) of each
//! Pallas kernel of a checked file, from the blocks the build reads
//! ([`crate::kernel::kernel_blocks`]): the command line's `jaxpr graph
//! --tiling` and the editor's graph page draw it. Here, beside the blocks,
//! because the pipeline's layers (`ide` and before) never ask the lowering
//! layer; the graph crate draws plain data.

use crate::kernel::{KernelBlocks, kernel_blocks};
use crate::recorded::Recorded;
use crate::walk::Syntax;
use jaxpr_check::registry::Prim;
use jaxpr_check::{Analysis, JaxprId};
use jaxpr_graph::tiling::{Access, TiledArray, Tiling};
use jaxpr_syntax::ast::{self, ExprKind};
use jaxpr_syntax::{LineIndex, TextRange};

/// A kernel whose blocks are not known from the file (and what is
/// recorded beside it): where it is, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct UnknownTiling {
    pub range: TextRange,
    pub why: String,
}

/// Every `pallas_call` of the file, in text order: its tiling, or why the
/// text does not say it.
pub fn kernel_tilings(
    file: &ast::SourceFile,
    text: &str,
    a: &Analysis,
    recorded: &Recorded,
) -> Vec<Result<Tiling, UnknownTiling>> {
    let syntax = Syntax::new(file, a);
    let lines = LineIndex::new(text);
    let mut found = Vec::new();
    for j in 0..a.jaxprs.len() {
        let Ok((eqns, _)) = syntax.body(a, JaxprId(j as u32)) else {
            continue;
        };
        for (e, id) in eqns {
            if a.eqn(id).prim != Some(Prim::PallasCall) {
                continue;
            }
            let line = lines.line_col(e.range.start).line + 1;
            let tiling = match kernel_blocks(a, &syntax, e, id, recorded) {
                Ok(k) => Ok(tiling(e, text, k, line)),
                Err(err) => Err(UnknownTiling {
                    range: err.range,
                    why: err.message.to_string(),
                }),
            };
            found.push((e.range.start, tiling));
        }
    }
    found.sort_by_key(|(at, _)| *at);
    found.into_iter().map(|(_, t)| t).collect()
}

fn tiling(e: &ast::Eqn, text: &str, k: KernelBlocks, line: u32) -> Tiling {
    let name = kernel_name(e, text);
    let slice = |r: TextRange| text.get(r.start as usize..r.end as usize).unwrap_or("");
    let nin = e.args.len();
    let names = e
        .args
        .iter()
        .map(|x| slice(x.range()).to_string())
        .chain(e.outs.iter().map(|b| b.name.text.to_string()));
    let arrays = k
        .mappings
        .iter()
        .zip(names)
        .enumerate()
        .map(|(m, (mapping, name))| TiledArray {
            name,
            access: if m >= nin {
                Access::Writes
            } else if k.aliases.values().any(|&i| i == m) {
                Access::ReadsAndWrites
            } else {
                Access::Reads
            },
            shape: mapping.full.clone(),
            block: mapping.sizes.iter().map(|s| s.unwrap_or(1)).collect(),
            at_point: k.points.iter().map(|(_, at)| at[m].clone()).collect(),
        })
        .collect();
    Tiling {
        title: format!("{name} (line {line})"),
        grid: k.grid,
        points: k.points.into_iter().map(|(p, _)| p).collect(),
        arrays,
    }
}

/// The kernel's Python name where JAX prints it (`name_and_src_info=kernel
/// at programs.py:114`, or `name=`), else `pallas_call`.
fn kernel_name(e: &ast::Eqn, text: &str) -> String {
    for param in ["name_and_src_info", "name"] {
        let Some(p) = e.param(param) else { continue };
        if p.value.is_none() {
            continue;
        }
        let shown = match &p.value.kind {
            ExprKind::Str(s) => s.to_string(),
            _ => text
                .get(p.value.range.start as usize..p.value.range.end as usize)
                .unwrap_or("")
                .to_string(),
        };
        if let Some(first) = shown.split_whitespace().next() {
            return first.to_string();
        }
    }
    "pallas_call".to_string()
}
