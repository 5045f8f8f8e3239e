//! The marker columns of sessions that a record starts or ends: per-record flags read from
//! boolean columns (null is false).

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, Schema};

use super::column_index;
use crate::{Error, Result};

/// The flag of a record that starts a session (`starts_session`).
pub const STARTS: u8 = 1;
/// The flag of a record that ends a session (`ends_session`).
pub const ENDS: u8 = 2;

/// The columns, by name as the caller gives them, whose true values start or end a session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Markers {
    /// A record whose value is true starts a session: no earlier record shares it.
    pub starts: Option<String>,
    /// A record whose value is true ends a session: no later record shares it.
    pub ends: Option<String>,
}

impl Markers {
    /// Whether any marker column is named.
    pub fn any(&self) -> bool {
        self.starts.is_some() || self.ends.is_some()
    }
}

/// [`Markers`] bound to a schema: the columns' positions.
#[derive(Debug, Clone)]
pub struct MarkerColumns {
    columns: Vec<(usize, u8)>,
}

impl MarkerColumns {
    /// Binds the named columns of `schema`, each of which must be boolean; `None` if none is
    /// named.
    pub fn try_new(markers: &Markers, schema: &Schema) -> Result<Option<Self>> {
        let named = [
            (markers.starts.as_deref(), STARTS, "starts_session"),
            (markers.ends.as_deref(), ENDS, "ends_session"),
        ];
        let mut columns = Vec::new();
        for (name, flag, parameter) in named {
            let Some(name) = name else { continue };
            let index = column_index(schema, name)?;
            let t = schema.field(index).data_type();
            if *t != DataType::Boolean && *t != DataType::Null {
                return Err(Error::schema(
                    name,
                    format!(
                        "type {t} cannot be a {parameter} column; give a boolean column (true \
                         marks the record; null is false)"
                    ),
                ));
            }
            columns.push((index, flag));
        }
        Ok((!columns.is_empty()).then_some(Self { columns }))
    }

    /// Each row's flags ([`STARTS`], [`ENDS`]) of `batch` (of the bound schema).
    pub fn read(&self, batch: &RecordBatch) -> Vec<u8> {
        let mut flags = vec![0u8; batch.num_rows()];
        for &(index, flag) in &self.columns {
            let column = batch.column(index);
            let Some(values) = column.as_boolean_opt() else {
                continue; // an all-null column marks nothing
            };
            let nulls = values.logical_nulls();
            for (row, f) in flags.iter_mut().enumerate() {
                if values.value(row) && nulls.as_ref().is_none_or(|n| n.is_valid(row)) {
                    *f |= flag;
                }
            }
        }
        flags
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::BooleanArray;
    use arrow_schema::Field;
    use std::sync::Arc;

    #[test]
    fn true_marks_null_and_false_do_not() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("s", DataType::Boolean, true),
            Field::new("e", DataType::Boolean, true),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(BooleanArray::from(vec![Some(true), None, Some(false)])),
                Arc::new(BooleanArray::from(vec![Some(true), Some(true), None])),
            ],
        )
        .unwrap();
        let markers = Markers {
            starts: Some("s".into()),
            ends: Some("e".into()),
        };
        let bound = MarkerColumns::try_new(&markers, &schema).unwrap().unwrap();
        assert_eq!(bound.read(&batch), vec![STARTS | ENDS, ENDS, 0]);
    }

    #[test]
    fn a_column_of_another_type_is_refused_by_name() {
        let schema = Schema::new(vec![Field::new("login", DataType::Int64, true)]);
        let markers = Markers {
            starts: Some("login".into()),
            ends: None,
        };
        let err = MarkerColumns::try_new(&markers, &schema).unwrap_err();
        assert_eq!(
            err.to_string(),
            "column \"login\": type Int64 cannot be a starts_session column; give a boolean \
             column (true marks the record; null is false)"
        );
    }
}
