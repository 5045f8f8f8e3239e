//! The value a processor's store keeps per window: an 8-byte prefix, then the aggregate state.
//!
//! The prefix is an `i64`, little-endian, and holds a time of the window that its place in the
//! store does not give: a session's end (a session is stored under `[start, reach]`, see
//! [`crate::session::kind`]), or a sliding window's time, the largest record time in it (a
//! sliding window is stored under its start, its end following from it). A capped or marked
//! session's value also begins with its end, followed by more than an aggregate state
//! ([`crate::session::capped`]). The window kinds' docs and `docs/internals.md` point here.

/// Splits a stored value into its prefix (a session's end, a sliding window's time) and
/// aggregate state. A value shorter than 8 bytes (never written by an engine) reads as prefix
/// `i64::MIN` with the whole value as state.
#[inline]
pub fn split(value: &[u8]) -> (i64, &[u8]) {
    match value.split_first_chunk::<8>() {
        Some((prefix, rest)) => (i64::from_le_bytes(*prefix), rest),
        None => (i64::MIN, value),
    }
}

/// Appends `prefix` (a session's end, a sliding window's time) and `agg_state` to `out`.
#[inline]
pub fn join(prefix: i64, agg_state: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&prefix.to_le_bytes());
    out.extend_from_slice(agg_state);
}
