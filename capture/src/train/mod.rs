//! `libreyolo profile run`: a short, real YOLOv9 training under the
//! profiler (docs/spec.md §2.2). [`loss`] is the family's loss, [`data`] the
//! datasets and the loader, [`mosaic`], [`augment`] and [`geometry`] its
//! augmentation, [`optim`] the optimizer and its schedule,
//! [`ema`] the weight average, [`scaler`] AMP's loss scaling, [`step`] the
//! measured training loop.

pub mod augment;
pub mod autobatch;
pub mod data;
pub mod data_error;
pub mod ema;
pub mod geometry;
pub mod loss;
pub mod mosaic;
pub mod optim;
pub mod scaler;
pub mod step;
pub mod yolo;

pub use step::run;
