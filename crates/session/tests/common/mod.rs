use std::path::PathBuf;

/// An empty folder `group/name` under the tests' temporary folder, with
/// symbolic links resolved.
pub fn fresh(group: &str, name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(group)
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap()
}
