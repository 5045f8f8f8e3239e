//! Shared pieces of the benchmarks: a counting allocator and the steady-state store workload.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

/// The system allocator, counting the bytes currently allocated (for bytes-per-session figures).
pub struct CountingAlloc;

static ALLOCATED: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator; only a counter is added.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        ALLOCATED.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's pointer and layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATED.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: forwarded with the caller's pointer, layout and size.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Bytes currently allocated through [`CountingAlloc`] (when it is the global allocator).
pub fn allocated() -> isize {
    ALLOCATED.load(Ordering::Relaxed)
}

/// The per-record pattern of a session engine over a store, with `live` sessions at steady state.
///
/// Record `i` arrives at time `i` for a pseudo-random key among `keys`. It looks up its key's
/// sessions within `gap` either side; if it finds one it removes it and puts the grown session,
/// otherwise it puts a new single-record session. Sessions expire `retention` ticks after their
/// end. With `keys = live / 4` and `gap = keys / 2`, about 61% of records open a new session
/// (a key's next record comes after `keys` ticks on average), so `retention = 1.64 * live` holds
/// about `live` sessions.
#[derive(Debug, Clone, Copy)]
pub struct Workload {
    /// Target number of live sessions.
    pub live: u64,
    /// Distinct keys.
    pub keys: u64,
    /// The session gap in ticks (lookups reach this far either side).
    pub gap: i64,
    /// Store retention in ticks.
    pub retention: i64,
}

impl Workload {
    /// The workload for about `live` live sessions.
    pub fn new(live: u64) -> Self {
        let keys = (live / 4).max(1);
        Self {
            live,
            keys,
            gap: (keys as i64 / 2).max(1),
            retention: (live as f64 * 1.64) as i64,
        }
    }

    /// The key of record `i`: 13 bytes like a short user id, drawn pseudo-randomly.
    #[inline]
    pub fn key(&self, i: u64) -> [u8; 13] {
        let mut key = *b"user-00000000";
        let mut k = i.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29) % self.keys;
        for b in key[5..].iter_mut().rev() {
            *b = b'0' + (k % 10) as u8;
            k /= 10;
        }
        key
    }

    /// The value bytes of a session of `count` records (16 bytes: a count and a sum).
    #[inline]
    pub fn value(count: u64) -> [u8; 16] {
        let mut v = [0u8; 16];
        v[..8].copy_from_slice(&count.to_le_bytes());
        v[8..].copy_from_slice(&(count as f64 * 0.5).to_le_bytes());
        v
    }

    /// The record count stored in a value made by [`Workload::value`].
    #[inline]
    pub fn count(value: &[u8]) -> u64 {
        u64::from_le_bytes(value[..8].try_into().expect("16-byte value"))
    }
}
