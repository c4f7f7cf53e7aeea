//! The readers' memory budget (docs/spec.md §1.2, docs/analysis.md §1).
//!
//! What a reader keeps grows with the trace: every distinct name, every
//! kernel span and op call. A trace made to be large (a 36 MB gzip that
//! inflates to 10 GB of tiny kernels) would grow until the allocator fails
//! and the process aborts. Instead the pass looks at the process's resident
//! memory every [`CHECK_EVERY`] events and stops with a sentence saying how
//! far it got and how to raise the budget. The default budget is half the
//! machine's memory (the smallest of `MemTotal`, a cgroup `memory.max` and
//! an address-space limit, `ulimit -v`);
//! `--max-memory SIZE` or `LIBREYOLO_MAX_MEMORY=SIZE` set another (`0`: none).

use crate::error::{Error, Result};

/// Keeps large blocks in their own mappings, so that freeing one gives its
/// pages back. glibc raises its mmap threshold each time such a block is
/// freed (up to 32 MiB); past that, the readers' growing lists (kernel
/// spans, the CPU log, the idle and roofline accounts) live inside the
/// heap, and each doubling leaves its old copy there as a hole the process
/// keeps. With the threshold fixed, `realloc` moves their pages with
/// `mremap` instead of copying and `free` unmaps them: on a 1 GB trace the
/// peak RSS falls from 75 to 62 MB on one thread, 113 to 86 MB on two, at
/// the same speed (BENCHMARKS.md). A user's own `MALLOC_MMAP_THRESHOLD_`
/// is left to rule. Called once, first thing in `main`.
pub fn keep_large_blocks_mapped() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_none() {
        // glibc's default for the size from which a block gets its own
        // mapping, now fixed.
        const THRESHOLD: i32 = 128 * 1024;
        // SAFETY: mallopt only sets one of the allocator's tunables.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, THRESHOLD);
        }
    }
}

/// Events between two looks at the process's memory: reading
/// `/proc/self/status` costs a few µs, nothing against 64k events.
pub const CHECK_EVERY: u64 = 1 << 16;

/// The environment variable that sets the budget when the flag does not.
pub const ENV: &str = "LIBREYOLO_MAX_MEMORY";

/// A memory budget: the most a reader may hold, and whether it is the
/// default (said in the message). A value the reader is given
/// ([`crate::trace::ReadOptions`]), not a process setting. Its checks are
/// also where a read asked to stop ([`Budget::stop`]) stops.
#[derive(Debug, Clone)]
pub struct Budget {
    /// Bytes; `None`: no limit (or the machine's memory unknown).
    pub limit: Option<u64>,
    /// Half the machine's memory, not a size the user gave.
    pub defaulted: bool,
    /// Set by whoever asked for the read to stop it at the next check (the
    /// MCP server, when the client cancels the call): the pass then ends
    /// with an error instead of reading on for a result nobody awaits.
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

impl PartialEq for Budget {
    /// The same limit, said the same way (a stop flag is no setting).
    fn eq(&self, other: &Budget) -> bool {
        (self.limit, self.defaulted) == (other.limit, other.defaulted)
    }
}

impl Default for Budget {
    /// [`ENV`] when set to a size, else half the machine's memory.
    fn default() -> Budget {
        Budget::from_flag(None).unwrap_or(Budget {
            limit: default_budget(),
            defaulted: true,
            stop: None,
        })
    }
}

impl Budget {
    /// No limit at all.
    pub const NONE: Budget = Budget { limit: None, defaulted: false, stop: None };

    /// The budget from `--max-memory` (first) or [`ENV`]; without either,
    /// half the machine's memory. A size that does not parse is a usage
    /// error; `0` is no limit.
    pub fn from_flag(flag: Option<&str>) -> Result<Budget> {
        let env = std::env::var(ENV).ok().filter(|v| !v.trim().is_empty());
        let (given, from) = match (flag, env.as_deref()) {
            (Some(f), _) => (Some(f), "--max-memory"),
            (None, Some(e)) => (Some(e), ENV),
            (None, None) => (None, ""),
        };
        let Some(text) = given else {
            return Ok(Budget { limit: default_budget(), defaulted: true, stop: None });
        };
        let bytes = parse_size(text).ok_or_else(|| {
            Error::usage(format!("{from} {text:?}: expected a size such as 8G, 512M or 2000000000 (bytes), or 0 for no limit"))
        })?;
        Ok(Budget { limit: (bytes != 0).then_some(bytes), defaulted: false, stop: None })
    }

    /// Called by the pass every [`CHECK_EVERY`] events: an error once the
    /// process holds more than the budget. `events` and `offset` (bytes of
    /// the decompressed trace read) say how far the pass got.
    pub fn check(&self, events: u64, offset: u64) -> Result<()> {
        if self.stop.as_ref().is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed)) {
            return Err(Error::failed(format!(
                "stopped reading after {events} events ({} of the trace): the read was cancelled",
                human(offset)
            )));
        }
        self.held(&format!(
            "stopped reading after {events} events ({} of the trace)",
            human(offset)
        ))
    }

    /// The same check between the stages of the analysis after the pass
    /// (`stage`: what comes next), so that the budget holds to the end, not
    /// only while reading: `more` is what that stage is about to take (its
    /// estimate, in bytes), so it is refused before it goes past the
    /// budget rather than after.
    pub fn check_analysis(&self, stage: &str, more: u64) -> Result<()> {
        if self.stop.as_ref().is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed)) {
            return Err(Error::failed(format!("stopped before {stage}: the read was cancelled")));
        }
        let what = match more {
            m if m >= 1 << 20 => format!(
                "stopped before {stage}, the trace read, which would take about {} more",
                human(m)
            ),
            _ => format!("stopped before {stage}, the trace read"),
        };
        self.held_with(&what, more)
    }

    /// An error saying `what` stopped once the process holds more than the budget.
    fn held(&self, what: &str) -> Result<()> {
        self.held_with(what, 0)
    }

    /// [`Budget::held`], counting `more` bytes about to be taken.
    fn held_with(&self, what: &str, more: u64) -> Result<()> {
        let (Some(limit), Some(rss)) = (self.limit, resident()) else { return Ok(()) };
        if rss.saturating_add(more) <= limit {
            return Ok(());
        }
        let whose = if self.defaulted {
            "the default budget, half of this machine's memory or memory limit"
        } else {
            "the budget set"
        };
        Err(Error::failed(format!(
            "{what}: the reader holds {}, past {} ({whose}); \
             give it more with --max-memory SIZE or {ENV}=SIZE (e.g. --max-memory 32G; 0 for no limit), or read a shorter trace",
            human(rss),
            human(limit)
        )))
    }
}

/// Half the machine's memory: `MemTotal`, or a smaller cgroup or address-space limit.
fn default_budget() -> Option<u64> {
    static DEFAULT: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *DEFAULT.get_or_init(|| {
        let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| meminfo_total(&m));
        let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok());
        // An address-space limit (`ulimit -v`) ends the process on an
        // allocation failure long before RAM runs out: it bounds too.
        let address =
            std::fs::read_to_string("/proc/self/limits").ok().and_then(|l| address_limit(&l));
        [total, cgroup, address].into_iter().flatten().min().map(|r| r / 2)
    })
}

/// `Max address space` of `/proc/self/limits` (soft limit), when set.
fn address_limit(limits: &str) -> Option<u64> {
    let line = limits.lines().find(|l| l.starts_with("Max address space"))?;
    line.trim_start_matches("Max address space").split_whitespace().next()?.parse().ok()
}

fn meminfo_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 =
        line.trim_start_matches("MemTotal:").trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb * 1024)
}

/// `8G`, `512M`, `64k`, `2GiB`, `1.5G`, plain bytes; binary multiples.
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().ok()?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return None,
    };
    let bytes = n * mult as f64;
    (bytes.is_finite() && bytes >= 0.0 && bytes < u64::MAX as f64).then_some(bytes as u64)
}

/// Resident memory of this process (`VmRSS` of `/proc/self/status`, in
/// kB whatever the page size).
fn resident() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 =
        line.trim_start_matches("VmRSS:").trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb * 1024)
}

/// A size for people: `1.5 GiB`, `300 MiB`.
pub fn human(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.2} GiB", b / (1u64 << 30) as f64)
    } else {
        format!("{:.0} MiB", b / (1u64 << 20) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("8G"), Some(8 << 30));
        assert_eq!(parse_size("512m"), Some(512 << 20));
        assert_eq!(parse_size("2GiB"), Some(2 << 30));
        assert_eq!(parse_size("1.5G"), Some(3 << 29));
        assert_eq!(parse_size("1000"), Some(1000));
        assert_eq!(parse_size("0"), Some(0));
        for bad in ["", "G", "-1G", "8X", "1e999", "nan"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
        assert_eq!(
            meminfo_total("MemTotal:       24683584 kB\nMemFree: 1 kB\n"),
            Some(24_683_584 * 1024)
        );
        let limits = "Max stack size 8388608 unlimited bytes\nMax address space         6144000000           6144000000           bytes\n";
        assert_eq!(address_limit(limits), Some(6_144_000_000));
        assert_eq!(
            address_limit(
                "Max address space         unlimited            unlimited            bytes\n"
            ),
            None
        );
    }
}
