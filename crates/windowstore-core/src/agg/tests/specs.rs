//! Bad specs: the right error, naming the column or the parameter.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, TimeUnit};

use crate::agg::{AggFunc, AggSpec, Aggregator, Overflow};
use crate::Error;

fn schema() -> Schema {
    Schema::new(vec![
        Field::new("x", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
        Field::new(
            "ts",
            DataType::Timestamp(TimeUnit::Millisecond, Some(Arc::from("UTC"))),
            true,
        ),
        Field::new("wide", DataType::Decimal256(40, 2), true),
        Field::new(
            "list",
            DataType::List(Arc::new(Field::new_list_field(DataType::Int64, true))),
            true,
        ),
    ])
}

fn schema_error(specs: Vec<AggSpec>) -> (String, String) {
    match Aggregator::try_new(specs, &schema()) {
        Err(Error::Schema { column, reason }) => (column, reason),
        other => panic!("expected a schema error, got {other:?}"),
    }
}

fn spec_error(specs: Vec<AggSpec>) -> String {
    match Aggregator::try_new(specs, &schema()) {
        Err(Error::InvalidWindowSpec { parameter, reason }) => {
            assert_eq!(parameter, "aggs");
            reason
        }
        other => panic!("expected an aggs error, got {other:?}"),
    }
}

#[test]
fn missing_columns_name_the_column() {
    for spec in [
        AggSpec::sum("nope"),
        AggSpec::first("nope"),
        AggSpec::collect("nope", None, Overflow::Fail),
    ] {
        let (column, reason) = schema_error(vec![AggSpec::count(), spec]);
        assert_eq!(column, "nope");
        assert!(reason.contains("no such column"), "{reason}");
    }
}

#[test]
fn unsupported_types_name_the_type_found_and_the_types_accepted() {
    let (column, reason) = schema_error(vec![AggSpec::sum("s")]);
    assert_eq!(column, "s");
    assert!(
        reason.contains("Utf8") && reason.contains("cannot be summed"),
        "{reason}"
    );
    assert!(
        reason.contains("integer") && reason.contains("floating-point"),
        "{reason}"
    );
    let (column, reason) = schema_error(vec![AggSpec::mean("ts")]);
    assert_eq!(column, "ts");
    assert!(
        reason.contains("Timestamp") && reason.contains("mean takes"),
        "{reason}"
    );
    let (column, reason) = schema_error(vec![AggSpec::sum("ts")]);
    assert_eq!(column, "ts");
    assert!(reason.contains("sum takes"), "{reason}");
    for spec in [
        AggSpec::min("wide"),
        AggSpec::max("list"),
        AggSpec::first("wide"),
        AggSpec::last("list"),
        AggSpec::collect("wide", Some(2), Overflow::DropOldest),
    ] {
        let name = spec.func.name();
        let col = spec.column.clone().expect("column");
        let (column, reason) = schema_error(vec![spec]);
        assert_eq!(column, col);
        assert!(
            reason.contains(&format!("not supported by {name}")),
            "{reason}"
        );
        assert!(
            reason.contains("Decimal256") || reason.contains("List"),
            "{reason}"
        );
        assert!(
            reason.contains("Timestamp") && reason.contains("Utf8"),
            "{reason}"
        );
    }
}

#[test]
fn decimal256_is_refused_with_the_cast_to_make() {
    for spec in [
        AggSpec::sum("wide"),
        AggSpec::mean("wide"),
        AggSpec::max("wide"),
    ] {
        let (column, reason) = schema_error(vec![spec]);
        assert_eq!(column, "wide");
        assert!(
            reason.contains("Decimal256(40, 2)")
                && reason.contains("cast the column to Decimal128"),
            "{reason}"
        );
    }
}

#[test]
fn duplicate_output_names_are_refused() {
    let reason = spec_error(vec![
        AggSpec::sum("x"),
        AggSpec::max("x").with_alias("sum_x"),
    ]);
    assert!(
        reason.contains("duplicate output name \"sum_x\""),
        "{reason}"
    );
    let reason = spec_error(vec![AggSpec::count(), AggSpec::count()]);
    assert!(reason.contains("\"count\""), "{reason}");
    // An alias resolves a clash.
    let agg = Aggregator::try_new(
        vec![AggSpec::count(), AggSpec::count().with_alias("n")],
        &schema(),
    );
    assert_eq!(agg.expect("aliased").output_fields().len(), 2);
}

#[test]
fn column_presence_and_max_size_are_checked() {
    let reason = spec_error(vec![AggSpec::new(AggFunc::Count, Some("x".into()))]);
    assert!(reason.contains("count takes no column"), "{reason}");
    let reason = spec_error(vec![AggSpec::new(AggFunc::Max, None)]);
    assert!(reason.contains("max needs a column"), "{reason}");
    for overflow in [Overflow::DropOldest, Overflow::DropNewest, Overflow::Fail] {
        let reason = spec_error(vec![AggSpec::collect("x", Some(0), overflow)]);
        assert!(
            reason.contains("max_size") && reason.contains("collect(x)"),
            "{reason}"
        );
    }
    assert!(Aggregator::try_new(
        vec![AggSpec::collect("x", Some(1), Overflow::Fail)],
        &schema()
    )
    .is_ok());
    assert!(Aggregator::try_new(vec![], &schema())
        .expect("no specs")
        .is_empty());
}

#[test]
fn names_and_spellings() {
    assert_eq!(
        AggSpec::collect("v", None, Overflow::Fail).output_name(),
        "collect_v"
    );
    assert_eq!(AggSpec::mean("v").output_name(), "mean_v");
    assert_eq!(AggSpec::first("v").with_alias("a").output_name(), "a");
    assert_eq!(AggSpec::new(AggFunc::Sum, None).output_name(), "sum");
    assert_eq!(Overflow::DropOldest.name(), "drop_oldest");
    assert_eq!(Overflow::DropNewest.name(), "drop_newest");
    assert_eq!(Overflow::Fail.name(), "fail");
    fn assert_send_sync<T: Send + Sync + std::fmt::Debug>() {}
    assert_send_sync::<Aggregator>();
}
