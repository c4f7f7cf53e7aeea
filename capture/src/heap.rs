//! A training capture keeps the memory it frees. glibc hands large blocks
//! back to the kernel (`munmap`, heap trimming) as soon as they are free, so
//! every training step faults its activations and gradients in again, page
//! by page, inside the ops that first write them. PyTorch's CPU tuning guide
//! answers this with an allocator that reuses memory; a short-lived capture
//! process can simply tell glibc to keep what it has.
//!
//! Measured (BENCHMARKS.md, "The heap a training capture keeps"): the
//! forward of a conv-BN-SiLU stack trained in a Rust process ran 14 %
//! slower than the same graph in Python on the same libtorch (median of
//! nine pairs), 2 % once the heap was kept; `profile run` faults ~1 M fewer
//! pages and runs 4–6 % faster on one core, for 8–15 % more peak RSS.
//! Inference gained nothing measurable, so `profile infer` keeps glibc's
//! defaults.

/// Serves every allocation from the heap (no `mmap` per large block) and
/// trims it only past 2 GiB free; blocks allocated before keep their own
/// way. Not -1 ("never"): glibc adds to the threshold when it decides
/// whether a thread arena's spare heap goes, and -1 wraps round to "always".
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets glibc's tunables; no allocation is in flight.
    unsafe {
        libc::mallopt(libc::M_MMAP_MAX, 0);
        libc::mallopt(libc::M_TRIM_THRESHOLD, libc::c_int::MAX);
    }
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::*;

    /// Minor page faults of the calling thread so far.
    fn minor_faults() -> i64 {
        // SAFETY: getrusage fills the struct it is given.
        unsafe {
            let mut u: libc::rusage = std::mem::zeroed();
            libc::getrusage(libc::RUSAGE_THREAD, &mut u);
            u.ru_minflt
        }
    }

    /// Faults taken to allocate, fill and free `n` bytes.
    fn faults_to_fill(n: usize) -> i64 {
        let before = minor_faults();
        let block = std::hint::black_box(vec![1u8; n]);
        drop(block);
        minor_faults() - before
    }

    #[test]
    fn a_freed_block_stays_mapped_for_the_next_one() {
        keep_freed_memory();
        // Above glibc's largest mmap threshold (32 MiB): by default each
        // such block is a fresh mapping that faults every page again.
        let n = 48 << 20;
        let first = faults_to_fill(n);
        let second = faults_to_fill(n);
        assert!(first > (n / 4096 / 2) as i64, "the first fill faults its pages in: {first}");
        assert!(second < first / 10, "the second fill reuses them: {second} faults after {first}");
    }
}
