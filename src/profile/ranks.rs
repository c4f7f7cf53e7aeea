//! A distributed job's ranks, each one's profile: what
//! [`crate::input::ranks`] loads and the job view (`lens::job`) reduces.

use super::Input;

/// One rank's profile.
pub struct Rank {
    pub rank: u32,
    pub input: Input,
}

/// The ranks of one job, in rank order.
pub struct RankSet {
    pub ranks: Vec<Rank>,
    /// `distributedInfo.world_size` where the traces record it.
    pub world_size: Option<u32>,
    /// Gaps in the rank set and other things to say on stderr.
    pub notes: Vec<String>,
    /// Ranks left out because they could not be read (without `--strict`).
    pub warnings: Vec<String>,
}
