#[global_allocator]
static GLOBAL: jaxpr_core::allocator::Mimalloc = jaxpr_core::allocator::Mimalloc;

/// `mi_option_purge_delay` of mimalloc.h, which `libmimalloc-sys` does not name.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

// Only the core: `jaxpr build` runs `jaxpr-build` (see `cli::main`).
fn main() {
    // A one-shot process: memory it frees (tables outgrown while a large
    // file is checked) goes back to the system at once, not after
    // mimalloc's default delay of 1 s, which kept it resident at the peak
    // (51 -> 37 MB on the 108k-equation file, no measurable time).
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
    std::process::exit(jaxpr_core::cli::main(None));
}
