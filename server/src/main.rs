//! `jaxpr-lsp`: the language server for jaxprs, over stdio.

mod backend;
mod build;
mod convert;
mod framing;
mod graph;
mod outputs;
mod python;
mod rules;
mod state;
mod tokens;

use backend::Backend;

// The analysis of a large file allocates millions of small objects per edit
// (mimalloc, built without transparent huge pages: see the root Cargo.toml).
#[global_allocator]
static GLOBAL: jaxpr_alloc::Mimalloc = jaxpr_alloc::Mimalloc;
use tower_lsp::{LspService, Server};

fn main() {
    if std::env::args().any(|a| a == "--version") {
        println!("jaxpr-lsp {}", env!("CARGO_PKG_VERSION"));
        return;
    }
    // A closed document's memory goes back to the system, but not every
    // block an edit frees at once: returning each at once made an edit's
    // diagnostics wait on the system calls (docs/editors.md).
    jaxpr_alloc::return_freed_memory_after(std::time::Duration::from_millis(500));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    // A panic on the serving task (in tower-lsp itself, say) must end the
    // process, never leave it hanging: unwinding out of `block_on` would drop
    // the runtime, which waits forever for the thread blocked reading stdin.
    let served = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        runtime.block_on(async {
            let (stdin, life) = framing::guard(tokio::io::stdin());
            let (service, socket) = LspService::build(Backend::new)
                .custom_method(framing::INVALID_REQUEST, Backend::invalid_request)
                .custom_method(framing::INVALID_MESSAGE, Backend::invalid_notification)
                .finish();
            Server::new(stdin, tokio::io::stdout(), socket)
                .serve(service)
                .await;
            // LSP: exit code 0 after `shutdown`, 1 when the client went away without it.
            if life.shutdown.load(std::sync::atomic::Ordering::SeqCst) {
                0
            } else {
                1
            }
        })
    }));
    let code = served.unwrap_or(101);
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    std::process::exit(code);
}
