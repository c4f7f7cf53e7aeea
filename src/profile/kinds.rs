//! The named values of a profile: its verdict, its mode and the kernel
//! categories. Each is an enum whose serde names are the strings
//! `profile.json` has always held, so files read and written are the same
//! bytes; a verdict or category another writer named is kept as written
//! (`Named`), so such a file still loads and prints as before.

use serde::{Deserialize, Deserializer, Serialize};

/// The bottleneck verdict (docs/analysis.md §10), decided once when the
/// profile is built (`analysis::verdict::decide`). Equal when their names
/// are.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Verdict {
    #[serde(rename = "memory-pressure")]
    MemoryPressure,
    #[serde(rename = "dataloader")]
    Dataloader,
    #[serde(rename = "compute")]
    Compute,
    /// The host-side verdicts, one per idle cause (docs/analysis.md §10,
    /// §12). Before the idle account every one of them was `host / launch`.
    #[serde(rename = "host / launch")]
    HostLaunch,
    #[serde(rename = "host / python")]
    HostPython,
    #[serde(rename = "host / sync")]
    HostSync,
    #[serde(rename = "host / cpu op")]
    HostCpuOp,
    #[serde(rename = "host / allocator")]
    HostAllocator,
    #[serde(rename = "gpu / dependency")]
    Dependency,
    /// A GPU idle for reasons the trace cannot show (no CPU side).
    #[serde(rename = "idle / unexplained")]
    IdleUnexplained,
    #[serde(rename = "communication")]
    Communication,
    #[serde(rename = "nms / postprocess")]
    NmsPostprocess,
    #[serde(rename = "preprocess")]
    Preprocess,
    /// Repeat trials that disagree.
    #[serde(rename = "mixed")]
    Mixed,
    /// A verdict another writer named, kept as written; empty when the
    /// file has none.
    #[serde(untagged)]
    Named(String),
}

impl Default for Verdict {
    fn default() -> Verdict {
        Verdict::Named(String::new())
    }
}

impl Verdict {
    /// The name in JSON and text.
    pub fn as_str(&self) -> &str {
        match self {
            Verdict::MemoryPressure => "memory-pressure",
            Verdict::Dataloader => "dataloader",
            Verdict::Compute => "compute",
            Verdict::HostLaunch => "host / launch",
            Verdict::HostPython => "host / python",
            Verdict::HostSync => "host / sync",
            Verdict::HostCpuOp => "host / cpu op",
            Verdict::HostAllocator => "host / allocator",
            Verdict::Dependency => "gpu / dependency",
            Verdict::IdleUnexplained => "idle / unexplained",
            Verdict::Communication => "communication",
            Verdict::NmsPostprocess => "nms / postprocess",
            Verdict::Preprocess => "preprocess",
            Verdict::Mixed => "mixed",
            Verdict::Named(s) => s,
        }
    }

    /// One of the host-side verdicts (the GPU waits on the host).
    pub fn is_host(&self) -> bool {
        matches!(
            self,
            Verdict::HostLaunch
                | Verdict::HostPython
                | Verdict::HostSync
                | Verdict::HostCpuOp
                | Verdict::HostAllocator
        )
    }
}

impl PartialEq for Verdict {
    fn eq(&self, other: &Verdict) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Verdict {}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// What a profile measures, decided from its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Training,
    Inference,
    /// A trace with no CPU side (GPU events only): nothing says which.
    Unknown,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Training => "training",
            Mode::Inference => "inference",
            Mode::Unknown => "unknown",
        }
    }

    /// The mode a file names; `None` for a name this reader does not know.
    pub fn parse(name: &str) -> Option<Mode> {
        [Mode::Training, Mode::Inference, Mode::Unknown].into_iter().find(|m| m.as_str() == name)
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// A `mode` field as a file holds it: a name this reader does not know
/// reads as absent, and the mode is then inferred from the content
/// ([`crate::profile::Profile::mode`]), as for a file without one.
pub fn mode_or_none<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Mode>, D::Error> {
    Ok(Option::<String>::deserialize(d)?.as_deref().and_then(Mode::parse))
}

/// A kernel's category (docs/analysis.md §7; the patterns are in
/// `analysis::kernels`). Compared, hashed and ordered by name, as the
/// strings were (ties in the kernel mix sort by name).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Category {
    #[serde(rename = "communication")]
    Communication,
    #[serde(rename = "attention")]
    Attention,
    #[serde(rename = "gemm / conv")]
    GemmConv,
    #[serde(rename = "reduction / norm")]
    ReductionNorm,
    #[serde(rename = "layout / copy")]
    LayoutCopy,
    #[serde(rename = "elementwise")]
    Elementwise,
    #[serde(rename = "other")]
    Other,
    /// A category another writer named, kept as written.
    #[serde(untagged)]
    Named(String),
}

impl Default for Category {
    fn default() -> Category {
        Category::Named(String::new())
    }
}

impl Category {
    /// Every category we classify into, in the order the kernel mix lists
    /// them when tied.
    pub const ALL: [Category; 7] = [
        Category::Communication,
        Category::Attention,
        Category::GemmConv,
        Category::ReductionNorm,
        Category::LayoutCopy,
        Category::Elementwise,
        Category::Other,
    ];

    /// The name in JSON and text.
    pub fn as_str(&self) -> &str {
        match self {
            Category::Communication => "communication",
            Category::Attention => "attention",
            Category::GemmConv => "gemm / conv",
            Category::ReductionNorm => "reduction / norm",
            Category::LayoutCopy => "layout / copy",
            Category::Elementwise => "elementwise",
            Category::Other => "other",
            Category::Named(s) => s,
        }
    }

    /// The position in [`Category::ALL`]; `None` for another writer's.
    pub fn index(&self) -> Option<usize> {
        Category::ALL.iter().position(|c| c == self)
    }
}

impl PartialEq for Category {
    fn eq(&self, other: &Category) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Category {}

impl std::hash::Hash for Category {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.as_str().hash(h);
    }
}

impl PartialOrd for Category {
    fn partial_cmp(&self, other: &Category) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Category {
    fn cmp(&self, other: &Category) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl std::fmt::Display for Category {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_foreign_ones_are_kept() {
        for v in [
            Verdict::Compute,
            Verdict::HostCpuOp,
            Verdict::Mixed,
            Verdict::Named("gpu-bound".into()),
            Verdict::default(),
        ] {
            let json = serde_json::to_string(&v).unwrap();
            assert_eq!(json, format!("\"{}\"", v.as_str()));
            assert_eq!(serde_json::from_str::<Verdict>(&json).unwrap(), v);
        }
        assert_eq!(
            serde_json::from_str::<Verdict>("\"host / launch\"").unwrap(),
            Verdict::HostLaunch
        );
        for c in Category::ALL.into_iter().chain([Category::Named("gemm/conv".into())]) {
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(json, format!("\"{}\"", c.as_str()));
            assert_eq!(serde_json::from_str::<Category>(&json).unwrap(), c);
        }
        assert_eq!(Category::Named("x".into()).index(), None);
        assert_eq!(Category::GemmConv.index(), Some(2));
        assert_eq!(Mode::parse("inference"), Some(Mode::Inference));
        assert_eq!(Mode::parse("eval"), None);
    }
}
