//! Mergeable aggregations of a window's records, over Arrow columns.
//!
//! A user asks for [`AggSpec`]s; an [`Aggregator`] binds them to an input schema. Each record
//! becomes a compact state ([`Aggregator::encode_row`]); states merge as KIP-94's `Merger`
//! does ([`Aggregator::merge`]: merging two states equals aggregating the union of their
//! records) and turn into output columns ([`Aggregator::finish`]). Complete mode aggregates the
//! windows of a batch column by column instead ([`Aggregator::aggregate_windows`],
//! [`Aggregator::aggregate_ranges`]), with the same results.
//!
//! Conventions:
//! - nulls in a value column are skipped, as SQL does; `count` counts records, nulls included;
//!   `sum`, `min`, `max`, `mean`, `first`, `last` of a window without non-null values are null;
//!   `collect` of such a window is an empty list (never null);
//! - floats order by IEEE total order with NaN canonical: NaN is greater than every number,
//!   `-0.0 < +0.0`; `min`/`max` emit NaN as the canonical NaN (the `native` module has the details);
//! - `first`/`last`/`collect` order records by `(time, seq)`, `seq` being the arrival number;
//! - strings compare byte-wise (code point order), as Arrow sorts them;
//! - integer sums are exact (`i128`); one that does not fit the Int64 output is an error;
//!   float sums add in `f64`, so their last bits depend on the merge grouping;
//! - `Decimal128` values aggregate exactly on their unscaled `i128`, with Spark's result types
//!   (`decimal` module); a sum beyond its precision is an error at the merge that reaches it.
//!
//! Modules:
//! - what is asked and what it accepts: [`agg_spec`] (the specs), `value_kind` (accepted types
//!   and how each is stored in a state), `decimal_type` (decimal result types), `slot` (a spec
//!   bound to a schema), `native` (primitive order, state words, sum terms), `decimal` (decimal
//!   arithmetic and overflow errors);
//! - states: [`state_layout`] (the layout, public for its documentation: states are stored in
//!   snapshots), `codec` (checked byte reads and writes), `value` (one value of a column),
//!   `distinct` (`count_distinct`'s set);
//! - one record at a time, for the streaming processors: [`aggregator`] (the specs bound to a
//!   schema: encode, merge, finish), `inputs` (a batch's aggregate inputs resolved once per
//!   batch), [`append`] (a record added to a state as in-place edits), `fold` (a record folded
//!   into a fixed-width state in place), `build` and `finish` (states to output arrays);
//! - whole windows at once, for complete mode: `row_ranges` (the windows as monotone ranges of
//!   rows), `columnar` (every spec over those ranges), `window_values` (an output column under
//!   construction), `window_states` (the state of each window, for map-side partial sessions);
//! - [`overflow`]: naming the window of an aggregate's overflow error.

pub mod agg_spec;
pub mod aggregator;
pub mod append;
pub(crate) mod build;
pub(crate) mod codec;
pub(crate) mod columnar;
pub(crate) mod decimal;
pub(crate) mod decimal_type;
pub(crate) mod distinct;
pub(crate) mod finish;
pub(crate) mod fold;
pub(crate) mod inputs;
pub(crate) mod native;
pub mod overflow;
pub(crate) mod row_ranges;
pub(crate) mod slot;
pub mod state_layout;
pub(crate) mod value;
pub(crate) mod value_kind;
pub(crate) mod window_states;
pub(crate) mod window_values;

#[cfg(test)]
mod tests;

pub use agg_spec::{AggFunc, AggSpec, Overflow};
pub use aggregator::Aggregator;
pub use overflow::fill_overflow;
