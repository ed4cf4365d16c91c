//! The mesh axes of types in multi-device programs, as each JAX prints them
//! (`tests/data/sharding/jax-X.Y.Z`, written by `corpus-gen/sharding`):
//! `f32[2,2]{V:(x,y)}` (jax 0.6, 0.8 on), `f32[2,2]{y,x}` (0.7), the named
//! shape `i32[1;y:2,x:4]` (0.4); every file of the corpus parses cleanly,
//! and each axis name keeps its range.

use jaxpr_syntax::ast::{self, AxisName, Eqn, SourceFile};
use jaxpr_syntax::parse;
use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/sharding")
}

fn read(version: &str, name: &str) -> String {
    let p = corpus().join(version).join(format!("{name}.jaxpr"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn parse_clean(text: &str) -> SourceFile {
    let p = parse(text);
    let errors: Vec<String> = p
        .errors
        .iter()
        .map(|d| {
            format!(
                "{}: {}",
                &text[d.range.start as usize..].lines().next().unwrap(),
                d.message
            )
        })
        .collect();
    assert!(errors.is_empty(), "syntax errors: {errors:#?}");
    p.file
}

fn first<'a>(file: &'a SourceFile, primitive: &str) -> &'a Eqn {
    ast::each_eqn(file)
        .find(|e| &*e.primitive.text == primitive)
        .unwrap_or_else(|| panic!("no `{primitive}`"))
}

/// The names of a set, each read back from the text at its range.
fn names(text: &str, set: &[AxisName]) -> Vec<String> {
    set.iter()
        .map(|a| {
            assert_eq!(&text[a.name.range.as_usize()], &*a.name.text);
            a.name.text.to_string()
        })
        .collect()
}

#[test]
fn every_sharding_corpus_file_parses_cleanly() {
    let mut n = 0;
    for dir in std::fs::read_dir(corpus()).unwrap().flatten() {
        for f in std::fs::read_dir(dir.path()).unwrap().flatten() {
            if f.path().extension().is_some_and(|e| e == "jaxpr") {
                let text = std::fs::read_to_string(f.path()).unwrap();
                let p = parse(&text);
                assert!(
                    p.errors.is_empty(),
                    "{}: {:?}",
                    f.path().display(),
                    p.errors
                );
                n += 1;
            }
        }
    }
    assert!(n >= 100, "{n} files");
}

#[test]
fn keyed_varying_axes_of_jax_0_10() {
    let text = read("jax-0.10.2", "mesh_2d");
    let file = parse_clean(&text);
    // `psum_invariant[axes=('y',)] a` is `f32[2,2]{V:x}`; its operand `{V:(x,y)}`.
    let e = first(&file, "psum_invariant");
    let ty = e.outs[0].ty.as_ref().unwrap();
    assert_eq!(&text[ty.range.as_usize()], "f32[2,2]");
    let e = ast::each_eqn(&file)
        .filter(|e| &*e.primitive.text == "psum_invariant")
        .nth(1)
        .unwrap();
    let ty = e.outs[0].ty.as_ref().unwrap();
    assert_eq!(&text[ty.range.as_usize()], "f32[2,2]{V:x}");
    let axes = ty.axes().unwrap();
    assert_eq!(names(&text, &axes.varying), ["x"]);
    assert_eq!(&text[axes.range.as_usize()], "{V:x}");
    assert!(axes.unreduced.is_empty() && axes.reduced.is_empty());
    let jaxpr = &file.lets[0].jaxpr;
    let a = jaxpr.invars[0].ty.as_ref().unwrap();
    assert_eq!(names(&text, &a.axes().unwrap().varying), ["x", "y"]);
    assert_eq!(&text[a.range.as_usize()], "f32[2,2]{V:(x,y)}");
}

#[test]
fn bare_varying_axes_of_jax_0_7() {
    let text = read("jax-0.7.2", "mesh_2d");
    let file = parse_clean(&text);
    let e = first(&file, "all_gather");
    let ty = e.outs[0].ty.as_ref().unwrap();
    assert_eq!(&text[ty.range.as_usize()], "f32[4,2]{y,x}");
    assert_eq!(names(&text, &ty.axes().unwrap().varying), ["y", "x"]);
}

#[test]
fn named_shapes_of_jax_0_4() {
    let text = read("jax-0.4.30", "mesh_2d");
    let file = parse_clean(&text);
    let e = ast::each_eqn(&file)
        .find(|e| {
            e.outs
                .first()
                .and_then(|b| b.ty.as_ref())
                .is_some_and(|t| t.dims.len() == 1 && t.axes().is_some())
        })
        .unwrap();
    let ty = e.outs[0].ty.as_ref().unwrap();
    assert_eq!(&text[ty.range.as_usize()], "i32[1;y:2,x:4]");
    let axes = ty.axes().unwrap();
    assert_eq!(names(&text, &axes.varying), ["y", "x"]);
    let sizes: Vec<_> = axes
        .varying
        .iter()
        .map(|a| a.size.as_ref().unwrap().as_int())
        .collect();
    assert_eq!(sizes, [Some(2), Some(4)]);
    assert_eq!(&text[axes.range.as_usize()], ";y:2,x:4");
    // A scalar's named shape has no dimensions before the `;`.
    let e = first(&file, "axis_index");
    let ty = e.outs[0].ty.as_ref().unwrap();
    assert!(ty.dims.is_empty());
    assert_eq!(&text[ty.range.as_usize()], "i32[;y:2]");
}

#[test]
fn unreduced_and_reduced_axes_and_errors() {
    let text = "{ lambda ; a:f32[4]{V:x, U:(y,z), R:w} b:f32[4]{U:y}{x}. let  in (a,) }";
    let file = parse_clean(text);
    let main = file.main.as_ref().unwrap();
    let a = main.invars[0].ty.as_ref().unwrap().axes().unwrap();
    assert_eq!(names(text, &a.varying), ["x"]);
    assert_eq!(names(text, &a.unreduced), ["y", "z"]);
    assert_eq!(names(text, &a.reduced), ["w"]);
    let b = main.invars[1].ty.as_ref().unwrap().axes().unwrap();
    assert_eq!(names(text, &b.varying), ["x"]);
    assert_eq!(names(text, &b.unreduced), ["y"]);
    assert_eq!(&text[b.range.as_usize()], "{U:y}{x}");
    // A key that is not V, U or R is an error at the key.
    let bad = "{ lambda ; a:f32[4]{Q:x}. let\n    b:f32[4] = sin a\n  in (b,) }";
    let p = parse(bad);
    assert_eq!(p.errors.len(), 1, "{:?}", p.errors);
    assert_eq!(&bad[p.errors[0].range.as_usize()], "Q");
}
