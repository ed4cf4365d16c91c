//! What `jaxpr build` writes and names: an output never destroys its input,
//! a special file or the library's own header; a library's C name is never
//! one the library uses itself. Each is refused with exit 2 and a message,
//! before anything is written.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const PROGRAM: &str = "{ lambda ; a:f32[3]. let b:f32[3] = neg a in (b,) }\n";

/// A fresh folder for one test, and `model.jaxpr` in it.
fn folder(name: &str) -> (PathBuf, PathBuf) {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("outputs").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let input = d.join("model.jaxpr");
    std::fs::write(&input, PROGRAM).unwrap();
    (d, input)
}

fn build(input: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_jaxpr-build"))
        .arg("build")
        .arg(input)
        .args(["--color", "never"])
        .args(args)
        .output()
        .unwrap()
}

/// Exit 2 with `message` on stderr, and no panic.
fn refused(out: &Output, message: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(message), "{stderr:?} does not say {message:?}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

const EMITS: [&str; 4] = ["stablehlo", "native", "llvm-ir", "object"];

#[test]
fn the_input_is_never_the_output() {
    let (d, input) = folder("input");
    let link = d.join("link.out");
    std::os::unix::fs::symlink(&input, &link).unwrap();
    for emit in EMITS {
        for out in [&input, &link] {
            let b = build(&input, &["--emit", emit, "-o", out.to_str().unwrap()]);
            refused(&b, "this is the input file");
            assert_eq!(std::fs::read_to_string(&input).unwrap(), PROGRAM, "{emit}: input changed");
        }
    }
}

#[test]
fn a_library_and_its_header_are_two_files() {
    let (d, input) = folder("header");
    let h = d.join("libx.h");
    refused(&build(&input, &["--emit", "native", "-o", h.to_str().unwrap()]), "header would be written over the library");
    assert!(!h.exists());
    // Beside another name both are written.
    let so = d.join("libx.so");
    let b = build(&input, &["--emit", "native", "-o", so.to_str().unwrap()]);
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    assert!(std::fs::read_to_string(&h).unwrap().contains("int32_t     model("));
    assert_eq!(&std::fs::read(&so).unwrap()[..4], b"\x7fELF");
}

#[test]
fn special_files_are_not_replaced() {
    let (d, input) = folder("special");
    let fifo = d.join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let mut specials = vec![fifo];
    // A device node of our own (the null device's numbers), where we may
    // make one: as root, `-o /dev/null` once replaced the real one.
    let dev = d.join("null");
    let c = std::ffi::CString::new(dev.to_str().unwrap()).unwrap();
    if unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) } == 0 {
        specials.push(dev);
    }
    specials.push(d.clone());
    for emit in EMITS {
        for s in &specials {
            let before = std::fs::symlink_metadata(s).unwrap().file_type();
            refused(&build(&input, &["--emit", emit, "-o", s.to_str().unwrap()]), "not a regular file");
            let after = std::fs::symlink_metadata(s).unwrap().file_type();
            assert!(
                before.is_fifo() == after.is_fifo()
                    && before.is_char_device() == after.is_char_device()
                    && before.is_dir() == after.is_dir(),
                "{emit}: {} replaced",
                s.display()
            );
        }
    }
}

#[test]
fn c_names_the_library_uses_itself_are_refused() {
    let (d, input) = folder("names");
    let so = d.join("libm_out.so");
    let out = ["-o", so.to_str().unwrap()];
    for (name, why) in [
        ("malloc", "a name of the C library"),
        ("free", "a name of the C library"),
        ("sinf", "a name of the math library"),
        ("jx_take", "`jx_` names"),
        ("int", "a C keyword"),
        ("__init", "reserved by C"),
        ("1x", "not a C identifier"),
    ] {
        for emit in ["native", "llvm-ir", "object"] {
            let b = build(&input, &[&["--emit", emit, "--name", name][..], &out].concat());
            refused(&b, why);
        }
    }
    assert!(!so.exists());
    // A file named like a libm function needs another name.
    for stem in ["tanh", "exp"] {
        let f = d.join(format!("{stem}.jaxpr"));
        std::fs::write(&f, PROGRAM).unwrap();
        refused(&build(&f, &[&["--emit", "native"][..], &out].concat()), "choose another with --name");
        let b = build(&f, &[&["--emit", "native", "--name", &format!("{stem}_model")][..], &out].concat());
        assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
        // StableHLO has no C names: the file builds as it is named.
        let b = build(&f, &["-o", d.join(format!("{stem}.mlir")).to_str().unwrap()]);
        assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    }
}
