//! Rules users select: `jaxpr rule`, the rule pages' examples, the
//! configuration (`jaxpr.toml`, `[tool.jaxpr]`, `--select`/`--ignore`/
//! `--warn`/`--error`/`--config`), and the CI formats (`--format sarif`,
//! validated against the SARIF 2.1.0 schema, and `--format github`).

mod common;
use common::workspace_root;
use jaxpr_syntax::diagnostics::{DiagKind, RULES};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_jaxpr"))
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A jaxpr with a shape mismatch (J0004, related locations) and an unknown
/// primitive (J0010, a help line).
const TWO_RULES: &str = "{ lambda ; a:f32[3] b:f32[4]. let
    c:f32[3] = add a b
    d:f32[3] = my_op a
  in (c, d) }
";

/// A fresh folder for one test, holding `files` (path, text).
fn tree(test: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("rules")
        .join(test);
    let _ = std::fs::remove_dir_all(&dir);
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

/// `jaxpr check --format json ARGS...` in `dir`: exit code and, per file
/// (as given), its diagnostics as `(code, severity)`.
fn check_in(
    dir: &Path,
    args: &[&str],
) -> (Option<i32>, Vec<(String, Vec<(String, String)>)>, String) {
    let out = bin()
        .current_dir(dir)
        .args(["check", "--format", "json"])
        .args(args)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let files = report["files"]
        .as_array()
        .map(|files| {
            files
                .iter()
                .map(|f| {
                    let diags = f["diagnostics"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|d| {
                            (
                                d["code"].as_str().unwrap().to_string(),
                                d["severity"].as_str().unwrap().to_string(),
                            )
                        })
                        .collect();
                    (f["path"].as_str().unwrap().to_string(), diags)
                })
                .collect()
        })
        .unwrap_or_default();
    (out.status.code(), files, stderr(&out))
}

fn pair(code: &str, severity: &str) -> (String, String) {
    (code.to_string(), severity.to_string())
}

/// Every rule page's example (its ```jaxpr block) triggers that rule and
/// nothing else; only `unsupported` and `internal-error`, which `jaxpr
/// build` alone reports, have none to check.
#[test]
fn every_rule_pages_example_triggers_its_rule() {
    for rule in RULES {
        let example = rule
            .doc
            .split("```jaxpr\n")
            .nth(1)
            .and_then(|rest| rest.split("```").next());
        let Some(example) = example else {
            assert!(
                matches!(rule.kind, DiagKind::Unsupported | DiagKind::InternalError),
                "{} has no ```jaxpr example",
                rule.name
            );
            continue;
        };
        let found = jaxpr_db::diagnostics_from_scratch(example);
        assert!(
            !found.is_empty(),
            "{}: its example has no diagnostic",
            rule.name
        );
        for d in &found {
            assert_eq!(d.kind, rule.kind, "{}: {}", rule.name, d.message);
            assert_eq!(d.severity, rule.default_severity, "{}", rule.name);
        }
    }
}

#[test]
fn jaxpr_rule_prints_a_page_by_code_or_name_and_lists_all() {
    let by_code = bin().args(["rule", "J0004"]).output().unwrap();
    let by_name = bin().args(["rule", "shape-mismatch"]).output().unwrap();
    assert_eq!(by_code.status.code(), Some(0));
    assert_eq!(stdout(&by_code), stdout(&by_name));
    let page = stdout(&by_code);
    assert!(page.starts_with("# J0004 `shape-mismatch`\n"), "{page}");
    assert!(page.contains("Default severity: error."), "{page}");
    assert!(page.contains("## How to fix"), "{page}");
    let all = bin().args(["rule", "--all"]).output().unwrap();
    let listed = stdout(&all);
    assert_eq!(listed.lines().count(), RULES.len(), "{listed}");
    for rule in RULES {
        assert!(
            listed.contains(rule.code) && listed.contains(rule.name),
            "{listed}"
        );
    }
    let unknown = bin().args(["rule", "J9999"]).output().unwrap();
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown).contains("`J9999` is not a rule"),
        "{}",
        stderr(&unknown)
    );
}

/// The nearest configuration above a file governs it (a `jaxpr.toml`, or a
/// `pyproject.toml` with `[tool.jaxpr]`; one without is passed over), and
/// the command line goes on top.
#[test]
fn the_nearest_configuration_selects_rules_and_the_command_line_overrides_it() {
    let dir = tree(
        "nearest",
        &[
            ("jaxpr.toml", "ignore = [\"unknown-primitive\"]\n"),
            ("top.jaxpr", TWO_RULES),
            (
                "warned/pyproject.toml",
                "[project]\nname = \"x\"\n\n[tool.jaxpr]\nwarn = [\"J0004\"]\n",
            ),
            ("warned/mid.jaxpr", TWO_RULES),
            ("warned/plain/pyproject.toml", "[project]\nname = \"y\"\n"),
            ("warned/plain/low.jaxpr", TWO_RULES),
        ],
    );
    let (code, files, err) = check_in(&dir, &["."]);
    assert_eq!(code, Some(1), "{err}");
    let by_path = |name: &str| {
        files
            .iter()
            .find(|(p, _)| p.ends_with(name))
            .unwrap_or_else(|| panic!("{name} in {files:?}"))
            .1
            .clone()
    };
    // jaxpr.toml: J0010 ignored.
    assert_eq!(by_path("top.jaxpr"), vec![pair("J0004", "error")]);
    // The nearer pyproject.toml replaces it (no merging, as in ruff): J0004
    // is a warning and J0010 shown again.
    let mid = vec![pair("J0004", "warning"), pair("J0010", "warning")];
    assert_eq!(by_path("mid.jaxpr"), mid);
    // A pyproject.toml without [tool.jaxpr] is passed over.
    assert_eq!(by_path("low.jaxpr"), mid);
    // Only warnings below `warned/`: exit 0.
    let (code, _, err) = check_in(&dir, &["warned"]);
    assert_eq!(code, Some(0), "{err}");
    // The command line: --select starts again, --error promotes.
    let (code, files, _) = check_in(
        &dir,
        &[
            "--select",
            "J0010",
            "--error",
            "unknown-primitive",
            "top.jaxpr",
        ],
    );
    assert_eq!(code, Some(1));
    assert_eq!(files[0].1, vec![pair("J0010", "error")]);
    let (_, files, _) = check_in(&dir, &["--ignore", "J00", "warned/mid.jaxpr"]);
    assert_eq!(files[0].1, vec![]);
    // --config: that file for every file.
    let (_, files, _) = check_in(&dir, &["--config", "jaxpr.toml", "warned/mid.jaxpr"]);
    assert_eq!(files[0].1, vec![pair("J0004", "error")]);
}

#[test]
fn per_file_ignores_match_paths_below_the_configuration() {
    let dir = tree(
        "per-file",
        &[
            (
                "pyproject.toml",
                "[tool.jaxpr]\n[tool.jaxpr.per-file-ignores]\n\"generated/**/*.jaxpr\" = [\"J0004\"]\n\"keep.jaxpr\" = [\"J0010\"]\n",
            ),
            ("generated/deep/a.jaxpr", TWO_RULES),
            ("b.jaxpr", TWO_RULES),
            ("other/keep.jaxpr", TWO_RULES),
        ],
    );
    let (_, files, err) = check_in(&dir, &["."]);
    let codes = |name: &str| -> Vec<String> {
        files
            .iter()
            .find(|(p, _)| p.ends_with(name))
            .unwrap_or_else(|| panic!("{name}: {err}"))
            .1
            .iter()
            .map(|(c, _)| c.clone())
            .collect()
    };
    assert_eq!(codes("a.jaxpr"), vec!["J0010"]);
    assert_eq!(codes("b.jaxpr"), vec!["J0004", "J0010"]);
    assert_eq!(codes("keep.jaxpr"), vec!["J0004"]);
    // Patterns are relative to a configuration named on the command line too.
    let (_, files, err) = check_in(
        &dir,
        &["--config", "pyproject.toml", "generated/deep/a.jaxpr"],
    );
    assert_eq!(files[0].1, vec![pair("J0010", "warning")], "{err}");
}

/// Syntax errors are shown whatever is selected.
#[test]
fn syntax_errors_are_always_shown() {
    let dir = tree(
        "syntax",
        &[("bad.jaxpr", "{ lambda ; a:f32[3]. let\n  (a,) }\n")],
    );
    let (code, files, _) = check_in(&dir, &["--ignore", "ALL", "--warn", "J0001", "bad.jaxpr"]);
    assert_eq!(code, Some(1));
    assert_eq!(files[0].1, vec![pair("J0001", "error")]);
}

#[test]
fn an_unknown_rule_in_configuration_is_an_error_with_file_and_line() {
    let dir = tree(
        "unknown",
        &[
            (
                "jaxpr.toml",
                "select = [\"ALL\"]\nignore = [\n  \"J0010\",\n  \"shape-mismach\",\n]\n",
            ),
            ("a.jaxpr", TWO_RULES),
        ],
    );
    let (code, _, err) = check_in(&dir, &["a.jaxpr"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("jaxpr.toml:4: `shape-mismach` is not a rule"),
        "{err}"
    );
    let (code, _, err) = check_in(&dir, &["--config", "jaxpr.toml", "a.jaxpr"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("jaxpr.toml:4:"), "{err}");
    let ok = tree("unknown-flag", &[("a.jaxpr", TWO_RULES)]);
    let (code, _, err) = check_in(&ok, &["--select", "J0004,J42", "a.jaxpr"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("--select: `J42` is not a rule"), "{err}");
}

/// The Python of the environment `tests/trace/venv.sh jsonschema` makes.
fn jsonschema_python() -> PathBuf {
    let out = Command::new("bash")
        .arg(workspace_root().join("tests/trace/venv.sh"))
        .arg("jsonschema")
        .output()
        .expect("bash");
    assert!(
        out.status.success(),
        "venv.sh jsonschema failed:\n{}",
        stderr(&out)
    );
    PathBuf::from(
        stdout(&out)
            .lines()
            .last()
            .expect("venv.sh prints the python path")
            .trim(),
    )
}

/// The SARIF 2.1.0 schema's complaints about `report` (empty when valid).
fn sarif_schema_errors(python: &Path, report: &str) -> String {
    const VALIDATE: &str = "import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft4Validator.check_schema(schema)
report = json.load(sys.stdin)
for e in jsonschema.Draft4Validator(schema).iter_errors(report):
    print(list(e.absolute_path), e.message)
";
    use std::io::Write;
    let mut child = Command::new(python)
        .args(["-c", VALIDATE])
        .arg(workspace_root().join("tests/data/sarif/sarif-schema-2.1.0.json"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(report.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

#[test]
fn sarif_output_is_valid_sarif_2_1_0_with_rules_locations_and_help() {
    let dir = tree(
        "sarif",
        &[
            ("two rules.jaxpr", TWO_RULES),
            ("clean.jaxpr", "{ lambda ; a:f32[3]. let\n  in (a,) }\n"),
        ],
    );
    let out = bin()
        .current_dir(&dir)
        .args(["check", "--format", "sarif", "."])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    let python = jsonschema_python();
    assert_eq!(sarif_schema_errors(&python, &text), "", "{text}");
    // The validator does reject what is not SARIF.
    let mut broken: Value = serde_json::from_str(&text).unwrap();
    broken["runs"][0]["results"][0]["level"] = "fatal".into();
    assert_ne!(sarif_schema_errors(&python, &broken.to_string()), "");

    let sarif: Value = serde_json::from_str(&text).unwrap();
    let run = &sarif["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    assert_eq!(rules.len(), RULES.len());
    assert_eq!(rules[3]["id"], "J0004");
    assert_eq!(rules[3]["name"], "shape-mismatch");
    assert!(
        rules[3]["help"]["markdown"]
            .as_str()
            .unwrap()
            .contains("## How to fix")
    );
    assert_eq!(rules[9]["defaultConfiguration"]["level"], "warning");
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{text}");
    let shape = &results[0];
    assert_eq!(shape["ruleId"], "J0004");
    assert_eq!(shape["ruleIndex"], 3);
    assert_eq!(shape["level"], "error");
    let location = &shape["locations"][0]["physicalLocation"];
    assert_eq!(location["artifactLocation"]["uri"], "./two%20rules.jaxpr");
    assert_eq!(location["region"]["startLine"], 2);
    assert_eq!(location["region"]["startColumn"], 16);
    assert_eq!(location["region"]["endColumn"], 19);
    let related = shape["relatedLocations"].as_array().unwrap();
    assert_eq!(related.len(), 2, "{shape}");
    assert_eq!(related[1]["physicalLocation"]["region"]["startColumn"], 22);
    assert!(
        related[1]["message"]["text"]
            .as_str()
            .unwrap()
            .contains("`b`")
    );
    let unknown = &results[1];
    assert_eq!(unknown["level"], "warning");
    assert!(
        unknown["message"]["text"]
            .as_str()
            .unwrap()
            .contains("\nhelp: "),
        "{unknown}"
    );
}

#[test]
fn github_output_is_one_workflow_command_per_diagnostic() {
    let dir = tree("github", &[("a.jaxpr", TWO_RULES)]);
    let out = bin()
        .current_dir(&dir)
        .args(["check", "--format", "github", "--warn", "J0004", "a.jaxpr"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(
        lines[0],
        "::warning file=a.jaxpr,line=2,col=16,endLine=2,endColumn=19,title=J0004 shape-mismatch::\
         `add` operands must have the same shape: [3] and [4] differ in dimension 0 (`3` vs `4`)\
         %0Aa.jaxpr:2:20: operand 0 is `a` (f32[3])%0Aa.jaxpr:2:22: operand 1 is `b` (f32[4])"
    );
    assert!(
        lines[1].starts_with(
            "::warning file=a.jaxpr,line=3,col=16,endLine=3,endColumn=21,title=J0010 unknown-primitive::unknown primitive `my_op`"
        ),
        "{}",
        lines[1]
    );
    assert!(lines[1].contains("%0Ahelp: "), "{}", lines[1]);
}
