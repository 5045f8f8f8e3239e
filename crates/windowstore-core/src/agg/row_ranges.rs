//! A complete-mode call's windows as monotone ranges of rows, for every engine that walks them.

use arrow_buffer::NullBuffer;

use crate::{Error, Result};

/// Windows as ranges of positions in `order` (the rows in (key, time, arrival) order): window
/// `w` holds `order[lo[w]..hi[w]]`; `lo` and `hi` never decrease.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ranges<'a> {
    /// Row indices of the batch, in (key, time, arrival) order.
    pub order: &'a [u32],
    /// First position of each window.
    pub lo: &'a [u32],
    /// One past the last position of each window.
    pub hi: &'a [u32],
}

/// The offsets of runs laid end to end (window `w` is `order[offsets[w]..offsets[w + 1]]`) as
/// positions, for [`Ranges::windows`] (validated by the caller: offsets that never decrease).
///
/// Errors: [`Error::InvalidWindowSpec`] (`offsets`) beyond `u32` positions.
pub(crate) fn window_bounds(offsets: &[usize]) -> Result<Vec<u32>> {
    let position = |&o: &usize| {
        u32::try_from(o).map_err(|_| Error::invalid("offsets", "more than 2^32 - 1 positions"))
    };
    offsets.iter().map(position).collect()
}

impl<'a> Ranges<'a> {
    /// The runs of `order` between consecutive `bounds` ([`window_bounds`]).
    pub(crate) fn windows(order: &'a [u32], bounds: &'a [u32]) -> Self {
        let windows = bounds.len().saturating_sub(1);
        Ranges {
            order,
            lo: &bounds[..windows],
            hi: &bounds[bounds.len().min(1)..],
        }
    }
}

impl Ranges<'_> {
    /// The number of windows.
    pub(super) fn len(&self) -> usize {
        self.lo.len()
    }

    /// Whether no two windows overlap (sessions' runs).
    pub(super) fn disjoint(&self) -> bool {
        self.hi
            .iter()
            .zip(&self.lo[self.lo.len().min(1)..])
            .all(|(&h, &next)| next >= h)
    }

    /// Whether window `w` is not empty and overlaps no other window: it starts at or after the
    /// previous window's end, and the next one starts at or after its end.
    #[inline(always)]
    pub(crate) fn lone(&self, w: usize) -> bool {
        let (l, h) = (self.lo[w], self.hi[w]);
        l < h && (w == 0 || l >= self.hi[w - 1]) && self.lo.get(w + 1).is_none_or(|&next| next >= h)
    }

    /// Each window's `(lo, hi)`, in order.
    pub(crate) fn bounds(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.lo
            .iter()
            .zip(self.hi)
            .map(|(&l, &h)| (l as usize, h as usize))
    }

    /// The validity of each window's aggregate of a column without nulls: null only where the
    /// window is empty (`None` when none is, as for sliding windows).
    pub(super) fn nonempty(&self) -> Option<NullBuffer> {
        let mut bounds = self.bounds();
        if bounds.all(|(l, h)| l < h) {
            return None;
        }
        Some(NullBuffer::from_iter(self.bounds().map(|(l, h)| l < h)))
    }
}
