//! Reading `jaxpr.toml` and `[tool.jaxpr]` of `pyproject.toml`: every
//! mistake is an error that names the file and the line.

use crate::{PerFileIgnore, RuleLayer, Settings, parse_selector, unknown_selector};
use jaxpr_syntax::diagnostics::DiagKind;
use std::fmt;
use std::path::{Path, PathBuf};
use toml_edit::{Item, TableLike};

pub(crate) const JAXPR_TOML: &str = "jaxpr.toml";
pub(crate) const PYPROJECT_TOML: &str = "pyproject.toml";

/// The keys a configuration table may hold.
const KEYS: [&str; 5] = ["select", "ignore", "warn", "error", "per-file-ignores"];

/// A configuration file that cannot be used: its path, the 1-based line
/// when the mistake has one, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub path: PathBuf,
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.path.display(), self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

impl std::error::Error for ConfigError {}

/// The two files configuration is read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigKind {
    /// `jaxpr.toml`: the keys at the top level.
    JaxprToml,
    /// `pyproject.toml`: the keys in `[tool.jaxpr]`, which it may lack.
    Pyproject,
}

impl ConfigKind {
    /// A `pyproject.toml` by its name; any other file is read as a
    /// `jaxpr.toml`.
    pub fn of(path: &Path) -> ConfigKind {
        match path.file_name() {
            Some(name) if name == PYPROJECT_TOML => ConfigKind::Pyproject,
            _ => ConfigKind::JaxprToml,
        }
    }
}

/// One configuration file's rule selection.
#[derive(Clone, Debug)]
pub struct ConfigFile {
    pub path: PathBuf,
    pub layer: RuleLayer,
    pub per_file_ignores: Vec<PerFileIgnore>,
}

impl ConfigFile {
    /// The settings of the files this configuration governs, with the
    /// command line's `overrides` on top.
    pub fn settings(&self, overrides: &RuleLayer) -> Settings {
        Settings::new(
            Some(self.path.clone()),
            &[&self.layer, overrides],
            self.per_file_ignores.clone(),
        )
    }

    /// A file named on the command line (`--config`): a `pyproject.toml`
    /// must have a `[tool.jaxpr]` table; any other name is read as a
    /// `jaxpr.toml`.
    pub fn load_explicit(path: &Path) -> Result<ConfigFile, ConfigError> {
        let text = read(path)?;
        match ConfigFile::parse(path, &text, ConfigKind::of(path))? {
            Some(file) => Ok(file),
            None => Err(ConfigError {
                path: path.to_path_buf(),
                line: None,
                message: "has no [tool.jaxpr] table".into(),
            }),
        }
    }

    /// `text` read from `path`: a `pyproject.toml`'s `[tool.jaxpr]` table
    /// (`None` when it has none), or a whole `jaxpr.toml`.
    pub fn parse(
        path: &Path,
        text: &str,
        kind: ConfigKind,
    ) -> Result<Option<ConfigFile>, ConfigError> {
        let reader = Reader { path, text };
        let doc = toml_edit::Document::parse(text).map_err(|e| {
            reader.error(
                e.span().map(|s| s.start),
                format!("invalid TOML: {}", e.message().trim_end()),
            )
        })?;
        let table: &dyn TableLike = if kind == ConfigKind::Pyproject {
            let jaxpr = doc
                .get("tool")
                .and_then(Item::as_table_like)
                .and_then(|tool| tool.get("jaxpr"));
            match jaxpr {
                None => return Ok(None),
                Some(item) => item.as_table_like().ok_or_else(|| {
                    reader.error(
                        item.span().map(|s| s.start),
                        "`tool.jaxpr` must be a table".into(),
                    )
                })?,
            }
        } else {
            doc.as_table()
        };
        reader.config(table).map(Some)
    }
}

/// The nearest configuration at or above `folder`: in each folder, a
/// `jaxpr.toml`, else a `pyproject.toml` with a `[tool.jaxpr]` table.
pub fn discover(folder: &Path) -> Result<Option<ConfigFile>, ConfigError> {
    for dir in folder.ancestors() {
        let jaxpr = dir.join(JAXPR_TOML);
        if jaxpr.is_file() {
            let text = read(&jaxpr)?;
            return ConfigFile::parse(&jaxpr, &text, ConfigKind::JaxprToml);
        }
        let pyproject = dir.join(PYPROJECT_TOML);
        if pyproject.is_file() {
            let text = read(&pyproject)?;
            if let Some(file) = ConfigFile::parse(&pyproject, &text, ConfigKind::Pyproject)? {
                return Ok(Some(file));
            }
        }
    }
    Ok(None)
}

fn read(path: &Path) -> Result<String, ConfigError> {
    std::fs::read_to_string(path).map_err(|e| ConfigError {
        path: path.to_path_buf(),
        line: None,
        message: e.to_string(),
    })
}

struct Reader<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Reader<'_> {
    fn error(&self, offset: Option<usize>, message: String) -> ConfigError {
        let line = offset.map(|at| {
            let at = at.min(self.text.len());
            self.text.as_bytes()[..at]
                .iter()
                .filter(|&&b| b == b'\n')
                .count()
                + 1
        });
        ConfigError {
            path: self.path.to_path_buf(),
            line,
            message,
        }
    }

    fn config(&self, table: &dyn TableLike) -> Result<ConfigFile, ConfigError> {
        for (key, _) in table.iter() {
            if !KEYS.contains(&key) {
                let at = table.get_key_value(key).and_then(|(k, _)| k.span());
                return Err(self.error(
                    at.map(|s| s.start),
                    format!("unknown key `{key}`: expected one of {}", KEYS.join(", ")),
                ));
            }
        }
        let list = |key: &str| -> Result<Option<Vec<DiagKind>>, ConfigError> {
            table
                .get(key)
                .map(|item| self.selectors(key, item))
                .transpose()
        };
        let layer = RuleLayer {
            select: list("select")?,
            ignore: list("ignore")?.unwrap_or_default(),
            warn: list("warn")?.unwrap_or_default(),
            error: list("error")?.unwrap_or_default(),
        };
        if let Some(both) = layer.warn.iter().find(|k| layer.error.contains(k)) {
            let at = table.get("error").and_then(Item::span);
            return Err(self.error(
                at.map(|s| s.start),
                format!(
                    "`{}` ({}) is in both `warn` and `error`",
                    both.code(),
                    both.name()
                ),
            ));
        }
        let mut per_file_ignores = Vec::new();
        if let Some(item) = table.get("per-file-ignores") {
            let patterns = item.as_table_like().ok_or_else(|| {
                self.error(
                    item.span().map(|s| s.start),
                    "`per-file-ignores` must be a table of glob patterns to rule lists".into(),
                )
            })?;
            for (pattern, rules) in patterns.iter() {
                let at = patterns.get_key_value(pattern).and_then(|(k, _)| k.span());
                let pattern = glob::Pattern::new(pattern).map_err(|e| {
                    self.error(
                        at.map(|s| s.start),
                        format!("`{pattern}` is not a glob pattern: {}", e.msg),
                    )
                })?;
                per_file_ignores.push(PerFileIgnore {
                    pattern,
                    ignore: self.selectors("per-file-ignores", rules)?,
                });
            }
        }
        Ok(ConfigFile {
            path: self.path.to_path_buf(),
            layer,
            per_file_ignores,
        })
    }

    /// A list of selectors (`["J0004", "unknown-primitive", "J00"]`).
    fn selectors(&self, key: &str, item: &Item) -> Result<Vec<DiagKind>, ConfigError> {
        let not_a_list = || {
            self.error(
                item.span().map(|s| s.start),
                format!("`{key}` must be a list of rule codes or names, such as [\"J0010\"]"),
            )
        };
        let array = item.as_array().ok_or_else(not_a_list)?;
        let mut kinds = Vec::new();
        for value in array.iter() {
            let at = value.span().map(|s| s.start);
            let text = value.as_str().ok_or_else(not_a_list)?;
            let named =
                parse_selector(text).ok_or_else(|| self.error(at, unknown_selector(text)))?;
            kinds.extend(named);
        }
        Ok(kinds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ConfigFile, ConfigError> {
        ConfigFile::parse(Path::new("jaxpr.toml"), text, ConfigKind::JaxprToml)
            .map(|f| f.expect("a table"))
    }

    #[test]
    fn selectors_are_codes_names_prefixes_or_all() {
        let file = parse(
            "select = [\"J000\", \"unknown-primitive\"]\nignore = [\"J0004\"]\nwarn = [\"dtype-mismatch\"]\n",
        )
        .unwrap();
        let select = file.layer.select.unwrap();
        assert_eq!(select.len(), 10, "J0001-J0009 and J0010: {select:?}");
        assert_eq!(file.layer.ignore, vec![DiagKind::ShapeMismatch]);
        assert_eq!(file.layer.warn, vec![DiagKind::DtypeMismatch]);
        assert_eq!(parse_selector("ALL").unwrap().len(), DiagKind::ALL.len());
        assert_eq!(parse_selector("J1"), None);
        assert_eq!(parse_selector("J00040"), None);
    }

    #[test]
    fn mistakes_name_the_line() {
        let err = parse(
            "# rules\nselect = [\"J0004\"]\nignore = [\n  \"J0010\",\n  \"shape-mismach\",\n]\n",
        )
        .unwrap_err();
        assert_eq!(err.line, Some(5), "{err}");
        assert!(
            err.to_string()
                .starts_with("jaxpr.toml:5: `shape-mismach` is not a rule"),
            "{err}"
        );
        let err = parse("\n\nselct = [\"J0004\"]\n").unwrap_err();
        assert_eq!(err.line, Some(3), "{err}");
        assert!(err.message.contains("unknown key `selct`"), "{err}");
        let err = parse("select = \"J0004\"\n").unwrap_err();
        assert_eq!(err.line, Some(1));
        assert!(err.message.contains("must be a list"), "{err}");
        let err = parse("select = [\n").unwrap_err();
        assert!(err.message.starts_with("invalid TOML"), "{err}");
        let err = parse("warn = [\"J0009\"]\nerror = [\"J0009\"]\n").unwrap_err();
        assert!(err.message.contains("both"), "{err}");
        let err = parse("[per-file-ignores]\n\"[\" = [\"J0010\"]\n").unwrap_err();
        assert_eq!(err.line, Some(2), "{err}");
    }

    #[test]
    fn pyproject_without_a_table_is_not_a_configuration() {
        let none = ConfigFile::parse(
            Path::new("pyproject.toml"),
            "[project]\nname = \"x\"\n",
            ConfigKind::Pyproject,
        );
        assert!(none.unwrap().is_none());
        let some = ConfigFile::parse(
            Path::new("pyproject.toml"),
            "[project]\nname = \"x\"\n\n[tool.jaxpr]\nignore = [\"J0011\"]\n",
            ConfigKind::Pyproject,
        );
        assert_eq!(
            some.unwrap().unwrap().layer.ignore,
            vec![DiagKind::AliasedDimension]
        );
        let err = ConfigFile::parse(
            Path::new("pyproject.toml"),
            "[tool.jaxpr]\nselect = [\"J0004\"]\nwarn = [\"J9999\"]\n",
            ConfigKind::Pyproject,
        )
        .unwrap_err();
        assert_eq!(err.line, Some(3), "{err}");
    }
}
