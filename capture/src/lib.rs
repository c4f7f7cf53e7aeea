//! The capture engine of `libreyolo profile`: the only crate that links
//! libtorch. It holds the profiler shim and its safe wrapper, the LibreYOLO
//! checkpoint reader, the YOLOv9 model in tch, and the measurement loops that
//! write a trace plus the measured numbers for the core to analyse.

pub mod checkpoint;
pub mod device;
pub mod heap;
pub mod infer;
pub mod model;
pub mod ops;
pub mod output;
pub mod panics;
pub mod pickle;
pub mod postprocess;
pub mod preprocess;
pub mod profiler;
pub mod source;
pub mod train;
pub mod weights;
pub mod window;

pub use infer::infer;

/// Tests that draw from libtorch's global generator (a random model init
/// included, seeded or not) hold this lock: libtest runs tests on parallel
/// threads, and another test's draws between a seed and its use would
/// change that test's "random" model (the SGD test failed 1 run in 3).
#[cfg(test)]
pub(crate) fn rng_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}
