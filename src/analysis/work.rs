//! The performance model (docs/analysis.md §13): FLOPs and bytes moved of
//! one op call, from the shapes, dtypes and scalar arguments the profiler
//! recorded (`record_shapes=True`: `Input Dims`, `Input type`,
//! `Concrete Inputs`). Conventional formulas, written once here; an op this
//! model does not know is reported as such, never guessed.

use serde::Serialize;

/// The element type of an op's tensors, as `Input type` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    F64,
    F32,
    Bf16,
    F16,
    /// Any 8-bit float (`c10::Float8_e4m3fn`, `…e5m2`, their `fnuz` forms).
    Fp8,
    Int8,
    Uint8,
    Int16,
    Int32,
    Int64,
    Bool,
}

impl Dtype {
    /// Bytes per element.
    pub fn size(self) -> u32 {
        match self {
            Dtype::F64 | Dtype::Int64 => 8,
            Dtype::F32 | Dtype::Int32 => 4,
            Dtype::Bf16 | Dtype::F16 | Dtype::Int16 => 2,
            Dtype::Fp8 | Dtype::Int8 | Dtype::Uint8 | Dtype::Bool => 1,
        }
    }
}

/// The raw JSON text of an op call's shape arguments, as the trace holds
/// them (each an array with one entry per op input).
#[derive(Debug, Clone, Copy, Default)]
pub struct OpShapes<'a> {
    pub dims: Option<&'a [u8]>,
    pub types: Option<&'a [u8]>,
    pub concrete: Option<&'a [u8]>,
}

/// What one op call does, by the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Work {
    pub flops: f64,
    /// Bytes read and written, each tensor once (no cache reuse assumed).
    pub bytes: f64,
    pub dtype: Dtype,
    /// A matrix-multiply-like op (GEMM, convolution, attention) whose FLOPs
    /// can run on Tensor / Matrix Cores; the rest is judged by bytes.
    pub matrix: bool,
    /// The formula's inputs, for a details line: `M=8944 N=1024 K=1024`.
    pub inputs: String,
}

/// The model's answer for one op call.
#[derive(Debug, Clone, PartialEq)]
pub enum Model {
    Work(Work),
    /// A modelled op whose shapes were not recorded or do not fit the
    /// formula (said, not guessed).
    NoShapes,
    /// An op the model does not know.
    Unmodelled,
}

/// True when the model knows `op` (a cheap test by name, made before any
/// shape is parsed).
pub fn is_modelled(op: &str) -> bool {
    let _ = op;
    false
}

/// FLOPs and bytes of one call of `op` with these shapes.
pub fn model(op: &str, shapes: &OpShapes<'_>) -> Model {
    let _ = (op, shapes);
    Model::Unmodelled
}
