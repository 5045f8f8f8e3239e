//! The streaming session processor: records one by one, in batch order, against the store.
//!
//! Each stored session's value is its reach (`max(t + gap)`, 8 bytes little-endian) followed by
//! its aggregate state. Per record (SEMANTICS.md section 2, streaming):
//!
//! 1. stream time becomes `max(stream time, t)`;
//! 2. the candidates are the key's sessions whose coverage `[start, reach]` meets `[t, t + g]`
//!    (one hop suffices: the covered sessions' union with `[t, t + g]` is one interval);
//! 3. the record is late if the merged session would be closed (`reach + grace < stream time`)
//!    or if it touches a closed session still in the store;
//! 4. otherwise the candidates are removed and the merged session is put, with Kafka's
//!    forwarding rule in `changes` mode (no delete when the merged window is `[t, t]`).
//!
//! `final` emits a session once it closes: at the end of each batch, and before any put that
//! would drop segments (every session expiry drops is closed by then, so none is lost).

use std::collections::HashMap;
use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};

use super::record::record_gap;
use super::snapshot_meta;
use super::spec::{OnInvalid, Resolved, SessionSpec};
use crate::agg::{fill_overflow, AggSpec};
use crate::emit::{Change, Changelog, EmitMode};
use crate::engine::{
    encode_snapshot, processor_common, write_snapshot, Bound, Lifecycle, Restored, IN_MEMORY,
};
use crate::input::InputSpec;
use crate::output::Layout;
use crate::reject::Reason;
use crate::state;
use crate::store::session_store::PutOutcome;
use crate::store::snapshot;
use crate::{Error, KeyedSession, Result, SessionStore};

const LAYOUT: Layout = Layout {
    start: "session_start",
    end: "session_end",
    time: None,
    op: false,
};

/// Counters of a processor, beyond the rejections.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Input records seen.
    pub records: u64,
    /// Records aggregated into a session.
    pub accepted: u64,
    /// Dynamic gaps clamped to `max_gap`.
    pub gap_clamped: u64,
    /// Output rows emitted (final windows, or changelog rows).
    pub emitted: u64,
}

/// A session window processor over a stream of Arrow record batches.
#[derive(Debug)]
pub struct SessionProcessor {
    spec: SessionSpec,
    input: InputSpec,
    agg_specs: Vec<AggSpec>,
    bound: Option<Bound<Resolved>>,
    /// Stream time, arrivals, rejections; `emitted_below`: every session with a smaller reach
    /// has been emitted (final mode).
    life: Lifecycle,
    counters: Counters,
}

/// A candidate session for a record: its window, reach, and where its state lies in scratch.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    start: i64,
    end: i64,
    reach: i64,
    state: (usize, usize),
}

impl SessionProcessor {
    /// A processor for `spec` over input columns `input`, computing `aggs`.
    pub fn new(spec: SessionSpec, input: InputSpec, aggs: Vec<AggSpec>) -> Result<Self> {
        spec.validate()?;
        let input = InputSpec {
            gap: spec.gap_column().map(str::to_string),
            ..input
        };
        Ok(Self {
            spec,
            input,
            agg_specs: aggs,
            bound: None,
            life: Lifecycle::default(),
            counters: Counters::default(),
        })
    }

    /// Binds the processor to an input schema now (the first batch does it otherwise).
    pub fn bind(&mut self, schema: SchemaRef) -> Result<()> {
        if self.bound.is_none() {
            let layout = Layout {
                op: self.spec.emit != EmitMode::Final,
                ..LAYOUT
            };
            let spec = &self.spec;
            self.bound = Some(Bound::try_new(
                &self.input,
                &self.agg_specs,
                &schema,
                layout,
                |unit| spec.resolve(unit),
                // The store keeps `end >= store time - retention`, which is what the contract
                // asks.
                |ticks| ticks.retention.saturating_add(1),
            )?);
        }
        Ok(())
    }

    processor_common!(snapshot_meta);

    fn process_bound(&mut self, batch: &RecordBatch) -> Result<RecordBatch> {
        let bound = self.bound.as_mut().expect("bound above");
        let batch = &bound.input.conform(batch)?;
        let n = batch.num_rows();
        let keys = bound.input.keys.encode(batch)?;
        let times = bound.input.time.read(batch);
        let gaps = bound.input.gap.as_ref().map(|g| g.read(batch));
        let ticks = bound.ticks;

        // Validate every record first: under on_invalid="error" a bad record fails the call
        // before any state changes.
        let mut record_gap_of = vec![0i64; n];
        let mut invalid: Vec<Option<Reason>> = vec![None; n];
        let mut clamped = 0u64;
        for row in 0..n {
            let column_gap = gaps.as_ref().and_then(|g| g[row]);
            let t = times.ticks[row];
            match record_gap(
                keys.null[row],
                times.problem(row),
                t,
                ticks.fixed_gap,
                column_gap,
                ticks.max_gap,
            ) {
                Ok((g, was_clamped)) => {
                    record_gap_of[row] = g;
                    clamped += u64::from(was_clamped);
                }
                Err(reason) => invalid[row] = Some(reason),
            }
            if self.spec.on_invalid == OnInvalid::Error {
                if let Some(reason) = invalid[row] {
                    return Err(Error::InvalidRecord {
                        row,
                        reason: reason.as_str().to_string(),
                    });
                }
            }
        }

        let mode = self.spec.emit;
        let mut changelog = Changelog::new(mode);
        let mut finals: Vec<Change> = Vec::new();
        let mut candidates: Vec<Candidate> = Vec::new();
        let mut scratch: Vec<u8> = Vec::new();
        let (mut acc, mut merged, mut value) = (Vec::new(), Vec::new(), Vec::new());

        for row in 0..n {
            let seq = self.life.seq;
            self.life.seq += 1;
            self.counters.records += 1;
            if let Some(reason) = invalid[row] {
                self.life.rejections.reject(row, reason);
                continue;
            }
            let key = keys.rows.row(row);
            let key = key.as_ref();
            let t = times.ticks[row];
            let reach_rec = t + record_gap_of[row];
            let st = self.life.observe(t);
            let close = st.saturating_sub(ticks.grace);

            candidates.clear();
            scratch.clear();
            for s in bound
                .store
                .find_sessions(key, t.saturating_sub(ticks.max_gap), reach_rec)
            {
                let (reach, agg_state) = state::split(s.value);
                if reach >= t {
                    let at = scratch.len();
                    scratch.extend_from_slice(agg_state);
                    candidates.push(Candidate {
                        start: s.start,
                        end: s.end,
                        reach,
                        state: (at, scratch.len()),
                    });
                }
            }
            let (mut m_start, mut m_end, mut m_reach) = (t, t, reach_rec);
            let mut touches_closed = false;
            for c in &candidates {
                m_start = m_start.min(c.start);
                m_end = m_end.max(c.end);
                m_reach = m_reach.max(c.reach);
                touches_closed |= c.reach < close;
            }
            if touches_closed || m_reach < close {
                self.life.rejections.reject(row, Reason::Late);
                continue;
            }

            acc.clear();
            bound.aggs.encode_row(batch, row, t, seq, &mut acc);
            for c in &candidates {
                merged.clear();
                if let Err(e) = bound
                    .aggs
                    .merge(&acc, &scratch[c.state.0..c.state.1], &mut merged)
                {
                    return Err(fill_overflow(
                        e,
                        bound.input.keys.render(key),
                        m_start,
                        m_end,
                    ));
                }
                std::mem::swap(&mut acc, &mut merged);
            }

            // Kafka removes (and forwards a delete for) every merged session unless the merged
            // window is the record's own [t, t], which it overwrites in place.
            let overwrite = (m_start, m_end) == (t, t);
            if !overwrite && mode != EmitMode::Final {
                for c in &candidates {
                    changelog.push(
                        Change {
                            key: key.to_vec(),
                            start: c.start,
                            end: c.end,
                            time: c.end,
                            state: scratch[c.state.0..c.state.1].to_vec(),
                            delete: true,
                        },
                        false,
                    );
                }
            }
            if mode == EmitMode::Final && bound.store.put_would_drop_segments(m_end) {
                self.life.emitted_below = emit_closed(
                    &bound.store,
                    ticks,
                    self.life.emitted_below,
                    close,
                    &mut finals,
                );
            }
            // The store gets the merged session before the merged-away ones go, so the key
            // stays interned (removing first would free it and intern it again at once).
            value.clear();
            state::join(m_reach, &acc, &mut value);
            let outcome = bound.store.put(key, m_start, m_end, &value)?;
            if outcome == PutOutcome::Expired {
                // Unreachable while retention >= max gap + grace (checked when binding); kept
                // as a rejection so that a record can never vanish.
                self.life.rejections.reject(row, Reason::Late);
                continue;
            }
            for c in &candidates {
                if (c.start, c.end) != (m_start, m_end) {
                    bound.store.remove(key, c.start, c.end);
                }
            }
            self.counters.accepted += 1;
            if mode != EmitMode::Final {
                changelog.push(
                    Change {
                        key: key.to_vec(),
                        start: m_start,
                        end: m_end,
                        time: m_end,
                        state: acc.clone(),
                        delete: false,
                    },
                    // A merged window equal to a merged-away one was deleted and put again:
                    // for the changelog it is new, like a window the store had not held.
                    outcome == PutOutcome::Inserted
                        || (!overwrite
                            && candidates
                                .iter()
                                .any(|c| (c.start, c.end) == (m_start, m_end))),
                );
            }
        }
        self.counters.gap_clamped += clamped;
        self.life.rejections.finish_batch(batch)?;

        let rows = if mode == EmitMode::Final {
            if let Some(st) = self.life.stream_time {
                let close = st.saturating_sub(ticks.grace);
                self.life.emitted_below = emit_closed(
                    &bound.store,
                    ticks,
                    self.life.emitted_below,
                    close,
                    &mut finals,
                );
            }
            finals
        } else {
            changelog.take()
        };
        self.counters.emitted += rows.len() as u64;
        bound.build(&rows)
    }

    /// End of input: in `final` mode emits every session not emitted yet. The processor takes
    /// no more input afterwards.
    pub fn flush(&mut self) -> Result<Option<RecordBatch>> {
        self.life.check_usable()?;
        self.life.flushed = true;
        let Some(bound) = self.bound.as_ref() else {
            return Ok(None);
        };
        let mut rows = Vec::new();
        if self.spec.emit == EmitMode::Final {
            for (s, _, agg_state) in
                unemitted(&bound.store, bound.ticks, self.life.emitted_below, i64::MAX)
            {
                rows.push(final_change(
                    s.key,
                    s.session.start,
                    s.session.end,
                    agg_state,
                ));
            }
            self.life.emitted_below = i64::MAX;
        }
        self.counters.emitted += rows.len() as u64;
        bound.build(&rows).map(Some)
    }

    /// In `final` mode, the earliest stream time at which a session not emitted yet closes
    /// (stream time then exceeds its reach plus grace); `None` when none is held, and in the
    /// changelog modes, which emit nothing at close.
    pub fn next_close(&self) -> Option<i64> {
        let bound = self
            .bound
            .as_ref()
            .filter(|_| self.spec.emit == EmitMode::Final)?;
        let reach = unemitted(&bound.store, bound.ticks, self.life.emitted_below, i64::MAX)
            .map(|(_, reach, _)| reach)
            .min()?;
        Some(reach.saturating_add(bound.ticks.grace).saturating_add(1))
    }

    pub(crate) fn parts(&self) -> Parts<'_> {
        Parts {
            spec: &self.spec,
            input: &self.input,
            aggs: &self.agg_specs,
            schema: self.bound.as_ref().map(|b| b.input.schema().as_ref()),
            life: &self.life,
            counters: self.counters,
        }
    }

    pub(crate) fn from_parts(
        spec: SessionSpec,
        input: InputSpec,
        aggs: Vec<AggSpec>,
        schema: Option<SchemaRef>,
        store: SessionStore,
        state: Restored,
        counters: Counters,
    ) -> Result<Self> {
        let mut p = Self::new(spec, input, aggs)?;
        if let Some(schema) = schema {
            p.bind(schema)?;
            p.bound
                .as_mut()
                .expect("bound just now")
                .restore_store(store)?;
        }
        p.life.restore(state);
        p.counters = counters;
        Ok(p)
    }
}

/// A processor's state, borrowed for a snapshot.
#[derive(Debug)]
pub(crate) struct Parts<'a> {
    pub spec: &'a SessionSpec,
    pub input: &'a InputSpec,
    pub aggs: &'a [AggSpec],
    pub schema: Option<&'a Schema>,
    pub life: &'a Lifecycle,
    pub counters: Counters,
}

/// Emits sessions with `emitted_below <= reach < close`; returns the new `emitted_below`.
fn emit_closed(
    store: &SessionStore,
    ticks: Resolved,
    emitted_below: i64,
    close: i64,
    out: &mut Vec<Change>,
) -> i64 {
    if close <= emitted_below {
        return emitted_below;
    }
    for (s, _, agg_state) in unemitted(store, ticks, emitted_below, close - 1) {
        out.push(final_change(
            s.key,
            s.session.start,
            s.session.end,
            agg_state,
        ));
    }
    close
}

/// The held sessions not emitted yet (`reach >= emitted_below`) whose reach is at most
/// `latest_reach`, with their reach and aggregate state: what `final` mode emits, at close or at
/// the end of input, and where the next close lies.
fn unemitted(
    store: &SessionStore,
    ticks: Resolved,
    emitted_below: i64,
    latest_reach: i64,
) -> impl Iterator<Item = (KeyedSession<'_>, i64, &[u8])> {
    // end <= reach <= end + max_gap: only ends in [emitted_below - max_gap, latest_reach] qualify.
    let lo = emitted_below.saturating_sub(ticks.max_gap);
    store
        .held_sessions_by_end(lo, latest_reach)
        .into_iter()
        .filter_map(move |s| {
            let (reach, agg_state) = state::split(s.session.value);
            (emitted_below <= reach && reach <= latest_reach).then_some((s, reach, agg_state))
        })
}

fn final_change(key: &[u8], start: i64, end: i64, agg_state: &[u8]) -> Change {
    Change {
        key: key.to_vec(),
        start,
        end,
        time: end,
        state: agg_state.to_vec(),
        delete: false,
    }
}
