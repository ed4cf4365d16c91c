//! Compiles `src/create.cpp` (operation creation for the
//! StableHLO lowering, against MLIR's C++ API) with the system C++
//! compiler and the headers of the MLIR that melior links.

fn main() {
    let prefix =
        std::env::var("MLIR_SYS_220_PREFIX").unwrap_or_else(|_| "/usr/lib/llvm-22".to_string());
    println!("cargo:rerun-if-changed=src/create.cpp");
    println!("cargo:rerun-if-env-changed=MLIR_SYS_220_PREFIX");
    cc::Build::new()
        .cpp(true)
        .file("src/create.cpp")
        .include(format!("{prefix}/include"))
        .std("c++17")
        // As LLVM and MLIR are built: no RTTI, no exceptions, no assertions.
        .flag("-fno-rtti")
        .flag("-fno-exceptions")
        .define("NDEBUG", None)
        .warnings(false)
        .compile("jaxpr_mlir_create");
}
