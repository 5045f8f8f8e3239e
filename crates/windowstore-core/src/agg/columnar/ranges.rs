//! The two ways every columnar spec walks the windows' monotone ranges of rows ([`Ranges`]):
//! associative folds ([`fold_monotone`]) and invertible ones ([`running`]).

use arrow_buffer::NullBuffer;

use crate::agg::row_ranges::Ranges;

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
