//! `--device cpu` or a CUDA index, checked against what this libtorch sees.

use libreyolo_core::cli::DeviceArg;
use libreyolo_core::conditions;
use libreyolo_core::{Error, Result};
use tch::{Cuda, Device};

/// The device `--device` names, checked against what this libtorch sees.
/// Asking for CUDA where there is none is a usage error (exit 2) that
/// points at `--device cpu`: the default is `0`, so this is the first thing
/// a CPU user meets.
pub fn parse(arg: DeviceArg) -> Result<Device> {
    let index = match arg {
        DeviceArg::Cpu => return Ok(Device::Cpu),
        DeviceArg::Cuda(index) => index,
    };
    if !Cuda::is_available() {
        return Err(Error::usage(format!(
            "--device {arg}: no CUDA device is available to this libtorch ({}); run on the CPU with --device cpu",
            if cfg!(target_os = "linux") {
                "no driver or no GPU found"
            } else {
                "CUDA is not supported here"
            }
        )));
    }
    let count = Cuda::device_count() as usize;
    if index >= count {
        return Err(Error::usage(format!(
            "--device {arg}: only {count} CUDA device{} visible (0..{}); pick one of them or --device cpu",
            if count == 1 { " is" } else { "s are" },
            count - 1
        )));
    }
    Ok(Device::Cuda(index))
}

/// The most intra-op threads `--threads` accepts.
const MAX_THREADS: usize = libreyolo_core::cli::limits::MAX_THREADS;

/// Sets libtorch's intra-op threads: `--threads N`, else the CPUs we can
/// have: those this process may run on (affinity and cgroup quota
/// respected), less the cores other processes keep busy right now
/// (`conditions::threads_we_can_have`, which says why), with a note when
/// that is fewer.
pub fn set_threads(arg: Option<usize>) -> Result<usize> {
    let n = match arg {
        Some(n) if !(1..=MAX_THREADS).contains(&n) => {
            return Err(Error::usage(format!("--threads {n}: expected 1 to {MAX_THREADS}")));
        }
        Some(n) => n,
        None => {
            let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
            let busy =
                conditions::busy_cores_now(std::time::Duration::from_millis(200)).unwrap_or(0.0);
            let n = conditions::threads_we_can_have(cpus, busy);
            if n < cpus {
                crate::output::say(&format!(
                    "note: other processes keep {busy:.1} of {cpus} cores busy; measuring with {n} thread{} so none waits on them (--threads {cpus} to use all)",
                    if n == 1 { "" } else { "s" }
                ));
            }
            n
        }
    };
    tch::set_num_threads(n as i32);
    Ok(n)
}

/// The name written into the profile: `cpu` or `cuda:N`.
pub fn name(d: Device) -> String {
    match d {
        Device::Cuda(i) => format!("cuda:{i}"),
        _ => "cpu".to_string(),
    }
}

/// Waits for the device's queued work (no-op on CPU).
pub fn sync(d: Device) {
    if let Device::Cuda(i) = d {
        Cuda::synchronize(i as i64);
    }
}
