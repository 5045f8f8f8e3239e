//! Reads of a running processor's open windows (interactive queries, as Kafka's
//! `ReadOnlySessionStore`): what it holds and has not closed, without changing any state.
//!
//! A window is open while its closing bound (the stored end, see [`WindowKind`]) is at least
//! stream time minus grace and the processor has not been flushed: in `final` mode these are
//! exactly the windows a flush would emit now (the same store scan, from the same bound), in
//! the changelog modes the windows whose latest row is not final yet.

use std::sync::Arc;

use arrow_array::{BooleanArray, RecordBatch};
use arrow_schema::{Schema, SchemaRef};

use super::{held, records, Bounds, Processor, WindowKind};
use crate::emit::{EmitMode, Rows};
use crate::store::WindowStore;
use crate::{Error, Result};

/// Which open windows a query reads.
#[derive(Debug, Clone, Default)]
pub struct WindowQuery {
    /// The keys read: a batch of the key columns (by name) whose first row is the first key
    /// and whose last row the last (both inclusive, in the keys' sort order); one row reads
    /// one key. `None`: every key.
    pub keys: Option<RecordBatch>,
    /// Only windows that end at or after this time (ticks).
    pub earliest_end: Option<i64>,
    /// Only windows that start at or before this time (ticks).
    pub latest_start: Option<i64>,
}

impl<K: WindowKind> Processor<K> {
    /// The key columns' fields (what a query's keys are read as), once bound.
    pub fn key_schema(&self) -> Option<SchemaRef> {
        let fields = self.bound.as_ref()?.input.keys.fields().to_vec();
        Some(Arc::new(Schema::new(fields)))
    }

    /// The open windows `query` selects (see the module doc), ordered by key, then start: in
    /// the output schema of `emit="final"` (the changelog modes' `op` column left out), or, in
    /// records mode, as the tagged rows a flush would emit for them. `None` before the
    /// processor has seen a schema.
    pub fn windows(&self, query: &WindowQuery) -> Result<Option<RecordBatch>> {
        let Some(bound) = self.bound.as_ref() else {
            return Ok(None);
        };
        let keys = query
            .keys
            .as_ref()
            .map(|batch| bound.input.keys.encode_lookup(batch))
            .transpose()?;
        let range = keys.as_deref().map(|k| {
            k.first()
                .map(Vec::as_slice)
                .zip(k.last().map(Vec::as_slice))
        });
        let close = self
            .call
            .life
            .stream_time
            .map_or(i64::MIN, |st| st.saturating_sub(K::grace(&bound.ticks)));
        let open_from = close.max(self.call.life.emitted_below);
        // A session ends at or before its closing bound, so the bound filters the scan.
        let scan_from = open_from.max(query.earliest_end.unwrap_or(i64::MIN));
        let mut rows = Rows::default();
        if !self.call.life.flushed {
            let found = match range {
                // A lookup of no key reads nothing.
                Some(None) => Vec::new(),
                range => bound.store.stored_sessions(range.flatten(), scan_from),
            };
            rows.reserve_for(found.iter());
            for window in &found {
                K::final_row(window, &mut rows);
            }
        }
        let earliest_end = query.earliest_end.unwrap_or(i64::MIN);
        let latest_start = query.latest_start.unwrap_or(i64::MAX);
        let wanted: BooleanArray = rows
            .starts()
            .iter()
            .zip(rows.ends())
            .map(|(&start, &end)| Some(end >= earliest_end && start <= latest_start))
            .collect();
        let built = bound.build(&rows)?;
        let built = arrow_select::filter::filter_record_batch(&built, &wanted)
            .map_err(Error::arrow("selecting windows"))?;
        let key_columns = bound.input.keys.fields().len();
        if let (Some(held), Some(schema)) = (self.call.held.as_ref(), bound.records.as_ref()) {
            let bounds: Vec<Bounds<'_>> = held::bounds(&rows)
                .zip(wanted.values().iter())
                .filter_map(|(b, wanted)| wanted.then_some(b))
                .collect();
            let closed = held::Closed {
                windows: &built,
                bounds: &bounds,
                keys: key_columns,
                schema,
            };
            return Ok(Some(held.tag(bound.store.keys(), &closed)?));
        }
        let mut windows = records::in_order(&built, key_columns)?;
        if self.kind.emit() != EmitMode::Final {
            // The changelog's `op` column is last; an open window has no operation.
            windows = windows
                .project(&(0..windows.num_columns() - 1).collect::<Vec<_>>())
                .map_err(Error::arrow("selecting windows"))?;
        }
        Ok(Some(windows))
    }
}
