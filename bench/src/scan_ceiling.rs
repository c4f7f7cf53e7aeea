//! The machine's own ceiling for finding a JSON trace's events: reads a
//! file in 1 MiB chunks and counts its `{` bytes with memchr (one or two
//! per event: what a reader must at least do to find them), printing the
//! count so the work cannot be skipped. bench/real_shaped.sh sets the
//! readers beside it.
//!
//!   scan-ceiling FILE

use std::io::Read;
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!("usage: scan-ceiling FILE");
        return ExitCode::from(2);
    };
    let mut f = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("scan-ceiling: cannot open {}: {e}", path.to_string_lossy());
            return ExitCode::FAILURE;
        }
    };
    let mut buf = vec![0u8; 1 << 20];
    let mut marks = 0u64;
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => marks += memchr::memchr_iter(b'{', &buf[..n]).count() as u64,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                eprintln!("scan-ceiling: cannot read {}: {e}", path.to_string_lossy());
                return ExitCode::FAILURE;
            }
        }
    }
    println!("{marks}");
    ExitCode::SUCCESS
}
