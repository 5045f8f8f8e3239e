//! Arrow arrays of a column's type from decoded [`Value`]s.

use std::sync::Arc;

use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, LargeBinaryArray, LargeStringArray, PrimitiveArray,
    StringArray,
};
use arrow_schema::DataType;

use super::codec::corrupt;
use super::native::{dispatch_word, Num};
use super::value::Value;
use crate::{Error, Result};

/// The word of a word value.
fn word(v: &Value<'_>) -> Option<u64> {
    match v {
        Value::Word(w) => Some(*w),
        _ => None,
    }
}

/// The bytes of a bytes value.
fn bytes<'a>(v: &Value<'a>) -> Option<&'a [u8]> {
    match v {
        Value::Bytes(b) => Some(*b),
        _ => None,
    }
}

/// An array of `data_type` holding `values` (`Null` and values of another variant are null).
/// With `canon`, float NaNs are emitted as the canonical NaN (min and max do this).
/// Strings that are not UTF-8 (a corrupted state) are an error.
pub(crate) fn build(data_type: &DataType, values: &[Value<'_>], canon: bool) -> Result<ArrayRef> {
    let strings = || {
        values
            .iter()
            .map(|v| bytes(v).map(std::str::from_utf8).transpose())
            .collect::<Result<Vec<Option<&str>>, _>>()
            .map_err(|_| corrupt("string is not UTF-8"))
    };
    Ok(match data_type {
        DataType::Boolean => Arc::new(
            values
                .iter()
                .map(|v| match v {
                    Value::Bool(b) => Some(*b),
                    _ => None,
                })
                .collect::<BooleanArray>(),
        ),
        DataType::Utf8 => Arc::new(StringArray::from(strings()?)),
        DataType::LargeUtf8 => Arc::new(LargeStringArray::from(strings()?)),
        DataType::Binary => Arc::new(values.iter().map(bytes).collect::<BinaryArray>()),
        DataType::LargeBinary => Arc::new(values.iter().map(bytes).collect::<LargeBinaryArray>()),
        dt => dispatch_word!(
            dt,
            |T| {
                let array: PrimitiveArray<T> = values
                    .iter()
                    .map(|v| {
                        word(v).map(|w| {
                            let x = <T as arrow_array::ArrowPrimitiveType>::Native::from_word(w);
                            if canon {
                                x.canon()
                            } else {
                                x
                            }
                        })
                    })
                    .collect();
                Arc::new(array.with_data_type(dt.clone())) as ArrayRef
            },
            _ => {
                return Err(Error::schema(
                    "",
                    format!("type {dt} is not an aggregation value type"),
                ))
            }
        ),
    })
}
