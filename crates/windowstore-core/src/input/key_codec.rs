//! Key columns as comparable bytes: arrow-row encodes one or more columns of any supported
//! type into byte strings that compare like the values, and decodes them back for output.

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::{DataType, FieldRef, Schema};

use super::column_index;
use crate::{Error, Result};

/// Encodes key columns into bytes and back.
#[derive(Debug)]
pub struct KeyCodec {
    columns: Vec<usize>,
    fields: Vec<FieldRef>,
    converter: RowConverter,
}

/// The key bytes of one batch for grouping within the batch: a single string or binary column's
/// own bytes (no copy), or arrow-row encoded rows for everything else. Bytes of different views
/// are not comparable with each other, so a view never outlives its batch.
#[derive(Debug)]
pub enum KeyView<'a> {
    /// One Utf8 column.
    Utf8(&'a arrow_array::StringArray),
    /// One LargeUtf8 column.
    LargeUtf8(&'a arrow_array::LargeStringArray),
    /// One Utf8View column.
    Utf8View(&'a arrow_array::StringViewArray),
    /// One Binary column.
    Binary(&'a arrow_array::BinaryArray),
    /// One integer, date or timestamp column: its values as words (see [`Words`]).
    Words(Words),
    /// Any other key: encoded rows and null flags.
    Rows(BatchKeys),
}

/// A fixed-width primitive key column (1, 2, 4 or 8 bytes a value): grouping hashes each value
/// as one integer instead of encoding and comparing byte strings.
#[derive(Debug)]
pub struct Words {
    /// The values' bytes, from the array's first value.
    values: arrow_buffer::Buffer,
    /// Bytes per value.
    width: usize,
    nulls: Option<arrow_buffer::NullBuffer>,
}

impl Words {
    /// The view of `array` if it is a primitive array of 1, 2, 4 or 8 bytes a value.
    fn of(array: &dyn arrow_array::Array) -> Option<Self> {
        let width = array.data_type().primitive_width()?;
        if !matches!(width, 1 | 2 | 4 | 8) {
            return None;
        }
        let data = array.to_data();
        let values = data.buffers().first()?.slice(data.offset() * width);
        Some(Self {
            values,
            width,
            nulls: array.logical_nulls(),
        })
    }

    /// The bytes a value takes.
    pub fn width(&self) -> usize {
        self.width
    }

    /// The value of `row` as a word, for a width of `W` bytes (`W` = [`Words::width`]): equal
    /// words are equal keys.
    #[inline(always)]
    pub fn word<const W: usize>(&self, row: usize) -> u64 {
        let mut word = [0u8; 8];
        word[..W].copy_from_slice(&self.values[row * W..row * W + W]);
        u64::from_le_bytes(word)
    }

    #[inline]
    fn bytes(&self, row: usize) -> &[u8] {
        &self.values[row * self.width..(row + 1) * self.width]
    }

    #[inline]
    fn is_null(&self, row: usize) -> bool {
        self.nulls.as_ref().is_some_and(|n| n.is_null(row))
    }
}

impl KeyView<'_> {
    /// The key bytes of `row` (meaningless where [`KeyView::is_null`]).
    #[inline]
    pub fn bytes(&self, row: usize) -> &[u8] {
        match self {
            Self::Utf8(a) => a.value(row).as_bytes(),
            Self::LargeUtf8(a) => a.value(row).as_bytes(),
            Self::Utf8View(a) => a.value(row).as_bytes(),
            Self::Binary(a) => a.value(row),
            Self::Words(w) => w.bytes(row),
            Self::Rows(k) => k.rows.row(row).data(),
        }
    }

    /// Whether a key column is null at `row`.
    #[inline]
    pub fn is_null(&self, row: usize) -> bool {
        use arrow_array::Array;
        match self {
            Self::Utf8(a) => a.is_null(row),
            Self::LargeUtf8(a) => a.is_null(row),
            Self::Utf8View(a) => a.is_null(row),
            Self::Binary(a) => a.is_null(row),
            Self::Words(w) => w.is_null(row),
            Self::Rows(k) => k.null[row],
        }
    }
}

/// The keys of one batch: encoded rows and which rows have a null in a key column.
#[derive(Debug)]
pub struct BatchKeys {
    /// One encoded key per row.
    pub rows: Rows,
    /// `true` where any key column is null (such a record is rejected as `null_key`).
    pub null: Vec<bool>,
}

impl KeyCodec {
    /// Binds key columns `names` of `schema`.
    pub fn try_new(names: &[String], schema: &Schema) -> Result<Self> {
        let mut columns = Vec::with_capacity(names.len());
        let mut fields = Vec::with_capacity(names.len());
        let mut sort_fields = Vec::with_capacity(names.len());
        for name in names {
            let i = column_index(schema, name)?;
            let field = schema.fields()[i].clone();
            if !key_type_supported(field.data_type()) {
                return Err(Error::schema(
                    name,
                    format!(
                        "type {} cannot be a key; keys are integers, strings, binary, booleans, \
                         dates or timestamps",
                        field.data_type()
                    ),
                ));
            }
            if columns.contains(&i) {
                return Err(Error::invalid(
                    "key",
                    format!("column {name:?} is named twice"),
                ));
            }
            columns.push(i);
            sort_fields.push(SortField::new(field.data_type().clone()));
            fields.push(field);
        }
        let converter = RowConverter::new(sort_fields)
            .map_err(|e| Error::schema(&names[0], format!("cannot encode keys: {e}")))?;
        Ok(Self {
            columns,
            fields,
            converter,
        })
    }

    /// The key fields, for the output schema.
    pub fn fields(&self) -> &[FieldRef] {
        &self.fields
    }

    /// Indices of the key columns in the input.
    pub fn columns(&self) -> &[usize] {
        &self.columns
    }

    /// Encodes the keys of `batch`.
    pub fn encode(&self, batch: &RecordBatch) -> Result<BatchKeys> {
        let arrays: Vec<ArrayRef> = self
            .columns
            .iter()
            .map(|&i| batch.column(i).clone())
            .collect();
        let rows = self.converter.convert_columns(&arrays).map_err(|e| {
            Error::schema(self.fields[0].name(), format!("cannot encode keys: {e}"))
        })?;
        let mut null = vec![false; batch.num_rows()];
        for array in &arrays {
            if let Some(nulls) = array.logical_nulls() {
                for (row, valid) in nulls.iter().enumerate() {
                    null[row] |= !valid;
                }
            }
        }
        Ok(BatchKeys { rows, null })
    }

    /// The encoded keys of the rows of `batch`, a batch of the key columns alone (found by
    /// name, cast to the key types), for a lookup: a missing column, a value the key type
    /// cannot hold or a null is an error naming the column.
    pub fn encode_lookup(&self, batch: &RecordBatch) -> Result<Vec<Vec<u8>>> {
        let mut arrays = Vec::with_capacity(self.fields.len());
        for field in &self.fields {
            let name = field.name();
            let column = batch
                .column_by_name(name)
                .ok_or_else(|| Error::schema(name, "the key of a lookup needs every key column"))?;
            let options = arrow_cast::CastOptions {
                safe: false,
                ..Default::default()
            };
            let column = arrow_cast::cast_with_options(column, field.data_type(), &options)
                .map_err(|e| {
                    Error::schema(
                        name,
                        format!("the key of a lookup is not a {}: {e}", field.data_type()),
                    )
                })?;
            if column.null_count() > 0 {
                return Err(Error::schema(name, "the key of a lookup cannot be null"));
            }
            arrays.push(column);
        }
        let rows = self.converter.convert_columns(&arrays).map_err(|e| {
            Error::schema(self.fields[0].name(), format!("cannot encode keys: {e}"))
        })?;
        Ok(rows.iter().map(|r| r.as_ref().to_vec()).collect())
    }

    /// The keys of `batch` for grouping within it (see [`KeyView`]).
    pub fn view<'a>(&self, batch: &'a RecordBatch) -> Result<KeyView<'a>> {
        use arrow_array::cast::AsArray;
        if let [column] = self.columns.as_slice() {
            let a = batch.column(*column);
            match a.data_type() {
                DataType::Utf8 => return Ok(KeyView::Utf8(a.as_string::<i32>())),
                DataType::LargeUtf8 => return Ok(KeyView::LargeUtf8(a.as_string::<i64>())),
                DataType::Utf8View => return Ok(KeyView::Utf8View(a.as_string_view())),
                DataType::Binary => return Ok(KeyView::Binary(a.as_binary::<i32>())),
                _ => {}
            }
            if let Some(words) = Words::of(a.as_ref()) {
                return Ok(KeyView::Words(words));
            }
        }
        self.encode(batch).map(KeyView::Rows)
    }

    /// Decodes encoded keys (made by this codec) into one array per key column.
    pub fn decode<'a>(&self, keys: impl IntoIterator<Item = &'a [u8]>) -> Result<Vec<ArrayRef>> {
        let parser = self.converter.parser();
        let rows: Vec<_> = keys.into_iter().map(|k| parser.parse(k)).collect();
        self.converter
            .convert_rows(rows)
            .map_err(|e| Error::schema(self.fields[0].name(), format!("cannot decode keys: {e}")))
    }

    /// Decodes encoded keys and encodes the result again: the canonical bytes of each key.
    /// Bytes this codec wrote come back unchanged, so a difference means they were not its.
    pub fn reencode<'a>(&self, keys: impl IntoIterator<Item = &'a [u8]>) -> Result<Vec<Vec<u8>>> {
        let arrays = self.decode(keys)?;
        let rows = self.converter.convert_columns(&arrays).map_err(|e| {
            Error::schema(self.fields[0].name(), format!("cannot encode keys: {e}"))
        })?;
        Ok(rows.iter().map(|r| r.as_ref().to_vec()).collect())
    }

    /// A key rendered for people, e.g. `user_id=42` or `(a=1, b="x")`, for error messages.
    pub fn render(&self, key: &[u8]) -> String {
        match self.decode([key]) {
            Ok(arrays) => self.render_arrays(&arrays, 0),
            Err(_) => format!("{key:?}"),
        }
    }

    /// The key of row `row` of `batch`, rendered like [`KeyCodec::render`].
    pub fn render_row(&self, batch: &RecordBatch, row: usize) -> String {
        let arrays: Vec<ArrayRef> = self
            .columns
            .iter()
            .map(|&i| batch.column(i).clone())
            .collect();
        self.render_arrays(&arrays, row)
    }

    fn render_arrays(&self, arrays: &[ArrayRef], row: usize) -> String {
        let parts: Vec<String> = arrays
            .iter()
            .zip(&self.fields)
            .map(|(array, field)| {
                let value = ArrayFormatter::try_new(array.as_ref(), &FormatOptions::default())
                    .map(|f| f.value(row).to_string())
                    .unwrap_or_else(|_| "?".into());
                format!("{}={value}", field.name())
            })
            .collect();
        if parts.len() == 1 {
            parts.into_iter().next().unwrap_or_default()
        } else {
            format!("({})", parts.join(", "))
        }
    }
}

fn key_type_supported(t: &DataType) -> bool {
    use DataType::*;
    matches!(
        t,
        Int8 | Int16
            | Int32
            | Int64
            | UInt8
            | UInt16
            | UInt32
            | UInt64
            | Utf8
            | LargeUtf8
            | Utf8View
            | Binary
            | LargeBinary
            | BinaryView
            | FixedSizeBinary(_)
            | Boolean
            | Date32
            | Date64
            | Timestamp(_, _)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int64Array, StringArray};
    use arrow_schema::Field;
    use std::sync::Arc;

    fn batch() -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("user", DataType::Utf8, true),
            Field::new("shard", DataType::Int64, true),
            Field::new("price", DataType::Float64, true),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(StringArray::from(vec![Some("a"), None, Some("b")])),
                Arc::new(Int64Array::from(vec![Some(1), Some(2), None])),
                Arc::new(arrow_array::Float64Array::from(vec![1.0, 2.0, 3.0])),
            ],
        )
        .unwrap()
    }

    #[test]
    fn multi_column_keys_round_trip_and_flag_nulls() {
        let b = batch();
        let codec = KeyCodec::try_new(&["user".into(), "shard".into()], &b.schema()).unwrap();
        let keys = codec.encode(&b).unwrap();
        assert_eq!(keys.null, vec![false, true, true]);
        let back = codec.decode([keys.rows.row(0).as_ref()]).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(codec.render(keys.rows.row(0).as_ref()), "(user=a, shard=1)");
    }

    #[test]
    fn bad_key_columns_are_named() {
        let b = batch();
        let err = KeyCodec::try_new(&["nope".into()], &b.schema()).unwrap_err();
        assert!(
            matches!(err, Error::Schema { ref column, .. } if column == "nope"),
            "{err}"
        );
        let err = KeyCodec::try_new(&["price".into()], &b.schema()).unwrap_err();
        assert!(err.to_string().contains("Float64"), "{err}");
    }
}
