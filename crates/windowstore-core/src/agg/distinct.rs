//! `count_distinct`: the exact number of distinct non-null values, as a mergeable set.
//!
//! The state segment is the set itself: `varint n`, then the `n` distinct elements in strictly
//! increasing byte order, each a value's state encoding ([`Value::write`]) with floats
//! normalised so that equal numbers have one encoding: `-0.0` is `+0.0` and every NaN is the
//! canonical NaN (as Spark's `count(DISTINCT ...)` and Polars' `n_unique` count them). Merging
//! two sets is a merge of two sorted lists without repeats; the order is checked on every read,
//! so a set that did not come from here is refused as a corrupted state. Like `collect`, the
//! state grows with what it holds: one element per distinct value.
//!
//! Complete mode counts without building sets: a window that overlaps no other (a session)
//! sorts its elements; overlapping windows share a multiset that values enter and leave as
//! the ranges move forward. Map-side partials build each run's set by sorting its elements.

use std::cmp::Ordering;

use arrow_array::{Array, ArrayRef, Int64Array};
use arrow_schema::DataType;
use hashbrown::HashMap;

use super::codec::{corrupt, put_varint, Reader};
use super::native::Num;
use super::row_ranges::Ranges;
use super::value::Value;
use super::value_kind::Kind;
use crate::Result;

/// `w` with floats normalised: `-0.0` as `+0.0`, every NaN as the canonical NaN.
fn normal_word(kind: Kind, w: u64) -> u64 {
    match kind {
        Kind::F64 => {
            let f = f64::from_word(w);
            if f == 0.0 {
                0.0f64.to_word()
            } else if f.is_nan() {
                f64::NAN.to_word()
            } else {
                w
            }
        }
        Kind::F32 => {
            let f = f32::from_word(w);
            if f == 0.0 {
                0.0f32.to_word()
            } else if f.is_nan() {
                f32::NAN.to_word()
            } else {
                w
            }
        }
        _ => w,
    }
}

/// Appends the set element of a present value `v` of `kind`.
pub(crate) fn write_element(kind: Kind, v: Value<'_>, out: &mut Vec<u8>) {
    match v {
        Value::Word(w) => Value::Word(normal_word(kind, w)).write(kind, out),
        other => other.write(kind, out),
    }
}

/// Appends the segment of one record with value `v` (a set of zero or one element).
pub(crate) fn encode(kind: Kind, v: Value<'_>, out: &mut Vec<u8>) {
    if v == Value::Null {
        put_varint(out, 0);
    } else {
        put_varint(out, 1);
        write_element(kind, v, out);
    }
}

/// The elements of the next set in `r`, checked to be in strictly increasing order.
fn elements<'a>(kind: Kind, r: &mut Reader<'a>) -> Result<Vec<&'a [u8]>> {
    let n = r.varint()?;
    let mut out: Vec<&'a [u8]> = Vec::with_capacity(usize::try_from(n).unwrap_or(0).min(1 << 16));
    for _ in 0..n {
        let before = r.rest();
        Value::read(kind, r)?;
        let element = &before[..before.len() - r.rest().len()];
        if out.last().is_some_and(|&last| last >= element) {
            return Err(corrupt("count_distinct set out of order"));
        }
        out.push(element);
    }
    Ok(out)
}

/// Advances `r` over one set, checking it.
pub(crate) fn skip(kind: Kind, r: &mut Reader<'_>) -> Result<()> {
    elements(kind, r).map(|_| ())
}

/// The number of elements of the set at the start of `r`.
pub(crate) fn len(r: &mut Reader<'_>) -> Result<i64> {
    Ok(i64::try_from(r.varint()?).unwrap_or(i64::MAX))
}

/// Appends the union of the next sets of `a` and `b`.
pub(crate) fn merge(
    kind: Kind,
    a: &mut Reader<'_>,
    b: &mut Reader<'_>,
    out: &mut Vec<u8>,
) -> Result<()> {
    let (xs, ys) = (elements(kind, a)?, elements(kind, b)?);
    let mut union = Vec::with_capacity(xs.len() + ys.len());
    let (mut i, mut j) = (0, 0);
    while i < xs.len() && j < ys.len() {
        match xs[i].cmp(ys[j]) {
            Ordering::Less => {
                union.push(xs[i]);
                i += 1;
            }
            Ordering::Greater => {
                union.push(ys[j]);
                j += 1;
            }
            Ordering::Equal => {
                union.push(xs[i]);
                i += 1;
                j += 1;
            }
        }
    }
    union.extend_from_slice(&xs[i..]);
    union.extend_from_slice(&ys[j..]);
    put_varint(out, union.len() as u64);
    for e in union {
        out.extend_from_slice(e);
    }
    Ok(())
}

/// The elements of rows of `array` (of `data_type`, kind `kind`) laid end to end in one buffer,
/// with the span of each row's element (`None` for a null).
struct Elements {
    buf: Vec<u8>,
    spans: Vec<Option<(usize, usize)>>,
}

impl Elements {
    fn of_rows(
        array: &dyn Array,
        data_type: &DataType,
        kind: Kind,
        rows: impl Iterator<Item = usize>,
    ) -> Self {
        let mut buf = Vec::new();
        let spans = rows
            .map(|row| match Value::of_row(array, data_type, kind, row) {
                Value::Null => None,
                v => {
                    let at = buf.len();
                    write_element(kind, v, &mut buf);
                    Some((at, buf.len()))
                }
            })
            .collect();
        Self { buf, spans }
    }

    fn get(&self, i: usize) -> Option<&[u8]> {
        self.spans[i].map(|(a, b)| &self.buf[a..b])
    }
}

/// The distinct elements of `rows`, sorted (the set of those rows).
fn sorted_set(elements: &Elements, rows: std::ops::Range<usize>) -> Vec<&[u8]> {
    let mut set: Vec<&[u8]> = rows.filter_map(|i| elements.get(i)).collect();
    set.sort_unstable();
    set.dedup();
    set
}

/// Appends the set segment of each run of `order` cut at `offsets`, calling `end` after each.
pub(crate) fn run_sets(
    array: &dyn Array,
    data_type: &DataType,
    kind: Kind,
    order: &[u32],
    offsets: &[usize],
    out: &mut Vec<u8>,
    mut end: impl FnMut(&mut Vec<u8>),
) {
    let elements = Elements::of_rows(array, data_type, kind, order.iter().map(|&r| r as usize));
    for w in offsets.windows(2) {
        let set = sorted_set(&elements, w[0]..w[1]);
        put_varint(out, set.len() as u64);
        for e in set {
            out.extend_from_slice(e);
        }
        end(out);
    }
}

/// The distinct counts of monotone ranges: a multiset that each position of overlapping
/// windows enters once and leaves once, O(records + windows) hash operations; a window that
/// overlaps no other (every session) sorts its own elements instead, which costs less than
/// entering and leaving them.
pub(crate) fn range_counts(
    array: &dyn Array,
    data_type: &DataType,
    kind: Kind,
    ranges: Ranges<'_>,
) -> ArrayRef {
    let order = ranges.order;
    let elements = Elements::of_rows(array, data_type, kind, order.iter().map(|&r| r as usize));
    let mut in_range: HashMap<&[u8], u32> = HashMap::new();
    // `in_range` counts the elements of positions lo..hi.
    let (mut lo, mut hi) = (0usize, 0usize);
    let leave = |in_range: &mut HashMap<&[u8], u32>, p: usize| {
        if let Some(e) = elements.get(p) {
            if let Some(n) = in_range.get_mut(e) {
                *n -= 1;
                if *n == 0 {
                    in_range.remove(e);
                }
            }
        }
    };
    let mut counts = Vec::with_capacity(ranges.lo.len());
    for (w, (l, h)) in ranges.bounds().enumerate() {
        if ranges.lone(w) {
            (lo..hi).for_each(|p| leave(&mut in_range, p));
            (lo, hi) = (h, h);
            counts.push(sorted_set(&elements, l..h).len() as i64);
            continue;
        }
        while hi < h {
            if let Some(e) = elements.get(hi) {
                *in_range.entry(e).or_insert(0) += 1;
            }
            hi += 1;
        }
        while lo < l {
            leave(&mut in_range, lo);
            lo += 1;
        }
        counts.push(in_range.len() as i64);
    }
    std::sync::Arc::new(Int64Array::from(counts))
}
