//! Adding one record to a state as in-place edits of the state (`store::edits`) rather than a
//! new state.
//!
//! [`super::Aggregator::merge`] of a record's state with a window's state rebuilds the whole
//! window state, so a window of `n` records grown one record at a time costs `O(n^2)` when it
//! holds a `collect` list. The merged state differs from the old one only in a few places:
//! fixed-width segments are rewritten, and a `collect` list gains one element at the record's
//! place in `(time, seq)` order and a new count. `append_edits` computes exactly those
//! splices; applying them gives the bytes `merge(record, state)` gives (the same function is
//! called for every segment but a growing `collect`, with the same argument order).
//!
//! The cost does not grow with the list when the record is the window's last in `(time, seq)`
//! order (`at_end`, the common case in a stream), or near the end of a list of fixed-width
//! elements (found scanning back from the end). Otherwise a list is walked up to the record's
//! place, and the elements after it move. Finding a segment means walking the segments before
//! it: a list of fixed-width elements is skipped in one step, but a `collect_all` or a list of
//! strings that is not the state's last segment is walked element by element.

use super::codec::{put_varint, Reader};
use super::slot::{Op, Slot};
use super::state_layout::{merge, open, segment, Stamped};
use super::value_kind::Kind;
use crate::store::edits::Edits;
use crate::Result;

/// Where the record goes: its `(time, seq)`, and whether it comes after every record of the
/// state.
#[derive(Debug, Clone, Copy)]
pub struct Place {
    /// The record's `(time, seq)`.
    pub key: (i64, u64),
    /// Whether every record of the state comes before it.
    pub at_end: bool,
}

/// Pushes to `edits` the splices that turn `state` (at offset `base` of the stored value) into
/// `merge(record, state)`, for a `record` state of one record placed at `place`. `scratch` is
/// a buffer reused between calls.
///
/// Errors: as [`super::Aggregator::merge`] (a `collect` under `Fail` that overflows).
pub(crate) fn append_edits(
    slots: &[Slot],
    (state, record): (&[u8], &[u8]),
    place: Place,
    base: usize,
    edits: &mut Edits,
    scratch: &mut Vec<u8>,
) -> Result<()> {
    let (mut r, mut rr) = (open(state)?, open(record)?);
    for (i, slot) in slots.iter().enumerate() {
        let at = base + state.len() - r.rest().len();
        let seg = if i + 1 == slots.len() {
            // The last segment runs to the end: no walk.
            r.take(r.rest().len())?
        } else {
            skip_segment(&slot.op, &mut r)?
        };
        let rec = segment(&slot.op, &mut rr)?;
        append_segment(slot, place, (at, seg), rec, edits, scratch)?;
    }
    Ok(())
}

/// The splices for one segment `seg` (at `at`) gaining the record segment `rec`.
fn append_segment(
    slot: &Slot,
    place: Place,
    (at, seg): (usize, &[u8]),
    rec: &[u8],
    edits: &mut Edits,
    scratch: &mut Vec<u8>,
) -> Result<()> {
    if let Op::Collect {
        max_size,
        kind,
        nulls,
        ..
    } = slot.op
    {
        let mut sr = Reader::new(seg);
        let n = sr.varint()?;
        let count_len = seg.len() - sr.rest().len();
        let mut rr = Reader::new(rec);
        let m = rr.varint()?;
        if m == 0 {
            // A null the list skips: merge re-encodes the same list.
            return Ok(());
        }
        let total = n.saturating_add(m);
        if max_size.is_none_or(|max| total <= max as u64) {
            scratch.clear();
            put_varint(scratch, total);
            let list = &seg[count_len..];
            let offset = insertion_offset(list, (kind, nulls), place)?;
            edits.push(at, count_len, scratch);
            edits.push(at + count_len + offset, 0, rr.rest());
            return Ok(());
        }
        // A bounded list at its bound: merge applies the overflow rule.
    }
    scratch.clear();
    merge(slot, &mut Reader::new(rec), &mut Reader::new(seg), scratch)?;
    if scratch.as_slice() != seg {
        edits.push(at, seg.len(), scratch);
    }
    Ok(())
}

/// The byte offset in `list` (the elements of a `collect` list of `(kind, nulls)`, sorted by
/// `(time, seq)`) where an element at `place` goes: after every element with a smaller key.
fn insertion_offset(list: &[u8], (kind, nulls): (Kind, bool), place: Place) -> Result<usize> {
    if place.at_end {
        return Ok(list.len());
    }
    if let Some(width) = element_width(kind, nulls) {
        if list.len() % width != 0 {
            return Err(super::codec::corrupt("collect list of a partial element"));
        }
        let mut end = list.len();
        while end >= width {
            let mut r = Reader::new(&list[end - width..end]);
            if (r.i64()?, r.u64()?) < place.key {
                break;
            }
            end -= width;
        }
        return Ok(end);
    }
    let mut r = Reader::new(list);
    loop {
        let offset = list.len() - r.rest().len();
        if r.rest().is_empty() {
            return Ok(offset);
        }
        let e = Stamped::read_element(kind, nulls, &mut r)?;
        if e.key() >= place.key {
            return Ok(offset);
        }
    }
}

/// The bytes of each element of a `collect` list of `(kind, nulls)`, if they are fixed.
fn element_width(kind: Kind, nulls: bool) -> Option<usize> {
    match (kind, nulls) {
        (_, true) | (Kind::Bytes, _) => None,
        (Kind::Bool, false) => Some(17),
        (Kind::Dec128, false) => Some(32),
        (_, false) => Some(24),
    }
}

/// The next segment of `op` in `r`, as bytes; a `collect` list of fixed-width elements in one
/// step.
fn skip_segment<'a>(op: &Op, r: &mut Reader<'a>) -> Result<&'a [u8]> {
    let width = match *op {
        Op::Collect { kind, nulls, .. } => element_width(kind, nulls),
        _ => None,
    };
    let Some(width) = width else {
        return segment(op, r);
    };
    let before = r.rest();
    let n = r.varint()?;
    let bytes = usize::try_from(n)
        .ok()
        .and_then(|n| n.checked_mul(width))
        .ok_or_else(|| super::codec::corrupt("collect list longer than the state"))?;
    r.take(bytes)?;
    Ok(&before[..before.len() - r.rest().len()])
}
