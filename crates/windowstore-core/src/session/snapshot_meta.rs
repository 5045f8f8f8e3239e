//! A session processor's own state in snapshot metadata (the store carries the sessions).
//!
//! Values are plain strings under `windowstore.session.*`; strings the caller chose (column
//! names, aliases) are hex-encoded so no separator can collide with them, and the bound input
//! schema is stored as an empty Arrow IPC stream, hex-encoded.

use std::collections::HashMap;
use std::path::Path;

use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::TimeUnit;

use super::processor::{Counters, Parts, RestoredState, SessionProcessor};
use super::spec::{GapSpec, OnInvalid, SessionSpec};
use crate::agg::{AggFunc, AggSpec, Overflow};
use crate::emit::EmitMode;
use crate::input::InputSpec;
use crate::reject::Reason;
use crate::time::{parse_unit, unit_name, Duration};
use crate::{Error, Result, SessionStore};

const KIND: &str = "windowstore.session.kind";
const KIND_VALUE: &str = "session-processor/1";
const P: &str = "windowstore.session.";

fn hex(s: &[u8]) -> String {
    s.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
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
        AggFunc::Collect { max_size, overflow } => (*max_size, Some(overflow.name())),
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
fn schema_bytes(schema: &arrow_schema::Schema) -> Vec<u8> {
    let mut out = Vec::new();
    if let Ok(mut w) = StreamWriter::try_new(&mut out, schema) {
        let _ = w.finish();
    }
    out
}

/// Writes `processor`'s own state into `meta`.
pub(super) fn write(processor: &SessionProcessor, meta: &mut HashMap<String, String>) {
    let p: Parts<'_> = processor.parts();
    let mut put = |k: &str, v: String| {
        meta.insert(format!("{P}{k}"), v);
    };
    put("kind", KIND_VALUE.into());
    match &p.spec.gap {
        GapSpec::Fixed(g) => put("gap", duration(*g)),
        GapSpec::Column { column, max_gap } => {
            put("gap_column", hex(column.as_bytes()));
            put("max_gap", duration(*max_gap));
        }
    }
    put("grace", duration(p.spec.grace));
    if let Some(r) = p.spec.retention {
        put("retention", duration(r));
    }
    put("emit", p.spec.emit.as_str().into());
    put(
        "on_invalid",
        match p.spec.on_invalid {
            OnInvalid::Drop => "drop",
            OnInvalid::Error => "error",
        }
        .into(),
    );
    put(
        "key",
        p.input
            .key
            .iter()
            .map(|k| hex(k.as_bytes()))
            .collect::<Vec<_>>()
            .join(","),
    );
    put("time", hex(p.input.time.as_bytes()));
    if let Some(u) = p.input.time_unit {
        put("time_unit", unit_name(u).into());
    }
    put("aggs", p.aggs.iter().map(agg).collect::<Vec<_>>().join(";"));
    if let Some(schema) = p.schema {
        put("schema", hex(&schema_bytes(schema)));
    }
    if let Some(t) = p.stream_time {
        put("stream_time", t.to_string());
    }
    put("emitted_below", p.emitted_below.to_string());
    put("seq", p.seq.to_string());
    put("records", p.counters.records.to_string());
    put("accepted", p.counters.accepted.to_string());
    put("gap_clamped", p.counters.gap_clamped.to_string());
    put("emitted", p.counters.emitted.to_string());
    put("flushed", p.flushed.to_string());
    for reason in Reason::ALL {
        put(
            &format!("rejected.{}", reason.as_str()),
            p.rejections.count(reason).to_string(),
        );
    }
}

/// Rebuilds a processor from a snapshot's store and metadata.
pub(super) fn read(
    path: &Path,
    store: SessionStore,
    meta: HashMap<String, String>,
) -> Result<SessionProcessor> {
    let bad = |what: &str| Error::snapshot(path, format!("session processor state: {what}"));
    let get = |k: &str| meta.get(&format!("{P}{k}")).map(String::as_str);
    let need = |k: &str| get(k).ok_or_else(|| bad(&format!("{k} is missing")));
    if meta.get(KIND).map(String::as_str) != Some(KIND_VALUE) {
        return Err(bad("not a session processor snapshot"));
    }
    let dur = |k: &str| -> Result<Duration> {
        parse_duration(need(k)?).ok_or_else(|| bad(&format!("{k} is malformed")))
    };
    let text = |v: &str, k: &str| -> Result<String> {
        unhex(v)
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| bad(&format!("{k} is malformed")))
    };
    let num = |k: &str| -> Result<i64> {
        need(k)?
            .parse()
            .map_err(|_| bad(&format!("{k} is not a number")))
    };
    let count = |k: &str| -> Result<u64> {
        need(k)?
            .parse()
            .map_err(|_| bad(&format!("{k} is not a number")))
    };
    let gap = match get("gap_column") {
        Some(c) => GapSpec::Column {
            column: text(c, "gap_column")?,
            max_gap: dur("max_gap")?,
        },
        None => GapSpec::Fixed(dur("gap")?),
    };
    let spec = SessionSpec {
        gap,
        grace: dur("grace")?,
        retention: get("retention").map(|_| dur("retention")).transpose()?,
        emit: EmitMode::parse(need("emit")?).map_err(|_| bad("emit is malformed"))?,
        on_invalid: OnInvalid::parse(need("on_invalid")?)
            .map_err(|_| bad("on_invalid is malformed"))?,
    };
    let input = InputSpec {
        key: need("key")?
            .split(',')
            .map(|k| text(k, "key"))
            .collect::<Result<_>>()?,
        time: text(need("time")?, "time")?,
        time_unit: get("time_unit")
            .map(parse_unit)
            .transpose()
            .map_err(|_| bad("time_unit is malformed"))?
            .map(|u: TimeUnit| u),
        gap: None,
    };
    let aggs = match need("aggs")? {
        "" => Vec::new(),
        s => s
            .split(';')
            .map(|a| parse_agg(a).ok_or_else(|| bad("aggs are malformed")))
            .collect::<Result<_>>()?,
    };
    let schema = match get("schema") {
        Some(h) => {
            let bytes = unhex(h).ok_or_else(|| bad("schema is malformed"))?;
            let reader = StreamReader::try_new(bytes.as_slice(), None)
                .map_err(|e| bad(&format!("schema is unreadable: {e}")))?;
            Some(reader.schema())
        }
        None => None,
    };
    let state = RestoredState {
        stream_time: get("stream_time").map(|_| num("stream_time")).transpose()?,
        emitted_below: num("emitted_below")?,
        seq: count("seq")?,
        counters: Counters {
            records: count("records")?,
            accepted: count("accepted")?,
            gap_clamped: count("gap_clamped")?,
            emitted: count("emitted")?,
        },
        flushed: need("flushed")? == "true",
        rejected: Reason::ALL
            .iter()
            .map(|&r| Ok((r, count(&format!("rejected.{}", r.as_str()))?)))
            .collect::<Result<_>>()?,
    };
    SessionProcessor::from_parts(spec, input, aggs, schema, store, state)
        .map_err(|e| bad(&format!("cannot rebuild the processor: {e}")))
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
