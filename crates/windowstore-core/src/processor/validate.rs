//! What a restored processor must satisfy beyond its checksum: snapshot bytes can be edited
//! and re-checksummed, and what they hold is then used by every later call. Each stored window
//! is checked the way the processor will read it (key bytes that decode to the key columns,
//! a value with its 8-byte bound and an aggregate state holding exactly the processor's
//! aggregates, bounds the kind could have written, a record time no later than stream time),
//! and the progress against the windows (stream time, what was emitted), so that a bad snapshot
//! is refused on restore instead of panicking, losing windows or dropping aggregates later.

use std::panic::{catch_unwind, AssertUnwindSafe};

use super::{Processor, WindowKind};
use crate::agg::state_layout::{open, segment};
use crate::agg::Aggregator;
use crate::state;
use crate::store::WindowStore;

/// Windows checked per round (aggregate states are finished in batches of this size).
const ROUND: usize = 4096;

impl<K: WindowKind> Processor<K> {
    /// Checks the restored content; says what is wrong with the first bad window found.
    pub(super) fn validate_restored(&self) -> Result<(), String> {
        let Some(bound) = self.bound.as_ref() else {
            return Ok(());
        };
        // Every window once, in the store's own order: the sorted order a snapshot writes
        // costs two sorts and changes nothing here.
        let entries = bound.store.entries_unordered();
        for round in entries.chunks(ROUND) {
            let mut states = Vec::with_capacity(round.len());
            for w in round {
                let s = &w.session;
                let entry = |why: String| format!("entry [{}, {}]: {why}", s.start, s.end);
                K::stored_states(&bound.ticks, s.start, s.end, s.value, &mut states)
                    .map_err(entry)?;
                // Both kinds keep a record time before the state (a session's end, a sliding
                // window's time): no record is later than stream time.
                let (time, _) = state::split(s.value);
                if self.call.life.stream_time.is_some_and(|st| time > st) {
                    return Err(entry(format!(
                        "it holds a record at {time}, after the stream time {}",
                        self.call.life.stream_time.unwrap_or(i64::MIN)
                    )));
                }
            }
            for agg_state in &states {
                whole_state(&bound.aggs, agg_state)?;
            }
            bound
                .aggs
                .finish(&states)
                .map_err(|e| format!("an aggregate state is unreadable: {e}"))?;
            let keys: Vec<&[u8]> = round.iter().map(|w| w.key).collect();
            // arrow-row trusts its input and may panic on bytes it did not write: a panic here
            // means the key bytes are not the key columns' encoding, which is what is checked.
            let decoded = catch_unwind(AssertUnwindSafe(|| {
                bound.input.keys.reencode(keys.iter().copied())
            }));
            match decoded {
                Ok(Ok(again)) if again.iter().eq(keys.iter().copied()) => {}
                _ => return Err("key bytes do not encode the key columns".into()),
            }
        }
        let emitted = self.call.life.emitted_below;
        let stream_time = self.call.life.stream_time;
        if stream_time.is_none() && !entries.is_empty() {
            return Err("windows but no stream time".into());
        }
        if emitted != i64::MIN && emitted != i64::MAX && stream_time.is_none() {
            return Err("windows emitted before any record".into());
        }
        // Windows are emitted as stream time minus grace passes them, never ahead of it.
        let close = stream_time.map(|st| st.saturating_sub(K::grace(&bound.ticks)));
        if emitted != i64::MIN && emitted != i64::MAX && close.is_some_and(|c| emitted > c) {
            return Err(format!(
                "windows emitted up to {emitted}, beyond stream time {} minus grace",
                stream_time.unwrap_or(i64::MIN)
            ));
        }
        Ok(())
    }
}

/// Refuses an aggregate state that is not exactly one segment per aggregate of `aggs`: a
/// snapshot whose aggregate list (`aggs`) was edited no longer matches its windows' states.
fn whole_state(aggs: &Aggregator, agg_state: &[u8]) -> Result<(), String> {
    let mismatch = || {
        format!(
            "the aggregate states do not hold the snapshot's {} aggregates (its aggs do not \
             match its windows)",
            aggs.len()
        )
    };
    let mut r = open(agg_state).map_err(|e| format!("an aggregate state is unreadable: {e}"))?;
    for slot in &aggs.slots {
        segment(&slot.op, &mut r).map_err(|_| mismatch())?;
    }
    if !r.rest().is_empty() {
        return Err(mismatch());
    }
    Ok(())
}
