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
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("outputs")
        .join(name);
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
    assert!(
        stderr.contains(message),
        "{stderr:?} does not say {message:?}"
    );
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
            assert_eq!(
                std::fs::read_to_string(&input).unwrap(),
                PROGRAM,
                "{emit}: input changed"
            );
        }
    }
}

#[test]
fn a_library_and_its_header_are_two_files() {
    let (d, input) = folder("header");
    let h = d.join("libx.h");
    refused(
        &build(&input, &["--emit", "native", "-o", h.to_str().unwrap()]),
        "header would be written over the library",
    );
    assert!(!h.exists());
    // Beside another name both are written.
    let so = d.join("libx.so");
    let b = build(&input, &["--emit", "native", "-o", so.to_str().unwrap()]);
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    assert!(
        std::fs::read_to_string(&h)
            .unwrap()
            .contains("int32_t     model(")
    );
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
            let why = if s.is_dir() {
                "is a folder"
            } else {
                "not a regular file"
            };
            refused(
                &build(&input, &["--emit", emit, "-o", s.to_str().unwrap()]),
                why,
            );
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
            let b = build(
                &input,
                &[&["--emit", emit, "--name", name][..], &out].concat(),
            );
            refused(&b, why);
        }
    }
    assert!(!so.exists());
    // A file named like a libm function needs another name.
    for stem in ["tanh", "exp"] {
        let f = d.join(format!("{stem}.jaxpr"));
        std::fs::write(&f, PROGRAM).unwrap();
        refused(
            &build(&f, &[&["--emit", "native"][..], &out].concat()),
            "choose another with --name",
        );
        let b = build(
            &f,
            &[
                &["--emit", "native", "--name", &format!("{stem}_model")][..],
                &out,
            ]
            .concat(),
        );
        assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
        // StableHLO has no C names: the file builds as it is named.
        let b = build(
            &f,
            &["-o", d.join(format!("{stem}.mlir")).to_str().unwrap()],
        );
        assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    }
}

/// `-o .`, `-o ..`, `-o dir/` and an existing folder are refused as
/// folders, in every back end; for a library this comes before the header
/// rule (`.` has no name to give a header, and once was refused as "the
/// header would be written over the library").
#[test]
fn folders_get_the_folder_message() {
    let (d, input) = folder("folders");
    let sub = d.join("sub");
    std::fs::create_dir(&sub).unwrap();
    let sub_slash = format!("{}/", sub.display());
    let absent_slash = format!("{}/", d.join("absent").display());
    for emit in EMITS {
        for out in [
            ".",
            "..",
            "sub/",
            "sub",
            "./",
            "sub/..",
            &sub_slash,
            sub.to_str().unwrap(),
            &absent_slash,
        ] {
            let b = Command::new(env!("CARGO_BIN_EXE_jaxpr-build"))
                .current_dir(&d)
                .args([
                    "build",
                    input.to_str().unwrap(),
                    "--color",
                    "never",
                    "--emit",
                    emit,
                    "-o",
                    out,
                ])
                .output()
                .unwrap();
            refused(&b, "is a folder; a build writes a file");
        }
    }
    assert!(sub.is_dir() && !d.join("absent").exists());
    assert_eq!(
        std::fs::read_dir(&sub).unwrap().count(),
        0,
        "something was written in the folder"
    );
}

/// The C standard headers a program may include beside a library's header
/// (C17's, as glibc has them).
const STD_HEADERS: &[&str] = &[
    "assert.h",
    "complex.h",
    "ctype.h",
    "errno.h",
    "fenv.h",
    "float.h",
    "inttypes.h",
    "iso646.h",
    "limits.h",
    "locale.h",
    "math.h",
    "setjmp.h",
    "signal.h",
    "stdalign.h",
    "stdarg.h",
    "stdatomic.h",
    "stdbool.h",
    "stddef.h",
    "stdint.h",
    "stdio.h",
    "stdlib.h",
    "stdnoreturn.h",
    "string.h",
    "tgmath.h",
    "threads.h",
    "time.h",
    "uchar.h",
    "wchar.h",
    "wctype.h",
];

fn std_includes() -> String {
    STD_HEADERS
        .iter()
        .map(|h| format!("#include <{h}>\n"))
        .collect()
}

/// Runs `compiler args... file` on `src` written to `dir/file`: whether
/// it succeeded, and its stderr.
fn compile(dir: &Path, compiler: &str, args: &[&str], file: &str, src: &str) -> (bool, String) {
    std::fs::write(dir.join(file), src).unwrap();
    let out = Command::new(compiler)
        .current_dir(dir)
        .args(args)
        .arg(file)
        .output()
        .unwrap_or_else(|e| panic!("{compiler}: {e}"));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The header of a library named `probe`, and a function that makes the
/// header a library named otherwise would have (the header depends on the
/// name only by substitution).
fn probe_header(d: &Path, input: &Path) -> impl Fn(&str) -> String {
    let so = d.join("libprobe.so");
    let b = build(
        input,
        &[
            "--emit",
            "native",
            "--name",
            "probe",
            "-o",
            so.to_str().unwrap(),
        ],
    );
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    let text = std::fs::read_to_string(d.join("libprobe.h")).unwrap();
    assert!(text.contains("int32_t     probe("), "{text}");
    move |name: &str| text.replace("probe", name)
}

/// Each class of names the C standard headers, C, POSIX, C++ or the
/// linker keep is refused (exit 2, before anything is written), and each
/// is real: the header a library of that name would have does not compile
/// beside the standard headers (before or after them), as C++, or does
/// not link.
#[test]
fn names_that_would_break_the_header_are_refused() {
    let (d, input) = folder("header-names");
    let header = probe_header(&d, &input);
    let so = d.join("libbad.so");
    enum Fails {
        /// `cc -c` of the header with the standard headers, both orders.
        C,
        /// `c++ -c` of the header.
        Cxx,
        /// a C program with its own `main` that includes the header.
        Program,
        /// `cc -shared` of a library that defines the function.
        Link,
    }
    for (name, why, fails) in [
        ("int64_t", "reserved for types", Fails::C),
        ("uint8_t", "reserved for types", Fails::C),
        ("size_t", "reserved for types", Fails::C),
        (
            "INT32_MAX",
            "identifier of the C standard headers",
            Fails::C,
        ),
        (
            "UINT8_MAX",
            "identifier of the C standard headers",
            Fails::C,
        ),
        ("SIZE_MAX", "identifier of the C standard headers", Fails::C),
        ("JX_ARRAY_DEFINED", "`jx_` names", Fails::C),
        ("NULL", "identifier of the C standard headers", Fails::C),
        ("EOF", "identifier of the C standard headers", Fails::C),
        ("assert", "identifier of the C standard headers", Fails::C),
        ("offsetof", "identifier of the C standard headers", Fails::C),
        ("CHAR_BIT", "identifier of the C standard headers", Fails::C),
        ("BUFSIZ", "identifier of the C standard headers", Fails::C),
        ("M_PI", "identifier of the C standard headers", Fails::C),
        ("FILE", "identifier of the C standard headers", Fails::C),
        ("I", "identifier of the C standard headers", Fails::C),
        ("linux", "identifier of the C standard headers", Fails::C),
        ("bool", "a C keyword", Fails::C),
        ("class", "C++ keyword", Fails::Cxx),
        ("new", "C++ keyword", Fails::Cxx),
        ("main", "a symbol the linker defines", Fails::Program),
        ("_init", "reserved by C", Fails::Link),
        ("_fini", "reserved by C", Fails::Link),
    ] {
        for emit in ["native", "llvm-ir"] {
            refused(
                &build(
                    &input,
                    &["--emit", emit, "--name", name, "-o", so.to_str().unwrap()],
                ),
                why,
            );
        }
        assert!(!so.exists() && !d.join("libbad.h").exists());
        std::fs::write(d.join("bad.h"), header(name)).unwrap();
        let (ok, stderr) = match fails {
            Fails::C => {
                let after = compile(
                    &d,
                    "cc",
                    &["-c", "-o", "/dev/null"],
                    "after.c",
                    &format!("{}#include \"bad.h\"\n", std_includes()),
                );
                let before = compile(
                    &d,
                    "cc",
                    &["-c", "-o", "/dev/null"],
                    "before.c",
                    &format!("#include \"bad.h\"\n{}", std_includes()),
                );
                (after.0 && before.0, after.1 + &before.1)
            }
            Fails::Cxx => compile(
                &d,
                "c++",
                &["-x", "c++", "-c", "-o", "/dev/null"],
                "bad.cc",
                "#include \"bad.h\"\n",
            ),
            Fails::Program => compile(
                &d,
                "cc",
                &["-c", "-o", "/dev/null"],
                "program.c",
                "#include \"bad.h\"\nint main(void) { return 0; }\n",
            ),
            Fails::Link => compile(
                &d,
                "cc",
                &["-shared", "-fPIC", "-o", "libbad.so"],
                "lib.c",
                &format!(
                    "#include \"bad.h\"\nint32_t {name}(const jx_array *i, int64_t n, jx_array *o, int64_t m) {{ return 0; }}\n"
                ),
            ),
        };
        assert!(
            !ok,
            "`{name}`: a header with this name compiles and links, so the class is not real\n{stderr}"
        );
        let _ = std::fs::remove_file(&so);
    }
    // Reserved by rule, with no definition to show it on this machine.
    for (name, why) in [
        (
            "INT24_MAX",
            "reserved by C for the standard headers' macros",
        ),
        (
            "UINTFOO_C",
            "reserved by C for the standard headers' macros",
        ),
        ("EMODEL", "reserved by C for the standard headers' macros"),
        ("SIGMODEL", "reserved by C for the standard headers' macros"),
        ("_model", "reserved by C"),
        ("model_t", "reserved for types"),
        ("Jx_model", "`jx_` names"),
        ("end", "a symbol the linker defines"),
    ] {
        refused(
            &build(
                &input,
                &[
                    "--emit",
                    "llvm-ir",
                    "--name",
                    name,
                    "-o",
                    so.to_str().unwrap(),
                ],
            ),
            why,
        );
    }
}

/// Names that are accepted give headers that compile, as C and C++, beside
/// every standard header, and beside each other (`a` and `A` have guards
/// of their own).
#[test]
fn accepted_names_give_headers_that_compile_with_the_standard_headers() {
    let (d, input) = folder("header-accepted");
    let header = probe_header(&d, &input);
    let ll = d.join("m.ll");
    let names = [
        "predict",
        "a",
        "A",
        "Model",
        "mlp_v2",
        "tomato",
        "stringent",
        "model_2d",
    ];
    let mut includes = String::new();
    let mut calls = String::new();
    for name in names {
        let b = build(
            &input,
            &[
                "--emit",
                "llvm-ir",
                "--name",
                name,
                "-o",
                ll.to_str().unwrap(),
            ],
        );
        assert!(
            b.status.success(),
            "`{name}`: {}",
            String::from_utf8_lossy(&b.stderr)
        );
        std::fs::write(d.join(format!("lib{name}_.h")), header(name)).unwrap();
        includes += &format!("#include \"lib{name}_.h\"\n");
        calls += &format!(
            "  n += {name}(0, 0, 0, 0) + {name}_num_inputs() + {name}_num_outputs() + ({name}_error() != 0);\n  {name}_free(0);\n"
        );
    }
    let body = format!("int probe_all(void) {{\n  int64_t n = 0;\n{calls}  return (int)n;\n}}\n");
    for (compiler, file, extra) in [
        ("cc", "all.c", "-std=gnu17"),
        ("cc", "all17.c", "-std=c17"),
        ("c++", "all.cc", "-std=c++17"),
    ] {
        let std = if compiler == "c++" {
            // C++ spells some of C's headers its own way.
            [
                "stdalign.h",
                "stdnoreturn.h",
                "threads.h",
                "stdatomic.h",
                "tgmath.h",
                "complex.h",
            ]
            .iter()
            .fold(std_includes(), |s, h| {
                s.replace(&format!("#include <{h}>\n"), "")
            })
        } else {
            std_includes()
        };
        for src in [
            format!("{std}{includes}{body}"),
            format!("{includes}{std}{body}"),
        ] {
            let (ok, stderr) = compile(
                &d,
                compiler,
                &["-c", extra, "-Wall", "-Werror", "-o", "/dev/null"],
                file,
                &src,
            );
            assert!(
                ok,
                "{compiler} {extra}: the headers do not compile:\n{stderr}"
            );
        }
    }
    // A file whose name begins with a digit gets a C name that is not
    // reserved.
    let f = d.join("2d.jaxpr");
    std::fs::write(&f, PROGRAM).unwrap();
    let b = build(
        &f,
        &[
            "--emit",
            "native",
            "-o",
            d.join("lib2d.so").to_str().unwrap(),
        ],
    );
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    assert!(
        std::fs::read_to_string(d.join("lib2d.h"))
            .unwrap()
            .contains("int32_t     model_2d(")
    );
}

/// Every identifier that the standard headers of this machine's C library
/// define (`cc -dM -E`) or declare (the rest of their preprocessed text) is
/// refused: `crates/native/src/c_header_names.txt` and the rules of
/// `check_c_name` cover them all.
#[test]
fn every_identifier_of_the_standard_headers_is_refused() {
    let (d, _) = folder("std-identifiers");
    std::fs::write(d.join("all.c"), std_includes()).unwrap();
    let mut names = std::collections::BTreeSet::new();
    for mode in ["-std=gnu17", "-std=c17", "-std=c11"] {
        for flag in ["-dM", "-P"] {
            let out = Command::new("cc")
                .current_dir(&d)
                .args(["-E", flag, mode, "all.c"])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let text = String::from_utf8(out.stdout).unwrap();
            let idents = |t: &str| -> Vec<String> {
                t.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .filter(|w| w.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
                    .map(str::to_owned)
                    .collect()
            };
            if flag == "-dM" {
                // `#define NAME(ARGS) BODY`: the name.
                names.extend(text.lines().filter_map(|l| idents(l).into_iter().nth(1)));
            } else {
                names.extend(idents(&text));
            }
        }
    }
    assert!(names.len() > 1500, "{} identifiers", names.len());
    let accepted: Vec<_> = names
        .iter()
        .filter(|n| jaxpr_native::check_c_name(n).is_ok())
        .collect();
    assert!(
        accepted.is_empty(),
        "identifiers of the standard headers accepted as library names: {accepted:?}"
    );
}
