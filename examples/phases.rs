//! Times the phases of a check of one file: parse, check, and the heap
//! they keep (live bytes after each phase, and the peak); then the streamed
//! check `jaxpr check` runs, and its peak heap.
//! `cargo run --release --example phases FILE`.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// The `jaxpr` binary's allocator, counting live and peak bytes.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(l.size(), Relaxed) + l.size();
        PEAK.fetch_max(live, Relaxed);
        unsafe { jaxpr_alloc::Mimalloc.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Relaxed);
        unsafe { jaxpr_alloc::Mimalloc.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if new >= l.size() {
            let live = LIVE.fetch_add(new - l.size(), Relaxed) + new - l.size();
            PEAK.fetch_max(live, Relaxed);
        } else {
            LIVE.fetch_sub(l.size() - new, Relaxed);
        }
        unsafe { jaxpr_alloc::Mimalloc.realloc(p, l, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn mb(b: usize) -> f64 {
    b as f64 / 1e6
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: phases FILE");
    let text = std::fs::read_to_string(&path).expect("read");
    sizes();
    for round in 0..3 {
        let base = LIVE.load(Relaxed);
        PEAK.store(base, Relaxed);
        let t0 = std::time::Instant::now();
        let p = jaxpr_syntax::parse(&text);
        let t1 = std::time::Instant::now();
        let (after_parse, peak_parse) = (LIVE.load(Relaxed) - base, PEAK.load(Relaxed) - base);
        let a = jaxpr_check::check(&p.file);
        let t2 = std::time::Instant::now();
        let (after_check, peak) = (LIVE.load(Relaxed) - base, PEAK.load(Relaxed) - base);
        drop(a);
        drop(p);
        let t3 = std::time::Instant::now();
        // What `jaxpr check` runs: parse and check streamed, keeping only
        // the diagnostics.
        PEAK.store(base, Relaxed);
        let d = jaxpr_check::check_source(
            jaxpr_check::Source::Text(&text),
            jaxpr_check::Keep::Diagnostics,
        )
        .diagnostics();
        let t4 = std::time::Instant::now();
        let peak_streaming = PEAK.load(Relaxed) - base;
        drop(d);
        println!(
            "round {round}: parse {:?} ({:.1} MB/s), check {:?}, drop {:?}, streamed parse+check {:?} | heap: parse {:.1} MB (peak {:.1}), parse+check {:.1} MB (peak {:.1}), streamed peak {:.1} MB",
            t1 - t0,
            text.len() as f64 / 1e6 / (t1 - t0).as_secs_f64(),
            t2 - t1,
            t3 - t2,
            t4 - t3,
            mb(after_parse),
            mb(peak_parse),
            mb(after_check),
            mb(peak),
            mb(peak_streaming)
        );
    }
}

fn sizes() {
    use jaxpr_syntax::ast::*;
    println!(
        "Expr {} Binder {} Eqn {} Atom {} TypeExpr {} Name {} | VarInfo {} EqnInfo {} AType {} Dim {} Diag {}",
        size_of::<Expr>(),
        size_of::<Binder>(),
        size_of::<Eqn>(),
        size_of::<Atom>(),
        size_of::<TypeExpr>(),
        size_of::<Name>(),
        size_of::<jaxpr_check::VarInfo>(),
        size_of::<jaxpr_check::EqnInfo>(),
        size_of::<jaxpr_types::AType>(),
        size_of::<jaxpr_types::Dim>(),
        size_of::<jaxpr_syntax::diagnostics::Diagnostic>()
    );
}
