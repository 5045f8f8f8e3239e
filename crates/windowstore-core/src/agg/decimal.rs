//! Decimal128 aggregates: the precision a sum must stay within, the exact mean, and the
//! overflow error (Spark's result types themselves are in `decimal_type`).
//!
//! A column of `Decimal128(p, s)` is aggregated on its unscaled `i128` values (one column has
//! one scale). As Spark does:
//! - `sum` is `Decimal128(min(38, p + 10), s)`;
//! - `mean` is `Decimal128(min(38, p + 4), min(38, s + 4))`: the exact sum over the count,
//!   rounded half away from zero (`HALF_UP`) at the result's scale; its running sum is kept
//!   as the sum's type;
//! - a sum beyond its type's precision is an [`Error::AggregateOverflow`] (Spark returns null
//!   outside ANSI mode): a state is refused at the merge that would leave the precision, so a
//!   stream's partial sums are checked too, never wrapped.

use arrow_array::types::{Decimal128Type, Decimal256Type, DecimalType};
use arrow_buffer::i256;
use arrow_schema::DataType;

use super::decimal_type::{mean_type, precision_scale, sum_type};
use super::slot::{Op, Slot};
use crate::{Error, Result};

/// `a + b`, two sums of `slot` (a `sum` or `mean` of a decimal column), if the result is
/// within the sum type's precision; else the overflow error.
#[inline]
pub(crate) fn add(slot: &Slot, a: i128, b: i128) -> Result<i128> {
    let (precision, _) = precision_scale(&sum_type(&slot.data_type));
    match a.checked_add(b) {
        Some(sum) if Decimal128Type::is_valid_decimal_precision(sum, precision) => Ok(sum),
        _ => Err(sum_overflow(
            slot,
            i256::from_i128(a).wrapping_add(i256::from_i128(b)),
        )),
    }
}

/// The overflow error of `slot`'s sum, whose exact value is `sum`; key and window are left
/// for the caller to fill (see [`super::fill_overflow`]).
pub(crate) fn sum_overflow(slot: &Slot, sum: i256) -> Error {
    let sum_type = sum_type(&slot.data_type);
    let (_, scale) = precision_scale(&sum_type);
    let exact = Decimal256Type::format_decimal(sum, 76, scale);
    overflow(slot, &sum_type, format!("the exact sum {exact}"))
}

/// An [`Error::AggregateOverflow`] of `slot`: `value` (the exact value, described) does not
/// fit `output_type`; key and window empty.
pub(crate) fn overflow(slot: &Slot, output_type: &DataType, value: String) -> Error {
    let precision = precision_scale(output_type).0;
    Error::AggregateOverflow {
        aggregate: format!("{}({})", function_name(slot), slot.column),
        column: slot.column.clone(),
        key: String::new(),
        start: 0,
        end: 0,
        reason: format!(
            "{value} does not fit the output type {output_type} (more than {precision} digits); \
             Spark's sum and avg give null here outside ANSI mode"
        ),
    }
}

/// The name of `slot`'s function, `sum` or `mean`.
fn function_name(slot: &Slot) -> &'static str {
    match slot.op {
        Op::Mean(_) => "mean",
        _ => "sum",
    }
}

/// The mean of `n` values summing to `sum` (unscaled, at the input's scale), in `slot`'s
/// output type: `sum * 10^(s' - s) / n` rounded half away from zero, exactly; `None` for no
/// values. Errors: a mean beyond the output's precision.
pub(crate) fn mean(slot: &Slot, sum: i128, n: u64) -> Result<Option<i128>> {
    if n == 0 {
        return Ok(None);
    }
    let (_, s) = precision_scale(&slot.data_type);
    let out = mean_type(&slot.data_type);
    let (precision, scale) = precision_scale(&out);
    // `scale - s` is 0 to 4 and |sum| < 10^38: the product fits an i256 by far.
    let shift = u32::try_from(i32::from(scale) - i32::from(s)).unwrap_or(0);
    let numerator = i256::from_i128(sum).wrapping_mul(i256::from_i128(10).wrapping_pow(shift));
    let divisor = i256::from_i128(i128::from(n));
    let quotient = numerator.wrapping_div(divisor);
    let remainder = numerator.wrapping_rem(divisor);
    // Half away from zero: the remainder's magnitude at least half the divisor.
    let half_or_more = remainder.wrapping_abs().wrapping_mul(i256::from_i128(2)) >= divisor;
    let rounded = match (half_or_more, numerator.is_negative()) {
        (false, _) => quotient,
        (true, false) => quotient.wrapping_add(i256::ONE),
        (true, true) => quotient.wrapping_sub(i256::ONE),
    };
    match rounded.to_i128() {
        Some(m) if Decimal128Type::is_valid_decimal_precision(m, precision) => Ok(Some(m)),
        _ => Err(overflow(
            slot,
            &out,
            format!(
                "the mean {}",
                Decimal256Type::format_decimal(rounded, 76, scale)
            ),
        )),
    }
}

/// `sum`, a finished sum of `slot`, checked against its output precision (states made here
/// are; this catches input values beyond their column's precision, which Arrow allows).
pub(crate) fn checked_sum(slot: &Slot, sum: i128) -> Result<i128> {
    let (precision, _) = precision_scale(&sum_type(&slot.data_type));
    if Decimal128Type::is_valid_decimal_precision(sum, precision) {
        Ok(sum)
    } else {
        Err(sum_overflow(slot, i256::from_i128(sum)))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use std::sync::Arc;

    use arrow_schema::{Field, Schema};

    use super::*;
    use crate::agg::AggSpec;

    fn mean_slot(p: u8, s: i8) -> Slot {
        let schema = Schema::new(vec![Field::new("x", DataType::Decimal128(p, s), true)]);
        Slot::compile(&AggSpec::mean("x"), &Arc::new(schema)).unwrap()
    }

    #[test]
    fn result_types_follow_spark() {
        assert_eq!(
            sum_type(&DataType::Decimal128(10, 2)),
            DataType::Decimal128(20, 2)
        );
        assert_eq!(
            sum_type(&DataType::Decimal128(30, 5)),
            DataType::Decimal128(38, 5)
        );
        assert_eq!(
            mean_type(&DataType::Decimal128(10, 2)),
            DataType::Decimal128(14, 6)
        );
        assert_eq!(
            mean_type(&DataType::Decimal128(36, 35)),
            DataType::Decimal128(38, 38)
        );
    }

    #[test]
    fn means_round_half_away_from_zero() {
        let slot = mean_slot(10, 0);
        // 1/8 = 0.125 -> 0.1250 at scale 4; 1/3 -> 0.3333; 2/3 -> 0.6667; -2/3 -> -0.6667
        assert_eq!(mean(&slot, 1, 8).unwrap(), Some(1250));
        assert_eq!(mean(&slot, 1, 3).unwrap(), Some(3333));
        assert_eq!(mean(&slot, 2, 3).unwrap(), Some(6667));
        assert_eq!(mean(&slot, -2, 3).unwrap(), Some(-6667));
        // 0.00005 exactly rounds away from zero: 1 / 20000 at scale 4.
        assert_eq!(mean(&slot, 1, 20000).unwrap(), Some(1));
        assert_eq!(mean(&slot, -1, 20000).unwrap(), Some(-1));
        assert_eq!(mean(&slot, -1, 20001).unwrap(), Some(0));
        assert_eq!(mean(&slot, 5, 0).unwrap(), None);
    }

    #[test]
    fn a_mean_beyond_its_precision_is_an_error() {
        // decimal(36, 0) means are decimal(38, 4): 34 integer digits.
        let slot = mean_slot(36, 0);
        let big = 10i128.pow(35);
        let err = mean(&slot, big, 1).unwrap_err();
        assert!(
            err.to_string().contains("mean(x) overflows: the mean"),
            "{err}"
        );
        assert_eq!(
            mean(&slot, 10i128.pow(33), 1).unwrap(),
            Some(10i128.pow(37))
        );
    }
}
