//! Each device's kernels in time order, sorted once for all that reads
//! them so: the busy union, the idle account and the collectives'
//! lead-ins (each sorted its own copy before: three sorts of every
//! kernel, ~13 ms each at 1 GB).

use rustc_hash::FxHashMap as HashMap;

use super::gpulog::{GpuLog, KernelSpan};

/// Per device (in id order), its kernels' indices in `kernel_spans`, by
/// (start, end, index).
pub(super) struct KernelIndex {
    devices: Vec<(i64, Vec<u32>)>,
}

impl KernelIndex {
    pub(super) fn of(gpu: &GpuLog) -> KernelIndex {
        let mut by_device: HashMap<i64, Vec<u32>> = HashMap::default();
        for (i, k) in gpu.kernel_spans.iter().enumerate() {
            by_device.entry(gpu.device(k)).or_default().push(i as u32);
        }
        let span = |i: u32| &gpu.kernel_spans[i as usize];
        let mut devices: Vec<(i64, Vec<u32>)> = by_device.into_iter().collect();
        for (_, ks) in &mut devices {
            ks.sort_unstable_by_key(|&i| (span(i).start, span(i).end, i));
        }
        devices.sort_unstable_by_key(|d| d.0);
        KernelIndex { devices }
    }

    /// Each device with its kernels' indices, in time order.
    pub(super) fn devices(&self) -> impl Iterator<Item = (i64, &[u32])> {
        self.devices.iter().map(|(d, ks)| (*d, ks.as_slice()))
    }

    /// `device`'s kernels' indices, in time order.
    pub(super) fn device(&self, device: i64) -> &[u32] {
        self.devices
            .binary_search_by_key(&device, |d| d.0)
            .map_or(&[][..], |at| self.devices[at].1.as_slice())
    }
}

/// A device's kernels by start: indices into the pass's spans (no list of
/// references copied out of them).
#[derive(Clone, Copy)]
pub(super) struct DeviceSpans<'a> {
    pub ks: &'a [u32],
    pub all: &'a [KernelSpan],
}

impl<'a> DeviceSpans<'a> {
    pub(super) fn iter(self, from: usize) -> impl Iterator<Item = &'a KernelSpan> + Clone {
        self.ks[from..].iter().map(move |&i| &self.all[i as usize])
    }
}
