//! The Neovim plugin finds `jaxpr-lsp` in the active Python environment, as
//! `pip install jaxpr` installs it, and names where it looked when it finds
//! none (`editors/nvim/test/discovery.lua` in a headless Neovim).

use std::path::{Path, PathBuf};
use std::process::Command;

#[test]
fn neovim_finds_the_server_in_the_active_virtual_environment() {
    let plugin = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../editors/nvim")
        .canonicalize()
        .expect("editors/nvim");
    let corpus = std::env::var_os("JAXPR_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus"))
        .canonicalize()
        .expect("the corpus (set JAXPR_CORPUS)");
    let home = std::env::temp_dir().join(format!("jaxpr-nvim-discovery-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    let venv = home.join("venv");
    std::fs::create_dir_all(venv.join("bin")).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_jaxpr-lsp"), venv.join("bin/jaxpr-lsp"))
        .unwrap();
    let empty = home.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let nvim = std::env::var_os("JAXPR_NVIM").unwrap_or_else(|| "nvim".into());
    let out = Command::new(&nvim)
        .args(["--headless", "--noplugin", "-u", "NONE", "-i", "NONE", "-n"])
        .args([
            "--cmd",
            "lua vim.opt.rtp:prepend(vim.env.JAXPR_NVIM_PLUGIN)",
        ])
        .args([
            "-c",
            "lua dofile(vim.env.JAXPR_NVIM_PLUGIN .. '/test/discovery.lua')",
        ])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("JAXPR_NVIM_PLUGIN", &plugin)
        .env("JAXPR_TEST_VENV", &venv)
        .env("JAXPR_TEST_EMPTY", &empty)
        .env("JAXPR_CORPUS", &corpus)
        .current_dir(&home)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {nvim:?}: {e} (CI installs Neovim)"));
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.contains("discovery: ok"),
        "{said}"
    );
    let _ = std::fs::remove_dir_all(&home);
}
