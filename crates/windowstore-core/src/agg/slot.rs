//! A spec bound to an input schema: the checked column, its value kind and the output field.

use std::sync::Arc;

use arrow_schema::{DataType, Field, FieldRef, Schema};

use super::agg_spec::{AggFunc, AggSpec, Overflow};
use super::value_kind::{Kind, NUMERIC_TYPES, ORDERABLE_TYPES};
use crate::{Error, Result};

/// A function resolved against its input type: everything the state layout depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// `count`.
    Count,
    /// `sum` of a numeric kind.
    Sum(Kind),
    /// `mean` of a numeric kind.
    Mean(Kind),
    /// `min`.
    Min(Kind),
    /// `max`.
    Max(Kind),
    /// `first`.
    First(Kind),
    /// `last`.
    Last(Kind),
    /// `count_distinct`.
    CountDistinct(Kind),
    /// `collect`.
    Collect {
        /// The values' kind.
        kind: Kind,
        /// The bound, if any (at least 1).
        max_size: Option<usize>,
        /// What to do beyond the bound.
        overflow: Overflow,
        /// Whether nulls are kept (`collect_all`: one element per record) or skipped.
        nulls: bool,
    },
}

/// The value kind of a non-count op.
pub(crate) fn kind(op: &Op) -> Kind {
    match *op {
        Op::Sum(k) | Op::Mean(k) | Op::Min(k) | Op::Max(k) | Op::First(k) | Op::Last(k) => k,
        Op::CountDistinct(k) => k,
        Op::Collect { kind, .. } => kind,
        Op::Count => Kind::Bool,
    }
}

/// One compiled spec.
#[derive(Debug, Clone)]
pub(crate) struct Slot {
    /// The resolved function.
    pub(crate) op: Op,
    /// The input column's index in the schema (0 for `count`, which reads no column).
    pub(crate) index: usize,
    /// The input column's name (empty for `count`).
    pub(crate) column: String,
    /// The input column's type (`Null` for `count`).
    pub(crate) data_type: DataType,
    /// The output field.
    pub(crate) field: FieldRef,
}

impl Slot {
    /// Checks `spec` against `schema` and resolves it.
    pub(crate) fn compile(spec: &AggSpec, schema: &Schema) -> Result<Self> {
        let name = spec.output_name();
        let Some(column) = checked_column(spec)? else {
            return Ok(Self::count(name));
        };
        let index = schema
            .index_of(column)
            .map_err(|_| Error::schema(column, "no such column in the input schema"))?;
        let data_type = schema.field(index).data_type().clone();
        let (op, out_type) = resolve(spec.func, column, &data_type)?;
        Ok(Self {
            op,
            index,
            column: column.clone(),
            data_type,
            field: Arc::new(Field::new(
                name,
                out_type,
                !matches!(op, Op::CountDistinct(_)),
            )),
        })
    }

    /// `count`, output as `name`: it reads no column.
    fn count(name: String) -> Self {
        Self {
            op: Op::Count,
            index: 0,
            column: String::new(),
            data_type: DataType::Null,
            field: Arc::new(Field::new(name, DataType::Int64, false)),
        }
    }
}

/// The input column `spec` names: `None` for `count`, which takes none; an error if `count` has
/// one, another function has none, or a `collect`'s `max_size` is 0.
fn checked_column(spec: &AggSpec) -> Result<Option<&String>> {
    let func = spec.func;
    let column = match (func, &spec.column) {
        (AggFunc::Count, None) => return Ok(None),
        (AggFunc::Count, Some(column)) => {
            return Err(Error::invalid(
                "aggs",
                format!("count takes no column (it counts records), got column {column:?}"),
            ))
        }
        (_, None) => {
            return Err(Error::invalid(
                "aggs",
                format!("{} needs a column", func.name()),
            ))
        }
        (_, Some(column)) => column,
    };
    if let AggFunc::Collect {
        max_size: Some(0), ..
    }
    | AggFunc::CollectAll {
        max_size: Some(0), ..
    } = func
    {
        return Err(Error::invalid(
            "aggs",
            format!("collect({column}): max_size must be at least 1, got 0"),
        ));
    }
    Ok(Some(column))
}

/// `func` over `column` of type `data_type`: its `Op` and its output type; an error if the
/// function does not take the type.
fn resolve(func: AggFunc, column: &str, data_type: &DataType) -> Result<(Op, DataType)> {
    let numeric = || numeric_kind(func, column, data_type);
    let orderable = || orderable_kind(func, column, data_type);
    Ok(match func {
        AggFunc::Count => (Op::Count, DataType::Int64), // a count has no column: never here
        AggFunc::Sum => {
            let kind = numeric()?;
            let out = match kind {
                Kind::Dec128 => super::decimal_type::sum_type(data_type),
                k if k.is_integer() => DataType::Int64,
                _ => DataType::Float64,
            };
            (Op::Sum(kind), out)
        }
        AggFunc::Mean => {
            let kind = numeric()?;
            let out = match kind {
                Kind::Dec128 => super::decimal_type::mean_type(data_type),
                _ => DataType::Float64,
            };
            (Op::Mean(kind), out)
        }
        AggFunc::Min => (Op::Min(orderable()?), data_type.clone()),
        AggFunc::Max => (Op::Max(orderable()?), data_type.clone()),
        AggFunc::First => (Op::First(orderable()?), data_type.clone()),
        AggFunc::Last => (Op::Last(orderable()?), data_type.clone()),
        AggFunc::CountDistinct => (Op::CountDistinct(orderable()?), DataType::Int64),
        AggFunc::Collect { max_size, overflow } | AggFunc::CollectAll { max_size, overflow } => (
            Op::Collect {
                kind: orderable()?,
                max_size,
                overflow,
                nulls: matches!(func, AggFunc::CollectAll { .. }),
            },
            DataType::List(Arc::new(Field::new_list_field(data_type.clone(), true))),
        ),
    })
}

/// The numeric kind of `data_type` for `func` (`sum` or `mean`); an error naming the types it
/// takes if there is none.
fn numeric_kind(func: AggFunc, column: &str, data_type: &DataType) -> Result<Kind> {
    Kind::of_numeric(data_type).ok_or_else(|| {
        let what = match func {
            AggFunc::Sum => "cannot be summed",
            _ => "has no mean",
        };
        Error::schema(
            column,
            format!(
                "type {data_type} {what}; {} takes {NUMERIC_TYPES}{}",
                func.name(),
                wide_decimal_hint(data_type)
            ),
        )
    })
}

/// The orderable kind of `data_type` for `func`; an error naming the types it takes if there
/// is none.
fn orderable_kind(func: AggFunc, column: &str, data_type: &DataType) -> Result<Kind> {
    Kind::of_orderable(data_type).ok_or_else(|| {
        Error::schema(
            column,
            format!(
                "type {data_type} is not supported by {0}; {0} takes {ORDERABLE_TYPES}{1}",
                func.name(),
                wide_decimal_hint(data_type)
            ),
        )
    })
}

/// For a Decimal256 column, how to aggregate it anyway (the aggregates take Decimal128).
fn wide_decimal_hint(data_type: &DataType) -> &'static str {
    match data_type {
        DataType::Decimal256(_, _) => {
            " (Decimal256 is not supported: cast the column to Decimal128, precision at most 38)"
        }
        _ => "",
    }
}
