//! The state layout (version 1): encoding one record, walking a state, merging two states.
//!
//! A state is one version byte (1) followed by one segment per spec, in spec order.
//! All integers are little-endian; `varint` is unsigned LEB128; `value` is one value of the
//! input column: an 8-byte word for integers, floats and temporal types (signed integers and
//! temporal values as `i64`, unsigned as `u64`, `Float64` as its bits, `Float32` as its bits in
//! the low half), 16 bytes for Decimal128 (the unscaled `i128`), 1 byte for Boolean, a varint length and the bytes for strings (UTF-8) and
//! binaries.
//!
//! | function             | segment                                                        | bytes |
//! |----------------------|----------------------------------------------------------------|-------|
//! | count                | `u64` records                                                  | 8     |
//! | sum (integer input)  | `u8` flags (1 = a value was seen, 2 = `i128` overflow), `i128` | 17    |
//! | sum (float input)    | `u8` flags (1 = a value was seen), `f64`                       | 9     |
//! | mean (integer input) | `i128` sum, `u64` values                                       | 24    |
//! | mean (float input)   | `f64` sum, `u64` values                                        | 16    |
//! | sum (decimal input)  | `u8` flags (1 = a value was seen), `i128` unscaled sum         | 17    |
//! | mean (decimal input) | `i128` unscaled sum, `u64` values                              | 24    |
//! | min, max             | `u8` present, `value` (zeros if absent; nothing for bytes)     | 9 / 2 / var |
//! | first, last          | `u8` present, `i64` time, `u64` seq, `value` (as min)          | 25 / 18 / var |
//! | collect              | `varint` n, then n × (`i64` time, `u64` seq, `value`), in (time, seq) order | var |
//! | collect_all          | as collect, each `value` preceded by `u8` present (absent: no value) | var |
//! | count_distinct       | `varint` n, then the n distinct `value`s in increasing byte order (see `distinct`) | var |
//!
//! Fixed-kind segments never change size, so a state whose specs are all of fixed kinds has one
//! size for the aggregator's lifetime (in-place overwrites in the store). Float sums start from
//! `-0.0`, the exact additive identity. The `i128` mean sum cannot overflow for fewer than 2^63
//! records; it saturates rather than wraps. Decimal sums never leave their output precision
//! (see `decimal`): a merge that would is an error.
//!
//! Decoding is checked: bytes that did not come from `encode_row`/`merge` give garbage values
//! or an [`crate::Error::InvalidWindowSpec`] with parameter `state`, never a panic.

use super::agg_spec::Overflow;
use super::codec::{corrupt, put_f64, put_i128, put_i64, put_u64, put_varint, Reader};
use super::distinct;
use super::native::Num;
use super::slot::{Op, Slot};
use super::value::Value;
use super::value_kind::Kind;
use crate::{Error, Result};

/// The version byte that opens every state.
pub(crate) const VERSION: u8 = 1;

/// Sum flag: at least one non-null value was summed.
pub(crate) const SEEN: u8 = 1;
/// Sum flag: the exact `i128` sum overflowed.
pub(crate) const OVERFLOWED: u8 = 2;

/// The exact sum term of a word of an integer kind.
#[inline]
pub(crate) fn int_term(kind: Kind, word: u64) -> i128 {
    match kind {
        Kind::Unsigned => i128::from(word),
        _ => i128::from(word as i64),
    }
}

/// The floating sum term of a word of a float kind.
#[inline]
pub(crate) fn float_term(kind: Kind, word: u64) -> f64 {
    match kind {
        Kind::F32 => f64::from(f32::from_word(word)),
        _ => f64::from_word(word),
    }
}

/// Appends the segment of `op` for one record with value `v`, time `time`, arrival `seq`.
pub(crate) fn encode(op: &Op, v: Value<'_>, time: i64, seq: u64, out: &mut Vec<u8>) {
    let present = !matches!(v, Value::Null);
    let word = match v {
        Value::Word(w) => Some(w),
        _ => None,
    };
    let wide = match v {
        Value::Wide(x) => Some(x),
        _ => None,
    };
    match *op {
        Op::Count => put_u64(out, 1),
        Op::Sum(Kind::Dec128) => {
            out.push(if wide.is_some() { SEEN } else { 0 });
            put_i128(out, wide.unwrap_or(0));
        }
        Op::Mean(Kind::Dec128) => {
            put_i128(out, wide.unwrap_or(0));
            put_u64(out, u64::from(wide.is_some()));
        }
        Op::Sum(kind) if kind.is_integer() => {
            out.push(if word.is_some() { SEEN } else { 0 });
            put_i128(out, word.map_or(0, |w| int_term(kind, w)));
        }
        Op::Sum(kind) => {
            out.push(if word.is_some() { SEEN } else { 0 });
            put_f64(out, word.map_or(-0.0, |w| float_term(kind, w)));
        }
        Op::Mean(kind) if kind.is_integer() => {
            put_i128(out, word.map_or(0, |w| int_term(kind, w)));
            put_u64(out, u64::from(word.is_some()));
        }
        Op::Mean(kind) => {
            put_f64(out, word.map_or(-0.0, |w| float_term(kind, w)));
            put_u64(out, u64::from(word.is_some()));
        }
        Op::Min(kind) | Op::Max(kind) => {
            out.push(u8::from(present));
            v.write(kind, out);
        }
        Op::First(kind) | Op::Last(kind) => {
            out.push(u8::from(present));
            if present || kind != Kind::Bytes {
                put_i64(out, if present { time } else { 0 });
                put_u64(out, if present { seq } else { 0 });
                v.write(kind, out);
            }
        }
        Op::CountDistinct(kind) => distinct::encode(kind, v, out),
        Op::Collect {
            kind, nulls: true, ..
        } => {
            put_varint(out, 1);
            put_i64(out, time);
            put_u64(out, seq);
            out.push(u8::from(present));
            if present {
                v.write(kind, out);
            }
        }
        Op::Collect { kind, .. } => {
            put_varint(out, u64::from(present));
            if present {
                put_i64(out, time);
                put_u64(out, seq);
                v.write(kind, out);
            }
        }
    }
}

/// A decoded `min`/`max` segment: the value, `Null` if none.
pub(crate) fn read_best<'a>(kind: Kind, r: &mut Reader<'a>) -> Result<Value<'a>> {
    let present = r.u8()? != 0;
    if !present && kind == Kind::Bytes {
        return Ok(Value::Null);
    }
    let v = Value::read(kind, r)?;
    Ok(if present { v } else { Value::Null })
}

/// One value stamped with its record's `(time, seq)`; `raw` is its encoded value bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stamped<'a> {
    /// Event time.
    pub(crate) time: i64,
    /// Arrival sequence.
    pub(crate) seq: u64,
    /// The value's encoding (see [`Value::write`]).
    pub(crate) raw: &'a [u8],
}

impl<'a> Stamped<'a> {
    /// Reads `time`, `seq` and a value of `kind`.
    pub(crate) fn read(kind: Kind, r: &mut Reader<'a>) -> Result<Self> {
        let time = r.i64()?;
        let seq = r.u64()?;
        let before = r.rest();
        Value::read(kind, r)?;
        let raw = &before[..before.len() - r.rest().len()];
        Ok(Self { time, seq, raw })
    }

    /// The value.
    pub(crate) fn value(&self, kind: Kind) -> Result<Value<'a>> {
        Value::read(kind, &mut Reader::new(self.raw))
    }

    /// Reads one element of a `collect` list: [`Self::read`], or with `nulls` (`collect_all`)
    /// a presence byte and the value if present, both kept in `raw`.
    pub(crate) fn read_element(kind: Kind, nulls: bool, r: &mut Reader<'a>) -> Result<Self> {
        if !nulls {
            return Self::read(kind, r);
        }
        let time = r.i64()?;
        let seq = r.u64()?;
        let before = r.rest();
        if present_byte(r)? {
            Value::read(kind, r)?;
        }
        let raw = &before[..before.len() - r.rest().len()];
        Ok(Self { time, seq, raw })
    }

    /// The value of an element read by [`Self::read_element`] (`Null` if absent).
    pub(crate) fn element_value(&self, kind: Kind, nulls: bool) -> Result<Value<'a>> {
        if !nulls {
            return self.value(kind);
        }
        let mut r = Reader::new(self.raw);
        Ok(if present_byte(&mut r)? {
            Value::read(kind, &mut r)?
        } else {
            Value::Null
        })
    }

    /// Appends `time`, `seq` and the value.
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        put_i64(out, self.time);
        put_u64(out, self.seq);
        out.extend_from_slice(self.raw);
    }

    /// The sort key `(time, seq)`.
    pub(crate) fn key(&self) -> (i64, u64) {
        (self.time, self.seq)
    }
}

/// A `collect_all` presence byte: 1 or 0, anything else is corruption.
fn present_byte(r: &mut Reader<'_>) -> Result<bool> {
    match r.u8()? {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(corrupt("collect_all presence byte")),
    }
}

/// A decoded `first`/`last` segment.
pub(crate) fn read_stamped<'a>(kind: Kind, r: &mut Reader<'a>) -> Result<Option<Stamped<'a>>> {
    let present = r.u8()? != 0;
    if !present && kind == Kind::Bytes {
        return Ok(None);
    }
    let s = Stamped::read(kind, r)?;
    Ok(present.then_some(s))
}

/// Advances `r` over one segment of `op`.
pub(crate) fn skip(op: &Op, r: &mut Reader<'_>) -> Result<()> {
    match *op {
        Op::Count => {
            r.u64()?;
        }
        Op::Sum(kind) => {
            r.take(if kind.sums_exactly() { 17 } else { 9 })?;
        }
        Op::Mean(kind) => {
            r.take(if kind.sums_exactly() { 24 } else { 16 })?;
        }
        Op::Min(kind) | Op::Max(kind) => {
            read_best(kind, r)?;
        }
        Op::First(kind) | Op::Last(kind) => {
            read_stamped(kind, r)?;
        }
        Op::CountDistinct(kind) => distinct::skip(kind, r)?,
        Op::Collect { kind, nulls, .. } => {
            let n = r.varint()?;
            for _ in 0..n {
                Stamped::read_element(kind, nulls, r)?;
            }
        }
    }
    Ok(())
}

/// The next segment of `op` in `r`, as bytes.
pub(crate) fn segment<'a>(op: &Op, r: &mut Reader<'a>) -> Result<&'a [u8]> {
    let before = r.rest();
    skip(op, r)?;
    Ok(&before[..before.len() - r.rest().len()])
}

/// Checks the version byte of a state and returns a reader of its segments.
pub(crate) fn open(state: &[u8]) -> Result<Reader<'_>> {
    let mut r = Reader::new(state);
    match r.u8() {
        Ok(VERSION) => Ok(r),
        Ok(v) => Err(corrupt(&format!("unknown state version {v}"))),
        Err(_) => Err(corrupt("empty state")),
    }
}

/// For min (`op` `Min`) or max (any other `op`) of `kind`: whether the merge of values `a`
/// and `b` (in that order; `Null` for none) keeps `b`.
#[inline]
pub(crate) fn best_is_second(op: &Op, kind: Kind, a: Value<'_>, b: Value<'_>) -> bool {
    match op {
        Op::Min(_) => b.less(a, kind),
        _ => a == Value::Null || (b != Value::Null && a.less(b, kind)),
    }
}

/// For a selecting function (min, max, first, last): whether the merge of segments `a` and
/// `b` (in that order) is `b`, else `a`. The merge keeps one of the two whole.
pub(crate) fn keeps_second(op: &Op, a: &[u8], b: &[u8]) -> Result<bool> {
    Ok(match *op {
        Op::Min(kind) | Op::Max(kind) => {
            let va = read_best(kind, &mut Reader::new(a))?;
            let vb = read_best(kind, &mut Reader::new(b))?;
            best_is_second(op, kind, va, vb)
        }
        Op::First(kind) | Op::Last(kind) => {
            let sa = read_stamped(kind, &mut Reader::new(a))?;
            let sb = read_stamped(kind, &mut Reader::new(b))?;
            match (sa, sb) {
                (_, None) => false,
                (None, Some(_)) => true,
                (Some(x), Some(y)) => match op {
                    Op::First(_) => y.key() < x.key(),
                    _ => x.key() < y.key(),
                },
            }
        }
        _ => return Err(Error::Internal(format!("{op:?} does not select"))),
    })
}

/// `a + b`, with every NaN result written as the one NaN [`f64::NAN`]. Rust leaves the sign and
/// payload of a NaN result to the compiler (it may swap the operands of an addition), so two
/// code paths adding the same operands could give different NaN bytes, and states are compared
/// byte for byte (the batched path against the record path, snapshots).
#[inline]
pub(crate) fn add_f64(a: f64, b: f64) -> f64 {
    let sum = a + b;
    if sum.is_nan() {
        f64::NAN
    } else {
        sum
    }
}

/// Appends the merge of the next segments of `slot` in `a` and `b`.
pub(crate) fn merge<'a>(
    slot: &Slot,
    a: &mut Reader<'a>,
    b: &mut Reader<'a>,
    out: &mut Vec<u8>,
) -> Result<()> {
    match slot.op {
        Op::Count => put_u64(out, a.u64()?.saturating_add(b.u64()?)),
        Op::Sum(Kind::Dec128) => {
            let (fa, sa) = (a.u8()?, a.i128()?);
            let (fb, sb) = (b.u8()?, b.i128()?);
            let sum = super::decimal::add(slot, sa, sb)?;
            out.push((fa | fb) & SEEN);
            put_i128(out, sum);
        }
        Op::Mean(Kind::Dec128) => {
            let (sa, na) = (a.i128()?, a.u64()?);
            let (sb, nb) = (b.i128()?, b.u64()?);
            put_i128(out, super::decimal::add(slot, sa, sb)?);
            put_u64(out, na.saturating_add(nb));
        }
        Op::Sum(kind) if kind.is_integer() => {
            let (fa, sa) = (a.u8()?, a.i128()?);
            let (fb, sb) = (b.u8()?, b.i128()?);
            let (flags, sum) = match sa.checked_add(sb) {
                Some(sum) => (fa | fb, sum),
                None => (fa | fb | OVERFLOWED, sa),
            };
            out.push(flags & (SEEN | OVERFLOWED));
            put_i128(out, sum);
        }
        Op::Sum(_) => {
            let (fa, sa) = (a.u8()?, a.f64()?);
            let (fb, sb) = (b.u8()?, b.f64()?);
            out.push((fa | fb) & SEEN);
            put_f64(out, add_f64(sa, sb));
        }
        Op::Mean(kind) if kind.is_integer() => {
            let (sa, na) = (a.i128()?, a.u64()?);
            let (sb, nb) = (b.i128()?, b.u64()?);
            put_i128(out, sa.saturating_add(sb));
            put_u64(out, na.saturating_add(nb));
        }
        Op::Mean(_) => {
            let (sa, na) = (a.f64()?, a.u64()?);
            let (sb, nb) = (b.f64()?, b.u64()?);
            put_f64(out, add_f64(sa, sb));
            put_u64(out, na.saturating_add(nb));
        }
        Op::Min(_) | Op::Max(_) | Op::First(_) | Op::Last(_) => {
            let (ra, rb) = (segment(&slot.op, a)?, segment(&slot.op, b)?);
            out.extend_from_slice(if keeps_second(&slot.op, ra, rb)? {
                rb
            } else {
                ra
            });
        }
        Op::CountDistinct(kind) => distinct::merge(kind, a, b, out)?,
        Op::Collect {
            kind,
            max_size,
            overflow,
            nulls,
        } => merge_lists(slot, (kind, nulls), max_size, overflow, a, b, out)?,
    }
    Ok(())
}

/// Merges two `collect` lists sorted by `(time, seq)`, keeping what the bound keeps; the
/// elements are of `(kind, nulls)` (see [`Stamped::read_element`]).
fn merge_lists<'a>(
    slot: &Slot,
    (kind, nulls): (Kind, bool),
    max_size: Option<usize>,
    overflow: Overflow,
    a: &mut Reader<'a>,
    b: &mut Reader<'a>,
    out: &mut Vec<u8>,
) -> Result<()> {
    let (mut na, mut nb) = (a.varint()?, b.varint()?);
    let total = na.saturating_add(nb);
    let (skip, keep) = match max_size.map(|n| n as u64) {
        Some(n) if total > n => match overflow {
            Overflow::DropOldest => (total - n, n),
            Overflow::DropNewest => (0, n),
            Overflow::Fail => return Err(overflow_error(slot, max_size.unwrap_or(0))),
        },
        _ => (0, total),
    };
    put_varint(out, keep);
    let mut next_a = if na > 0 {
        Some(Stamped::read_element(kind, nulls, a)?)
    } else {
        None
    };
    let mut next_b = if nb > 0 {
        Some(Stamped::read_element(kind, nulls, b)?)
    } else {
        None
    };
    let mut index = 0u64;
    while index < skip + keep {
        let from_a = match (&next_a, &next_b) {
            (Some(x), Some(y)) => x.key() <= y.key(),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return Err(corrupt("collect list shorter than its count")),
        };
        let (entry, reader, left, next) = if from_a {
            (next_a, &mut *a, &mut na, &mut next_a)
        } else {
            (next_b, &mut *b, &mut nb, &mut next_b)
        };
        let entry = entry.ok_or_else(|| corrupt("collect list"))?;
        if index >= skip {
            entry.write(out);
        }
        *left -= 1;
        *next = if *left > 0 {
            Some(Stamped::read_element(kind, nulls, reader)?)
        } else {
            None
        };
        index += 1;
    }
    // Advance past what the bound dropped at the end (DropNewest): `left` entries remain in
    // each list, the first of which was already read into `next_*`.
    for (left, reader) in [(na, a), (nb, b)] {
        for _ in 1..left {
            Stamped::read_element(kind, nulls, reader)?;
        }
    }
    Ok(())
}

/// The [`Error::CollectOverflow`] of a `collect` under `Fail`, with key and window left for the
/// caller to fill (see [`super::fill_overflow`]).
pub(crate) fn overflow_error(slot: &Slot, max_size: usize) -> Error {
    Error::CollectOverflow {
        key: String::new(),
        start: 0,
        end: 0,
        column: slot.column.clone(),
        max_size,
    }
}
