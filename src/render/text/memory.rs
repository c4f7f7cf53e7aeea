//! `profile memory`: per device the peaks, when they came, a sparkline of
//! allocated memory and the per-phase peaks.

use std::fmt::Write;

use super::{num, opt, size_mb, sparkline};
use crate::lens::memory::Memory;
use crate::profile::DeviceMemory;

/// A device's peak allocated and reserved memory, `sep` between them (the
/// text and the explorer's Memory pane print the same line).
pub fn memory_peaks(d: &DeviceMemory, sep: &str) -> String {
    let reserved = d.peak_reserved_mb.map_or_else(|| "n/a".to_string(), size_mb);
    format!("peak allocated {}{sep}peak reserved {reserved}", size_mb(d.peak_allocated_mb))
}

/// When in the window the allocated peak came, in which phase and op.
pub fn memory_peak_at(m: &Memory, d: &DeviceMemory, sep: &str) -> String {
    format!(
        "peak at {} ms of {} ms{sep}phase {}{sep}op {}",
        num(d.peak_ms, 3),
        num(m.window_ms, 3),
        d.peak_phase,
        d.peak_op.as_deref().unwrap_or("n/a")
    )
}

/// `profile memory`: per device the peaks with the phase and op at the
/// allocated peak, a sparkline of allocated memory, the per-phase peaks.
pub fn memory(m: &Memory) -> String {
    let Some(none) = &m.none else {
        let mut o = String::new();
        for d in &m.devices {
            let relative = if d.totals {
                ""
            } else {
                " (counted from the first event: the trace records sizes, not totals)"
            };
            let _ = writeln!(
                o,
                "{}  {}  |  {} events{relative}",
                d.device,
                memory_peaks(d, "  |  "),
                d.events
            );
            let _ = writeln!(o, "  {}", memory_peak_at(m, d, "  |  "));
            let _ = writeln!(o, "  allocated  {}", sparkline(&Memory::allocated(d), 60));
            let width = d.phases.iter().map(|p| p.phase.chars().count()).max().unwrap_or(5).max(5);
            // The columns in the unit of the device's peak (see `size_mb`).
            let (unit, per) = if size_mb(d.peak_allocated_mb).ends_with("GB") {
                ("GB", 1000.0)
            } else {
                ("MB", 1.0)
            };
            let _ = writeln!(
                o,
                "  {:<width$}  {:>14}  {:>13}",
                "phase",
                format!("peak alloc {unit}"),
                format!("peak resv {unit}")
            );
            for p in &d.phases {
                let _ = writeln!(
                    o,
                    "  {:<width$}  {:>14}  {:>13}",
                    p.phase,
                    num(p.peak_allocated_mb / per, 1),
                    opt(p.peak_reserved_mb.map(|r| r / per), 1)
                );
            }
        }
        return o;
    };
    format!("{none}\n")
}
