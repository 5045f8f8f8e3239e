//! windowstore-core's integration tests, in one test binary: each file under `tests/` used to
//! be a binary of its own, and linking nine release binaries against arrow took most of
//! `cargo test`'s time. Run one module with `cargo test --release -p windowstore-core --test
//! integration <module>::` (for example `transactions::`).

mod batched;
mod capped;
mod common;
mod external_clock;
mod growth;
mod input_boundary;
mod marked;
mod partial;
mod session;
mod sliding;
mod snapshot;
mod store_facts;
mod store_model;
mod store_rewrite;
mod transactions;
