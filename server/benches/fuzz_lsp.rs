//! Runs the language server's message-handling fuzzer for a time budget and
//! prints sessions, messages and requests; a failure panics with the seed.
//!
//!     cargo bench -p jaxpr-lsp --bench fuzz_lsp -- [--secs 600] [--seed 1]

#[path = "../tests/common/mod.rs"]
mod common;

use common::corpus;
use common::lsp_fuzz::{Stats, frame_seeds, frames_session, session};
use jaxpr_test_support::fuzz::{self, Rng};
use std::time::{Duration, Instant};

fn main() {
    let opt = |name: &str| fuzz::option(name).and_then(|v| v.parse::<u64>().ok());
    let secs = opt("--secs").unwrap_or(60);
    let seed = opt("--seed").unwrap_or(1);
    let seeds = fuzz::corpus_seeds(&corpus());
    let frames = frame_seeds();
    let mut rng = Rng::new(seed);
    let mut stats = Stats::default();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(secs) {
        session(&mut rng, &seeds, &frames, 300, &mut stats);
        frames_session(&mut rng, &frames, 100, &mut stats);
    }
    println!(
        "fuzz_lsp: {} sessions, {} messages ({} requests, all answered) in {:.0} s, seed {seed}: no failures",
        stats.sessions,
        stats.messages,
        stats.requests,
        start.elapsed().as_secs_f64()
    );
}
