//! `jaxpr graph FILE -o OUT`: the dataflow graph of a jaxpr file as SVG,
//! one self-contained HTML page, Graphviz DOT, or Model Explorer's graph
//! JSON, chosen by `--format` or by the output's extension.

use clap::ValueEnum;
use jaxpr_graph::layout::ExpandToDepth;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum GraphFormat {
    /// A static drawing.
    Svg,
    /// One page, no network: pan, zoom, search, groups to open and close.
    Html,
    /// Graphviz's language, for `dot -Tpdf` and friends.
    Dot,
    /// Model Explorer's graph JSON (`model-explorer out.json`).
    #[value(name = "model-explorer")]
    ModelExplorer,
}

impl GraphFormat {
    fn from_extension(path: &Path) -> Option<GraphFormat> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "svg" => Some(GraphFormat::Svg),
            "html" | "htm" => Some(GraphFormat::Html),
            "dot" | "gv" => Some(GraphFormat::Dot),
            "json" => Some(GraphFormat::ModelExplorer),
            _ => None,
        }
    }
}

#[derive(clap::Args)]
pub struct GraphArgs {
    /// A jaxpr file.
    pub file: PathBuf,
    /// Output file; its extension (.svg, .html, .dot, .json) gives the
    /// format unless `--format` does. `-` writes to stdout.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Output format (default: from the output's extension).
    #[arg(long, value_enum)]
    pub format: Option<GraphFormat>,
    /// Groups (nested jaxprs) nested less deeply than this are drawn open
    /// (SVG; where the HTML page starts). Default: all open for a file of at
    /// most 2,000 equations, else all closed.
    #[arg(long)]
    pub open_depth: Option<u32>,
    /// Draw the tiling of the file's Pallas kernels instead (SVG, or a page
    /// holding it): which block of each array every grid point reads and
    /// writes, from the printed index maps or the blocks recorded beside
    /// the file (`NAME.recorded.json`, written by `jaxpr trace` and the
    /// Python API).
    #[arg(long)]
    pub tiling: bool,
}

/// Files with more equations start with their groups closed.
const OPEN_ALL_UP_TO_EQUATIONS: usize = 2000;

pub fn graph(args: GraphArgs) -> i32 {
    match run(&args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}

fn run(args: &GraphArgs) -> Result<(), String> {
    let to_stdout = args.output.as_os_str() == "-";
    if !to_stdout {
        jaxpr_lower::output::check_output(&args.file, &args.output)?;
    }
    let format = match (args.format, GraphFormat::from_extension(&args.output)) {
        (Some(f), _) | (None, Some(f)) => f,
        (None, None) => {
            return Err(format!(
                "{}: cannot tell the format from the extension; name a .svg, .html, .dot or .json file, or pass --format svg|html|dot|model-explorer",
                args.output.display()
            ));
        }
    };
    let loaded =
        super::read_jaxpr(&args.file).map_err(|e| format!("{}: {e}", args.file.display()))?;
    let parse = jaxpr_syntax::parse(&loaded.text);
    if parse.file.main.is_none() && parse.file.lets.is_empty() {
        return Err(format!(
            "{}: no jaxpr to draw (run `jaxpr check` on it)",
            loaded.path
        ));
    }
    if !parse.errors.is_empty() {
        eprintln!(
            "warning: {}: {} syntax error(s); the graph shows what parses (run `jaxpr check` on it)",
            loaded.path,
            parse.errors.len()
        );
    }
    // Each equation's cost on its node (`jaxpr-cost`, a `scan` body once per
    // iteration), from the file checked whole.
    let analysis = jaxpr_check::check(&parse.file);
    let costs = jaxpr_cost::analyse(&parse.file, &analysis, jaxpr_cost::Options::default());
    let annotations = jaxpr_ide::CostAnnotations {
        analysis: &analysis,
        costs: &costs,
    };
    // The kernels' tiling (for `--tiling` and the page's panel only): a
    // record beside the file that cannot be read stops `--tiling` and
    // leaves the page without its panel.
    let known = match (args.tiling, format) {
        (true, GraphFormat::Svg | GraphFormat::Html) => {
            let recorded = jaxpr_lower::recorded::Recorded::for_file(&args.file, None)?;
            known_tilings(&loaded, &parse.file, &analysis, &recorded)
        }
        (true, _) => return Err("--tiling draws SVG or HTML: name a .svg or .html output".into()),
        (false, GraphFormat::Html) => {
            match jaxpr_lower::recorded::Recorded::for_file(&args.file, None) {
                Ok(recorded) => known_tilings(&loaded, &parse.file, &analysis, &recorded),
                Err(e) => {
                    eprintln!("warning: the kernel tiling panel is not drawn: {e}");
                    Vec::new()
                }
            }
        }
        (false, _) => Vec::new(),
    };
    if args.tiling {
        if known.is_empty() {
            return Err(format!(
                "{}: no Pallas kernel whose blocks are known to draw",
                loaded.path
            ));
        }
        let rendered = match format {
            GraphFormat::Html => jaxpr_graph::tiling::html(&loaded.path, &known),
            _ => jaxpr_graph::tiling::svg(&known),
        };
        return write(args, to_stdout, &rendered);
    }
    let tiling_svg = (!known.is_empty()).then(|| jaxpr_graph::tiling::svg(&known));
    let graph = jaxpr_graph::build(&parse.file, &loaded.text, &annotations);
    let open_depth =
        args.open_depth
            .unwrap_or(if graph.equation_count() <= OPEN_ALL_UP_TO_EQUATIONS {
                u32::MAX
            } else {
                0
            });
    let title = args
        .file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| loaded.path.clone());
    let rendered = match format {
        GraphFormat::Svg => jaxpr_graph::svg(
            &graph,
            &jaxpr_graph::SvgOptions {
                expansion: &ExpandToDepth::new(&graph, open_depth),
            },
        ),
        GraphFormat::Html => jaxpr_graph::html(
            &graph,
            &jaxpr_graph::HtmlOptions {
                title: &title,
                text: &loaded.text,
                open_depth,
                nonce: None,
                tiling: tiling_svg.as_deref(),
            },
        ),
        GraphFormat::Dot => jaxpr_graph::dot(&graph),
        GraphFormat::ModelExplorer => jaxpr_graph::model_explorer_json(&graph, &title),
    };
    write(args, to_stdout, &rendered)
}

/// The tilings of the file's kernels whose blocks are known; a warning for
/// each other kernel, saying why.
fn known_tilings(
    loaded: &super::Loaded,
    file: &jaxpr_syntax::ast::SourceFile,
    analysis: &jaxpr_check::Analysis,
    recorded: &jaxpr_lower::recorded::Recorded,
) -> Vec<jaxpr_graph::tiling::Tiling> {
    let lines = jaxpr_syntax::LineIndex::new(&loaded.text);
    let mut known = Vec::new();
    for t in jaxpr_lower::tiling::kernel_tilings(file, &loaded.text, analysis, recorded) {
        match t {
            Ok(t) => known.push(t),
            Err(u) => eprintln!(
                "warning: {}:{}: the kernel's tiling is not drawn: {}",
                loaded.path,
                lines.line_col(u.range.start).line + 1,
                u.why
            ),
        }
    }
    known
}

fn write(args: &GraphArgs, to_stdout: bool, rendered: &str) -> Result<(), String> {
    if to_stdout {
        use std::io::Write;
        std::io::stdout()
            .write_all(rendered.as_bytes())
            .map_err(|e| format!("stdout: {e}"))
    } else {
        jaxpr_lower::output::write_output(&args.output, rendered.as_bytes())
            .map_err(|e| format!("{}: {e}", args.output.display()))
    }
}
