//! Which rules the server shows for a document: the configuration the
//! command line reads (`jaxpr_config`), found upwards from the document's
//! file, so each workspace folder (and each project below it) gets its own.
//! Read again when a `jaxpr.toml` or `pyproject.toml` changes.

use jaxpr_config::{ConfigError, Resolver, RuleLayer, Settings};
use std::sync::{Arc, Mutex};
use tower_lsp::lsp_types::Url;

pub struct RuleConfig {
    resolver: Resolver,
    /// The configuration errors already shown to the user (each is shown
    /// once, not at every edit), until the configuration is read again.
    reported: Mutex<Vec<ConfigError>>,
}

impl Default for RuleConfig {
    fn default() -> Self {
        RuleConfig {
            // No command line: only the files decide.
            resolver: Resolver::nearest(RuleLayer::default()),
            reported: Mutex::new(Vec::new()),
        }
    }
}

/// A document's settings, with the error to show the user when its
/// configuration is broken (the document then shows every rule).
pub struct DocumentSettings {
    pub settings: Arc<Settings>,
    pub new_error: Option<ConfigError>,
}

impl RuleConfig {
    pub fn for_document(&self, uri: &Url) -> DocumentSettings {
        let Ok(path) = uri.to_file_path() else {
            return DocumentSettings {
                settings: Arc::default(),
                new_error: None,
            };
        };
        match self.resolver.settings_for(&path) {
            Ok(settings) => DocumentSettings {
                settings,
                new_error: None,
            },
            Err(e) => {
                let mut reported = self.reported.lock().unwrap_or_else(|e| e.into_inner());
                let new_error = (!reported.contains(&e)).then(|| {
                    reported.push(e.clone());
                    e
                });
                DocumentSettings {
                    settings: Arc::default(),
                    new_error,
                }
            }
        }
    }

    /// Forgets what was read: the next document reads its configuration
    /// again. Returns the configuration files whose errors had been reported.
    pub fn reload(&self) -> Vec<std::path::PathBuf> {
        self.resolver.forget();
        let reported =
            std::mem::take(&mut *self.reported.lock().unwrap_or_else(|e| e.into_inner()));
        reported.into_iter().map(|e| e.path).collect()
    }
}

/// Whether `uri` is a file configuration is read from.
pub fn is_config_file(uri: &Url) -> bool {
    uri.to_file_path().is_ok_and(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(jaxpr_config::is_config_file_name)
    })
}
