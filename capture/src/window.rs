//! The measured window's conditions (docs/analysis.md, "Conditions"): the
//! host's (the core's `conditions::HostWindow`) and, on CUDA, the GPU's: other
//! compute processes on the device and clocks the driver held down,
//! sampled through NVML when the window starts and when it ends. NVML is
//! opened at run time (nvml-wrapper loads libnvidia-ml.so), so a machine
//! without the NVIDIA driver records no GPU figures and runs as before.

use libreyolo_core::conditions::{self, Conditions, GpuConditions, GpuProcess};
use nvml_wrapper::bitmasks::device::ThrottleReasons;
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::{Device, Nvml};

/// NVML's names for the reasons that slow a busy GPU.
const SLOWDOWNS: [(ThrottleReasons, &str); 6] = [
    (ThrottleReasons::SW_POWER_CAP, "sw power cap"),
    (ThrottleReasons::HW_SLOWDOWN, "hw slowdown"),
    (ThrottleReasons::SYNC_BOOST, "sync boost"),
    (ThrottleReasons::SW_THERMAL_SLOWDOWN, "sw thermal slowdown"),
    (ThrottleReasons::HW_THERMAL_SLOWDOWN, "hw thermal slowdown"),
    (ThrottleReasons::HW_POWER_BRAKE_SLOWDOWN, "hw power brake slowdown"),
];

/// A measured window in progress.
pub struct Window {
    host: conditions::HostWindow,
    gpu: Option<GpuWindow>,
}

impl Window {
    pub fn start(device: tch::Device) -> Window {
        let gpu = match device {
            tch::Device::Cuda(i) => GpuWindow::start(i),
            _ => None,
        };
        Window { host: conditions::HostWindow::start(), gpu }
    }

    /// The window's conditions, judged, with the intra-op threads it ran.
    pub fn finish(self) -> Conditions {
        let threads = tch::get_num_threads().max(1) as usize;
        self.host.finish(threads).with_gpu(self.gpu.and_then(GpuWindow::finish))
    }
}

/// A window in progress on one GPU: NVML and the sample at its start.
pub struct GpuWindow {
    nvml: Nvml,
    device: Selector,
    start: Sample,
}

/// How to find the device again (an NVML `Device` borrows its `Nvml`).
#[derive(Clone)]
enum Selector {
    Index(u32),
    Uuid(String),
}

#[derive(Default)]
struct Sample {
    sm_clock: Option<u32>,
    temperature: Option<u32>,
    slowdowns: Vec<&'static str>,
    processes: Vec<GpuProcess>,
}

impl GpuWindow {
    /// Starts the window on CUDA device `cuda_index`; `None` when NVML or
    /// the device cannot be read (never an error: conditions are optional).
    pub fn start(cuda_index: usize) -> Option<GpuWindow> {
        let nvml = Nvml::init().ok()?;
        let device = selector(cuda_index, std::env::var("CUDA_VISIBLE_DEVICES").ok().as_deref());
        let start = sample(&open(&nvml, &device)?);
        Some(GpuWindow { nvml, device, start })
    }

    /// The conditions of the window from its start to now.
    pub fn finish(self) -> Option<GpuConditions> {
        let d = open(&self.nvml, &self.device)?;
        let end = sample(&d);
        let mut slowdowns: Vec<String> = Vec::new();
        for s in self.start.slowdowns.iter().chain(&end.slowdowns) {
            if !slowdowns.iter().any(|x| x == s) {
                slowdowns.push(s.to_string());
            }
        }
        let mut others: Vec<GpuProcess> = Vec::new();
        for p in
            others_than_us(self.start.processes).into_iter().chain(others_than_us(end.processes))
        {
            if !others.iter().any(|o| o.pid == p.pid) {
                others.push(p);
            }
        }
        Some(GpuConditions {
            index: d.index().unwrap_or(0),
            name: d.name().ok(),
            sm_clock_mhz_start: self.start.sm_clock,
            sm_clock_mhz_end: end.sm_clock,
            sm_clock_mhz_max: d.max_clock_info(Clock::SM).ok(),
            temperature_c_start: self.start.temperature,
            temperature_c_end: end.temperature,
            slowdowns,
            other_processes: others,
        })
    }
}

/// CUDA numbers the devices it is allowed to see; NVML numbers all of them
/// (in PCI order, which is CUDA's too on machines of one GPU model or with
/// CUDA_DEVICE_ORDER=PCI_BUS_ID).
fn selector(cuda_index: usize, visible: Option<&str>) -> Selector {
    let entry =
        visible.and_then(|v| v.split(',').map(str::trim).nth(cuda_index)).filter(|e| !e.is_empty());
    match entry {
        Some(e) => match e.parse() {
            Ok(i) => Selector::Index(i),
            Err(_) => Selector::Uuid(e.to_string()),
        },
        None => Selector::Index(cuda_index as u32),
    }
}

fn open<'n>(nvml: &'n Nvml, s: &Selector) -> Option<Device<'n>> {
    match s {
        Selector::Index(i) => nvml.device_by_index(*i).ok(),
        Selector::Uuid(u) => nvml.device_by_uuid(u.as_str()).ok(),
    }
}

fn sample(d: &Device) -> Sample {
    let reasons = d.current_throttle_reasons().unwrap_or(ThrottleReasons::NONE);
    Sample {
        sm_clock: d.clock_info(Clock::SM).ok(),
        temperature: d.temperature(TemperatureSensor::Gpu).ok(),
        slowdowns: SLOWDOWNS
            .iter()
            .filter(|(r, _)| reasons.contains(*r))
            .map(|(_, name)| *name)
            .collect(),
        processes: d
            .running_compute_processes()
            .unwrap_or_default()
            .into_iter()
            .map(|p| GpuProcess {
                pid: p.pid,
                used_mib: match p.used_gpu_memory {
                    UsedGpuMemory::Used(b) => Some(b >> 20),
                    UsedGpuMemory::Unavailable => None,
                },
            })
            .collect(),
    }
}

/// The listed processes less ours. NVML reports host PIDs; inside a
/// container our PID differs, and then the process holding the most
/// memory is taken to be us (the capture holds the model and its
/// activations), so a lone capture never counts itself as another.
fn others_than_us(mut listed: Vec<GpuProcess>) -> Vec<GpuProcess> {
    let own = std::process::id();
    if let Some(k) = listed.iter().position(|p| p.pid == own) {
        listed.remove(k);
    } else if let Some(k) = (0..listed.len()).max_by_key(|k| listed[*k].used_mib.unwrap_or(0)) {
        listed.remove(k);
    }
    listed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visible_devices_map_cuda_numbers_to_nvml_ones() {
        assert!(matches!(selector(1, None), Selector::Index(1)));
        assert!(matches!(selector(1, Some("3,5")), Selector::Index(5)));
        assert!(
            matches!(selector(0, Some("GPU-8f2a, 2")), Selector::Uuid(ref u) if u == "GPU-8f2a")
        );
        assert!(
            matches!(selector(2, Some("3")), Selector::Index(2)),
            "out of the list: as CUDA numbers it"
        );
    }

    #[test]
    fn we_are_not_another_process_inside_a_container_either() {
        let p = |pid, mib| GpuProcess { pid, used_mib: Some(mib) };
        let own = std::process::id();
        assert_eq!(others_than_us(vec![p(own, 10), p(1, 20_000)]), vec![p(1, 20_000)]);
        // Our PID unseen (host namespace): the biggest is us.
        assert_eq!(
            others_than_us(vec![p(u32::MAX, 9_000), p(u32::MAX - 1, 500)]),
            vec![p(u32::MAX - 1, 500)]
        );
        assert_eq!(others_than_us(vec![]), vec![]);
    }

    #[test]
    fn no_driver_means_no_gpu_conditions() {
        // This machine may or may not have NVML; either way no panic, and
        // without a driver nothing is recorded.
        if Nvml::init().is_err() {
            assert!(GpuWindow::start(0).is_none());
        }
    }
}
