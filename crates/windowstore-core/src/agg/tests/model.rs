//! A brute-force model of every function: random data of every kind of column, the specs over
//! it, and the expected output of each spec for windows of `(row, time, seq)` records.

use std::sync::Arc;

use arrow_array::*;
use arrow_buffer::OffsetBuffer;
use arrow_schema::Field;
use proptest::prelude::*;

use super::batch;
use crate::agg::{AggSpec, Overflow};

/// One record of a window: row, event time, arrival sequence.
pub(super) type Rec = (usize, i64, u64);

/// Random rows of every supported kind of column, with event times.
#[derive(Debug, Clone)]
pub(super) struct Data {
    pub(super) times: Vec<i64>,
    pub(super) i: Vec<Option<i64>>,
    pub(super) u: Vec<Option<u8>>,
    pub(super) f: Vec<Option<f64>>,
    pub(super) g: Vec<Option<f32>>,
    pub(super) s: Vec<Option<String>>,
    pub(super) b: Vec<Option<bool>>,
    pub(super) t: Vec<Option<i64>>,
    pub(super) bin: Vec<Option<Vec<u8>>>,
    /// Decimal128(10, 2), unscaled.
    pub(super) d: Vec<Option<i128>>,
}

const TZ: &str = "America/New_York";

/// The value columns, in the order [`specs`] lists them.
pub(super) const COLUMNS: [&str; 9] = ["i", "u", "f", "g", "s", "b", "t", "bin", "d"];

/// The type of column `d`.
pub(super) const DEC: arrow_schema::DataType = arrow_schema::DataType::Decimal128(10, 2);

/// `Some` with probability `p` (always when `p` is 1).
fn opt<T: std::fmt::Debug + 'static>(
    p: f64,
    s: impl Strategy<Value = T> + 'static,
) -> BoxedStrategy<Option<T>> {
    if p >= 1.0 {
        s.prop_map(Some).boxed()
    } else {
        proptest::option::weighted(p, s).boxed()
    }
}

/// Data of `rows` rows (times in 0..6, so many ties): a quarter of the values null, or (one
/// case in three) none, since columns without nulls take their own paths.
pub(super) fn data(rows: std::ops::Range<usize>) -> impl Strategy<Value = Data> {
    (rows, prop_oneof![2 => Just(0.75), 1 => Just(1.0)])
        .prop_flat_map(|(n, p)| {
            let f = prop_oneof![
                (-20i32..20).prop_map(f64::from),
                Just(-0.0),
                Just(0.0),
                Just(f64::NAN)
            ];
            let g = prop_oneof![
                (-20i16..20).prop_map(f32::from),
                Just(-0.0f32),
                Just(0.0f32),
                Just(f32::NAN)
            ];
            let bin =
                proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(255u8)], 0..3);
            (
                proptest::collection::vec(0i64..6, n),
                proptest::collection::vec(opt(p, -50i64..50), n),
                proptest::collection::vec(opt(p, any::<u8>()), n),
                proptest::collection::vec(opt(p, f), n),
                proptest::collection::vec(opt(p, g), n),
                proptest::collection::vec(opt(p, "[abé]{0,3}"), n),
                proptest::collection::vec(opt(p, any::<bool>()), n),
                proptest::collection::vec(opt(p, -5i64..5), n),
                proptest::collection::vec(opt(p, bin), n),
                proptest::collection::vec(
                    opt(
                        p,
                        prop_oneof![
                            -5000i128..5000,
                            Just(9_999_999_999i128),
                            Just(-9_999_999_999i128)
                        ],
                    ),
                    n,
                ),
            )
        })
        .prop_map(|(times, i, u, f, g, s, b, t, bin, d)| Data {
            times,
            i,
            u,
            f,
            g,
            s,
            b,
            t,
            bin,
            d,
        })
}

impl Data {
    /// The rows as a batch.
    pub(super) fn batch(&self) -> RecordBatch {
        let a = |x: ArrayRef| x;
        batch(vec![
            ("i", a(Arc::new(Int64Array::from(self.i.clone())))),
            ("u", a(Arc::new(UInt8Array::from(self.u.clone())))),
            ("f", a(Arc::new(Float64Array::from(self.f.clone())))),
            ("g", a(Arc::new(Float32Array::from(self.g.clone())))),
            ("s", a(Arc::new(StringArray::from(self.s.clone())))),
            ("b", a(Arc::new(BooleanArray::from(self.b.clone())))),
            (
                "t",
                a(Arc::new(
                    TimestampMillisecondArray::from(self.t.clone()).with_timezone(TZ),
                )),
            ),
            (
                "bin",
                a(Arc::new(LargeBinaryArray::from_iter(
                    self.bin.iter().map(|v| v.as_deref()),
                ))),
            ),
            ("d", a(Arc::new(decimals(self.d.clone())))),
        ])
    }
}

/// The specs the model knows: numeric ones, then per column min, max, first, last, three
/// collects (unbounded, newest 2, oldest 3), count_distinct and two collect_all (unbounded,
/// newest 2).
pub(super) fn specs() -> Vec<AggSpec> {
    let mut specs = vec![AggSpec::count()];
    for c in ["i", "u", "f", "g", "d"] {
        specs.extend([AggSpec::sum(c), AggSpec::mean(c)]);
    }
    for c in COLUMNS {
        specs.extend(super::ordered_specs(c));
        specs.extend([
            AggSpec::collect(c, None, Overflow::Fail),
            AggSpec::collect(c, Some(2), Overflow::DropOldest).with_alias(format!("newest_{c}")),
            AggSpec::collect(c, Some(3), Overflow::DropNewest).with_alias(format!("oldest_{c}")),
            AggSpec::count_distinct(c),
            AggSpec::collect_all(c, None, Overflow::Fail),
            AggSpec::collect_all(c, Some(2), Overflow::DropOldest)
                .with_alias(format!("newest_all_{c}")),
        ]);
    }
    specs
}

/// Float order of the contract: NaN greatest, otherwise IEEE total order (-0.0 < +0.0).
fn float_less(a: f64, b: f64) -> bool {
    match (a.is_nan(), b.is_nan()) {
        (true, _) => false,
        (false, true) => true,
        _ => a.total_cmp(&b).is_lt(),
    }
}

/// The non-null values of a window, sorted by (time, seq).
fn present<T: Clone>(values: &[Option<T>], window: &[Rec]) -> Vec<T> {
    let mut recs = window.to_vec();
    recs.sort_by_key(|&(_, t, s)| (t, s));
    recs.iter()
        .filter_map(|&(r, _, _)| values[r].clone())
        .collect()
}

/// Equality of count_distinct for floats: numbers by value (`-0.0 == 0.0`), NaNs all one.
fn float_same(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

/// Every value of a window, nulls included, sorted by (time, seq).
fn all_values<T: Clone>(values: &[Option<T>], window: &[Rec]) -> Vec<Option<T>> {
    let mut recs = window.to_vec();
    recs.sort_by_key(|&(_, t, s)| (t, s));
    recs.iter().map(|&(r, _, _)| values[r].clone()).collect()
}

/// A List array of `lists`, its child built by `array`.
fn list_of<T>(lists: Vec<Vec<Option<T>>>, array: impl Fn(Vec<Option<T>>) -> ArrayRef) -> ArrayRef {
    let lengths: Vec<usize> = lists.iter().map(Vec::len).collect();
    let child = array(lists.into_iter().flatten().collect());
    let field = Arc::new(Field::new_list_field(child.data_type().clone(), true));
    Arc::new(ListArray::new(
        field,
        OffsetBuffer::from_lengths(lengths),
        child,
        None,
    ))
}

/// The ten per-column outputs of the model; `same` is count_distinct's equality.
/// [`column_outputs`] of a column whose values order and compare as Rust orders them, each
/// its own canonical form.
fn ordered_outputs<T: Clone + PartialOrd>(
    values: &[Option<T>],
    windows: &[Vec<Rec>],
    array: impl Fn(Vec<Option<T>>) -> ArrayRef,
) -> Vec<ArrayRef> {
    column_outputs(values, windows, |a, b| a < b, |a, b| a == b, |v| v, array)
}

fn column_outputs<T: Clone>(
    values: &[Option<T>],
    windows: &[Vec<Rec>],
    less: impl Fn(&T, &T) -> bool,
    same: impl Fn(&T, &T) -> bool,
    canon: impl Fn(T) -> T,
    array: impl Fn(Vec<Option<T>>) -> ArrayRef,
) -> Vec<ArrayRef> {
    let mut distinct = Vec::new();
    let mut alls: [Vec<Vec<Option<T>>>; 2] = [Vec::new(), Vec::new()];
    let mut mins = Vec::new();
    let mut maxs = Vec::new();
    let mut firsts = Vec::new();
    let mut lasts = Vec::new();
    let mut lists: [Vec<Vec<T>>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    for w in windows {
        let vals = present(values, w);
        let mut min: Option<T> = None;
        let mut max: Option<T> = None;
        for v in &vals {
            if min.as_ref().is_none_or(|m| less(v, m)) {
                min = Some(v.clone());
            }
            if max.as_ref().is_none_or(|m| less(m, v)) {
                max = Some(v.clone());
            }
        }
        mins.push(min.map(&canon));
        maxs.push(max.map(&canon));
        firsts.push(vals.first().cloned());
        lasts.push(vals.last().cloned());
        let n = vals.len();
        let firsts_of_kind = (0..n).filter(|&i| !vals[..i].iter().any(|w| same(w, &vals[i])));
        distinct.push(firsts_of_kind.count() as i64);
        let all = all_values(values, w);
        alls[1].push(all[all.len().saturating_sub(2)..].to_vec());
        alls[0].push(all);
        lists[0].push(vals.clone());
        lists[1].push(vals[n.saturating_sub(2)..].to_vec());
        lists[2].push(vals[..n.min(3)].to_vec());
    }
    let mut out = vec![array(mins), array(maxs), array(firsts), array(lasts)];
    for list in lists {
        let lengths: Vec<usize> = list.iter().map(Vec::len).collect();
        let child = array(list.into_iter().flatten().map(Some).collect());
        let field = Arc::new(Field::new_list_field(child.data_type().clone(), true));
        out.push(Arc::new(ListArray::new(
            field,
            OffsetBuffer::from_lengths(lengths),
            child,
            None,
        )));
    }
    out.push(Arc::new(Int64Array::from(distinct)));
    for list in alls {
        out.push(list_of(list, &array));
    }
    out
}

/// The model's exact integer sum and mean, and float sum and mean, of a numeric column.
fn numeric_outputs<T: Copy>(
    values: &[Option<T>],
    windows: &[Vec<Rec>],
    int: Option<fn(T) -> i128>,
    float: fn(T) -> f64,
) -> Vec<ArrayRef> {
    let mut sums_i = Vec::new();
    let mut sums_f = Vec::new();
    let mut means = Vec::new();
    for w in windows {
        let vals = present(values, w);
        let n = vals.len();
        match int {
            Some(to_i) => {
                let s: i128 = vals.iter().map(|&v| to_i(v)).sum();
                sums_i.push((n > 0).then(|| i64::try_from(s).expect("small test sums")));
                means.push((n > 0).then(|| s as f64 / n as f64));
            }
            None => {
                let s = vals.iter().fold(-0.0, |acc, &v| acc + float(v));
                sums_f.push((n > 0).then_some(s));
                means.push((n > 0).then(|| s / n as f64));
            }
        }
    }
    let sum: ArrayRef = match int {
        Some(_) => Arc::new(Int64Array::from(sums_i)),
        None => Arc::new(Float64Array::from(sums_f)),
    };
    vec![sum, Arc::new(Float64Array::from(means))]
}

/// The model's outputs of [`specs`] for `windows` (which may be empty: count 0, others null,
/// lists empty).
pub(super) fn expected(d: &Data, windows: &[Vec<Rec>]) -> Vec<ArrayRef> {
    let mut out: Vec<ArrayRef> = vec![Arc::new(Int64Array::from_iter_values(
        windows.iter().map(|w| w.len() as i64),
    ))];
    out.extend(numeric_outputs(&d.i, windows, Some(i128::from), |v| {
        v as f64
    }));
    out.extend(numeric_outputs(&d.u, windows, Some(i128::from), f64::from));
    out.extend(numeric_outputs(&d.f, windows, None, |v| v));
    out.extend(numeric_outputs(&d.g, windows, None, f64::from));
    out.extend(decimal_outputs(&d.d, windows));
    out.extend(ordered_outputs(&d.i, windows, |v| {
        Arc::new(Int64Array::from(v))
    }));
    out.extend(ordered_outputs(&d.u, windows, |v| {
        Arc::new(UInt8Array::from(v))
    }));
    let fnan = |v: f64| if v.is_nan() { f64::NAN } else { v };
    out.extend(column_outputs(
        &d.f,
        windows,
        |a, b| float_less(*a, *b),
        |a, b| float_same(*a, *b),
        fnan,
        |v| Arc::new(Float64Array::from(v)),
    ));
    let gnan = |v: f32| if v.is_nan() { f32::NAN } else { v };
    out.extend(column_outputs(
        &d.g,
        windows,
        |a, b| float_less(f64::from(*a), f64::from(*b)),
        |a, b| float_same(f64::from(*a), f64::from(*b)),
        gnan,
        |v| Arc::new(Float32Array::from(v)),
    ));
    out.extend(column_outputs(
        &d.s,
        windows,
        |a, b| a.as_bytes() < b.as_bytes(),
        |a, b| a == b,
        |v| v,
        |v| Arc::new(StringArray::from(v)),
    ));
    out.extend(column_outputs(
        &d.b,
        windows,
        |a, b| !a & b,
        |a, b| a == b,
        |v| v,
        |v| Arc::new(BooleanArray::from(v)),
    ));
    out.extend(ordered_outputs(&d.t, windows, |v| {
        Arc::new(TimestampMillisecondArray::from(v).with_timezone(TZ))
    }));
    out.extend(ordered_outputs(&d.bin, windows, |v| {
        Arc::new(LargeBinaryArray::from_iter(v.iter().map(|x| x.as_deref())))
    }));
    out.extend(ordered_outputs(&d.d, windows, |v| Arc::new(decimals(v))));
    out
}

/// A Decimal128(10, 2) array of unscaled values.
fn decimals(values: Vec<Option<i128>>) -> Decimal128Array {
    Decimal128Array::from(values).with_data_type(DEC)
}

/// The model's sum (Decimal128(20, 2)) and mean (Decimal128(14, 6): the sum over the count,
/// rounded half away from zero) of a Decimal128(10, 2) column, in `i128`.
fn decimal_outputs(values: &[Option<i128>], windows: &[Vec<Rec>]) -> Vec<ArrayRef> {
    let mut sums = Vec::new();
    let mut means = Vec::new();
    for w in windows {
        let vals = present(values, w);
        let n = vals.len() as i128;
        let s: i128 = vals.iter().sum();
        sums.push((n > 0).then_some(s));
        // mean * 10^4 = s * 10^4 / n; half away from zero: (2|x| + n) / 2n with x's sign.
        let x = s * 10_000;
        means.push((n > 0).then(|| x.signum() * ((2 * x.abs() + n) / (2 * n))));
    }
    vec![
        Arc::new(
            Decimal128Array::from(sums).with_data_type(arrow_schema::DataType::Decimal128(20, 2)),
        ),
        Arc::new(
            Decimal128Array::from(means).with_data_type(arrow_schema::DataType::Decimal128(14, 6)),
        ),
    ]
}
