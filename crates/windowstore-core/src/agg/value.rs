//! One value of a column: read from a row of an Arrow array, written to and read from a state.

use arrow_array::cast::AsArray;
use arrow_array::types::Decimal128Type;
use arrow_array::Array;
use arrow_schema::DataType;

use super::codec::{put_i128, put_u64, put_var_bytes, Reader};
use super::native::{dispatch_word, Num};
use super::value_kind::Kind;
use crate::Result;

/// One value, borrowed from an array or a state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Value<'a> {
    /// No value.
    Null,
    /// A word-kind value (see [`Kind`]).
    Word(u64),
    /// A boolean.
    Bool(bool),
    /// A string's UTF-8 bytes or a binary value.
    Bytes(&'a [u8]),
    /// A decimal's unscaled value.
    Wide(i128),
}

impl<'a> Value<'a> {
    /// Row `row` of `array`, an array of `data_type` (of kind `kind`).
    ///
    /// A row out of range, or an array of another type than `data_type` (a broken precondition
    /// of `encode_row`), reads as null rather than panicking.
    pub(crate) fn of_row(
        array: &'a dyn Array,
        data_type: &DataType,
        kind: Kind,
        row: usize,
    ) -> Self {
        if row >= array.len() || array.is_null(row) {
            return Self::Null;
        }
        match kind {
            Kind::Signed | Kind::Unsigned | Kind::F32 | Kind::F64 => dispatch_word!(
                data_type,
                |T| array
                    .as_primitive_opt::<T>()
                    .map_or(Self::Null, |a| Self::Word(a.value(row).to_word())),
                _ => Self::Null
            ),
            Kind::Bool => array
                .as_boolean_opt()
                .map_or(Self::Null, |a| Self::Bool(a.value(row))),
            Kind::Bytes => {
                let bytes = match data_type {
                    DataType::Utf8 => array
                        .as_string_opt::<i32>()
                        .map(|a| a.value(row).as_bytes()),
                    DataType::LargeUtf8 => array
                        .as_string_opt::<i64>()
                        .map(|a| a.value(row).as_bytes()),
                    DataType::Binary => array.as_binary_opt::<i32>().map(|a| a.value(row)),
                    DataType::LargeBinary => array.as_binary_opt::<i64>().map(|a| a.value(row)),
                    _ => None,
                };
                bytes.map_or(Self::Null, Self::Bytes)
            }
            Kind::Dec128 => array
                .as_primitive_opt::<Decimal128Type>()
                .map_or(Self::Null, |a| Self::Wide(a.value(row))),
        }
    }

    /// Appends the value's state encoding: 8 bytes for a word, 1 for a bool, 16 for a decimal,
    /// varint length and bytes for bytes. A null (or a value of the wrong variant) of a fixed kind writes zeros,
    /// so that fixed-kind states keep one size; a null of kind `Bytes` writes nothing.
    pub(crate) fn write(self, kind: Kind, out: &mut Vec<u8>) {
        match (kind, self) {
            (Kind::Bool, Self::Bool(b)) => out.push(u8::from(b)),
            (Kind::Bool, _) => out.push(0),
            (Kind::Bytes, Self::Bytes(bytes)) => put_var_bytes(out, bytes),
            (Kind::Bytes, _) => {}
            (Kind::Dec128, Self::Wide(x)) => put_i128(out, x),
            (Kind::Dec128, _) => put_i128(out, 0),
            (_, Self::Word(w)) => put_u64(out, w),
            (_, _) => put_u64(out, 0),
        }
    }

    /// Reads a value of `kind` written by [`Value::write`] (a present one, for `Bytes`).
    pub(crate) fn read(kind: Kind, r: &mut Reader<'a>) -> Result<Self> {
        Ok(match kind {
            Kind::Bool => Self::Bool(r.u8()? != 0),
            Kind::Bytes => Self::Bytes(r.var_bytes()?),
            Kind::Dec128 => Self::Wide(r.i128()?),
            _ => Self::Word(r.u64()?),
        })
    }

    /// Whether `self` sorts strictly before `other`, both of kind `kind` (nulls sort last and
    /// are never before anything; floats as in [`super::native`]).
    pub(crate) fn less(self, other: Self, kind: Kind) -> bool {
        match (self, other) {
            (Self::Word(a), Self::Word(b)) => word_less(a, b, kind),
            (Self::Bool(a), Self::Bool(b)) => !a & b,
            (Self::Bytes(a), Self::Bytes(b)) => a < b,
            (Self::Wide(a), Self::Wide(b)) => a < b,
            (Self::Null, _) => false,
            (_, Self::Null) => true,
            _ => false,
        }
    }
}

/// Whether word `a` sorts strictly before word `b`, both of word kind `kind` ([`Value::less`]
/// of two words; floats as in [`super::native`]).
#[inline]
pub(crate) fn word_less(a: u64, b: u64, kind: Kind) -> bool {
    match kind {
        Kind::Unsigned => a < b,
        Kind::F32 => f32::from_word(a).key() < f32::from_word(b).key(),
        Kind::F64 => f64::from_word(a).key() < f64::from_word(b).key(),
        _ => (a as i64) < (b as i64),
    }
}
