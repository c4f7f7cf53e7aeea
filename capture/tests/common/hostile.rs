//! Hostile inputs made in the test itself (checkpoints, pickles) and the
//! capture binary run on them with its peak memory measured.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};

/// A pickle being written by hand, protocol 2, opcode by opcode.
#[derive(Default)]
pub struct Pickle(pub Vec<u8>);

impl Pickle {
    pub fn new() -> Pickle {
        Pickle(vec![0x80, 2])
    }
    pub fn op(&mut self, bytes: &[u8]) -> &mut Self {
        self.0.extend_from_slice(bytes);
        self
    }
    /// `LONG1` with 8 bytes: any i64.
    pub fn int(&mut self, v: i64) -> &mut Self {
        self.op(&[0x8a, 8]).op(&v.to_le_bytes())
    }
    /// `BINUNICODE`.
    pub fn str(&mut self, s: &str) -> &mut Self {
        self.op(b"X").op(&(s.len() as u32).to_le_bytes()).op(s.as_bytes())
    }
    pub fn global(&mut self, module: &str, name: &str) -> &mut Self {
        self.op(b"c").op(module.as_bytes()).op(b"\n").op(name.as_bytes()).op(b"\n")
    }
    pub fn ints(&mut self, v: &[i64]) -> &mut Self {
        self.op(b"(");
        for x in v {
            self.int(*x);
        }
        self.op(b"t")
    }
    /// `_rebuild_tensor_v2(storage key, offset, size, stride)` of a float
    /// storage of `numel` elements, as torch.save writes it.
    pub fn tensor(
        &mut self,
        key: &str,
        numel: i64,
        offset: i64,
        size: &[i64],
        stride: &[i64],
    ) -> &mut Self {
        self.global("torch._utils", "_rebuild_tensor_v2").op(b"(");
        self.op(b"(")
            .str("storage")
            .global("torch", "FloatStorage")
            .str(key)
            .str("cpu")
            .int(numel)
            .op(b"tQ");
        self.int(offset).ints(size).ints(stride).op(&[0x89]);
        self.global("collections", "OrderedDict").op(b")R").op(b"tR")
    }
    /// A bare state dict: `(name, tensor)` pairs written by `f`.
    pub fn state_dict(f: impl FnOnce(&mut Pickle)) -> Vec<u8> {
        let mut p = Pickle::new();
        p.global("collections", "OrderedDict").op(b")R");
        p.op(b"(");
        f(&mut p);
        p.op(b"u.");
        p.0
    }
}

/// Writes a torch.save-style zip: `archive/data.pkl` and `archive/data/<key>`.
pub fn write_checkpoint(path: &Path, pkl: &[u8], storages: &[(&str, &[u8])]) {
    let f = std::fs::File::create(path).unwrap();
    let mut z = zip::ZipWriter::new(f);
    let opts =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    z.start_file("archive/data.pkl", opts).unwrap();
    z.write_all(pkl).unwrap();
    for (key, bytes) in storages {
        z.start_file(format!("archive/data/{key}"), opts).unwrap();
        z.write_all(bytes).unwrap();
    }
    z.finish().unwrap();
}

/// What a run of the binary gave: exit code, stderr, peak RSS in MiB.
pub struct Ran {
    pub code: Option<i32>,
    pub stderr: String,
    pub peak_mib: u64,
}

/// Runs `libreyolo-capture` with `args` and measures its peak resident
/// memory (`wait4`'s `ru_maxrss`, this child's alone). The child is reaped
/// by that `wait4`, which clippy cannot see.
#[allow(clippy::zombie_processes)]
pub fn run_capture(args: &[&str]) -> Ran {
    let mut child = Command::new(env!("CARGO_BIN_EXE_libreyolo-capture"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as libc::pid_t, "wait4");
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    Ran { code, stderr, peak_mib: usage.ru_maxrss as u64 / 1024 }
}

/// Every file under `dir`, recursively.
pub fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}
