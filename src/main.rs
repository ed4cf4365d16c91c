#[global_allocator]
static GLOBAL: jaxpr_alloc::Mimalloc = jaxpr_alloc::Mimalloc;

/// `mi_option_purge_delay` of mimalloc.h, which `libmimalloc-sys` does not name.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

// No back end here: `jaxpr build` runs `jaxpr-build` (see `cli::main`).
fn main() {
    // A one-shot process: memory it frees (tables outgrown while a large
    // file is checked) goes back to the system at once instead of staying
    // resident at the peak for mimalloc's default delay.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
    std::process::exit(jaxpr::cli::main(None));
}
