//! `cargo bench -p jaxpr --bench diff`: `jaxpr diff`'s comparison on the
//! large corpus file (`large/transformer600_grad`, 108,002 top-level
//! equations) against itself with one literal changed in the middle. Prints
//! the time of parsing both sides and of the diff alone (best of 5), and
//! checks that the one edit is the one change found.

use jaxpr_check::diff::{ChangeKind, DiffSide, diff};
use std::time::{Duration, Instant};

// As in the `jaxpr` binary.
#[global_allocator]
static GLOBAL: jaxpr_alloc::Mimalloc = jaxpr_alloc::Mimalloc;

fn main() {
    let corpus = std::env::var("JAXPR_CORPUS")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus").into());
    let a =
        jaxpr_test_support::scale::read_gz(&format!("{corpus}/large/transformer600_grad.jaxpr.gz"));
    // The first `mul 0.5:f32[] x` after the middle of the file: 0.5 becomes 0.25.
    let needle = " = mul 0.5:f32[] ";
    let at = a[a.len() / 2..]
        .find(needle)
        .expect("a `mul 0.5:f32[]` after the middle")
        + a.len() / 2;
    let mut b = a.clone();
    b.replace_range(at..at + needle.len(), " = mul 0.25:f32[] ");
    let line = a[..at].matches('\n').count() + 1;

    let best = |f: &mut dyn FnMut()| -> Duration {
        (0..5)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .min()
            .unwrap()
    };
    let (mut pa, mut pb) = (None, None);
    let parse_time = best(&mut || {
        pa = Some(jaxpr_syntax::parse(&a));
        pb = Some(jaxpr_syntax::parse(&b));
    });
    let (pa, pb) = (pa.unwrap(), pb.unwrap());
    let mut result = None;
    let diff_time = best(&mut || {
        result = Some(diff(
            DiffSide {
                text: &a,
                file: &pa.file,
            },
            DiffSide {
                text: &b,
                file: &pb.file,
            },
        ))
    });
    let result = result.unwrap();
    assert_eq!(
        result.changes.len(),
        1,
        "{:#?}",
        &result.changes[..result.changes.len().min(5)]
    );
    assert_eq!(result.changes[0].kind, ChangeKind::Changed);
    let same = best(&mut || {
        let d = diff(
            DiffSide {
                text: &a,
                file: &pa.file,
            },
            DiffSide {
                text: &a,
                file: &pa.file,
            },
        );
        assert!(d.is_equal());
    });
    println!(
        "transformer600_grad ({} MB, {} equations, nested included) against itself with line {line} edited:",
        a.len() / 1_000_000,
        result.eqns_a
    );
    println!(
        "  parse both sides: {:.1} ms",
        parse_time.as_secs_f64() * 1e3
    );
    println!(
        "  diff: {:.1} ms, 1 change found ({}), {} of {} equations paired",
        diff_time.as_secs_f64() * 1e3,
        result.changes[0]
            .details
            .iter()
            .map(|d| format!("{}: {} → {}", d.what, d.before, d.after))
            .collect::<Vec<_>>()
            .join("; "),
        result.paired,
        result.eqns_b
    );
    println!(
        "  diff of the file with itself: {:.1} ms",
        same.as_secs_f64() * 1e3
    );
}
