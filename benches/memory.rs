//! What a cache miss costs on this machine, alone and overlapped: the reason the streaming
//! processors read their lookups ahead (`processor::batched`, "Reads ahead").
//!
//! For a buffer of each size, `READS` reads at random positions, two ways: each read's
//! position taken from the value the previous read returned (a chain, as a hash probe, then
//! the bucket it names, then the list that names, waits for each miss in turn), and positions
//! known in advance (independent reads, whose misses the processor overlaps). Prints
//! nanoseconds a read for both, and their ratio: how much a lookup gains when its misses
//! overlap with other lookups' instead of following one another.
//!
//! Run: `cargo bench -p windowstore-benches --bench memory`.

use std::hint::black_box;
use std::time::Instant;

const READS: usize = 4_000_000;

/// A xorshift generator: the positions, reproducible.
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

fn main() {
    for mib in [16usize, 256, 1024] {
        let n = (mib << 20) / 8;
        // One cycle through every slot (Sattolo's shuffle): a chase visits them all.
        let mut next: Vec<u64> = (0..n as u64).collect();
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for i in (1..n).rev() {
            let j = (xorshift(&mut state) % i as u64) as usize;
            next.swap(i, j);
        }
        let positions: Vec<usize> = (0..READS)
            .map(|_| (xorshift(&mut state) % n as u64) as usize)
            .collect();

        let started = Instant::now();
        let mut sum = 0u64;
        for &p in &positions {
            sum = sum.wrapping_add(next[p]);
        }
        let independent = started.elapsed().as_secs_f64() * 1e9 / READS as f64;
        black_box(sum);

        let started = Instant::now();
        let mut at = 0u64;
        for _ in 0..READS {
            at = next[at as usize];
        }
        let chained = started.elapsed().as_secs_f64() * 1e9 / READS as f64;
        black_box(at);

        println!(
            "{mib:>5} MiB: chained {chained:6.1} ns a read, independent {independent:5.1} ns \
             a read: {:.0}x",
            chained / independent
        );
    }
}
