//! A sliding processor's own state in snapshot metadata, under `windowstore.sliding.*` (the
//! shared encoding is in `crate::meta`; the store carries the windows).

use std::collections::HashMap;
use std::path::Path;

use super::processor::{Counters, SlidingProcessor};
use super::spec::SlidingSpec;
use crate::meta::{MetaReader, MetaWriter};
use crate::{Result, SessionStore};

const PREFIX: &str = "windowstore.sliding.";
const KIND: &str = "sliding-processor/1";

/// Writes `processor`'s own state into `meta`.
pub(super) fn write(processor: &SlidingProcessor, meta: &mut HashMap<String, String>) {
    let p = processor.parts();
    let mut w = MetaWriter::new(PREFIX, KIND, meta);
    w.duration("time_difference", p.spec.time_difference);
    w.duration("grace", p.spec.grace);
    w.policies(p.spec.emit, p.spec.on_invalid);
    w.input(p.input, p.aggs, p.schema);
    w.progress(p.life);
    w.put("records", p.counters.records.to_string());
    w.put("accepted", p.counters.accepted.to_string());
    w.put(
        "late_window_update",
        p.counters.late_window_update.to_string(),
    );
    w.put("emitted", p.counters.emitted.to_string());
}

/// Rebuilds a processor from a snapshot's store and metadata.
pub(super) fn read(
    path: &Path,
    store: SessionStore,
    meta: HashMap<String, String>,
) -> Result<SlidingProcessor> {
    let r = MetaReader::new(PREFIX, "sliding processor", KIND, path, &meta)?;
    let (emit, on_invalid) = r.policies()?;
    let spec = SlidingSpec {
        time_difference: r.duration("time_difference")?,
        grace: r.duration("grace")?,
        emit,
        on_invalid,
    };
    let (input, aggs, schema) = r.input()?;
    let counters = Counters {
        records: r.number("records")?,
        accepted: r.number("accepted")?,
        late_window_update: r.number("late_window_update")?,
        emitted: r.number("emitted")?,
    };
    SlidingProcessor::from_parts(spec, input, aggs, schema, store, r.progress()?, counters)
        .map_err(|e| r.bad(&format!("cannot rebuild the processor: {e}")))
}
