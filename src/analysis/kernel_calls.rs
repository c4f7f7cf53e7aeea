//! How each kernel's calls ran (docs/analysis.md §7.1): the spread of
//! their durations, the streams they ran on and the launch configurations
//! (`grid`, `block`) the trace recorded, over the calls the kernels table
//! counts. The pass notes each counted call and each kernel's
//! configuration ([`Log`]); `build` reads them once per kernel name.

use rustc_hash::FxHashMap as HashMap;

use crate::profile::{KernelCalls, LaunchConfig, StreamRef};

/// A kernel's launch configuration: its grid and its block.
type Dims = ([u32; 3], [u32; 3]);

/// What the pass keeps for [`calls`].
#[derive(Debug, Default)]
pub struct Log {
    /// The kernel spans (by index) the tables counted, in the window.
    counted: Vec<u32>,
    /// Per kernel span, its configuration's id + 1 (0: none recorded, or
    /// past `u16`'s room).
    config_of: Vec<u16>,
    configs: Vec<Dims>,
    config_ids: HashMap<Dims, u16>,
    /// The last configuration met and its id (0: none yet).
    last: (Dims, u16),
}

impl Log {
    /// A kernel span was pushed, with its `grid` and `block` where the
    /// trace recorded them.
    pub fn kernel(&mut self, grid: Option<[u32; 3]>, block: Option<[u32; 3]>) {
        let (Some(grid), Some(block)) = (grid, block) else {
            self.config_of.push(0);
            return;
        };
        // Mostly launched as the kernel before: a compare, not a lookup.
        if self.last.0 != (grid, block) || self.last.1 == 0 {
            let next = self.configs.len();
            let id = match self.config_ids.get(&(grid, block)) {
                Some(&id) => id,
                None if next < usize::from(u16::MAX) => {
                    self.configs.push((grid, block));
                    let id = next as u16 + 1;
                    self.config_ids.insert((grid, block), id);
                    id
                }
                None => 0,
            };
            self.last = ((grid, block), id);
        }
        self.config_of.push(self.last.1);
    }

    /// The kernel span `span` was counted in the tables.
    pub fn counted(&mut self, span: u32) {
        self.counted.push(span);
    }

    /// The kernel spans (by index) the tables counted: the kernels of the
    /// window's steps, placed by their launch.
    pub fn counted_spans(&self) -> &[u32] {
        &self.counted
    }

    /// The counting starts again (a replay of the pass).
    pub fn recount(&mut self) {
        self.counted.clear();
    }
}

/// One counted call: the kernel's name, its duration, queue and
/// configuration id.
#[derive(Debug, Clone, Copy)]
pub struct Call {
    pub name: u32,
    pub dur: i64,
    pub queue: u32,
}

/// Each kernel name's [`KernelCalls`], from the counted calls (`call`
/// reads a span's name, duration and queue) and the queues' (device,
/// stream); `steps` turns counts into counts per step.
pub fn calls(
    log: &Log,
    call: impl Fn(u32) -> Call,
    queues: &[(i64, i64)],
    steps: f64,
) -> HashMap<u32, KernelCalls> {
    let mut by_name: HashMap<u32, Vec<(i64, u32, u16)>> = HashMap::default();
    for &span in &log.counted {
        let c = call(span);
        let config = log.config_of.get(span as usize).copied().unwrap_or(0);
        by_name.entry(c.name).or_default().push((c.dur, c.queue, config));
    }
    by_name
        .into_iter()
        .map(|(name, mut v)| {
            v.sort_unstable_by_key(|c| c.0);
            let us = |i: usize| crate::util::round(v[i].0 as f64 / 1e3, 3);
            let n = v.len();
            let mut queues_used: Vec<u32> = v.iter().map(|c| c.1).collect();
            queues_used.sort_unstable();
            queues_used.dedup();
            let streams = queues_used
                .iter()
                .filter_map(|&q| queues.get(q as usize))
                .map(|&(device, stream)| StreamRef { device, stream })
                .collect();
            let mut per_config: HashMap<u16, u64> = HashMap::default();
            for c in v.iter().filter(|c| c.2 != 0) {
                *per_config.entry(c.2).or_insert(0) += 1;
            }
            let mut configs: Vec<(u16, u64)> = per_config.into_iter().collect();
            configs.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            // The most used one, and how many there were (an elementwise
            // kernel's grid follows its tensor's size).
            let distinct = configs.len();
            let launch = configs.first().map(|&(id, count)| {
                let (grid, block) = log.configs[usize::from(id) - 1];
                LaunchConfig {
                    grid,
                    block,
                    calls_per_step: crate::util::round(count as f64 / steps, 2),
                }
            });
            let calls = KernelCalls {
                calls: n as u64,
                p50_us: us(nearest_rank(n, 0.50)),
                p99_us: us(nearest_rank(n, 0.99)),
                max_us: us(n - 1),
                streams,
                launch_config: launch,
                distinct_launch_configs: distinct as u64,
                calls_without_config: if distinct > 0 {
                    v.iter().filter(|c| c.2 == 0).count() as u64
                } else {
                    0
                },
            };
            (name, calls)
        })
        .collect()
}

/// The index of the `q` quantile of `n` sorted values, by nearest rank
/// (the smallest value with at least `q` of them at or below it): with
/// fewer than 100 calls the 99th percentile is the longest call.
fn nearest_rank(n: usize, q: f64) -> usize {
    ((q * n as f64).ceil() as usize).clamp(1, n) - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_rank_of_few_calls_is_the_longest_for_p99() {
        assert_eq!(nearest_rank(1, 0.5), 0);
        assert_eq!(nearest_rank(1, 0.99), 0);
        assert_eq!(nearest_rank(4, 0.5), 1);
        assert_eq!(nearest_rank(5, 0.99), 4);
        assert_eq!(nearest_rank(200, 0.99), 197);
    }

    #[test]
    fn calls_spread_streams_and_configs_per_kernel() {
        let mut log = Log::default();
        // Spans 0..4 of kernel 7 on queues 0/1, one of kernel 9; span 2
        // with no configuration.
        let spans = [(7, 10_000, 0), (7, 30_000, 1), (7, 20_000, 0), (9, 5_000, 0), (7, 40_000, 0)];
        for (i, _) in spans.iter().enumerate() {
            match i {
                2 => log.kernel(None, None),
                4 => log.kernel(Some([8, 1, 1]), Some([256, 1, 1])),
                _ => log.kernel(Some([4, 1, 1]), Some([128, 1, 1])),
            }
            log.counted(i as u32);
        }
        let call = |s: u32| {
            let (name, dur, queue) = spans[s as usize];
            Call { name, dur, queue }
        };
        let out = calls(&log, call, &[(0, 7), (0, 20)], 2.0);
        let k = &out[&7];
        assert_eq!(k.calls, 4);
        assert_eq!((k.p50_us, k.p99_us, k.max_us), (20.0, 40.0, 40.0));
        assert_eq!(
            k.streams,
            vec![StreamRef { device: 0, stream: 7 }, StreamRef { device: 0, stream: 20 }]
        );
        assert_eq!(k.distinct_launch_configs, 2);
        let most = k.launch_config.as_ref().unwrap();
        assert_eq!((most.grid, most.block), ([4, 1, 1], [128, 1, 1]));
        assert_eq!(most.calls_per_step, 1.0);
        assert_eq!(out[&9].calls, 1);
        // A replay counts again from nothing.
        log.recount();
        assert!(calls(&log, call, &[(0, 7)], 1.0).is_empty());
    }
}
