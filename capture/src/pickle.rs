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
    /// Where it went wrong: the opcode and its offset.
    #[error("pickle opcode 0x{op:02x} at {at}: {source}")]
    At { op: u8, at: usize, source: Box<PickleError> },
}

type Result<T> = std::result::Result<T, PickleError>;

/// Parses one pickle. Errors name the opcode and the offset.
pub fn parse(data: &[u8]) -> Result<Value> {
    Machine { data, pos: 0, stack: Vec::new(), memo: HashMap::new() }.run()
}

struct Machine<'a> {
    data: &'a [u8],
    pos: usize,
    stack: Vec<Value>,
    memo: HashMap<u32, Value>,
}

impl Machine<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8]> {
        let end = self.pos.checked_add(n).filter(|e| *e <= self.data.len()).ok_or(PickleError::Truncated)?;
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
    fn pop(&mut self) -> Result<Value> {
        self.stack.pop().ok_or(PickleError::StackUnderflow)
    }
    fn top(&mut self) -> Result<&mut Value> {
        self.stack.last_mut().ok_or(PickleError::StackUnderflow)
    }
    /// Pops everything above the last mark, and the mark.
    fn pop_mark(&mut self) -> Result<Vec<Value>> {
        let at = self.stack.iter().rposition(|v| matches!(v, Value::Mark)).ok_or(PickleError::NoMark)?;
        let items = self.stack.split_off(at + 1);
        self.stack.pop();
        Ok(items)
    }
    fn memo_get(&self, i: u32) -> Result<Value> {
        self.memo.get(&i).cloned().ok_or(PickleError::EmptyMemo(i))
    }

    fn run(mut self) -> Result<Value> {
        loop {
            let at = self.pos;
            let op = self.u8()?;
            self.step(op).map_err(|e| PickleError::At { op, at, source: Box::new(e) })?;
            if op == b'.' {
                return self.pop();
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
            b'(' => self.stack.push(Value::Mark),
            b'0' => {
                self.pop()?;
            }
            b'1' => {
                self.pop_mark()?;
            }
            b'2' => {
                let v = self.top()?.clone();
                self.stack.push(v);
            }
            b'N' => self.stack.push(Value::None),
            0x88 => self.stack.push(Value::Bool(true)),
            0x89 => self.stack.push(Value::Bool(false)),
            b'J' => {
                let v = self.u32()? as i32;
                self.stack.push(Value::Int(v as i64))
            }
            b'K' => {
                let v = self.u8()?;
                self.stack.push(Value::Int(v as i64))
            }
            b'M' => {
                let v = self.u16()?;
                self.stack.push(Value::Int(v as i64))
            }
            0x8a => {
                let n = self.u8()? as usize;
                let bytes = self.take(n)?;
                if n > 8 {
                    return Err(PickleError::WideInt);
                }
                let mut buf = [if bytes.last().is_some_and(|b| b & 0x80 != 0) { 0xff } else { 0 }; 8];
                buf[..n].copy_from_slice(bytes);
                self.stack.push(Value::Int(i64::from_le_bytes(buf)))
            }
            b'I' => {
                let l = self.line()?;
                let v = match l.as_str() {
                    "00" => Value::Bool(false),
                    "01" => Value::Bool(true),
                    s => Value::Int(s.parse().map_err(|_| PickleError::Bad(format!("INT {s}")))?),
                };
                self.stack.push(v)
            }
            b'G' => {
                let v = f64::from_be_bytes(self.take(8)?.try_into().unwrap());
                self.stack.push(Value::Float(v))
            }
            b'X' => {
                let n = self.u32()? as usize;
                let s = self.string(n)?;
                self.stack.push(Value::Str(s))
            }
            0x8c => {
                let n = self.u8()? as usize;
                let s = self.string(n)?;
                self.stack.push(Value::Str(s))
            }
            0x8d => {
                let n = self.u64()? as usize;
                let s = self.string(n)?;
                self.stack.push(Value::Str(s))
            }
            b'U' => {
                let n = self.u8()? as usize;
                let s = self.string(n)?;
                self.stack.push(Value::Str(s))
            }
            b'T' => {
                let n = self.u32()? as usize;
                let s = self.string(n)?;
                self.stack.push(Value::Str(s))
            }
            b'C' => {
                let n = self.u8()? as usize;
                let b = self.take(n)?.to_vec();
                self.stack.push(Value::Bytes(b))
            }
            b'B' => {
                let n = self.u32()? as usize;
                let b = self.take(n)?.to_vec();
                self.stack.push(Value::Bytes(b))
            }
            b'}' => self.stack.push(Value::Dict(Vec::new())),
            b']' => self.stack.push(Value::List(Vec::new())),
            b')' => self.stack.push(Value::Tuple(Vec::new())),
            0x8f => self.stack.push(Value::Set(Vec::new())),
            b't' => {
                let items = self.pop_mark()?;
                self.stack.push(Value::Tuple(items))
            }
            0x85 => {
                let a = self.pop()?;
                self.stack.push(Value::Tuple(vec![a]))
            }
            0x86 => {
                let b = self.pop()?;
                let a = self.pop()?;
                self.stack.push(Value::Tuple(vec![a, b]))
            }
            0x87 => {
                let c = self.pop()?;
                let b = self.pop()?;
                let a = self.pop()?;
                self.stack.push(Value::Tuple(vec![a, b, c]))
            }
            b'l' => {
                let items = self.pop_mark()?;
                self.stack.push(Value::List(items))
            }
            b'a' => {
                let v = self.pop()?;
                match self.top()? {
                    Value::List(l) => l.push(v),
                    _ => return Err(PickleError::WrongTarget("APPEND", "list")),
                }
            }
            b'e' => {
                let items = self.pop_mark()?;
                match self.top()? {
                    Value::List(l) => l.extend(items),
                    _ => return Err(PickleError::WrongTarget("APPENDS", "list")),
                }
            }
            0x90 => {
                let items = self.pop_mark()?;
                match self.top()? {
                    Value::Set(s) => s.extend(items),
                    _ => return Err(PickleError::WrongTarget("ADDITEMS", "set")),
                }
            }
            0x91 => {
                let items = self.pop_mark()?;
                self.stack.push(Value::Set(items))
            }
            b'd' => {
                let items = self.pop_mark()?;
                self.stack.push(Value::Dict(pairs(items)?))
            }
            b's' => {
                let v = self.pop()?;
                let k = self.pop()?;
                dict_insert(self.top()?, vec![(k, v)])?;
            }
            b'u' => {
                let items = self.pop_mark()?;
                let p = pairs(items)?;
                dict_insert(self.top()?, p)?;
            }
            b'p' => {
                let i: u32 = self.line()?.parse().map_err(|_| PickleError::Bad("PUT index".into()))?;
                let v = self.top()?.clone();
                self.memo.insert(i, v);
            }
            b'q' => {
                let i = self.u8()? as u32;
                let v = self.top()?.clone();
                self.memo.insert(i, v);
            }
            b'r' => {
                let i = self.u32()?;
                let v = self.top()?.clone();
                self.memo.insert(i, v);
            }
            0x94 => {
                let i = self.memo.len() as u32;
                let v = self.top()?.clone();
                self.memo.insert(i, v);
            }
            b'g' => {
                let i: u32 = self.line()?.parse().map_err(|_| PickleError::Bad("GET index".into()))?;
                let v = self.memo_get(i)?;
                self.stack.push(v)
            }
            b'h' => {
                let i = self.u8()? as u32;
                let v = self.memo_get(i)?;
                self.stack.push(v)
            }
            b'j' => {
                let i = self.u32()?;
                let v = self.memo_get(i)?;
                self.stack.push(v)
            }
            b'c' => {
                let module = self.line()?;
                let name = self.line()?;
                self.stack.push(Value::Global(module, name))
            }
            0x93 => {
                let name = self.pop()?;
                let module = self.pop()?;
                match (module, name) {
                    (Value::Str(m), Value::Str(n)) => self.stack.push(Value::Global(m, n)),
                    _ => return Err(PickleError::StackGlobal),
                }
            }
            b'R' | 0x81 => {
                let args = self.pop()?;
                let func = self.pop()?;
                let args = match args {
                    Value::Tuple(a) => a,
                    other => vec![other],
                };
                self.stack.push(reduce(func, args))
            }
            b'b' => {
                let state = self.pop()?;
                // BUILD on a plain dict (OrderedDict's `_metadata`): ignored.
                if let Value::Call { state: s, .. } = self.top()? {
                    *s = Some(Box::new(state));
                }
            }
            b'Q' => {
                let pid = self.pop()?;
                self.stack.push(Value::PersId(Box::new(pid)))
            }
            b'P' => {
                let pid = self.line()?;
                self.stack.push(Value::PersId(Box::new(Value::Str(pid))))
            }
            other => return Err(PickleError::Unsupported(other as char)),
        }
        Ok(())
    }
}

/// Applies the callables whose meaning is plain data; keeps the rest.
fn reduce(func: Value, mut args: Vec<Value>) -> Value {
    if let Value::Global(m, n) = &func {
        match (m.as_str(), n.as_str()) {
            ("collections", "OrderedDict") if args.is_empty() || args == [Value::Tuple(vec![])] => return Value::Dict(Vec::new()),
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
                return Value::Set(args.pop().and_then(|a| a.items().map(<[Value]>::to_vec)).unwrap_or_default());
            }
            _ => {}
        }
    }
    Value::Call { func: Box::new(func), args, state: None }
}

fn pairs(items: Vec<Value>) -> Result<Vec<(Value, Value)>> {
    if items.len() % 2 != 0 {
        return Err(PickleError::OddDict);
    }
    let mut out = Vec::with_capacity(items.len() / 2);
    let mut it = items.into_iter();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        out.push((k, v));
    }
    Ok(out)
}

fn dict_insert(target: &mut Value, items: Vec<(Value, Value)>) -> Result<()> {
    let Value::Dict(d) = target else { return Err(PickleError::WrongTarget("SETITEM", "dict")) };
    for (k, v) in items {
        match d.iter_mut().find(|(ek, _)| *ek == k) {
            Some(slot) => slot.1 = v,
            None => d.push((k, v)),
        }
    }
    Ok(())
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
        assert!(matches!(&err, PickleError::At { op: b'X', at: 6, source } if **source == PickleError::Truncated), "{err:?}");
        assert_eq!(err.to_string(), "pickle opcode 0x58 at 6: truncated pickle");
    }
}
