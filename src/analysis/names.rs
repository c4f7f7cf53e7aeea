//! The pass's interners: names and threads as small dense ids, with what
//! each name says worked out once.

use rustc_hash::FxHashMap as HashMap;

use crate::trace::RuntimeCall;
use crate::trace::event::Id;

use super::work;

/// String interner for kernel and op names.
#[derive(Debug, Default)]
pub struct Names {
    ids: HashMap<Box<str>, u32>,
    names: Vec<Box<str>>,
    /// What each op name says, once worked out ([`OpTraits`]).
    op_traits: Vec<Option<OpTraits>>,
    /// What each runtime call's name says ([`RuntimeCall`]), apart from
    /// the ids: only the calls the pass keeps are interned.
    call_traits: HashMap<Box<str>, RuntimeCall>,
}

/// What a CPU op's name tells the pass, worked out once per distinct name
/// instead of once per call: the substring tests behind it were a large
/// share of the pass on real traces (1 M events, a few thousand names).
#[derive(Debug, Clone, Copy)]
pub(super) struct OpTraits {
    pub(super) backward: bool,
    pub(super) optimizer: bool,
    pub(super) dataload: bool,
    pub(super) modelled: bool,
}

impl OpTraits {
    fn of(name: &str) -> OpTraits {
        OpTraits {
            backward: is_backward(name),
            optimizer: is_optimizer(name),
            dataload: is_dataload(name),
            modelled: work::is_modelled(name),
        }
    }
}

impl Names {
    pub(super) fn id(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(s.into());
        self.ids.insert(s.into(), id);
        id
    }

    /// The id of an op's name, with what the name says.
    pub(super) fn op(&mut self, s: &str) -> (u32, OpTraits) {
        let id = self.id(s);
        let i = id as usize;
        if self.op_traits.len() <= i {
            self.op_traits.resize(i + 1, None);
        }
        (id, *self.op_traits[i].get_or_insert_with(|| OpTraits::of(s)))
    }

    /// What a runtime call's name says.
    pub(super) fn call(&mut self, name: &str) -> RuntimeCall {
        match self.call_traits.get(name) {
            Some(t) => *t,
            None => *self.call_traits.entry(name.into()).or_insert_with(|| RuntimeCall::of(name)),
        }
    }

    /// What op name `id` says, where it was met as an op's.
    pub(super) fn op_traits(&self, id: u32) -> Option<OpTraits> {
        self.op_traits.get(id as usize).copied().flatten()
    }

    pub fn get(&self, id: u32) -> &str {
        &self.names[id as usize]
    }
}

/// (pid, tid) → a small thread id; integer ids take the fast path.
#[derive(Debug, Default, Clone)]
pub struct ThreadIds {
    ints: HashMap<(i64, i64), u32>,
    strs: HashMap<String, u32>,
    next: u32,
}

impl ThreadIds {
    pub(super) fn id(&mut self, pid: Option<&Id<'_>>, tid: Option<&Id<'_>>) -> u32 {
        let next = self.next;
        let id = match (pid.and_then(Id::as_int), tid.and_then(Id::as_int)) {
            (Some(p), Some(t)) => *self.ints.entry((p, t)).or_insert(next),
            _ => {
                let show = |id: Option<&Id<'_>>| match id {
                    Some(Id::Int(v)) => v.to_string(),
                    Some(Id::Str(s)) => s.to_string(),
                    None => String::new(),
                };
                *self.strs.entry(format!("{}\u{0}{}", show(pid), show(tid))).or_insert(next)
            }
        };
        if id == next {
            self.next += 1;
        }
        id
    }
}

/// Evidence of a training step in a CPU op or range name.
fn is_backward(name: &str) -> bool {
    name.contains("Backward") || name.starts_with("autograd::engine::evaluate_function")
}

pub(super) fn is_optimizer(name: &str) -> bool {
    name.starts_with("Optimizer.step#")
        || name.starts_with("Optimizer.zero_grad#")
        || name.starts_with("optimizer.step")
}

pub(super) fn is_dataload(name: &str) -> bool {
    name.starts_with("enumerate(DataLoader)#") && name.contains("__next__")
}
