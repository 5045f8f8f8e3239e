//! A processor's own state as snapshot metadata (the store carries the windows).
//!
//! Values are plain strings under one prefix per engine (`windowstore.session.`, ...); strings
//! the caller chose (column names, aliases) are hex-encoded so no separator can collide with
//! them, and the bound input schema is stored as an empty Arrow IPC stream, hex-encoded. The
//! engines share what they have in common here: durations, the input columns, aggregations and
//! the schema (the processor writes its progress with `put`).

use std::collections::HashMap;
use std::path::Path;

use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::{Schema, SchemaRef};

use crate::agg::{AggFunc, AggSpec, Overflow};
use crate::emit::EmitMode;
use crate::input::InputSpec;
use crate::reject::OnInvalid;
use crate::time::{parse_unit, unit_name, Duration};
use crate::{Error, Result};

/// `s` as lowercase hex.
pub(crate) fn hex(s: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(s.len() * 2);
    for &b in s {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

/// Bytes from lowercase hex, or `None` if malformed.
pub(crate) fn unhex(s: &str) -> Option<Vec<u8>> {
    fn digit(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        }
    }
    let s = s.as_bytes();
    if s.len() % 2 != 0 {
        return None;
    }
    s.chunks_exact(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

fn duration(d: Duration) -> String {
    match d {
        Duration::Ticks(t) => format!("t{t}"),
        Duration::Nanos(n) => format!("n{n}"),
    }
}

fn parse_duration(s: &str) -> Option<Duration> {
    match s.split_at_checked(1)? {
        ("t", v) => v.parse().ok().map(Duration::Ticks),
        ("n", v) => v.parse().ok().map(Duration::Nanos),
        _ => None,
    }
}

fn agg(spec: &AggSpec) -> String {
    let (max_size, overflow) = match &spec.func {
        AggFunc::Collect { max_size, overflow } | AggFunc::CollectAll { max_size, overflow } => {
            (*max_size, Some(overflow.name()))
        }
        _ => (None, None),
    };
    let opt = |s: Option<&String>| s.map_or("-".to_string(), |s| hex(s.as_bytes()));
    format!(
        "{}:{}:{}:{}:{}",
        spec.func.name(),
        opt(spec.column.as_ref()),
        opt(spec.alias.as_ref()),
        max_size.map_or("-".to_string(), |m| m.to_string()),
        overflow.unwrap_or("-")
    )
}

fn parse_agg(s: &str) -> Option<AggSpec> {
    let parts: Vec<&str> = s.split(':').collect();
    let [name, column, alias, max_size, overflow] = parts.as_slice() else {
        return None;
    };
    let opt = |v: &str| -> Option<Option<String>> {
        if v == "-" {
            Some(None)
        } else {
            String::from_utf8(unhex(v)?).ok().map(Some)
        }
    };
    let max_size = match *max_size {
        "-" => None,
        m => Some(m.parse().ok()?),
    };
    let overflow = match *overflow {
        "-" => Overflow::DropOldest,
        o => Overflow::parse(o).ok()?,
    };
    let func = AggFunc::from_name(name, max_size, overflow).ok()?;
    Some(AggSpec {
        func,
        column: opt(column)?,
        alias: opt(alias)?,
    })
}

/// A schema as an empty Arrow IPC stream. Writing to a Vec cannot fail.
fn schema_bytes(schema: &Schema) -> Vec<u8> {
    let mut out = Vec::new();
    if let Ok(mut w) = StreamWriter::try_new(&mut out, schema) {
        let _ = w.finish();
    }
    out
}

/// The name of an `on_invalid` policy.
fn on_invalid_name(p: OnInvalid) -> &'static str {
    match p {
        OnInvalid::Drop => "drop",
        OnInvalid::Error => "error",
    }
}

/// Writes one engine's entries under its prefix.
pub struct MetaWriter<'a> {
    prefix: &'static str,
    meta: &'a mut HashMap<String, String>,
}

impl<'a> MetaWriter<'a> {
    /// A writer of entries `{prefix}{name}`, starting with the engine's `kind`.
    pub(crate) fn new(
        prefix: &'static str,
        kind: &str,
        meta: &'a mut HashMap<String, String>,
    ) -> Self {
        let mut w = Self { prefix, meta };
        w.put("kind", kind.to_string());
        w
    }

    /// A raw entry.
    pub(crate) fn put(&mut self, name: &str, value: String) {
        self.meta.insert(format!("{}{name}", self.prefix), value);
    }

    /// A duration.
    pub(crate) fn duration(&mut self, name: &str, d: Duration) {
        self.put(name, duration(d));
    }

    /// A caller-chosen string, hex-encoded.
    pub(crate) fn text(&mut self, name: &str, s: &str) {
        self.put(name, hex(s.as_bytes()));
    }

    /// The emit mode and the `on_invalid` policy.
    pub(crate) fn policies(&mut self, emit: EmitMode, on_invalid: OnInvalid) {
        self.put("emit", emit.as_str().into());
        self.put("on_invalid", on_invalid_name(on_invalid).into());
    }

    /// The input columns (without the gap column), the aggregations and the bound schema.
    pub(crate) fn input(&mut self, input: &InputSpec, aggs: &[AggSpec], schema: Option<&Schema>) {
        let keys: Vec<String> = input.key.iter().map(|k| hex(k.as_bytes())).collect();
        self.put("key", keys.join(","));
        self.text("time", &input.time);
        if let Some(u) = input.time_unit {
            self.put("time_unit", unit_name(u).into());
        }
        let aggs: Vec<String> = aggs.iter().map(agg).collect();
        self.put("aggs", aggs.join(";"));
        if let Some(schema) = schema {
            self.put("schema", hex(&schema_bytes(schema)));
        }
    }
}

/// Reads one engine's entries, with errors naming the snapshot file.
pub struct MetaReader<'a> {
    prefix: &'static str,
    what: &'static str,
    path: &'a Path,
    meta: &'a HashMap<String, String>,
}

impl<'a> MetaReader<'a> {
    /// A reader of `{prefix}{name}` entries of a `what` (e.g. "session processor") snapshot;
    /// fails unless the snapshot's kind is `kind`.
    pub(crate) fn new(
        prefix: &'static str,
        what: &'static str,
        kind: &str,
        path: &'a Path,
        meta: &'a HashMap<String, String>,
    ) -> Result<Self> {
        let r = Self {
            prefix,
            what,
            path,
            meta,
        };
        if r.get("kind") != Some(kind) {
            return Err(r.bad(&format!("not a {what} snapshot")));
        }
        Ok(r)
    }

    /// An error about this snapshot's metadata.
    pub(crate) fn bad(&self, why: &str) -> Error {
        Error::snapshot(self.path, format!("{} state: {why}", self.what))
    }

    /// An entry, if present.
    pub(crate) fn get(&self, name: &str) -> Option<&'a str> {
        self.meta
            .get(&format!("{}{name}", self.prefix))
            .map(String::as_str)
    }

    /// An entry that must be present.
    pub(crate) fn need(&self, name: &str) -> Result<&'a str> {
        self.get(name)
            .ok_or_else(|| self.bad(&format!("{name} is missing")))
    }

    /// A duration.
    pub(crate) fn duration(&self, name: &str) -> Result<Duration> {
        parse_duration(self.need(name)?).ok_or_else(|| self.bad(&format!("{name} is malformed")))
    }

    /// A hex-encoded string.
    pub(crate) fn text(&self, name: &str) -> Result<String> {
        self.decode_text(self.need(name)?, name)
    }

    fn decode_text(&self, v: &str, name: &str) -> Result<String> {
        unhex(v)
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| self.bad(&format!("{name} is malformed")))
    }

    /// A number.
    pub(crate) fn number<T: std::str::FromStr>(&self, name: &str) -> Result<T> {
        self.need(name)?
            .parse()
            .map_err(|_| self.bad(&format!("{name} is not a number")))
    }

    /// The emit mode and the `on_invalid` policy.
    pub(crate) fn policies(&self) -> Result<(EmitMode, OnInvalid)> {
        let emit = EmitMode::parse(self.need("emit")?).map_err(|_| self.bad("emit is malformed"));
        let on_invalid = OnInvalid::parse(self.need("on_invalid")?)
            .map_err(|_| self.bad("on_invalid is malformed"));
        Ok((emit?, on_invalid?))
    }

    /// The input columns (gap column unset), the aggregations and the bound schema.
    pub(crate) fn input(&self) -> Result<(InputSpec, Vec<AggSpec>, Option<SchemaRef>)> {
        let input = InputSpec {
            key: self
                .need("key")?
                .split(',')
                .map(|k| self.decode_text(k, "key"))
                .collect::<Result<_>>()?,
            time: self.text("time")?,
            time_unit: self
                .get("time_unit")
                .map(parse_unit)
                .transpose()
                .map_err(|_| self.bad("time_unit is malformed"))?,
            gap: None,
            markers: Default::default(),
        };
        let aggs = match self.need("aggs")? {
            "" => Vec::new(),
            s => s
                .split(';')
                .map(|a| parse_agg(a).ok_or_else(|| self.bad("aggs are malformed")))
                .collect::<Result<_>>()?,
        };
        let schema = match self.get("schema") {
            Some(h) => {
                let bytes = unhex(h).ok_or_else(|| self.bad("schema is malformed"))?;
                let reader = StreamReader::try_new(bytes.as_slice(), None)
                    .map_err(|e| self.bad(&format!("schema is unreadable: {e}")))?;
                Some(reader.schema())
            }
            None => None,
        };
        Ok((input, aggs, schema))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggs_and_durations_round_trip() {
        let specs = [
            AggSpec {
                func: AggFunc::Count,
                column: None,
                alias: Some("n:;,".into()),
            },
            AggSpec {
                func: AggFunc::Collect {
                    max_size: Some(3),
                    overflow: Overflow::DropNewest,
                },
                column: Some("päge".into()),
                alias: None,
            },
        ];
        for s in &specs {
            let back = parse_agg(&agg(s)).unwrap();
            assert_eq!(agg(&back), agg(s));
            assert_eq!(back.alias, s.alias);
            assert_eq!(back.column, s.column);
        }
        for d in [Duration::Ticks(-5), Duration::Nanos(30_000_000_000)] {
            assert_eq!(parse_duration(&duration(d)), Some(d));
        }
        assert_eq!(unhex(&hex(b"\x00\xffab")).unwrap(), b"\x00\xffab");
        assert!(unhex("zz").is_none());
    }
}
