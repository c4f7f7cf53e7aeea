//! The core of `libreyolo profile`: reading traces and profiles, the
//! analysis (docs/analysis.md), the lenses every reader renders, and the command-line
//! surface of the reader commands. Nothing here links libtorch.

pub mod analysis;
pub mod budget;
pub mod cli;
pub mod conditions;
pub mod error;
pub mod files;
pub mod hardware;
pub mod input;
pub mod lens;
pub mod merge;
pub mod profile;
pub mod render;
pub mod tables;
pub mod tempfiles;
pub mod trace;
pub mod util;

pub use error::{Error, Result};
