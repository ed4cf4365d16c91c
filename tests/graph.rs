//! `jaxpr graph`: each rendering read back by a real reader. SVG parsed as
//! XML (Python's `xml.etree`), one node element per equation of the file;
//! DOT checked for the structure Graphviz reads (balanced clusters, every
//! edge between declared nodes); the HTML page self-contained and drawn by
//! headless Chromium; the Model Explorer JSON loaded by the real
//! `ai-edge-model-explorer` package (`tests/trace/venv.sh model-explorer`
//! makes its environment once).

mod common;
use common::{corpus, workspace_root};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Programs with every kind of group: `let`s, `jit`, `cond` branches,
/// `while` and `scan` bodies (control, nested_loops), `custom_jvp_call`
/// (cnn), Catalyst's `for_loop` and `while_loop` (capture_loop,
/// while_grow), a quantum kernel holding an `adjoint` region
/// (adjoint_rotations, of Catalyst's suite), and train steps whose
/// equations group by name stack and Python function, one with a jit
/// inside a scope group (`corpus-gen/graph/gen.py`).
fn files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = [
        "jax/control.jaxpr",
        "jax/nested_loops.jaxpr",
        "jax/cnn.jaxpr",
        "catalyst/capture_loop.jaxpr",
        "catalyst/while_grow.jaxpr",
    ]
    .iter()
    .map(|name| corpus().join(name))
    .collect();
    files.push(workspace_root().join("tests/data/catalyst-suite/adjoint_rotations.jaxpr"));
    for name in ["jax_train_step.jaxpr", "jax_train_step_nested_jit.jaxpr"] {
        files.push(workspace_root().join("tests/data/graph").join(name));
    }
    files
}

fn name_of(file: &Path) -> String {
    file.file_name().unwrap().to_string_lossy().into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("jaxpr-graph-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `jaxpr graph FILE -o OUT ARGS...`, which must succeed.
fn graph(file: &Path, out: &Path, args: &[&str]) -> String {
    let run = Command::new(env!("CARGO_BIN_EXE_jaxpr"))
        .arg("graph")
        .arg(file)
        .arg("-o")
        .arg(out)
        .args(args)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "jaxpr graph {} failed: {}",
        file.display(),
        String::from_utf8_lossy(&run.stderr)
    );
    std::fs::read_to_string(out).unwrap()
}

/// The file's equations, nested ones included, as the parser counts them.
fn equations(file: &Path) -> usize {
    let text = std::fs::read_to_string(file).unwrap();
    let parse = jaxpr_syntax::parse(&text);
    assert!(
        parse.errors.is_empty(),
        "{}: {:?}",
        file.display(),
        parse.errors
    );
    jaxpr_syntax::ast::each_eqn(&parse.file).count()
}

#[test]
fn svg_is_well_formed_xml_with_one_node_per_equation() {
    let dir = scratch("svg");
    for file in files() {
        let name = name_of(&file);
        let out = dir.join("out.svg");
        graph(&file, &out, &[]);
        // Python's XML parser rejects anything not well formed.
        let count = Command::new("python3")
            .arg("-c")
            .arg(
                "import sys, xml.etree.ElementTree as ET\n\
                 ns = '{http://www.w3.org/2000/svg}'\n\
                 root = ET.parse(sys.argv[1]).getroot()\n\
                 assert root.tag == ns + 'svg', root.tag\n\
                 nodes = [g for g in root.iter(ns + 'g') if 'node' in g.get('class', '').split()]\n\
                 eqns = [g for g in nodes if 'eqn' in g.get('class').split()]\n\
                 assert len({g.get('id') for g in nodes}) == len(nodes), 'node ids repeat'\n\
                 print(len(eqns))",
            )
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            count.status.success(),
            "{name}: the SVG does not parse: {}",
            String::from_utf8_lossy(&count.stderr)
        );
        let drawn: usize = String::from_utf8_lossy(&count.stdout)
            .trim()
            .parse()
            .unwrap();
        assert_eq!(drawn, equations(&file), "{name}: equation nodes in the SVG");
    }
}

#[test]
fn svg_with_groups_closed_draws_only_the_top_level() {
    let file = corpus().join("jax/control.jaxpr");
    let out = scratch("svg-closed").join("out.svg");
    let svg = graph(&file, &out, &["--open-depth", "0"]);
    let drawn = svg.matches("class=\"node eqn").count();
    let text = std::fs::read_to_string(&file).unwrap();
    let parse = jaxpr_syntax::parse(&text);
    let top: usize = parse
        .file
        .lets
        .iter()
        .map(|l| l.jaxpr.eqns.len())
        .sum::<usize>()
        + parse.file.main.as_ref().map_or(0, |m| m.eqns.len());
    assert_eq!(drawn, top);
    assert!(top < equations(&file));
    assert!(
        svg.contains("class=\"node eqn group\""),
        "closed groups are marked"
    );
}

#[test]
fn dot_declares_every_node_and_edge_in_balanced_clusters() {
    let dir = scratch("dot");
    for file in files() {
        let name = name_of(&file);
        let dot = graph(&file, &dir.join("out.dot"), &[]);
        assert!(dot.starts_with("digraph jaxpr {"), "{name}");
        // Braces balance outside quoted strings.
        let (mut depth, mut quoted, mut escaped) = (0i32, false, false);
        for c in dot.chars() {
            match (quoted, escaped, c) {
                (true, false, '\\') => escaped = true,
                (true, true, _) => escaped = false,
                (_, false, '"') => quoted = !quoted,
                (false, _, '{') => depth += 1,
                (false, _, '}') => {
                    depth -= 1;
                    assert!(depth >= 0, "{name}: unbalanced braces");
                }
                _ => {}
            }
        }
        assert_eq!((depth, quoted), (0, false), "{name}: unbalanced");
        let mut declared = std::collections::HashSet::new();
        let mut boxes = 0;
        let mut edges = 0;
        for line in dot.lines().map(str::trim) {
            if let Some((from, rest)) = line.split_once(" -> ") {
                let to = rest.split_whitespace().next().unwrap();
                assert!(
                    declared.contains(from) && declared.contains(to),
                    "{name}: {line}"
                );
                edges += 1;
            } else if line.starts_with('n') && line.contains(" [label=") {
                declared.insert(line.split_whitespace().next().unwrap().to_string());
                boxes += line.ends_with("shape=box];") as usize;
            }
        }
        assert_eq!(boxes, equations(&file), "{name}: equation boxes");
        assert!(edges > 0, "{name}");
    }
}

#[test]
fn html_is_one_self_contained_page_that_draws_in_chromium() {
    let file = corpus().join("jax/control.jaxpr");
    let out = scratch("html").join("control.html");
    let html = graph(&file, &out, &[]);
    // Nothing from the network: the only URL is the SVG namespace.
    let without_namespace = html.replace("http://www.w3.org/2000/svg", "");
    for external in ["http://", "https://", "<link", " src=", "@import", "url("] {
        assert!(
            !without_namespace.contains(external),
            "the page holds `{external}`"
        );
    }
    assert_eq!(
        html.matches("<script").count(),
        2,
        "the data and the viewer, inline"
    );
    // Chromium runs the viewer: the DOM it leaves has the graph drawn.
    let dom = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--window-size=1400,900",
        ])
        .args(["--virtual-time-budget=5000", "--dump-dom"])
        .arg(format!("file://{}", out.display()))
        .output()
        .expect("run chromium (scripts/test.sh installs it)");
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(
        dom.contains("data-ready=\"1\""),
        "the viewer did not finish:\n{}",
        &dom[..dom.len().min(2000)]
    );
    let drawn = dom.matches("class=\"node eqn").count();
    assert!(drawn >= 10, "{drawn} equation nodes drawn");
    assert!(
        dom.contains("36 equations"),
        "the status line counts the file's equations"
    );
}

#[test]
fn model_explorer_export_loads_in_model_explorer() {
    let venv = Command::new("bash")
        .arg(workspace_root().join("tests/trace/venv.sh"))
        .arg("model-explorer")
        .output()
        .unwrap();
    assert!(
        venv.status.success(),
        "tests/trace/venv.sh model-explorer failed:\n{}",
        String::from_utf8_lossy(&venv.stderr)
    );
    let python = String::from_utf8_lossy(&venv.stdout)
        .lines()
        .last()
        .unwrap()
        .to_string();
    let dir = scratch("model-explorer");
    for file in files() {
        let name = name_of(&file);
        let out = dir.join("out.json");
        graph(&file, &out, &[]);
        let load = Command::new(&python)
            .arg(workspace_root().join("tests/graph/load_model_explorer.py"))
            .arg(&out)
            .arg(equations(&file).to_string())
            .output()
            .unwrap();
        assert!(
            load.status.success(),
            "{name}: Model Explorer did not load the export:\n{}",
            String::from_utf8_lossy(&load.stderr)
        );
        assert!(String::from_utf8_lossy(&load.stdout).starts_with("loaded "));
    }
}

/// Scope groups are Model Explorer's layers: each equation of the train
/// step is a node of its jaxpr's graph with its group's path as
/// `namespace`, and the export loads with the real package.
#[test]
fn model_explorer_layers_are_the_scope_groups() {
    let file = workspace_root().join("tests/data/graph/jax_train_step.jaxpr");
    let out = scratch("model-explorer-layers").join("out.json");
    let json: serde_json::Value = serde_json::from_str(&graph(&file, &out, &[])).unwrap();
    let step = json["graphs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["id"] == "let step")
        .expect("a graph for `let step`");
    let mut layers: Vec<(String, usize)> = Vec::new();
    for node in step["nodes"].as_array().unwrap() {
        let namespace = node["namespace"].as_str().unwrap().to_string();
        match layers.last_mut() {
            Some((last, count)) if *last == namespace => *count += 1,
            _ => layers.push((namespace, 1)),
        }
    }
    let layers: Vec<(&str, usize)> = layers.iter().map(|(n, c)| (n.as_str(), *c)).collect();
    assert_eq!(
        layers,
        [
            ("", 6),
            ("jvp(predict)/dense", 10),
            ("jvp()/loss", 5),
            ("transpose(jvp())/loss", 3),
            ("transpose(jvp(predict))/dense", 17),
            ("step.<locals>.<listcomp>", 8),
            ("", 4),
        ],
        "inputs, the groups' equations in text order, outputs"
    );
    let graphs: Vec<&str> = json["graphs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["id"].as_str().unwrap())
        .collect();
    assert_eq!(graphs, ["let step", "main"], "a scope group is no graph");
}

#[test]
fn bad_arguments_are_clear_errors() {
    let file = corpus().join("jax/control.jaxpr");
    let dir = scratch("errors");
    let run = |out: &Path| {
        Command::new(env!("CARGO_BIN_EXE_jaxpr"))
            .arg("graph")
            .arg(&file)
            .arg("-o")
            .arg(out)
            .output()
            .unwrap()
    };
    let unknown = run(&dir.join("out.png"));
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("--format"));
    let input = run(&file);
    assert_eq!(input.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&input.stderr).contains("input file"));
    let missing = Command::new(env!("CARGO_BIN_EXE_jaxpr"))
        .args(["graph", "/nonexistent/x.jaxpr", "-o"])
        .arg(dir.join("x.svg"))
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/nonexistent/x.jaxpr"));
}

/// Each equation's node carries its cost (`jaxpr-cost`, through the
/// graph's annotator): on the node in SVG and DOT, as a Model Explorer
/// attribute, on every equation of every file drawn.
#[test]
fn each_equation_node_carries_its_cost() {
    let dir = scratch("costs");
    let file = dir.join("dot.jaxpr");
    std::fs::write(
        &file,
        "{ lambda ; a:f32[3,4] b:f32[4,5]. let\n    c:f32[3,5] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] a b\n    d:f32[3,5] = tanh c\n  in (d,) }\n",
    )
    .unwrap();
    // 2 x 15 results x 4 contracted; 48 + 80 bytes read, 60 written.
    let dot_general = "cost: 120 FLOPs · 0 tr. · 188 B";
    let tanh = "cost: 0 FLOPs · 15 tr. · 120 B";
    let svg = graph(&file, &dir.join("out.svg"), &[]);
    assert!(svg.contains(dot_general) && svg.contains(tanh), "{svg}");
    let dot = graph(&file, &dir.join("out.dot"), &[]);
    assert!(
        dot.contains(&format!("dot_general\\n{dot_general}")),
        "{dot}"
    );
    for file in files() {
        let name = name_of(&file);
        let json: serde_json::Value =
            serde_json::from_str(&graph(&file, &dir.join("out.json"), &[])).unwrap();
        let mut costed = 0;
        for node in json["graphs"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["nodes"].as_array().unwrap())
        {
            let attrs = node["attrs"].as_array().unwrap();
            let is_eqn = attrs
                .iter()
                .any(|a| a["key"] == "kind" && a["value"] == "eqn");
            let cost = attrs.iter().find(|a| a["key"] == "cost");
            assert_eq!(is_eqn, cost.is_some(), "{name}: {node}");
            if let Some(cost) = cost {
                assert!(
                    cost["value"].as_str().unwrap().contains(" FLOPs · "),
                    "{name}: {cost}"
                );
                costed += 1;
            }
        }
        assert_eq!(costed, equations(&file), "{name}");
    }
}

/// `--tiling` (issue 41): a Pallas kernel's blocks per grid point, from
/// what is recorded beside jax 0.10.2's text; the graph page carries the
/// same picture in its tiling panel; without the record, the reason the
/// text does not say, and no picture.
#[test]
fn tiling_draws_the_blocks_each_grid_point_takes() {
    let dir = scratch("tiling");
    let src = workspace_root().join("tests/data/pallas/jax-0.10.2/matmul_blocked.jaxpr");
    let svg = graph(&src, &dir.join("t.svg"), &["--tiling"]);
    assert!(svg.contains("grid (2,2) (4 points)"), "{svg}");
    assert_eq!(svg.matches(">point (").count(), 4, "{svg}");
    let page = graph(&src, &dir.join("g.html"), &[]);
    assert_eq!(page.matches("<details id=\"tiling\">").count(), 1);
    assert!(page.contains("grid (2,2) (4 points)"));

    // The text alone: no index maps, no picture.
    let bare = dir.join("matmul_blocked.jaxpr");
    std::fs::copy(&src, &bare).unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_jaxpr"))
        .args(["graph", "--tiling", "-o"])
        .arg(dir.join("bare.svg"))
        .arg(&bare)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("does not print its index map"), "{stderr}");
    assert!(
        stderr.contains("no Pallas kernel whose blocks are known"),
        "{stderr}"
    );
    assert!(!dir.join("bare.svg").exists());
    let page = graph(&bare, &dir.join("bare.html"), &[]);
    assert!(!page.contains("id=\"tiling\""));
    let _ = std::fs::remove_dir_all(&dir);
}
