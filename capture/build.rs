//! Links the capture engine against the libtorch that tch found (the venv of
//! `scripts/setup-torch.sh`) and compiles the shims (profiler, tensor ops).
//!
//! - rpath: a tch binary carries no rpath, so without this it needs
//!   LD_LIBRARY_PATH.
//! - no-as-needed: nothing references a symbol of libtorch_cuda.so directly,
//!   so the linker drops it and CUDA is never available at run time.
//!
//! Both are linker arguments, which reach only this package's own tests and
//! binaries: that is all that links libtorch (the `libreyolo-capture`
//! executable; the `libreyolo` binary never does).

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=shim/profiler.cpp");
    println!("cargo:rerun-if-changed=shim/ops.cpp");
    println!("cargo:rerun-if-changed=build.rs");
    let lib = PathBuf::from(
        std::env::var("DEP_TCH_LIBTORCH_LIB")
            .expect("torch-sys did not export the libtorch lib dir (run scripts/setup-torch.sh and build with its env)"),
    );
    let torch = lib.parent().expect("libtorch lib dir has a parent").to_path_buf();
    let include = torch.join("include");

    println!("cargo:rustc-link-search=native={}", lib.display());
    for arg in link_args(&lib) {
        println!("cargo:rustc-link-arg={arg}");
    }

    cc::Build::new()
        .cpp(true)
        .pic(true)
        .warnings(false)
        .include(&include)
        .include(include.join("torch/csrc/api/include"))
        .include(include.join("kineto"))
        .flag("-std=c++17")
        // The PyPI wheels of torch >= 2.7 are built with the C++11 ABI.
        .flag("-D_GLIBCXX_USE_CXX11_ABI=1")
        .flag("-DGLOG_USE_GLOG_EXPORT")
        .file("shim/profiler.cpp")
        .file("shim/ops.cpp")
        .compile("libreyolo_profiler_shim");
}

/// The linker arguments a binary that links libtorch needs.
fn link_args(lib: &std::path::Path) -> Vec<String> {
    let mut args = vec![
        format!("-Wl,-rpath,{}", lib.display()),
        "-Wl,--push-state,--no-as-needed".to_string(),
    ];
    if lib.join("libtorch_cuda.so").exists() {
        args.push("-ltorch_cuda".into());
    }
    args.extend(["-ltorch", "-ltorch_cpu", "-lc10", "-Wl,--pop-state"].map(String::from));
    args
}
