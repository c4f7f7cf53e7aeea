//! Why a training sample or batch could not be made: the error the
//! loader (`data.rs`) and the mosaic (`mosaic.rs`) both return.

use libreyolo_core::Error;

/// Why a sample or a batch could not be made: reaches the user as exit 1.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error("cannot read image {}: {why}", path.display())]
    Image { path: std::path::PathBuf, why: String },
    /// Page-locked memory for a batch (CUDA) could not be had.
    #[error(transparent)]
    Pinned(Error),
}

/// A batch or the reason there is none.
pub type Made<T> = Result<T, DataError>;
