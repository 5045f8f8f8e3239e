//! The stored value of a session that keeps its records (layout in `super`'s module doc):
//! the session and its records as they are read out of it (`Mem`, `Rec`), reading it,
//! checked, and writing it.

use super::{CUT, ENDED, STARTED};
use crate::input::markers::{ENDS, STARTS};
use crate::{Error, Result};

/// A session in memory: its window, its closing (the bound it is stored under), its flags, its
/// aggregate state and its records' stored bytes.
#[derive(Debug, Default)]
pub(super) struct Mem {
    pub start: i64,
    pub end: i64,
    pub reach: i64,
    pub flags: u8,
    pub state: Vec<u8>,
    pub records: Vec<u8>,
    /// Whether the store does not hold it as it is under `(start, reach)`.
    pub dirty: bool,
}

/// One record of a stored session.
#[derive(Debug, Clone, Copy)]
pub(super) struct Rec {
    pub t: i64,
    pub seq: u64,
    pub gap: i64,
    pub flags: u8,
    /// Where its one-record state lies in the scratch bytes.
    pub state: (usize, usize),
}

/// The fields of a stored value, checked.
pub(super) struct Stored<'v> {
    pub end: i64,
    pub flags: u8,
    pub state: &'v [u8],
    pub records: &'v [u8],
}

fn take<const N: usize>(bytes: &mut &[u8]) -> std::result::Result<[u8; N], String> {
    let (head, rest) = bytes
        .split_first_chunk::<N>()
        .ok_or_else(|| "the value is truncated".to_string())?;
    *bytes = rest;
    Ok(*head)
}

fn take_slice<'v>(bytes: &mut &'v [u8]) -> std::result::Result<&'v [u8], String> {
    let n = u32::from_le_bytes(take::<4>(bytes)?) as usize;
    if bytes.len() < n {
        return Err("the value is truncated".to_string());
    }
    let (head, rest) = bytes.split_at(n);
    *bytes = rest;
    Ok(head)
}

pub(super) fn parse(value: &[u8]) -> std::result::Result<Stored<'_>, String> {
    let mut b = value;
    let end = i64::from_le_bytes(take::<8>(&mut b)?);
    let flags = take::<1>(&mut b)?[0];
    if flags & !(CUT | ENDED | STARTED) != 0 {
        return Err(format!("flags {flags} are not a session's"));
    }
    let state = take_slice(&mut b)?;
    Ok(Stored {
        end,
        flags,
        state,
        records: b,
    })
}

/// Reads one stored record off `b`: its time, arrival, gap, flags (with `marked` records) and
/// state.
pub(super) fn take_record<'v>(
    b: &mut &'v [u8],
    marked: bool,
) -> std::result::Result<(i64, u64, i64, u8, &'v [u8]), String> {
    let t = i64::from_le_bytes(take::<8>(b)?);
    let seq = u64::from_le_bytes(take::<8>(b)?);
    let gap = i64::from_le_bytes(take::<8>(b)?);
    let flags = if marked { take::<1>(b)?[0] } else { 0 };
    if flags & !(STARTS | ENDS) != 0 {
        return Err(format!("a record has flags {flags}"));
    }
    Ok((t, seq, gap, flags, take_slice(b)?))
}

/// Reads the records stored in `bytes[raw.0..raw.1]`, appending them to `recs` (their states
/// as ranges of `bytes`).
pub(super) fn read_records(
    bytes: &[u8],
    raw: (usize, usize),
    marked: bool,
    recs: &mut Vec<Rec>,
) -> std::result::Result<(), String> {
    let mut b = &bytes[raw.0..raw.1];
    while !b.is_empty() {
        let (t, seq, gap, flags, state) = take_record(&mut b, marked)?;
        let end = raw.1 - b.len();
        recs.push(Rec {
            t,
            seq,
            gap,
            flags,
            state: (end - state.len(), end),
        });
    }
    Ok(())
}

pub(super) fn put_record(r: &Rec, state: &[u8], marked: bool, out: &mut Vec<u8>) -> Result<()> {
    out.extend_from_slice(&r.t.to_le_bytes());
    out.extend_from_slice(&r.seq.to_le_bytes());
    out.extend_from_slice(&r.gap.to_le_bytes());
    if marked {
        out.push(r.flags);
    }
    put_len(state, out)?;
    out.extend_from_slice(state);
    Ok(())
}

pub(super) fn put_len(bytes: &[u8], out: &mut Vec<u8>) -> Result<()> {
    let n = u32::try_from(bytes.len()).map_err(|_| {
        Error::Capacity(format!(
            "an aggregate state of {} bytes is too large for a capped session (4 GiB at most)",
            bytes.len()
        ))
    })?;
    out.extend_from_slice(&n.to_le_bytes());
    Ok(())
}

/// Writes session `m` as its stored value into `out` (cleared first).
pub(super) fn encode(m: &Mem, out: &mut Vec<u8>) -> Result<()> {
    out.clear();
    out.extend_from_slice(&m.end.to_le_bytes());
    out.push(m.flags);
    put_len(&m.state, out)?;
    out.extend_from_slice(&m.state);
    out.extend_from_slice(&m.records);
    Ok(())
}
