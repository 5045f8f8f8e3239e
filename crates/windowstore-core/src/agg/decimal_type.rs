//! Decimal128 result types: Spark's types of `sum` and `mean`, below the specs that name them.

use arrow_schema::DataType;

/// The largest precision of a Decimal128.
const MAX_PRECISION: u8 = 38;

/// The precision and scale of a Decimal128 type (`(38, 0)` for another type, never used).
pub(crate) fn precision_scale(data_type: &DataType) -> (u8, i8) {
    match data_type {
        DataType::Decimal128(p, s) => (*p, *s),
        _ => (MAX_PRECISION, 0),
    }
}

/// The type of `sum` of `Decimal128(p, s)`: `Decimal128(min(38, p + 10), s)`.
pub(crate) fn sum_type(input: &DataType) -> DataType {
    let (p, s) = precision_scale(input);
    DataType::Decimal128(p.saturating_add(10).min(MAX_PRECISION), s)
}

/// The type of `mean` of `Decimal128(p, s)`: `Decimal128(min(38, p + 4), min(38, s + 4))`.
pub(crate) fn mean_type(input: &DataType) -> DataType {
    let (p, s) = precision_scale(input);
    DataType::Decimal128(
        p.saturating_add(4).min(MAX_PRECISION),
        s.saturating_add(4).min(MAX_PRECISION as i8),
    )
}
