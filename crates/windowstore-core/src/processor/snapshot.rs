//! A processor's whole state as snapshot bytes: the store carries the windows, the metadata
//! (under the kind's prefix) the parameters, input columns, progress, counters, and the
//! rejected rows not taken yet. Restoring validates the content, not just the checksum
//! (`validate`), so edited bytes are refused rather than loaded.

use std::collections::HashMap;
use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use super::clock::{Clock, IdleMark};
use super::held::Held;
use super::lifecycle::Restored;
use super::records;
use super::{Counters, KindCounters, Processor, WindowKind};
use crate::input::KeyCodec;
use crate::meta::{MetaReader, MetaWriter};
use crate::reject::{rejected_schema, Reason};
use crate::store::key_table::KeyTable;
use crate::store::{snapshot_format, WindowStore};
use crate::{Error, Result, SessionStore};

/// What names snapshot bytes that came from memory in errors (a file's path names a file).
pub(crate) const IN_MEMORY: &str = "<snapshot bytes>";
/// The snapshot table of records mode's held rows.
const HELD: &str = "held_rows";
/// The snapshot table of the held rows' arrival numbers and times, row for row beside them.
const HELD_INDEX: &str = "held_index";
/// The snapshot table of the rejected rows not taken yet.
const REJECTED: &str = "rejected_rows";

impl<K: WindowKind> Processor<K> {
    /// Writes the processor's whole state to `path` atomically (see `store::snapshot_format`).
    pub fn snapshot(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let bytes = self.to_bytes()?;
        let staged = snapshot_format::stage(path, &bytes)?;
        snapshot_format::commit(&staged, path)
    }

    /// Restores a processor written by [`Self::snapshot`]; refuses a damaged file whole.
    pub fn restore(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let bytes =
            std::fs::read(path).map_err(|e| Error::snapshot(path, format!("cannot read: {e}")))?;
        Self::from_parts(path, snapshot_format::decode_tables(path, &bytes)?)
    }

    /// The processor's whole state as bytes (the bytes [`Self::snapshot`] writes).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let meta = self.meta()?;
        let tables = self.tables()?;
        match &self.bound {
            Some(b) => b.store.encode_tables(&meta, &tables),
            None => snapshot_format::encode_tables(&SessionStore::new(1, None)?, &meta, &tables),
        }
    }

    /// Restores a processor from [`Self::to_bytes`]; refuses damaged bytes whole.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let path = Path::new(IN_MEMORY);
        Self::from_parts(path, snapshot_format::decode_tables(path, bytes)?)
    }

    /// The rows the processor keeps beside its windows: the held rows of records mode and the
    /// rejected rows not taken yet.
    fn tables(&self) -> Result<Vec<snapshot_format::Table>> {
        let mut tables = Vec::new();
        let Some(schema) = self.bound.as_ref().map(|b| b.input.schema()) else {
            return Ok(tables);
        };
        if let Some(held) = &self.call.held {
            let (rows, index) = held.to_batches(schema)?;
            tables.push((HELD.into(), schema.clone(), vec![rows]));
            tables.push((HELD_INDEX.into(), Held::index_schema(), vec![index]));
        }
        let kept = self.call.life.rejections.kept();
        if !kept.is_empty() {
            let rejected = rejected_schema(schema);
            tables.push((REJECTED.into(), rejected, kept.to_vec()));
        }
        Ok(tables)
    }

    fn meta(&self) -> Result<HashMap<String, String>> {
        let mut meta = HashMap::new();
        let mut w = MetaWriter::new(K::PREFIX, K::KIND, &mut meta);
        self.kind.write_meta(&mut w);
        w.policies(self.kind.emit(), self.kind.on_invalid());
        let schema = self.bound.as_ref().map(|b| b.input.schema().as_ref());
        w.input(&self.input, &self.agg_specs, schema);
        let life = &self.call.life;
        if let Some(t) = life.stream_time {
            w.put("stream_time", t.to_string());
        }
        w.put("emitted_below", life.emitted_below.to_string());
        w.put("seq", life.seq.to_string());
        if let Some(t) = life.latest_end {
            w.put("latest_end", t.to_string());
        }
        w.put("flushed", life.flushed.to_string());
        w.put("clock", self.clock.name().to_string());
        if let Clock::Idle(timeout) = self.clock {
            w.duration("idle_timeout", timeout);
        }
        if let Some(idle) = &self.idle {
            w.put("idle_wall", idle.wall_ms.to_string());
            w.put("idle_stream_time", idle.stream_time.to_string());
            if let Some(run) = &self.run {
                w.text("idle_run", run);
            }
        }
        for reason in Reason::ALL {
            let name = format!("rejected.{}", reason.as_str());
            w.put(&name, life.rejections.count(reason).to_string());
        }
        for (name, value) in self.call.counters.pairs() {
            w.put(name, value.to_string());
        }
        if self.call.held.is_some() {
            w.put("output", "records".into());
        }
        Ok(meta)
    }

    /// Restores a processor from decoded snapshot parts, read from `path` (which names it in
    /// errors); refuses them whole if any part is malformed or the content is not one a
    /// processor could have written.
    pub(crate) fn from_parts(
        path: &Path,
        (store, meta, tables): snapshot_format::Decoded,
    ) -> Result<Self> {
        let r = MetaReader::new(K::PREFIX, K::WHAT, K::KIND, path, &meta)?;
        let mut tables: Tables = tables
            .into_iter()
            .map(|(name, schema, batches)| (name, (schema, batches)))
            .collect();
        let (emit, on_invalid) = r.policies()?;
        let kind = K::read_meta(&r, emit, on_invalid)?;
        let (input, aggs, schema) = r.input()?;
        let clock = read_clock(&r)?;
        let records = read_records_mode(&r)?;
        let mut p = if records {
            if aggs != [records::last_agg()] {
                return Err(r.bad("records mode with other aggregations"));
            }
            Self::new(kind, input, Vec::new()).and_then(Self::with_records)
        } else {
            Self::new(kind, input, aggs)
        }
        .and_then(|p| p.with_clock(clock))
        .map_err(|e| rebuild_error(&r, &e))?;
        p.restore_idle_mark(&r, clock)?;
        if let Some(schema) = schema {
            p.restore_bound(&r, schema, store, &mut tables, records)?;
        } else if store.metrics().live_sessions > 0 {
            return Err(r.bad("windows without an input schema"));
        }
        if let Some(name) = tables.keys().next() {
            return Err(r.bad(&format!("an unexpected table {name:?}")));
        }
        p.call.life.restore(read_progress(&r)?);
        p.call.counters = read_counters(&r)?;
        p.validate_restored()
            .map_err(|why| r.bad(&format!("content refused: {why}")))?;
        Ok(p)
    }

    /// Keeps the idle mark the metadata holds, if any, for the run that wrote it to resume;
    /// refuses one under a clock without an idle timeout.
    fn restore_idle_mark(&mut self, r: &MetaReader<'_>, clock: Clock) -> Result<()> {
        if r.get("idle_wall").is_none() {
            return Ok(());
        }
        if !matches!(clock, Clock::Idle(_)) {
            return Err(r.bad("an idle mark without an idle timeout"));
        }
        let mark = IdleMark {
            wall_ms: r.number("idle_wall")?,
            stream_time: r.number("idle_stream_time")?,
        };
        // Only the run that wrote it can resume it (Processor::resume_idle).
        if r.get("idle_run").is_some() {
            self.saved_idle = Some((mark, r.text("idle_run")?));
        }
        Ok(())
    }

    /// Binds the restored input `schema`, then restores the windows of `store`, and takes from
    /// `tables` the rejected rows not taken yet and (in records mode, which must have them)
    /// the held rows.
    fn restore_bound(
        &mut self,
        r: &MetaReader<'_>,
        schema: SchemaRef,
        store: SessionStore,
        tables: &mut Tables,
        records: bool,
    ) -> Result<()> {
        self.bind_restored(schema.clone())
            .map_err(|e| rebuild_error(r, &e))?;
        let bound = self.bound.as_mut().ok_or_else(|| r.bad("no schema"))?;
        bound
            .restore_store(store)
            .map_err(|e| rebuild_error(r, &e))?;
        if let Some(kept) = tables.remove(REJECTED) {
            let kept = read_rows(kept, &rejected_schema(&schema))
                .map_err(|why| r.bad(&format!("{REJECTED}: {why}")))?;
            self.call.life.rejections.set_kept(kept);
        }
        if let Some(held) = tables.remove(HELD) {
            let table = bound.store.keys_mut();
            let held = read_held(r, held, tables, &schema, &bound.input.keys, table)?;
            self.call.held = Some(held);
            if !records {
                return Err(r.bad("held rows without records mode"));
            }
        } else if records {
            return Err(r.bad("records mode without its held rows"));
        }
        Ok(())
    }
}

/// A snapshot's tables by name: their schema and batches.
type Tables = HashMap<String, (SchemaRef, Vec<RecordBatch>)>;

/// The error of a processor that cannot be rebuilt from what the metadata says.
fn rebuild_error(r: &MetaReader<'_>, e: &Error) -> Error {
    r.bad(&format!("cannot rebuild the processor: {e}"))
}

/// The clock the metadata names.
fn read_clock(r: &MetaReader<'_>) -> Result<Clock> {
    Ok(match r.need("clock")? {
        "event" => Clock::Event,
        "processing" => Clock::Processing,
        "idle" => Clock::Idle(r.duration("idle_timeout")?),
        _ => return Err(r.bad("clock is malformed")),
    })
}

/// Whether the metadata says the processor outputs records (records mode).
fn read_records_mode(r: &MetaReader<'_>) -> Result<bool> {
    match r.get("output") {
        None => Ok(false),
        Some("records") => Ok(true),
        Some(_) => Err(r.bad("output is malformed")),
    }
}

/// Records mode's held rows: `held` (the `HELD` table, with the input `schema`'s columns) and
/// their index, taken from `tables`, the rows' keys encoded by `keys`.
fn read_held(
    r: &MetaReader<'_>,
    held: (SchemaRef, Vec<RecordBatch>),
    tables: &mut Tables,
    schema: &SchemaRef,
    keys: &KeyCodec,
    table: &mut KeyTable,
) -> Result<Held> {
    let bad = |why: &dyn std::fmt::Display| r.bad(&format!("{HELD}: {why}"));
    let (index_schema, index) = tables
        .remove(HELD_INDEX)
        .ok_or_else(|| bad(&"held rows without their index"))?;
    if index_schema.fields() != Held::index_schema().fields() {
        return Err(bad(&"a malformed index"));
    }
    let index = arrow_select::concat::concat_batches(&index_schema, &index).map_err(|e| bad(&e))?;
    let rows = read_rows(held, schema).map_err(|why| bad(&why))?;
    let rows = arrow_select::concat::concat_batches(schema, &rows).map_err(|e| bad(&e))?;
    let next_seq = r.number("seq")?;
    let keys = keys.encode(&rows).map_err(|e| bad(&e))?;
    if keys.null.contains(&true) {
        return Err(bad(&"a held row with a null key"));
    }
    let key = |i| keys.rows.row(i).data();
    Held::from_batches(rows, &index, next_seq, key, table).map_err(|why| bad(&why))
}

/// Where the processor stood: stream time, the emitted bound, the next arrival number, the
/// latest window end, whether it was flushed, and the rejection counts.
fn read_progress(r: &MetaReader<'_>) -> Result<Restored> {
    Ok(Restored {
        stream_time: r
            .get("stream_time")
            .map(|_| r.number("stream_time"))
            .transpose()?,
        emitted_below: r.number("emitted_below")?,
        seq: r.number("seq")?,
        latest_end: r
            .get("latest_end")
            .map(|_| r.number("latest_end"))
            .transpose()?,
        flushed: match r.need("flushed")? {
            "true" => true,
            "false" => false,
            _ => return Err(r.bad("flushed is malformed")),
        },
        rejected: Reason::ALL
            .iter()
            .map(|&reason| Ok((reason, r.number(&format!("rejected.{}", reason.as_str()))?)))
            .collect::<Result<_>>()?,
    })
}

/// The processor's counters, and the kind's.
fn read_counters<C: KindCounters>(r: &MetaReader<'_>) -> Result<Counters<C>> {
    let kind_values = C::NAMES
        .iter()
        .map(|name| r.number(name))
        .collect::<Result<Vec<u64>>>()?;
    Ok(Counters {
        records: r.number("records")?,
        accepted: r.number("accepted")?,
        emitted: r.number("emitted")?,
        kind: C::from_values(&kind_values),
    })
}

/// A table's batches, which must have `schema`'s columns.
fn read_rows(
    (found, batches): (SchemaRef, Vec<RecordBatch>),
    schema: &arrow_schema::Schema,
) -> std::result::Result<Vec<RecordBatch>, String> {
    if found.fields() != schema.fields() {
        return Err("their columns are not the input's".into());
    }
    Ok(batches)
}
