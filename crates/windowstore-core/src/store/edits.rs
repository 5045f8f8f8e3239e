//! Edits of a stored value in place: a list of splices, so that a change touching a few bytes of
//! a large value (a record appended to a session's `collect` list, a count bumped) costs the
//! bytes it changes rather than a copy of the whole value.
//!
//! A splice replaces `old_len` bytes at `at` by new bytes. The splices of one [`Edits`] are
//! given in increasing `at` order, do not overlap, and address the value as it was before any of
//! them. [`Edits::apply`] applies them and returns their inverse ([`Edits::inverse_of`]), which
//! is what the undo journal keeps: the old bytes of the spliced ranges only.

use crate::{Error, Result};

/// One splice: `old_len` bytes at `at` become `bytes[from..to]` of its [`Edits`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Splice {
    at: usize,
    old_len: usize,
    from: usize,
    to: usize,
}

/// Splices of one value, in increasing offset order, with the bytes they put.
#[derive(Debug, Default, Clone)]
pub struct Edits {
    splices: Vec<Splice>,
    bytes: Vec<u8>,
}

impl Edits {
    /// No splice, keeping the buffers.
    pub fn clear(&mut self) {
        self.splices.clear();
        self.bytes.clear();
    }

    /// Whether there is no splice.
    pub fn is_empty(&self) -> bool {
        self.splices.is_empty()
    }

    /// Replaces `old_len` bytes at `at` by `bytes` (after every splice pushed so far).
    pub fn push(&mut self, at: usize, old_len: usize, bytes: &[u8]) {
        let from = self.bytes.len();
        self.bytes.extend_from_slice(bytes);
        self.splices.push(Splice {
            at,
            old_len,
            from,
            to: self.bytes.len(),
        });
    }

    /// The bytes the splices carry (what applying them writes).
    pub fn carried_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// The value's length change.
    fn delta(&self) -> isize {
        self.splices
            .iter()
            .map(|s| (s.to - s.from) as isize - s.old_len as isize)
            .sum()
    }

    /// Checks the splices against a value of `len` bytes: in order, not overlapping, within it.
    pub fn check(&self, len: usize) -> Result<()> {
        let mut end = 0;
        for s in &self.splices {
            if s.at < end || s.at.checked_add(s.old_len).is_none_or(|e| e > len) {
                return Err(Error::Internal(format!(
                    "edit of {} bytes at {} does not fit a value of {len} bytes",
                    s.old_len, s.at
                )));
            }
            end = s.at + s.old_len;
        }
        Ok(())
    }

    /// The length of a value of `len` bytes once edited.
    pub fn new_len(&self, len: usize) -> usize {
        (len as isize + self.delta()) as usize
    }

    /// Applies the splices to `value` in place (checked by [`Self::check`]); returns the bytes
    /// written and moved. Only the bytes after a splice that changes the length move.
    pub fn apply(&self, value: &mut Vec<u8>) -> usize {
        let mut written = 0;
        for s in self.splices.iter().rev() {
            let new = &self.bytes[s.from..s.to];
            written += new.len();
            if new.len() == s.old_len {
                value[s.at..s.at + s.old_len].copy_from_slice(new);
            } else {
                written += value.len() - s.at - s.old_len;
                value.splice(s.at..s.at + s.old_len, new.iter().copied());
            }
        }
        written
    }

    /// Applies the splices to `value`, which must keep its length (a value in a shared arena);
    /// returns the bytes written.
    pub fn apply_same_len(&self, value: &mut [u8]) -> usize {
        for s in &self.splices {
            value[s.at..s.at + s.old_len].copy_from_slice(&self.bytes[s.from..s.to]);
        }
        self.bytes.len()
    }

    /// Whether every splice keeps its length.
    pub fn keeps_len(&self) -> bool {
        self.splices.iter().all(|s| s.to - s.from == s.old_len)
    }

    /// Appends to `inverse` the splices that undo `self` on the edited value, given `old`, the
    /// value before the edit (only the spliced ranges are read).
    pub fn inverse_of(&self, old: &[u8], inverse: &mut Edits) {
        let mut shift = 0isize;
        for s in &self.splices {
            let new_len = s.to - s.from;
            let at = (s.at as isize + shift) as usize;
            inverse.push(at, new_len, &old[s.at..s.at + s.old_len]);
            shift += new_len as isize - s.old_len as isize;
        }
    }

    /// The splices as `(at, old_len, bytes)`.
    pub fn iter(&self) -> impl Iterator<Item = (usize, usize, &[u8])> + '_ {
        self.splices
            .iter()
            .map(|s| (s.at, s.old_len, &self.bytes[s.from..s.to]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apply_then_inverse_gives_back_the_value() {
        let old = b"0123456789".to_vec();
        let mut e = Edits::default();
        e.push(0, 2, b"ab");
        e.push(4, 1, b"");
        e.push(6, 0, b"XYZ");
        e.push(10, 0, b"!");
        e.check(old.len()).unwrap();
        let mut v = old.clone();
        e.apply(&mut v);
        assert_eq!(v, b"ab235XYZ6789!");
        assert_eq!(e.new_len(old.len()), v.len());
        let mut inv = Edits::default();
        e.inverse_of(&old, &mut inv);
        inv.check(v.len()).unwrap();
        inv.apply(&mut v);
        assert_eq!(v, old);
    }

    #[test]
    fn overlapping_or_outside_splices_are_refused() {
        let mut e = Edits::default();
        e.push(2, 3, b"");
        e.push(4, 0, b"x");
        assert!(e.check(10).is_err());
        let mut e = Edits::default();
        e.push(8, 3, b"");
        assert!(e.check(10).is_err());
    }
}
