#[global_allocator]
static GLOBAL: jaxpr_alloc::Mimalloc = jaxpr_alloc::Mimalloc;

// The `jaxpr` command line with the build back ends linked in.
fn main() {
    jaxpr::cli::end_quietly_when_the_reader_leaves();
    let code = jaxpr::cli::main(Some(jaxpr_build::command::run));
    // Everything the command makes is written and closed by now (outputs
    // are renamed into place before `run` returns), so the process ends
    // here without the exit handlers: LLVM's and MLIR's static destructors
    // and the allocator handing its memory back page by page took 7-10 ms
    // after a transformer150 build, for memory the kernel frees at once.
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: `_exit` ends the process; nothing runs after it.
    unsafe { libc::_exit(code) }
}
