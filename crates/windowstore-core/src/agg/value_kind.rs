//! Value kinds: how an accepted Arrow type is kept in a state, and which types each function accepts.

use arrow_schema::DataType;

/// How the values of an input column are kept in a state.
///
/// Fixed kinds hold one value in a little-endian `u64` "word" (see [`super::native::Num`]):
/// signed integers and temporal types as `i64`, unsigned integers as `u64`, `Float32` as its
/// bits in the low half, `Float64` as its bits. `Bool` takes one byte, `Bytes` a varint length
/// and the bytes (UTF-8 for the string types). `Dec128` holds a `Decimal128`'s unscaled value as
/// a little-endian `i128` (16 bytes): one column has one scale, so unscaled values order and
/// add as the decimals do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Int8..Int64, Timestamp (any unit, any time zone), Date32, Date64, Duration (any unit).
    Signed,
    /// UInt8..UInt64.
    Unsigned,
    /// Float32.
    F32,
    /// Float64.
    F64,
    /// Boolean.
    Bool,
    /// Utf8, LargeUtf8, Binary, LargeBinary.
    Bytes,
    /// Decimal128 (any precision and scale).
    Dec128,
}

impl Kind {
    /// The kind of a type that `min`, `max`, `first`, `last` and `collect` accept, if any.
    pub(crate) fn of_orderable(data_type: &DataType) -> Option<Self> {
        use DataType as D;
        Some(match data_type {
            D::Int8 | D::Int16 | D::Int32 | D::Int64 => Self::Signed,
            D::Timestamp(_, _) | D::Date32 | D::Date64 | D::Duration(_) => Self::Signed,
            D::UInt8 | D::UInt16 | D::UInt32 | D::UInt64 => Self::Unsigned,
            D::Float32 => Self::F32,
            D::Float64 => Self::F64,
            D::Boolean => Self::Bool,
            D::Utf8 | D::LargeUtf8 | D::Binary | D::LargeBinary => Self::Bytes,
            D::Decimal128(_, _) => Self::Dec128,
            _ => return None,
        })
    }

    /// The kind of a type that `sum` and `mean` accept (integers, floats, Decimal128), if any.
    pub(crate) fn of_numeric(data_type: &DataType) -> Option<Self> {
        use DataType as D;
        Some(match data_type {
            D::Int8 | D::Int16 | D::Int32 | D::Int64 => Self::Signed,
            D::UInt8 | D::UInt16 | D::UInt32 | D::UInt64 => Self::Unsigned,
            D::Float32 => Self::F32,
            D::Float64 => Self::F64,
            D::Decimal128(_, _) => Self::Dec128,
            _ => return None,
        })
    }

    /// Whether values of this kind are kept in one `u64` word.
    pub(crate) fn is_word(self) -> bool {
        matches!(self, Self::Signed | Self::Unsigned | Self::F32 | Self::F64)
    }

    /// Whether this numeric kind sums exactly in an `i128` (integers) rather than in an `f64`.
    /// Decimals sum exactly too, but have their own arms (their values are not words).
    pub(crate) fn is_integer(self) -> bool {
        matches!(self, Self::Signed | Self::Unsigned)
    }

    /// Whether a `sum`/`mean` segment of this kind holds an exact `i128` sum (integers and
    /// decimals: the segments' widths), rather than an `f64`.
    pub(crate) fn sums_exactly(self) -> bool {
        matches!(self, Self::Signed | Self::Unsigned | Self::Dec128)
    }
}

/// The types `sum` and `mean` accept, for error messages.
pub(crate) const NUMERIC_TYPES: &str = "integer (Int8..Int64, UInt8..UInt64), floating-point \
                                        (Float32, Float64) or Decimal128 columns";

/// The types `min`, `max`, `first`, `last` and `collect` accept, for error messages.
pub(crate) const ORDERABLE_TYPES: &str = "integer, floating-point, Boolean, Utf8, LargeUtf8, \
                                          Binary, LargeBinary, Timestamp, Date32, Date64, \
                                          Duration or Decimal128 columns";
