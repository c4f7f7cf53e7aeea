//! The performance model's answer per op call (docs/analysis.md §13),
//! worked out once per distinct op and shapes.

use rustc_hash::FxHashMap as HashMap;

use crate::trace::Event;

use super::names::Names;
use super::work;

/// The performance model's answers: what each distinct priced call does,
/// and how many op calls it met, by outcome.
#[derive(Debug, Default)]
pub(super) struct OpPricing {
    /// What the performance model said of each distinct priced call (one
    /// per miss of `cache`); a priced op's record in the CPU log names its
    /// entry.
    pub(super) works: Vec<OpWork>,
    pub(super) counts: ModelCounts,
    /// The model's answer per distinct op name and shapes text (see
    /// [`OpPricing::price`]), and the key being looked up.
    cache: HashMap<Box<[u8]>, Priced>,
    cache_bytes: usize,
    key: Vec<u8>,
}

/// What the performance model said of one op call with given shapes.
#[derive(Debug, Clone, Copy)]
enum Priced {
    /// Its entry in [`OpPricing::works`].
    Work(u32),
    NoShapes,
    Unmodelled,
}

/// Bytes of (op, shapes) keys whose pricing is kept for the next call.
const MODEL_CACHE_BYTES: usize = 4 << 20;

/// What the performance model says one op call does (its FLOPs and bytes,
/// docs/analysis.md §13), kept for the roofline account at the end.
#[derive(Debug, Clone, Copy)]
pub(super) struct OpWork {
    pub(super) flops: f64,
    pub(super) bytes: f64,
    pub(super) dtype: work::Dtype,
    pub(super) matrix: bool,
    /// The formula's inputs, interned.
    pub(super) inputs: u32,
}

/// How many op calls the model met, by outcome: what a trace without
/// shapes is told.
#[derive(Debug, Clone, Copy, Default)]
pub struct ModelCounts {
    /// CPU ops carrying `Input Dims` (record_shapes=True).
    pub with_shapes: u64,
    /// Ops the model knows whose shapes were missing or did not fit.
    pub no_shapes: u64,
    pub priced: u64,
}

impl OpPricing {
    /// The performance model's FLOPs and bytes for this op call: its entry
    /// in [`OpPricing::works`]. Shapes are parsed only for the ops it knows
    /// (`modelled`).
    pub(super) fn price(
        &mut self,
        names: &mut Names,
        ev: &Event<'_>,
        name: u32,
        modelled: bool,
    ) -> Option<u32> {
        let args = ev.args.as_ref()?;
        if args.input_dims.is_some() {
            self.counts.with_shapes += 1;
        }
        if !modelled {
            return None;
        }
        let shapes = work::OpShapes {
            dims: args.input_dims,
            types: args.input_types,
            concrete: args.concrete_inputs,
        };
        // A training loop calls each op with the same few shapes step after
        // step: the model (shapes parsed, formula worked out and written)
        // runs once per distinct call, not once per call.
        let key = &mut self.key;
        key.clear();
        key.extend_from_slice(&name.to_le_bytes());
        for part in [shapes.dims, shapes.types, shapes.concrete] {
            match part {
                Some(b) => {
                    key.extend_from_slice(&(b.len() as u64).to_le_bytes());
                    key.extend_from_slice(b);
                }
                None => key.extend_from_slice(&u64::MAX.to_le_bytes()),
            }
        }
        let priced = match self.cache.get(key.as_slice()) {
            Some(&priced) => priced,
            None => {
                let priced = match work::model(ev.name(), &shapes) {
                    work::Model::Work(w) => {
                        let Ok(index) = u32::try_from(self.works.len()) else { return None };
                        self.works.push(OpWork {
                            flops: w.flops,
                            bytes: w.bytes,
                            dtype: w.dtype,
                            matrix: w.matrix,
                            inputs: names.id(&w.inputs),
                        });
                        Priced::Work(index)
                    }
                    work::Model::NoShapes => Priced::NoShapes,
                    work::Model::Unmodelled => Priced::Unmodelled,
                };
                // Bounded: a trace of ever-new shapes starts the cache over.
                let cost = self.key.len() + size_of::<(Box<[u8]>, Priced)>();
                self.cache_bytes += cost;
                if self.cache_bytes > MODEL_CACHE_BYTES {
                    self.cache.clear();
                    self.cache_bytes = cost;
                }
                self.cache.insert(self.key.as_slice().into(), priced);
                priced
            }
        };
        match priced {
            Priced::Work(index) => {
                self.counts.priced += 1;
                Some(index)
            }
            Priced::NoShapes => {
                self.counts.no_shapes += 1;
                None
            }
            Priced::Unmodelled => None,
        }
    }
}
