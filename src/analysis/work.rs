//! The performance model (docs/analysis.md §13): FLOPs and bytes moved of
//! one op call, from the shapes, dtypes and scalar arguments the profiler
//! recorded (`record_shapes=True`: `Input Dims`, `Input type`,
//! `Concrete Inputs`). Conventional formulas, written once here; an op this
//! model does not know is reported as such, never guessed.

use std::fmt::Write as _;

use serde::Serialize;

/// The element type of an op's tensors, as `Input type` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    F64,
    F32,
    Bf16,
    F16,
    /// Any 8-bit float (`c10::Float8_e4m3fn`, `…e5m2`, their `fnuz` forms).
    Fp8,
    Int8,
    Uint8,
    Int16,
    Int32,
    Int64,
    Bool,
}

impl Dtype {
    /// Bytes per element.
    pub fn size(self) -> u32 {
        match self {
            Dtype::F64 | Dtype::Int64 => 8,
            Dtype::F32 | Dtype::Int32 => 4,
            Dtype::Bf16 | Dtype::F16 | Dtype::Int16 => 2,
            Dtype::Fp8 | Dtype::Int8 | Dtype::Uint8 | Dtype::Bool => 1,
        }
    }
}

/// The raw JSON text of an op call's shape arguments, as the trace holds
/// them (each an array with one entry per op input).
#[derive(Debug, Clone, Copy, Default)]
pub struct OpShapes<'a> {
    pub dims: Option<&'a [u8]>,
    pub types: Option<&'a [u8]>,
    pub concrete: Option<&'a [u8]>,
}

/// What one op call does, by the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Work {
    pub flops: f64,
    /// Bytes read and written, each tensor once (no cache reuse assumed).
    pub bytes: f64,
    pub dtype: Dtype,
    /// A matrix-multiply-like op (GEMM, convolution, attention) whose FLOPs
    /// can run on Tensor / Matrix Cores; the rest is judged by bytes.
    pub matrix: bool,
    /// The formula's inputs, for a details line: `M=8944 N=1024 K=1024`.
    pub inputs: String,
}

/// The model's answer for one op call.
#[derive(Debug, Clone, PartialEq)]
pub enum Model {
    Work(Work),
    /// A modelled op whose shapes were not recorded or do not fit the
    /// formula (said, not guessed).
    NoShapes,
    /// An op the model does not know.
    Unmodelled,
}

/// True when the model knows `op` (a cheap test by name, made before any
/// shape is parsed).
pub fn is_modelled(op: &str) -> bool {
    classify(op).is_some()
}

/// FLOPs and bytes of one call of `op` with these shapes.
pub fn model(op: &str, shapes: &OpShapes<'_>) -> Model {
    let Some(kind) = classify(op) else {
        return Model::Unmodelled;
    };
    let Some(args) = Args::parse(shapes) else {
        return Model::NoShapes;
    };
    match kind.work(&args) {
        Some(work) if work.flops.is_finite() && work.bytes.is_finite() => Model::Work(work),
        _ => Model::NoShapes,
    }
}

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

    /// Type-promotion category: bool < integer < floating point.
    fn category(self) -> u8 {
        match self {
            Dtype::Bool => 0,
            Dtype::Int8 | Dtype::Uint8 | Dtype::Int16 | Dtype::Int32 | Dtype::Int64 => 1,
            Dtype::F64 | Dtype::F32 | Dtype::Bf16 | Dtype::F16 | Dtype::Fp8 => 2,
        }
    }

    /// `torch.promote_types` for the dtypes the model knows.
    fn promote(self, other: Dtype) -> Dtype {
        if self == other {
            return self;
        }
        let (a, b) = (self.category(), other.category());
        if a != b {
            return if a > b { self } else { other };
        }
        match (self, other) {
            // Neither 16-bit float holds the other.
            (Dtype::Bf16, Dtype::F16) | (Dtype::F16, Dtype::Bf16) => Dtype::F32,
            (Dtype::Int8, Dtype::Uint8) | (Dtype::Uint8, Dtype::Int8) => Dtype::Int16,
            _ if self.size() >= other.size() => self,
            _ => other,
        }
    }
}

// ---------------------------------------------------------------------------
// The recorded arguments, parsed
// ---------------------------------------------------------------------------

/// Most arguments an op records (`_efficient_attention_backward` has 20).
const MAX_ARGS: usize = 32;
/// Most dimensions of one tensor (PyTorch's CUDA kernels take 25; real
/// tensors stay well under this).
const MAX_RANK: usize = 12;
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
struct Tensor<'p> {
    dims: &'p [u64],
    dtype: Option<Dtype>,
}

impl Tensor<'_> {
    fn rank(&self) -> usize {
        self.dims.len()
    }

    fn numel(&self) -> f64 {
        self.dims.iter().map(|&d| d as f64).product()
    }

    /// Dimension `i` as a float, for the formulas.
    fn dim(&self, i: usize) -> f64 {
        self.dims.get(i).map_or(0.0, |&d| d as f64)
    }

    /// Bytes at its own dtype, or `fallback` where none was recorded.
    fn bytes_or(&self, fallback: Option<Dtype>) -> Option<f64> {
        Some(self.numel() * f64::from(self.dtype.or(fallback)?.size()))
    }

    /// Bytes at its own dtype, which must be known.
    fn bytes(&self) -> Option<f64> {
        self.bytes_or(None)
    }
}

/// The three shape arguments of one call, parsed without allocating.
struct Args<'a> {
    entries: [Entry; MAX_ARGS],
    n_entries: usize,
    dims: [u64; MAX_DIMS],
    n_dims: usize,
    types: [Ty; MAX_ARGS],
    concrete: Option<&'a [u8]>,
    spans: [(usize, usize); MAX_ARGS],
    n_spans: usize,
}

impl<'a> Args<'a> {
    fn parse(shapes: &OpShapes<'a>) -> Option<Args<'a>> {
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
    fn tensor(&self, i: usize) -> Option<Tensor<'_>> {
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
    fn list(&self, i: usize) -> Option<(u32, f64)> {
        match self.entries.get(i)? {
            Entry::List { count, numel } if i < self.n_entries => Some((*count, *numel)),
            _ => None,
        }
    }

    /// The op's dtype: that of its first tensor with a known dtype.
    fn dtype(&self) -> Option<Dtype> {
        self.tensors().find_map(|t| t.dtype)
    }

    /// Bytes of every tensor argument, each once. Memory-bound ops need
    /// each dtype (`fallback: None`); matrix ops take the op's for a tensor
    /// whose type was not written.
    fn all_tensor_bytes(&self, fallback: Option<Dtype>) -> Option<f64> {
        self.tensors().map(|t| t.bytes_or(fallback)).sum()
    }

    /// True when `Concrete Inputs` holds an entry for argument `i` (it may
    /// be empty: a tensor, or `None`).
    fn recorded(&self, i: usize) -> bool {
        self.concrete.is_some() && i < self.n_spans
    }

    /// The non-empty `Concrete Inputs` text of argument `i`.
    fn conc(&self, i: usize) -> Option<&'a [u8]> {
        let text = self.concrete?;
        if i >= self.n_spans {
            return None;
        }
        let (a, b) = self.spans[i];
        let s = text[a..b].trim_ascii();
        (!s.is_empty()).then_some(s)
    }

    fn conc_int(&self, i: usize) -> Option<i64> {
        parse_int(self.conc(i)?)
    }

    fn conc_bool(&self, i: usize) -> Option<bool> {
        parse_bool(self.conc(i)?)
    }

    /// An int list (`"[2, 2]"`) or a single int (`"2"`), into `out`.
    fn conc_ints(&self, i: usize, out: &mut [i64; MAX_RANK]) -> Option<usize> {
        let mut n = 0;
        for part in list_items(self.conc(i)?)? {
            *out.get_mut(n)? = parse_int(part)?;
            n += 1;
        }
        Some(n)
    }

    /// A bool list (`"[True, True, False]"`), into `out`.
    fn conc_bools(&self, i: usize, out: &mut [bool; 4]) -> Option<usize> {
        let mut n = 0;
        for part in list_items(self.conc(i)?)? {
            *out.get_mut(n)? = parse_bool(part)?;
            n += 1;
        }
        Some(n)
    }

    /// A per-spatial-dimension int list (stride, padding, dilation) for `n`
    /// spatial dimensions; one value stands for all.
    fn spatial(&self, i: usize, n: usize) -> Option<[i64; 3]> {
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
    fn dtype_arg(&self, i: usize) -> Option<Option<Dtype>> {
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
        while matches!(self.s.get(self.i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
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
        self.eat(b'"')?;
        let start = self.i;
        loop {
            match *self.s.get(self.i)? {
                b'"' => {
                    self.i += 1;
                    return Some((start, self.i - 1));
                }
                b'\\' => self.i += 2,
                _ => self.i += 1,
            }
        }
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

// ---------------------------------------------------------------------------
// Which formula an op takes
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
enum Kind {
    Mm,
    /// `addmm`, `baddbmm`, `addmv`, `addbmm` (and in-place): a GEMM plus the
    /// tensor added to it, argument 0.
    AddGemm(Gemm),
    Bmm,
    Matmul,
    Linear,
    Mv,
    ScaledMm,
    Conv(ConvSig),
    ConvBackward,
    Attention(AttnSig),
    Elementwise(Elt, bool),
    /// `max`/`min`: a reduction, or elementwise with a second tensor.
    MaxMin,
    Copy,
    ToCopy,
    Clone,
    /// `cat`, `stack`: a tensor list in, its elements out.
    Concat,
    IndexSelect,
    Gather,
    Embedding,
    EmbeddingBackward,
    Norm(f64),
    NormBackward(NormBwd),
    Softmax(SoftmaxSig),
    SoftmaxBackward,
    Reduce(Red),
}

#[derive(Debug, Clone, Copy)]
enum Gemm {
    Addmm,
    Baddbmm,
    Addbmm,
    Addmv,
}

fn classify(op: &str) -> Option<Kind> {
    let name = op.strip_prefix("aten::")?;
    Some(match name {
        // Views, allocations and bookkeeping move no bytes of their own (`to`
        // copies through its `_to_copy`). The most frequent ops of a trace,
        // they leave here before the other tables are tried.
        "view"
        | "as_strided"
        | "t"
        | "transpose"
        | "reshape"
        | "_reshape_alias"
        | "_unsafe_view"
        | "permute"
        | "expand"
        | "slice"
        | "select"
        | "narrow"
        | "unsqueeze"
        | "squeeze"
        | "detach"
        | "alias"
        | "empty"
        | "empty_like"
        | "empty_strided"
        | "resize_"
        | "lift_fresh"
        | "record_stream"
        | "item"
        | "_local_scalar_dense"
        | "to" => return None,
        "mm" => Kind::Mm,
        "addmm" | "addmm_" | "_addmm_activation" => Kind::AddGemm(Gemm::Addmm),
        "bmm" => Kind::Bmm,
        "baddbmm" | "baddbmm_" => Kind::AddGemm(Gemm::Baddbmm),
        "addbmm" | "addbmm_" => Kind::AddGemm(Gemm::Addbmm),
        "addmv" | "addmv_" => Kind::AddGemm(Gemm::Addmv),
        "matmul" => Kind::Matmul,
        "linear" => Kind::Linear,
        "mv" => Kind::Mv,
        "_scaled_mm" => Kind::ScaledMm,
        "convolution_backward" => Kind::ConvBackward,
        "max" | "min" => Kind::MaxMin,
        "copy_" => Kind::Copy,
        "_to_copy" => Kind::ToCopy,
        "clone" | "contiguous" => Kind::Clone,
        "cat" | "_cat" | "concat" | "concatenate" | "stack" => Kind::Concat,
        "index_select" => Kind::IndexSelect,
        "gather" => Kind::Gather,
        "embedding" => Kind::Embedding,
        "embedding_dense_backward" => Kind::EmbeddingBackward,
        "_softmax_backward_data" | "_log_softmax_backward_data" => Kind::SoftmaxBackward,
        _ => {
            if let Some(sig) = conv_sig(name) {
                Kind::Conv(sig)
            } else if let Some(sig) = attn_sig(name) {
                Kind::Attention(sig)
            } else if let Some(flops) = norm_flops(name) {
                Kind::Norm(flops)
            } else if let Some(sig) = norm_bwd(name) {
                Kind::NormBackward(sig)
            } else if let Some(sig) = softmax_sig(name) {
                Kind::Softmax(sig)
            } else if let Some(red) = reduction(name) {
                Kind::Reduce(red)
            } else if let Some(elt) = elementwise(name) {
                Kind::Elementwise(elt, false)
            } else {
                // In-place forms (`add_`): the functional op written back.
                let base = name.strip_suffix('_').filter(|b| !b.ends_with('_'))?;
                Kind::Elementwise(elementwise(base)?, true)
            }
        }
    })
}

impl Kind {
    fn work(self, a: &Args<'_>) -> Option<Work> {
        match self {
            Kind::Mm => mm(a),
            Kind::AddGemm(g) => add_gemm(a, g),
            Kind::Bmm => bmm(a),
            Kind::Matmul => matmul(a),
            Kind::Linear => linear(a),
            Kind::Mv => mv(a),
            Kind::ScaledMm => scaled_mm(a),
            Kind::Conv(sig) => conv(a, sig),
            Kind::ConvBackward => conv_backward(a),
            Kind::Attention(sig) => attention(a, sig),
            Kind::Elementwise(elt, in_place) => elementwise_work(a, elt, in_place),
            Kind::MaxMin => max_min(a),
            Kind::Copy => copy(a),
            Kind::ToCopy => to_copy(a),
            Kind::Clone => clone(a),
            Kind::Concat => concat(a),
            Kind::IndexSelect => index_select(a),
            Kind::Gather => gather(a),
            Kind::Embedding => embedding(a),
            Kind::EmbeddingBackward => embedding_backward(a),
            Kind::Norm(flops) => norm(a, flops),
            Kind::NormBackward(sig) => norm_backward(a, sig),
            Kind::Softmax(sig) => softmax(a, sig),
            Kind::SoftmaxBackward => softmax_backward(a),
            Kind::Reduce(red) => reduce(a, red),
        }
    }
}

fn matrix(flops: f64, bytes: f64, dtype: Dtype, inputs: String) -> Work {
    Work { flops, bytes, dtype, matrix: true, inputs }
}

fn memory(flops: f64, bytes: f64, dtype: Dtype, inputs: String) -> Work {
    Work { flops, bytes, dtype, matrix: false, inputs }
}

/// `4.19M`: an element count, three significant digits.
fn count(n: f64) -> String {
    let (v, unit) = match n {
        n if n >= 1e12 => (n / 1e12, "T"),
        n if n >= 1e9 => (n / 1e9, "G"),
        n if n >= 1e6 => (n / 1e6, "M"),
        n if n >= 1e3 => (n / 1e3, "K"),
        n => return format!("{n}"),
    };
    match v {
        v if v >= 100.0 => format!("{v:.0}{unit}"),
        v if v >= 10.0 => format!("{v:.1}{unit}"),
        v => format!("{v:.2}{unit}"),
    }
}

fn elements(n: f64) -> String {
    format!("{} elements", count(n))
}

/// A size for a details line (integer formatting is much cheaper than a
/// float's, and every size is a whole number).
fn int(v: f64) -> u64 {
    v as u64
}

/// `3x3`: spatial sizes for a details line.
fn join_x(vals: impl IntoIterator<Item = u64>) -> String {
    let mut s = String::new();
    for (i, v) in vals.into_iter().enumerate() {
        if i > 0 {
            s.push('x');
        }
        let _ = write!(s, "{v}");
    }
    s
}

// ---------------------------------------------------------------------------
// Matrix multiplies
// ---------------------------------------------------------------------------

fn dims2(t: &Tensor<'_>) -> Option<(f64, f64)> {
    match t.dims {
        [a, b] => Some((*a as f64, *b as f64)),
        _ => None,
    }
}

fn dims3(t: &Tensor<'_>) -> Option<(f64, f64, f64)> {
    match t.dims {
        [a, b, c] => Some((*a as f64, *b as f64, *c as f64)),
        _ => None,
    }
}

fn gemm_inputs(batch: f64, m: f64, n: f64, k: f64) -> String {
    let (m, n, k) = (int(m), int(n), int(k));
    if batch == 1.0 {
        format!("M={m} N={n} K={k}")
    } else {
        format!("B={} M={m} N={n} K={k}", int(batch))
    }
}

/// `mm(self [M, K], mat2 [K, N])`, also as `mm.out` (the third tensor is
/// the output, written once either way).
fn mm(a: &Args<'_>) -> Option<Work> {
    let dtype = a.dtype()?;
    let (x, y) = (a.tensor(0)?, a.tensor(1)?);
    let ((m, k), (k2, n)) = (dims2(&x)?, dims2(&y)?);
    if k != k2 {
        return None;
    }
    let bytes =
        x.bytes_or(Some(dtype))? + y.bytes_or(Some(dtype))? + m * n * f64::from(dtype.size());
    Some(matrix(2.0 * m * n * k, bytes, dtype, gemm_inputs(1.0, m, n, k)))
}

/// `addmm(self, mat1 [M, K], mat2 [K, N])` and its batched and
/// matrix-vector kin: the GEMM's 2·M·N·K (the added `self` is the GEMM's
/// epilogue, not counted), `self` read with the operands.
fn add_gemm(a: &Args<'_>, g: Gemm) -> Option<Work> {
    let dtype = a.dtype()?;
    let (added, x, y) = (a.tensor(0)?, a.tensor(1)?, a.tensor(2)?);
    let (batch, m, n, k, out) = match g {
        Gemm::Addmm => {
            let ((m, k), (k2, n)) = (dims2(&x)?, dims2(&y)?);
            (k == k2).then_some((1.0, m, n, k, m * n))?
        }
        Gemm::Baddbmm | Gemm::Addbmm => {
            let ((b, m, k), (b2, k2, n)) = (dims3(&x)?, dims3(&y)?);
            let out = if matches!(g, Gemm::Baddbmm) { b * m * n } else { m * n };
            (b == b2 && k == k2).then_some((b, m, n, k, out))?
        }
        Gemm::Addmv => {
            let (m, k) = dims2(&x)?;
            (y.dims == [k as u64]).then_some((1.0, m, 1.0, k, m))?
        }
    };
    let fallback = Some(dtype);
    let bytes = added.bytes_or(fallback)?
        + x.bytes_or(fallback)?
        + y.bytes_or(fallback)?
        + out * f64::from(dtype.size());
    Some(matrix(2.0 * batch * m * n * k, bytes, dtype, gemm_inputs(batch, m, n, k)))
}

/// `bmm(self [B, M, K], mat2 [B, K, N])`.
fn bmm(a: &Args<'_>) -> Option<Work> {
    let dtype = a.dtype()?;
    let (x, y) = (a.tensor(0)?, a.tensor(1)?);
    let ((b, m, k), (b2, k2, n)) = (dims3(&x)?, dims3(&y)?);
    if b != b2 || k != k2 {
        return None;
    }
    let bytes =
        x.bytes_or(Some(dtype))? + y.bytes_or(Some(dtype))? + b * m * n * f64::from(dtype.size());
    Some(matrix(2.0 * b * m * n * k, bytes, dtype, gemm_inputs(b, m, n, k)))
}

/// `mv(self [M, K], vec [K])`.
fn mv(a: &Args<'_>) -> Option<Work> {
    let dtype = a.dtype()?;
    let (x, y) = (a.tensor(0)?, a.tensor(1)?);
    let (m, k) = dims2(&x)?;
    if y.dims != [k as u64] {
        return None;
    }
    let bytes = x.bytes_or(Some(dtype))? + y.bytes_or(Some(dtype))? + m * f64::from(dtype.size());
    Some(matrix(2.0 * m * k, bytes, dtype, gemm_inputs(1.0, m, 1.0, k)))
}

/// Elements of the broadcast of two batch shapes; `None` if they do not
/// broadcast.
fn broadcast_numel(x: &[u64], y: &[u64]) -> Option<f64> {
    let mut numel = 1.0;
    for i in 0..x.len().max(y.len()) {
        let dx = x.len().checked_sub(i + 1).map_or(1, |j| x[j]);
        let dy = y.len().checked_sub(i + 1).map_or(1, |j| y[j]);
        let d = match (dx, dy) {
            _ if dx == dy => dx,
            (1, d) | (d, 1) => d,
            _ => return None,
        };
        numel *= d as f64;
    }
    Some(numel)
}

/// `matmul` as `torch.matmul` defines it: a 1-D left operand is a row
/// [1, K], a 1-D right one a column [K, 1]; batch dims broadcast.
fn matmul(a: &Args<'_>) -> Option<Work> {
    let dtype = a.dtype()?;
    let (x, y) = (a.tensor(0)?, a.tensor(1)?);
    let (xr, yr) = (x.rank(), y.rank());
    let (m, k, xb) = match xr {
        0 => return None,
        1 => (1, x.dims[0], &[][..]),
        _ => (x.dims[xr - 2], x.dims[xr - 1], &x.dims[..xr - 2]),
    };
    let (k2, n, yb) = match yr {
        0 => return None,
        1 => (y.dims[0], 1, &[][..]),
        _ => (y.dims[yr - 2], y.dims[yr - 1], &y.dims[..yr - 2]),
    };
    if k != k2 {
        return None;
    }
    let batch = broadcast_numel(xb, yb)?;
    let (m, n, k) = (m as f64, n as f64, k as f64);
    let bytes = x.bytes_or(Some(dtype))?
        + y.bytes_or(Some(dtype))?
        + batch * m * n * f64::from(dtype.size());
    Some(matrix(2.0 * batch * m * n * k, bytes, dtype, gemm_inputs(batch, m, n, k)))
}

/// `linear(input [..., K], weight [N, K], bias [N]?)`: M is every leading
/// dim of the input together.
fn linear(a: &Args<'_>) -> Option<Work> {
    let dtype = a.dtype()?;
    let (x, w) = (a.tensor(0)?, a.tensor(1)?);
    let (&k, lead) = x.dims.split_last()?;
    let (n, k2) = match w.dims {
        [n, k2] => (*n as f64, *k2),
        [k2] => (1.0, *k2),
        _ => return None,
    };
    if k != k2 {
        return None;
    }
    let (m, k) = (lead.iter().map(|&d| d as f64).product::<f64>(), k as f64);
    let bias = match a.tensor(2) {
        Some(b) => b.bytes_or(Some(dtype))?,
        None => 0.0,
    };
    let bytes = x.bytes_or(Some(dtype))?
        + w.bytes_or(Some(dtype))?
        + bias
        + m * n * f64::from(dtype.size());
    Some(matrix(2.0 * m * n * k, bytes, dtype, gemm_inputs(1.0, m, n, k)))
}

/// `_scaled_mm`, the FP8 GEMM: 2·M·N·K; the output in `out_dtype` (its
/// position moved in PyTorch 2.4, when `scale_a`/`scale_b` became the
/// required third and fourth tensors).
fn scaled_mm(a: &Args<'_>) -> Option<Work> {
    let dtype = a.dtype()?;
    let (x, y) = (a.tensor(0)?, a.tensor(1)?);
    let ((m, k), (k2, n)) = (dims2(&x)?, dims2(&y)?);
    if k != k2 {
        return None;
    }
    let out_dtype_at = if a.tensor(3).is_some() { 6 } else { 3 };
    let out_dtype = a.dtype_arg(out_dtype_at)?.unwrap_or(dtype);
    let bytes = a.all_tensor_bytes(Some(dtype))? + m * n * f64::from(out_dtype.size());
    Some(matrix(2.0 * m * n * k, bytes, dtype, gemm_inputs(1.0, m, n, k)))
}

// ---------------------------------------------------------------------------
// Convolutions
// ---------------------------------------------------------------------------

/// Where a convolution op keeps its arguments.
#[derive(Debug, Clone, Copy)]
struct ConvSig {
    bias: Option<u8>,
    stride: u8,
    padding: u8,
    dilation: u8,
    groups: u8,
    /// Fixed by the op, or a `bool transposed` argument.
    transposed: Transposed,
    output_padding: Option<u8>,
}

#[derive(Debug, Clone, Copy)]
enum Transposed {
    Fixed(bool),
    At(u8),
}

fn conv_sig(name: &str) -> Option<ConvSig> {
    let sig = |bias, stride, padding, dilation, groups, transposed, output_padding| ConvSig {
        bias,
        stride,
        padding,
        dilation,
        groups,
        transposed,
        output_padding,
    };
    Some(match name {
        // (input, weight, bias, stride, padding, dilation, groups)
        "conv1d" | "conv2d" | "conv3d" | "_convolution_mode" => {
            sig(Some(2), 3, 4, 5, 6, Transposed::Fixed(false), None)
        }
        // (input, weight, bias, stride, padding, output_padding, groups, dilation)
        "conv_transpose1d" | "conv_transpose2d" | "conv_transpose3d" => {
            sig(Some(2), 3, 4, 7, 6, Transposed::Fixed(true), Some(5))
        }
        // (input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, …)
        "convolution" | "_convolution" => sig(Some(2), 3, 4, 5, 8, Transposed::At(6), Some(7)),
        // (self, weight, padding, stride, dilation, groups, …)
        "cudnn_convolution" => sig(None, 3, 2, 4, 5, Transposed::Fixed(false), None),
        // (self, weight, padding, output_padding, stride, dilation, groups, …)
        "cudnn_convolution_transpose" => sig(None, 4, 2, 5, 6, Transposed::Fixed(true), Some(3)),
        // (self, weight, bias, padding, stride, dilation, groups, …)
        "miopen_convolution" | "miopen_depthwise_convolution" | "mkldnn_convolution" => {
            sig(Some(2), 4, 3, 5, 6, Transposed::Fixed(false), None)
        }
        // (self, weight, bias, padding, output_padding, stride, dilation, groups, …)
        "miopen_convolution_transpose" => {
            sig(Some(2), 5, 3, 6, 7, Transposed::Fixed(true), Some(4))
        }
        _ => return None,
    })
}

/// The convolution's sizes, as its formula and details line use them.
struct ConvShape {
    batch: f64,
    cin: f64,
    cout: f64,
    out: [f64; 3],
    /// The spatial size every weight element is applied over: the output's
    /// for a convolution, the input's for a transposed one.
    applied: f64,
    spatial: usize,
}

impl ConvShape {
    fn inputs(
        &self,
        w: &Tensor<'_>,
        groups: i64,
        stride: Option<[i64; 3]>,
        transposed: bool,
    ) -> String {
        let mut s = format!(
            "N={} Cin={} Cout={} out={} k={} groups={groups}",
            int(self.batch),
            int(self.cin),
            int(self.cout),
            join_x(self.out[..self.spatial].iter().map(|&v| int(v))),
            join_x(w.dims[2..].iter().copied())
        );
        if let Some(stride) = stride {
            let stride = &stride[..self.spatial];
            if stride.iter().all(|&v| v == stride[0]) {
                let _ = write!(s, " stride={}", stride[0]);
            } else {
                let _ = write!(s, " stride={}", join_x(stride.iter().map(|&v| v.unsigned_abs())));
            }
        }
        if transposed {
            s.push_str(" transposed");
        }
        s
    }
}

/// `Cin`, batch and spatial sizes of a convolution input with `spatial`
/// spatial dims (`[N, C, …]`, or unbatched `[C, …]`).
fn conv_input<'t>(x: &Tensor<'t>, spatial: usize) -> Option<(f64, f64, &'t [u64])> {
    match x.rank().checked_sub(spatial)? {
        2 => Some((x.dim(0), x.dim(1), &x.dims[2..])),
        1 => Some((1.0, x.dim(0), &x.dims[1..])),
        _ => None,
    }
}

/// FLOPs = 2 · N · (applied spatial size) · numel(weight), which is
/// 2·N·Cout·prod(out)·(Cin/groups)·prod(k) for a convolution.
fn conv(a: &Args<'_>, sig: ConvSig) -> Option<Work> {
    let dtype = a.dtype()?;
    let (x, w) = (a.tensor(0)?, a.tensor(1)?);
    let spatial = w.rank().checked_sub(2).filter(|n| (1..=3).contains(n))?;
    let (batch, cin, in_sp) = conv_input(&x, spatial)?;
    let transposed = match sig.transposed {
        Transposed::Fixed(t) => t,
        Transposed::At(i) => a.conc_bool(i.into())?,
    };
    let groups = a.conc_int(sig.groups.into()).filter(|&g| g >= 1)?;
    let positive = |v: &[i64; 3]| v[..spatial].iter().all(|&x| x >= 1);
    let stride = a.spatial(sig.stride.into(), spatial).filter(positive)?;
    let dilation = a.spatial(sig.dilation.into(), spatial).filter(positive)?;
    // `padding="same"` keeps the size (PyTorch allows it at stride 1 only).
    let padding = match a.conc(sig.padding.into())? {
        p if p.windows(4).any(|w| w == b"same") => None,
        p if p.windows(5).any(|w| w == b"valid") => Some([0; 3]),
        _ => Some(a.spatial(sig.padding.into(), spatial)?),
    };
    let output_padding = match (transposed, sig.output_padding) {
        (true, Some(i)) => a.spatial(i.into(), spatial)?,
        _ => [0; 3],
    };
    let params = ConvParams { groups, stride, padding, dilation, output_padding, transposed };
    let shape = conv_shape(batch, cin, in_sp, &w, &params)?;
    let bias = match sig.bias.and_then(|i| a.tensor(i.into())) {
        Some(b) => b.bytes_or(Some(dtype))?,
        None => 0.0,
    };
    let out: f64 = shape.out[..spatial].iter().product();
    let bytes = x.bytes_or(Some(dtype))?
        + w.bytes_or(Some(dtype))?
        + bias
        + batch * shape.cout * out * f64::from(dtype.size());
    let flops = 2.0 * batch * shape.applied * w.numel();
    Some(matrix(flops, bytes, dtype, shape.inputs(&w, groups, Some(stride), transposed)))
}

/// A convolution's recorded arguments.
#[derive(Debug, Clone, Copy)]
struct ConvParams {
    groups: i64,
    stride: [i64; 3],
    /// `None`: `padding="same"`.
    padding: Option<[i64; 3]>,
    dilation: [i64; 3],
    output_padding: [i64; 3],
    transposed: bool,
}

/// Output size and channels: out = ⌊(in + 2p − d·(k − 1) − 1) / s⌋ + 1, or
/// for a transposed convolution (in − 1)·s − 2p + d·(k − 1) + output_padding + 1.
fn conv_shape(
    batch: f64,
    cin: f64,
    in_sp: &[u64],
    w: &Tensor<'_>,
    p: &ConvParams,
) -> Option<ConvShape> {
    let ConvParams { groups, stride, padding, dilation, output_padding, transposed } = *p;
    let spatial = in_sp.len();
    let g = groups as f64;
    let k = &w.dims[2..];
    let mut out = [0f64; 3];
    for d in 0..spatial {
        let (i, kd) = (in_sp[d] as i128, k[d] as i128);
        let (s, dl, op) =
            (i128::from(stride[d]), i128::from(dilation[d]), i128::from(output_padding[d]));
        let reach = dl * (kd - 1);
        let o = match (transposed, padding) {
            (false, None) if s == 1 => i,
            (_, None) => return None,
            (false, Some(pad)) => {
                let span = i + 2 * i128::from(pad[d]) - reach - 1;
                if span < 0 { 0 } else { span / s + 1 }
            }
            (true, Some(pad)) => (i - 1) * s - 2 * i128::from(pad[d]) + reach + op + 1,
        };
        if o < 0 {
            return None;
        }
        out[d] = o as f64;
    }
    let in_size: f64 = in_sp.iter().map(|&d| d as f64).product();
    let out_size: f64 = out[..spatial].iter().product();
    let (cout, applied) = if transposed {
        // weight [Cin, Cout/groups, k…]
        (w.dim(0) == cin).then_some((w.dim(1) * g, in_size))?
    } else {
        // weight [Cout, Cin/groups, k…]
        (w.dim(1) * g == cin).then_some((w.dim(0), out_size))?
    };
    Some(ConvShape { batch, cin, cout, out, applied, spatial })
}

/// `convolution_backward(grad_output, input, weight, bias_sizes, stride,
/// padding, dilation, transposed, output_padding, groups, output_mask)`:
/// grad_input and grad_weight each cost the forward's FLOPs, grad_bias one
/// add per grad_output element, each as `output_mask` asks.
fn conv_backward(a: &Args<'_>) -> Option<Work> {
    let dtype = a.dtype()?;
    let (go, x, w) = (a.tensor(0)?, a.tensor(1)?, a.tensor(2)?);
    let spatial = w.rank().checked_sub(2).filter(|n| (1..=3).contains(n))?;
    if go.rank() != spatial + 2 || x.rank() != spatial + 2 || go.dims[0] != x.dims[0] {
        return None;
    }
    let transposed = a.conc_bool(7)?;
    let groups = a.conc_int(9).filter(|&g| g >= 1)?;
    let mut mask = [false; 4];
    if a.conc_bools(10, &mut mask)? != 3 {
        return None;
    }
    let g = groups as f64;
    let (batch, cin, cout) = (x.dim(0), x.dim(1), go.dim(1));
    let channels_fit = if transposed {
        w.dim(0) == cin && w.dim(1) * g == cout
    } else {
        w.dim(1) * g == cin && w.dim(0) == cout
    };
    if !channels_fit {
        return None;
    }
    let out: Vec<f64> = go.dims[2..].iter().map(|&d| d as f64).collect();
    let applied: f64 = if transposed {
        x.dims[2..].iter().map(|&d| d as f64).product()
    } else {
        out.iter().product()
    };
    let forward = 2.0 * batch * applied * w.numel();
    let size = f64::from(dtype.size());
    let (mut flops, mut bytes, mut grads) = (0.0, go.bytes_or(Some(dtype))?, Vec::new());
    if mask[0] {
        flops += forward;
        bytes += w.bytes_or(Some(dtype))? + x.numel() * size;
        grads.push("input");
    }
    if mask[1] {
        flops += forward;
        bytes += x.bytes_or(Some(dtype))? + w.numel() * size;
        grads.push("weight");
    }
    if mask[2] {
        flops += go.numel();
        bytes += cout * size;
        grads.push("bias");
    }
    let mut out3 = [0.0; 3];
    out3[..spatial].copy_from_slice(&out);
    let shape = ConvShape { batch, cin, cout, out: out3, applied, spatial };
    let stride = a.spatial(4, spatial);
    let inputs =
        format!("{} grad={}", shape.inputs(&w, groups, stride, transposed), grads.join(","));
    Some(matrix(flops, bytes, dtype, inputs))
}

// ---------------------------------------------------------------------------
// Attention
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
enum Layout {
    /// `[B, H, L, D]`: the `scaled_dot_product_*` ops.
    Bhld,
    /// `[B, L, H, D]`: `_flash_attention_*`, `_efficient_attention_*`.
    Blhd,
}

/// How the causal mask lines up when `Lq != Lk`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Align {
    /// Query i sees keys 0..=i (`torch.nn.functional.scaled_dot_product_attention`).
    TopLeft,
    /// Query i sees keys 0..=i + Lk − Lq (flash-attn; the last query sees all).
    BottomRight,
}

#[derive(Debug, Clone, Copy)]
enum Causal {
    /// `bool is_causal` at this position, aligned so.
    Flag(u8, Align),
    /// `int custom_mask_type` (0 none, 1 top-left, 2 bottom-right).
    MaskType(u8),
}

#[derive(Debug, Clone, Copy)]
struct AttnSig {
    layout: Layout,
    causal: Causal,
    backward: bool,
    /// Position of `query` (0, or 1 after `grad_out`).
    q: u8,
    /// Positions of `cum_seq_q`/`cum_seq_k`: recorded tensors there mean
    /// packed variable-length sequences, whose lengths are not recorded.
    varlen: Option<(u8, u8)>,
    /// Positions of `window_size_left`/`_right`: a sliding window is not
    /// modelled.
    window: Option<(u8, u8)>,
}

fn attn_sig(name: &str) -> Option<AttnSig> {
    use Align::{BottomRight, TopLeft};
    let sig = |layout, causal, backward, varlen, window| AttnSig {
        layout,
        causal,
        backward,
        q: u8::from(backward),
        varlen,
        window,
    };
    Some(match name {
        // (query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
        "scaled_dot_product_attention" => {
            sig(Layout::Bhld, Causal::Flag(5, TopLeft), false, None, None)
        }
        // (query, key, value, dropout_p, is_causal, return_debug_mask, scale)
        "_scaled_dot_product_flash_attention" | "_scaled_dot_product_flash_attention_for_cpu" => {
            sig(Layout::Bhld, Causal::Flag(4, TopLeft), false, None, None)
        }
        // (grad_out, query, key, value, out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, …)
        "_scaled_dot_product_flash_attention_backward" => {
            sig(Layout::Bhld, Causal::Flag(11, TopLeft), true, None, None)
        }
        // (grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, attn_mask, scale)
        "_scaled_dot_product_flash_attention_for_cpu_backward" => {
            sig(Layout::Bhld, Causal::Flag(7, TopLeft), true, None, None)
        }
        // (query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal, scale); 2.0 had no
        // attn_bias nor dropout_p (is_causal at 4): see `causal_at`.
        "_scaled_dot_product_efficient_attention" | "_scaled_dot_product_cudnn_attention" => {
            sig(Layout::Bhld, Causal::Flag(6, TopLeft), false, None, None)
        }
        // (grad_out_, query, key, value, attn_bias, out, logsumexp, philox_seed, philox_offset, dropout_p,
        //  grad_input_mask, is_causal, scale); 2.0: (grad_out_, query, key, value, out, logsumexp, is_causal, …)
        "_scaled_dot_product_efficient_attention_backward" => {
            sig(Layout::Bhld, Causal::Flag(11, TopLeft), true, None, None)
        }
        // (grad_out, query, key, value, out, logsumexp, philox_seed, philox_offset, attn_bias, cum_seq_q,
        //  cum_seq_k, max_q, max_k, dropout_p, is_causal, scale)
        "_scaled_dot_product_cudnn_attention_backward" => {
            sig(Layout::Bhld, Causal::Flag(14, TopLeft), true, Some((9, 10)), None)
        }
        // (query, key, value, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, return_debug_mask,
        //  scale, window_size_left, window_size_right, seqused_k, alibi_slopes)
        "_flash_attention_forward" => {
            sig(Layout::Blhd, Causal::Flag(8, BottomRight), false, Some((3, 4)), Some((11, 12)))
        }
        // (grad_out, query, key, value, out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p,
        //  is_causal, rng_state, unused, scale, window_size_left, window_size_right)
        "_flash_attention_backward" => {
            sig(Layout::Blhd, Causal::Flag(11, BottomRight), true, Some((6, 7)), Some((15, 16)))
        }
        // (query, key, value, bias, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p,
        //  custom_mask_type, compute_log_sumexp, scale, seqlen_k, window_size)
        "_efficient_attention_forward" => {
            sig(Layout::Blhd, Causal::MaskType(9), false, Some((4, 5)), Some((13, 13)))
        }
        // (grad_out_, query, key, value, bias, out, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
        //  logsumexp, dropout_p, philox_seed, philox_offset, custom_mask_type, bias_requires_grad, scale,
        //  num_splits_key, window_size, shared_storage_dqdkdv)
        "_efficient_attention_backward" => {
            sig(Layout::Blhd, Causal::MaskType(14), true, Some((6, 7)), Some((18, 18)))
        }
        _ => return None,
    })
}

/// Query-key pairs the mask keeps, per batch and head.
fn attended_pairs(lq: f64, lk: f64, causal: Option<Align>) -> f64 {
    let triangle = |n: f64| n * (n + 1.0) / 2.0;
    match causal {
        None => lq * lk,
        Some(Align::TopLeft) if lq <= lk => triangle(lq),
        Some(Align::TopLeft) => triangle(lk) + (lq - lk) * lk,
        Some(Align::BottomRight) if lk >= lq => lq * (lk - lq) + triangle(lq),
        Some(Align::BottomRight) => triangle(lk),
    }
}

/// The causal setting a call recorded; `None` when it is not recorded.
fn causal_of(a: &Args<'_>, causal: Causal, backward: bool) -> Option<Option<Align>> {
    match causal {
        Causal::Flag(at, align) => {
            // PyTorch 2.0's efficient-attention ops were shorter (no bias, no dropout).
            let at = match (at, a.n_entries, backward) {
                (6, 6, false) => 4,
                (11, 9, true) => 6,
                _ => at.into(),
            };
            Some(a.conc_bool(at)?.then_some(align))
        }
        Causal::MaskType(at) => match a.conc_int(at.into())? {
            0 => Some(None),
            1 => Some(Some(Align::TopLeft)),
            2 => Some(Some(Align::BottomRight)),
            _ => None,
        },
    }
}

/// Forward: QKᵀ and PV, 2·B·H·P·(D + Dv) for P attended pairs. Backward:
/// QKᵀ again, dV = PᵀdO, dP = dO·Vᵀ, dQ = dS·K, dK = dSᵀQ:
/// 2·B·H·P·(3·D + 2·Dv), 2.5× the forward when D = Dv.
fn attention(a: &Args<'_>, sig: AttnSig) -> Option<Work> {
    let dtype = a.dtype()?;
    let qi = usize::from(sig.q);
    let (q, k, v) = (a.tensor(qi)?, a.tensor(qi + 1)?, a.tensor(qi + 2)?);
    if let Some((cq, ck)) = sig.varlen {
        if [cq, ck].iter().any(|&i| a.tensor(i.into()).is_some_and(|t| t.rank() > 0)) {
            return None;
        }
    }
    if let Some((l, r)) = sig.window {
        if [l, r].iter().any(|&i| a.conc_int(i.into()).is_some_and(|w| w >= 0)) {
            return None;
        }
    }
    // (batch, heads, L, D) of each tensor.
    let bhld = |t: &Tensor<'_>| -> Option<(f64, f64, f64, f64)> {
        match (sig.layout, t.dims) {
            (Layout::Blhd, [b, l, h, d]) => Some((*b as f64, *h as f64, *l as f64, *d as f64)),
            (Layout::Blhd, _) => None,
            (Layout::Bhld, [b, h, l, d]) => Some((*b as f64, *h as f64, *l as f64, *d as f64)),
            (Layout::Bhld, [b, l, d]) => Some((*b as f64, 1.0, *l as f64, *d as f64)),
            (Layout::Bhld, [lead @ .., l, d]) if !lead.is_empty() => {
                Some((lead.iter().map(|&x| x as f64).product(), 1.0, *l as f64, *d as f64))
            }
            (Layout::Bhld, _) => None,
        }
    };
    let ((b, h, lq, d), (_, hk, lk, dk), (_, hv, lv, dv)) = (bhld(&q)?, bhld(&k)?, bhld(&v)?);
    if dk != d || lv != lk || hv != hk {
        return None;
    }
    let causal = causal_of(a, sig.causal, sig.backward)?;
    let pairs = b * h * attended_pairs(lq, lk, causal);
    let flops =
        if sig.backward { 2.0 * pairs * (3.0 * d + 2.0 * dv) } else { 2.0 * pairs * (d + dv) };
    // Read: every tensor argument (Q, K, V, a mask; dO, O, logsumexp).
    // Written: O, or dQ, dK, dV.
    let fallback = Some(dtype);
    let written = if sig.backward {
        q.bytes_or(fallback)? + k.bytes_or(fallback)? + v.bytes_or(fallback)?
    } else {
        b * h * lq * dv * f64::from(q.dtype.unwrap_or(dtype).size())
    };
    let bytes = a.all_tensor_bytes(fallback)? + written;
    let mut inputs =
        format!("B={} H={} Lq={} Lk={} D={}", int(b), int(h), int(lq), int(lk), int(d));
    if dv != d {
        let _ = write!(inputs, " Dv={}", int(dv));
    }
    if hk != h {
        let _ = write!(inputs, " Hkv={}", int(hk));
    }
    match causal {
        Some(Align::TopLeft) => inputs.push_str(" causal"),
        Some(Align::BottomRight) if lq != lk => inputs.push_str(" causal(bottom-right)"),
        Some(Align::BottomRight) => inputs.push_str(" causal"),
        None => {}
    }
    Some(matrix(flops, bytes, dtype, inputs))
}

// ---------------------------------------------------------------------------
// Elementwise
// ---------------------------------------------------------------------------

/// What an elementwise op writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Out {
    /// The operands' promoted dtype.
    Promoted,
    /// Floating point even for integer operands (`div`, `sqrt`): float32
    /// from integers.
    Float,
    /// `bool` (comparisons, logical ops).
    Bool,
    /// Writes `self` without reading it (`fill_`, `zero_`).
    WriteOnly,
    /// The output and a `bool` mask (`native_dropout`).
    WithMask,
}

#[derive(Debug, Clone, Copy)]
struct Elt {
    /// FLOPs per output element.
    flops: f64,
    /// Arguments of the functional form: a tensor at or after this
    /// position is an `out=` tensor (written, not read).
    nargs: u8,
    out: Out,
}

fn elementwise(name: &str) -> Option<Elt> {
    let e = |flops, nargs, out| Elt { flops, nargs, out };
    Some(match name {
        // Unary arithmetic and activations: 1 per element.
        "abs" | "neg" | "sign" | "sgn" | "floor" | "ceil" | "trunc" | "frac" | "relu" | "silu"
        | "mish" | "hardswish" | "hardsigmoid" | "bitwise_not" => e(1.0, 1, Out::Promoted),
        "exp" | "exp2" | "expm1" | "log" | "log2" | "log10" | "log1p" | "sqrt" | "rsqrt"
        | "reciprocal" | "sin" | "cos" | "tan" | "asin" | "acos" | "atan" | "sinh" | "cosh"
        | "tanh" | "sigmoid" | "erf" | "erfc" | "erfinv" => e(1.0, 1, Out::Float),
        "round" | "gelu" | "leaky_relu" | "pow" | "clamp_min" | "clamp_max" => {
            e(1.0, 2, Out::Promoted)
        }
        "hardtanh" | "softplus" | "threshold" => e(1.0, 3, Out::Promoted),
        "elu" | "nan_to_num" => e(1.0, 4, Out::Promoted),
        "clamp" | "clip" => e(2.0, 3, Out::Promoted),
        "logical_not" | "isnan" | "isinf" => e(1.0, 1, Out::Bool),
        // Binary: 1 per element (`alpha` folded in).
        "add" | "sub" | "rsub" => e(1.0, 3, Out::Promoted),
        "div" => e(1.0, 3, Out::Float),
        "true_divide" | "atan2" => e(1.0, 2, Out::Float),
        "mul" | "floor_divide" | "remainder" | "fmod" | "maximum" | "minimum" | "hypot"
        | "xlogy" | "copysign" | "bitwise_and" | "bitwise_or" | "bitwise_xor" => {
            e(1.0, 2, Out::Promoted)
        }
        "eq" | "ne" | "lt" | "le" | "gt" | "ge" | "logical_and" | "logical_or" | "logical_xor" => {
            e(1.0, 2, Out::Bool)
        }
        // Ternary, counted by their definition: self + value·t1·t2, self + w·(end − self).
        "addcmul" | "addcdiv" => e(3.0, 4, Out::Promoted),
        "lerp" => e(3.0, 3, Out::Promoted),
        // Selects move data, compute nothing.
        "where" => e(0.0, 3, Out::Promoted),
        "masked_fill" => e(0.0, 3, Out::Promoted),
        "fill" | "zero" => e(0.0, if name == "fill" { 2 } else { 1 }, Out::WriteOnly),
        // Activation gradients: the derivative and its product with the gradient.
        "threshold_backward" => e(1.0, 3, Out::Promoted),
        "hardtanh_backward" => e(1.0, 4, Out::Promoted),
        "gelu_backward" => e(2.0, 3, Out::Promoted),
        "silu_backward"
        | "sigmoid_backward"
        | "tanh_backward"
        | "hardswish_backward"
        | "hardsigmoid_backward" => e(2.0, 2, Out::Promoted),
        "leaky_relu_backward" | "softplus_backward" => e(2.0, 4, Out::Promoted),
        "elu_backward" => e(2.0, 6, Out::Promoted),
        "native_dropout" => e(1.0, 3, Out::WithMask),
        "native_dropout_backward" => e(1.0, 3, Out::Promoted),
        _ => return None,
    })
}

/// Elementwise: every operand read once, the output (the operands'
/// broadcast, `self` in place, or the `out=` tensor) written once.
fn elementwise_work(a: &Args<'_>, elt: Elt, in_place: bool) -> Option<Work> {
    let label = a.dtype()?;
    let nargs = usize::from(elt.nargs);
    // `where(condition)` alone is `nonzero`, not a select.
    if a.n_entries < nargs.min(2) {
        return None;
    }
    let out_tensor = (nargs..a.n_entries).find_map(|i| a.tensor(i));
    let mut shape = [1u64; MAX_RANK];
    let mut rank = 0;
    let (mut dimmed, mut zero_dim): (Option<Dtype>, Option<Dtype>) = (None, None);
    let mut read = 0.0;
    let write_only = elt.out == Out::WriteOnly;
    for i in 0..nargs.min(a.n_entries) {
        let Some(t) = a.tensor(i) else { continue };
        let dtype = t.dtype?;
        if !(write_only && i == 0) {
            read += t.bytes()?;
        }
        broadcast_into(&mut shape, &mut rank, t.dims)?;
        let slot = if t.rank() == 0 { &mut zero_dim } else { &mut dimmed };
        *slot = Some(slot.map_or(dtype, |d| d.promote(dtype)));
    }
    let first = a.tensor(0);
    let (out_numel, out_dtype) = if in_place || write_only {
        let t = first?;
        (t.numel(), t.dtype?)
    } else if let Some(t) = out_tensor {
        (t.numel(), t.dtype?)
    } else {
        // torch's rule: a 0-dim tensor decides only from a higher category.
        let promoted = match (dimmed, zero_dim) {
            (Some(d), Some(z)) if z.category() > d.category() => z,
            (Some(d), _) => d,
            (None, z) => z?,
        };
        let dtype = match elt.out {
            Out::Bool => Dtype::Bool,
            Out::Float if promoted.category() < 2 => Dtype::F32,
            _ => promoted,
        };
        (shape[..rank].iter().map(|&d| d as f64).product(), dtype)
    };
    let mut written = out_numel * f64::from(out_dtype.size());
    if elt.out == Out::WithMask {
        written += out_numel;
    }
    Some(memory(elt.flops * out_numel, read + written, label, elements(out_numel)))
}

/// Broadcasts `dims` into `shape` (right-aligned, `rank` dims used).
fn broadcast_into(shape: &mut [u64; MAX_RANK], rank: &mut usize, dims: &[u64]) -> Option<()> {
    if dims.len() > MAX_RANK {
        return None;
    }
    // Right-align: shift the current shape up when `dims` is longer.
    if dims.len() > *rank {
        let grow = dims.len() - *rank;
        shape.copy_within(0..*rank, grow);
        shape[..grow].fill(1);
        *rank = dims.len();
    }
    let offset = *rank - dims.len();
    for (s, &d) in shape[offset..*rank].iter_mut().zip(dims) {
        *s = match (*s, d) {
            (s, d) if s == d => s,
            (1, d) => d,
            (s, 1) => s,
            _ => return None,
        };
    }
    Some(())
}

/// `max`/`min`: `max(self)` and `max.dim(self, dim, keepdim)` reduce,
/// `max.other(self, other)` is elementwise.
fn max_min(a: &Args<'_>) -> Option<Work> {
    if a.tensor(1).is_some() {
        return elementwise_work(a, Elt { flops: 1.0, nargs: 2, out: Out::Promoted }, false);
    }
    let red = Red {
        flops: 1.0,
        dim: 1,
        full_below: 2,
        dtype_full: None,
        dtype_dim: None,
        outputs: 1,
        out: RedOut::Same,
    };
    if a.n_entries >= 2 {
        // `max.dim` also returns the int64 indices.
        let mut work = reduce(a, red)?;
        let out = reduced_numel(a, red)?;
        work.bytes += out * f64::from(Dtype::Int64.size());
        return Some(work);
    }
    reduce(a, red)
}

// ---------------------------------------------------------------------------
// Copies and gathers
// ---------------------------------------------------------------------------

/// `copy_(self, src)`: src read, self written, each at its own dtype.
fn copy(a: &Args<'_>) -> Option<Work> {
    let (dst, src) = (a.tensor(0)?, a.tensor(1)?);
    let bytes = src.bytes()? + dst.bytes()?;
    let mut inputs = elements(dst.numel());
    if src.dtype != dst.dtype {
        let _ = write!(inputs, " {}→{}", dtype_name(src.dtype?), dtype_name(dst.dtype?));
    }
    Some(memory(0.0, bytes, dst.dtype?, inputs))
}

fn dtype_name(d: Dtype) -> &'static str {
    match d {
        Dtype::F64 => "f64",
        Dtype::F32 => "f32",
        Dtype::Bf16 => "bf16",
        Dtype::F16 => "f16",
        Dtype::Fp8 => "fp8",
        Dtype::Int8 => "i8",
        Dtype::Uint8 => "u8",
        Dtype::Int16 => "i16",
        Dtype::Int32 => "i32",
        Dtype::Int64 => "i64",
        Dtype::Bool => "bool",
    }
}

/// `_to_copy(self, dtype, layout, device, …)`: self read, written at
/// `dtype` (its own when not given).
fn to_copy(a: &Args<'_>) -> Option<Work> {
    let src = a.tensor(0)?;
    let from = src.dtype?;
    let to = a.dtype_arg(1)?.unwrap_or(from);
    let mut inputs = elements(src.numel());
    if to != from {
        let _ = write!(inputs, " {}→{}", dtype_name(from), dtype_name(to));
    }
    Some(memory(0.0, src.bytes()? + src.numel() * f64::from(to.size()), from, inputs))
}

/// `clone`, `contiguous`: read once, written once.
fn clone(a: &Args<'_>) -> Option<Work> {
    let src = a.tensor(0)?;
    Some(memory(0.0, 2.0 * src.bytes()?, src.dtype?, elements(src.numel())))
}

/// `cat`/`stack(tensors, dim)`: every listed element read and written.
/// Kineto records a tensor list's shapes but not its element type, so this
/// needs a dtype from a typed tensor argument, which these ops do not have:
/// they come out as shapes not recorded.
fn concat(a: &Args<'_>) -> Option<Work> {
    let (_, numel) = a.list(0)?;
    let dtype = a.dtype()?;
    Some(memory(0.0, 2.0 * numel * f64::from(dtype.size()), dtype, elements(numel)))
}

/// `index_select(self, dim, index)`: the selected slices read and written,
/// the indices read.
fn index_select(a: &Args<'_>) -> Option<Work> {
    let (src, index) = (a.tensor(0)?, a.tensor(2)?);
    let dtype = src.dtype?;
    let dim = match src.rank() {
        0 | 1 => 0,
        r => wrap_dim(a.conc_int(1)?, r)?,
    };
    let along = src.dim(dim);
    let out = if along == 0.0 { 0.0 } else { src.numel() / along * index.numel() };
    let bytes = index.bytes()? + 2.0 * out * f64::from(dtype.size());
    Some(memory(0.0, bytes, dtype, elements(out)))
}

fn wrap_dim(dim: i64, rank: usize) -> Option<usize> {
    let r = i64::try_from(rank).ok()?;
    let d = if dim < 0 { dim + r } else { dim };
    usize::try_from(d).ok().filter(|&d| d < rank)
}

/// `gather(self, dim, index)`: one element read per index, the output
/// (index-shaped) written, the indices read.
fn gather(a: &Args<'_>) -> Option<Work> {
    let (src, index) = (a.tensor(0)?, a.tensor(2)?);
    let dtype = src.dtype?;
    let out = index.numel();
    Some(memory(0.0, index.bytes()? + 2.0 * out * f64::from(dtype.size()), dtype, elements(out)))
}

/// `embedding(weight [V, D], indices)`: one row read and written per index.
fn embedding(a: &Args<'_>) -> Option<Work> {
    let (weight, indices) = (a.tensor(0)?, a.tensor(1)?);
    let dtype = weight.dtype?;
    let (_, d) = dims2(&weight)?;
    let out = indices.numel() * d;
    Some(memory(0.0, indices.bytes()? + 2.0 * out * f64::from(dtype.size()), dtype, elements(out)))
}

/// `embedding_dense_backward(grad_output [..., D], indices, num_weights,
/// …)`: gradient and indices read, the `[num_weights, D]` gradient written,
/// one add per gradient element.
fn embedding_backward(a: &Args<'_>) -> Option<Work> {
    let (grad, indices) = (a.tensor(0)?, a.tensor(1)?);
    let dtype = grad.dtype?;
    let d = *grad.dims.last()? as f64;
    let rows = a.conc_int(2).filter(|&n| n >= 0)? as f64;
    let bytes = grad.bytes()? + indices.bytes()? + rows * d * f64::from(dtype.size());
    Some(memory(grad.numel(), bytes, dtype, elements(grad.numel())))
}

// ---------------------------------------------------------------------------
// Normalisations and softmax
// ---------------------------------------------------------------------------

/// FLOPs per element of a forward normalisation.
fn norm_flops(name: &str) -> Option<f64> {
    Some(match name {
        "native_layer_norm"
        | "layer_norm"
        | "native_batch_norm"
        | "batch_norm"
        | "_batch_norm_impl_index"
        | "cudnn_batch_norm"
        | "miopen_batch_norm"
        | "_native_batch_norm_legit"
        | "_native_batch_norm_legit_no_training"
        | "_native_batch_norm_legit_functional"
        | "_batch_norm_with_update"
        | "_batch_norm_no_update"
        | "native_group_norm"
        | "group_norm"
        | "instance_norm" => 5.0,
        "rms_norm" | "_fused_rms_norm" => 4.0,
        _ => return None,
    })
}

/// Forward normalisation: every tensor argument read (input, weight, bias,
/// running statistics), the input-sized output written; the per-group
/// statistics it also writes (mean, rstd) are left out.
fn norm(a: &Args<'_>, flops: f64) -> Option<Work> {
    let x = a.tensor(0)?;
    let dtype = x.dtype?;
    let bytes = a.all_tensor_bytes(None)? + x.bytes()?;
    Some(memory(flops * x.numel(), bytes, dtype, elements(x.numel())))
}

#[derive(Debug, Clone, Copy)]
struct NormBwd {
    /// Position of the forward input (grad_input has its shape).
    input: u8,
    /// Position of the weight (grad_weight and grad_bias have its shape).
    weight: u8,
    /// Position of `bool[3] output_mask` (`bool[2]` without a bias);
    /// none: all are computed.
    mask: Option<u8>,
    /// Whether the op has a bias gradient (RMS norm has none).
    bias: bool,
}

fn norm_bwd(name: &str) -> Option<NormBwd> {
    let sig = |input, weight, mask| NormBwd { input, weight, mask, bias: true };
    Some(match name {
        // (grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask)
        "native_layer_norm_backward" => sig(1, 5, Some(7)),
        // (grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train, eps, output_mask)
        "native_batch_norm_backward" => sig(1, 2, Some(9)),
        // (grad_out, input, weight, running_mean, running_var, save_mean, save_var, update, eps, output_mask, reserve)
        "batch_norm_backward" => sig(1, 2, Some(9)),
        // (input, grad_output, weight, running_mean, running_var, save_mean, save_var, epsilon[, reserveSpace])
        "cudnn_batch_norm_backward" | "miopen_batch_norm_backward" => sig(0, 2, None),
        // (grad_out, input, mean, rstd, weight, N, C, HxW, group, output_mask)
        "native_group_norm_backward" => sig(1, 4, Some(9)),
        // (grad_out, input, normalized_shape, rstd, weight, output_mask[2])
        "_fused_rms_norm_backward" => NormBwd { bias: false, ..sig(1, 4, Some(5)) },
        _ => return None,
    })
}

/// Normalisation backward: every tensor argument read; grad_input (7 FLOPs
/// per element), grad_weight (2) and grad_bias (1) written as the mask asks.
fn norm_backward(a: &Args<'_>, sig: NormBwd) -> Option<Work> {
    let x = a.tensor(sig.input.into())?;
    let dtype = x.dtype?;
    let mut mask = [true, true, sig.bias, true];
    if let Some(at) = sig.mask {
        if a.conc_bools(at.into(), &mut mask)? != if sig.bias { 3 } else { 2 } {
            return None;
        }
    }
    let n = x.numel();
    let (mut flops, mut bytes) = (0.0, a.all_tensor_bytes(None)?);
    if mask[0] {
        flops += 7.0 * n;
        bytes += x.bytes()?;
    }
    for (wanted, per_element) in [(mask[1], 2.0), (mask[2], 1.0)] {
        if wanted {
            flops += per_element * n;
            bytes += a.tensor(sig.weight.into())?.bytes()?;
        }
    }
    Some(memory(flops, bytes, dtype, elements(n)))
}

#[derive(Debug, Clone, Copy)]
enum SoftmaxSig {
    /// `_softmax(self, dim, half_to_float)`: a float32 output on request.
    HalfToFloat,
    /// `softmax(self, dim, dtype)`.
    DtypeArg,
}

fn softmax_sig(name: &str) -> Option<SoftmaxSig> {
    match name {
        "_softmax" | "_log_softmax" => Some(SoftmaxSig::HalfToFloat),
        "softmax" | "log_softmax" => Some(SoftmaxSig::DtypeArg),
        _ => None,
    }
}

/// Softmax: 5 FLOPs per element (max, subtract, exp, sum, divide), input
/// read, output written.
fn softmax(a: &Args<'_>, sig: SoftmaxSig) -> Option<Work> {
    let x = a.tensor(0)?;
    let dtype = x.dtype?;
    let out = match sig {
        SoftmaxSig::DtypeArg => a.dtype_arg(2)?.unwrap_or(dtype),
        SoftmaxSig::HalfToFloat => match a.conc_bool(2) {
            Some(true) => Dtype::F32,
            Some(false) => dtype,
            // Unrecorded, it only matters for half-precision input.
            None => (!matches!(dtype, Dtype::F16 | Dtype::Bf16)).then_some(dtype)?,
        },
    };
    let n = x.numel();
    Some(memory(5.0 * n, x.bytes()? + n * f64::from(out.size()), dtype, elements(n)))
}

/// `_softmax_backward_data(grad_output, output, dim, input_dtype)`: 4 FLOPs
/// per element (product, sum, subtract, product), both read, grad_input
/// written in `input_dtype` (PyTorch ≤ 1.10 passed the input tensor there).
fn softmax_backward(a: &Args<'_>) -> Option<Work> {
    let grad = a.tensor(0)?;
    let dtype = grad.dtype?;
    let out = if a.tensor(3).is_some() { dtype } else { a.dtype_arg(3)?.unwrap_or(dtype) };
    let n = grad.numel();
    Some(memory(4.0 * n, a.all_tensor_bytes(None)? + n * f64::from(out.size()), dtype, elements(n)))
}

// ---------------------------------------------------------------------------
// Reductions
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
enum RedOut {
    Same,
    /// `sum`/`prod`: integers and bools accumulate in int64.
    Widened,
    Int64,
    Bool,
}

#[derive(Debug, Clone, Copy)]
struct Red {
    /// FLOPs per input element.
    flops: f64,
    /// Position of the `dim` argument.
    dim: u8,
    /// Calls with fewer entries are the overload without `dim` (reduce all).
    full_below: u8,
    /// Position of `dtype` in the full and the `dim` overload.
    dtype_full: Option<u8>,
    dtype_dim: Option<u8>,
    /// Outputs of the reduced shape (`var_mean`: 2).
    outputs: u8,
    out: RedOut,
}

fn reduction(name: &str) -> Option<Red> {
    let red = |flops, dim, full_below, dtype_full, dtype_dim, outputs, out| Red {
        flops,
        dim,
        full_below,
        dtype_full,
        dtype_dim,
        outputs,
        out,
    };
    Some(match name {
        // sum(self, dtype) | sum.dim_IntList(self, dim, keepdim, dtype)
        "sum" | "prod" => red(1.0, 1, 3, Some(1), Some(3), 1, RedOut::Widened),
        "mean" | "nansum" => red(1.0, 1, 3, Some(1), Some(3), 1, RedOut::Same),
        // amax(self, dim, keepdim)
        "amax" | "amin" => red(1.0, 1, 2, None, None, 1, RedOut::Same),
        "argmax" | "argmin" => red(1.0, 1, 2, None, None, 1, RedOut::Int64),
        "all" | "any" => red(1.0, 1, 2, None, None, 1, RedOut::Bool),
        "logsumexp" => red(3.0, 1, 2, None, None, 1, RedOut::Same),
        // norm(self, p[, dtype]) | norm(self, p, dim, keepdim[, dtype])
        "norm" => red(2.0, 2, 4, Some(2), Some(4), 1, RedOut::Same),
        // linalg_vector_norm(self, ord, dim, keepdim, dtype)
        "linalg_vector_norm" => red(2.0, 2, 3, None, Some(4), 1, RedOut::Same),
        // var(self, unbiased) | var(self, dim, correction, keepdim)
        "var" | "std" => red(3.0, 1, 3, None, None, 1, RedOut::Same),
        "var_mean" | "std_mean" => red(3.0, 1, 3, None, None, 2, RedOut::Same),
        _ => return None,
    })
}

/// Elements of a reduction's output; `None` when the reduced dims are not
/// recorded.
fn reduced_numel(a: &Args<'_>, red: Red) -> Option<f64> {
    let x = a.tensor(0)?;
    let at = usize::from(red.dim);
    if a.n_entries < usize::from(red.full_below) || x.rank() == 0 {
        return Some(1.0);
    }
    if !a.recorded(at) {
        return None;
    }
    let mut dims = [0i64; MAX_RANK];
    let n = match a.conc(at) {
        None => 0,
        Some(_) => a.conc_ints(at, &mut dims)?,
    };
    // No dim (`None`, `[]`): everything is reduced.
    if n == 0 {
        return Some(1.0);
    }
    let mut reduced = [false; MAX_RANK];
    for &d in &dims[..n] {
        reduced[wrap_dim(d, x.rank())?] = true;
    }
    Some(x.dims.iter().zip(reduced).filter(|(_, r)| !r).map(|(&d, _)| d as f64).product())
}

/// Reduction: input read, output(s) written.
fn reduce(a: &Args<'_>, red: Red) -> Option<Work> {
    let x = a.tensor(0)?;
    let dtype = x.dtype?;
    let out = reduced_numel(a, red)?;
    let full = a.n_entries < usize::from(red.full_below);
    let dtype_at = if full { red.dtype_full } else { red.dtype_dim };
    let given = match dtype_at {
        Some(at) => a.dtype_arg(at.into())?,
        None => None,
    };
    let out_dtype = given.unwrap_or(match red.out {
        RedOut::Same => dtype,
        RedOut::Widened if dtype.category() < 2 => Dtype::Int64,
        RedOut::Widened => dtype,
        RedOut::Int64 => Dtype::Int64,
        RedOut::Bool => Dtype::Bool,
    });
    let n = x.numel();
    let bytes = x.bytes()? + f64::from(red.outputs) * out * f64::from(out_dtype.size());
    Some(memory(red.flops * n, bytes, dtype, format!("{} → {}", elements(n), count(out))))
}

#[cfg(test)]
mod tests {
    //! Every case is a real `cpu_op` event's three shape arguments, copied
    //! from the public traces in `shared/traces/` (the source is named above
    //! each), unless its comment says it was written in the same format for
    //! a case no trace holds. Expected values are worked out here from the
    //! shapes.
    use super::*;
    use proptest::prelude::*;

    fn run(op: &str, dims: &str, types: &str, concrete: Option<&str>) -> Model {
        model(
            op,
            &OpShapes {
                dims: Some(dims.as_bytes()),
                types: Some(types.as_bytes()),
                concrete: concrete.map(str::as_bytes),
            },
        )
    }

    fn work(op: &str, dims: &str, types: &str, concrete: Option<&str>) -> Work {
        match run(op, dims, types, concrete) {
            Model::Work(w) => w,
            other => panic!("{op} {dims}: {other:?}"),
        }
    }

    fn close(got: f64, want: f64, what: &str) {
        assert!((got - want).abs() <= want.abs() * 1e-12, "{what}: got {got}, want {want}");
    }

    fn check(w: &Work, flops: f64, bytes: f64) {
        close(w.flops, flops, "flops");
        close(w.bytes, bytes, "bytes");
    }

    const BF16: f64 = 2.0;
    const F32: f64 = 4.0;
    const I64: f64 = 8.0;

    // --- Matrix multiplies -------------------------------------------------

    #[test]
    fn addmm_with_bias_counts_the_gemm_and_reads_the_bias() {
        // tracelens_h100_qwen_inference, Qwen1.5-0.5B: bias [N], mat1 [M, K], mat2 [K, N].
        let w = work(
            "aten::addmm",
            "[[1024], [8944, 1024], [1024, 1024], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"]"#,
            Some(r#"["", "", "", "1", "1"]"#),
        );
        let (m, n, k) = (8944.0, 1024.0, 1024.0);
        check(&w, 2.0 * m * n * k, (n + m * k + k * n + m * n) * BF16);
        assert_eq!(
            (w.dtype, w.matrix, w.inputs.as_str()),
            (Dtype::Bf16, true, "M=8944 N=1024 K=1024")
        );
    }

    #[test]
    fn mm_and_its_out_form() {
        // tracelens_h100_qwen_inference, Qwen1.5-0.5B.
        let w = work(
            "aten::mm",
            "[[8944, 1024], [1024, 2816]]",
            r#"["c10::BFloat16", "c10::BFloat16"]"#,
            Some(r#"["", ""]"#),
        );
        check(
            &w,
            2.0 * 8944.0 * 2816.0 * 1024.0,
            (8944.0 * 1024.0 + 1024.0 * 2816.0 + 8944.0 * 2816.0) * BF16,
        );
        assert_eq!(w.inputs, "M=8944 N=2816 K=1024");
        // tracelens_rocm_triton_compile: mm.out, the output tensor recorded third (written once).
        let w = work(
            "aten::mm",
            "[[32768, 2048], [2048, 8192], [32768, 8192]]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"]"#,
            Some(r#"["", "", ""]"#),
        );
        check(
            &w,
            2.0 * 32768.0 * 8192.0 * 2048.0,
            (32768.0 * 2048.0 + 2048.0 * 8192.0 + 32768.0 * 8192.0) * BF16,
        );
        // Inner dimensions that differ do not fit the formula.
        assert_eq!(
            run("aten::mm", "[[4, 8], [9, 16]]", r#"["float", "float"]"#, None),
            Model::NoShapes
        );
    }

    #[test]
    fn bmm() {
        // tracelens_h100_timesformer: [B, M, K] @ [B, K, N].
        let w = work(
            "aten::bmm",
            "[[37632, 8, 64], [37632, 64, 8]]",
            r#"["c10::BFloat16", "c10::BFloat16"]"#,
            Some(r#"["", ""]"#),
        );
        let (b, m, k, n) = (37632.0, 8.0, 64.0, 8.0);
        check(&w, 2.0 * b * m * n * k, (b * m * k + b * k * n + b * m * n) * BF16);
        assert_eq!(w.inputs, "B=37632 M=8 N=8 K=64");
    }

    #[test]
    fn baddbmm_reads_the_added_tensor() {
        // Written in the trace format (no trace here holds a baddbmm): self [B, M, N], batch1, batch2.
        let w = work(
            "aten::baddbmm",
            "[[12, 128, 128], [12, 128, 64], [12, 64, 128], [], []]",
            r#"["float", "float", "float", "Scalar", "Scalar"]"#,
            Some(r#"["", "", "", "0", "0.125"]"#),
        );
        let (b, m, k, n) = (12.0, 128.0, 64.0, 128.0);
        check(&w, 2.0 * b * m * n * k, (b * m * n + b * m * k + b * k * n + b * m * n) * F32);
    }

    #[test]
    fn matmul_broadcasts_batch_dims() {
        // hta_trace_diff_a100_2022 (no Concrete Inputs): [1024, 96, 50] @ [50, 15], the
        // 2-D right operand broadcast over the batch.
        let w = work("aten::matmul", "[[1024, 96, 50], [50, 15]]", r#"["float", "float"]"#, None);
        let (b, m, k, n) = (1024.0, 96.0, 50.0, 15.0);
        check(&w, 2.0 * b * m * n * k, (b * m * k + k * n + b * m * n) * F32);
        assert_eq!(w.inputs, "B=1024 M=96 N=15 K=50");
        // tracelens_h100_timesformer: 4-D, batch 3136·12.
        let w = work(
            "aten::matmul",
            "[[3136, 12, 8, 64], [3136, 12, 64, 8]]",
            r#"["c10::BFloat16", "c10::BFloat16"]"#,
            Some(r#"["", ""]"#),
        );
        let b = 3136.0 * 12.0;
        check(&w, 2.0 * b * 8.0 * 8.0 * 64.0, (b * 8.0 * 64.0 * 2.0 + b * 8.0 * 8.0) * BF16);
        // Written in the format: a 1-D right operand is a column, [5, 1, 4, 3] @ [3] → [5, 1, 4].
        let w = work("aten::matmul", "[[5, 1, 4, 3], [3]]", r#"["float", "float"]"#, None);
        check(&w, 2.0 * 5.0 * 4.0 * 3.0, (5.0 * 4.0 * 3.0 + 3.0 + 5.0 * 4.0) * F32);
        // Batch dims [2] and [3] do not broadcast.
        assert_eq!(
            run("aten::matmul", "[[2, 4, 3], [3, 3, 5]]", r#"["float", "float"]"#, None),
            Model::NoShapes
        );
    }

    #[test]
    fn linear_takes_every_leading_dim_as_m() {
        // tracelens_h100_qwen_inference, Qwen1.5-0.5B: input [16, 559, 1024], weight [N, K], bias [N].
        let w = work(
            "aten::linear",
            "[[16, 559, 1024], [1024, 1024], [1024]]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"]"#,
            Some(r#"["", "", ""]"#),
        );
        let (m, n, k) = (16.0 * 559.0, 1024.0, 1024.0);
        check(&w, 2.0 * m * n * k, (m * k + n * k + n + m * n) * BF16);
        assert_eq!(w.inputs, "M=8944 N=1024 K=1024");
    }

    #[test]
    fn a_tensor_whose_type_was_not_written_takes_the_matrix_ops_dtype() {
        // Written in the 2021–22 format, one type blank.
        let w = work("aten::mm", "[[4, 8], [8, 16]]", r#"["float", ""]"#, None);
        check(&w, 2.0 * 4.0 * 16.0 * 8.0, (4.0 * 8.0 + 8.0 * 16.0 + 4.0 * 16.0) * F32);
    }

    // --- Convolutions ------------------------------------------------------

    /// tracelens_h100_timesformer's patch embedding: 3 → 768 channels, 16×16
    /// kernel at stride 16 on 224×224: a 14×14 output.
    fn timesformer_conv() -> (f64, f64) {
        let (n, cin, cout, out, k) = (128.0, 3.0, 768.0, 14.0 * 14.0, 16.0 * 16.0);
        let flops = 2.0 * n * cout * out * cin * k;
        let bytes = (n * cin * 224.0 * 224.0 + cout * cin * k + n * cout * out) * BF16;
        (flops, bytes)
    }

    #[test]
    fn conv2d_and_the_ops_under_it_from_concrete_inputs() {
        let (flops, bytes) = timesformer_conv();
        let bias = 768.0 * BF16;
        // tracelens_h100_timesformer: conv2d(input, weight, bias, stride, padding, dilation, groups).
        let w = work(
            "aten::conv2d",
            "[[128, 3, 224, 224], [768, 3, 16, 16], [768], [], [], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "ScalarList", "ScalarList", "ScalarList", "Scalar"]"#,
            Some(r#"["", "", "", "[16, 16]", "[0, 0]", "[1, 1]", "1"]"#),
        );
        check(&w, flops, bytes + bias);
        assert_eq!(w.inputs, "N=128 Cin=3 Cout=768 out=14x14 k=16x16 groups=1 stride=16");
        assert!(w.matrix);
        // The same call's aten::convolution (transposed, output_padding, groups after dilation).
        let w = work(
            "aten::convolution",
            "[[128, 3, 224, 224], [768, 3, 16, 16], [768], [], [], [], [], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"]"#,
            Some(r#"["", "", "", "[16, 16]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1"]"#),
        );
        check(&w, flops, bytes + bias);
        // Its aten::cudnn_convolution: no bias, padding before stride.
        let w = work(
            "aten::cudnn_convolution",
            "[[128, 3, 224, 224], [768, 3, 16, 16], [], [], [], [], [], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "ScalarList", "ScalarList", "ScalarList", "Scalar", "Scalar", "Scalar", "Scalar"]"#,
            Some(r#"["", "", "[0, 0]", "[16, 16]", "[1, 1]", "1", "False", "False", "True"]"#),
        );
        check(&w, flops, bytes);
        // tracelens_mi300_inference, the same model on MI300X: aten::miopen_convolution
        // (bias, then padding before stride).
        let w = work(
            "aten::miopen_convolution",
            "[[128, 3, 224, 224], [768, 3, 16, 16], [768], [], [], [], [], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "ScalarList", "ScalarList", "ScalarList", "Scalar", "Scalar", "Scalar"]"#,
            Some(r#"["", "", "", "[0, 0]", "[16, 16]", "[1, 1]", "1", "False", "False"]"#),
        );
        check(&w, flops, bytes + bias);
    }

    #[test]
    fn depthwise_conv_with_stride_and_padding() {
        // Written in the format of the timesformer conv2d (no trace here has groups > 1): a
        // YOLO/MobileNet depthwise 3×3 at stride 2, padding 1: out = ⌊(56 + 2 − 2 − 1) / 2⌋ + 1 = 28.
        let w = work(
            "aten::conv2d",
            "[[16, 64, 56, 56], [64, 1, 3, 3], [], [], [], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "", "ScalarList", "ScalarList", "ScalarList", "Scalar"]"#,
            Some(r#"["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "64"]"#),
        );
        let (n, c, out, k) = (16.0, 64.0, 28.0 * 28.0, 9.0);
        check(
            &w,
            2.0 * n * c * out * (c / 64.0) * k,
            (n * c * 56.0 * 56.0 + c * k + n * c * out) * BF16,
        );
        assert_eq!(w.inputs, "N=16 Cin=64 Cout=64 out=28x28 k=3x3 groups=64 stride=2");
        // Groups that do not divide the input channels as the weight says: not a fit.
        let bad = run(
            "aten::conv2d",
            "[[16, 64, 56, 56], [64, 16, 3, 3], [], [], [], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "", "ScalarList", "ScalarList", "ScalarList", "Scalar"]"#,
            Some(r#"["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "2"]"#),
        );
        assert_eq!(bad, Model::NoShapes);
    }

    #[test]
    fn transposed_convolution_counts_over_the_input() {
        // Written in the aten::convolution format: a 2× upsampling, weight [Cin, Cout/groups, 2, 2]:
        // out = (14 − 1)·2 − 0 + (2 − 1) + 0 + 1 = 28.
        let w = work(
            "aten::convolution",
            "[[1, 64, 14, 14], [64, 32, 2, 2], [], [], [], [], [], [], []]",
            r#"["float", "float", "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"]"#,
            Some(r#"["", "", "", "[2, 2]", "[0, 0]", "[1, 1]", "True", "[0, 0]", "1"]"#),
        );
        let (cin, cout, k) = (64.0, 32.0, 4.0);
        check(
            &w,
            2.0 * cin * 14.0 * 14.0 * cout * k,
            (cin * 14.0 * 14.0 + cin * cout * k + cout * 28.0 * 28.0) * F32,
        );
        assert!(w.inputs.ends_with("transposed"), "{}", w.inputs);
    }

    #[test]
    fn convolution_without_concrete_inputs_is_not_guessed() {
        // kineto_resnet50_v100_2021jun: stride and padding not recorded.
        let m = run(
            "aten::conv2d",
            "[[32, 64, 56, 56], [64, 64, 3, 3], [], [], [], [], []]",
            r#"["float", "float", "", "GenericList", "GenericList", "GenericList", "Int"]"#,
            None,
        );
        assert_eq!(m, Model::NoShapes);
    }

    /// ResNet-50's first layer as kineto_resnet50_v100_2021jun records it
    /// (input [32, 3, 224, 224], grad_output [32, 64, 112, 112], weight
    /// [64, 3, 7, 7]), written as aten::convolution_backward with Concrete
    /// Inputs: no trace here records that op with them.
    fn resnet_conv_backward(mask: &str) -> Model {
        let concrete = format!(
            r#"["", "", "", "", "[2, 2]", "[3, 3]", "[1, 1]", "False", "[0, 0]", "1", "{mask}"]"#
        );
        run(
            "aten::convolution_backward",
            "[[32, 64, 112, 112], [32, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], [], [], [], []]",
            r#"["float", "float", "float", "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar", "ScalarList"]"#,
            Some(&concrete),
        )
    }

    #[test]
    fn convolution_backward_counts_what_the_output_mask_asks() {
        let (go, x, wt) =
            (32.0 * 64.0 * 112.0 * 112.0, 32.0 * 3.0 * 224.0 * 224.0, 64.0 * 3.0 * 49.0);
        let forward = 2.0 * 32.0 * 64.0 * 112.0 * 112.0 * 3.0 * 49.0;
        // The first layer: no grad_input. grad_weight reads grad_output and input, writes the weight's grad.
        let Model::Work(w) = resnet_conv_backward("[False, True, False]") else { panic!() };
        check(&w, forward, (go + x + wt) * F32);
        assert!(w.inputs.ends_with("grad=weight"), "{}", w.inputs);
        // Both: grad_input also reads the weight and writes an input-sized gradient.
        let Model::Work(w) = resnet_conv_backward("[True, True, False]") else { panic!() };
        check(&w, 2.0 * forward, (go + wt + x + x + wt) * F32);
        // grad_bias: one add per grad_output element, Cout written.
        let Model::Work(w) = resnet_conv_backward("[False, False, True]") else { panic!() };
        check(&w, go, (go + 64.0) * F32);
        assert_eq!(resnet_conv_backward("[True, True]"), Model::NoShapes);
    }

    // --- Attention ---------------------------------------------------------

    const QWEN_SDPA_DIMS: &str =
        "[[16, 16, 559, 64], [16, 16, 559, 64], [16, 16, 559, 64], [], [], [], [], []]";
    const QWEN_SDPA_TYPES: &str = r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "", "Scalar", "Scalar", "Scalar", "Scalar"]"#;

    #[test]
    fn sdpa_causal_counts_the_kept_triangle() {
        // tracelens_h100_qwen_inference, Qwen1.5-0.5B: is_causal=True (6th argument).
        let w = work(
            "aten::scaled_dot_product_attention",
            QWEN_SDPA_DIMS,
            QWEN_SDPA_TYPES,
            Some(r#"["", "", "", "", "0.", "True", "0.125", "False"]"#),
        );
        let (b, h, l, d) = (16.0, 16.0, 559.0, 64.0);
        let pairs = l * (l + 1.0) / 2.0;
        check(&w, 2.0 * b * h * pairs * d * 2.0, 4.0 * b * h * l * d * BF16);
        assert_eq!(w.inputs, "B=16 H=16 Lq=559 Lk=559 D=64 causal");
        // The same call's aten::_scaled_dot_product_flash_attention (is_causal 5th).
        let w = work(
            "aten::_scaled_dot_product_flash_attention",
            "[[16, 16, 559, 64], [16, 16, 559, 64], [16, 16, 559, 64], [], [], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar", "Scalar", "Scalar"]"#,
            Some(r#"["", "", "", "0.", "True", "False", "0.125"]"#),
        );
        check(&w, 4.0 * b * h * pairs * d, 4.0 * b * h * l * d * BF16);
    }

    #[test]
    fn sdpa_without_mask_counts_every_pair() {
        // tracelens_h100_qwen_inference, BERT small: is_causal=False.
        let w = work(
            "aten::scaled_dot_product_attention",
            "[[1, 8, 141, 64], [1, 8, 141, 64], [1, 8, 141, 64], [], [], [], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "", "Scalar", "Scalar", "", "Scalar"]"#,
            Some(r#"["", "", "", "", "0.", "False", "", "False"]"#),
        );
        let (b, h, l, d) = (1.0, 8.0, 141.0, 64.0);
        check(&w, 4.0 * b * h * l * l * d, 4.0 * b * h * l * d * BF16);
        assert_eq!(w.inputs, "B=1 H=8 Lq=141 Lk=141 D=64");
        // Without Concrete Inputs the mask is unknown: not guessed.
        assert_eq!(
            run("aten::scaled_dot_product_attention", QWEN_SDPA_DIMS, QWEN_SDPA_TYPES, None),
            Model::NoShapes
        );
    }

    #[test]
    fn flash_attention_forward_reads_the_blhd_layout() {
        // tracelens_h100_qwen_inference, Qwen1.5-0.5B: [B, L, H, D], is_causal the 9th argument.
        let w = work(
            "aten::_flash_attention_forward",
            "[[16, 559, 16, 64], [16, 559, 16, 64], [16, 559, 16, 64], [], [], [], [], [], [], [], [], [], [], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "", "", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "", "", "", ""]"#,
            Some(
                r#"["", "", "", "", "", "559", "559", "0.", "True", "False", "0.125", "", "", "", ""]"#,
            ),
        );
        let (b, h, l, d) = (16.0, 16.0, 559.0, 64.0);
        check(&w, 4.0 * b * h * (l * (l + 1.0) / 2.0) * d, 4.0 * b * l * h * d * BF16);
        assert_eq!(w.inputs, "B=16 H=16 Lq=559 Lk=559 D=64 causal");
        // tracelens_rocm_triton_compile: [8, 4096, 16, 128], not causal.
        let w = work(
            "aten::_flash_attention_forward",
            "[[8, 4096, 16, 128], [8, 4096, 16, 128], [8, 4096, 16, 128], [], [], [], [], [], [], [], [], [], [], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "", "", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "", "", "", ""]"#,
            Some(
                r#"["", "", "", "", "", "4096", "4096", "0.", "False", "False", "0.088388347648318433", "", "", "", ""]"#,
            ),
        );
        let (b, h, l, d) = (8.0, 16.0, 4096.0, 128.0);
        check(&w, 4.0 * b * h * l * l * d, 4.0 * b * l * h * d * BF16);
        assert_eq!(w.inputs, "B=8 H=16 Lq=4096 Lk=4096 D=128");
        // Packed variable-length sequences ([total, H, D]): the lengths are not recorded.
        let varlen = run(
            "aten::_flash_attention_forward",
            "[[1000, 16, 64], [1000, 16, 64], [1000, 16, 64], [9], [9], [], [], [], [], [], [], [], [], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "int", "int", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "", "", "", ""]"#,
            Some(
                r#"["", "", "", "", "", "200", "200", "0.", "True", "False", "0.125", "", "", "", ""]"#,
            ),
        );
        assert_eq!(varlen, Model::NoShapes);
    }

    #[test]
    fn sdpa_backward_is_five_matmuls() {
        // Written in the trace format from the Qwen call above (the traces here are inference):
        // _scaled_dot_product_flash_attention_backward(grad_out, query, key, value, out, logsumexp,
        // cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, philox_seed, philox_offset, scale).
        let w = work(
            "aten::_scaled_dot_product_flash_attention_backward",
            "[[16, 16, 559, 64], [16, 16, 559, 64], [16, 16, 559, 64], [16, 16, 559, 64], [16, 16, 559, 64], [16, 16, 559], [], [], [], [], [], [], [], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "float", "", "", "Scalar", "Scalar", "Scalar", "Scalar", "long int", "long int", "Scalar"]"#,
            Some(
                r#"["", "", "", "", "", "", "", "", "559", "559", "0.", "True", "", "", "0.125"]"#,
            ),
        );
        let (b, h, l, d) = (16.0, 16.0, 559.0, 64.0);
        let forward = 4.0 * b * h * (l * (l + 1.0) / 2.0) * d;
        let t = b * h * l * d;
        // Read dO, Q, K, V, O, logsumexp (f32) and the two int64 philox scalars; write dQ, dK, dV.
        check(&w, 2.5 * forward, 5.0 * t * BF16 + b * h * l * F32 + 2.0 * I64 + 3.0 * t * BF16);
    }

    #[test]
    fn grouped_query_attention_counts_the_query_heads() {
        // Written in the sdpa format: 16 query heads over 2 key/value heads (enable_gqa=True).
        let w = work(
            "aten::scaled_dot_product_attention",
            "[[1, 16, 128, 64], [1, 2, 128, 64], [1, 2, 128, 64], [], [], [], [], []]",
            QWEN_SDPA_TYPES,
            Some(r#"["", "", "", "", "0.", "False", "", "True"]"#),
        );
        check(
            &w,
            4.0 * 16.0 * 128.0 * 128.0 * 64.0,
            (2.0 * 16.0 * 128.0 * 64.0 + 2.0 * 2.0 * 128.0 * 64.0) * BF16,
        );
        assert!(w.inputs.contains("Hkv=2"), "{}", w.inputs);
    }

    #[test]
    fn causal_pairs_match_a_count_of_the_mask() {
        for (lq, lk) in [(1, 1), (4, 10), (10, 4), (559, 559), (7, 1)] {
            let count = |keep: &dyn Fn(i64, i64) -> bool| {
                (0..lq)
                    .flat_map(|i| (0..lk).map(move |j| (i, j)))
                    .filter(|&(i, j)| keep(i, j))
                    .count() as f64
            };
            let top_left = count(&|i, j| j <= i);
            let bottom_right = count(&|i, j| j <= i + lk - lq);
            let (q, k) = (lq as f64, lk as f64);
            assert_eq!(attended_pairs(q, k, Some(Align::TopLeft)), top_left, "top-left {lq}x{lk}");
            assert_eq!(
                attended_pairs(q, k, Some(Align::BottomRight)),
                bottom_right,
                "bottom-right {lq}x{lk}"
            );
            assert_eq!(attended_pairs(q, k, None), q * k);
        }
    }

    // --- Memory-bound ops --------------------------------------------------

    #[test]
    fn elementwise_broadcasts_and_ignores_scalars() {
        // tracelens_h100_timesformer: [128, 197, 768] + [1, 197, 768] (the position embedding), alpha a Scalar.
        let w = work(
            "aten::add",
            "[[128, 197, 768], [1, 197, 768], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "Scalar"]"#,
            Some(r#"["", "", "1"]"#),
        );
        let n = 128.0 * 197.0 * 768.0;
        check(&w, n, (n + 197.0 * 768.0 + n) * BF16);
        assert_eq!((w.matrix, w.inputs.as_str()), (false, "19.4M elements"));
        // tracelens_h100_timesformer: a 0-dim double tensor (a wrapped Python float) does not
        // promote the bf16 output; it is read once, 8 bytes.
        let w = work(
            "aten::mul",
            "[[3136, 12, 8, 8], []]",
            r#"["c10::BFloat16", "double"]"#,
            Some(r#"["", ""]"#),
        );
        let n = 3136.0 * 12.0 * 64.0;
        check(&w, n, n * BF16 + 8.0 + n * BF16);
        // kineto_resnet50_v100_2021jun: float / a 0-dim int64 tensor.
        let w = work("aten::div", "[[3, 224, 224], []]", r#"["float", "long int"]"#, None);
        let n = 3.0 * 224.0 * 224.0;
        check(&w, n, n * F32 + I64 + n * F32);
        // tracelens_h100_qwen_inference: a comparison writes bool.
        let w =
            work("aten::eq", "[[16, 559], []]", r#"["long int", "Scalar"]"#, Some(r#"["", "1"]"#));
        check(&w, 16.0 * 559.0, 16.0 * 559.0 * (I64 + 1.0));
        // hta_trace_diff_a100_2022: where(condition, self, other) selects, computes nothing.
        let w =
            work("aten::where", "[[1024], [1024], [1024]]", r#"["bool", "long", "long"]"#, None);
        check(&w, 0.0, 1024.0 * (1.0 + I64 + I64) + 1024.0 * I64);
        // tracelens_h100_timesformer: gelu(self, approximate).
        let w = work(
            "aten::gelu",
            "[[1, 25089, 3072], []]",
            r#"["c10::BFloat16", ""]"#,
            Some(r#"["", ""]"#),
        );
        check(&w, 25089.0 * 3072.0, 2.0 * 25089.0 * 3072.0 * BF16);
        // Shapes that do not broadcast.
        assert_eq!(
            run("aten::add", "[[3, 4], [5, 4], []]", r#"["float", "float", "Scalar"]"#, None),
            Model::NoShapes
        );
    }

    #[test]
    fn in_place_and_out_forms_write_their_tensor() {
        // tracelens_h100_timesformer: add_ of a [1, 768, 1, 1] bias into [128, 768, 14, 14]:
        // self read and written back.
        let w = work(
            "aten::add_",
            "[[128, 768, 14, 14], [1, 768, 1, 1], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "Scalar"]"#,
            Some(r#"["", "", "1"]"#),
        );
        let n = 128.0 * 768.0 * 14.0 * 14.0;
        check(&w, n, (n + 768.0) * BF16 + n * BF16);
        // kineto_resnet50_v100_2021jun: clamp_min.out(self, min, out), the output recorded third.
        let w = work(
            "aten::clamp_min",
            "[[32, 64, 112, 112], [], [32, 64, 112, 112]]",
            r#"["float", "Int", "float"]"#,
            None,
        );
        let n = 32.0 * 64.0 * 112.0 * 112.0;
        check(&w, n, 2.0 * n * F32);
        // hta_amd_mi250_rocm62: fill_ and zero_ write without reading.
        let w =
            work("aten::fill_", "[[5, 128], []]", r#"["float", "Scalar"]"#, Some(r#"["", "0"]"#));
        check(&w, 0.0, 5.0 * 128.0 * F32);
        let w = work("aten::zero_", "[[5, 128]]", r#"["float"]"#, Some(r#"[""]"#));
        check(&w, 0.0, 5.0 * 128.0 * F32);
        // kineto_resnet50_v100_2021jun: threshold_backward(grad_output, self, threshold).
        let w = work(
            "aten::threshold_backward",
            "[[32, 2048, 7, 7], [32, 2048, 7, 7], []]",
            r#"["float", "float", "Int"]"#,
            None,
        );
        let n = 32.0 * 2048.0 * 49.0;
        check(&w, n, 3.0 * n * F32);
    }

    #[test]
    fn copies_read_and_write_each_side_at_its_dtype() {
        // tracelens_h100_timesformer: copy_(dst bf16, src float).
        let w = work(
            "aten::copy_",
            "[[1, 128, 3, 224, 224], [1, 128, 3, 224, 224], []]",
            r#"["c10::BFloat16", "float", "Scalar"]"#,
            Some(r#"["", "", "False"]"#),
        );
        let n = 128.0 * 3.0 * 224.0 * 224.0;
        check(&w, 0.0, n * F32 + n * BF16);
        assert_eq!((w.dtype, w.inputs.as_str()), (Dtype::Bf16, "19.3M elements f32→bf16"));
        // tracelens_h100_timesformer: _to_copy(self, dtype=15 (bfloat16), …).
        let w = work(
            "aten::_to_copy",
            "[[1, 128, 3, 224, 224], [], [], [], [], [], []]",
            r#"["float", "Scalar", "", "", "", "Scalar", ""]"#,
            Some(r#"["", "15", "", "", "", "False", ""]"#),
        );
        check(&w, 0.0, n * F32 + n * BF16);
        // tracelens_h100_qwen_inference: clone.
        let w = work(
            "aten::clone",
            "[[16, 16, 559, 64], []]",
            r#"["c10::BFloat16", "Scalar"]"#,
            Some(r#"["", "0"]"#),
        );
        check(&w, 0.0, 2.0 * 16.0 * 16.0 * 559.0 * 64.0 * BF16);
    }

    #[test]
    fn gathers_read_what_they_select() {
        // tracelens_h100_qwen_inference: embedding(weight [151936, 1024], indices [16, 559]).
        let w = work(
            "aten::embedding",
            "[[151936, 1024], [16, 559], [], [], []]",
            r#"["c10::BFloat16", "long int", "Scalar", "Scalar", "Scalar"]"#,
            Some(r#"["", "", "-1", "False", "False"]"#),
        );
        let tokens = 16.0 * 559.0;
        check(&w, 0.0, tokens * I64 + 2.0 * tokens * 1024.0 * BF16);
        // tracelens_h100_qwen_inference: index_select(self, dim=0, index [8944]).
        let w = work(
            "aten::index_select",
            "[[151936, 1024], [], [8944]]",
            r#"["c10::BFloat16", "Scalar", "long int"]"#,
            Some(r#"["", "0", ""]"#),
        );
        check(&w, 0.0, 8944.0 * I64 + 2.0 * 8944.0 * 1024.0 * BF16);
        // hta_trace_diff_a100_2022: gather(self [50], dim, index [61072]): index-shaped output.
        let w = work(
            "aten::gather",
            "[[50], [], [61072], []]",
            r#"["float", "Scalar", "long", "Scalar"]"#,
            None,
        );
        check(&w, 0.0, 61072.0 * I64 + 2.0 * 61072.0 * F32);
    }

    #[test]
    fn tensor_lists_have_no_recorded_element_type() {
        // tracelens_h100_qwen_inference: cat of two [1, 559, 32] (the rotary halves): shapes
        // recorded, element type not.
        let dims = "[[[1, 559, 32], [1, 559, 32]], []]";
        let args = Args::parse(&OpShapes {
            dims: Some(dims.as_bytes()),
            types: Some(br#"["TensorList", "Scalar"]"#),
            concrete: None,
        })
        .unwrap();
        assert_eq!(args.list(0), Some((2, 2.0 * 559.0 * 32.0)));
        assert_eq!(
            run("aten::cat", dims, r#"["TensorList", "Scalar"]"#, Some(r#"["", "-1"]"#)),
            Model::NoShapes
        );
        // hta_amd_mi250_rocm62: the optimiser's _foreach_add_ is not modelled.
        let m = run(
            "aten::_foreach_add_",
            "[[[128, 128], [128]], [[128, 128], [128]], []]",
            r#"["TensorList", "TensorList", "Scalar"]"#,
            Some(r#"["", "", "-0.001"]"#),
        );
        assert_eq!(m, Model::Unmodelled);
    }

    #[test]
    fn normalisations() {
        // tracelens_h100_timesformer: native_layer_norm(input, normalized_shape, weight, bias, eps).
        let w = work(
            "aten::native_layer_norm",
            "[[3136, 8, 768], [], [768], [768], []]",
            r#"["c10::BFloat16", "ScalarList", "c10::BFloat16", "c10::BFloat16", "Scalar"]"#,
            Some(r#"["", "[768]", "", "", "9.9999999999999995e-07"]"#),
        );
        let n = 3136.0 * 8.0 * 768.0;
        check(&w, 5.0 * n, (n + 768.0 + 768.0) * BF16 + n * BF16);
        // hta_trace_diff_a100_2022: layer_norm without Concrete Inputs needs none.
        let w = work(
            "aten::layer_norm",
            "[[1024, 512], [], [512], [512], [], []]",
            r#"["float", "", "float", "float", "Scalar", "Scalar"]"#,
            None,
        );
        let n = 1024.0 * 512.0;
        check(&w, 5.0 * n, (n + 512.0 + 512.0) * F32 + n * F32);
        // kineto_resnet50_v100_2021jun: cudnn_batch_norm reads input, weight, bias and the running stats.
        let w = work(
            "aten::cudnn_batch_norm",
            "[[32, 64, 112, 112], [64], [64], [64], [64], [], [], []]",
            r#"["float", "float", "float", "float", "float", "Bool", "Double", "Double"]"#,
            None,
        );
        let n = 32.0 * 64.0 * 112.0 * 112.0;
        check(&w, 5.0 * n, (n + 4.0 * 64.0) * F32 + n * F32);
        // kineto_resnet50_v100_2021jun: cudnn_batch_norm_backward(input, grad_output, weight,
        // running_mean, running_var, save_mean, save_var, epsilon, reserveSpace): all three grads.
        let w = work(
            "aten::cudnn_batch_norm_backward",
            "[[32, 64, 112, 112], [32, 64, 112, 112], [64], [64], [64], [64], [64], [], [0]]",
            r#"["float", "float", "float", "float", "float", "float", "float", "Double", "unsigned char"]"#,
            None,
        );
        check(&w, (7.0 + 2.0 + 1.0) * n, (2.0 * n + 5.0 * 64.0) * F32 + (n + 64.0 + 64.0) * F32);
    }

    #[test]
    fn group_norm_and_rms_norm_backward_are_priced() {
        // GroupNorm as PyTorch 2.x records it: group_norm(input, num_groups,
        // weight, bias, eps, cudnn_enabled) → native_group_norm(input,
        // weight, bias, N, C, HxW, group, eps).
        let n = 8.0 * 64.0 * 32.0 * 32.0;
        let w = work(
            "aten::group_norm",
            "[[8, 64, 32, 32], [], [64], [64], [], []]",
            r#"["float", "Scalar", "float", "float", "Scalar", "Scalar"]"#,
            Some(r#"["", "32", "", "", "1.0000000000000001e-05", "True"]"#),
        );
        check(&w, 5.0 * n, (n + 64.0 + 64.0) * F32 + n * F32);
        let w = work(
            "aten::native_group_norm",
            "[[8, 64, 32, 32], [64], [64], [], [], [], [], []]",
            r#"["float", "float", "float", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar"]"#,
            Some(r#"["", "", "", "8", "64", "1024", "32", "1.0000000000000001e-05"]"#),
        );
        check(&w, 5.0 * n, (n + 64.0 + 64.0) * F32 + n * F32);
        // native_group_norm_backward(grad_out, input, mean [N, G], rstd [N, G],
        // weight, N, C, HxW, group, output_mask): all three gradients.
        let w = work(
            "aten::native_group_norm_backward",
            "[[8, 64, 32, 32], [8, 64, 32, 32], [8, 32], [8, 32], [64], [], [], [], [], []]",
            r#"["float", "float", "float", "float", "float", "Scalar", "Scalar", "Scalar", "Scalar", "GenericList"]"#,
            Some(r#"["", "", "", "", "", "8", "64", "1024", "32", "[True, True, True]"]"#),
        );
        let read = (2.0 * n + 2.0 * 8.0 * 32.0 + 64.0) * F32;
        check(&w, (7.0 + 2.0 + 1.0) * n, read + (n + 64.0 + 64.0) * F32);
        // _fused_rms_norm_backward(grad_out, input, normalized_shape, rstd,
        // weight, output_mask[2]): grad_input and grad_weight, no bias.
        let rows = 4.0 * 2048.0;
        let n = rows * 4096.0;
        let w = work(
            "aten::_fused_rms_norm_backward",
            "[[4, 2048, 4096], [4, 2048, 4096], [], [4, 2048, 1], [4096], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "ScalarList", "float", "c10::BFloat16", "GenericList"]"#,
            Some(r#"["", "", "[4096]", "", "", "[True, True]"]"#),
        );
        let read = 2.0 * n * BF16 + rows * F32 + 4096.0 * BF16;
        check(&w, (7.0 + 2.0) * n, read + (n + 4096.0) * BF16);
    }

    #[test]
    fn layer_norm_backward_follows_its_output_mask() {
        // hta_trace_diff_a100_2022: output_mask not recorded.
        let dims = "[[1024, 512], [1024, 512], [], [1024, 1], [1024, 1], [512], [512], []]";
        let types = r#"["float", "float", "", "float", "float", "float", "float", ""]"#;
        assert_eq!(run("aten::native_layer_norm_backward", dims, types, None), Model::NoShapes);
        // The same, written with the Concrete Inputs a current trace records.
        let w = work(
            "aten::native_layer_norm_backward",
            dims,
            types,
            Some(r#"["", "", "[512]", "", "", "", "", "[True, True, False]"]"#),
        );
        let n = 1024.0 * 512.0;
        let read = (2.0 * n + 2.0 * 1024.0 + 2.0 * 512.0) * F32;
        check(&w, (7.0 + 2.0) * n, read + (n + 512.0) * F32);
    }

    #[test]
    fn softmax_and_its_backward() {
        // tracelens_h100_timesformer: _softmax(self, dim=-1, half_to_float=False).
        let w = work(
            "aten::_softmax",
            "[[3136, 12, 8, 8], [], []]",
            r#"["c10::BFloat16", "Scalar", "Scalar"]"#,
            Some(r#"["", "-1", "False"]"#),
        );
        let n = 3136.0 * 12.0 * 64.0;
        check(&w, 5.0 * n, 2.0 * n * BF16);
        // Written in the same format: half_to_float=True writes float32.
        let w = work(
            "aten::_softmax",
            "[[3136, 12, 8, 8], [], []]",
            r#"["c10::BFloat16", "Scalar", "Scalar"]"#,
            Some(r#"["", "-1", "True"]"#),
        );
        check(&w, 5.0 * n, n * BF16 + n * F32);
        // kineto_resnet50_v100_2021jun: the 1.9 form passes the input tensor last.
        let w = work(
            "aten::_log_softmax_backward_data",
            "[[32, 1000], [32, 1000], [], [32, 1000]]",
            r#"["float", "float", "Int", "float"]"#,
            None,
        );
        let n = 32.0 * 1000.0;
        check(&w, 4.0 * n, 3.0 * n * F32 + n * F32);
    }

    #[test]
    fn reductions_write_the_reduced_shape() {
        // tracelens_h100_qwen_inference: mean(self [16, 559, 1024], dim=[-1], keepdim=True) (RMSNorm).
        let w = work(
            "aten::mean",
            "[[16, 559, 1024], [], [], []]",
            r#"["float", "ScalarList", "Scalar", ""]"#,
            Some(r#"["", "[-1]", "True", ""]"#),
        );
        let (n, out) = (16.0 * 559.0 * 1024.0, 16.0 * 559.0);
        check(&w, n, (n + out) * F32);
        assert_eq!(w.inputs, "9.16M elements → 8.94K");
        // hta_amd_mi250_rocm62: sum(self [5, 128], dim=[0]).
        let w = work(
            "aten::sum",
            "[[5, 128], [], [], []]",
            r#"["float", "ScalarList", "Scalar", ""]"#,
            Some(r#"["", "[0]", "True", ""]"#),
        );
        check(&w, 640.0, (640.0 + 128.0) * F32);
        // hta_trace_diff_a100_2022: the reduced dims are not recorded.
        assert_eq!(
            run("aten::sum", "[[1024, 40], [], [], []]", r#"["float", "", "Scalar", ""]"#, None),
            Model::NoShapes
        );
        // Written in the format: max.dim also writes int64 indices; a full sum of bools widens to int64.
        let w = work(
            "aten::max",
            "[[8, 100], [], []]",
            r#"["float", "Scalar", "Scalar"]"#,
            Some(r#"["", "1", "False"]"#),
        );
        check(&w, 800.0, 800.0 * F32 + 8.0 * (F32 + I64));
        let w = work("aten::sum", "[[64], []]", r#"["bool", ""]"#, Some(r#"["", ""]"#));
        check(&w, 64.0, 64.0 + I64);
    }

    // --- What is not modelled, and bad input -------------------------------

    #[test]
    fn unknown_dtypes_give_no_shapes() {
        // The 2021–22 form: tensor types left blank.
        assert_eq!(
            run("aten::add", "[[2, 3], [2, 3], []]", r#"["", "", "Scalar"]"#, None),
            Model::NoShapes
        );
        assert_eq!(run("aten::mm", "[[2, 3], [3, 4]]", r#"["", ""]"#, None), Model::NoShapes);
        assert_eq!(
            run("aten::copy_", "[[2, 3], [2, 3], []]", r#"["float", "", "Scalar"]"#, None),
            Model::NoShapes
        );
        // A dtype the model has no size for, and no types at all.
        assert_eq!(
            run(
                "aten::mul",
                "[[2, 3], [2, 3]]",
                r#"["c10::complex<float>", "c10::complex<float>"]"#,
                None
            ),
            Model::NoShapes
        );
        assert_eq!(
            model(
                "aten::mm",
                &OpShapes { dims: Some(b"[[2, 3], [3, 4]]"), types: None, concrete: None }
            ),
            Model::NoShapes
        );
        assert_eq!(model("aten::mm", &OpShapes::default()), Model::NoShapes);
    }

    #[test]
    fn views_and_unknown_ops_are_not_modelled() {
        for op in [
            "aten::view",
            "aten::reshape",
            "aten::permute",
            "aten::transpose",
            "aten::t",
            "aten::expand",
            "aten::as_strided",
            "aten::slice",
            "aten::select",
            "aten::unsqueeze",
            "aten::squeeze",
            "aten::detach",
            "aten::alias",
            "aten::empty",
            "aten::empty_strided",
            "aten::resize_",
            "aten::to",
            "aten::max_pool2d",
            "aten::__and__",
            "vllm::unified_attention_with_output",
            "ProfilerStep#2",
            "addmm",
            "",
        ] {
            assert!(!is_modelled(op), "{op}");
        }
        // hta_amd_mi250_rocm62: a view reads nothing.
        assert_eq!(
            run(
                "aten::view",
                "[[1, 128], []]",
                r#"["float", "ScalarList"]"#,
                Some(r#"["", "[128]"]"#)
            ),
            Model::Unmodelled
        );
        for op in [
            "aten::addmm",
            "aten::add_",
            "aten::relu_",
            "aten::native_layer_norm",
            "aten::_flash_attention_backward",
            "aten::sum",
        ] {
            assert!(is_modelled(op), "{op}");
        }
    }

    #[test]
    fn malformed_input_never_panics() {
        let types = r#"["float", "float", "Scalar"]"#;
        for dims in [
            "",
            "[",
            "[[1, 2]",
            "[[1, -2], [2]]",
            "[[1e30, 3], [3]]",
            "[[1.5, 3], [3]]",
            "[[100000000000000000000000, 2], [2]]",
            // 2^40 + 1 elements in one dim, and in a product.
            "[[1099511627777], [1]]",
            "[[1048576, 1048577], [1]]",
            "[[[[1]]], [1]]",
            "[null, [1]]",
            "{\"a\": 1}",
            "[[1, 2]] trailing",
        ] {
            assert_eq!(run("aten::add", dims, types, None), Model::NoShapes, "{dims}");
        }
        let garbage: &[u8] = b"\xff\xfe\x00[[\"\\";
        for op in [
            "aten::mm",
            "aten::conv2d",
            "aten::scaled_dot_product_attention",
            "aten::add",
            "aten::sum",
        ] {
            let m = model(
                op,
                &OpShapes { dims: Some(garbage), types: Some(garbage), concrete: Some(garbage) },
            );
            assert_eq!(m, Model::NoShapes, "{op}");
        }
        // Concrete values that are not what the op expects.
        let conv = run(
            "aten::conv2d",
            "[[128, 3, 224, 224], [768, 3, 16, 16], [768], [], [], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "ScalarList", "ScalarList", "ScalarList", "Scalar"]"#,
            Some(r#"["", "", "", "[-16, 16]", "[0, 0]", "[1, 1]", "0"]"#),
        );
        assert_eq!(conv, Model::NoShapes);
        let sdpa = run(
            "aten::scaled_dot_product_attention",
            QWEN_SDPA_DIMS,
            QWEN_SDPA_TYPES,
            Some(r#"["", "", "", "", "0.", "maybe", "0.125", "False"]"#),
        );
        assert_eq!(sdpa, Model::NoShapes);
    }

    /// Every op the model knows, for the property test.
    const OPS: &[&str] = &[
        "aten::mm",
        "aten::addmm",
        "aten::bmm",
        "aten::baddbmm",
        "aten::addbmm",
        "aten::addmv",
        "aten::matmul",
        "aten::linear",
        "aten::mv",
        "aten::_scaled_mm",
        "aten::conv2d",
        "aten::conv_transpose2d",
        "aten::convolution",
        "aten::cudnn_convolution",
        "aten::miopen_convolution_transpose",
        "aten::convolution_backward",
        "aten::scaled_dot_product_attention",
        "aten::_flash_attention_forward",
        "aten::_efficient_attention_backward",
        "aten::add",
        "aten::add_",
        "aten::where",
        "aten::native_dropout",
        "aten::max",
        "aten::copy_",
        "aten::_to_copy",
        "aten::cat",
        "aten::index_select",
        "aten::gather",
        "aten::embedding",
        "aten::embedding_dense_backward",
        "aten::native_layer_norm",
        "aten::native_batch_norm_backward",
        "aten::native_group_norm_backward",
        "aten::_fused_rms_norm_backward",
        "aten::_softmax",
        "aten::softmax",
        "aten::_softmax_backward_data",
        "aten::sum",
        "aten::norm",
        "aten::var_mean",
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn any_bytes_are_answered_without_panicking(dims in proptest::collection::vec(any::<u8>(), 0..64), op in 0..OPS.len()) {
            let _ = model(OPS[op], &OpShapes { dims: Some(&dims), types: Some(&dims), concrete: Some(&dims) });
        }

        #[test]
        fn any_shapes_are_answered_without_panicking(
            shapes in proptest::collection::vec(proptest::collection::vec(0u64..5000, 0..6), 0..12),
            concrete in proptest::collection::vec(prop_oneof![
                Just(""), Just("1"), Just("-1"), Just("0"), Just("True"), Just("False"), Just("[1, 1]"),
                Just("[2, 2]"), Just("[0, 0]"), Just("[-1]"), Just("[True, True, True]"), Just("15"),
            ], 0..16),
            op in 0..OPS.len(),
        ) {
            let dims = format!("[{}]", shapes.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>().join(", "));
            let types = format!("[{}]", shapes.iter().map(|_| "\"float\"").collect::<Vec<_>>().join(", "));
            let concrete = format!("[{}]", concrete.iter().map(|c| format!("\"{c}\"")).collect::<Vec<_>>().join(", "));
            if let Model::Work(w) = run(OPS[op], &dims, &types, Some(&concrete)) {
                prop_assert!(w.flops >= 0.0 && w.bytes >= 0.0, "{} {dims} {concrete}: {w:?}", OPS[op]);
            }
        }
    }

    #[test]
    fn element_counts_read_short() {
        assert_eq!(elements(4_194_304.0), "4.19M elements");
        assert_eq!(count(512.0), "512");
        assert_eq!(count(19_365_888.0), "19.4M");
        assert_eq!(count(1.5e9), "1.50G");
    }
}
