//! The checkpoint reader (zip, pickle, tensor layouts) fed mutated bytes of
//! a real `torch.save` checkpoint: whatever the bytes, it returns a
//! checkpoint or an error, never a panic.

mod common;

use std::io::{Read, Write};
use std::sync::OnceLock;

use libreyolo_capture::{checkpoint, pickle};
use proptest::prelude::*;

const MAKE: &str = r#"
import sys, collections, torch
torch.manual_seed(0)
base = torch.randn(4, 6)
sd = collections.OrderedDict()
sd["a.weight"] = torch.nn.Parameter(torch.randn(4, 3, 3, 3))
sd["a.t"] = base.t()
sd["a.slice"] = base[1:3, 2:]
sd["a.half"] = torch.randn(5).half()
sd["a.n"] = torch.tensor(7)
torch.save({"model": sd, "nc": 3, "names": {0: "a", 1: "b", 2: "c"}, "size": "t"}, sys.argv[1])
"#;

/// The real checkpoint's entries, in order: (name, bytes).
fn seed() -> &'static Vec<(String, Vec<u8>)> {
    static SEED: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();
    SEED.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seed.pt");
        common::run_python(&common::torch_python(), MAKE, &[path.to_str().unwrap()]);
        let mut z = zip::ZipArchive::new(std::fs::File::open(&path).unwrap()).unwrap();
        let mut out = Vec::new();
        for i in 0..z.len() {
            let mut f = z.by_index(i).unwrap();
            let mut b = Vec::new();
            f.read_to_end(&mut b).unwrap();
            out.push((f.name().to_string(), b));
        }
        assert!(checkpoint::load(&path).is_ok(), "the seed loads");
        out
    })
}

/// A zip of `entries`, stored.
fn zip_of(entries: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, bytes) in entries {
        z.start_file(name.as_str(), opts).unwrap();
        z.write_all(bytes).unwrap();
    }
    z.finish().unwrap().into_inner()
}

/// `bytes` with each `(position, value)` written (positions modulo the
/// length), then cut to `keep` of its length when given.
fn mutate(bytes: &[u8], edits: &[(usize, u8)], keep: Option<f64>) -> Vec<u8> {
    let mut b = bytes.to_vec();
    for &(at, v) in edits {
        if !b.is_empty() {
            let n = b.len();
            b[at % n] = v;
        }
    }
    if let Some(k) = keep {
        b.truncate((b.len() as f64 * k) as usize);
    }
    b
}

/// Loads `bytes` as a checkpoint file: any result but a panic is fine.
fn load(bytes: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.pt");
    std::fs::write(&path, bytes).unwrap();
    if let Err(e) = checkpoint::load(&path) {
        let msg = e.to_string();
        assert!(!msg.is_empty() && !msg.contains('\n'), "one line: {msg:?}");
    }
}

/// Pickle bytes that matter: opcodes the reader knows and small integers.
fn byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        any::<u8>(),
        prop::sample::select(
            b"()]}tlduseapqhjgrbRQK\x85\x86\x87\x88\x89\x8a\x8c\x94\x80\x93.0124Nc".to_vec()
        ),
        Just(0u8),
        Just(0xffu8),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn a_mutated_pickle_never_panics_the_reader(
        edits in prop::collection::vec((any::<usize>(), byte()), 1..6),
        keep in prop::option::of(0.0f64..1.0),
    ) {
        let mut entries = seed().clone();
        let pkl = entries.iter_mut().find(|(n, _)| n.ends_with("data.pkl")).unwrap();
        pkl.1 = mutate(&pkl.1, &edits, keep);
        let _ = pickle::parse(&pkl.1);
        load(&zip_of(&entries));
    }

    #[test]
    fn mutated_storages_never_panic_the_reader(
        which in any::<usize>(),
        keep in 0.0f64..1.5,
    ) {
        let mut entries = seed().clone();
        let storages: Vec<usize> = (0..entries.len()).filter(|&i| entries[i].0.contains("/data/")).collect();
        let i = storages[which % storages.len()];
        let b = &mut entries[i].1;
        let n = (b.len() as f64 * keep) as usize;
        b.resize(n, 0x7f);
        load(&zip_of(&entries));
    }

    #[test]
    fn a_mutated_zip_never_panics_the_reader(
        edits in prop::collection::vec((any::<usize>(), any::<u8>()), 1..8),
        keep in prop::option::of(0.5f64..1.0),
    ) {
        load(&mutate(&zip_of(seed()), &edits, keep));
    }
}

/// Integers a hostile layout would use: small, edge and huge.
fn dim() -> impl Strategy<Value = i64> {
    prop_oneof![
        0i64..6,
        Just(-1i64),
        Just(i64::MAX),
        Just(i64::MIN),
        Just(1 << 31),
        Just(1 << 40),
        any::<i64>()
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn any_tensor_layout_is_loaded_in_bounds_or_refused(
        size in prop::collection::vec(dim(), 0..5),
        stride in prop::collection::vec(dim(), 0..5),
        offset in dim(),
        floats in 0usize..40,
        numel_lies in any::<bool>(),
    ) {
        use common::hostile::{Pickle, write_checkpoint};
        let numel = if numel_lies { floats as i64 + 1 } else { floats as i64 };
        let pkl = Pickle::state_dict(|p| {
            p.str("w").tensor("0", numel, offset, &size, &stride);
        });
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.pt");
        let storage: Vec<u8> = (0..floats * 4).map(|i| i as u8).collect();
        write_checkpoint(&path, &pkl, &[("0", &storage)]);
        match checkpoint::load(&path) {
            Ok(ck) => {
                prop_assert!(!numel_lies);
                let t = ck.tensor("w").unwrap();
                prop_assert_eq!(t.size(), size.clone());
                let want: i64 = size.iter().product();
                prop_assert_eq!(t.numel() as i64, want);
            }
            Err(e) => prop_assert!(!e.to_string().contains('\n')),
        }
    }
}
