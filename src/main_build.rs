#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

// The `jaxpr` command line with the build back ends linked in.
fn main() {
    std::process::exit(jaxpr::cli::main(Some(jaxpr::build_command::run)));
}
