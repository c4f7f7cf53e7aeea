//! A small reader for the pickles `torch.save` writes (protocol 2, the
//! opcodes torch uses). `serde-pickle`, the maintained pickle crate, drops the
//! names of unknown globals and refuses persistent ids, which is exactly what
//! torch's tensors are made of, so this reader keeps both: a global stays
//! `Global(module, name)`, `REDUCE` becomes `Call`, a persistent id becomes
//! `PersId`. Interpreting them (`_rebuild_tensor_v2`, storages) is the
//! checkpoint module's job.
//!
//! Values are plain trees: the memo holds copies, so a list or dict changed
//! after it was memoised is not seen through a later `BINGET`. torch's
//! pickles never rely on that (memoised containers are fetched only after
//! they are complete, or not at all).

use std::collections::HashMap;

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    List(Vec<Value>),
    Tuple(Vec<Value>),
    /// Insertion-ordered, as Python's dicts.
    Dict(Vec<(Value, Value)>),
    Set(Vec<Value>),
    Global(String, String),
    /// `REDUCE` / `NEWOBJ`: a callable applied to its arguments, plus the
    /// state a later `BUILD` gave it.
    Call {
        func: Box<Value>,
        args: Vec<Value>,
        state: Option<Box<Value>>,
    },
    PersId(Box<Value>),
    Mark,
}

impl Value {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Bool(b) => Some(*b as i64),
            _ => None,
        }
    }
    /// The items of a tuple or list.
    pub fn items(&self) -> Option<&[Value]> {
        match self {
            Value::Tuple(v) | Value::List(v) => Some(v),
            _ => None,
        }
    }
    /// Looks a string key up in a dict.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Dict(d) => d.iter().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// Why a pickle could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PickleError {
    #[error("truncated pickle")]
    Truncated,
    #[error("unterminated line")]
    UnterminatedLine,
    #[error("stack underflow")]
    StackUnderflow,
    #[error("no mark on the stack")]
    NoMark,
    #[error("memo {0} is empty")]
    EmptyMemo(u32),
    #[error("integer wider than 64 bits")]
    WideInt,
    /// A text argument that does not parse: what it is, as written.
    #[error("bad {0}")]
    Bad(String),
    /// An opcode applied to the wrong kind of value: (opcode, expected).
    #[error("{0} to a non-{1}")]
    WrongTarget(&'static str, &'static str),
    #[error("STACK_GLOBAL needs two strings")]
    StackGlobal,
    #[error("unsupported opcode {0:?}")]
    Unsupported(char),
    #[error("odd number of dict items")]
    OddDict,
    #[error("values nested more than {MAX_DEPTH} deep")]
    TooDeep,
    #[error("the decoded values would pass {} MiB, which no checkpoint's pickle holds (a memo or DUP bomb?)", MAX_DECODED_BYTES >> 20)]
    TooLarge,
    /// Where it went wrong: the opcode and its offset.
    #[error("pickle opcode 0x{op:02x} at {at}: {source}")]
    At { op: u8, at: usize, source: Box<PickleError> },
}

type Result<T> = std::result::Result<T, PickleError>;

/// How deep values may nest. torch's state dicts nest about six deep (dict →
/// rebuild call → args tuple → persistent id → tuple); the bound keeps every
/// recursive walk over a value (drop, clone, comparison, JSON) far from the
/// end of the stack, however the file nests.
pub const MAX_DEPTH: u32 = 200;

/// What decoded values may cost in all, in bytes (approximately: an entry
/// of the stack or memo per node, plus string bytes), clones through the
/// memo and `DUP` counted each time.
/// A real checkpoint's pickle decodes to a few MB; a memo-doubling pickle of
/// under 1 KB would otherwise grow exponentially.
pub const MAX_DECODED_BYTES: u64 = 256 << 20;

/// Parses one pickle. Errors name the opcode and the offset.
pub fn parse(data: &[u8]) -> Result<Value> {
    Machine { data, pos: 0, stack: Vec::new(), memo: HashMap::new(), spent: 0 }.run()
}

/// A value on the stack or in the memo, with what the bounds need: its
/// nesting depth, its cost ([`MAX_DECODED_BYTES`]) and, for a dict, where
/// each hashable key sits (so that `SETITEMS` is not quadratic).
#[derive(Clone)]
struct Entry {
    v: Value,
    depth: u32,
    cost: u64,
    keys: Option<HashMap<Key, usize>>,
}

/// A dict key, hashed: what Python can hash (a float by its bits, a tuple
/// by its items, a global by its name). Keys Python cannot hash (lists,
/// dicts) are kept as they come, never compared one by one: a scan per
/// key made a dict of a million tuple keys quadratic.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Key {
    None,
    Bool(bool),
    Int(i64),
    Float(u64),
    Str(String),
    Bytes(Vec<u8>),
    Tuple(Vec<Key>),
    Global(String, String),
}

impl Key {
    /// Recursion as deep as the value, which [`MAX_DEPTH`] bounds.
    fn of(v: &Value) -> Option<Key> {
        Some(match v {
            Value::None => Key::None,
            Value::Bool(b) => Key::Bool(*b),
            Value::Int(i) => Key::Int(*i),
            Value::Float(f) => Key::Float(f.to_bits()),
            Value::Str(s) => Key::Str(s.clone()),
            Value::Bytes(b) => Key::Bytes(b.clone()),
            Value::Tuple(t) => Key::Tuple(t.iter().map(Key::of).collect::<Option<_>>()?),
            Value::Global(m, n) => Key::Global(m.clone(), n.clone()),
            _ => return None,
        })
    }
}

/// The cost of a value that holds no other value.
fn leaf_cost(v: &Value) -> u64 {
    let heap = match v {
        Value::Str(s) => s.len(),
        Value::Bytes(b) => b.len(),
        Value::Global(m, n) => m.len() + n.len(),
        _ => 0,
    };
    (size_of::<Entry>() + heap) as u64
}

impl Entry {
    fn leaf(v: Value) -> Entry {
        Entry { cost: leaf_cost(&v), v, depth: 0, keys: None }
    }
}

struct Machine<'a> {
    data: &'a [u8],
    pos: usize,
    stack: Vec<Entry>,
    memo: HashMap<u32, Entry>,
    /// Cost of everything decoded so far, clones included.
    spent: u64,
}

impl Machine<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|e| *e <= self.data.len())
            .ok_or(PickleError::Truncated)?;
        let s = &self.data[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().unwrap()))
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn line(&mut self) -> Result<String> {
        let rest = &self.data[self.pos..];
        let n = rest.iter().position(|b| *b == b'\n').ok_or(PickleError::UnterminatedLine)?;
        let s = String::from_utf8_lossy(&rest[..n]).into_owned();
        self.pos += n + 1;
        Ok(s)
    }
    fn string(&mut self, n: usize) -> Result<String> {
        Ok(String::from_utf8_lossy(self.take(n)?).into_owned())
    }
    /// Charges `cost` to the decoding budget.
    fn spend(&mut self, cost: u64) -> Result<()> {
        self.spent = self.spent.saturating_add(cost);
        if self.spent > MAX_DECODED_BYTES {
            return Err(PickleError::TooLarge);
        }
        Ok(())
    }
    fn push(&mut self, v: Value) -> Result<()> {
        let e = Entry::leaf(v);
        self.spend(e.cost)?;
        self.stack.push(e);
        Ok(())
    }
    fn pop(&mut self) -> Result<Entry> {
        self.stack.pop().ok_or(PickleError::StackUnderflow)
    }
    fn top(&mut self) -> Result<&mut Entry> {
        self.stack.last_mut().ok_or(PickleError::StackUnderflow)
    }
    /// Pops everything above the last mark, and the mark.
    fn pop_mark(&mut self) -> Result<Vec<Entry>> {
        let at = self
            .stack
            .iter()
            .rposition(|e| matches!(e.v, Value::Mark))
            .ok_or(PickleError::NoMark)?;
        let items = self.stack.split_off(at + 1);
        self.stack.pop();
        Ok(items)
    }
    fn memo_get(&mut self, i: u32) -> Result<()> {
        let cost = self.memo.get(&i).ok_or(PickleError::EmptyMemo(i))?.cost;
        self.spend(cost)?;
        let e = self.memo[&i].clone();
        self.stack.push(e);
        Ok(())
    }
    fn memo_put(&mut self, i: u32) -> Result<()> {
        let cost = self.top()?.cost;
        self.spend(cost)?;
        let e = self.top()?.clone();
        self.memo.insert(i, e);
        Ok(())
    }
    /// Puts `items` into the container on top of the stack with `add`,
    /// false when it is not the container `op` needs; its depth and cost
    /// follow.
    fn extend_top(
        &mut self,
        items: Vec<Entry>,
        op: &'static str,
        what: &'static str,
        add: impl FnOnce(&mut Value, Vec<Value>) -> bool,
    ) -> Result<()> {
        let top = self.top()?;
        let depth = deeper(top.depth, &items)?;
        let cost: u64 = items.iter().map(|e| e.cost).sum();
        if !add(&mut top.v, items.into_iter().map(|e| e.v).collect()) {
            return Err(PickleError::WrongTarget(op, what));
        }
        top.depth = depth;
        top.cost = top.cost.saturating_add(cost);
        Ok(())
    }
    fn set_items(&mut self, items: Vec<Entry>) -> Result<()> {
        if items.len() % 2 != 0 {
            return Err(PickleError::OddDict);
        }
        let top = self.top()?;
        let depth = deeper(top.depth, &items)?;
        let cost: u64 = items.iter().map(|e| e.cost).sum();
        let Value::Dict(d) = &mut top.v else {
            return Err(PickleError::WrongTarget("SETITEM", "dict"));
        };
        let keys = top.keys.get_or_insert_with(|| index(d));
        let mut it = items.into_iter();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            let slot = match Key::of(&k.v) {
                Some(key) => keys.get(&key).copied().or_else(|| {
                    keys.insert(key, d.len());
                    None
                }),
                None => None,
            };
            match slot {
                Some(i) => d[i].1 = v.v,
                None => d.push((k.v, v.v)),
            }
        }
        top.depth = depth;
        top.cost = top.cost.saturating_add(cost);
        Ok(())
    }

    fn run(mut self) -> Result<Value> {
        loop {
            let at = self.pos;
            let op = self.u8()?;
            self.step(op).map_err(|e| PickleError::At { op, at, source: Box::new(e) })?;
            if op == b'.' {
                return Ok(self.pop()?.v);
            }
        }
    }

    fn step(&mut self, op: u8) -> Result<()> {
        match op {
            0x80 => {
                self.u8()?; // PROTO
            }
            0x95 => {
                self.u64()?; // FRAME
            }
            b'.' => {} // STOP
            b'(' => self.push(Value::Mark)?,
            b'0' => {
                self.pop()?;
            }
            b'1' => {
                self.pop_mark()?;
            }
            b'2' => {
                let cost = self.top()?.cost;
                self.spend(cost)?;
                let e = self.top()?.clone();
                self.stack.push(e);
            }
            b'N' => self.push(Value::None)?,
            0x88 => self.push(Value::Bool(true))?,
            0x89 => self.push(Value::Bool(false))?,
            b'J' => {
                let v = self.u32()? as i32;
                self.push(Value::Int(v as i64))?
            }
            b'K' => {
                let v = self.u8()?;
                self.push(Value::Int(v as i64))?
            }
            b'M' => {
                let v = self.u16()?;
                self.push(Value::Int(v as i64))?
            }
            0x8a => {
                let n = self.u8()? as usize;
                let bytes = self.take(n)?;
                if n > 8 {
                    return Err(PickleError::WideInt);
                }
                let mut buf =
                    [if bytes.last().is_some_and(|b| b & 0x80 != 0) { 0xff } else { 0 }; 8];
                buf[..n].copy_from_slice(bytes);
                self.push(Value::Int(i64::from_le_bytes(buf)))?
            }
            b'I' => {
                let l = self.line()?;
                let v = match l.as_str() {
                    "00" => Value::Bool(false),
                    "01" => Value::Bool(true),
                    s => Value::Int(s.parse().map_err(|_| PickleError::Bad(format!("INT {s}")))?),
                };
                self.push(v)?
            }
            b'G' => {
                let v = f64::from_be_bytes(self.take(8)?.try_into().unwrap());
                self.push(Value::Float(v))?
            }
            b'X' | b'T' => {
                let n = self.u32()? as usize;
                let s = self.string(n)?;
                self.push(Value::Str(s))?
            }
            0x8c | b'U' => {
                let n = self.u8()? as usize;
                let s = self.string(n)?;
                self.push(Value::Str(s))?
            }
            0x8d => {
                let n = usize::try_from(self.u64()?).map_err(|_| PickleError::Truncated)?;
                let s = self.string(n)?;
                self.push(Value::Str(s))?
            }
            b'C' => {
                let n = self.u8()? as usize;
                let b = self.take(n)?.to_vec();
                self.push(Value::Bytes(b))?
            }
            b'B' => {
                let n = self.u32()? as usize;
                let b = self.take(n)?.to_vec();
                self.push(Value::Bytes(b))?
            }
            b'}' => self.push(Value::Dict(Vec::new()))?,
            b']' => self.push(Value::List(Vec::new()))?,
            b')' => self.push(Value::Tuple(Vec::new()))?,
            0x8f => self.push(Value::Set(Vec::new()))?,
            b't' => {
                let items = self.pop_mark()?;
                self.push_seq(items, Value::Tuple)?
            }
            0x85 => {
                let a = self.pop()?;
                self.push_seq(vec![a], Value::Tuple)?
            }
            0x86 => {
                let b = self.pop()?;
                let a = self.pop()?;
                self.push_seq(vec![a, b], Value::Tuple)?
            }
            0x87 => {
                let c = self.pop()?;
                let b = self.pop()?;
                let a = self.pop()?;
                self.push_seq(vec![a, b, c], Value::Tuple)?
            }
            b'l' => {
                let items = self.pop_mark()?;
                self.push_seq(items, Value::List)?
            }
            b'a' => {
                let v = self.pop()?;
                self.extend_top(vec![v], "APPEND", "list", |t, items| match t {
                    Value::List(l) => {
                        l.extend(items);
                        true
                    }
                    _ => false,
                })?
            }
            b'e' => {
                let items = self.pop_mark()?;
                self.extend_top(items, "APPENDS", "list", |t, items| match t {
                    Value::List(l) => {
                        l.extend(items);
                        true
                    }
                    _ => false,
                })?
            }
            0x90 => {
                let items = self.pop_mark()?;
                self.extend_top(items, "ADDITEMS", "set", |t, items| match t {
                    Value::Set(s) => {
                        s.extend(items);
                        true
                    }
                    _ => false,
                })?
            }
            0x91 => {
                let items = self.pop_mark()?;
                self.push_seq(items, Value::Set)?
            }
            b'd' => {
                let items = self.pop_mark()?;
                self.push(Value::Dict(Vec::new()))?;
                self.set_items(items)?
            }
            b's' => {
                let v = self.pop()?;
                let k = self.pop()?;
                self.set_items(vec![k, v])?
            }
            b'u' => {
                let items = self.pop_mark()?;
                self.set_items(items)?
            }
            b'p' => {
                let i: u32 =
                    self.line()?.parse().map_err(|_| PickleError::Bad("PUT index".into()))?;
                self.memo_put(i)?
            }
            b'q' => {
                let i = self.u8()? as u32;
                self.memo_put(i)?
            }
            b'r' => {
                let i = self.u32()?;
                self.memo_put(i)?
            }
            0x94 => {
                let i = self.memo.len() as u32;
                self.memo_put(i)?
            }
            b'g' => {
                let i: u32 =
                    self.line()?.parse().map_err(|_| PickleError::Bad("GET index".into()))?;
                self.memo_get(i)?
            }
            b'h' => {
                let i = self.u8()? as u32;
                self.memo_get(i)?
            }
            b'j' => {
                let i = self.u32()?;
                self.memo_get(i)?
            }
            b'c' => {
                let module = self.line()?;
                let name = self.line()?;
                self.push(Value::Global(module, name))?
            }
            0x93 => {
                let name = self.pop()?;
                let module = self.pop()?;
                match (module.v, name.v) {
                    (Value::Str(m), Value::Str(n)) => self.push(Value::Global(m, n))?,
                    _ => return Err(PickleError::StackGlobal),
                }
            }
            b'R' | 0x81 => {
                let args = self.pop()?;
                let func = self.pop()?;
                let (depth, cost) = built(&[&func, &args])?;
                let args = match args.v {
                    Value::Tuple(a) => a,
                    other => vec![other],
                };
                self.spend(size_of::<Entry>() as u64)?;
                self.stack.push(Entry { v: reduce(func.v, args), depth, cost, keys: None })
            }
            b'b' => {
                let state = self.pop()?;
                let top = self.top()?;
                // BUILD on a plain dict (OrderedDict's `_metadata`): ignored.
                if let Value::Call { state: s, .. } = &mut top.v {
                    top.depth = deeper(top.depth, [&state])?;
                    top.cost = top.cost.saturating_add(state.cost);
                    *s = Some(Box::new(state.v));
                }
            }
            b'Q' => {
                let pid = self.pop()?;
                self.push_seq(vec![pid], |mut v| {
                    Value::PersId(Box::new(v.pop().expect("one item")))
                })?
            }
            b'P' => {
                let pid = Entry::leaf(Value::Str(self.line()?));
                self.spend(pid.cost)?;
                self.push_seq(vec![pid], |mut v| {
                    Value::PersId(Box::new(v.pop().expect("one item")))
                })?
            }
            other => return Err(PickleError::Unsupported(other as char)),
        }
        Ok(())
    }

    /// Pushes the container `make` builds from `items`: one deeper than
    /// the deepest of them.
    fn push_seq(
        &mut self,
        items: Vec<Entry>,
        make: impl FnOnce(Vec<Value>) -> Value,
    ) -> Result<()> {
        let (depth, cost) = built(&items.iter().collect::<Vec<_>>())?;
        self.spend(size_of::<Entry>() as u64)?;
        let v = make(items.into_iter().map(|e| e.v).collect());
        self.stack.push(Entry { v, depth, cost, keys: None });
        Ok(())
    }
}

/// The depth of a container already `depth` deep once `items` are in it.
fn deeper<'a>(depth: u32, items: impl IntoIterator<Item = &'a Entry>) -> Result<u32> {
    let d = items.into_iter().map(|e| e.depth + 1).max().unwrap_or(0).max(depth);
    if d > MAX_DEPTH {
        return Err(PickleError::TooDeep);
    }
    Ok(d)
}

/// The depth and cost of a new container holding `parts`.
fn built(parts: &[&Entry]) -> Result<(u32, u64)> {
    let depth = deeper(0, parts.iter().copied())?.max(1);
    let cost = parts.iter().fold(size_of::<Entry>() as u64, |c, e| c.saturating_add(e.cost));
    Ok((depth, cost))
}

/// Where each hashable key of `d` sits (the last one, as a dict keeps it).
fn index(d: &[(Value, Value)]) -> HashMap<Key, usize> {
    d.iter().enumerate().filter_map(|(i, (k, _))| Some((Key::of(k)?, i))).collect()
}

/// Applies the callables whose meaning is plain data; keeps the rest.
fn reduce(func: Value, mut args: Vec<Value>) -> Value {
    if let Value::Global(m, n) = &func {
        match (m.as_str(), n.as_str()) {
            ("collections", "OrderedDict") if args.is_empty() || args == [Value::Tuple(vec![])] => {
                return Value::Dict(Vec::new());
            }
            ("collections", "OrderedDict") => {
                if let Some(Value::List(items)) = args.pop() {
                    let kv = items
                        .into_iter()
                        .filter_map(|it| match it {
                            Value::Tuple(mut t) if t.len() == 2 => {
                                let v = t.pop().unwrap();
                                Some((t.pop().unwrap(), v))
                            }
                            _ => None,
                        })
                        .collect();
                    return Value::Dict(kv);
                }
                return Value::Dict(Vec::new());
            }
            ("builtins" | "__builtin__", "set" | "frozenset") => {
                return Value::Set(
                    args.pop().and_then(|a| a.items().map(<[Value]>::to_vec)).unwrap_or_default(),
                );
            }
            _ => {}
        }
    }
    Value::Call { func: Box::new(func), args, state: None }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_protocol2_dict() {
        // pickle.dumps({'a': 1, 'b': [1.5, 'x'], 'c': (True, None)}, protocol=2)
        let data = b"\x80\x02}q\x00(X\x01\x00\x00\x00aq\x01K\x01X\x01\x00\x00\x00bq\x02]q\x03(G?\xf8\x00\x00\x00\x00\x00\x00X\x01\x00\x00\x00xq\x04eX\x01\x00\x00\x00cq\x05\x88N\x86q\x06u.";
        let v = parse(data).unwrap();
        assert_eq!(v.get("a"), Some(&Value::Int(1)));
        assert_eq!(v.get("b"), Some(&Value::List(vec![Value::Float(1.5), Value::Str("x".into())])));
        assert_eq!(v.get("c"), Some(&Value::Tuple(vec![Value::Bool(true), Value::None])));
    }

    #[test]
    fn truncated_input_is_an_error() {
        let err = parse(b"\x80\x02}q\x00(X\x05\x00").unwrap_err();
        assert!(
            matches!(&err, PickleError::At { op: b'X', at: 6, source } if **source == PickleError::Truncated),
            "{err:?}"
        );
        assert_eq!(err.to_string(), "pickle opcode 0x58 at 6: truncated pickle");
    }

    #[test]
    fn nesting_past_the_bound_is_an_error_not_a_stack_overflow() {
        let mut data = b"\x80\x02)".to_vec();
        data.extend(std::iter::repeat_n(0x85, 1_000_000));
        data.push(b'.');
        let err = parse(&data).unwrap_err().to_string();
        assert!(err.contains("nested more than 200 deep"), "{err}");
        // At the bound it parses (and drops) fine.
        let mut data = b"\x80\x02)".to_vec();
        data.extend(std::iter::repeat_n(0x85, MAX_DEPTH as usize - 1));
        data.push(b'.');
        assert!(parse(&data).is_ok());
    }

    #[test]
    fn memo_and_dup_doubling_stop_at_the_budget() {
        let mut memo = b"\x80\x02]q\x00".to_vec();
        let mut dup = b"\x80\x02]".to_vec();
        for _ in 0..64 {
            memo.extend_from_slice(b"h\x00h\x00\x86q\x00");
            dup.extend_from_slice(b"2\x86");
        }
        for data in [memo, dup] {
            let err = parse(&data).unwrap_err().to_string();
            assert!(err.contains("would pass 256 MiB"), "{err}");
        }
    }

    #[test]
    fn large_dicts_keep_the_last_value_of_a_key_in_linear_time() {
        // {0: 0, 1: 1, ..., 199999: 199999} then 0: 7 again, in SETITEMS batches.
        let mut data = b"\x80\x02}".to_vec();
        for chunk in (0..200_000u32).collect::<Vec<_>>().chunks(1000) {
            data.push(b'(');
            for i in chunk {
                data.push(b'J');
                data.extend_from_slice(&i.to_le_bytes());
                data.push(b'J');
                data.extend_from_slice(&i.to_le_bytes());
            }
            data.push(b'u');
        }
        data.extend_from_slice(b"K\x00K\x07s.");
        let t = std::time::Instant::now();
        let Value::Dict(d) = parse(&data).unwrap() else { panic!("a dict") };
        assert!(t.elapsed().as_secs() < 5, "{:?}", t.elapsed());
        assert_eq!(d.len(), 200_000);
        assert_eq!(d[0], (Value::Int(0), Value::Int(7)));
        // Tuple keys, hashed too: (i,) for 100 000 i, then (0,) again.
        let mut data = b"\x80\x02}(".to_vec();
        for i in 0..100_000u32 {
            data.push(b'J');
            data.extend_from_slice(&i.to_le_bytes());
            data.push(0x85);
            data.push(b'N');
        }
        data.extend_from_slice(b"uK\x00\x85K\x01s.");
        let t = std::time::Instant::now();
        let Value::Dict(d) = parse(&data).unwrap() else { panic!("a dict") };
        assert!(t.elapsed().as_secs() < 5, "{:?}", t.elapsed());
        assert_eq!(d.len(), 100_000);
        assert_eq!(d[0], (Value::Tuple(vec![Value::Int(0)]), Value::Int(1)));
    }
}
