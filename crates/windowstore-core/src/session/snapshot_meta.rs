//! A session processor's own state in snapshot metadata, under `windowstore.session.*` (the
//! shared encoding is in `crate::meta`; the store carries the sessions).

use std::collections::HashMap;
use std::path::Path;

use super::processor::{Counters, SessionProcessor};
use super::spec::{GapSpec, SessionSpec};
use crate::meta::{MetaReader, MetaWriter};
use crate::{Result, SessionStore};

const PREFIX: &str = "windowstore.session.";
const KIND: &str = "session-processor/1";

/// Writes `processor`'s own state into `meta`.
pub(super) fn write(processor: &SessionProcessor, meta: &mut HashMap<String, String>) {
    let p = processor.parts();
    let mut w = MetaWriter::new(PREFIX, KIND, meta);
    match &p.spec.gap {
        GapSpec::Fixed(g) => w.duration("gap", *g),
        GapSpec::Column { column, max_gap } => {
            w.text("gap_column", column);
            w.duration("max_gap", *max_gap);
        }
    }
    w.duration("grace", p.spec.grace);
    if let Some(r) = p.spec.retention {
        w.duration("retention", r);
    }
    w.policies(p.spec.emit, p.spec.on_invalid);
    w.input(p.input, p.aggs, p.schema);
    w.progress(p.life);
    w.put("records", p.counters.records.to_string());
    w.put("accepted", p.counters.accepted.to_string());
    w.put("gap_clamped", p.counters.gap_clamped.to_string());
    w.put("emitted", p.counters.emitted.to_string());
}

/// Rebuilds a processor from a snapshot's store and metadata.
pub(super) fn read(
    path: &Path,
    store: SessionStore,
    meta: HashMap<String, String>,
) -> Result<SessionProcessor> {
    let r = MetaReader::new(PREFIX, "session processor", KIND, path, &meta)?;
    let gap = match r.get("gap_column") {
        Some(_) => GapSpec::Column {
            column: r.text("gap_column")?,
            max_gap: r.duration("max_gap")?,
        },
        None => GapSpec::Fixed(r.duration("gap")?),
    };
    let (emit, on_invalid) = r.policies()?;
    let spec = SessionSpec {
        gap,
        grace: r.duration("grace")?,
        retention: r
            .get("retention")
            .map(|_| r.duration("retention"))
            .transpose()?,
        emit,
        on_invalid,
    };
    let (input, aggs, schema) = r.input()?;
    let counters = Counters {
        records: r.number("records")?,
        accepted: r.number("accepted")?,
        gap_clamped: r.number("gap_clamped")?,
        emitted: r.number("emitted")?,
    };
    SessionProcessor::from_parts(spec, input, aggs, schema, store, r.progress()?, counters)
        .map_err(|e| r.bad(&format!("cannot rebuild the processor: {e}")))
}
