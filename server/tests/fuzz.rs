//! A bounded run of the message-handling fuzzer (`common/lsp_fuzz.rs`);
//! `cargo bench -p jaxpr-lsp --bench fuzz_lsp -- --secs N` runs it longer.

mod common;

use common::corpus;
use common::lsp_fuzz::{Stats, frame_seeds, frames_session, session};
use jaxpr_test_support::fuzz::{self, Rng};

#[test]
fn random_sessions_are_answered_and_the_server_survives() {
    let seeds = fuzz::corpus_seeds(&corpus());
    assert!(seeds.len() > 40);
    let frames = frame_seeds();
    let mut rng = Rng::new(0x5EED);
    let mut stats = Stats::default();
    for _ in 0..3 {
        session(&mut rng, &seeds, &frames, 150, &mut stats);
    }
    assert_eq!(stats.sessions, 3);
    assert!(stats.requests > 100, "{stats:?}");
}

#[test]
fn broken_frames_never_cost_the_messages_after_them() {
    let frames = frame_seeds();
    assert!(frames.len() >= 20);
    let mut rng = Rng::new(0xF4A3E);
    let mut stats = Stats::default();
    for _ in 0..2 {
        frames_session(&mut rng, &frames, 120, &mut stats);
    }
    assert_eq!(stats.sessions, 2);
    assert_eq!(stats.requests, 240, "{stats:?}");
}
