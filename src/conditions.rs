//! The conditions a capture ran under, and whether they distorted it.
//!
//! On a shared machine other processes take the cores our intra-op
//! (OpenMP) threads wait on: one busy core slowed a 2-thread CPU capture
//! from 43 ms to 4.5 s per image here, at random. So every capture records
//! the load around its measured window and the CPU time other processes
//! used during it, and judges the window `contended` when they took cores
//! our threads needed. Readers show the judgement above the verdict and
//! `compare` refuses a significance call on a contended side.
//!
//! Linux `/proc` only; elsewhere the figures are absent and nothing is
//! judged contended. On CUDA the capture adds the GPU's side
//! ([`GpuConditions`], read through NVML by the capture engine): other
//! processes on the device and clocks the driver slowed also distort a
//! window, and are judged the same way.

use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Other processes using more than the cores our threads left free plus
/// this much of a core, on average over the window, is contention.
pub const CONTENDED_CORES: f64 = 0.25;

/// What `host.conditions` of a profile records.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Conditions {
    /// 1, 5 and 15 minute load averages when the window started and ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_avg_start: Option<[f64; 3]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_avg_end: Option<[f64; 3]>,
    /// CPUs the capture could run on (its affinity: all of the machine's
    /// unless `taskset` or a cpuset narrowed it) and the intra-op threads
    /// it used.
    pub cpus: usize,
    pub threads: usize,
    /// The window, s.
    pub window_s: f64,
    /// CPU time other processes (and the hypervisor, as steal) used on
    /// those CPUs during the window, in cores on average: 0.9 is 90% of one
    /// core. This is what `contended` judges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_cores: Option<f64>,
    /// The same on the machine's other CPUs, when the capture could not use
    /// them all: no core our threads wait on, so not judged, but the caches
    /// and memory bandwidth they share are the readers' to weigh.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_cores_elsewhere: Option<f64>,
    /// cpufreq scaling governor of CPU 0, where readable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub governor: Option<String>,
    /// The GPU the capture ran on, where NVML could be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuConditions>,
    pub contended: bool,
    /// Why the window counts as contended, in one sentence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contended_why: Option<String>,
}

impl Conditions {
    /// `host.conditions` of a profile's `host` record, if it has one.
    pub fn of_host(host: Option<&Value>) -> Option<Conditions> {
        serde_json::from_value(host?.get("conditions")?.clone()).ok()
    }

    /// Why a profile's capture was contended, if it was (readers say it
    /// above the verdict and `compare` refuses its call on it).
    pub fn contended_in(host: Option<&Value>) -> Option<String> {
        let c = Conditions::of_host(host).filter(|c| c.contended)?;
        Some(
            c.contended_why
                .unwrap_or_else(|| "other processes used the CPUs during the window".into()),
        )
    }

    /// Other processes busy on the CPUs a pinned capture could not use: not
    /// contention (none of its threads waits on them), but said, since they
    /// share its caches and memory bandwidth.
    pub fn neighbours_in(host: Option<&Value>) -> Option<String> {
        let c = Conditions::of_host(host)?;
        let elsewhere = c.other_cores_elsewhere.filter(|e| *e > CONTENDED_CORES)?;
        Some(format!(
            "other processes kept {elsewhere:.1} of a core busy on CPUs this capture could not use (it ran on {}): not contention, but they share its caches and memory bandwidth",
            plural(c.cpus, "CPU")
        ))
    }

    /// The same window with the GPU's conditions added, judged again.
    pub fn with_gpu(self, gpu: Option<GpuConditions>) -> Conditions {
        Conditions { gpu, ..self }.judge()
    }

    /// Decides `contended` from the recorded figures: every reason found,
    /// in one sentence.
    fn judge(mut self) -> Conditions {
        let mut why = Vec::new();
        let free = self.cpus.saturating_sub(self.threads) as f64;
        if let Some(other) = self.other_cores.filter(|o| *o > free + CONTENDED_CORES) {
            why.push(format!(
                "other processes used {other:.1} of a core during the {:.1} s window on {} ({} ours)",
                self.window_s,
                plural(self.cpus, "core"),
                plural(self.threads, "thread")
            ));
        }
        if let Some(gpu) = &self.gpu {
            why.extend(gpu.distortions());
        }
        self.contended = !why.is_empty();
        self.contended_why = self.contended.then(|| why.join("; "));
        self
    }
}

/// The GPU around a capture's window: sampled when the window starts and
/// when it ends (NVML; `nvidia-smi` reads the same counters).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct GpuConditions {
    /// NVML's index of the device (CUDA_VISIBLE_DEVICES resolved).
    pub index: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// SM clock at the start and at the end of the window, and the
    /// device's maximum, MHz.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sm_clock_mhz_start: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sm_clock_mhz_end: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sm_clock_mhz_max: Option<u32>,
    /// Core temperature at the start and at the end, °C.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature_c_start: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature_c_end: Option<u32>,
    /// Reasons the driver gave for holding the clocks down at either
    /// sample (NVML's names, e.g. `sw power cap`, `hw thermal slowdown`);
    /// idle and application-clock settings are left out.
    pub slowdowns: Vec<String>,
    /// Compute processes on the device other than ours at either sample.
    pub other_processes: Vec<GpuProcess>,
}

fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// Slowdowns that make a window unlike the next one on the same card.
pub const GPU_DISTORTING_SLOWDOWNS: [&str; 4] =
    ["hw slowdown", "sw thermal slowdown", "hw thermal slowdown", "hw power brake slowdown"];

/// A compute process NVML lists on the device.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct GpuProcess {
    /// Its PID as NVML reports it: the host's namespace, which inside a
    /// container is not the PID the container sees.
    pub pid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub used_mib: Option<u64>,
}

impl GpuConditions {
    /// What on this GPU distorts the window, one clause each.
    fn distortions(&self) -> Vec<String> {
        let mut why = Vec::new();
        if !self.other_processes.is_empty() {
            let pids: Vec<String> =
                self.other_processes.iter().map(|p| p.pid.to_string()).collect();
            let n = pids.len();
            why.push(format!(
                "{n} other process{} used GPU {} during the window (pid {})",
                if n == 1 { "" } else { "es" },
                self.index,
                pids.join(", ")
            ));
        }
        // A power cap is how a busy card runs on every run (recorded, not
        // judged); heat and hardware slowdowns come and go between runs.
        let distorting: Vec<&str> = self
            .slowdowns
            .iter()
            .map(String::as_str)
            .filter(|s| GPU_DISTORTING_SLOWDOWNS.contains(s))
            .collect();
        if !distorting.is_empty() {
            let clocks =
                match (self.sm_clock_mhz_start, self.sm_clock_mhz_end, self.sm_clock_mhz_max) {
                    (Some(a), Some(b), Some(max)) => format!(", SM clock {a}→{b} of {max} MHz"),
                    _ => String::new(),
                };
            why.push(format!(
                "GPU {} clocks were held down ({}{clocks})",
                self.index,
                distorting.join(", ")
            ));
        }
        why
    }
}

/// What `--repeat` says about its trials' conditions.
#[derive(Debug, Default)]
pub struct Trials {
    /// One line per trial for stderr: its img/s and what else ran.
    pub lines: Vec<String>,
    /// Trials whose judgement differs from the others'.
    pub warnings: Vec<String>,
    /// For the aggregate: contended when any trial was, saying which.
    pub aggregate: Option<Conditions>,
}

/// Judges a `--repeat` run from each trial's img/s and conditions.
pub fn across_trials(trials: &[(Option<f64>, Option<Conditions>)]) -> Trials {
    let n = trials.len();
    let mut out = Trials::default();
    for (k, (img_per_s, c)) in trials.iter().enumerate() {
        let speed = img_per_s.map_or("n/a".to_string(), |v| format!("{v:.2} img/s"));
        let other = c
            .as_ref()
            .and_then(|c| c.other_cores)
            .map_or(String::new(), |o| format!(", other processes {o:.1} cores"));
        let flag = if c.as_ref().is_some_and(|c| c.contended) { " (contended)" } else { "" };
        out.lines.push(format!("trial {}/{n}: {speed}{other}{flag}", k + 1));
    }
    let contended: Vec<usize> =
        (0..n).filter(|k| trials[*k].1.as_ref().is_some_and(|c| c.contended)).collect();
    if !contended.is_empty() && contended.len() < n {
        for &k in &contended {
            let why =
                trials[k].1.as_ref().and_then(|c| c.contended_why.clone()).unwrap_or_default();
            out.warnings
                .push(format!("trial {}/{n} ran contended ({why}), the others did not: its numbers are not comparable with theirs", k + 1));
        }
    }
    out.aggregate = trials.iter().rev().find_map(|(_, c)| c.clone()).map(|mut agg| {
        if let Some(&k) = contended.first() {
            agg.contended = true;
            let why =
                trials[k].1.as_ref().and_then(|c| c.contended_why.clone()).unwrap_or_default();
            agg.contended_why = Some(format!("trial {}/{n}: {why}", k + 1));
        }
        agg
    });
    out
}

/// Puts `conditions` into a profile's `host` record.
pub fn set_in_host(host: &mut Option<Value>, conditions: Option<&Conditions>) {
    let Some(c) = conditions else { return };
    let record = host.get_or_insert_with(|| Value::Object(Default::default()));
    if let (Some(obj), Ok(v)) = (record.as_object_mut(), serde_json::to_value(c)) {
        obj.insert("conditions".into(), v);
    }
}

/// Cores other processes keep busy right now, of those this process may
/// run on: their CPU use over `sample` while this process waits (so its own
/// use is nil), in cores.
pub fn busy_cores_now(sample: std::time::Duration) -> Option<f64> {
    let a = cpu_times()?;
    std::thread::sleep(sample);
    let b = cpu_times()?;
    Some(others(&a, &b)?.0)
}

/// Intra-op threads for the CPUs we can have: those this process may use,
/// less the cores other processes keep busy (rounded), at least one. A
/// thread on a core another process holds makes every parallel operator
/// wait for it: here one busy loop on 2 cores slowed a 2-thread capture
/// up to 100×, while 1 thread ran at its quiet speed.
pub fn threads_we_can_have(cpus: usize, busy_cores: f64) -> usize {
    cpus.saturating_sub(busy_cores.round() as usize).max(1)
}

/// A measured window in progress: the counters at its start.
pub struct HostWindow {
    started: Instant,
    cpu: Option<CpuTimes>,
    load: Option<[f64; 3]>,
}

impl HostWindow {
    pub fn start() -> HostWindow {
        HostWindow { started: Instant::now(), cpu: cpu_times(), load: load_avg() }
    }

    /// The conditions of the window from its start to now, judged.
    pub fn finish(self, threads: usize) -> Conditions {
        let end = cpu_times();
        let (other_cores, elsewhere) = match (&self.cpu, &end) {
            (Some(a), Some(b)) => others(a, b).map_or((None, None), |(o, e)| (Some(o), e)),
            _ => (None, None),
        };
        let cpus = end
            .map(|e| e.ours.cpus)
            .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
        Conditions {
            load_avg_start: self.load,
            load_avg_end: load_avg(),
            cpus,
            threads,
            window_s: crate::util::round(self.started.elapsed().as_secs_f64(), 3),
            other_cores: other_cores.map(|c| crate::util::round(c, 2)),
            other_cores_elsewhere: elsewhere.map(|c| crate::util::round(c, 2)),
            governor: std::fs::read_to_string(
                "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
            )
            .ok()
            .map(|g| g.trim().to_string()),
            gpu: None,
            contended: false,
            contended_why: None,
        }
        .judge()
    }
}

/// Busy and total jiffies of a set of CPUs (/proc/stat), summed.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Jiffies {
    busy: u64,
    total: u64,
    cpus: usize,
}

/// /proc/stat split into the CPUs this process may run on and the rest,
/// and this process's own jiffies (/proc/self/stat).
#[derive(Debug, Clone, Copy, PartialEq)]
struct CpuTimes {
    ours: Jiffies,
    rest: Jiffies,
    own: u64,
}

fn cpu_times() -> Option<CpuTimes> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let own = std::fs::read_to_string("/proc/self/stat").ok()?;
    parse_cpu_times(&stat, &own, allowed_cpus().as_deref())
}

/// The CPUs this process may run on: `Cpus_allowed_list` of
/// /proc/self/status (`taskset`, cpusets); `None`: all of them.
fn allowed_cpus() -> Option<Vec<u32>> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    crate::util::parse_ranges(
        status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?.trim(),
    )
}

/// `cpuN  user nice system idle iowait irq softirq steal guest guest_nice`
/// per CPU: idle and iowait are idle; guest time is already inside user.
/// Our own time is utime + stime, fields 14 and 15 of /proc/self/stat,
/// counted after the `)` that ends the command name (which may hold spaces).
fn parse_cpu_times(stat: &str, own: &str, allowed: Option<&[u32]>) -> Option<CpuTimes> {
    let (mut ours, mut rest) = (Jiffies::default(), Jiffies::default());
    for line in stat.lines() {
        // `cpu3 …`, not the machine's `cpu  …` line nor `intr …`.
        let Some(cpu) =
            line.split_whitespace().next().and_then(|w| w.strip_prefix("cpu")?.parse::<u32>().ok())
        else {
            continue;
        };
        let f: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .take(8)
            .map(|v| v.parse().ok())
            .collect::<Option<_>>()?;
        if f.len() < 8 {
            return None;
        }
        let total: u64 = f.iter().sum();
        let side = if allowed.is_none_or(|a| a.contains(&cpu)) { &mut ours } else { &mut rest };
        side.busy += total - f[3] - f[4];
        side.total += total;
        side.cpus += 1;
    }
    if ours.cpus == 0 {
        return None;
    }
    let after = &own[own.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // After the name: state is field 3, so utime (14) and stime (15) are at 11 and 12.
    let own = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(CpuTimes { ours, rest, own })
}

/// Cores other processes kept busy between two samples, on average: on the
/// CPUs we may run on (our own time taken out), and on the rest if any.
fn others(a: &CpuTimes, b: &CpuTimes) -> Option<(f64, Option<f64>)> {
    let cores = |a: &Jiffies, b: &Jiffies, own: u64| {
        let total = b.total.checked_sub(a.total).filter(|t| *t > 0 && a.cpus == b.cpus)?;
        Some(
            b.busy.saturating_sub(a.busy).saturating_sub(own) as f64 / total as f64 * b.cpus as f64,
        )
    };
    let ours = cores(&a.ours, &b.ours, b.own.saturating_sub(a.own))?;
    Some((ours, (b.rest.cpus > 0).then(|| cores(&a.rest, &b.rest, 0)).flatten()))
}

fn load_avg() -> Option<[f64; 3]> {
    let s = std::fs::read_to_string("/proc/loadavg").ok()?;
    let v: Vec<f64> =
        s.split_whitespace().take(3).map(|x| x.parse().ok()).collect::<Option<_>>()?;
    Some([*v.first()?, *v.get(1)?, *v.get(2)?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_and_self_stat_parse() {
        let stat = "cpu  100 5 50 800 20 3 2 10 0 0\ncpu0 50 2 25 400 10 1 1 5 0 0\ncpu1 50 3 25 400 10 2 1 5 0 0\nintr 1 2\n";
        let own = "4242 (my (odd) name) R 1 4242 4242 0 -1 4194304 100 0 0 0 70 30 0 0 20 0 3 0\n";
        let t = parse_cpu_times(stat, own, None).unwrap();
        let both = Jiffies { busy: 170, total: 990, cpus: 2 };
        assert_eq!(t, CpuTimes { ours: both, rest: Jiffies::default(), own: 100 });
        // Pinned to CPU 1 (`taskset -c 1`): CPU 0 is elsewhere.
        let t = parse_cpu_times(stat, own, Some(&[1])).unwrap();
        assert_eq!(t.ours, Jiffies { busy: 86, total: 496, cpus: 1 });
        assert_eq!(t.rest, Jiffies { busy: 84, total: 494, cpus: 1 });
        assert_eq!(parse_cpu_times(stat, own, Some(&[5])), None, "no CPU we may use");
    }

    #[test]
    fn others_are_busy_time_minus_ours_in_cores() {
        // 2 CPUs, 200 jiffies of machine time: 150 busy, 60 of them ours.
        let zero = CpuTimes {
            ours: Jiffies { cpus: 2, ..Default::default() },
            rest: Jiffies::default(),
            own: 0,
        };
        let b = CpuTimes { ours: Jiffies { busy: 150, total: 200, cpus: 2 }, own: 60, ..zero };
        assert_eq!(others(&zero, &b), Some((0.9, None)));
        assert_eq!(others(&b, &b), None, "no time passed");
    }

    #[test]
    fn a_busy_core_we_may_not_use_is_elsewhere_not_ours() {
        // Pinned to one of two CPUs: we ran 95 of its 100 jiffies, another
        // process all 100 of the other's.
        let zero = CpuTimes {
            ours: Jiffies { cpus: 1, ..Default::default() },
            rest: Jiffies { cpus: 1, ..Default::default() },
            own: 0,
        };
        let b = CpuTimes {
            ours: Jiffies { busy: 97, total: 100, cpus: 1 },
            rest: Jiffies { busy: 100, total: 100, cpus: 1 },
            own: 95,
        };
        let (ours, elsewhere) = others(&zero, &b).unwrap();
        assert!((ours - 0.02).abs() < 1e-9 && elsewhere == Some(1.0), "{ours} {elsewhere:?}");
        let judged = Conditions {
            cpus: 1,
            threads: 1,
            window_s: 1.0,
            other_cores: Some(ours),
            other_cores_elsewhere: elsewhere,
            ..Default::default()
        }
        .judge();
        assert!(!judged.contended, "{judged:?}");
        let shared = Conditions { other_cores: Some(0.6), ..judged }.judge();
        assert_eq!(
            shared.contended_why.as_deref(),
            Some(
                "other processes used 0.6 of a core during the 1.0 s window on 1 core (1 thread ours)"
            )
        );
    }

    #[test]
    fn contended_when_others_take_the_cores_our_threads_need() {
        let c = |other: f64, threads: usize| {
            Conditions {
                cpus: 2,
                threads,
                window_s: 3.0,
                other_cores: Some(other),
                ..Default::default()
            }
            .judge()
        };
        let busy = c(0.9, 2);
        assert!(busy.contended);
        assert_eq!(
            busy.contended_why.as_deref(),
            Some(
                "other processes used 0.9 of a core during the 3.0 s window on 2 cores (2 threads ours)"
            )
        );
        assert!(!c(0.2, 2).contended, "a quarter of a core is noise");
        assert!(!c(0.9, 1).contended, "one thread on two cores leaves one free");
        assert!(c(1.3, 1).contended);
        let unknown = Conditions { cpus: 2, threads: 2, ..Default::default() }.judge();
        assert!(!unknown.contended, "no figures, no judgement");
    }

    #[test]
    fn other_gpu_processes_and_slowed_clocks_are_contention() {
        let quiet = Conditions {
            cpus: 2,
            threads: 2,
            window_s: 2.0,
            other_cores: Some(0.05),
            ..Default::default()
        }
        .judge();
        let gpu = GpuConditions {
            index: 1,
            sm_clock_mhz_start: Some(1980),
            sm_clock_mhz_end: Some(1410),
            sm_clock_mhz_max: Some(1980),
            ..Default::default()
        };
        assert!(
            !quiet.clone().with_gpu(Some(gpu.clone())).contended,
            "a GPU alone with full clocks"
        );
        let shared = GpuConditions {
            other_processes: vec![
                GpuProcess { pid: 7, used_mib: Some(900) },
                GpuProcess { pid: 9, used_mib: None },
            ],
            ..gpu.clone()
        };
        let c = quiet.clone().with_gpu(Some(shared));
        assert!(c.contended);
        assert_eq!(
            c.contended_why.as_deref(),
            Some("2 other processes used GPU 1 during the window (pid 7, 9)")
        );
        let capped = GpuConditions { slowdowns: vec!["sw power cap".into()], ..gpu.clone() };
        assert!(
            !quiet.clone().with_gpu(Some(capped)).contended,
            "a power cap is the card's steady state"
        );
        let hot = GpuConditions {
            slowdowns: vec!["sw power cap".into(), "sw thermal slowdown".into()],
            ..gpu
        };
        let c = Conditions { other_cores: Some(1.2), ..quiet }.with_gpu(Some(hot));
        assert_eq!(
            c.contended_why.as_deref(),
            Some(
                "other processes used 1.2 of a core during the 2.0 s window on 2 cores (2 threads ours); GPU 1 clocks were held down (sw thermal slowdown, SM clock 1980→1410 of 1980 MHz)"
            )
        );
    }

    #[test]
    fn a_contended_trial_is_flagged_and_taints_the_aggregate() {
        let quiet = Conditions {
            cpus: 2,
            threads: 2,
            window_s: 2.0,
            other_cores: Some(0.05),
            ..Default::default()
        }
        .judge();
        let busy = Conditions { other_cores: Some(1.2), ..quiet.clone() }.judge();
        let t = across_trials(&[
            (Some(10.0), Some(quiet.clone())),
            (Some(3.0), Some(busy)),
            (Some(10.2), Some(quiet.clone())),
        ]);
        assert_eq!(t.lines[1], "trial 2/3: 3.00 img/s, other processes 1.2 cores (contended)");
        assert_eq!(t.lines[0], "trial 1/3: 10.00 img/s, other processes 0.1 cores");
        assert_eq!(t.warnings.len(), 1);
        assert!(
            t.warnings[0]
                .starts_with("trial 2/3 ran contended (other processes used 1.2 of a core"),
            "{}",
            t.warnings[0]
        );
        let agg = t.aggregate.unwrap();
        assert!(
            agg.contended
                && agg.contended_why.unwrap().starts_with("trial 2/3: other processes used 1.2")
        );
        // All quiet: nothing to flag.
        let t = across_trials(&[(Some(10.0), Some(quiet.clone())), (Some(10.1), Some(quiet))]);
        assert!(t.warnings.is_empty() && !t.aggregate.unwrap().contended);
    }

    #[test]
    fn threads_leave_the_busy_cores_alone() {
        assert_eq!(threads_we_can_have(2, 0.1), 2);
        assert_eq!(threads_we_can_have(2, 0.9), 1);
        assert_eq!(threads_we_can_have(2, 2.0), 1, "at least one");
        assert_eq!(threads_we_can_have(16, 3.4), 13);
    }

    #[test]
    fn read_back_from_a_profiles_host_record() {
        let host = serde_json::json!({ "threads": 2, "conditions": { "cpus": 2, "threads": 2, "window_s": 1.0, "other_cores": 1.1, "contended": true, "contended_why": "x" } });
        let c = Conditions::of_host(Some(&host)).unwrap();
        assert!(c.contended && c.other_cores == Some(1.1));
        assert_eq!(
            Conditions::of_host(Some(&serde_json::json!({ "threads": 2 }))),
            None,
            "old profiles have none"
        );
    }
}
