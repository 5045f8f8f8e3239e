//! Arrow arrays of a column's type from decoded [`Value`]s.

use std::sync::Arc;

use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, Decimal128Array, LargeBinaryArray, LargeStringArray,
    PrimitiveArray, StringArray,
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
        DataType::Decimal128(_, _) => Arc::new(
            values
                .iter()
                .map(|v| match v {
                    Value::Wide(x) => Some(*x),
                    _ => None,
                })
                .collect::<Decimal128Array>()
                .with_data_type(data_type.clone()),
        ),
        dt => return build_words(dt, values.iter().map(word), canon),
    })
}

/// An array of word data type `data_type` holding `words` (`None`: null), [`Num::from_word`]
/// of each; with `canon`, float NaNs as the canonical NaN. Any other data type is an error.
pub(crate) fn build_words(
    data_type: &DataType,
    words: impl Iterator<Item = Option<u64>>,
    canon: bool,
) -> Result<ArrayRef> {
    Ok(dispatch_word!(
        data_type,
        |T| {
            let array: PrimitiveArray<T> = words
                .map(|w| {
                    w.map(|w| {
                        let x = <T as arrow_array::ArrowPrimitiveType>::Native::from_word(w);
                        if canon {
                            x.canon()
                        } else {
                            x
                        }
                    })
                })
                .collect();
            Arc::new(array.with_data_type(data_type.clone())) as ArrayRef
        },
        _ => {
            return Err(Error::schema(
                "",
                format!("type {data_type} is not an aggregation value type"),
            ))
        }
    ))
}
