//! The tiling picture of Pallas kernels: which block of each array every
//! grid point reads and writes, the drawing kernel authors make by hand.
//! The blocks come from the program (its printed index maps, or those
//! recorded beside the text), not from running it; the checker's side
//! computes them (`jaxpr_lower::kernel`) and `jaxpr_lower::tiling` fills
//! [`Tiling`]. Drawn with presentation attributes only (no `<style>`), so
//! the SVG also shows inside the editor's page under its content policy.

use crate::render::escape_xml;
use std::fmt::Write;

/// One kernel (`pallas_call`) and its grid.
#[derive(Clone, Debug, PartialEq)]
pub struct Tiling {
    /// What the kernel is called, and where (`softmax_kernel`, line 12).
    pub title: String,
    pub grid: Vec<i64>,
    /// Each grid point, row-major, in JAX's order.
    pub points: Vec<Vec<i64>>,
    /// Its operands, then its results.
    pub arrays: Vec<TiledArray>,
}

/// An operand or result of a kernel, cut into blocks.
#[derive(Clone, Debug, PartialEq)]
pub struct TiledArray {
    /// As printed (the operand's name, or the result's binder).
    pub name: String,
    pub access: Access,
    pub shape: Vec<i64>,
    /// The block's size in each dimension (1 for a squeezed one).
    pub block: Vec<i64>,
    /// The block index at each grid point (as [`Tiling::points`]).
    pub at_point: Vec<Vec<i64>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Reads,
    Writes,
    /// An operand aliased to a result (`input_output_aliases`).
    ReadsAndWrites,
}

impl Access {
    fn word(self) -> &'static str {
        match self {
            Access::Reads => "read",
            Access::Writes => "written",
            Access::ReadsAndWrites => "read and written",
        }
    }

    fn fill(self) -> &'static str {
        match self {
            Access::Reads => "#54aeff",
            Access::Writes => "#fb8f44",
            Access::ReadsAndWrites => "#bf8700",
        }
    }
}

impl TiledArray {
    /// Blocks per dimension (a partial block at the end counts).
    pub fn counts(&self) -> Vec<i64> {
        self.shape
            .iter()
            .zip(&self.block)
            .map(|(&n, &b)| if b > 0 { (n + b - 1) / b } else { 1 })
            .collect()
    }

    /// Where block `index` is drawn: (row, column) of the picture, the last
    /// dimension's blocks across and every other dimension's down.
    fn cell(&self, index: &[i64]) -> (i64, i64) {
        let counts = self.counts();
        let Some((&col, lead)) = index.split_last() else {
            return (0, 0);
        };
        let mut row = 0;
        for (&i, &c) in lead.iter().zip(&counts) {
            row = row * c + i;
        }
        (row, col)
    }

    fn rows_cols(&self) -> (i64, i64) {
        let counts = self.counts();
        match counts.split_last() {
            None => (1, 1),
            Some((&c, lead)) => (lead.iter().product::<i64>().max(1), c.max(1)),
        }
    }
}

/// Grid points drawn one panel each; a larger grid shows the first ones.
pub const MAX_PANELS: usize = 64;
const MAX_SIDE: f64 = 180.0;

/// The SVG of each kernel: a legend line, then per array its blocks with
/// the grid points that take each one, then one small panel per grid point
/// with the blocks it takes filled (reads blue, writes orange).
pub fn svg(tilings: &[Tiling]) -> String {
    let mut body = String::new();
    let mut y = 10.0;
    let mut width: f64 = 920.0;
    for t in tilings {
        let (h, w) = kernel(t, y, &mut body);
        y += h + 24.0;
        width = width.max(w);
    }
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"tiling\" width=\"{width:.0}\" height=\"{y:.0}\" viewBox=\"0 0 {width:.0} {y:.0}\" font-family=\"monospace\" font-size=\"12\">\n{body}</svg>\n"
    )
}

fn text(out: &mut String, x: f64, y: f64, size: u32, s: &str) {
    let mut e = String::new();
    escape_xml(s, &mut e);
    writeln!(
        out,
        "<text x=\"{x:.1}\" y=\"{y:.1}\" class=\"t{size}\" font-size=\"{size}\" fill=\"#1f2328\">{e}</text>"
    )
    .unwrap();
}

fn point_label(p: &[i64]) -> String {
    format!(
        "({})",
        p.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
    )
}

fn dims(xs: &[i64]) -> String {
    xs.iter().map(i64::to_string).collect::<Vec<_>>().join("×")
}

/// The width and height of one cell of `a`'s layout, as the block's last
/// two dimensions are (within 1:4), so that the layout fits `side` and no
/// cell is wider than `cell`.
fn cell_size(a: &TiledArray, side: f64, cell: f64) -> (f64, f64) {
    let (rows, cols) = a.rows_cols();
    let ratio = match a.block[..] {
        [] => 1.0,
        [w] => 1.0 / w.max(1) as f64,
        [.., h, w] => h.max(1) as f64 / w.max(1) as f64,
    }
    .clamp(0.25, 4.0);
    let unit = (side / (cols as f64).max(rows as f64 * ratio)).min(cell);
    (unit, unit * ratio)
}

/// Layouts of more blocks than this draw the array as one rectangle and
/// only the blocks filled: a large grid's page stays small.
const MAX_DRAWN_CELLS: i64 = 1024;

fn rect(out: &mut String, (x, y): (f64, f64), (w, h): (f64, f64), colour: &str) {
    writeln!(
        out,
        "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{h:.1}\" fill=\"{colour}\" stroke=\"#8c959f\" stroke-width=\"0.5\"/>"
    )
    .unwrap();
}

/// Draws array `a`'s block layout at (`x`, `y`), cells of `cw` by `ch`,
/// the cells of `filled` (row, column) in their colours: its height and
/// width.
fn layout(
    out: &mut String,
    a: &TiledArray,
    (x, y): (f64, f64),
    (cw, ch): (f64, f64),
    filled: &[((i64, i64), &str)],
) -> (f64, f64) {
    let (rows, cols) = a.rows_cols();
    let empty = "#f6f8fa";
    if rows * cols <= MAX_DRAWN_CELLS {
        for r in 0..rows {
            for c in 0..cols {
                rect(out, (x + c as f64 * cw, y + r as f64 * ch), (cw, ch), empty);
            }
        }
    } else {
        rect(out, (x, y), (cols as f64 * cw, rows as f64 * ch), empty);
    }
    for &((r, c), colour) in filled {
        rect(
            out,
            (x + c as f64 * cw, y + r as f64 * ch),
            (cw, ch),
            colour,
        );
    }
    (rows as f64 * ch, cols as f64 * cw)
}

/// Draws kernel `t` from `y` down: its height and width.
fn kernel(t: &Tiling, y0: f64, out: &mut String) -> (f64, f64) {
    let mut y = y0 + 14.0;
    text(
        out,
        10.0,
        y,
        14,
        &format!(
            "{}: grid {} ({} points)",
            t.title,
            point_label(&t.grid),
            t.points.len()
        ),
    );
    y += 18.0;
    text(
        out,
        10.0,
        y,
        11,
        "blue: read, orange: written; each cell a block (the last dimension across, the others down), labelled with the grid points that take it ((0,1)+2: point (0,1) and 2 more)",
    );
    y += 12.0;
    // Each array's blocks, labelled with the points that take them.
    let mut x = 10.0;
    let mut tallest: f64 = 0.0;
    for a in &t.arrays {
        text(
            out,
            x,
            y + 14.0,
            12,
            &format!(
                "{} {}: {} blocks of {}",
                a.name,
                a.access.word(),
                dims(&a.counts()),
                dims(&a.block)
            ),
        );
        text(out, x, y + 28.0, 11, &format!("array {}", dims(&a.shape)));
        let (cw, ch) = cell_size(a, MAX_SIDE, 48.0);
        let mut takers: std::collections::BTreeMap<(i64, i64), Vec<String>> =
            std::collections::BTreeMap::new();
        for (p, idx) in t.points.iter().zip(&a.at_point) {
            takers.entry(a.cell(idx)).or_default().push(point_label(p));
        }
        let filled: Vec<_> = takers.keys().map(|&at| (at, a.access.fill())).collect();
        let (h, w) = layout(out, a, (x, y + 36.0), (cw, ch), &filled);
        if cw >= 36.0 && ch >= 12.0 {
            for ((r, c), ps) in &takers {
                let label = match ps.len() {
                    1 => ps[0].clone(),
                    n => format!("{}+{}", ps[0], n - 1),
                };
                text(
                    out,
                    x + *c as f64 * cw + 2.0,
                    y + 36.0 + *r as f64 * ch + ch / 2.0 + 4.0,
                    9,
                    &label,
                );
            }
        }
        tallest = tallest.max(h + 36.0);
        x += w.max(200.0) + 24.0;
    }
    let mut width = x;
    y += tallest + 20.0;
    // One panel per grid point: every array, the point's blocks filled.
    let panel_side = 60.0;
    let panel_w = t.arrays.len() as f64 * (panel_side + 8.0) + 8.0;
    let per_row = ((1200.0 / panel_w).floor() as usize).max(1);
    let shown = t.points.len().min(MAX_PANELS);
    for (k, (p, _)) in t.points.iter().zip(0..shown).enumerate() {
        let px = 10.0 + (k % per_row) as f64 * (panel_w + 12.0);
        let py = y + (k / per_row) as f64 * (panel_side + 30.0);
        writeln!(
            out,
            "<rect x=\"{px:.1}\" y=\"{py:.1}\" width=\"{panel_w:.1}\" height=\"{:.1}\" fill=\"none\" stroke=\"#d0d7de\" rx=\"4\"/>",
            panel_side + 24.0
        )
        .unwrap();
        text(
            out,
            px + 4.0,
            py + 12.0,
            11,
            &format!("point {}", point_label(p)),
        );
        let mut ax = px + 8.0;
        for a in &t.arrays {
            let at = a.cell(&a.at_point[k]);
            let cell = cell_size(a, panel_side, 20.0);
            layout(out, a, (ax, py + 18.0), cell, &[(at, a.access.fill())]);
            ax += panel_side + 8.0;
        }
        width = width.max(px + panel_w + 10.0);
    }
    let rows = shown.div_ceil(per_row);
    y += rows as f64 * (panel_side + 30.0);
    if t.points.len() > shown {
        text(
            out,
            10.0,
            y + 4.0,
            11,
            &format!(
                "… and {} more grid points (the first {shown} drawn)",
                t.points.len() - shown
            ),
        );
        y += 16.0;
    }
    (y - y0, width)
}

/// One page holding [`svg`] (`jaxpr graph --tiling -o OUT.html`).
pub fn html(title: &str, tilings: &[Tiling]) -> String {
    let mut t = String::new();
    escape_xml(title, &mut t);
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t} — kernel tiling</title></head>\n<body>\n{}</body></html>\n",
        svg(tilings)
    )
}
