//! The aggregate state of each whole run of rows, computed column by column: what map-side
//! partial sessions carry to the merge. Equal to folding `encode_row` and `merge` over the run's
//! rows (with `seq` = row index), computed by the columnar engine instead of one merge per row.

use arrow_array::cast::AsArray;
use arrow_array::types::{Decimal128Type, Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};

use super::agg_spec::Overflow;
use super::aggregator::Aggregator;
use super::codec::{put_f64, put_i128, put_i64, put_u64, put_varint};
use super::columnar::range_slot;
use super::row_ranges::{window_bounds, Ranges};
use super::slot::{Op, Slot};
use super::state_layout::{encode, overflow_error, SEEN, VERSION};
use super::value::Value;
use super::value_kind::Kind;
use crate::{Error, Result};

/// One slot's segment of every run, back to back, with the offsets of each run's segment.
struct Segments {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Segments {
    fn new(runs: usize) -> Self {
        Self {
            bytes: Vec::with_capacity(runs * 9),
            ends: Vec::with_capacity(runs),
        }
    }

    /// Closes the current run's segment.
    fn end(&mut self) {
        self.ends.push(self.bytes.len());
    }

    fn get(&self, run: usize) -> &[u8] {
        let start = if run == 0 { 0 } else { self.ends[run - 1] };
        &self.bytes[start..self.ends[run]]
    }
}

impl Aggregator {
    /// The state of each run `order[offsets[w]..offsets[w + 1]]` of `batch` (rows in (time,
    /// arrival) order, `times[row]` the event time, arrival = row index), concatenated, and the
    /// end offset of each state. Merging these states equals merging the per-row states.
    ///
    /// Errors as [`Aggregator::aggregate_windows`]: a batch that does not match the schema, bad
    /// runs, an integer sum beyond Int64 within a run, a `collect` under `Fail` beyond its bound.
    pub fn window_states(
        &self,
        batch: &RecordBatch,
        times: &[i64],
        order: &[u32],
        offsets: &[usize],
    ) -> Result<(Vec<u8>, Vec<usize>)> {
        self.check_windows(batch, order, offsets)?;
        if order.iter().any(|&r| r as usize >= times.len()) {
            return Err(Error::invalid("order", "row index beyond the times"));
        }
        let runs = offsets.len().saturating_sub(1);
        let bounds = window_bounds(offsets)?;
        let ranges = Ranges::windows(order, &bounds);
        let runs_of_rows = Runs {
            batch,
            times,
            ranges,
            offsets,
        };
        let segments = self
            .slots
            .iter()
            .map(|slot| segments(slot, &runs_of_rows))
            .collect::<Result<Vec<_>>>()?;
        let mut states = Vec::with_capacity(runs * (1 + segments.len() * 9));
        let mut ends = Vec::with_capacity(runs);
        for run in 0..runs {
            states.push(VERSION);
            for s in &segments {
                states.extend_from_slice(s.get(run));
            }
            ends.push(states.len());
        }
        Ok((states, ends))
    }
}

/// The rows of run `w` whose value in `column` is not null, in run order.
fn valid_rows<'a>(
    column: &'a dyn Array,
    run: &'a [u32],
) -> impl DoubleEndedIterator<Item = usize> + 'a {
    let nulls = column.nulls().filter(|n| n.null_count() > 0);
    run.iter()
        .map(|&r| r as usize)
        .filter(move |&r| nulls.is_none_or(|n| n.is_valid(r)))
}

/// The runs whose segments are written: rows of `batch` with event times `times`, run `w`
/// being `ranges.order[offsets[w]..offsets[w + 1]]`.
struct Runs<'a> {
    batch: &'a RecordBatch,
    times: &'a [i64],
    ranges: Ranges<'a>,
    offsets: &'a [usize],
}

impl Runs<'_> {
    fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// The rows of run `w`, in (time, arrival) order.
    fn rows(&self, w: usize) -> &[u32] {
        &self.ranges.order[self.offsets[w]..self.offsets[w + 1]]
    }

    /// `slot`'s input column, if the batch has it.
    fn column(&self, slot: &Slot) -> Option<&ArrayRef> {
        self.batch.columns().get(slot.index)
    }

    /// `slot`'s input column; an error if the batch has none.
    fn required_column(&self, slot: &Slot) -> Result<&ArrayRef> {
        self.column(slot)
            .ok_or_else(|| Error::schema(&slot.column, "missing"))
    }

    /// `slot` computed under `op` over every run at once by the columnar engine: one value
    /// per run.
    fn column_of_runs(&self, slot: &Slot, op: Op) -> Result<ArrayRef> {
        let slot = Slot { op, ..slot.clone() };
        range_slot(&slot, self.column(&slot), self.ranges)
    }
}

/// `slot`'s segment of every run.
fn segments(slot: &Slot, runs: &Runs<'_>) -> Result<Segments> {
    match slot.op {
        Op::Count => Ok(count_segments(runs)),
        Op::Sum(Kind::Dec128) | Op::Mean(Kind::Dec128) => decimal_sum_segments(slot, runs),
        Op::Sum(kind) | Op::Mean(kind) => sum_segments(slot, kind, runs),
        Op::Min(kind) | Op::Max(kind) => min_max_segments(slot, kind, runs),
        Op::First(kind) | Op::Last(kind) => first_last_segments(slot, kind, runs),
        Op::CountDistinct(kind) => count_distinct_segments(slot, kind, runs),
        Op::Collect {
            kind,
            max_size,
            overflow,
            nulls,
        } => collect_segments(slot, kind, max_size, overflow, nulls, runs),
    }
}

/// A count's segments: each run's number of rows.
fn count_segments(runs: &Runs<'_>) -> Segments {
    let mut out = Segments::new(runs.len());
    for w in 0..runs.len() {
        put_u64(&mut out.bytes, runs.rows(w).len() as u64);
        out.end();
    }
    out
}

/// A decimal sum's or mean's segments: each run's sum, checked as merges check it (a mean's
/// sum has the sum's type), and a mean's count of values.
fn decimal_sum_segments(slot: &Slot, runs: &Runs<'_>) -> Result<Segments> {
    let mut out = Segments::new(runs.len());
    let sums = runs.column_of_runs(slot, Op::Sum(Kind::Dec128))?;
    let sums = sums.as_primitive::<Decimal128Type>();
    let column = runs.required_column(slot)?;
    for w in 0..runs.len() {
        let seen = sums.is_valid(w);
        let sum = if seen { sums.value(w) } else { 0 };
        let b = &mut out.bytes;
        if matches!(slot.op, Op::Sum(_)) {
            b.push(if seen { SEEN } else { 0 });
            put_i128(b, sum);
        } else {
            put_i128(b, sum);
            put_u64(b, valid_rows(column.as_ref(), runs.rows(w)).count() as u64);
        }
        out.end();
    }
    Ok(out)
}

/// An integer or float sum's or mean's segments: each run's sum, and a mean's count of values.
fn sum_segments(slot: &Slot, kind: Kind, runs: &Runs<'_>) -> Result<Segments> {
    let mut out = Segments::new(runs.len());
    let sums = runs.column_of_runs(slot, Op::Sum(kind))?;
    let column = runs.required_column(slot)?;
    for w in 0..runs.len() {
        let seen = sums.is_valid(w);
        let b = &mut out.bytes;
        if matches!(slot.op, Op::Sum(_)) {
            b.push(if seen { SEEN } else { 0 });
        }
        if kind.is_integer() {
            let s = sums.as_primitive::<Int64Type>();
            put_i128(b, if seen { i128::from(s.value(w)) } else { 0 });
        } else {
            let s = sums.as_primitive::<Float64Type>();
            put_f64(b, if seen { s.value(w) } else { -0.0 });
        }
        if matches!(slot.op, Op::Mean(_)) {
            put_u64(b, valid_rows(column.as_ref(), runs.rows(w)).count() as u64);
        }
        out.end();
    }
    Ok(out)
}

/// A min's or max's segments: each run's best value.
fn min_max_segments(slot: &Slot, kind: Kind, runs: &Runs<'_>) -> Result<Segments> {
    let mut out = Segments::new(runs.len());
    let best = runs.column_of_runs(slot, slot.op)?;
    for w in 0..runs.len() {
        let v = Value::of_row(best.as_ref(), &slot.data_type, kind, w);
        encode(&slot.op, v, 0, 0, &mut out.bytes);
        out.end();
    }
    Ok(out)
}

/// A first's or last's segments: each run's first or last value that is not null, with its
/// time and row index.
fn first_last_segments(slot: &Slot, kind: Kind, runs: &Runs<'_>) -> Result<Segments> {
    let mut out = Segments::new(runs.len());
    let column = runs.required_column(slot)?;
    for w in 0..runs.len() {
        let mut rows = valid_rows(column.as_ref(), runs.rows(w));
        let row = match slot.op {
            Op::First(_) => rows.next(),
            _ => rows.next_back(),
        };
        match row {
            Some(r) => {
                let v = Value::of_row(column.as_ref(), &slot.data_type, kind, r);
                encode(&slot.op, v, runs.times[r], r as u64, &mut out.bytes);
            }
            None => encode(&slot.op, Value::Null, 0, 0, &mut out.bytes),
        }
        out.end();
    }
    Ok(out)
}

/// A count_distinct's segments: each run's set of distinct values.
fn count_distinct_segments(slot: &Slot, kind: Kind, runs: &Runs<'_>) -> Result<Segments> {
    let mut out = Segments::new(runs.len());
    let column = runs.required_column(slot)?;
    let (bytes, ends) = (&mut out.bytes, &mut out.ends);
    super::distinct::run_sets(
        column.as_ref(),
        &slot.data_type,
        kind,
        runs.ranges.order,
        runs.offsets,
        bytes,
        |b| ends.push(b.len()),
    );
    Ok(out)
}

/// A collect's segments: each run's values (with nulls if `nulls`) with their times and row
/// indices, cut to `max_size` as `overflow` says.
fn collect_segments(
    slot: &Slot,
    kind: Kind,
    max_size: Option<usize>,
    overflow: Overflow,
    nulls: bool,
    runs: &Runs<'_>,
) -> Result<Segments> {
    let mut out = Segments::new(runs.len());
    let column = runs.required_column(slot)?;
    let mut rows = Vec::new();
    for w in 0..runs.len() {
        rows.clear();
        if nulls {
            rows.extend(runs.rows(w).iter().map(|&r| r as usize));
        } else {
            rows.extend(valid_rows(column.as_ref(), runs.rows(w)));
        }
        let kept: &[usize] = match max_size {
            Some(n) if rows.len() > n => match overflow {
                Overflow::DropOldest => &rows[rows.len() - n..],
                Overflow::DropNewest => &rows[..n],
                Overflow::Fail => return Err(overflow_error(slot, n)),
            },
            _ => &rows,
        };
        put_varint(&mut out.bytes, kept.len() as u64);
        for &r in kept {
            put_i64(&mut out.bytes, runs.times[r]);
            put_u64(&mut out.bytes, r as u64);
            let v = Value::of_row(column.as_ref(), &slot.data_type, kind, r);
            if nulls {
                out.bytes.push(u8::from(v != Value::Null));
            }
            if v != Value::Null {
                v.write(kind, &mut out.bytes);
            }
        }
        out.end();
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use arrow_array::{Decimal128Array, Float64Array, Int64Array, StringArray};

    use super::*;
    use crate::agg::tests::{a, agg_specs, batch, fold};

    /// Run states equal, byte for byte, the fold of per-row states over each run.
    #[test]
    fn window_states_equal_folded_row_states() {
        let n = 40;
        let ints: Int64Array = (0..n)
            .map(|i| (i % 5 != 0).then_some(i * 7 % 11 - 5))
            .collect();
        let floats: Float64Array = (0..n)
            .map(|i| (i % 7 != 3).then_some(i as f64 * 0.37 - 4.0))
            .collect();
        let strings: StringArray = (0..n)
            .map(|i| (i % 4 != 1).then(|| format!("v{}", i * 13 % 9)))
            .collect();
        let decimals = Decimal128Array::from(
            (0..n)
                .map(|i| (i % 6 != 2).then_some(i128::from(i * 37 % 23 - 11)))
                .collect::<Vec<_>>(),
        )
        .with_data_type(arrow_schema::DataType::Decimal128(12, 3));
        let batch = batch(vec![
            ("i", a(ints)),
            ("f", a(floats)),
            ("s", a(strings)),
            ("d", a(decimals)),
        ]);
        let specs = agg_specs!(
            count sum(i) sum(f) mean(i) mean(f) min(s) max(f) first(s) last(i)
            collect(s, Some(3), Overflow::DropOldest) collect(i, Some(2), Overflow::DropNewest)
            collect(f, None, Overflow::Fail) count_distinct(f) count_distinct(s)
            collect_all(s, Some(3), Overflow::DropOldest) collect_all(i, None, Overflow::Fail)
            sum(d) mean(d) min(d) max(d) first(d) last(d) count_distinct(d)
            collect(d, Some(2), Overflow::DropOldest) collect_all(d, None, Overflow::Fail)
        );
        let aggregator = Aggregator::try_new(specs, &batch.schema()).unwrap();
        let times: Vec<i64> = (0..n).map(|i| i / 3).collect();
        // Runs of several lengths (one empty), rows in (time, row) order within each.
        let order: Vec<u32> = (0..n as u32).collect();
        let offsets = vec![0, 1, 1, 6, 20, 33, 40];
        let (states, ends) = aggregator
            .window_states(&batch, &times, &order, &offsets)
            .unwrap();
        for w in 0..offsets.len() - 1 {
            let start = if w == 0 { 0 } else { ends[w - 1] };
            let rows = &order[offsets[w]..offsets[w + 1]];
            if rows.is_empty() {
                continue;
            }
            let records: Vec<(usize, i64, u64)> = rows
                .iter()
                .map(|&r| (r as usize, times[r as usize], u64::from(r)))
                .collect();
            let folded = fold(&aggregator, &batch, &records).unwrap();
            assert_eq!(&states[start..ends[w]], folded.as_slice(), "run {w}");
        }
    }

    #[test]
    fn a_collect_beyond_its_bound_under_fail_is_an_error() {
        let batch = batch(vec![("i", a(Int64Array::from(vec![1, 2, 3])))]);
        let aggregator = Aggregator::try_new(
            agg_specs!(collect(i, Some(2), Overflow::Fail)),
            &batch.schema(),
        )
        .unwrap();
        let err = aggregator
            .window_states(&batch, &[0, 1, 2], &[0, 1, 2], &[0, 3])
            .unwrap_err();
        assert!(matches!(err, Error::CollectOverflow { .. }), "{err}");
    }
}
