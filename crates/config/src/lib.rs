//! Rule selection, in the manner of ruff: which diagnostic codes are shown
//! and with which severity, read from `[tool.jaxpr]` in a `pyproject.toml`
//! or from a `jaxpr.toml` (the nearest one above the checked file wins),
//! with the command line's `--select`/`--ignore`/`--warn`/`--error` on top.
//!
//! [`Settings::shown`] is the one filter from a file's diagnostics to what
//! is shown: `jaxpr check` and the language server both call it, on the
//! diagnostics of the one check core (`jaxpr_db`). Configuration changes
//! what is shown, never what is checked, and never what `jaxpr build`
//! refuses.

mod file;

pub use file::{ConfigError, ConfigFile, ConfigKind, discover};

use jaxpr_syntax::diagnostics::{DiagKind, Diagnostic, RULES, Severity};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// One layer of rule selection: a configuration file's, or the command
/// line's. Later layers win (see [`Settings::new`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuleLayer {
    /// The rules to run; `None` keeps the previous layer's choice (the
    /// first layer's is every rule).
    pub select: Option<Vec<DiagKind>>,
    pub ignore: Vec<DiagKind>,
    /// Reported as warnings.
    pub warn: Vec<DiagKind>,
    /// Reported as errors.
    pub error: Vec<DiagKind>,
}

/// The rules a selector names: a code (`J0004`), a name (`shape-mismatch`),
/// a code prefix (`J00`, `J001`) or `ALL`; `None` when it names none.
pub fn parse_selector(text: &str) -> Option<Vec<DiagKind>> {
    let text = text.trim();
    if text == "ALL" {
        return Some(DiagKind::ALL.to_vec());
    }
    if let Some(kind) = DiagKind::from_code_or_name(text) {
        return Some(vec![kind]);
    }
    let is_prefix = text.len() < 5
        && text.starts_with(['J', 'j'])
        && text[1..].bytes().all(|b| b.is_ascii_digit());
    let kinds: Vec<DiagKind> = RULES
        .iter()
        .filter(|r| is_prefix && r.code[1..].starts_with(&text[1..]))
        .map(|r| r.kind)
        .collect();
    (!kinds.is_empty()).then_some(kinds)
}

/// What a selector that names no rule is told.
pub fn unknown_selector(text: &str) -> String {
    format!(
        "`{text}` is not a rule: expected a code (`J0004`), a name (`shape-mismatch`), a code prefix (`J00`) or `ALL` (`jaxpr rule --all` lists them)"
    )
}

/// Files whose paths match `pattern` (relative to the configuration
/// file's folder; a pattern without `/` matches the file name) do not show
/// `ignore`.
#[derive(Clone, Debug)]
pub struct PerFileIgnore {
    pub pattern: glob::Pattern,
    pub ignore: Vec<DiagKind>,
}

/// The resolved selection for the files one configuration governs.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The configuration file, if any (for messages, and the base of
    /// per-file patterns).
    pub source: Option<PathBuf>,
    enabled: Vec<bool>,
    severity: Vec<Severity>,
    per_file_ignores: Vec<PerFileIgnore>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings::new(None, &[], Vec::new())
    }
}

impl Settings {
    /// Resolves `layers` in order, as ruff does: a layer with `select`
    /// starts again from exactly those rules, then removes its `ignore`;
    /// a layer without only removes its `ignore` from what the previous
    /// layers chose. `warn` and `error` change the severity, the last
    /// layer's word winning.
    pub fn new(
        source: Option<PathBuf>,
        layers: &[&RuleLayer],
        per_file_ignores: Vec<PerFileIgnore>,
    ) -> Settings {
        let mut enabled = vec![true; RULES.len()];
        let mut severity: Vec<Severity> = RULES.iter().map(|r| r.default_severity).collect();
        for layer in layers {
            if let Some(select) = &layer.select {
                enabled.fill(false);
                for kind in select {
                    enabled[*kind as usize] = true;
                }
            }
            for kind in &layer.ignore {
                enabled[*kind as usize] = false;
            }
            for kind in &layer.warn {
                severity[*kind as usize] = Severity::Warning;
            }
            for kind in &layer.error {
                severity[*kind as usize] = Severity::Error;
            }
        }
        // A file that does not parse has nothing else worth showing: syntax
        // errors are always shown, as errors.
        enabled[DiagKind::Syntax as usize] = true;
        severity[DiagKind::Syntax as usize] = Severity::Error;
        Settings {
            source,
            enabled,
            severity,
            per_file_ignores,
        }
    }

    pub fn is_enabled(&self, kind: DiagKind) -> bool {
        self.enabled[kind as usize]
    }

    pub fn severity(&self, kind: DiagKind) -> Severity {
        self.severity[kind as usize]
    }

    /// The diagnostics of the file at `path` to show: the unselected rules
    /// and the file's per-file ignores dropped, severities as configured.
    pub fn shown(&self, path: &Path, diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
        let ignored_here = self.per_file_ignored(path);
        diagnostics
            .into_iter()
            .filter_map(|mut d| {
                d.severity = self.shown_with(&ignored_here, d.kind)?;
                Some(d)
            })
            .collect()
    }

    /// How a finding of `kind` in the file at `path` is shown: None when
    /// the configuration does not show it there. For findings that are
    /// not [`Diagnostic`]s (a tracing session's, shown on Python lines).
    pub fn shown_as(&self, path: &Path, kind: DiagKind) -> Option<Severity> {
        self.shown_with(&self.per_file_ignored(path), kind)
    }

    fn shown_with(&self, ignored_here: &[DiagKind], kind: DiagKind) -> Option<Severity> {
        let shown =
            kind == DiagKind::Syntax || (self.is_enabled(kind) && !ignored_here.contains(&kind));
        shown.then(|| self.severity(kind))
    }

    fn per_file_ignored(&self, path: &Path) -> Vec<DiagKind> {
        if self.per_file_ignores.is_empty() {
            return Vec::new();
        }
        // A configuration named by a bare file name is in the current folder.
        let base = self.source.as_deref().and_then(Path::parent).map(|b| {
            if b.as_os_str().is_empty() {
                Path::new(".")
            } else {
                b
            }
        });
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let relative = base
            .and_then(|b| absolute.strip_prefix(std::path::absolute(b).ok()?).ok())
            .unwrap_or(path);
        let name = path.file_name().map(Path::new);
        let options = glob::MatchOptions {
            case_sensitive: true,
            require_literal_separator: true,
            require_literal_leading_dot: false,
        };
        self.per_file_ignores
            .iter()
            .filter(|p| {
                p.pattern.matches_path_with(relative, options)
                    || (!p.pattern.as_str().contains('/')
                        && name.is_some_and(|n| p.pattern.matches_path_with(n, options)))
            })
            .flat_map(|p| p.ignore.iter().copied())
            .collect()
    }
}

/// Where the settings of each checked file come from: one configuration
/// file for all (`--config`), or the nearest one above each file, and the
/// command line's layer on top. Settings are kept per folder; the language
/// server calls [`Resolver::forget`] when a configuration file changes.
pub struct Resolver {
    explicit: Option<ConfigFile>,
    overrides: RuleLayer,
    by_folder: Mutex<HashMap<PathBuf, Result<Arc<Settings>, ConfigError>>>,
}

impl Resolver {
    /// `config`: a `--config` file, used for every file instead of the
    /// nearest one.
    pub fn new(config: Option<&Path>, overrides: RuleLayer) -> Result<Resolver, ConfigError> {
        let explicit = config.map(ConfigFile::load_explicit).transpose()?;
        Ok(Resolver {
            explicit,
            ..Resolver::nearest(overrides)
        })
    }

    /// The nearest configuration above each file, `overrides` on top.
    pub fn nearest(overrides: RuleLayer) -> Resolver {
        Resolver {
            explicit: None,
            overrides,
            by_folder: Mutex::new(HashMap::new()),
        }
    }

    /// The settings of the file at `path`; an error when the configuration
    /// that governs it is invalid.
    pub fn settings_for(&self, path: &Path) -> Result<Arc<Settings>, ConfigError> {
        if let Some(file) = &self.explicit {
            return Ok(Arc::new(file.settings(&self.overrides)));
        }
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let folder = absolute.parent().unwrap_or(Path::new("/")).to_path_buf();
        let mut cache = self.by_folder.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .entry(folder)
            .or_insert_with_key(|folder| {
                let file = discover(folder)?;
                Ok(Arc::new(match file {
                    Some(file) => file.settings(&self.overrides),
                    None => Settings::new(None, &[&self.overrides], Vec::new()),
                }))
            })
            .clone()
    }

    /// Forgets what was read, so that the next [`Resolver::settings_for`]
    /// reads the configuration files again.
    pub fn forget(&self) {
        self.by_folder
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }
}

/// Whether a file name is one configuration is read from.
pub fn is_config_file_name(name: &str) -> bool {
    name == file::JAXPR_TOML || name == file::PYPROJECT_TOML
}
