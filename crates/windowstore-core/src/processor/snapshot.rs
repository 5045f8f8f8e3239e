//! A processor's whole state as snapshot bytes: the store carries the windows, the metadata
//! (under the kind's prefix) the parameters, input columns, progress, counters, and the
//! rejected rows not taken yet. Restoring validates the content, not just the checksum
//! (`validate`), so edited bytes are refused rather than loaded.

use std::collections::HashMap;
use std::path::Path;

use arrow_array::RecordBatch;
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;

use super::clock::{Clock, IdleMark};
use super::lifecycle::Restored;
use super::records;
use super::{Counters, KindCounters, Processor, WindowKind};
use crate::meta::{hex, unhex, MetaReader, MetaWriter};
use crate::reject::{rejected_schema, Reason};
use crate::store::snapshot;
use crate::{Error, Result, SessionStore};

/// What names snapshot bytes that came from memory in errors (a file's path names a file).
pub(crate) const IN_MEMORY: &str = "<snapshot bytes>";

impl<K: WindowKind> Processor<K> {
    /// Writes the processor's whole state to `path` atomically (see `store::snapshot`).
    pub fn snapshot(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let bytes = self.to_bytes()?;
        let staged = snapshot::stage(path, &bytes)?;
        snapshot::commit(&staged, path)
    }

    /// Restores a processor written by [`Self::snapshot`]; refuses a damaged file whole.
    pub fn restore(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let (store, meta) = snapshot::read(path)?;
        Self::from_parts(path, store, &meta)
    }

    /// The processor's whole state as bytes (the bytes [`Self::snapshot`] writes).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let meta = self.meta()?;
        match &self.bound {
            Some(b) => snapshot::encode(&b.store, &meta),
            None => snapshot::encode(&SessionStore::new(1, None)?, &meta),
        }
    }

    /// Restores a processor from [`Self::to_bytes`]; refuses damaged bytes whole.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let path = Path::new(IN_MEMORY);
        let (store, meta) = snapshot::decode(path, bytes)?;
        Self::from_parts(path, store, &meta)
    }

    fn meta(&self) -> Result<HashMap<String, String>> {
        let mut meta = HashMap::new();
        let mut w = MetaWriter::new(K::PREFIX, K::KIND, &mut meta);
        self.kind.write_meta(&mut w);
        w.policies(self.kind.emit(), self.kind.on_invalid());
        let schema = self.bound.as_ref().map(|b| b.input.schema().as_ref());
        w.input(&self.input, &self.agg_specs, schema);
        let life = &self.life;
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
        for (name, value) in self.counters.pairs() {
            w.put(name, value.to_string());
        }
        if let Some(held) = &self.held {
            w.put("output", "records".into());
            if let Some(schema) = schema {
                w.put(
                    "held_rows",
                    hex(&rows_bytes(
                        &records::with_row_field(schema),
                        &[held.to_batch(schema)?],
                    )?),
                );
            }
        }
        let kept = life.rejections.kept();
        if let (Some(schema), false) = (schema, kept.is_empty()) {
            w.put(
                "rejected_rows",
                hex(&rows_bytes(&rejected_schema(schema), kept)?),
            );
        }
        Ok(meta)
    }

    pub(super) fn from_parts(
        path: &Path,
        store: SessionStore,
        meta: &HashMap<String, String>,
    ) -> Result<Self> {
        let r = MetaReader::new(K::PREFIX, K::WHAT, K::KIND, path, meta)?;
        let (emit, on_invalid) = r.policies()?;
        let kind = K::read_meta(&r, emit, on_invalid)?;
        let (input, aggs, schema) = r.input()?;
        let rebuild = |e: Error| r.bad(&format!("cannot rebuild the processor: {e}"));
        let clock = match r.need("clock")? {
            "event" => Clock::Event,
            "processing" => Clock::Processing,
            "idle" => Clock::Idle(r.duration("idle_timeout")?),
            _ => return Err(r.bad("clock is malformed")),
        };
        let records = match r.get("output") {
            None => false,
            Some("records") => true,
            Some(_) => return Err(r.bad("output is malformed")),
        };
        let mut p = if records {
            if aggs != [records::rows_agg()] {
                return Err(r.bad("records mode with other aggregations"));
            }
            Self::new(kind, input, Vec::new()).and_then(Self::with_records)
        } else {
            Self::new(kind, input, aggs)
        }
        .and_then(|p| p.with_clock(clock))
        .map_err(rebuild)?;
        if r.get("idle_wall").is_some() {
            if !matches!(clock, Clock::Idle(_)) {
                return Err(r.bad("an idle mark without an idle timeout"));
            }
            let mark = IdleMark {
                wall_ms: r.number("idle_wall")?,
                stream_time: r.number("idle_stream_time")?,
            };
            // Only the run that wrote it can resume it (Processor::resume_idle).
            if r.get("idle_run").is_some() {
                p.saved_idle = Some((mark, r.text("idle_run")?));
            }
        }
        if let Some(schema) = schema {
            p.bind(schema.clone()).map_err(rebuild)?;
            let bound = p.bound.as_mut().ok_or_else(|| r.bad("no schema"))?;
            bound.restore_store(store).map_err(rebuild)?;
            if let Some(h) = r.get("rejected_rows") {
                let bytes = unhex(h).ok_or_else(|| r.bad("rejected_rows is malformed"))?;
                let kept = read_rows(&bytes, &rejected_schema(&schema))
                    .map_err(|why| r.bad(&format!("rejected_rows: {why}")))?;
                p.life.rejections.set_kept(kept);
            }
            if let Some(h) = r.get("held_rows") {
                let bytes = unhex(h).ok_or_else(|| r.bad("held_rows is malformed"))?;
                let rows = read_rows(&bytes, &records::with_row_field(&schema))
                    .map_err(|why| r.bad(&format!("held_rows: {why}")))?;
                let batch =
                    arrow_select::concat::concat_batches(&records::with_row_field(&schema), &rows)
                        .map_err(|e| r.bad(&format!("held_rows: {e}")))?;
                let next_seq = r.number("seq")?;
                p.held = Some(
                    records::Held::from_batch(&batch, next_seq)
                        .map_err(|why| r.bad(&format!("held_rows: {why}")))?,
                );
            } else if records {
                return Err(r.bad("records mode without its held rows"));
            }
        } else if store.metrics().live_sessions > 0 {
            return Err(r.bad("windows without an input schema"));
        }
        p.life.restore(Restored {
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
        });
        let kind_values = K::Counters::NAMES
            .iter()
            .map(|name| r.number(name))
            .collect::<Result<Vec<u64>>>()?;
        p.counters = Counters {
            records: r.number("records")?,
            accepted: r.number("accepted")?,
            emitted: r.number("emitted")?,
            kind: K::Counters::from_values(&kind_values),
        };
        p.validate_restored()
            .map_err(|why| r.bad(&format!("content refused: {why}")))?;
        Ok(p)
    }
}

/// `batches` as an Arrow IPC stream of `schema`.
fn rows_bytes(schema: &arrow_schema::Schema, batches: &[RecordBatch]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut w =
        StreamWriter::try_new(&mut out, schema).map_err(Error::arrow("writing rejected rows"))?;
    for b in batches {
        w.write(b).map_err(Error::arrow("writing rejected rows"))?;
    }
    w.finish().map_err(Error::arrow("writing rejected rows"))?;
    drop(w);
    Ok(out)
}

/// The batches of an Arrow IPC stream, which must have `schema`.
fn read_rows(
    bytes: &[u8],
    schema: &arrow_schema::Schema,
) -> std::result::Result<Vec<RecordBatch>, String> {
    let reader = StreamReader::try_new(bytes, None).map_err(|e| e.to_string())?;
    if reader.schema().fields() != schema.fields() {
        return Err("their columns are not the input's".into());
    }
    reader.map(|b| b.map_err(|e| e.to_string())).collect()
}
