//! The value a window engine stores per window: its reach (8 bytes little-endian) followed by
//! the aggregate state.

/// Splits a stored value into reach and aggregate state. A value shorter than 8 bytes (never
/// written by an engine) reads as reach `i64::MIN` with the whole value as state.
#[inline]
pub fn split(value: &[u8]) -> (i64, &[u8]) {
    match value.split_first_chunk::<8>() {
        Some((reach, rest)) => (i64::from_le_bytes(*reach), rest),
        None => (i64::MIN, value),
    }
}

/// Appends `reach` and `agg_state` to `out`.
#[inline]
pub fn join(reach: i64, agg_state: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&reach.to_le_bytes());
    out.extend_from_slice(agg_state);
}
