#[global_allocator]
static GLOBAL: jaxpr_alloc::Mimalloc = jaxpr_alloc::Mimalloc;

// No back end here: `jaxpr build` runs `jaxpr-build` (see `cli::main`).
fn main() {
    jaxpr_alloc::return_freed_memory_at_once();
    jaxpr::cli::end_quietly_when_the_reader_leaves();
    std::process::exit(jaxpr::cli::main(None));
}
