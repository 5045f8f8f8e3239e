//! Folding one record into a state in place, for aggregators whose segments all have a fixed
//! width (count, sum, mean, and min/max/first/last of fixed-width values): the state keeps its
//! size, so each segment is overwritten where it lies, with no walk of the state, no splice
//! list and no second buffer. [`fold_row`] gives the bytes of `merge(encode_row(record),
//! state)`, the record first as the session step merges it: counts, sums and means are added
//! where they lie with `merge`'s arithmetic, and a selecting function (min, max, first, last)
//! keeps the record's encoded segment or the state's by `merge`'s own rule ([`keeps_second`]).
//! [`fold_row`] with [`Order::StateFirst`] gives those of `merge(state, encode_row(record))`,
//! the state first, as the sliding step merges a record into each window that contains it.
//! [`Aggregator::fold_row`](super::Aggregator::fold_row) calls [`fold_row`].
//!
//! Each slot's way of folding is chosen once, when the aggregator is made ([`Fixed`]): count,
//! sums, and min/max of numbers, times and dates read the record's word and fold it with no
//! call per slot, which the streaming processors pay per record and per window.

use super::inputs::Inputs;
use super::slot::{Op, Slot};
use super::state_layout::{
    add_f64, encode, float_term, int_term, keeps_second, OVERFLOWED, SEEN, VERSION,
};
use super::value::{word_less, Value};
use super::value_kind::Kind;
use crate::Result;

/// The width of a segment of `op`, if every state of it has the same.
pub(crate) fn fixed_width(op: &Op) -> Option<usize> {
    match *op {
        Op::Count => Some(8),
        Op::Sum(k) => Some(if k.sums_exactly() { 17 } else { 9 }),
        Op::Mean(k) => Some(if k.sums_exactly() { 24 } else { 16 }),
        Op::Min(Kind::Bytes) | Op::Max(Kind::Bytes) => None,
        Op::Min(Kind::Bool) | Op::Max(Kind::Bool) => Some(2),
        Op::Min(Kind::Dec128) | Op::Max(Kind::Dec128) => Some(17),
        Op::Min(_) | Op::Max(_) => Some(9),
        Op::First(Kind::Bytes) | Op::Last(Kind::Bytes) => None,
        Op::First(Kind::Bool) | Op::Last(Kind::Bool) => Some(18),
        Op::First(Kind::Dec128) | Op::Last(Kind::Dec128) => Some(33),
        Op::First(_) | Op::Last(_) => Some(25),
        Op::CountDistinct(_) | Op::Collect { .. } => None,
    }
}

/// How [`fold_row`] folds a record into one slot's segment, chosen once when the aggregator
/// is made: the common functions get their own arm, read the record's word directly and
/// compare words, with no [`Value`] and no call per slot; the rest go through
/// [`fold_segment`]. Both give `merge`'s bytes.
#[derive(Debug, Clone, Copy)]
enum FoldOp {
    Count,
    /// A sum of an integer kind.
    SumInt(Kind),
    /// A sum of a float kind.
    SumFloat(Kind),
    /// `min` (`max: false`) or `max` of a word kind.
    Best {
        max: bool,
        kind: Kind,
    },
    /// Any other fixed-width function (`mean`, decimal sums, `min`/`max` of booleans and
    /// decimals, `first`, `last`).
    Other,
}

/// One slot of an aggregator whose segments all have a fixed width: its fold and width.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fixed {
    op: FoldOp,
    width: usize,
}

impl Fixed {
    /// The fold of a slot of `op`, if its segments have a fixed width.
    pub(crate) fn of(op: &Op) -> Option<Fixed> {
        let width = fixed_width(op)?;
        let op = match *op {
            Op::Count => FoldOp::Count,
            Op::Sum(kind) if kind.is_integer() => FoldOp::SumInt(kind),
            Op::Sum(Kind::Dec128) => FoldOp::Other,
            Op::Sum(kind) => FoldOp::SumFloat(kind),
            Op::Min(kind) | Op::Max(kind) if kind.is_word() => FoldOp::Best {
                max: matches!(op, Op::Max(_)),
                kind,
            },
            _ => FoldOp::Other,
        };
        Some(Fixed { op, width })
    }

    /// The width of the slot's segment.
    pub(crate) fn width(&self) -> usize {
        self.width
    }

    /// Whether the slot is `min` or `max` of a word kind (its segment a presence byte and a
    /// word).
    pub(crate) fn best_of_words(&self) -> bool {
        matches!(self.op, FoldOp::Best { .. })
    }
}

/// Folds row `row` of the batch whose inputs are `inputs` (time `time`, arrival `seq`)
/// into `state` in place, in `order`, for an aggregator of `slots` whose folds are `fixed`
/// (`None` when a segment has no fixed width, an error): what
/// [`Aggregator::fold_row`](super::Aggregator::fold_row) does.
///
/// Errors: as [`Aggregator::fold_row`](super::Aggregator::fold_row).
pub(crate) fn fold_row(
    (slots, fixed): (&[Slot], Option<&[Fixed]>),
    state: &mut [u8],
    (inputs, row): (&Inputs, usize),
    stamp: (i64, u64),
    scratch: &mut Vec<u8>,
    order: Order,
) -> Result<()> {
    if state.first() != Some(&VERSION) {
        return Err(super::codec::corrupt("state version"));
    }
    let fixed = fixed.ok_or_else(|| super::codec::corrupt("a segment of no fixed width"))?;
    let state_first = order == Order::StateFirst;
    let mut at = 1;
    for (i, (slot, f)) in slots.iter().zip(fixed).enumerate() {
        let seg = state
            .get_mut(at..at + f.width)
            .ok_or_else(|| super::codec::corrupt("state shorter than its segments"))?;
        at += f.width;
        match f.op {
            FoldOp::Count => {
                let n = u64_at(seg, 0)?;
                seg[..8].copy_from_slice(&1u64.saturating_add(n).to_le_bytes());
            }
            FoldOp::SumInt(kind) => {
                let word = inputs.word(i, row);
                fold_int_sum(kind, word, seg, state_first)?;
            }
            FoldOp::SumFloat(kind) => {
                let word = inputs.word(i, row);
                let (fa, sa) = (
                    if word.is_some() { SEEN } else { 0 },
                    word.map_or(-0.0, |w| float_term(kind, w)),
                );
                let (fb, sb) = (seg[0], f64::from_bits(u64_at(seg, 1)?));
                seg[0] = (fa | fb) & SEEN;
                seg[1..9].copy_from_slice(&add_f64(sa, sb).to_le_bytes());
            }
            FoldOp::Best { max, kind } => {
                let word = inputs.word(i, row);
                let current = match seg[0] {
                    0 => None,
                    _ => Some(u64_at(seg, 1)?),
                };
                let record_wins = if state_first {
                    best_word_is_second(max, kind, current, word)
                } else {
                    !best_word_is_second(max, kind, word, current)
                };
                if record_wins {
                    seg[0] = u8::from(word.is_some());
                    seg[1..9].copy_from_slice(&word.unwrap_or(0).to_le_bytes());
                }
            }
            FoldOp::Other => {
                let value = inputs.value(i, row);
                fold_segment(slot, value, stamp, seg, scratch, order)?;
            }
        }
    }
    if at != state.len() {
        return Err(super::codec::corrupt("state longer than its segments"));
    }
    Ok(())
}

/// Which operand of `merge` a folded record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    /// `merge(record, state)`.
    RecordFirst,
    /// `merge(state, record)`.
    StateFirst,
}

/// Folds one record (value `value`, stamp `(time, seq)`) into `seg`, a segment of `slot`'s op
/// of fixed width that [`FoldOp`] has no arm for (`mean`, decimal sums, `min`/`max` of
/// booleans and decimals, `first`, `last`), in place, with `merge`'s arithmetic in `order`;
/// `record` is a reused buffer.
fn fold_segment(
    slot: &Slot,
    value: Value<'_>,
    (time, seq): (i64, u64),
    seg: &mut [u8],
    record: &mut Vec<u8>,
    order: Order,
) -> Result<()> {
    let op = &slot.op;
    let state_first = order == Order::StateFirst;
    let word = match value {
        Value::Word(w) => Some(w),
        _ => None,
    };
    let wide = match value {
        Value::Wide(x) => Some(x),
        _ => None,
    };
    match *op {
        Op::Sum(Kind::Dec128) => {
            let sum = super::decimal::add(slot, wide.unwrap_or(0), i128_at(seg, 1)?)?;
            seg[0] = (u8::from(wide.is_some()) | seg[0]) & SEEN;
            seg[1..17].copy_from_slice(&sum.to_le_bytes());
        }
        Op::Mean(Kind::Dec128) => {
            let sum = super::decimal::add(slot, wide.unwrap_or(0), i128_at(seg, 0)?)?;
            let n = u64::from(wide.is_some()).saturating_add(u64_at(seg, 16)?);
            seg[..16].copy_from_slice(&sum.to_le_bytes());
            seg[16..24].copy_from_slice(&n.to_le_bytes());
        }
        Op::Mean(kind) if kind.is_integer() => {
            let sa = word.map_or(0, |w| int_term(kind, w));
            let (sb, nb) = (i128_at(seg, 0)?, u64_at(seg, 16)?);
            seg[..16].copy_from_slice(&sa.saturating_add(sb).to_le_bytes());
            let n = u64::from(word.is_some()).saturating_add(nb);
            seg[16..24].copy_from_slice(&n.to_le_bytes());
        }
        Op::Mean(kind) => {
            let sa = word.map_or(-0.0, |w| float_term(kind, w));
            let (sb, nb) = (f64::from_bits(u64_at(seg, 0)?), u64_at(seg, 8)?);
            let sum = add_f64(sa, sb);
            seg[..8].copy_from_slice(&sum.to_le_bytes());
            let n = u64::from(word.is_some()).saturating_add(nb);
            seg[8..16].copy_from_slice(&n.to_le_bytes());
        }
        _ => {
            record.clear();
            encode(op, value, time, seq, record);
            if record.len() != seg.len() {
                return Err(super::codec::corrupt("a fixed segment changed its width"));
            }
            let record_wins = if state_first {
                keeps_second(op, seg, record)?
            } else {
                !keeps_second(op, record, seg)?
            };
            if record_wins {
                seg.copy_from_slice(record);
            }
        }
    }
    Ok(())
}

/// Folds a record's word (`None`: null) into `seg`, a segment of an integer sum of `kind`.
#[inline]
fn fold_int_sum(kind: Kind, word: Option<u64>, seg: &mut [u8], state_first: bool) -> Result<()> {
    let (fa, sa) = (
        if word.is_some() { SEEN } else { 0 },
        word.map_or(0, |w| int_term(kind, w)),
    );
    let (fb, sb) = (seg[0], i128_at(seg, 1)?);
    // An overflowed merge keeps its first operand's sum.
    let (flags, sum) = match sa.checked_add(sb) {
        Some(sum) => (fa | fb, sum),
        None => (fa | fb | OVERFLOWED, if state_first { sb } else { sa }),
    };
    seg[0] = flags & (SEEN | OVERFLOWED);
    seg[1..17].copy_from_slice(&sum.to_le_bytes());
    Ok(())
}

/// [`super::state_layout::best_is_second`] for `min` (`max: false`) or `max` of word kind
/// `kind`, on words (`None`: null): whether the merge of `a` and `b`, in that order, keeps `b`. A null is never the
/// best of two; of equal values `max` keeps the second, `min` the first.
#[inline]
fn best_word_is_second(max: bool, kind: Kind, a: Option<u64>, b: Option<u64>) -> bool {
    match (a, b) {
        (Some(x), Some(y)) if max => word_less(x, y, kind),
        (Some(x), Some(y)) => word_less(y, x, kind),
        (None, Some(_)) => true,
        (None, None) => max,
        (Some(_), None) => false,
    }
}

fn u64_at(seg: &[u8], at: usize) -> Result<u64> {
    seg.get(at..at + 8)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_le_bytes)
        .ok_or_else(|| super::codec::corrupt("state shorter than its segments"))
}

fn i128_at(seg: &[u8], at: usize) -> Result<i128> {
    seg.get(at..at + 16)
        .and_then(|b| b.try_into().ok())
        .map(i128::from_le_bytes)
        .ok_or_else(|| super::codec::corrupt("state shorter than its segments"))
}
