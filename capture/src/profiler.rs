//! A safe wrapper over the Kineto profiler shim (`shim/profiler.cpp`).
//!
//! [`Session::start`] returns a guard: the profiler runs while it lives and is
//! stopped when it is dropped, so an error or a panic in the measured code
//! never leaves it started. Only one session exists at a time (the profiler is
//! process-wide). Ranges ([`Session::range`], [`Session::step`]) are guards as
//! well and close on drop; they are not `Send`, because a
//! `at::RecordFunction` must end on the thread that began it.
//!
//! Module scopes ([`scope`]) are ranges code opens without holding the
//! session: the model's forward names its layers with them. They record
//! only while a session started with [`Options::module_scopes`] runs; at
//! any other time opening one is a load of a flag and nothing more (no
//! allocation, no call into libtorch). Their names are static C strings,
//! never copied.
//!
//! Kineto writes a few lines straight to stderr while it starts and stops
//! (`USDT ... profiler_start`, and on a machine without a GPU
//! `gpuGetDeviceCount failed`). They are not errors: around those calls fd 2
//! is captured, the known lines are dropped and anything else is passed on.

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::io::{Read, Seek, Write};
use std::marker::PhantomData;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};

use libreyolo_core::{Error, Result};

unsafe extern "C" {
    fn lyp_profiler_start(
        cuda: c_int,
        all_threads: c_int,
        memory: c_int,
        err: *mut c_char,
        err_len: usize,
    ) -> c_int;
    fn lyp_profiler_stop(err: *mut c_char, err_len: usize) -> c_int;
    fn lyp_profiler_save(path: *const c_char, err: *mut c_char, err_len: usize) -> c_int;
    fn lyp_profiler_discard();
    fn lyp_range_begin(name: *const c_char) -> *mut c_void;
    fn lyp_scope_begin(static_name: *const c_char) -> *mut c_void;
    fn lyp_range_end(handle: *mut c_void);
    fn lyp_autocast(
        cuda: c_int,
        enabled: c_int,
        bf16: c_int,
        err: *mut c_char,
        err_len: usize,
    ) -> c_int;
    fn lyp_cuda_reset_peak(device: c_int, err: *mut c_char, err_len: usize) -> c_int;
    fn lyp_cuda_peak_allocated(
        device: c_int,
        bytes: *mut i64,
        err: *mut c_char,
        err_len: usize,
    ) -> c_int;
}

static STARTED: AtomicBool = AtomicBool::new(false);

/// Whether [`scope`] records: set while a session started with
/// [`Options::module_scopes`] runs.
static SCOPES: AtomicBool = AtomicBool::new(false);

/// What to record.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Record CUDA activities (kernels, memcpy, runtime calls) too, and the
    /// ops' input shapes (`record_shapes`, for the roofline account).
    pub cuda: bool,
    /// Record ops of every thread, not only the one that starts the session.
    pub all_threads: bool,
    /// Record allocator events (`[memory]`, PyTorch's `profile_memory`).
    pub memory: bool,
    /// Record the module scopes code opens with [`scope`] (the model's
    /// `backbone` / `model.N Class` ranges).
    pub module_scopes: bool,
}

/// A running profiler. Stops on drop; [`Session::finish`] stops and saves.
pub struct Session {
    stopped: bool,
    _not_send: PhantomData<*const ()>,
}

/// An open range; closes on drop.
pub struct Range<'a> {
    handle: *mut c_void,
    _session: PhantomData<&'a Session>,
}

impl Drop for Range<'_> {
    fn drop(&mut self) {
        // SAFETY: the handle came from lyp_range_begin on this thread (Range is !Send).
        unsafe { lyp_range_end(self.handle) }
    }
}

/// An open module scope ([`scope`]); closes on drop, on the thread that
/// opened it (not `Send`).
#[must_use = "the scope closes when it is dropped"]
pub struct Scope {
    handle: NonNull<c_void>,
    _not_send: PhantomData<*const ()>,
}

impl Drop for Scope {
    fn drop(&mut self) {
        // SAFETY: the handle came from lyp_scope_begin on this thread (Scope is !Send).
        unsafe { lyp_range_end(self.handle.as_ptr()) }
    }
}

/// Opens the module scope `name` (a user range, cat `user_annotation`)
/// when a session records module scopes, and on a thread the profiler
/// records; `None` otherwise, at the cost of one atomic load. The name must
/// be static: libtorch keeps a view of it, not a copy.
#[inline]
pub fn scope(name: &'static CStr) -> Option<Scope> {
    if !SCOPES.load(Ordering::Relaxed) {
        return None;
    }
    // SAFETY: a NUL-terminated string that outlives the range.
    let handle = NonNull::new(unsafe { lyp_scope_begin(name.as_ptr()) })?;
    Some(Scope { handle, _not_send: PhantomData })
}

/// A C++ shim call that failed: the exception's message, as libtorch wrote it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ShimError(pub String);

/// Runs a shim entry point with an error buffer; its message on failure.
pub(crate) fn call(
    f: impl FnOnce(*mut c_char, usize) -> c_int,
) -> std::result::Result<(), ShimError> {
    let mut buf = vec![0 as c_char; 1024];
    let rc = f(buf.as_mut_ptr(), buf.len());
    if rc == 0 {
        Ok(())
    } else {
        // SAFETY: the shim always NUL-terminates within the buffer.
        Err(ShimError(unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned()))
    }
}

impl Session {
    /// Starts the profiler. Fails when another session is running.
    pub fn start(opts: Options) -> Result<Session> {
        if STARTED.swap(true, Ordering::SeqCst) {
            return Err(Error::failed("the profiler is already running in this process"));
        }
        let res = quiet_stderr(|| {
            // SAFETY: plain C call; the error buffer outlives it.
            call(|e, n| unsafe {
                lyp_profiler_start(
                    opts.cuda as c_int,
                    opts.all_threads as c_int,
                    opts.memory as c_int,
                    e,
                    n,
                )
            })
        });
        if let Err(msg) = res {
            STARTED.store(false, Ordering::SeqCst);
            return Err(Error::failed(format!("cannot start the profiler: {msg}")));
        }
        SCOPES.store(opts.module_scopes, Ordering::SeqCst);
        Ok(Session { stopped: false, _not_send: PhantomData })
    }

    /// Opens a user range named `name` (cat `user_annotation`).
    pub fn range(&self, name: &str) -> Range<'_> {
        let c = CString::new(name.replace('\0', " ")).expect("no NUL left");
        // SAFETY: the shim copies the name.
        let handle = unsafe { lyp_range_begin(c.as_ptr()) };
        Range { handle, _session: PhantomData }
    }

    /// Opens the range of step `n`: `ProfilerStep#n`, as Python's
    /// `profiler.step()` records it.
    pub fn step(&self, n: u64) -> Range<'_> {
        self.range(&format!("ProfilerStep#{n}"))
    }

    /// Stops the profiler and writes the Chrome trace to `path`.
    pub fn finish(mut self, path: &Path) -> Result<()> {
        self.stop()?;
        let c = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| Error::failed("trace path holds a NUL byte"))?;
        // Kineto writes `<path>.tmp` and renames it onto `<path>` at the
        // end: a signal during the export, or a failed export, would leave
        // it behind (2–11 MB) unless it is noted and removed too.
        let kineto_tmp = kineto_temp(path);
        libreyolo_core::tempfiles::track(&kineto_tmp);
        let res = quiet_stderr(|| call(|e, n| unsafe { lyp_profiler_save(c.as_ptr(), e, n) }));
        let _ = std::fs::remove_file(&kineto_tmp);
        unsafe { lyp_profiler_discard() };
        res.map_err(|msg| {
            Error::failed(format!("cannot write the trace {}: {msg}", path.display()))
        })
    }

    /// Stops the profiler and writes the trace to a hidden temporary file in
    /// `dir` (created if needed), to be renamed into place once the profile
    /// beside it is written; dropped unless persisted.
    pub fn finish_in(self, dir: &Path) -> Result<tempfile::TempPath> {
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::failed(format!("cannot create {}: {e}", dir.display())).caused_by(e)
        })?;
        let tmp = tempfile::Builder::new()
            .prefix(".profile_trace.")
            .suffix(".json")
            .tempfile_in(dir)
            .map_err(|e| {
                Error::failed(format!("cannot write in {}: {e}", dir.display())).caused_by(e)
            })?
            .into_temp_path();
        libreyolo_core::tempfiles::track(&tmp);
        self.finish(&tmp)?;
        Ok(tmp)
    }

    /// Stops the profiler and drops what it recorded.
    pub fn discard(mut self) -> Result<()> {
        self.stop()
    }

    fn stop(&mut self) -> Result<()> {
        if self.stopped {
            return Ok(());
        }
        self.stopped = true;
        SCOPES.store(false, Ordering::SeqCst);
        let res = quiet_stderr(|| call(|e, n| unsafe { lyp_profiler_stop(e, n) }));
        STARTED.store(false, Ordering::SeqCst);
        res.map_err(|msg| Error::failed(format!("cannot stop the profiler: {msg}")))
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if !self.stopped {
            let _ = self.stop();
            unsafe { lyp_profiler_discard() };
        }
    }
}

/// The temporary file Kineto exports `path` through: `<path>.tmp`.
pub fn kineto_temp(path: &Path) -> std::path::PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".tmp");
    p.into()
}

/// Whether a profiler session is running in this process.
pub fn is_running() -> bool {
    STARTED.load(Ordering::SeqCst)
}

/// CUDA autocast on or off, with its dtype (`bf16` false = float16).
pub fn set_cuda_autocast(enabled: bool, bf16: bool) -> Result<()> {
    call(|e, n| unsafe { lyp_autocast(1, enabled as c_int, bf16 as c_int, e, n) })
        .map_err(|msg| Error::failed(format!("cannot set CUDA autocast: {msg}")))
}

/// CPU autocast (bfloat16) on or off: the AMP code path where there is no GPU.
pub fn set_cpu_autocast(enabled: bool) -> Result<()> {
    call(|e, n| unsafe { lyp_autocast(0, enabled as c_int, 1, e, n) })
        .map_err(|msg| Error::failed(format!("cannot set CPU autocast: {msg}")))
}

/// Resets the peak-memory statistics of CUDA device `device`.
pub fn cuda_reset_peak(device: usize) -> Result<()> {
    call(|e, n| unsafe { lyp_cuda_reset_peak(device as c_int, e, n) })
        .map_err(|msg| Error::failed(format!("cannot reset CUDA memory stats: {msg}")))
}

/// Peak bytes allocated on CUDA device `device` since the last reset
/// (`torch.cuda.max_memory_allocated`).
pub fn cuda_peak_allocated(device: usize) -> Result<i64> {
    let mut bytes = 0i64;
    call(|e, n| unsafe { lyp_cuda_peak_allocated(device as c_int, &mut bytes, e, n) })
        .map_err(|msg| Error::failed(format!("cannot read CUDA memory stats: {msg}")))?;
    Ok(bytes)
}

/// Starts a peak-VRAM window on `device` (nothing on the CPU).
pub fn reset_peak_vram(device: tch::Device) -> Result<()> {
    match device {
        tch::Device::Cuda(d) => cuda_reset_peak(d),
        _ => Ok(()),
    }
}

/// Peak CUDA memory allocated on `device` since [`reset_peak_vram`], MB
/// (after its queued work); `None` on the CPU.
pub fn peak_vram_mb(device: tch::Device) -> Result<Option<f64>> {
    match device {
        tch::Device::Cuda(d) => {
            crate::device::sync(device);
            Ok(Some(libreyolo_core::util::round(cuda_peak_allocated(d)? as f64 / 1e6, 1)))
        }
        _ => Ok(None),
    }
}

/// Lines Kineto prints that are not problems for us.
fn is_noise(line: &str) -> bool {
    const NOISE: &[&str] = &[
        "USDT",
        "gpuGetDeviceCount failed",
        "cudaGetDeviceCount",
        "CUPTI initialization failed",
        "Kineto: Profiler started",
        "Profiler is not initialized: skipping step",
        "activity_profiler",
    ];
    let l = line.trim();
    l.is_empty() || NOISE.iter().any(|n| l.contains(n))
}

/// Runs `f` with fd 2 captured; afterwards the captured lines that are not
/// Kineto noise are written to the real stderr. If capturing is not
/// possible, `f` simply runs with stderr untouched.
fn quiet_stderr<T>(f: impl FnOnce() -> T) -> T {
    if std::env::var_os("LIBREYOLO_KINETO_STDERR").is_some() {
        return f();
    }
    let Ok(mut file) = tempfile::tempfile() else { return f() };
    use std::os::fd::AsRawFd;
    let _ = std::io::stderr().flush();
    // SAFETY: dup/dup2 on valid descriptors; fd 2 is restored before returning.
    let saved = unsafe { libc::dup(2) };
    if saved < 0 {
        return f();
    }
    unsafe { libc::dup2(file.as_raw_fd(), 2) };
    let out = f();
    let _ = std::io::stderr().flush();
    unsafe {
        libc::fflush(std::ptr::null_mut());
        libc::dup2(saved, 2);
        libc::close(saved);
    }
    let mut text = String::new();
    if file.rewind().is_ok() && file.read_to_string(&mut text).is_ok() {
        let kept: Vec<&str> = text.lines().filter(|l| !is_noise(l)).collect();
        if !kept.is_empty() {
            crate::output::say(&kept.join("\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::is_noise;

    /// Without a session a scope is nothing at all: no call into libtorch.
    #[test]
    fn scopes_are_none_without_a_session() {
        if !super::is_running() {
            assert!(super::scope(c"model.0 Conv").is_none());
        }
    }

    #[test]
    fn kineto_exports_through_the_path_plus_tmp() {
        let p = std::path::Path::new("/d/.profile_trace.ab12.json");
        assert_eq!(super::kineto_temp(p), std::path::Path::new("/d/.profile_trace.ab12.json.tmp"));
    }

    #[test]
    fn kineto_noise_is_recognised() {
        assert!(is_noise("STAGE:2026-01-01 USDT profiler_start"));
        assert!(is_noise("[W kineto] gpuGetDeviceCount failed with code 35"));
        assert!(!is_noise("RuntimeError: something real"));
    }
}
