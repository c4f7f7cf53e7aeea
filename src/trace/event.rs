//! One trace event as the analysis needs it, deserialized from a borrowed
//! slice. Only the fields the analysis reads are kept; every other field is
//! skipped without being materialised. Types are lenient where real traces
//! vary (pid/tid as number or string, `ts` as integer or float, ids as
//! strings) and strict nowhere else: a field of the wrong type makes the
//! event malformed, which the analysis counts and skips.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;

/// A string that tolerates invalid UTF-8 (replaced, not rejected).
#[derive(Debug, Clone, PartialEq)]
pub struct Text<'a>(pub Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_borrowed_bytes<E>(self, v: &'de [u8]) -> Result<Self::Value, E> {
                Ok(Text(String::from_utf8_lossy(v)))
            }
            fn visit_bytes<E>(self, v: &[u8]) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(String::from_utf8_lossy(v).into_owned())))
            }
        }
        // serde_json hands strings out as raw bytes here, without UTF-8
        // validation; we repair instead of failing the whole trace.
        d.deserialize_bytes(V)
    }
}

/// A number that may arrive as integer, float, numeric string or null.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Num(pub Option<f64>);

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Num;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_i64<E>(self, v: i64) -> Result<Num, E> {
                Ok(Num(Some(v as f64)))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Num, E> {
                Ok(Num(Some(v as f64)))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Num, E> {
                Ok(Num(v.is_finite().then_some(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Num, E> {
                Ok(Num(v.trim().parse::<f64>().ok().filter(|x| x.is_finite())))
            }
            fn visit_unit<E>(self) -> Result<Num, E> {
                Ok(Num(None))
            }
            fn visit_none<E>(self) -> Result<Num, E> {
                Ok(Num(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Num, E> {
                Ok(Num(None))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut a: A) -> Result<Num, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Num(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Num, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Num(None))
            }
        }
        d.deserialize_any(V)
    }
}

impl Num {
    pub fn get(self) -> Option<f64> {
        self.0
    }
    /// As an integer id (correlation, stream, device).
    pub fn id(self) -> Option<i64> {
        self.0.filter(|v| v.fract() == 0.0 && v.abs() < 9.0e15).map(|v| v as i64)
    }
}

/// A pid or tid: integers in new traces, strings ("stream 7") in old ones.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Id<'a> {
    Int(i64),
    Str(Cow<'a, str>),
}

impl<'de: 'a, 'a> Deserialize<'de> for Id<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Id<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an integer or a string")
            }
            fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Id::Int(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Id::Int(v as i64))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
                Ok(Id::Int(v as i64))
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Id::from_str(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Id::from_str(Cow::Owned(v.to_owned())))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Id::Int(0))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'a> Id<'a> {
    /// "25738" is the same thread as 25738; "stream 7" is stream 7.
    fn from_str(s: Cow<'a, str>) -> Id<'a> {
        let t = s.trim();
        if let Ok(v) = t.parse::<i64>() {
            return Id::Int(v);
        }
        if let Some(rest) = t.strip_prefix("stream ") {
            if let Ok(v) = rest.trim().parse::<i64>() {
                return Id::Int(v);
            }
        }
        Id::Str(s)
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            Id::Int(v) => Some(*v),
            Id::Str(_) => None,
        }
    }
}

/// The `args` fields the analysis reads.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Args {
    pub correlation: Num,
    #[serde(alias = "external id")]
    #[serde(rename = "External id")]
    pub external_id: Num,
    pub stream: Num,
    pub device: Num,
    #[serde(rename = "Total Reserved")]
    pub total_reserved: Num,
    #[serde(rename = "Total Allocated")]
    pub total_allocated: Num,
    #[serde(rename = "Device Type")]
    pub device_type: Num,
    #[serde(rename = "Device Id")]
    pub device_id: Num,
}

/// One event of `traceEvents`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Event<'a> {
    #[serde(borrow)]
    pub ph: Option<Text<'a>>,
    #[serde(borrow)]
    pub cat: Option<Text<'a>>,
    #[serde(borrow)]
    pub name: Option<Text<'a>>,
    #[serde(borrow)]
    pub pid: Option<Id<'a>>,
    #[serde(borrow)]
    pub tid: Option<Id<'a>>,
    pub ts: Num,
    pub dur: Num,
    pub args: Option<Args>,
}

impl<'a> Event<'a> {
    pub fn parse(raw: &'a [u8]) -> serde_json::Result<Event<'a>> {
        serde_json::from_slice(raw)
    }
    pub fn ph(&self) -> &str {
        self.ph.as_ref().map_or("", |t| &t.0)
    }
    pub fn cat(&self) -> &str {
        self.cat.as_ref().map_or("", |t| &t.0)
    }
    pub fn name(&self) -> &str {
        self.name.as_ref().map_or("", |t| &t.0)
    }
    pub fn correlation(&self) -> Option<i64> {
        self.args.as_ref().and_then(|a| a.correlation.id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_new_and_old_event_shapes() {
        let new = br#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 4458676983543.183, "dur": 41.407, "args": {"External id": 12353, "correlation": 57541, "stream": 7, "grid": [1,2,3]}}"#;
        let e = Event::parse(new).unwrap();
        assert_eq!((e.ph(), e.cat(), e.name()), ("X", "kernel", "k"));
        assert_eq!(e.tid, Some(Id::Int(7)));
        assert_eq!(e.ts.get(), Some(4458676983543.183));
        assert_eq!(e.correlation(), Some(57541));
        assert_eq!(e.args.as_ref().unwrap().external_id.id(), Some(12353));

        let old = br#"{"ph": "X", "cat": "Kernel", "name": "k", "pid": 0, "tid": "stream 7", "ts": 1623142623531625, "dur": 2, "args": {"correlation": 34441, "external id": 544}}"#;
        let e = Event::parse(old).unwrap();
        assert_eq!(e.tid, Some(Id::Int(7)));
        assert_eq!(e.args.as_ref().unwrap().external_id.id(), Some(544));
    }

    #[test]
    fn tolerates_invalid_utf8_and_numeric_strings() {
        let mut raw = br#"{"name": "bad "#.to_vec();
        raw.extend_from_slice(&[0xff, 0xfe]);
        raw.extend_from_slice(br#"", "ts": "12.5", "dur": null}"#);
        let e = Event::parse(&raw).unwrap();
        assert!(e.name().starts_with("bad "));
        assert!(e.name().contains('\u{FFFD}'));
        assert_eq!(e.ts.get(), Some(12.5));
        assert_eq!(e.dur.get(), None);
    }

    #[test]
    fn wrong_types_are_errors_not_panics() {
        assert!(Event::parse(br#"{"name": 5}"#).is_err());
        assert!(Event::parse(br#"[1,2]"#).is_err());
        assert!(Event::parse(br#""x""#).is_err());
    }
}
