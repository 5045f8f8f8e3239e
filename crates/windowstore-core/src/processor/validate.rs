//! What a restored processor must satisfy beyond its checksum: snapshot bytes can be edited
//! and re-checksummed, and what they hold is then used by every later call. Each stored window
//! is checked the way the processor will read it (key bytes that decode to the key columns,
//! a value with its 8-byte bound and a readable aggregate state, bounds the kind could have
//! written), so that a bad snapshot is refused on restore instead of panicking or losing windows
//! later.

use std::panic::{catch_unwind, AssertUnwindSafe};

use super::{Processor, WindowKind};

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
                K::stored_states(&bound.ticks, s.start, s.end, s.value, &mut states)
                    .map_err(|why| format!("entry [{}, {}]: {why}", s.start, s.end))?;
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
        let emitted = self.life.emitted_below;
        let stream_time = self.life.stream_time;
        if stream_time.is_none() && !entries.is_empty() {
            return Err("windows but no stream time".into());
        }
        if emitted != i64::MIN && emitted != i64::MAX && stream_time.is_none() {
            return Err("windows emitted before any record".into());
        }
        Ok(())
    }
}
