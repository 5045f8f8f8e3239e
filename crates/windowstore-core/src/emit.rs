//! Emit modes and the changelog of one processed batch.
//!
//! `final` emits each window once, when it closes. `updates` and `changes` emit a changelog of
//! `upsert` and `delete` rows: `changes` keeps every change record by record (Kafka without a
//! cache), `updates` keeps only the last change of each window within a batch (Kafka's cache),
//! and drops a window created and deleted within the same batch altogether.

use std::collections::HashMap;

use crate::{Error, KeyedSession, Result};

/// When windows are emitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmitMode {
    /// Each window once, when it closes (and every open window at end of input).
    Final,
    /// A changelog, coalesced to the last change per window within a batch.
    Updates,
    /// A changelog of every single change, record by record.
    Changes,
}

impl EmitMode {
    /// Parses `final`, `updates` or `changes`.
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "final" => Ok(Self::Final),
            "updates" => Ok(Self::Updates),
            "changes" => Ok(Self::Changes),
            other => Err(Error::invalid(
                "emit",
                format!("unknown emit mode {other:?}; expected final, updates or changes"),
            )),
        }
    }

    /// The mode's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Final => "final",
            Self::Updates => "updates",
            Self::Changes => "changes",
        }
    }
}

/// One output row: a window, its aggregate state, and what happened to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Encoded key.
    pub key: Vec<u8>,
    /// Window start.
    pub start: i64,
    /// Window end.
    pub end: i64,
    /// The window's extra output time (sliding windows' `window_time`), or the end.
    pub time: i64,
    /// Aggregate state (for a delete: the state the window had).
    pub state: Vec<u8>,
    /// `true` for a delete, `false` for an upsert (or a final row).
    pub delete: bool,
}

/// A call's output rows, column by column: the keys and states of all rows in one buffer
/// each, rather than two allocations per row (a call in `final` mode emits one to two sliding
/// windows per record).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rows {
    keys: Vec<u8>,
    /// Where each row's key ends in `keys` (it starts where the previous one ends).
    key_ends: Vec<usize>,
    starts: Vec<i64>,
    ends: Vec<i64>,
    times: Vec<i64>,
    states: Vec<u8>,
    /// Where each row's state ends in `states`.
    state_ends: Vec<usize>,
    deletes: Vec<bool>,
}

impl Rows {
    /// Room for `n` more rows, with `key_bytes` of keys and `state_bytes` of states in all.
    pub fn reserve(&mut self, n: usize, key_bytes: usize, state_bytes: usize) {
        self.keys.reserve(key_bytes);
        self.states.reserve(state_bytes);
        self.key_ends.reserve(n);
        self.starts.reserve(n);
        self.ends.reserve(n);
        self.times.reserve(n);
        self.state_ends.reserve(n);
        self.deletes.reserve(n);
    }

    /// Appends a row: window `[start, end]` of `key` with output time `time` and aggregate
    /// `state`, a delete or an upsert (or a final row).
    pub fn push(
        &mut self,
        key: &[u8],
        (start, end, time): (i64, i64, i64),
        state: &[u8],
        delete: bool,
    ) {
        self.keys.extend_from_slice(key);
        self.key_ends.push(self.keys.len());
        self.starts.push(start);
        self.ends.push(end);
        self.times.push(time);
        self.states.extend_from_slice(state);
        self.state_ends.push(self.states.len());
        self.deletes.push(delete);
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// Whether there is no row.
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// The rows' keys, in order.
    pub fn keys(&self) -> impl Iterator<Item = &[u8]> + '_ {
        slices(&self.keys, &self.key_ends)
    }

    /// The rows' aggregate states, in order.
    pub fn states(&self) -> impl Iterator<Item = &[u8]> + '_ {
        slices(&self.states, &self.state_ends)
    }

    /// The window starts.
    pub fn starts(&self) -> &[i64] {
        &self.starts
    }

    /// The window ends.
    pub fn ends(&self) -> &[i64] {
        &self.ends
    }

    /// The output times.
    pub fn times(&self) -> &[i64] {
        &self.times
    }

    /// Which rows are deletes.
    pub fn deletes(&self) -> &[bool] {
        &self.deletes
    }

    /// Room for the final rows of `windows`, stored windows whose values are their states after
    /// a prefix (the room of the prefixes is spare).
    pub fn reserve_for<'a>(&mut self, windows: impl Iterator<Item = &'a KeyedSession<'a>>) {
        let (n, key_bytes, value_bytes) = windows.fold((0, 0, 0), |(n, k, v), w| {
            (n + 1, k + w.key.len(), v + w.session.value.len())
        });
        self.reserve(n, key_bytes, value_bytes);
    }
}

/// The pieces of `bytes` that `ends` cuts it into, in order.
fn slices<'a>(bytes: &'a [u8], ends: &'a [usize]) -> impl Iterator<Item = &'a [u8]> + 'a {
    let mut from = 0;
    ends.iter().map(move |&to| {
        let piece = &bytes[from..to];
        from = to;
        piece
    })
}

type Window = (Vec<u8>, i64, i64);

/// The changes of one batch, in the order they happened: the order of the records that made
/// them, and within a record the order they were pushed.
#[derive(Debug)]
pub struct Changelog {
    mode: EmitMode,
    /// Each change with the arrival number of the record that made it.
    changes: Vec<Option<(u64, Change)>>,
    last: HashMap<Window, (usize, bool)>,
    /// The arrival number the next pushes are stamped with (see [`Self::at`]).
    seq: u64,
}

impl Changelog {
    /// An empty changelog for `mode` (`updates` or `changes`).
    pub fn new(mode: EmitMode) -> Self {
        Self {
            mode,
            changes: Vec::new(),
            last: HashMap::new(),
            seq: 0,
        }
    }

    /// Stamps the changes pushed from now on with arrival number `seq`. A caller that applies
    /// records out of arrival order (the batched path: key by key) stamps each record's
    /// changes, and [`Self::take`] puts them back in arrival order. Coalescing is per window,
    /// so per key: it is the same whichever order keys are applied in, as long as each key's
    /// records come in arrival order.
    pub fn at(&mut self, seq: u64) {
        self.seq = seq;
    }

    /// Records a change. `created` says that the window did not exist before this change.
    pub fn push(&mut self, change: Change, created: bool) {
        if self.mode != EmitMode::Updates {
            self.changes.push(Some((self.seq, change)));
            return;
        }
        let window = (change.key.clone(), change.start, change.end);
        let delete = change.delete;
        let created_in_batch = match self.last.get(&window) {
            Some(&(at, created_before)) => {
                self.changes[at] = None;
                created_before
            }
            None => created && !delete,
        };
        if delete && created_in_batch {
            // Created and deleted within the batch: nobody downstream has seen it.
            self.last.remove(&window);
            return;
        }
        self.last
            .insert(window, (self.changes.len(), created_in_batch));
        self.changes.push(Some((self.seq, change)));
    }

    /// Whether a delete of window `[start, end]` of `key` pushed now would be kept (in `updates`
    /// mode, the delete of a window created within the batch is elided), so that a caller can
    /// spare copying the state of one that is not.
    pub fn keeps_delete(&self, key: &[u8], start: i64, end: i64) -> bool {
        if self.mode != EmitMode::Updates {
            return true;
        }
        !matches!(self.last.get(&(key.to_vec(), start, end)), Some(&(_, true)))
    }

    /// The batch's changes as output rows, in order (coalesced in `updates` mode); empties the
    /// log.
    pub fn take(&mut self) -> Rows {
        self.last.clear();
        self.seq = 0;
        let mut changes: Vec<(u64, Change)> = self.changes.drain(..).flatten().collect();
        if !changes.is_sorted_by_key(|(seq, _)| *seq) {
            // Stable: a record's own changes keep the order they were pushed in.
            changes.sort_by_key(|(seq, _)| *seq);
        }
        let mut rows = Rows::default();
        let key_bytes = changes.iter().map(|(_, c)| c.key.len()).sum();
        let state_bytes = changes.iter().map(|(_, c)| c.state.len()).sum();
        rows.reserve(changes.len(), key_bytes, state_bytes);
        for (_, c) in &changes {
            rows.push(&c.key, (c.start, c.end, c.time), &c.state, c.delete);
        }
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `changes` as output rows, pushed one by one.
    fn rows(changes: &[Change]) -> Rows {
        let mut rows = Rows::default();
        for c in changes {
            rows.push(&c.key, (c.start, c.end, c.time), &c.state, c.delete);
        }
        rows
    }

    fn change(start: i64, end: i64, state: u8, delete: bool) -> Change {
        Change {
            key: b"k".to_vec(),
            start,
            end,
            time: end,
            state: vec![state],
            delete,
        }
    }

    #[test]
    fn updates_keep_the_last_change_per_window_and_elide_short_lived_windows() {
        let mut log = Changelog::new(EmitMode::Updates);
        log.push(change(0, 0, 1, false), true);
        log.push(change(0, 0, 1, true), false);
        log.push(change(0, 5, 2, false), true);
        log.push(change(9, 9, 1, true), false); // existed before the batch: kept
        log.push(change(0, 5, 3, false), false);
        let got = log.take();
        assert_eq!(got, rows(&[change(9, 9, 1, true), change(0, 5, 3, false)]));
        assert!(log.take().is_empty());
    }

    #[test]
    fn changes_stamped_out_of_order_come_back_in_arrival_order() {
        // Two keys' records applied key by key (seq 0 and 2 for "a", 1 for "b"): the log of
        // the record order, coalescing included.
        let keyed = |key: &[u8], start, state| Change {
            key: key.to_vec(),
            ..change(start, start, state, false)
        };
        let mut in_order = Changelog::new(EmitMode::Updates);
        in_order.push(keyed(b"a", 0, 1), true);
        in_order.push(keyed(b"b", 5, 1), true);
        in_order.push(keyed(b"a", 1, 2), true);
        in_order.push(keyed(b"a", 0, 3), false);
        let mut by_key = Changelog::new(EmitMode::Updates);
        by_key.at(0);
        by_key.push(keyed(b"a", 0, 1), true);
        by_key.at(2);
        by_key.push(keyed(b"a", 1, 2), true);
        by_key.push(keyed(b"a", 0, 3), false);
        by_key.at(1);
        by_key.push(keyed(b"b", 5, 1), true);
        let want = in_order.take();
        assert_eq!(want.len(), 3);
        assert_eq!(by_key.take(), want);
    }

    #[test]
    fn changes_keep_everything() {
        let mut log = Changelog::new(EmitMode::Changes);
        log.push(change(0, 0, 1, false), true);
        log.push(change(0, 0, 1, true), false);
        assert_eq!(log.take().len(), 2);
        assert!(EmitMode::parse("eventually").is_err());
    }

    #[test]
    fn rows_keep_each_row_whole_and_in_order() {
        // Keys and states of different lengths, an empty one among them: each row gets its
        // own bytes back, as the changes they were made from.
        let changes = vec![
            Change {
                key: b"ab".to_vec(),
                state: vec![],
                ..change(1, 4, 0, false)
            },
            Change {
                key: vec![],
                time: 3,
                ..change(2, 5, 7, true)
            },
            Change {
                key: b"xyz".to_vec(),
                state: vec![1, 2, 3],
                ..change(-9, 9, 0, false)
            },
        ];
        // In `changes` mode the log gives back every change as it was pushed.
        let mut log = Changelog::new(EmitMode::Changes);
        for c in &changes {
            log.push(c.clone(), true);
        }
        let taken = log.take();
        assert_eq!(taken, rows(&changes));
        assert_eq!(taken.len(), 3);
        let keys: Vec<&[u8]> = taken.keys().collect();
        assert_eq!(keys, [&b"ab"[..], b"", b"xyz"]);
        let states: Vec<&[u8]> = taken.states().collect();
        assert_eq!(states, [&[][..], &[7], &[1, 2, 3]]);
        assert_eq!(taken.starts(), [1, 2, -9]);
        assert_eq!(taken.ends(), [4, 5, 9]);
        assert_eq!(taken.times(), [4, 3, 9]);
        assert_eq!(taken.deletes(), [false, true, false]);
        assert!(Rows::default().is_empty());
    }
}
