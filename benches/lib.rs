//! Shared helpers of the benchmarks (the criterion benches are the targets of this crate).
