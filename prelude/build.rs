//! Compiles the allocator shim (shim/shim.cpp) against the libtorch headers torch-sys found, and
//! links this package's tests with libtorch_cuda (`--as-needed` turned off) when this libtorch
//! has it.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=shim/shim.cpp");
    println!("cargo:rerun-if-changed=shim/cpu_limit.cpp");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=LIBTORCH");
    println!("cargo:rerun-if-env-changed=LIBTORCH_CXX11_ABI");
    // torch-sys (links = "tch") publishes the libtorch it linked as DEP_TCH_LIBTORCH_LIB, so the
    // shim always matches it, however torch-sys found it (LIBTORCH, LIBTORCH_USE_PYTORCH, ...).
    let lib_dir = std::env::var_os("DEP_TCH_LIBTORCH_LIB")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("LIBTORCH").map(|l| PathBuf::from(l).join("lib")));
    let Some(lib_dir) = lib_dir else {
        println!("cargo:warning=libtorch not found: the CUDA memory shim is built without it");
        build_shim(None);
        return;
    };
    let root = lib_dir
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(|| lib_dir.clone());
    build_shim(Some(root.join("include")));

    // Rust passes --as-needed to the linker, which drops libtorch_cuda.so from every binary
    // because no Rust code calls into it; CUDA then looks absent on a GPU machine (tch-rs
    // #980). The prelude does not force it in at link time: a needed library loads in every
    // process, and with it ~230 MB of CUDA libraries even where no GPU exists (a notebook
    // kernel on a CPU machine). Instead device::load_cuda() dlopens it at run time when an
    // NVIDIA driver is present (runtime::attach and every CUDA query call it). Only this
    // package's tests link it --no-as-needed, so that they also cover tch's own CUDA calls on a
    // GPU machine; its examples load CUDA the way notebooks and other programs do. A CPU-only
    // libtorch has no libtorch_cuda.so and gets none of it.
    if lib_dir.join("libtorch_cuda.so").exists() {
        println!("cargo:rustc-link-arg-tests=-Wl,--no-as-needed,-ltorch_cuda,--as-needed");
    }
}

fn build_shim(include: Option<PathBuf>) {
    let mut build = cc::Build::new();
    build
        .cpp(true)
        .pic(true)
        .warnings(false)
        .file("shim/shim.cpp")
        .file("shim/cpu_limit.cpp")
        .flag("-std=c++17");
    if let Some(include) = include {
        build.include(&include);
        build.include(include.join("torch/csrc/api/include"));
        let abi = std::env::var("LIBTORCH_CXX11_ABI").unwrap_or_else(|_| "1".into());
        build.define("_GLIBCXX_USE_CXX11_ABI", abi.as_str());
    }
    // The shim must never be why the prelude fails to build: if the libtorch headers do not
    // compile here (a libtorch whose allocator interface changed), fall back to stubs that
    // report "no CUDA allocator" and say so.
    if let Err(e) = build.try_compile("tchbook_shim") {
        println!(
            "cargo:warning=the CUDA memory shim did not compile against these libtorch headers \
             ({e}); CUDA memory statistics will read as unavailable"
        );
        let mut stub = cc::Build::new();
        stub.cpp(true)
            .pic(true)
            .warnings(false)
            .file("shim/shim.cpp")
            .file("shim/cpu_limit.cpp")
            .flag("-std=c++17");
        stub.define("TCHBOOK_SHIM_STUB", None);
        stub.compile("tchbook_shim");
    }
}
