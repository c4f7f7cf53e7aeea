//! What the explorer's benchmarks share: one line of figures per measure.

use std::time::Duration;

/// Prints the median, p99 and maximum of `times` (sorted in place),
/// `width` columns given to the label.
pub fn report(label: &str, width: usize, times: &mut [Duration]) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let median = times[times.len() / 2];
    let p99 = times[((times.len() as f64 * 0.99) as usize).min(times.len() - 1)];
    println!(
        "{label:<width$} median {:>8.3} ms   p99 {:>8.3} ms   max {:>8.3} ms   (n={})",
        ms(median),
        ms(p99),
        ms(*times.last().unwrap()),
        times.len()
    );
}
