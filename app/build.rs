//! With the `capture` feature, the binary links libtorch through
//! libreyolo-capture. Linker arguments do not propagate from a dependency,
//! so the capture crate exports the libtorch lib dir (`links`) and the same
//! arguments are emitted here: an rpath (the binary finds libtorch without
//! LD_LIBRARY_PATH) and libtorch_cuda kept with --no-as-needed (else the
//! linker drops it and CUDA is never available at run time).

fn main() {
    println!("cargo:rerun-if-env-changed=DEP_LIBREYOLO_CAPTURE_TORCH_LIB");
    let Ok(lib) = std::env::var("DEP_LIBREYOLO_CAPTURE_TORCH_LIB") else { return };
    let lib = std::path::PathBuf::from(lib);
    println!("cargo:rustc-link-arg-bins=-Wl,-rpath,{}", lib.display());
    println!("cargo:rustc-link-arg-bins=-Wl,--push-state,--no-as-needed");
    if lib.join("libtorch_cuda.so").exists() {
        println!("cargo:rustc-link-arg-bins=-ltorch_cuda");
    }
    for l in ["-ltorch", "-ltorch_cpu", "-lc10", "-Wl,--pop-state"] {
        println!("cargo:rustc-link-arg-bins={l}");
    }
}
