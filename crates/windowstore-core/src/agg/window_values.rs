//! An output column under construction, one value per window with its validity: what the
//! columnar aggregations build.

use arrow_array::types::ArrowPrimitiveType;
use arrow_array::PrimitiveArray;
use arrow_buffer::{ArrowNativeType, NullBufferBuilder, ScalarBuffer};

/// The values of an output column so far, one per window, and which of them are valid.
pub(crate) struct WindowValues<V> {
    values: Vec<V>,
    valid: NullBufferBuilder,
}

impl<V: ArrowNativeType> WindowValues<V> {
    /// An empty column with room for `windows` values.
    pub(crate) fn new(windows: usize) -> Self {
        Self {
            values: Vec::with_capacity(windows),
            valid: NullBufferBuilder::new(windows),
        }
    }

    /// Appends the next window's value, valid or not.
    #[inline(always)]
    pub(crate) fn push(&mut self, value: V, valid: bool) {
        self.values.push(value);
        self.valid.append(valid);
    }

    /// Appends the next window's value, or (`None`) a null stored as the default value.
    #[inline(always)]
    pub(crate) fn push_option(&mut self, value: Option<V>) {
        self.push(value.unwrap_or_default(), value.is_some());
    }

    /// The column as an array of `T` (of its default data type).
    pub(crate) fn finish<T: ArrowPrimitiveType<Native = V>>(mut self) -> PrimitiveArray<T> {
        PrimitiveArray::new(ScalarBuffer::from(self.values), self.valid.finish())
    }
}
