//! [`Aggregator`]: specs bound to a schema, with the per-record path (`encode_row`, `merge`,
//! `finish`) and complete mode's columnar path (`aggregate_windows`, `aggregate_ranges`).

use arrow_array::{ArrayRef, RecordBatch, UInt32Array};
use arrow_schema::{FieldRef, Schema};
use hashbrown::HashSet;

use super::agg_spec::AggSpec;
use super::columnar::{first_range_overflow, range_slot};
use super::finish::finish_slot;
use super::fold::Order;
use super::inputs::Inputs;
use super::row_ranges::{window_bounds, Ranges};
use super::slot::{Op, Slot};
use super::state_layout::{encode, merge, open, segment, VERSION};
use crate::{Error, Result};

/// Aggregations bound to an input schema.
///
/// States are opaque byte strings (layout in [`super::state_layout`], version byte first): build one
/// per record with [`Aggregator::encode_row`], combine with [`Aggregator::merge`] (in any
/// grouping and order: merging equals aggregating the union of the records), and turn many into
/// output columns with [`Aggregator::finish`]. [`Aggregator::aggregate_windows`] computes the same
/// outputs from complete windows of a batch, columnar.
#[derive(Debug, Clone)]
pub struct Aggregator {
    pub(crate) slots: Vec<Slot>,
    /// Each slot's fold in place and segment width, when every segment has a fixed width
    /// (see [`Aggregator::folds_in_place`]).
    pub(crate) fixed: Option<Box<[super::fold::Fixed]>>,
}

impl Aggregator {
    /// Validates specs against the schema: missing column / unsupported type ->
    /// [`Error::Schema`] naming the column; duplicate output names, `count` with a column or
    /// another function without one, `max_size` of 0 -> [`Error::InvalidWindowSpec`] with
    /// parameter `aggs`.
    pub fn try_new(specs: Vec<AggSpec>, schema: &Schema) -> Result<Self> {
        let slots = specs
            .iter()
            .map(|spec| Slot::compile(spec, schema))
            .collect::<Result<Vec<_>>>()?;
        let mut names = HashSet::with_capacity(slots.len());
        for slot in &slots {
            if !names.insert(slot.field.name().as_str()) {
                return Err(Error::invalid(
                    "aggs",
                    format!(
                        "duplicate output name {:?}; give one of the aggregations an alias",
                        slot.field.name()
                    ),
                ));
            }
        }
        drop(names);
        let fixed = slots
            .iter()
            .map(|s| super::fold::Fixed::of(&s.op))
            .collect();
        Ok(Self { slots, fixed })
    }

    /// Output fields, one per spec, in spec order (name, type, nullable true except count).
    pub fn output_fields(&self) -> Vec<FieldRef> {
        self.slots.iter().map(|s| s.field.clone()).collect()
    }

    /// The number of specs (and of output columns).
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether there are no specs (states then hold only the version byte).
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Appends to `out` the encoded state of ONE record: row `row` of `batch`, with event time
    /// `time` and arrival sequence `seq`.
    ///
    /// Precondition: `batch` has the schema given to [`Aggregator::try_new`] (same column
    /// order and types) and `row < batch.num_rows()`. This is not checked per row (the columnar
    /// path checks it per batch); if broken, the affected values read as null — never a panic.
    ///
    /// Each call resolves the batch's columns anew; the crate's per-record paths resolve them
    /// once per batch and call `encode_input`.
    pub fn encode_row(
        &self,
        batch: &RecordBatch,
        row: usize,
        time: i64,
        seq: u64,
        out: &mut Vec<u8>,
    ) {
        self.encode_input(&self.inputs(batch), row, time, seq, out);
    }

    /// [`Self::encode_row`] for row `row` of a batch whose inputs are resolved
    /// ([`Self::inputs`]): what the per-record paths call, the inputs resolved once per batch.
    pub(crate) fn encode_input(
        &self,
        inputs: &Inputs,
        row: usize,
        time: i64,
        seq: u64,
        out: &mut Vec<u8>,
    ) {
        out.push(VERSION);
        for (i, slot) in self.slots.iter().enumerate() {
            encode(&slot.op, inputs.value(i, row), time, seq, out);
        }
    }

    /// The inputs of `batch` for this aggregator's slots. `batch` should have the schema the
    /// aggregator was made for; a column it lacks, or of another type, reads as null (as
    /// [`Value::of_row`](super::value::Value::of_row) reads it).
    pub(crate) fn inputs(&self, batch: &RecordBatch) -> Inputs {
        Inputs::of(&self.slots, batch)
    }

    /// Appends to `out` the state merging states `a` and `b` (as produced by
    /// `encode_row`/`merge`). Merging is associative and commutative in the results it leads
    /// to (float sums up to rounding).
    ///
    /// Errors: [`Error::CollectOverflow`] when a `collect` under `Fail` would exceed its bound
    /// (key and window empty: fill them with [`super::fill_overflow`]); an
    /// [`Error::InvalidWindowSpec`] with parameter `state` for corrupted input. On error, `out`
    /// is left as it was.
    pub fn merge(&self, a: &[u8], b: &[u8], out: &mut Vec<u8>) -> Result<()> {
        let len = out.len();
        let result = self.merge_into(a, b, out);
        if result.is_err() {
            out.truncate(len);
        }
        result
    }

    fn merge_into(&self, a: &[u8], b: &[u8], out: &mut Vec<u8>) -> Result<()> {
        let (mut ra, mut rb) = (open(a)?, open(b)?);
        out.push(VERSION);
        for slot in &self.slots {
            merge(slot, &mut ra, &mut rb, out)?;
        }
        Ok(())
    }

    /// Pushes to `edits` the in-place splices that turn `state` (found at offset `base` of a
    /// stored value) into `merge(record, state)`, where `record` is one record's state
    /// ([`Aggregator::encode_row`]) placed at `place`: a `collect` list gains one element
    /// without a copy of the list (see `agg::append` for the costs). `scratch` is a buffer
    /// reused between calls.
    ///
    /// Errors: as [`Aggregator::merge`].
    pub fn append_edits(
        &self,
        (state, record): (&[u8], &[u8]),
        place: super::append::Place,
        base: usize,
        edits: &mut crate::store::edits::Edits,
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        super::append::append_edits(&self.slots, (state, record), place, base, edits, scratch)
    }

    /// Whether every state of this aggregator has one size ([`Self::fold_row`] applies).
    pub(crate) fn folds_in_place(&self) -> bool {
        self.fixed.is_some()
    }

    /// Folds row `row` of the batch whose inputs are `inputs` (time `time`, arrival `seq`)
    /// into `state` in place: `state` becomes `merge(encode_row(row), state)` with
    /// [`Order::RecordFirst`] (the session step's order), `merge(state, encode_row(row))` with
    /// [`Order::StateFirst`] (the sliding step's; the two differ in which sum an overflowed
    /// integer sum keeps, and in which of two equal min/max/first/last values the merge
    /// keeps). The caller has checked [`Self::folds_in_place`]; `scratch` is a buffer reused
    /// between calls.
    ///
    /// Errors: a state that is not of this aggregator (its length or version is wrong, or a
    /// segment does not decode); `state` may then be partly folded.
    #[inline]
    pub(crate) fn fold_row(
        &self,
        state: &mut [u8],
        (inputs, row): (&Inputs, usize),
        stamp: (i64, u64),
        scratch: &mut Vec<u8>,
        order: Order,
    ) -> Result<()> {
        let slots = (self.slots.as_slice(), self.fixed.as_deref());
        super::fold::fold_row(slots, state, (inputs, row), stamp, scratch, order)
    }

    /// One output array per spec (in spec order), one row per state.
    ///
    /// Errors: an integer `sum` that does not fit Int64 ([`Error::Schema`] naming the column);
    /// an [`Error::InvalidWindowSpec`] with parameter `state` for corrupted states.
    pub fn finish(&self, states: &[&[u8]]) -> Result<Vec<ArrayRef>> {
        if let Some(fixed) = self.fixed.as_deref() {
            let width = 1 + fixed.iter().map(|f| f.width()).sum::<usize>();
            if states.iter().all(|s| s.len() == width && s[0] == VERSION) {
                return super::finish::finish_fixed(&self.slots, fixed, states);
            }
            // A state of another length or version: the walk names what is wrong.
        }
        self.finish_walk(states)
    }

    /// [`Self::finish`] by walking each state's segments in turn, for any aggregator.
    pub(crate) fn finish_walk(&self, states: &[&[u8]]) -> Result<Vec<ArrayRef>> {
        let mut segments: Vec<Vec<&[u8]>> = self
            .slots
            .iter()
            .map(|_| Vec::with_capacity(states.len()))
            .collect();
        for state in states {
            let mut r = open(state)?;
            for (slot, segs) in self.slots.iter().zip(&mut segments) {
                segs.push(segment(&slot.op, &mut r)?);
            }
        }
        self.slots
            .iter()
            .zip(&segments)
            .map(|(slot, segs)| finish_slot(slot, segs))
            .collect()
    }

    /// Complete mode's columnar path: `order` lists row indices of `batch` grouped into windows;
    /// window `w` holds `order[offsets[w]..offsets[w+1]]` (`offsets.len() == windows + 1`;
    /// windows may share rows), each window's rows already in (time, arrival) order, with
    /// arrival = row index. Returns one array per spec, one row per window, equal to what
    /// `encode_row`/`merge`/`finish` give with `seq = row`.
    ///
    /// Errors: [`Error::Schema`] if `batch` does not match the schema given to `try_new`;
    /// [`Error::InvalidWindowSpec`] (`offsets`/`order`) for decreasing offsets, offsets beyond
    /// `order` or rows beyond the batch; integer sum overflow as in `finish`; a `collect` under
    /// `Fail` beyond its bound as in `merge` ([`Aggregator::first_overflow`] tells the window).
    pub fn aggregate_windows(
        &self,
        batch: &RecordBatch,
        order: &[u32],
        offsets: &[usize],
    ) -> Result<Vec<ArrayRef>> {
        self.check_windows(batch, order, offsets)?;
        let bounds = window_bounds(offsets)?;
        let ranges = Ranges::windows(order, &bounds);
        self.slots
            .iter()
            .map(|slot| range_slot(slot, batch.columns().get(slot.index), ranges))
            .collect()
    }

    /// The first window of [`Aggregator::aggregate_windows`]'s arguments in which a `collect`
    /// under `Fail` exceeds its bound, with the offending column (to locate the
    /// [`Error::CollectOverflow`] that `aggregate_windows` returned). `None` if there is none or
    /// the arguments are invalid.
    pub fn first_overflow(
        &self,
        batch: &RecordBatch,
        order: &[u32],
        offsets: &[usize],
    ) -> Option<(usize, &str)> {
        self.check_windows(batch, order, offsets).ok()?;
        let bounds = window_bounds(offsets).ok()?;
        self.overflow_in(batch, Ranges::windows(order, &bounds))
    }

    /// Complete mode's columnar path for overlapping windows: `order` lists row indices of `batch`
    /// in (key, time, arrival) order and window `w` holds `order[lo[w]..hi[w]]`, where `lo`
    /// and `hi` never decrease (sliding windows of consecutive key groups, listed by start).
    /// Returns one array per spec, one row per window, equal to what
    /// `encode_row`/`merge`/`finish` give with `seq = row` (float sums up to rounding), in
    /// O(rows + windows) per spec except `collect`, which copies each window's values.
    ///
    /// Errors: as [`Aggregator::aggregate_windows`]; [`Error::InvalidWindowSpec`] (`ranges`)
    /// when `lo`/`hi` differ in length, decrease, invert or go beyond `order`.
    pub fn aggregate_ranges(
        &self,
        batch: &RecordBatch,
        order: &[u32],
        lo: &[u32],
        hi: &[u32],
    ) -> Result<Vec<ArrayRef>> {
        self.check_windows(batch, order, &[])?;
        // Every pass over the windows reads its column at `order[lo..hi]` twice or more (as
        // values enter and leave): gather each column read into `order`'s order once (one
        // random read per value), so that the passes read memory in sequence.
        let identity: Vec<u32> = (0..order.len() as u32).collect();
        let ranges = check_ranges(&identity, lo, hi)?;
        let indices = UInt32Array::from(order.to_vec());
        let mut gathered: Vec<Option<ArrayRef>> = vec![None; batch.num_columns()];
        self.slots
            .iter()
            .map(|slot| {
                let column = match (slot.op, batch.columns().get(slot.index)) {
                    (Op::Count, _) | (_, None) => None,
                    (_, Some(c)) => Some(match &gathered[slot.index] {
                        Some(g) => g.clone(),
                        None => {
                            let g = arrow_select::take::take(c.as_ref(), &indices, None)
                                .map_err(Error::arrow("gathering aggregate values"))?;
                            gathered[slot.index] = Some(g.clone());
                            g
                        }
                    }),
                };
                range_slot(slot, column.as_ref(), ranges)
            })
            .collect()
    }

    /// The first window of [`Aggregator::aggregate_ranges`]'s arguments in which a `collect`
    /// under `Fail` exceeds its bound, with the offending column.
    pub fn first_range_overflow(
        &self,
        batch: &RecordBatch,
        order: &[u32],
        lo: &[u32],
        hi: &[u32],
    ) -> Option<(usize, &str)> {
        self.check_windows(batch, order, &[]).ok()?;
        self.overflow_in(batch, check_ranges(order, lo, hi).ok()?)
    }

    /// The first window of checked `ranges` in which a `collect` under `Fail` exceeds its
    /// bound, with the offending column.
    fn overflow_in(&self, batch: &RecordBatch, ranges: Ranges<'_>) -> Option<(usize, &str)> {
        self.slots
            .iter()
            .filter_map(|slot| {
                first_range_overflow(slot, batch.columns().get(slot.index), ranges)
                    .map(|w| (w, slot.column.as_str()))
            })
            .min_by_key(|(w, _)| *w)
    }

    /// Checks the batch's columns against the slots and the runs against `order` and the batch.
    pub(crate) fn check_windows(
        &self,
        batch: &RecordBatch,
        order: &[u32],
        offsets: &[usize],
    ) -> Result<()> {
        for slot in self.slots.iter().filter(|s| s.op != Op::Count) {
            match batch.columns().get(slot.index) {
                Some(c) if c.data_type() == &slot.data_type => {}
                Some(c) => {
                    return Err(Error::schema(
                        slot.column.clone(),
                        format!(
                            "batch column has type {}, the aggregator expects {}",
                            c.data_type(),
                            slot.data_type
                        ),
                    ))
                }
                None => {
                    return Err(Error::schema(
                        slot.column.clone(),
                        "no such column in the batch",
                    ))
                }
            }
        }
        if offsets.windows(2).any(|w| w[0] > w[1]) {
            return Err(Error::invalid("offsets", "offsets must not decrease"));
        }
        if offsets.last().is_some_and(|&end| end > order.len()) {
            return Err(Error::invalid(
                "offsets",
                format!("offsets go beyond order's {} rows", order.len()),
            ));
        }
        let rows = batch.num_rows();
        if order.iter().fold(0u32, |m, &i| m.max(i)) as usize >= rows && !order.is_empty() {
            return Err(Error::invalid(
                "order",
                format!("row index beyond the batch's {rows} rows"),
            ));
        }
        Ok(())
    }
}

/// Checks that `lo`/`hi` are monotone ranges within `order`.
fn check_ranges<'a>(order: &'a [u32], lo: &'a [u32], hi: &'a [u32]) -> Result<Ranges<'a>> {
    let bad = |why: &str| Err(Error::invalid("ranges", why.to_string()));
    if lo.len() != hi.len() {
        return bad("lo and hi differ in length");
    }
    // One pass, no early exit: the loop vectorizes.
    let (mut decreasing, mut inverted, mut last) = (false, false, (0u32, 0u32));
    for (&l, &h) in lo.iter().zip(hi) {
        decreasing |= l < last.0 || h < last.1;
        inverted |= l > h;
        last = (l, h);
    }
    if decreasing {
        return bad("range bounds must not decrease");
    }
    if inverted {
        return bad("a range starts after it ends");
    }
    if hi.last().is_some_and(|&h| h as usize > order.len()) {
        return bad("ranges go beyond order");
    }
    Ok(Ranges { order, lo, hi })
}
