//! End-to-end test of the Neovim client (`editors/nvim`): a real headless
//! Neovim (0.7 or later) runs `editors/nvim/test/e2e.lua` against the built
//! `jaxpr-lsp` on files of the shared corpus.
//!
//! The test fails (it does not skip) when `nvim` cannot be run: CI installs it.
//! `$JAXPR_NVIM` names another Neovim binary; `$JAXPR_CORPUS` the corpus.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Longer than the script's own global timeout (120 s), so that it reports
/// first; `$JAXPR_NVIM_TIMEOUT_SECS` overrides it.
const TIMEOUT: Duration = Duration::from_secs(180);

fn corpus() -> PathBuf {
    let dir = std::env::var_os("JAXPR_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus"));
    dir.canonicalize()
        .unwrap_or_else(|e| panic!("corpus {}: {e} (set JAXPR_CORPUS)", dir.display()))
}

#[test]
fn neovim_client_end_to_end() {
    let plugin = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../editors/nvim")
        .canonicalize()
        .expect("editors/nvim");
    let script = plugin.join("test/e2e.lua");
    assert!(script.is_file(), "{} is missing", script.display());
    let nvim = std::env::var_os("JAXPR_NVIM").unwrap_or_else(|| "nvim".into());

    // Neovim's state (LSP log, shada, swap) goes to a scratch directory.
    let home = std::env::temp_dir().join(format!("jaxpr-nvim-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();

    let child = Command::new(&nvim)
        .args(["--headless", "--noplugin", "-u", "NONE", "-i", "NONE", "-n"])
        // The paths travel in the environment, so no Ex escaping is needed.
        .args(["--cmd", "lua vim.opt.rtp:prepend(vim.env.JAXPR_NVIM_PLUGIN)"])
        .args(["-c", "lua dofile(vim.env.JAXPR_NVIM_E2E)"])
        .env("JAXPR_NVIM_PLUGIN", &plugin)
        .env("JAXPR_NVIM_E2E", &script)
        .env("JAXPR_LSP", env!("CARGO_BIN_EXE_jaxpr-lsp"))
        .env("JAXPR_CORPUS", corpus())
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env_remove("NVIM")
        .env_remove("NVIM_LISTEN_ADDRESS")
        .env_remove("VIMINIT")
        .current_dir(&home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run {nvim:?} ({e}): this test needs Neovim 0.7 or later on PATH (or $JAXPR_NVIM); CI installs it")
        });

    let timeout = std::env::var("JAXPR_NVIM_TIMEOUT_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .map(Duration::from_secs)
        .unwrap_or(TIMEOUT);
    let (status, stdout, stderr) = common::wait_with_timeout(child, timeout);
    let _ = std::fs::remove_dir_all(&home);
    let report = format!("--- Neovim stdout ---\n{stdout}\n--- Neovim stderr ---\n{stderr}");
    match status {
        None => panic!("Neovim did not finish within {timeout:?} and was killed\n{report}"),
        Some(s) if !s.success() => panic!("the Neovim end-to-end test failed ({s})\n{report}"),
        Some(_) => {
            assert!(
                stdout.contains("all Neovim end-to-end checks passed"),
                "Neovim exited 0 without finishing\n{report}"
            );
            println!("{report}");
        }
    }
}
