//! The recorded arguments of one op call (`Input Dims`, `Input type`,
//! `Concrete Inputs`), parsed without allocating: each argument as a
//! tensor, a tensor list or a concrete value, for the formulas to read.

use super::{Dtype, OpShapes};
use crate::trace::lex::{skip_ws, string_end};

impl Dtype {
    /// The dtype an `Input type` string names; `None` for the ones the
    /// model has no size for (complex, unsigned 16–64-bit) and non-tensors.
    fn from_type_name(name: &[u8]) -> Option<Dtype> {
        Some(match name {
            b"float" => Dtype::F32,
            b"double" => Dtype::F64,
            b"c10::Half" => Dtype::F16,
            b"c10::BFloat16" => Dtype::Bf16,
            b"c10::Float8_e4m3fn"
            | b"c10::Float8_e5m2"
            | b"c10::Float8_e4m3fnuz"
            | b"c10::Float8_e5m2fnuz"
            | b"c10::Float8_e8m0fnu" => Dtype::Fp8,
            b"signed char" => Dtype::Int8,
            b"unsigned char" => Dtype::Uint8,
            b"short" | b"short int" => Dtype::Int16,
            b"int" => Dtype::Int32,
            // `long int` on Linux (glibc's int64_t), `long` in some builds.
            b"long" | b"long int" | b"long long" | b"long long int" => Dtype::Int64,
            b"bool" => Dtype::Bool,
            _ => return None,
        })
    }

    /// The dtype of a `c10::ScalarType` code, the number `Concrete Inputs`
    /// records for a `dtype=` argument (`"15"` is bfloat16).
    fn from_scalar_type(code: i64) -> Option<Dtype> {
        Some(match code {
            0 => Dtype::Uint8,
            1 => Dtype::Int8,
            2 => Dtype::Int16,
            3 => Dtype::Int32,
            4 => Dtype::Int64,
            5 => Dtype::F16,
            6 => Dtype::F32,
            7 => Dtype::F64,
            11 => Dtype::Bool,
            15 => Dtype::Bf16,
            23..=26 | 44 => Dtype::Fp8,
            _ => return None,
        })
    }
}

/// Most arguments an op records (`_efficient_attention_backward` has 20).
const MAX_ARGS: usize = 32;
/// Most dimensions of one tensor (PyTorch's CUDA kernels take 25; real
/// tensors stay well under this).
pub(super) const MAX_RANK: usize = 12;
/// Dimensions of all an op's tensors together.
const MAX_DIMS: usize = 128;
/// A tensor or list of more elements is taken for a misread trace (2^40
/// elements are 2 TB of bf16).
const MAX_ELEMENTS: u64 = 1 << 40;

/// One `Input Dims` entry.
#[derive(Debug, Clone, Copy, Default)]
enum Entry {
    /// `[]`: a scalar, a 0-dim tensor, `None`, or a list not recorded.
    #[default]
    Empty,
    /// `[d0, d1, …]`: dimensions in `Args::dims[start..start + rank]`.
    Shape { start: u16, rank: u8 },
    /// `[[…], […]]`: a tensor list, summarised.
    List { count: u32, numel: f64 },
}

/// One `Input type` entry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Ty {
    /// `""`: `None`, an argument the profiler does not describe, or (in
    /// 2021–22 traces) a tensor whose type was not written.
    #[default]
    Blank,
    Dtype(Dtype),
    /// `TensorList`, `GenericList`: no element type is recorded.
    List,
    /// `Scalar`, `ScalarList`, `Int`, `Bool`, …
    NotTensor,
    /// A dtype the model has no size for (`c10::complex<float>`).
    Other,
}

impl Ty {
    fn of(name: &[u8]) -> Ty {
        match name {
            b"" => Ty::Blank,
            b"TensorList" | b"GenericList" => Ty::List,
            b"Scalar" | b"ScalarList" | b"Int" | b"Bool" | b"Double" | b"String" | b"Device"
            | b"Layout" | b"ScalarType" | b"MemoryFormat" | b"Generator" | b"Stream" | b"None"
            | b"IntList" | b"DoubleList" | b"BoolList" => Ty::NotTensor,
            _ => Dtype::from_type_name(name).map_or(Ty::Other, Ty::Dtype),
        }
    }
}

/// A tensor argument: its dimensions and, where recorded, its dtype.
#[derive(Debug, Clone, Copy)]
pub(super) struct Tensor<'p> {
    pub(super) dims: &'p [u64],
    pub(super) dtype: Option<Dtype>,
}

impl Tensor<'_> {
    pub(super) fn rank(&self) -> usize {
        self.dims.len()
    }

    pub(super) fn numel(&self) -> f64 {
        self.dims.iter().map(|&d| d as f64).product()
    }

    /// Dimension `i` as a float, for the formulas.
    pub(super) fn dim(&self, i: usize) -> f64 {
        self.dims.get(i).map_or(0.0, |&d| d as f64)
    }

    /// Bytes at its own dtype, or `fallback` where none was recorded.
    pub(super) fn bytes_or(&self, fallback: Option<Dtype>) -> Option<f64> {
        Some(self.numel() * f64::from(self.dtype.or(fallback)?.size()))
    }

    /// Bytes at its own dtype, which must be known.
    pub(super) fn bytes(&self) -> Option<f64> {
        self.bytes_or(None)
    }
}

/// The three shape arguments of one call, parsed without allocating.
pub(super) struct Args<'a> {
    entries: [Entry; MAX_ARGS],
    pub(super) n_entries: usize,
    dims: [u64; MAX_DIMS],
    n_dims: usize,
    types: [Ty; MAX_ARGS],
    concrete: Option<&'a [u8]>,
    spans: [(usize, usize); MAX_ARGS],
    n_spans: usize,
}

impl<'a> Args<'a> {
    pub(super) fn parse(shapes: &OpShapes<'a>) -> Option<Args<'a>> {
        let mut args = Args {
            entries: [Entry::Empty; MAX_ARGS],
            n_entries: 0,
            dims: [0; MAX_DIMS],
            n_dims: 0,
            types: [Ty::Blank; MAX_ARGS],
            concrete: None,
            spans: [(0, 0); MAX_ARGS],
            n_spans: 0,
        };
        args.parse_dims(shapes.dims?)?;
        if let Some(types) = shapes.types {
            let mut spans = [(0, 0); MAX_ARGS];
            let n = parse_strings(types, &mut spans)?;
            for (ty, &(a, b)) in args.types.iter_mut().zip(&spans[..n]) {
                *ty = Ty::of(&types[a..b]);
            }
        }
        if let Some(concrete) = shapes.concrete {
            args.n_spans = parse_strings(concrete, &mut args.spans)?;
            args.concrete = Some(concrete);
        }
        Some(args)
    }

    fn parse_dims(&mut self, text: &[u8]) -> Option<()> {
        let mut c = Cursor { s: text, i: 0 };
        c.eat(b'[')?;
        if c.peek()? == b']' {
            c.i += 1;
            return c.at_end().then_some(());
        }
        loop {
            if self.n_entries == MAX_ARGS {
                return None;
            }
            let entry = self.parse_entry(&mut c)?;
            self.entries[self.n_entries] = entry;
            self.n_entries += 1;
            match c.bump()? {
                b',' => {}
                b']' => break,
                _ => return None,
            }
        }
        c.at_end().then_some(())
    }

    fn parse_entry(&mut self, c: &mut Cursor<'_>) -> Option<Entry> {
        c.eat(b'[')?;
        match c.peek()? {
            b']' => {
                c.i += 1;
                Some(Entry::Empty)
            }
            b'[' => {
                let (mut count, mut numel) = (0u32, 0f64);
                loop {
                    numel += shape_numel(c)? as f64;
                    count = count.checked_add(1)?;
                    match c.bump()? {
                        b',' => {}
                        b']' => break,
                        _ => return None,
                    }
                }
                (numel <= MAX_ELEMENTS as f64).then_some(Entry::List { count, numel })
            }
            _ => {
                let start = self.n_dims;
                let mut numel = 1u64;
                loop {
                    let d = c.uint()?;
                    if self.n_dims == MAX_DIMS || self.n_dims - start == MAX_RANK {
                        return None;
                    }
                    self.dims[self.n_dims] = d;
                    self.n_dims += 1;
                    numel = numel.saturating_mul(d);
                    match c.bump()? {
                        b',' => {}
                        b']' => break,
                        _ => return None,
                    }
                }
                // Both fit: `start` < `MAX_DIMS`, `rank` ≤ `MAX_RANK`.
                let rank = u8::try_from(self.n_dims - start).ok()?;
                let start = u16::try_from(start).ok()?;
                (numel <= MAX_ELEMENTS).then_some(Entry::Shape { start, rank })
            }
        }
    }

    /// Argument `i` as a tensor: a known dtype with any dims (`[]` is a
    /// 0-dim tensor), or dims without a known dtype (an old trace's blank
    /// type). Scalars, `None` and lists are not tensors.
    pub(super) fn tensor(&self, i: usize) -> Option<Tensor<'_>> {
        if i >= self.n_entries {
            return None;
        }
        let dims = match self.entries[i] {
            Entry::Empty => &[][..],
            Entry::Shape { start, rank } => {
                &self.dims[start as usize..start as usize + rank as usize]
            }
            Entry::List { .. } => return None,
        };
        match self.types[i] {
            Ty::Dtype(d) => Some(Tensor { dims, dtype: Some(d) }),
            Ty::Blank | Ty::Other if !dims.is_empty() => Some(Tensor { dims, dtype: None }),
            _ => None,
        }
    }

    /// Every tensor argument.
    fn tensors(&self) -> impl Iterator<Item = Tensor<'_>> + '_ {
        (0..self.n_entries).filter_map(|i| self.tensor(i))
    }

    /// Argument `i` as a recorded tensor list: (tensors, elements).
    pub(super) fn list(&self, i: usize) -> Option<(u32, f64)> {
        match self.entries.get(i)? {
            Entry::List { count, numel } if i < self.n_entries => Some((*count, *numel)),
            _ => None,
        }
    }

    /// The op's dtype: that of its first tensor with a known dtype.
    pub(super) fn dtype(&self) -> Option<Dtype> {
        self.tensors().find_map(|t| t.dtype)
    }

    /// Bytes of every tensor argument, each once. Memory-bound ops need
    /// each dtype (`fallback: None`); matrix ops take the op's for a tensor
    /// whose type was not written.
    pub(super) fn all_tensor_bytes(&self, fallback: Option<Dtype>) -> Option<f64> {
        self.tensors().map(|t| t.bytes_or(fallback)).sum()
    }

    /// True when `Concrete Inputs` holds an entry for argument `i` (it may
    /// be empty: a tensor, or `None`).
    pub(super) fn recorded(&self, i: usize) -> bool {
        self.concrete.is_some() && i < self.n_spans
    }

    /// The non-empty `Concrete Inputs` text of argument `i`.
    pub(super) fn conc(&self, i: usize) -> Option<&'a [u8]> {
        let text = self.concrete?;
        if i >= self.n_spans {
            return None;
        }
        let (a, b) = self.spans[i];
        let s = text[a..b].trim_ascii();
        (!s.is_empty()).then_some(s)
    }

    pub(super) fn conc_int(&self, i: usize) -> Option<i64> {
        parse_int(self.conc(i)?)
    }

    pub(super) fn conc_bool(&self, i: usize) -> Option<bool> {
        parse_bool(self.conc(i)?)
    }

    /// An int list (`"[2, 2]"`) or a single int (`"2"`), into `out`.
    pub(super) fn conc_ints(&self, i: usize, out: &mut [i64; MAX_RANK]) -> Option<usize> {
        let mut n = 0;
        for part in list_items(self.conc(i)?)? {
            *out.get_mut(n)? = parse_int(part)?;
            n += 1;
        }
        Some(n)
    }

    /// A bool list (`"[True, True, False]"`), into `out`.
    pub(super) fn conc_bools(&self, i: usize, out: &mut [bool; 4]) -> Option<usize> {
        let mut n = 0;
        for part in list_items(self.conc(i)?)? {
            *out.get_mut(n)? = parse_bool(part)?;
            n += 1;
        }
        Some(n)
    }

    /// A per-spatial-dimension int list (stride, padding, dilation) for `n`
    /// spatial dimensions; one value stands for all.
    pub(super) fn spatial(&self, i: usize, n: usize) -> Option<[i64; 3]> {
        let mut vals = [0i64; MAX_RANK];
        let len = self.conc_ints(i, &mut vals)?;
        let mut out = [0i64; 3];
        for (d, o) in out.iter_mut().enumerate().take(n) {
            *o = match len {
                1 => vals[0],
                _ if len == n => vals[d],
                _ => return None,
            };
            if *o < 0 {
                return None;
            }
        }
        Some(out)
    }

    /// A `ScalarType? dtype` argument: `Some(None)` when not given (the op
    /// keeps its input's dtype), `None` when given but not recorded or of a
    /// dtype the model does not size.
    pub(super) fn dtype_arg(&self, i: usize) -> Option<Option<Dtype>> {
        if i >= self.n_entries {
            return Some(None);
        }
        if let Some(code) = self.conc(i) {
            return Dtype::from_scalar_type(parse_int(code)?).map(Some);
        }
        (self.recorded(i) || self.types[i] == Ty::Blank).then_some(None)
    }
}

/// A byte cursor over JSON text.
struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn skip_ws(&mut self) {
        self.i = skip_ws(self.s, self.i);
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.i).copied()
    }

    fn bump(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        Some(c)
    }

    fn eat(&mut self, want: u8) -> Option<()> {
        (self.bump()? == want).then_some(())
    }

    fn at_end(&mut self) -> bool {
        self.skip_ws();
        self.i == self.s.len()
    }

    /// A non-negative integer no larger than `MAX_ELEMENTS`: a sign, a
    /// fraction or an exponent makes the caller's next byte fail.
    fn uint(&mut self) -> Option<u64> {
        self.skip_ws();
        let start = self.i;
        let mut v = 0u64;
        while let Some(&c) = self.s.get(self.i).filter(|c| c.is_ascii_digit()) {
            v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
            self.i += 1;
        }
        (self.i > start && v <= MAX_ELEMENTS).then_some(v)
    }

    /// A JSON string: the byte range of its contents (escapes left as they
    /// are; nothing the model reads is escaped).
    fn string(&mut self) -> Option<(usize, usize)> {
        if self.peek()? != b'"' {
            return None;
        }
        let end = string_end(self.s, self.i)?;
        let start = self.i + 1;
        self.i = end + 1;
        Some((start, end))
    }
}

/// `[d0, d1, …]` inside a tensor list: its element count.
fn shape_numel(c: &mut Cursor<'_>) -> Option<u64> {
    c.eat(b'[')?;
    if c.peek()? == b']' {
        c.i += 1;
        return Some(1);
    }
    let mut numel = 1u64;
    loop {
        numel = numel.saturating_mul(c.uint()?);
        match c.bump()? {
            b',' => {}
            b']' => break,
            _ => return None,
        }
    }
    (numel <= MAX_ELEMENTS).then_some(numel)
}

/// A JSON array of strings: each one's byte range, into `spans`.
fn parse_strings(text: &[u8], spans: &mut [(usize, usize); MAX_ARGS]) -> Option<usize> {
    let mut c = Cursor { s: text, i: 0 };
    c.eat(b'[')?;
    let mut n = 0;
    if c.peek()? == b']' {
        c.i += 1;
    } else {
        loop {
            *spans.get_mut(n)? = c.string()?;
            n += 1;
            match c.bump()? {
                b',' => {}
                b']' => break,
                _ => return None,
            }
        }
    }
    c.at_end().then_some(n)
}

fn parse_int(s: &[u8]) -> Option<i64> {
    let s = s.trim_ascii();
    let (neg, digits) = match s.strip_prefix(b"-") {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    if digits.is_empty() || digits.len() > 18 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let v = digits.iter().fold(0i64, |v, &c| v * 10 + i64::from(c - b'0'));
    Some(if neg { -v } else { v })
}

fn parse_bool(s: &[u8]) -> Option<bool> {
    match s.trim_ascii() {
        b"True" | b"true" => Some(true),
        b"False" | b"false" => Some(false),
        _ => None,
    }
}

/// The items of `"[a, b]"`, or of a bare `"a"` (one item); `"[]"` has none.
fn list_items(s: &[u8]) -> Option<impl Iterator<Item = &[u8]>> {
    let inner = match s.strip_prefix(b"[") {
        Some(rest) => rest.strip_suffix(b"]")?,
        None => s,
    };
    let inner = inner.trim_ascii();
    Some(inner.split(|&b| b == b',').filter(move |_| !inner.is_empty()))
}

/// `(M, K)`: the dims of a 2-D tensor; `None` for another rank.
pub(super) fn dims2(t: &Tensor<'_>) -> Option<(f64, f64)> {
    match t.dims {
        [a, b] => Some((*a as f64, *b as f64)),
        _ => None,
    }
}

/// `(B, M, K)`: the dims of a 3-D tensor; `None` for another rank.
pub(super) fn dims3(t: &Tensor<'_>) -> Option<(f64, f64, f64)> {
    match t.dims {
        [a, b, c] => Some((*a as f64, *b as f64, *c as f64)),
        _ => None,
    }
}

/// Where dimension `dim` (negative: counted from the end) sits in a tensor
/// of `rank` dims; `None` out of range.
pub(super) fn wrap_dim(dim: i64, rank: usize) -> Option<usize> {
    let r = i64::try_from(rank).ok()?;
    let d = if dim < 0 { dim + r } else { dim };
    usize::try_from(d).ok().filter(|&d| d < rank)
}
