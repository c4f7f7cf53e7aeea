//! The capture engine of `libreyolo profile`: the only crate that links
//! libtorch. It holds the profiler shim and its safe wrapper, the LibreYOLO
//! checkpoint reader, the YOLOv9 model in tch, and the measurement loops that
//! write a trace plus the measured numbers for the core to analyse.

pub mod checkpoint;
pub mod device;
pub mod infer;
pub mod model;
pub mod ops;
pub mod output;
pub mod pickle;
pub mod postprocess;
pub mod preprocess;
pub mod profiler;
pub mod source;
pub mod train;
pub mod weights;
pub mod window;

pub use infer::infer;
