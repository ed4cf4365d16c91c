#[global_allocator]
static GLOBAL: jaxpr::allocator::Mimalloc = jaxpr::allocator::Mimalloc;

// The `jaxpr` command line with the build back ends linked in.
fn main() {
    std::process::exit(jaxpr::cli::main(Some(jaxpr::build_command::run)));
}
