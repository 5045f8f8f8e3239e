//! The streaming processors themselves, without Python: a clickstream of `N` records over
//! `N / 100` keys, in time order (one record every 100 ms, each of a key drawn at random, so a
//! key's records are about `N / 1000` s apart, 1,000 s at the default `N`), cut into batches of
//! 65,536 rows, through the session processor (gap 30 s) and the sliding processor (`D` = 30 s;
//! and `D` = 10 × the key spacing, about 10 records a window, as in `bench_sliding.py`), all
//! `emit="final"` with `count` and `sum`; each also with its batched path off (record by
//! record), for the ratio.
//!
//! `sliding_key_major_floor_10_a_window` is no processor: the same windows (`D` = 10 × the key
//! spacing, grace 5 s) computed by a minimal engine written here, with each key's windows in
//! one slot of one map (two queues, left and right windows) and a time index of window ends
//! for emission: no journal, no snapshot, no late records (its input is in time order), fixed
//! `count` and `sum`, the same output rows in the same order. It shows what a key-major layout
//! alone would gain (issue 13). `sliding_staged_key_major_floor_10_a_window` is the same
//! engine with its reads staged (`StagedFloor`): a call's records in groups of 64, each
//! group's key ids, slots and queue ends read in passes of independent reads before its
//! records are applied, and the emission's slots likewise; it shows what visiting a call's
//! keys in stages adds to that layout. `sliding_merge_engine_10_a_window` is another such engine:
//! the whole state one vector sorted by key and start, which each call rewrites in one pass,
//! applying the call's records (sorted by key) and emitting the closed windows on the way.
//! Before they are timed, the processor and the three engines run once each on the data: their
//! windows must agree (row count and the sums of every window column), and the four times are
//! printed, for ratios at sizes where ten samples of each take too long. A filter that names
//! no bench (`cargo bench -p windowstore-benches --bench processor -- none`) runs only these.
//!
//! `WINDOWSTORE_BENCH_RECORDS` (default 1,000,000) sets `N`; `WINDOWSTORE_BENCH_ONLY=sessions`
//! or `=sliding` runs one processor (for profiling). The figure is records per second through a
//! fresh processor, so the cost of a growing store is in it.

use std::hash::BuildHasher;
use std::hint::black_box;
use std::sync::Arc;

use arrow_array::builder::{Int64Builder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use std::collections::{BTreeMap, VecDeque};
use windowstore_core::agg::AggSpec;
use windowstore_core::emit::EmitMode;
use windowstore_core::input::InputSpec;
use windowstore_core::processor::{Processor, WindowKind};
use windowstore_core::reject::OnInvalid;
use windowstore_core::session::{GapSpec, SessionSpec};
use windowstore_core::sliding::SlidingSpec;
use windowstore_core::time::Duration;

const BATCH_ROWS: usize = 1 << 16;

fn records() -> usize {
    std::env::var("WINDOWSTORE_BENCH_RECORDS")
        .map(|s| s.parse().expect("WINDOWSTORE_BENCH_RECORDS: an integer"))
        .unwrap_or(1_000_000)
}

fn runs(name: &str) -> bool {
    std::env::var("WINDOWSTORE_BENCH_ONLY").map_or(true, |only| only == name)
}

/// `n` records in time order, record `i` at `100 * i` ms, of a key drawn by a xorshift
/// generator with a fixed seed.
fn batches(n: usize) -> Vec<RecordBatch> {
    let keys = (n / 100).max(1) as u64;
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next_key = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % keys
    };
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Utf8, false),
        Field::new("ts", DataType::Int64, false),
        Field::new("x", DataType::Int64, false),
    ]));
    (0..n)
        .step_by(BATCH_ROWS)
        .map(|from| {
            let to = (from + BATCH_ROWS).min(n);
            let k: StringArray = (from..to)
                .map(|_| Some(format!("user{}", next_key())))
                .collect();
            let ts = Int64Array::from_iter_values((from..to).map(|i| (i as i64) * 100));
            let x = Int64Array::from_iter_values((from..to).map(|i| (i % 97) as i64));
            RecordBatch::try_new(schema.clone(), vec![Arc::new(k), Arc::new(ts), Arc::new(x)])
                .expect("batch")
        })
        .collect()
}

fn input() -> InputSpec {
    InputSpec {
        key: vec!["k".into()],
        time: "ts".into(),
        time_unit: None,
        gap: None,
        markers: Default::default(),
    }
}

fn aggs() -> Vec<AggSpec> {
    vec![AggSpec::count(), AggSpec::sum("x")]
}

/// Every batch through a fresh processor of window kind `spec`, with the batched path on or
/// off; the rows it emits.
fn run<K: WindowKind>(spec: K, data: &[RecordBatch], batched: bool) -> usize {
    let mut p = Processor::new(spec, input(), aggs()).expect("processor");
    p.set_batched(batched);
    data.iter()
        .map(|batch| p.process(batch).expect("process").num_rows())
        .sum()
}

/// Benches `spec` as `name` with the batched path on, and as `name_record_by_record` with it off:
/// the record path the batched one replaces where every record is within the grace.
fn bench_both_paths<K: WindowKind>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    spec: &K,
    data: &[RecordBatch],
) {
    group.bench_function(name, |b| {
        b.iter(|| black_box(run(spec.clone(), data, true)));
    });
    group.bench_function(format!("{name}_record_by_record"), |b| {
        b.iter(|| black_box(run(spec.clone(), data, false)));
    });
}

/// The engines' keys: each distinct key's id, numbered in order of first sight.
#[derive(Debug, Default)]
struct Keys {
    ids: hashbrown::HashMap<Box<str>, u32>,
    names: Vec<Box<str>>,
}

impl Keys {
    /// The id of `key`, and whether it is new.
    fn id(&mut self, key: &str) -> (u32, bool) {
        if let Some(&id) = self.ids.get(key) {
            return (id, false);
        }
        let id = self.names.len() as u32;
        self.ids.insert(key.into(), id);
        self.names.push(key.into());
        (id, true)
    }
}

/// A key's latest record time and the latest before it: what tells a record's previous one.
type Latest = (Option<i64>, Option<i64>);

/// The previous record of a record at `t` (the latest at a time before t: records at t's time
/// share its windows), `latest` updated to include `t` (input in time order).
fn previous(latest: &mut Latest, t: i64) -> Option<i64> {
    let (last, before_last) = latest;
    if *last != Some(t) {
        *before_last = last.replace(t);
    }
    *before_last
}

/// A window of the floor engine: `[start, start + D]`, its window time and aggregates.
#[derive(Debug, Clone, Copy)]
struct Window {
    start: i64,
    time: i64,
    count: i64,
    sum: i64,
}

/// One key's state in the floor engine. In time order its left windows (`[u - D, u]`) and its
/// right windows (`[p + 1, p + 1 + D]`) each come by increasing start, so each is a queue
/// appended at the back, closed at the front, and the windows a record joins are a suffix.
/// A window that is both (`p + 1 == u - D`) is kept once, as a left window.
#[derive(Debug, Default)]
struct Slot {
    left: VecDeque<Window>,
    right: VecDeque<Window>,
    latest: Latest,
    /// The windows at the front of `left` and `right` already emitted: a key's next due
    /// windows are where these point (a binary search there waited for a miss per step).
    emitted: [usize; 2],
}

/// Buckets of window ends a time difference spans, in the floor engines' index.
const ENDS_PER_D: i64 = 64;

/// The floor engine (see the module doc): KIP-450's two new windows per record, in time
/// order, over key-major state; every call emits the windows that closed, as rows.
struct KeyMajorFloor {
    d: i64,
    grace: i64,
    keys: Keys,
    slots: Vec<Slot>,
    /// Windows by end: bucket (`end / (D / ENDS_PER_D)`) -> `(end, start, key id)`, unsorted.
    ends: BTreeMap<i64, Vec<(i64, i64, u32)>>,
    stream_time: i64,
    /// Every window ending before this has been emitted.
    emitted_below: i64,
}

impl KeyMajorFloor {
    fn new(d: i64, grace: i64) -> Self {
        Self {
            d,
            grace,
            keys: Keys::default(),
            slots: Vec::new(),
            ends: BTreeMap::new(),
            stream_time: i64::MIN,
            emitted_below: i64::MIN,
        }
    }

    /// The width of a bucket of `ends`: a call emits from a few buckets, and reads only them
    /// (buckets of `D` each held some 15 calls' windows at the benches' sizes, and every call
    /// read them all).
    fn bucket(&self) -> i64 {
        (self.d / ENDS_PER_D).max(1)
    }

    fn index(&mut self, id: u32, start: i64) {
        let end = start + self.d;
        self.ends
            .entry(end.div_euclid(self.bucket()))
            .or_default()
            .push((end, start, id));
    }

    fn record(&mut self, key: &str, t: i64, x: i64) {
        let (id, new) = self.keys.id(key);
        if new {
            self.slots.push(Slot::default());
        }
        self.apply(id, t, x);
    }

    /// Record `(t, x)` of the key with id `id` (its slot exists).
    fn apply(&mut self, id: u32, t: i64, x: i64) {
        self.stream_time = self.stream_time.max(t);
        let d = self.d;
        let slot = &mut self.slots[id as usize];
        let previous = previous(&mut slot.latest, t);
        // The windows containing t: right windows starting at or after t - D, and t's own left
        // window if a record at t made it; the latest window ending before t seeds t's left one.
        let mut before: Option<Window> = None;
        for w in slot.right.iter_mut().rev() {
            if w.start < t - d {
                before = Some(*w);
                break;
            }
            w.count += 1;
            w.sum += x;
            w.time = t;
        }
        let mut left_exists = false;
        for w in slot.left.iter_mut().rev() {
            if w.start < t - d {
                if before.is_none_or(|b| b.start < w.start) {
                    before = Some(*w);
                }
                break;
            }
            left_exists = true;
            w.count += 1;
            w.sum += x;
            w.time = t;
        }
        let mut put = [None, None];
        if let Some(p) = previous {
            let exists = slot.right.back().is_some_and(|w| w.start == p + 1);
            if p + 1 + d >= t && !exists && p + 1 != t - d {
                let w = Window {
                    start: p + 1,
                    time: t,
                    count: 1,
                    sum: x,
                };
                slot.right.push_back(w);
                put[0] = Some(w.start);
            }
        }
        if !left_exists {
            let seed = before.filter(|_| previous.is_some_and(|p| t - d <= p));
            let (count, sum) = seed.map_or((0, 0), |s| (s.count, s.sum));
            let w = Window {
                start: t - d,
                time: t,
                count: count + 1,
                sum: sum + x,
            };
            slot.left.push_back(w);
            put[1] = Some(w.start);
        }
        for start in put.into_iter().flatten() {
            self.index(id, start);
        }
    }

    /// End of input: every window left, as rows (see [`Self::emit`]).
    fn flush(&mut self, staged: bool) -> RecordBatch {
        self.stream_time = i64::MAX;
        self.grace = 0;
        self.emit(staged)
    }

    /// The windows closed at stream time, as rows in (end, start, key) order. `staged`: the
    /// keys' slots are read in two passes of independent reads first (see [`StagedFloor`]).
    fn emit(&mut self, staged: bool) -> RecordBatch {
        let close = self.stream_time.saturating_sub(self.grace);
        let mut due = Vec::new();
        let last_bucket = (close - 1).div_euclid(self.bucket());
        while let Some(mut entry) = self.ends.first_entry() {
            if *entry.key() > last_bucket {
                break;
            }
            let items = entry.get_mut();
            due.extend(items.iter().copied().filter(|&(end, _, _)| end < close));
            items.retain(|&(end, _, _)| end >= close);
            if items.is_empty() {
                entry.remove();
            } else {
                break;
            }
        }
        // A key's due windows are consecutive in each of its queues: one visit a key reads
        // them all.
        let d = self.d;
        due.sort_unstable_by_key(|&(_, start, id)| (id, start));
        if staged {
            let ids: Vec<u32> = due.chunk_by(|a, b| a.2 == b.2).map(|r| r[0].2).collect();
            black_box(touch_slots(&self.slots, &ids, true));
        }
        let mut found = Vec::with_capacity(due.len());
        for run in due.chunk_by(|a, b| a.2 == b.2) {
            let slot = &mut self.slots[run[0].2 as usize];
            let [mut left, mut right] = slot.emitted;
            for &(_, start, _) in run {
                if slot.left.get(left).is_some_and(|w| w.start == start) {
                    found.push(slot.left[left]);
                    left += 1;
                } else {
                    found.push(slot.right[right]);
                    right += 1;
                }
            }
            slot.emitted = [left, right];
        }
        let keys = &self.keys.names;
        let mut order: Vec<u32> = (0..due.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| {
            let (a, b) = (due[a as usize], due[b as usize]);
            (a.0, a.1)
                .cmp(&(b.0, b.1))
                .then_with(|| keys[a.2 as usize].cmp(&keys[b.2 as usize]))
        });
        let rows = window_rows(
            &self.keys.names,
            d,
            order
                .iter()
                .map(|&i| (due[i as usize].2, found[i as usize])),
        );
        // A closed window stays while a later record's left window may be seeded from it (it
        // ends at or after that record's time - D); the keys that emitted drop the rest.
        let keep_from = self.stream_time.saturating_sub(self.grace + 2 * d + 1);
        for run in due.chunk_by(|a, b| a.2 == b.2) {
            let slot = &mut self.slots[run[0].2 as usize];
            for (queue, emitted) in [&mut slot.left, &mut slot.right]
                .into_iter()
                .zip(&mut slot.emitted)
            {
                while queue.front().is_some_and(|w| w.start < keep_from) {
                    queue.pop_front();
                    *emitted -= 1;
                }
            }
        }
        self.emitted_below = self.emitted_below.max(close);
        rows
    }
}

/// Reads, for each key id of `ids`, its slot (a pass over all of them), then the windows that
/// what follows reads first (a second pass): a record's are at the back of its key's queues,
/// an emission's (`front`) at the front. Each pass is of reads independent of one another,
/// whose cache misses overlap; the sum means nothing.
fn touch_slots(slots: &[Slot], ids: &[u32], front: bool) -> i64 {
    let mut sum = 0i64;
    for &id in ids {
        let s = &slots[id as usize];
        sum ^= (s.left.len() ^ s.right.len()) as i64;
    }
    for &id in ids {
        let s = &slots[id as usize];
        for (q, emitted) in [&s.left, &s.right].into_iter().zip(s.emitted) {
            let n = q.len();
            // A record reads its key's last ten or so windows (about 10 records a window); an
            // emission those after the emitted ones.
            let at: [usize; 3] = if front {
                [emitted, emitted + 5, emitted + 10]
            } else {
                [n.wrapping_sub(1), n.wrapping_sub(6), n.wrapping_sub(11)]
            };
            for i in at {
                sum ^= q.get(i).map_or(0, |w| w.start);
            }
        }
    }
    sum
}

/// Records a group of the staged engine takes at once.
const STAGE: usize = 64;

/// The floor engine with its reads staged, as a store redesign that visits a call's keys in
/// stages would read: a call's records go in groups of [`STAGE`], and each group's memory is
/// read in passes of independent reads before its records are applied one by one: the key
/// ids (a direct-mapped table from a key's hash to its id, checked against the key's bytes
/// held inline by id, the map only on a miss), then the slots and the ends of their queues.
/// The emission reads its keys' slots the same way. Per record, the chain of dependent cache
/// misses of [`KeyMajorFloor`] becomes passes whose misses overlap: this engine sizes what
/// staging alone gains over the same layout.
struct StagedFloor {
    floor: KeyMajorFloor,
    hasher: hashbrown::DefaultHashBuilder,
    /// Hash bits -> key id + 1 (0: none); four slots a key or more.
    hint: Vec<u32>,
    /// Each key's bytes by id, inline: length, then up to 23 bytes (a longer key: length 255).
    inline: Vec<[u8; 24]>,
}

impl StagedFloor {
    fn new(d: i64, grace: i64) -> Self {
        Self {
            floor: KeyMajorFloor::new(d, grace),
            hasher: hashbrown::DefaultHashBuilder::default(),
            hint: vec![0; 1 << 16],
            inline: Vec::new(),
        }
    }

    fn hint_at(&self, hash: u64) -> usize {
        (hash as usize) & (self.hint.len() - 1)
    }

    /// Whether the key of id `id` is `key`.
    fn is(&self, id: u32, key: &str) -> bool {
        let held = &self.inline[id as usize];
        match held[0] {
            255 => &*self.floor.keys.names[id as usize] == key,
            n => &held[1..1 + n as usize] == key.as_bytes(),
        }
    }

    /// The id of `key` from the map, its slot made if it is new; the hint points to it.
    fn resolve(&mut self, key: &str, hash: u64) -> u32 {
        let (id, new) = self.floor.keys.id(key);
        if new {
            self.floor.slots.push(Slot::default());
            let mut held = [0u8; 24];
            match key.len() {
                n @ 0..=23 => {
                    held[0] = n as u8;
                    held[1..1 + n].copy_from_slice(key.as_bytes());
                }
                _ => held[0] = 255,
            }
            self.inline.push(held);
            if self.inline.len() * 4 > self.hint.len() {
                self.rehint();
                return id;
            }
        }
        let at = self.hint_at(hash);
        self.hint[at] = id + 1;
        id
    }

    /// A hint table of twice the size, every key in it.
    fn rehint(&mut self) {
        let mut hint = vec![0u32; self.hint.len() * 2];
        let mask = hint.len() - 1;
        for (id, name) in self.floor.keys.names.iter().enumerate() {
            hint[(self.hasher.hash_one(&**name) as usize) & mask] = id as u32 + 1;
        }
        self.hint = hint;
    }

    /// One call: the batch's records applied in staged groups, then the closed windows.
    fn call(&mut self, batch: &RecordBatch) -> RecordBatch {
        let k = batch.column(0).as_string::<i32>();
        let ts = batch.column(1).as_primitive::<Int64Type>();
        let x = batch.column(2).as_primitive::<Int64Type>();
        let mut hashes = [0u64; STAGE];
        let mut hints = [0u32; STAGE];
        let mut ids = [0u32; STAGE];
        for from in (0..batch.num_rows()).step_by(STAGE) {
            let rows = from..(from + STAGE).min(batch.num_rows());
            let n = rows.len();
            // The hints: independent reads of a table larger than the cache.
            for (i, row) in rows.clone().enumerate() {
                hashes[i] = self.hasher.hash_one(k.value(row));
                hints[i] = self.hint[self.hint_at(hashes[i])];
            }
            // The hinted keys' bytes: independent reads again.
            for (i, row) in rows.clone().enumerate() {
                let key = k.value(row);
                ids[i] = match hints[i].checked_sub(1) {
                    Some(id) if self.is(id, key) => id,
                    _ => self.resolve(key, hashes[i]),
                };
            }
            black_box(touch_slots(&self.floor.slots, &ids[..n], false));
            for (i, row) in rows.enumerate() {
                self.floor.apply(ids[i], ts.value(row), x.value(row));
            }
        }
        self.floor.emit(true)
    }
}

/// Every batch through a fresh staged engine; the rows it emits (a flush included).
fn run_staged(d: i64, grace: i64, data: &[RecordBatch]) -> Vec<RecordBatch> {
    let mut engine = StagedFloor::new(d, grace);
    let mut out: Vec<RecordBatch> = data.iter().map(|b| engine.call(b)).collect();
    out.push(engine.floor.flush(true));
    out
}

/// Rows of the engines' emitted windows, `(key id, window)` in output order: the processor's
/// columns.
fn window_rows(
    keys: &[Box<str>],
    d: i64,
    windows: impl ExactSizeIterator<Item = (u32, Window)>,
) -> RecordBatch {
    let n = windows.len();
    let mut k = StringBuilder::with_capacity(n, n * 10);
    let mut cols: Vec<Int64Builder> = (0..5).map(|_| Int64Builder::with_capacity(n)).collect();
    for (key, w) in windows {
        k.append_value(&keys[key as usize]);
        for (col, v) in cols
            .iter_mut()
            .zip([w.start, w.start + d, w.time, w.count, w.sum])
        {
            col.append_value(v);
        }
    }
    let mut arrays: Vec<ArrayRef> = vec![Arc::new(k.finish())];
    arrays.extend(cols.iter_mut().map(|c| Arc::new(c.finish()) as ArrayRef));
    let names = [
        "k",
        "window_start",
        "window_end",
        "window_time",
        "count",
        "sum_x",
    ];
    RecordBatch::try_from_iter(names.into_iter().zip(arrays)).expect("rows")
}

/// A window in the merge engine's state: its key, start, window time and aggregates.
#[derive(Debug, Clone, Copy)]
struct Held {
    key: u32,
    w: Window,
}

/// The merge engine: the same windows as [`KeyMajorFloor`], with the whole state one vector
/// sorted by key and start. A call sorts its records by key and rewrites the state in one
/// pass, applying each key's records where its windows are and emitting every window that
/// closed on the way: sequential reads and writes in place of a random visit per record and
/// per window.
struct MergeFloor {
    d: i64,
    grace: i64,
    keys: Keys,
    /// Per key, its latest record times (see [`previous`]).
    latest: Vec<Latest>,
    state: Vec<Held>,
    next: Vec<Held>,
    stream_time: i64,
    emitted_below: i64,
}

impl MergeFloor {
    fn new(d: i64, grace: i64) -> Self {
        Self {
            d,
            grace,
            keys: Keys::default(),
            latest: Vec::new(),
            state: Vec::new(),
            next: Vec::new(),
            stream_time: i64::MIN,
            emitted_below: i64::MIN,
        }
    }

    /// Applies record `(t, x)` of `key` to the key's windows, `next[base..]`, sorted by start.
    fn apply(&mut self, base: usize, key: u32, t: i64, x: i64) {
        let d = self.d;
        let previous = previous(&mut self.latest[key as usize], t);
        let windows = &mut self.next[base..];
        let (mut left_exists, mut before, mut right_exists) = (false, None, false);
        for h in windows.iter_mut().rev() {
            if h.w.start < t - d {
                before = Some(h.w);
                break;
            }
            left_exists |= h.w.start == t - d;
            right_exists |= previous.is_some_and(|p| h.w.start == p + 1);
            h.w.count += 1;
            h.w.sum += x;
            h.w.time = h.w.time.max(t);
        }
        let mut news = [None, None];
        if let Some(p) = previous {
            if p + 1 + d >= t && !right_exists && p + 1 != t - d {
                news[0] = Some(Window {
                    start: p + 1,
                    time: t,
                    count: 1,
                    sum: x,
                });
            }
        }
        if !left_exists {
            let seed = before.filter(|_| previous.is_some_and(|p| t - d <= p));
            let (count, sum) = seed.map_or((0, 0), |s| (s.count, s.sum));
            news[1] = Some(Window {
                start: t - d,
                time: t,
                count: count + 1,
                sum: sum + x,
            });
        }
        for w in news.into_iter().flatten() {
            let at = base + self.next[base..].partition_point(|h| h.w.start < w.start);
            self.next.insert(at, Held { key, w });
        }
    }

    /// One call: its records applied and the closed windows emitted, in one pass.
    fn call(&mut self, batch: Option<&RecordBatch>) -> RecordBatch {
        let mut records: Vec<(u32, i64, i64)> = Vec::new();
        if let Some(batch) = batch {
            let k = batch.column(0).as_string::<i32>();
            let ts = batch.column(1).as_primitive::<Int64Type>();
            let x = batch.column(2).as_primitive::<Int64Type>();
            records.reserve(batch.num_rows());
            for row in 0..batch.num_rows() {
                let key = k.value(row);
                let (id, new) = self.keys.id(key);
                if new {
                    self.latest.push((None, None));
                }
                let t = ts.value(row);
                self.stream_time = self.stream_time.max(t);
                records.push((id, t, x.value(row)));
            }
        }
        // A key's records stay in arrival (time) order.
        records.sort_by_key(|r| r.0);
        let d = self.d;
        let close = self.stream_time.saturating_sub(self.grace);
        let keep_from = self.stream_time.saturating_sub(self.grace + 2 * d + 1);
        let (from_start, to_start) = (
            self.emitted_below.saturating_sub(d),
            close.saturating_sub(d),
        );
        let mut state = std::mem::take(&mut self.state);
        self.next.clear();
        self.next.reserve(state.len() + 2 * records.len());
        let mut due: Vec<Held> = Vec::new();
        let (mut i, mut j) = (0, 0);
        while i < state.len() || j < records.len() {
            let key = match (state.get(i), records.get(j)) {
                (Some(h), Some(r)) => h.key.min(r.0),
                (Some(h), None) => h.key,
                (None, Some(r)) => r.0,
                (None, None) => break,
            };
            let base = self.next.len();
            let i2 = i + state[i..].partition_point(|h| h.key == key);
            self.next.extend_from_slice(&state[i..i2]);
            i = i2;
            while let Some(&(_, t, x)) = records.get(j).filter(|r| r.0 == key) {
                self.apply(base, key, t, x);
                j += 1;
            }
            let windows = &self.next[base..];
            let emit_from = windows.partition_point(|h| h.w.start < from_start);
            let emit_to = windows.partition_point(|h| h.w.start < to_start);
            due.extend_from_slice(&windows[emit_from..emit_to.max(emit_from)]);
            let expired = windows.partition_point(|h| h.w.start < keep_from);
            self.next.drain(base..base + expired);
        }
        state.clear();
        self.state = std::mem::replace(&mut self.next, state);
        self.emitted_below = self.emitted_below.max(close);
        let keys = &self.keys.names;
        // By end, then start (every window is D long: by start), then key bytes.
        due.sort_unstable_by(|a, b| {
            a.w.start
                .cmp(&b.w.start)
                .then_with(|| keys[a.key as usize].cmp(&keys[b.key as usize]))
        });
        window_rows(&self.keys.names, d, due.iter().map(|h| (h.key, h.w)))
    }
}

/// Every batch through a fresh merge engine; the rows it emits (a flush included).
fn run_merge(d: i64, grace: i64, data: &[RecordBatch]) -> Vec<RecordBatch> {
    let mut engine = MergeFloor::new(d, grace);
    let mut out: Vec<RecordBatch> = data.iter().map(|b| engine.call(Some(b))).collect();
    engine.stream_time = i64::MAX;
    engine.grace = 0;
    out.push(engine.call(None));
    out
}

/// Every batch through a fresh floor engine; the rows it emits (a flush included).
fn run_floor(d: i64, grace: i64, data: &[RecordBatch]) -> Vec<RecordBatch> {
    let mut engine = KeyMajorFloor::new(d, grace);
    let mut out = Vec::with_capacity(data.len() + 1);
    for batch in data {
        let k = batch.column(0).as_string::<i32>();
        let ts = batch.column(1).as_primitive::<Int64Type>();
        let x = batch.column(2).as_primitive::<Int64Type>();
        for row in 0..batch.num_rows() {
            engine.record(k.value(row), ts.value(row), x.value(row));
        }
        out.push(engine.emit(false));
    }
    out.push(engine.flush(false));
    out
}

/// The sum over rows of each window column, and the row count: equal for equal windows.
fn checksum(batches: &[RecordBatch], columns: &[&str]) -> (usize, Vec<i64>) {
    let mut sums = vec![0i64; columns.len()];
    let mut rows = 0;
    for b in batches {
        rows += b.num_rows();
        for (sum, name) in sums.iter_mut().zip(columns) {
            let column = b.column_by_name(name).expect("column");
            let values = column.as_primitive::<Int64Type>();
            *sum = values.iter().flatten().fold(*sum, i64::wrapping_add);
            assert_eq!(column.null_count(), 0);
        }
    }
    (rows, sums)
}

fn bench(c: &mut Criterion) {
    let n = records();
    let data = batches(n);
    let mut group = c.benchmark_group("processor");
    group.sample_size(10);
    group.throughput(Throughput::Elements(n as u64));
    if runs("sessions") {
        let spec = SessionSpec {
            gap: GapSpec::Fixed(Duration::Ticks(30_000)),
            grace: Duration::Ticks(5_000),
            retention: None,
            emit: EmitMode::Final,
            on_invalid: OnInvalid::Drop,
        };
        bench_both_paths(&mut group, "sessions_final_in_order", &spec, &data);
    }
    if runs("sliding") {
        let spec = SlidingSpec {
            time_difference: Duration::Ticks(30_000),
            grace: Duration::Ticks(5_000),
            emit: EmitMode::Final,
            on_invalid: OnInvalid::Drop,
        };
        bench_both_paths(&mut group, "sliding_final_in_order", &spec, &data);
        // Windows of about 10 records, as in benches/bench_sliding.py: a key's records are
        // 100 ms x (N / 100) apart.
        let wide = SlidingSpec {
            time_difference: Duration::Ticks(10 * n as i64),
            ..spec.clone()
        };
        bench_both_paths(
            &mut group,
            "sliding_final_in_order_10_a_window",
            &wide,
            &data,
        );
        // The floor engine must emit the processor's windows before its time means anything;
        // each runs once, timed (see the module doc).
        let (d, grace) = (10 * n as i64, 5_000);
        let started = std::time::Instant::now();
        let mut p = Processor::new(wide.clone(), input(), aggs()).expect("processor");
        let mut want: Vec<RecordBatch> = data
            .iter()
            .map(|b| p.process(b).expect("process"))
            .collect();
        want.extend(p.flush().expect("flush"));
        let processor = started.elapsed().as_secs_f64();
        let columns = [
            "window_start",
            "window_end",
            "window_time",
            "count",
            "sum_x",
        ];
        let want = checksum(&want, &columns);
        eprintln!(
            "one run, {n} records: processor {processor:.2} s ({:.2} M rec/s)",
            n as f64 / processor / 1e6
        );
        type Engine = fn(i64, i64, &[RecordBatch]) -> Vec<RecordBatch>;
        let engines: [(&str, Engine); 3] = [
            ("key-major", run_floor),
            ("staged key-major", run_staged),
            ("merge", run_merge),
        ];
        for (name, engine) in engines {
            let started = std::time::Instant::now();
            let rows = engine(d, grace, &data);
            let seconds = started.elapsed().as_secs_f64();
            assert_eq!(
                checksum(&rows, &columns),
                want,
                "the {name} engine's windows differ from the processor's"
            );
            eprintln!(
                "one run, {n} records: {name} engine {seconds:.2} s ({:.2} M rec/s)",
                n as f64 / seconds / 1e6
            );
        }
        drop(p);
        group.bench_function("sliding_key_major_floor_10_a_window", |b| {
            b.iter(|| black_box(run_floor(d, grace, &data).len()));
        });
        group.bench_function("sliding_staged_key_major_floor_10_a_window", |b| {
            b.iter(|| black_box(run_staged(d, grace, &data).len()));
        });
        group.bench_function("sliding_merge_engine_10_a_window", |b| {
            b.iter(|| black_box(run_merge(d, grace, &data).len()));
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
