//! `cargo bench -p jaxpr-graph --bench draw`: how long the dataflow graph of
//! the large corpus files (`large/transformer150_grad`, 27,002 top-level
//! equations, and `large/transformer600_grad`, 108,002) takes to draw with
//! its groups closed, by stage: parse, model, layout, and each rendering
//! (HTML, SVG, DOT, Model Explorer JSON). Each stage is run 3 times; the
//! best is printed. The time the HTML page takes to draw in a browser is
//! measured by `editors/vscode/e2e/graph-bench.js`.

use jaxpr_graph::layout::{self, ExpandToDepth};
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: jaxpr_alloc::Mimalloc = jaxpr_alloc::Mimalloc;

fn best<T>(mut f: impl FnMut() -> T) -> (T, Duration) {
    let mut best = Duration::MAX;
    let mut out = None;
    for _ in 0..3 {
        let start = Instant::now();
        let value = f();
        best = best.min(start.elapsed());
        out = Some(value);
    }
    (out.expect("ran"), best)
}

fn main() {
    let corpus = std::env::var("JAXPR_CORPUS")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/corpus").into());
    println!(
        "file                 equations  nodes    parse    model   layout     html      svg      dot  m-e json  html MB"
    );
    for name in ["transformer150_grad", "transformer600_grad"] {
        let text = jaxpr_test_support::scale::read_gz(&format!("{corpus}/large/{name}.jaxpr.gz"));
        let (parse, t_parse) = best(|| jaxpr_syntax::parse(&text));
        let (graph, t_model) =
            best(|| jaxpr_graph::build(&parse.file, &text, &jaxpr_graph::NoAnnotations));
        let (_, t_layout) = best(|| layout::layout(&graph));
        let (page, t_html) = best(|| {
            jaxpr_graph::html(
                &graph,
                &jaxpr_graph::HtmlOptions {
                    title: name,
                    text: &text,
                    open_depth: 0,
                    nonce: None,
                    tiling: None,
                },
            )
        });
        let closed = ExpandToDepth::new(&graph, 0);
        let (_, t_svg) =
            best(|| jaxpr_graph::svg(&graph, &jaxpr_graph::SvgOptions { expansion: &closed }));
        let (_, t_dot) = best(|| jaxpr_graph::dot(&graph));
        let (_, t_me) = best(|| jaxpr_graph::model_explorer_json(&graph, name));
        let ms = |d: Duration| format!("{:>6.0}ms", d.as_secs_f64() * 1e3);
        println!(
            "{name:<20} {:>9} {:>6} {} {} {} {} {} {} {} {:>8.1}",
            graph.equation_count(),
            graph.nodes.len(),
            ms(t_parse),
            ms(t_model),
            ms(t_layout),
            ms(t_html),
            ms(t_svg),
            ms(t_dot),
            ms(t_me),
            page.len() as f64 / 1e6
        );
    }
}
