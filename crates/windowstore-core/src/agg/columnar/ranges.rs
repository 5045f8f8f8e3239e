//! The windows of a call as monotone ranges of rows, and the two ways every columnar spec
//! walks them: associative folds ([`fold_monotone`]) and invertible ones ([`running`]).

use arrow_buffer::NullBuffer;

use crate::{Error, Result};

/// Which rows of a column hold a value. Kernels are compiled for each kind (see
/// [`with_rows!`]), so that a column without nulls ([`Every`]) tests nothing per row.
pub(super) trait Rows: Copy {
    /// Whether `row` holds a value.
    fn valid(self, row: u32) -> bool;
}

/// Every row holds a value.
#[derive(Clone, Copy)]
pub(super) struct Every;

impl Rows for Every {
    #[inline(always)]
    fn valid(self, _: u32) -> bool {
        true
    }
}

impl Rows for &NullBuffer {
    #[inline(always)]
    fn valid(self, row: u32) -> bool {
        self.is_valid(row as usize)
    }
}

/// `$body` with `$rows` the [`Rows`] of a column's `Option<&NullBuffer>`, compiled twice.
macro_rules! with_rows {
    ($nulls:expr, |$rows:ident| $body:expr) => {
        match $nulls {
            None => {
                let $rows = Every;
                $body
            }
            Some(nulls) => {
                let $rows = nulls;
                $body
            }
        }
    };
}
pub(super) use with_rows;

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
/// positions, for [`Ranges::runs`] (validated by the caller: offsets that never decrease).
///
/// Errors: [`Error::InvalidWindowSpec`] (`offsets`) beyond `u32` positions.
pub(crate) fn run_bounds(offsets: &[usize]) -> Result<Vec<u32>> {
    let position = |&o: &usize| {
        u32::try_from(o).map_err(|_| Error::invalid("offsets", "more than 2^32 - 1 positions"))
    };
    offsets.iter().map(position).collect()
}

impl<'a> Ranges<'a> {
    /// The runs of `order` between consecutive `bounds` ([`run_bounds`]).
    pub(crate) fn runs(order: &'a [u32], bounds: &'a [u32]) -> Self {
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

/// Folds every range of `ranges` with the associative `combine` (identity `id`, element `i`
/// of `order` turned into an accumulator by `elem`) and hands each result to `emit`, in
/// O(elements + ranges) combines: a lone window ([`Ranges::lone`]) left to right, the others
/// with the two-stacks queue, laid out as arrays.
///
/// The queue's front is rebuilt whenever a window's start passes the previous boundary `mid`:
/// the window `[l, h)` becomes the block `[l, mid = h)`. Every later window until the next
/// rebuild starts in that block and ends at or after `mid`, so its fold is `front[l]` (the
/// fold of `[l, mid)`) combined with `back[h - 1]` (the fold of `[mid, h)`, nothing when
/// `h = mid`). Both arrays take one pass each, and the pass over the windows then has no
/// branch that depends on the data: a queue that pops and pushes per window mispredicts about
/// once a window, which cost more than the combines. Lone windows lie outside every block.
#[inline(always)]
pub(super) fn fold_monotone<A: Copy>(
    ranges: Ranges<'_>,
    id: A,
    elem: impl Fn(u32) -> A,
    combine: impl Fn(A, A) -> A,
    mut emit: impl FnMut(A),
) {
    let order = ranges.order;
    if ranges.disjoint() {
        for (l, h) in ranges.bounds() {
            let mut acc = id;
            for &i in &order[l..h] {
                acc = combine(acc, elem(i));
            }
            emit(acc);
        }
        return;
    }
    // The blocks [start, mid), by the queue's rule.
    let mut blocks: Vec<(usize, usize)> = Vec::new();
    let mut mid = 0usize;
    for (w, (l, h)) in ranges.bounds().enumerate() {
        if l >= mid && l < h && !ranges.lone(w) {
            blocks.push((l, h));
            mid = h;
        }
    }
    // front[p]: the fold of [p, end of p's block); back[p]: the fold from the boundary before
    // p through p (up to the next boundary).
    let mut front = vec![id; order.len()];
    let mut back = vec![id; order.len()];
    for (b, &(start, end)) in blocks.iter().enumerate() {
        let mut acc = id;
        for p in (start..end).rev() {
            acc = combine(elem(order[p]), acc);
            front[p] = acc;
        }
        let next = blocks.get(b + 1).map_or(order.len(), |&(_, e)| e);
        let mut acc = id;
        for p in end..next {
            acc = combine(acc, elem(order[p]));
            back[p] = acc;
        }
    }
    let mut mid = 0usize;
    for (w, (l, h)) in ranges.bounds().enumerate() {
        if ranges.lone(w) {
            emit(order[l..h].iter().fold(id, |acc, &i| combine(acc, elem(i))));
            continue;
        }
        if l >= mid && l < h {
            mid = h;
        }
        if l == h {
            emit(id);
            continue;
        }
        // Both loads happen, and a select picks: no branch on where the window ends.
        let rest = back[h - 1];
        emit(combine(front[l], if h > mid { rest } else { id }));
    }
}

/// Folds every range of `ranges` with an invertible fold: `add` each element as it enters the
/// window, `remove` it as it leaves; hands each window's accumulator to `emit`. A window that
/// starts at or after every element entered so far starts again from `id`.
#[inline(always)]
pub(super) fn running<A: Copy>(
    ranges: Ranges<'_>,
    id: A,
    add: impl Fn(A, u32) -> A,
    remove: impl Fn(A, u32) -> A,
    mut emit: impl FnMut(A),
) {
    let order = ranges.order;
    let (mut entered, mut left, mut acc) = (0usize, 0usize, id);
    for (l, h) in ranges.bounds() {
        if l >= entered {
            acc = order[l..h].iter().fold(id, |acc, &i| add(acc, i));
            (entered, left) = (h, l);
            emit(acc);
            continue;
        }
        while entered < h {
            acc = add(acc, order[entered]);
            entered += 1;
        }
        while left < l {
            acc = remove(acc, order[left]);
            left += 1;
        }
        emit(acc);
    }
}
