//! Diagnostics: the one editor-neutral description of a problem in a jaxpr.
//! The CLI renders them (human and JSON) and the language server converts
//! them; neither adds meaning of its own.

use crate::TextRange;
use serde::Serialize;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// Everything a user reads about one diagnostic code: the row of
/// [`RULES`] for one [`DiagKind`]. `jaxpr rule`, the README's table,
/// `docs/rules.md`, SARIF's `tool.driver.rules` and the configuration's
/// selectors all read these rows.
#[derive(Clone, Copy, Debug)]
pub struct RuleInfo {
    pub kind: DiagKind,
    /// `J` and four digits; never reused for another meaning.
    pub code: &'static str,
    /// Kebab-case, as configuration and `jaxpr rule` accept it.
    pub name: &'static str,
    /// The severity the checker reports it with, before configuration.
    pub default_severity: Severity,
    /// One line: what the rule finds.
    pub summary: &'static str,
    /// The rule's page (markdown): what it means, why it matters, a jaxpr
    /// that triggers it, how to fix it. Read from `crates/syntax/rules/NAME.md`.
    pub doc: &'static str,
}

/// Declares [`DiagKind`] and [`RULES`] from one list, so that a rule is
/// added in one place: a row here and its page `crates/syntax/rules/NAME.md`
/// (the build fails without the page). Rows are in code order.
macro_rules! rule_table {
    ($(
        $(#[$attr:meta])*
        $kind:ident => $code:literal, $name:literal, $severity:ident, $summary:literal;
    )*) => {
        /// The stable vocabulary of diagnostic kinds (see `shared/corpus/README.md`).
        /// Each kind has a fixed code; codes and kind names never change meaning.
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
        pub enum DiagKind {
            $( $(#[$attr])* $kind, )*
        }

        /// One row per [`DiagKind`], in its order (`RULES[kind as usize]`).
        pub const RULES: &[RuleInfo] = &[
            $( RuleInfo {
                kind: DiagKind::$kind,
                code: $code,
                name: $name,
                default_severity: Severity::$severity,
                summary: $summary,
                doc: include_str!(concat!("../rules/", $name, ".md")),
            }, )*
        ];

        impl DiagKind {
            pub const ALL: [DiagKind; [$($code),*].len()] = [$(DiagKind::$kind),*];
        }
    };
}

rule_table! {
    Syntax => "J0001", "syntax", Error,
        "The text is not a jaxpr as JAX prints it (or is not UTF-8).";
    UndefinedVariable => "J0002", "undefined-variable", Error,
        "A variable is used where no binder of it is in scope.";
    DuplicateDefinition => "J0003", "duplicate-definition", Error,
        "A variable is bound twice in one jaxpr.";
    ShapeMismatch => "J0004", "shape-mismatch", Error,
        "Shapes disagree: an operand, a declared result type or a nested jaxpr's signature.";
    DtypeMismatch => "J0005", "dtype-mismatch", Error,
        "Dtypes disagree: an operand, a declared result type or a nested jaxpr's signature.";
    ArityMismatch => "J0006", "arity-mismatch", Error,
        "The wrong number of operands, results, carried values or branch outputs.";
    InvalidParameter => "J0007", "invalid-parameter", Error,
        "A parameter is missing, malformed or out of range for its primitive.";
    DimensionScope => "J0008", "dimension-scope", Error,
        "A dimension variable is not an integer scalar in scope where it is used.";
    InconclusiveDimension => "J0009", "inconclusive-dimension", Warning,
        "A symbolic-dimension comparison cannot be decided assuming every symbol >= 1 (it may hold under export constraints).";
    UnknownPrimitive => "J0010", "unknown-primitive", Warning,
        "A primitive without a type rule: its printed result types are trusted.";
    /// Two dimension variables that are provably equal through the call
    /// site, although the jaxpr names them differently (the Caveats case).
    AliasedDimension => "J0011", "aliased-dimension", Warning,
        "Two dimension variables are different names for one call-site value.";
    /// The build has no lowering for this primitive (or this use of it).
    Unsupported => "J0012", "unsupported", Error,
        "`jaxpr build` only: a primitive, or a use of it, that the back end does not lower.";
    /// A PRNG key consumed twice: both uses draw the same random bits.
    KeyReuse => "J0013", "key-reuse", Warning,
        "A PRNG key is consumed twice: both uses draw the same random bits.";
    /// A constant index out of range of a gather, scatter or dynamic
    /// slice, which JAX clamps, fills or drops without a word.
    OutOfBoundsIndex => "J0014", "out-of-bounds-index", Warning,
        "A constant index is out of range of a gather, scatter or dynamic slice: JAX clamps, fills or drops without a word.";
    /// A 64-bit dtype requested where JAX computes in 32 bits (x64 off), or
    /// a Python scalar that overflowed a narrow float dtype (weak typing).
    DtypeSurprise => "J0015", "dtype-surprise", Warning,
        "A dtype is not what the code asks: a 64-bit one in a program traced with x64 off (computed in 32 bits), or a Python scalar overflowed to inf in a float16 array's dtype.";
    /// A back end met an inconsistency of its own: a bug in `jaxpr`, kept
    /// apart from J0012 so that no bug reads as a documented limit.
    InternalError => "J0016", "internal-error", Error,
        "`jaxpr build` only: a bug in jaxpr itself, not in the program; please report it with the file.";
    /// A dimension of a `shard_map` operand (or `pmap`'s mapped one) that
    /// the mesh axes its spec splits it over do not divide.
    IndivisibleDimension => "J0017", "indivisible-dimension", Error,
        "A dimension is not divisible by the product of the mesh axes its spec splits it over.";
    /// A spec or a collective names an axis the mesh does not have.
    UnknownMeshAxis => "J0018", "unknown-mesh-axis", Error,
        "A spec or a collective names a mesh axis that the enclosing mesh does not have.";
    /// `shard_map`'s check_vma (check_rep before jax 0.6): an output spec
    /// that leaves out an axis the value varies over claims a replication
    /// that does not hold.
    UnreplicatedOutput => "J0019", "unreplicated-output", Error,
        "A `shard_map` output varies over a mesh axis its out_specs leaves out, so the claimed replication does not hold.";
    /// A collective over an axis its operand does not vary over (or `pvary`
    /// over one it already varies over), or a varying-axes type that is not
    /// what the rule gives.
    VaryingAxes => "J0020", "varying-axes", Error,
        "A value's varying mesh axes (check_vma) are not what a collective or `shard_map` needs or gives.";
    /// A `pallas_call` block shape of another rank than its array, or a
    /// kernel reference that is not the block it refers to.
    BlockShape => "J0021", "block-shape", Error,
        "A Pallas block shape does not fit its array, or a kernel's reference is not the block it refers to.";
    /// A printed Pallas index map that does not take the grid point or
    /// does not give a block index per dimension (a block outside its
    /// array is J0014).
    IndexMap => "J0022", "index-map", Error,
        "A Pallas index map does not take one index per grid axis, or does not give one block index per dimension of its array.";
}

impl DiagKind {
    pub fn rule(self) -> &'static RuleInfo {
        &RULES[self as usize]
    }

    pub fn name(self) -> &'static str {
        self.rule().name
    }

    pub fn code(self) -> &'static str {
        self.rule().code
    }

    pub fn from_name(name: &str) -> Option<DiagKind> {
        RULES.iter().find(|r| r.name == name).map(|r| r.kind)
    }

    /// A rule by its code (`J0004`) or its name (`shape-mismatch`).
    pub fn from_code_or_name(text: &str) -> Option<DiagKind> {
        RULES
            .iter()
            .find(|r| r.code.eq_ignore_ascii_case(text) || r.name == text)
            .map(|r| r.kind)
    }
}

impl RuleInfo {
    /// The rule's page as `jaxpr rule` prints it and `docs/rules.md` holds it.
    pub fn page(&self) -> String {
        format!(
            "# {} `{}`\n\nDefault severity: {}.\n\n{}\n\n{}",
            self.code,
            self.name,
            self.default_severity.name(),
            self.summary,
            self.doc.trim_end()
        ) + "\n"
    }
}

/// The table of every rule (markdown), as the README and `docs/rules.md`
/// show it.
pub fn rules_table(link_pages: bool) -> String {
    let mut out = String::from("| code | name | default | summary |\n|---|---|---|---|\n");
    for rule in RULES {
        let code = if link_pages {
            format!(
                "[{}](docs/rules.md#{}-{})",
                rule.code,
                rule.code.to_ascii_lowercase(),
                rule.name
            )
        } else {
            rule.code.to_string()
        };
        out += &format!(
            "| {code} | `{}` | {} | {} |\n",
            rule.name,
            rule.default_severity.name(),
            rule.summary
        );
    }
    out
}

/// `docs/rules.md`: the table, then every rule's page (their headings one
/// level down).
pub fn rules_reference() -> String {
    let mut out = String::from(
        "# Rules\n\nGenerated from the rule table (`crates/syntax/src/diagnostics.rs`, pages in \
         `crates/syntax/rules/`) by `UPDATE_DOCS=1 cargo test -p jaxpr-syntax rules`; do not \
         edit by hand. `jaxpr rule CODE` prints one page; the README says how to select rules.\n\n",
    );
    out += &rules_table(false);
    for rule in RULES {
        out += "\n";
        let mut in_code = false;
        for line in rule.page().lines() {
            in_code ^= line.starts_with("```");
            if !in_code && line.starts_with('#') {
                out.push('#');
            }
            out += line;
            out.push('\n');
        }
    }
    out
}

/// A secondary location that explains the primary one (where a dimension
/// variable was bound, the other branch, the call-site operand...).
#[derive(Clone, PartialEq, Eq, Debug, Hash)]
pub struct Related {
    pub range: TextRange,
    pub message: String,
}

#[derive(Clone, PartialEq, Eq, Debug, Hash)]
pub struct Diagnostic {
    pub severity: Severity,
    pub kind: DiagKind,
    pub message: String,
    /// Primary range: the offending token.
    pub range: TextRange,
    pub related: Vec<Related>,
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn error(kind: DiagKind, range: TextRange, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            kind,
            message: message.into(),
            range,
            related: Vec::new(),
            help: None,
        }
    }
    pub fn warning(kind: DiagKind, range: TextRange, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            kind,
            message: message.into(),
            range,
            related: Vec::new(),
            help: None,
        }
    }
    pub fn with_related(mut self, range: TextRange, message: impl Into<String>) -> Self {
        self.related.push(Related {
            range,
            message: message.into(),
        });
        self
    }
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
    pub fn shifted(mut self, by: u32) -> Self {
        self.range = self.range.shifted(by);
        for r in &mut self.related {
            r.range = r.range.shifted(by);
        }
        self
    }
}

#[cfg(test)]
mod rules_tests {
    use super::*;

    /// The table's rows are in `DiagKind` order, with unique well-formed
    /// codes and names, and every page has the four sections.
    #[test]
    fn rules_table_is_consistent() {
        for (i, rule) in RULES.iter().enumerate() {
            assert_eq!(rule.kind as usize, i, "{} is out of order", rule.code);
            assert_eq!(rule.kind.rule().code, rule.code);
            assert!(
                rule.code.len() == 5
                    && rule.code.starts_with('J')
                    && rule.code[1..].bytes().all(|b| b.is_ascii_digit()),
                "{}",
                rule.code
            );
            assert!(
                rule.name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'-'),
                "{}",
                rule.name
            );
            assert_eq!(rule.summary.lines().count(), 1, "{}", rule.code);
            for section in [
                "## What it means",
                "## Why it matters",
                "## Example",
                "## How to fix",
            ] {
                assert!(rule.doc.contains(section), "{}: no `{section}`", rule.name);
            }
            assert_eq!(DiagKind::from_code_or_name(rule.code), Some(rule.kind));
            assert_eq!(DiagKind::from_code_or_name(rule.name), Some(rule.kind));
        }
        let mut codes: Vec<_> = RULES.iter().map(|r| r.code).collect();
        codes.dedup();
        assert_eq!(codes.len(), RULES.len());
        assert!(codes.windows(2).all(|w| w[0] < w[1]), "codes are in order");
    }

    /// Replaces `path`'s text between `begin` and `end` (or the whole text
    /// when there are no markers) with `generated` under `UPDATE_DOCS=1`,
    /// and fails when what is on disk differs.
    fn generated(path: &str, markers: Option<(&str, &str)>, generated: &str) {
        let full = format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"));
        let on_disk = std::fs::read_to_string(&full).unwrap_or_default();
        let wanted = match markers {
            None => generated.to_string(),
            Some((begin, end)) => {
                let (Some(b), Some(e)) = (on_disk.find(begin), on_disk.find(end)) else {
                    panic!("{path} has no `{begin}` ... `{end}` markers");
                };
                format!("{}{begin}\n{generated}{}", &on_disk[..b], &on_disk[e..])
            }
        };
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(&full, &wanted).unwrap();
            return;
        }
        assert!(
            on_disk == wanted,
            "{path} differs from the rule table: run `UPDATE_DOCS=1 cargo test -p jaxpr-syntax rules`"
        );
    }

    /// `docs/rules.md` is generated from the rule table.
    #[test]
    fn rules_reference_page_is_generated() {
        generated("docs/rules.md", None, &rules_reference());
    }

    /// The README's table of codes is generated from the rule table.
    #[test]
    fn rules_readme_table_is_generated() {
        generated(
            "README.md",
            Some((
                "<!-- rules table: generated -->",
                "<!-- end of rules table -->",
            )),
            &rules_table(true),
        );
    }
}
