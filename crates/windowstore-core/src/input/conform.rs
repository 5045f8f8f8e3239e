//! The input boundary: every batch is read into one schema before an engine sees it.
//!
//! Encodings are decoded here, once, so that nothing past the boundary meets them: view types
//! (Utf8View, BinaryView: what polars produces) read as Utf8 and Binary, and dictionary-encoded
//! columns as their value type (keys, aggregated values and rejected rows alike), at the top
//! level and inside lists, structs and maps. A batch whose
//! columns are those bound, by name and type after decoding, is accepted whatever its column
//! order, nullability or field metadata; a column typed `null` (pyarrow's type of an all-null
//! column) reads as all-null of the bound type. Anything else is refused naming the column.

use std::collections::HashSet;
use std::sync::Arc;

use arrow_array::{new_null_array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{DataType, Field, FieldRef, Schema, SchemaRef};

use crate::{Error, Result};

/// The schema the engines work on: view and dictionary types replaced by the plain types they
/// decode to (see the module documentation). Other types are unchanged.
pub fn plain_schema(schema: &Schema) -> SchemaRef {
    let fields: Vec<Arc<Field>> = schema
        .fields()
        .iter()
        .map(|f| match plain_type(f.data_type()) {
            Some(t) => Arc::new(f.as_ref().clone().with_data_type(t)),
            None => f.clone(),
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// `batch` with its view and dictionary columns decoded (no copy when it has none).
pub fn plain_batch(batch: &RecordBatch) -> Result<RecordBatch> {
    if !batch
        .schema()
        .fields()
        .iter()
        .any(|f| plain_type(f.data_type()).is_some())
    {
        return Ok(batch.clone());
    }
    let schema = plain_schema(&batch.schema());
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| decode(c, f))
        .collect::<Result<Vec<_>>>()?;
    RecordBatch::try_new_with_options(schema, columns, &rows(batch))
        .map_err(Error::arrow("decoding the input's encoded columns"))
}

/// The plain type `t` decodes to, if `t` is a view or a dictionary type or has one inside (a
/// list, struct or map of them: arrow's `cast` decodes nested values too).
fn plain_type(t: &DataType) -> Option<DataType> {
    match t {
        DataType::Utf8View => Some(DataType::Utf8),
        DataType::BinaryView => Some(DataType::Binary),
        DataType::Dictionary(_, values) => {
            Some(plain_type(values).unwrap_or_else(|| values.as_ref().clone()))
        }
        DataType::List(item) => plain_field(item).map(DataType::List),
        DataType::LargeList(item) => plain_field(item).map(DataType::LargeList),
        DataType::FixedSizeList(item, size) => {
            plain_field(item).map(|item| DataType::FixedSizeList(item, *size))
        }
        DataType::Map(entries, sorted) => plain_field(entries).map(|e| DataType::Map(e, *sorted)),
        DataType::Struct(fields) => {
            let plain: Vec<Option<FieldRef>> = fields.iter().map(plain_field).collect();
            plain.iter().any(Option::is_some).then(|| {
                let fields: Vec<FieldRef> = plain
                    .into_iter()
                    .zip(fields.iter())
                    .map(|(plain, f)| plain.unwrap_or_else(|| f.clone()))
                    .collect();
                DataType::Struct(fields.into())
            })
        }
        _ => None,
    }
}

/// `field` with its type decoded, if it has a view or dictionary type (see [`plain_type`]).
fn plain_field(field: &FieldRef) -> Option<FieldRef> {
    plain_type(field.data_type()).map(|t| Arc::new(field.as_ref().clone().with_data_type(t)))
}

/// `column` decoded into `field`'s type.
fn decode(column: &ArrayRef, field: &Field) -> Result<ArrayRef> {
    if column.data_type() == field.data_type() {
        return Ok(column.clone());
    }
    arrow_cast::cast(column, field.data_type()).map_err(|e| {
        Error::schema(
            field.name(),
            format!("cannot decode type {}: {e}", column.data_type()),
        )
    })
}

fn rows(batch: &RecordBatch) -> RecordBatchOptions {
    RecordBatchOptions::new().with_row_count(Some(batch.num_rows()))
}

/// The schema a first batch binds to: decoded (see [`plain_schema`]) and every column nullable,
/// so that a later batch may carry nulls in a column the first one declared non-nullable (its
/// rows are then kept beside the first batch's, as rejected rows for instance). Refuses a
/// column name that appears twice: a column is found by its name.
pub(crate) fn bound_schema(schema: &Schema) -> Result<SchemaRef> {
    unique_names(schema)?;
    let plain = plain_schema(schema);
    let fields: Vec<Arc<Field>> = plain
        .fields()
        .iter()
        .map(|f| match f.is_nullable() {
            true => f.clone(),
            false => Arc::new(f.as_ref().clone().with_nullable(true)),
        })
        .collect();
    Ok(Arc::new(Schema::new_with_metadata(
        fields,
        plain.metadata().clone(),
    )))
}

/// Refuses a schema in which a column name appears twice, naming it.
fn unique_names(schema: &Schema) -> Result<()> {
    let mut seen = HashSet::with_capacity(schema.fields().len());
    match schema.fields().iter().find(|f| !seen.insert(f.name())) {
        Some(f) => Err(Error::schema(
            f.name(),
            "appears twice in the input; columns are found by name, so rename one",
        )),
        None => Ok(()),
    }
}

/// `batch` read into `bound` (a [`bound_schema`]): its columns taken by name in `bound`'s order,
/// decoded, and `null`-typed columns made all-null of the bound type. No copy of any column that
/// needs no decoding.
pub(crate) fn conform(bound: &SchemaRef, batch: &RecordBatch) -> Result<RecordBatch> {
    let got = batch.schema();
    if got.fields() == bound.fields() {
        return Ok(batch.clone());
    }
    unique_names(&got)?;
    let mut columns = Vec::with_capacity(bound.fields().len());
    for field in bound.fields() {
        let Some((i, _)) = got.column_with_name(field.name()) else {
            return Err(Error::schema(field.name(), "missing from this batch"));
        };
        columns.push(read_as(batch.column(i), field)?);
    }
    if let Some(extra) = got
        .fields()
        .iter()
        .find(|f| bound.field_with_name(f.name()).is_err())
    {
        return Err(Error::schema(
            extra.name(),
            "not in the schema of earlier batches",
        ));
    }
    RecordBatch::try_new_with_options(bound.clone(), columns, &rows(batch))
        .map_err(Error::arrow("reading a batch into the bound schema"))
}

/// `column` as a column of `field` (its bound type), or a schema error naming it.
fn read_as(column: &ArrayRef, field: &Field) -> Result<ArrayRef> {
    let from = column.data_type();
    let to = field.data_type();
    if from == to {
        return Ok(column.clone());
    }
    if from == &DataType::Null {
        return Ok(new_null_array(to, column.len()));
    }
    let plain = plain_type(from).unwrap_or_else(|| from.clone());
    // Same type up to decoding, or up to the names and metadata of nested fields (a list's
    // `item` against `element`).
    if plain.equals_datatype(to) {
        return decode(column, field);
    }
    Err(Error::schema(
        field.name(),
        format!("type {from} in this batch, {to} in earlier ones"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int32Type, Int8Type, UInt16Type};
    use arrow_array::{Array, DictionaryArray, Int64Array, NullArray, StringArray};
    use std::collections::HashMap;

    fn batch(fields: Vec<Field>, columns: Vec<ArrayRef>) -> RecordBatch {
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
    }

    /// A batch of the named columns, all nullable.
    fn table(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
        let fields = columns
            .iter()
            .map(|(name, c)| Field::new(*name, c.data_type().clone(), true))
            .collect();
        batch(fields, columns.into_iter().map(|(_, c)| c).collect())
    }

    fn k_ts(k: ArrayRef, ts: Vec<i64>) -> RecordBatch {
        table(vec![("k", k), ("ts", Arc::new(Int64Array::from(ts)))])
    }

    fn column_of(err: Error) -> String {
        match err {
            Error::Schema { column, .. } => column,
            other => panic!("not a schema error: {other}"),
        }
    }

    #[test]
    fn dictionaries_of_any_index_type_decode_to_their_values() {
        let d8: DictionaryArray<Int8Type> = vec!["a", "b", "a"].into_iter().collect();
        let d16 = DictionaryArray::<UInt16Type>::try_new(
            vec![Some(0u16), None, Some(0)].into(),
            Arc::new(Int64Array::from(vec![1])),
        )
        .unwrap();
        let b = table(vec![("k", Arc::new(d8)), ("v", Arc::new(d16))]);
        let plain = plain_batch(&b).unwrap();
        assert_eq!(plain.schema().field(0).data_type(), &DataType::Utf8);
        assert_eq!(plain.schema().field(1).data_type(), &DataType::Int64);
        let k = plain.column(0).as_string::<i32>();
        assert_eq!((k.value(0), k.value(1), k.value(2)), ("a", "b", "a"));
        assert!(plain.column(1).is_null(1));
    }

    #[test]
    fn dictionary_and_plain_batches_read_the_same() {
        let dict: DictionaryArray<Int32Type> = vec!["a"].into_iter().collect();
        let first = k_ts(Arc::new(dict), vec![0]);
        let bound = bound_schema(&first.schema()).unwrap();
        assert_eq!(bound.field(0).data_type(), &DataType::Utf8);
        let plain = conform(
            &bound,
            &k_ts(Arc::new(StringArray::from(vec!["b"])), vec![1]),
        );
        assert_eq!(plain.unwrap().schema(), bound);
        assert_eq!(conform(&bound, &first).unwrap().schema(), bound);
    }

    #[test]
    fn order_nullability_and_metadata_may_differ() {
        let first = batch(
            vec![
                Field::new("k", DataType::Utf8, false),
                Field::new("ts", DataType::Int64, false),
            ],
            vec![
                Arc::new(StringArray::from(vec!["a"])),
                Arc::new(Int64Array::from(vec![0])),
            ],
        );
        let bound = bound_schema(&first.schema()).unwrap();
        let meta = HashMap::from([("origin".to_string(), "kafka".to_string())]);
        let later = batch(
            vec![
                Field::new("ts", DataType::Int64, true).with_metadata(meta),
                Field::new("k", DataType::Utf8, true),
            ],
            vec![
                Arc::new(Int64Array::from(vec![Some(5), None])),
                Arc::new(StringArray::from(vec![None, Some("b")])),
            ],
        );
        let read = conform(&bound, &later).unwrap();
        assert_eq!(read.schema(), bound);
        assert_eq!(read.column(0).as_string::<i32>().value(1), "b");
        assert!(read.column(0).is_null(0));
        assert_eq!(
            read.column(1)
                .as_primitive::<arrow_array::types::Int64Type>()
                .value(0),
            5
        );
    }

    #[test]
    fn null_typed_columns_read_as_all_null_of_the_bound_type() {
        let first = k_ts(Arc::new(StringArray::from(vec!["a"])), vec![0]);
        let bound = bound_schema(&first.schema()).unwrap();
        let read = conform(&bound, &k_ts(Arc::new(NullArray::new(2)), vec![1, 2])).unwrap();
        assert_eq!(read.column(0).data_type(), &DataType::Utf8);
        assert_eq!(read.column(0).null_count(), 2);
    }

    #[test]
    fn every_other_difference_names_its_column() {
        let first = k_ts(Arc::new(StringArray::from(vec!["a"])), vec![0]);
        let bound = bound_schema(&first.schema()).unwrap();
        let retyped = k_ts(Arc::new(Int64Array::from(vec![1])), vec![0]);
        assert_eq!(column_of(conform(&bound, &retyped).unwrap_err()), "k");
        let only_ts = table(vec![("ts", Arc::new(Int64Array::from(vec![0])))]);
        assert_eq!(column_of(conform(&bound, &only_ts).unwrap_err()), "k");
        let extra = table(vec![
            ("k", Arc::new(StringArray::from(vec!["a"]))),
            ("ts", Arc::new(Int64Array::from(vec![0]))),
            ("x", Arc::new(Int64Array::from(vec![0]))),
        ]);
        assert_eq!(column_of(conform(&bound, &extra).unwrap_err()), "x");
    }

    #[test]
    fn views_nested_in_lists_structs_and_maps_decode_too() {
        use arrow_array::builder::{ListBuilder, StringViewBuilder};
        let mut views = ListBuilder::new(StringViewBuilder::new());
        views.values().append_value("x");
        views.append(true);
        let first = table(vec![("tags", Arc::new(views.finish()) as ArrayRef)]);
        let bound = bound_schema(&first.schema()).unwrap();
        let plain_list = DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)));
        assert_eq!(bound.field(0).data_type(), &plain_list);
        let read = conform(&bound, &first).unwrap();
        assert_eq!(read.column(0).data_type(), &plain_list);
        let view = |name: &str| Arc::new(Field::new(name, DataType::Utf8View, true));
        let entries = Field::new(
            "entries",
            DataType::Struct(vec![view("key"), view("value")].into()),
            false,
        );
        let map = DataType::Map(Arc::new(entries), false);
        let plain = plain_type(&DataType::Struct(vec![view("a")].into())).unwrap();
        assert_eq!(
            plain,
            DataType::Struct(vec![Arc::new(Field::new("a", DataType::Utf8, true))].into())
        );
        assert!(!format!("{:?}", plain_type(&map).unwrap()).contains("View"));
        assert_eq!(
            plain_type(&DataType::List(Arc::new(Field::new(
                "i",
                DataType::Int64,
                true
            )))),
            None
        );
    }

    #[test]
    fn duplicate_column_names_are_refused_naming_them() {
        let twice = table(vec![
            ("k", Arc::new(StringArray::from(vec!["a"]))),
            ("ts", Arc::new(Int64Array::from(vec![0]))),
            ("k", Arc::new(StringArray::from(vec!["b"]))),
        ]);
        assert_eq!(column_of(bound_schema(&twice.schema()).unwrap_err()), "k");
        let first = k_ts(Arc::new(StringArray::from(vec!["a"])), vec![0]);
        let bound = bound_schema(&first.schema()).unwrap();
        assert_eq!(column_of(conform(&bound, &twice).unwrap_err()), "k");
    }
}
