//! The input boundary in every engine (both streaming processors, both complete modes, the
//! map-side partials): dictionary-encoded columns, integer time columns of every width and
//! sign, batches whose schema differs in ways that do not matter, null-typed columns,
//! duplicate column names and duration gaps beyond the tick range.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, DurationSecondArray, Int64Array, NullArray, RecordBatch, StringArray,
    TimestampNanosecondArray, UInt64Array,
};
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use windowstore_core::agg::{AggSpec, Overflow};
use windowstore_core::emit::EmitMode;
use windowstore_core::input::InputSpec;
use windowstore_core::reject::OnInvalid;
use windowstore_core::session::partial::{merge_session_partials, session_partials};
use windowstore_core::session::{session_windows, GapSpec, SessionProcessor, SessionSpec};
use windowstore_core::sliding::{sliding_windows, SlidingProcessor, SlidingSpec};
use windowstore_core::time::Duration;
use windowstore_core::Error;

/// Every engine, as a function of its input batches.
#[derive(Debug, Clone, Copy)]
enum Engine {
    SessionStream,
    SlidingStream,
    SessionComplete,
    SlidingComplete,
    SessionPartials,
}

const ENGINES: [Engine; 5] = [
    Engine::SessionStream,
    Engine::SlidingStream,
    Engine::SessionComplete,
    Engine::SlidingComplete,
    Engine::SessionPartials,
];

/// What an engine gave: the windows and the rejected rows.
struct Run {
    windows: RecordBatch,
    rejected: RecordBatch,
    gap_clamped: u64,
}

fn input(gap: Option<&str>) -> InputSpec {
    InputSpec {
        key: vec!["k".into()],
        time: "ts".into(),
        time_unit: None,
        gap: gap.map(String::from),
        markers: Default::default(),
    }
}

fn concat(schema: &SchemaRef, batches: &[RecordBatch]) -> RecordBatch {
    arrow_select::concat::concat_batches(schema, batches).unwrap()
}

/// Runs `engine` over `batches` (gap or time difference 10, grace 0, final windows), each batch
/// one call of a streaming processor.
fn run(engine: Engine, batches: &[RecordBatch], aggs: &[AggSpec]) -> Result<Run, Error> {
    run_with(engine, batches, aggs, GapSpec::Fixed(Duration::Ticks(10)))
}

fn run_with(
    engine: Engine,
    batches: &[RecordBatch],
    aggs: &[AggSpec],
    gap: GapSpec,
) -> Result<Run, Error> {
    let schema = batches[0].schema();
    let aggs = aggs.to_vec();
    let gap_column = match &gap {
        GapSpec::Column { column, .. } => Some(column.clone()),
        GapSpec::Fixed(_) => None,
    };
    let d = Duration::Ticks(10);
    match engine {
        Engine::SessionStream | Engine::SlidingStream => {
            let mut out = Vec::new();
            let (schema, rejected, gap_clamped) = if let Engine::SessionStream = engine {
                let spec = SessionSpec {
                    gap,
                    grace: Duration::Ticks(0),
                    retention: None,
                    emit: EmitMode::Final,
                    on_invalid: OnInvalid::Drop,
                };
                let mut p = SessionProcessor::new(spec, input(gap_column.as_deref()), aggs)?;
                for b in batches {
                    out.push(p.process(b)?);
                }
                out.extend(p.flush()?);
                let schema = p.output_schema().unwrap();
                (
                    schema,
                    p.rejected()?.unwrap(),
                    p.counters().kind.gap_clamped,
                )
            } else {
                let spec = SlidingSpec {
                    time_difference: d,
                    grace: Duration::Ticks(0),
                    emit: EmitMode::Final,
                    on_invalid: OnInvalid::Drop,
                };
                let mut p = SlidingProcessor::new(spec, input(None), aggs)?;
                for b in batches {
                    out.push(p.process(b)?);
                }
                out.extend(p.flush()?);
                (p.output_schema().unwrap(), p.rejected()?.unwrap(), 0)
            };
            Ok(Run {
                windows: concat(&schema, &out),
                rejected,
                gap_clamped,
            })
        }
        Engine::SessionComplete => {
            let (spec, no_cap) = (input(None), None);
            let c = session_windows(schema, batches, spec, gap, no_cap, aggs, OnInvalid::Drop)?;
            Ok(Run {
                windows: c.windows,
                rejected: c.rejected,
                gap_clamped: c.gap_clamped,
            })
        }
        Engine::SlidingComplete => {
            let c = sliding_windows(schema, batches, input(None), d, aggs, OnInvalid::Drop)?;
            Ok(Run {
                windows: c.windows,
                rejected: c.rejected,
                gap_clamped: 0,
            })
        }
        Engine::SessionPartials => {
            // Each batch is one part; the partials of all parts are merged.
            let mut partials = Vec::new();
            let mut rejected = Vec::new();
            let mut gap_clamped = 0;
            for b in batches {
                let p = session_partials(
                    schema.clone(),
                    std::slice::from_ref(b),
                    input(None),
                    gap.clone(),
                    aggs.clone(),
                    OnInvalid::Drop,
                )?;
                partials.push(p.partials);
                rejected.push(p.rejected);
                gap_clamped += p.gap_clamped;
            }
            let windows = merge_session_partials(
                &schema,
                partials[0].schema(),
                &partials,
                vec!["k".into()],
                aggs,
            )?;
            Ok(Run {
                windows,
                rejected: concat(&rejected[0].schema(), &rejected),
                gap_clamped,
            })
        }
    }
}

/// A batch's rows rendered as text, sorted: equal data compares equal whatever the encoding.
fn rendered(batch: &RecordBatch) -> Vec<Vec<String>> {
    let options = FormatOptions::default().with_null("null");
    let formatters: Vec<_> = batch
        .columns()
        .iter()
        .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).unwrap())
        .collect();
    let mut rows: Vec<Vec<String>> = (0..batch.num_rows())
        .map(|r| formatters.iter().map(|f| f.value(r).to_string()).collect())
        .collect();
    rows.sort();
    rows
}

fn types(batch: &RecordBatch) -> Vec<(String, DataType)> {
    batch
        .schema()
        .fields()
        .iter()
        .map(|f| (f.name().clone(), f.data_type().clone()))
        .collect()
}

fn table(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    RecordBatch::try_from_iter(columns).unwrap()
}

fn cast(array: &dyn Array, to: &DataType) -> ArrayRef {
    arrow_cast::cast(array, to).unwrap()
}

fn dictionary(index: &DataType, values: &DataType) -> DataType {
    DataType::Dictionary(Box::new(index.clone()), Box::new(values.clone()))
}

/// The integer types: of dictionary indices, and of integer time columns.
const INTEGER_TYPES: [DataType; 8] = [
    DataType::Int8,
    DataType::Int16,
    DataType::Int32,
    DataType::Int64,
    DataType::UInt8,
    DataType::UInt16,
    DataType::UInt32,
    DataType::UInt64,
];

/// The repro, one batch per key: `a` at 0, then `b` at 100, which closes `a`'s windows.
fn two_keys(key_type: &DataType, encode: [bool; 2]) -> Vec<RecordBatch> {
    let keys: [ArrayRef; 2] = [
        Arc::new(StringArray::from(vec!["1"])),
        Arc::new(StringArray::from(vec!["2"])),
    ];
    keys.iter()
        .zip([0, 100])
        .zip(encode)
        .map(|((k, ts), encode)| {
            let k = cast(k.as_ref(), key_type);
            let k = match encode {
                true => cast(k.as_ref(), &dictionary(&DataType::Int32, key_type)),
                false => k,
            };
            table(vec![("k", k), ("ts", Arc::new(Int64Array::from(vec![ts])))])
        })
        .collect()
}

#[test]
fn dictionary_keys_of_every_index_and_value_type_work_in_every_engine() {
    for values in [
        DataType::Utf8,
        DataType::LargeUtf8,
        DataType::Binary,
        DataType::Int64,
    ] {
        for engine in ENGINES {
            let plain = run(
                engine,
                &two_keys(&values, [false, false]),
                &[AggSpec::count()],
            )
            .unwrap()
            .windows;
            for index in &INTEGER_TYPES {
                let batches: Vec<RecordBatch> = two_keys(&values, [false, false])
                    .iter()
                    .map(|b| {
                        let k = cast(b.column(0).as_ref(), &dictionary(index, &values));
                        table(vec![("k", k), ("ts", b.column(1).clone())])
                    })
                    .collect();
                let got = run(engine, &batches, &[AggSpec::count()])
                    .unwrap_or_else(|e| panic!("{engine:?} {index} {values}: {e}"))
                    .windows;
                assert_eq!(got.schema().field(0).data_type(), &values, "{engine:?}");
                assert_eq!(
                    rendered(&got),
                    rendered(&plain),
                    "{engine:?} {index} {values}"
                );
            }
        }
    }
}

#[test]
fn dictionary_and_plain_batches_mix_as_one_input() {
    for engine in ENGINES {
        let plain = run(engine, &two_keys(&DataType::Utf8, [false, false]), &[]).unwrap();
        for encode in [[true, false], [false, true], [true, true]] {
            let got = run(engine, &two_keys(&DataType::Utf8, encode), &[])
                .unwrap_or_else(|e| panic!("{engine:?} {encode:?}: {e}"));
            assert_eq!(types(&got.windows), types(&plain.windows), "{engine:?}");
            assert_eq!(rendered(&got.windows), rendered(&plain.windows));
        }
    }
}

#[test]
fn dictionary_value_columns_aggregate_as_their_values() {
    let batch = |encode: bool| {
        let s: ArrayRef = Arc::new(StringArray::from(vec![
            Some("x"),
            None,
            Some("w"),
            Some("z"),
        ]));
        let n: ArrayRef = Arc::new(Int64Array::from(vec![Some(4), Some(1), None, Some(7)]));
        let (s, n) = match encode {
            true => (
                cast(s.as_ref(), &dictionary(&DataType::UInt8, &DataType::Utf8)),
                cast(n.as_ref(), &dictionary(&DataType::Int16, &DataType::Int64)),
            ),
            false => (s, n),
        };
        table(vec![
            ("k", Arc::new(StringArray::from(vec!["a", "a", "a", "b"]))),
            ("ts", Arc::new(Int64Array::from(vec![0, 2, 4, 1]))),
            ("s", s),
            ("n", n),
        ])
    };
    let aggs = [
        AggSpec::min("s"),
        AggSpec::max("s"),
        AggSpec::first("s"),
        AggSpec::last("s"),
        AggSpec::collect("s", None, Overflow::DropOldest),
        AggSpec::sum("n"),
        AggSpec::mean("n"),
        AggSpec::min("n"),
        AggSpec::collect("n", Some(2), Overflow::DropOldest),
    ];
    for engine in ENGINES {
        let plain = run(engine, &[batch(false)], &aggs).unwrap().windows;
        let got = run(engine, &[batch(true)], &aggs)
            .unwrap_or_else(|e| panic!("{engine:?}: {e}"))
            .windows;
        assert_eq!(types(&got), types(&plain), "{engine:?}");
        assert_eq!(rendered(&got), rendered(&plain), "{engine:?}");
        let min_s = got.column_by_name("min_s").unwrap();
        assert_eq!(min_s.data_type(), &DataType::Utf8);
        assert_eq!(
            got.column_by_name("sum_n").unwrap().data_type(),
            &DataType::Int64
        );
    }
    // The values themselves, once: key a holds x, null, w in time order.
    let got = run(Engine::SessionComplete, &[batch(true)], &aggs).unwrap();
    let row = rendered(&got.windows)[0].clone();
    assert_eq!(row[0], "a");
    assert_eq!(&row[3..7], ["w", "x", "x", "w"]);
    assert_eq!(row[7], "[x, w]");
    assert_eq!(row[8], "5");
}

/// Times near both ends of `t`'s range (within ±1,000,000 for the wide types).
fn extremes(t: &DataType) -> Vec<i64> {
    let (lo, hi): (i64, i64) = match t {
        DataType::Int8 => (i8::MIN.into(), i8::MAX.into()),
        DataType::Int16 => (i16::MIN.into(), i16::MAX.into()),
        DataType::UInt8 => (0, u8::MAX.into()),
        DataType::UInt16 => (0, u16::MAX.into()),
        DataType::UInt32 | DataType::UInt64 => (0, 1_000_000),
        _ => (-1_000_000, 1_000_000),
    };
    vec![lo, lo + 3, hi - 5, hi]
}

#[test]
fn integer_time_columns_of_every_type_give_int64_bounds_in_every_engine() {
    for t in &INTEGER_TYPES {
        let times = extremes(t);
        // One record per batch (per call of a streaming processor), in time order.
        let batches = |time_type: &DataType| -> Vec<RecordBatch> {
            times
                .iter()
                .map(|&ts| {
                    table(vec![
                        ("k", Arc::new(StringArray::from(vec!["a"]))),
                        ("ts", cast(&Int64Array::from(vec![ts]), time_type)),
                    ])
                })
                .collect()
        };
        for engine in ENGINES {
            let reference = run(engine, &batches(&DataType::Int64), &[AggSpec::count()])
                .unwrap()
                .windows;
            let got = run(engine, &batches(t), &[AggSpec::count()])
                .unwrap_or_else(|e| panic!("{engine:?} {t}: {e}"));
            assert_eq!(got.rejected.num_rows(), 0, "{engine:?} {t}");
            assert_eq!(types(&got.windows), types(&reference), "{engine:?} {t}");
            assert_eq!(
                rendered(&got.windows),
                rendered(&reference),
                "{engine:?} {t}"
            );
            let start = got.windows.schema().field(1).data_type().clone();
            assert_eq!(start, DataType::Int64, "{engine:?} {t}");
        }
    }
    // The sliding bounds that leave uint8: [-10, 0] and [251, 261] around 0 and 250.
    let b = table(vec![
        ("k", Arc::new(StringArray::from(vec!["a", "a", "a"]))),
        (
            "ts",
            Arc::new(arrow_array::UInt8Array::from(vec![0, 250, 255])),
        ),
    ]);
    let got = run(Engine::SlidingComplete, &[b], &[AggSpec::count()]).unwrap();
    let bounds: Vec<(String, String)> = rendered(&got.windows)
        .into_iter()
        .map(|r| (r[1].clone(), r[2].clone()))
        .collect();
    assert!(bounds.contains(&("-10".into(), "0".into())), "{bounds:?}");
    assert!(bounds.contains(&("251".into(), "261".into())), "{bounds:?}");
}

#[test]
fn uint64_times_beyond_i64_are_rejected_as_time_overflow_not_wrapped() {
    let b = table(vec![
        ("k", Arc::new(StringArray::from(vec!["a", "a", "a"]))),
        (
            "ts",
            Arc::new(UInt64Array::from(vec![5, u64::MAX, i64::MAX as u64 + 1])),
        ),
    ]);
    for engine in ENGINES {
        let got = run(engine, std::slice::from_ref(&b), &[AggSpec::count()])
            .unwrap_or_else(|e| panic!("{engine:?}: {e}"));
        let rejected = rendered(&got.rejected);
        assert_eq!(rejected.len(), 2, "{engine:?}");
        assert!(
            rejected
                .iter()
                .all(|r| r.last().unwrap() == "time_overflow"),
            "{engine:?}: {rejected:?}"
        );
        let windows = rendered(&got.windows);
        assert!(!windows.is_empty());
        assert!(
            windows.iter().all(|w| w[1].parse::<i64>().unwrap() <= 16),
            "{windows:?}"
        );
    }
}

fn k_ts_v(fields: [(&str, bool); 3], rows: (Vec<&str>, Vec<i64>, Vec<Option<i64>>)) -> RecordBatch {
    let (k, ts, v) = rows;
    let mut columns: HashMap<&str, ArrayRef> = HashMap::from([
        ("k", Arc::new(StringArray::from(k)) as ArrayRef),
        ("ts", Arc::new(Int64Array::from(ts)) as ArrayRef),
        ("v", Arc::new(Int64Array::from(v)) as ArrayRef),
    ]);
    let schema = Schema::new(
        fields
            .iter()
            .map(|&(name, nullable)| {
                let meta = HashMap::from([("from".to_string(), format!("{name}{nullable}"))]);
                Field::new(name, columns[name].data_type().clone(), nullable).with_metadata(meta)
            })
            .collect::<Vec<_>>(),
    );
    let columns = fields
        .iter()
        .map(|(n, _)| columns.remove(n).unwrap())
        .collect();
    RecordBatch::try_new(Arc::new(schema), columns).unwrap()
}

/// One record (a, 0, 1) of columns `k`, `ts` and `v`, each of them `nullable` or not.
fn one_record(nullable: bool) -> RecordBatch {
    k_ts_v(
        [("k", nullable), ("ts", nullable), ("v", nullable)],
        (vec!["a"], vec![0], vec![Some(1)]),
    )
}

/// Runs `engine` over `batches`, asserting its windows are those it gives over `like`.
fn run_like(
    engine: Engine,
    batches: &[RecordBatch],
    like: &[RecordBatch],
    aggs: &[AggSpec],
) -> Run {
    let expected = run(engine, like, aggs).unwrap();
    let got = run(engine, batches, aggs).unwrap_or_else(|e| panic!("{engine:?}: {e}"));
    assert_eq!(
        rendered(&got.windows),
        rendered(&expected.windows),
        "{engine:?}"
    );
    got
}

#[test]
fn column_order_nullability_and_metadata_may_change_between_batches() {
    let aggs = [AggSpec::count(), AggSpec::sum("v")];
    let first = one_record(false);
    let later = k_ts_v(
        [("v", true), ("k", true), ("ts", true)],
        (vec!["a", "b"], vec![3, 100], vec![None, Some(2)]),
    );
    let same = k_ts_v(
        [("k", true), ("ts", true), ("v", true)],
        (vec!["a", "b"], vec![3, 100], vec![None, Some(2)]),
    );
    for engine in ENGINES {
        let got = run_like(
            engine,
            &[first.clone(), later.clone()],
            &[first.clone(), same.clone()],
            &aggs,
        );
        assert!(got.windows.num_rows() >= 2, "{engine:?}");
    }
    // A null key in a batch whose key column is nullable, after a non-nullable one: the row is
    // rejected and kept beside the first batch's columns.
    let null_key = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("k", DataType::Utf8, true),
            Field::new("ts", DataType::Int64, true),
            Field::new("v", DataType::Int64, true),
        ])),
        vec![
            Arc::new(StringArray::from(vec![None::<&str>])),
            Arc::new(Int64Array::from(vec![1])),
            Arc::new(Int64Array::from(vec![1])),
        ],
    )
    .unwrap();
    for engine in ENGINES {
        let got = run(engine, &[first.clone(), null_key.clone()], &aggs).unwrap();
        assert_eq!(
            rendered(&got.rejected),
            vec![vec!["null", "1", "1", "null_key"]]
        );
    }
}

#[test]
fn null_typed_columns_read_as_all_null_of_the_bound_type() {
    let aggs = [AggSpec::count(), AggSpec::sum("v")];
    let first = one_record(true);
    let null_v = table(vec![
        ("k", Arc::new(StringArray::from(vec!["a", "b"]))),
        ("ts", Arc::new(Int64Array::from(vec![2, 100]))),
        ("v", Arc::new(NullArray::new(2))),
    ]);
    let typed_v = table(vec![
        ("k", Arc::new(StringArray::from(vec!["a", "b"]))),
        ("ts", Arc::new(Int64Array::from(vec![2, 100]))),
        ("v", Arc::new(Int64Array::from(vec![None, None]))),
    ]);
    let null_k = table(vec![
        ("k", Arc::new(NullArray::new(1))),
        ("ts", Arc::new(Int64Array::from(vec![200]))),
        ("v", Arc::new(Int64Array::from(vec![5]))),
    ]);
    for engine in ENGINES {
        let batches = [first.clone(), null_v.clone(), null_k.clone()];
        let got = run_like(engine, &batches, &[first.clone(), typed_v.clone()], &aggs);
        assert_eq!(
            rendered(&got.rejected),
            vec![vec!["null", "200", "5", "null_key"]]
        );
        assert_eq!(got.rejected.schema().field(0).data_type(), &DataType::Utf8);
    }
    // Sessions, by value: a holds 1 and a null, b only a null.
    let got = run(Engine::SessionComplete, &[first, null_v], &aggs).unwrap();
    let rows: Vec<Vec<String>> = rendered(&got.windows);
    assert_eq!(rows[0][3..], ["2", "1"]);
    assert_eq!(rows[1][3..], ["1", "null"]);
}

#[test]
fn duplicate_column_names_are_refused_at_bind_in_every_engine() {
    let twice = table(vec![
        ("k", Arc::new(StringArray::from(vec!["a"]))),
        ("ts", Arc::new(Int64Array::from(vec![0]))),
        ("k", Arc::new(StringArray::from(vec!["b"]))),
    ]);
    for engine in ENGINES {
        match run(engine, std::slice::from_ref(&twice), &[AggSpec::count()]) {
            Err(Error::Schema { column, reason }) => {
                assert_eq!(column, "k", "{engine:?}");
                assert!(reason.contains("twice"), "{reason}");
            }
            Err(other) => panic!("{engine:?}: {other}"),
            Ok(_) => panic!("{engine:?}: accepted duplicate columns"),
        }
    }
    // And in a later batch of a stream.
    let first = table(vec![
        ("k", Arc::new(StringArray::from(vec!["a"]))),
        ("ts", Arc::new(Int64Array::from(vec![0]))),
    ]);
    for engine in [Engine::SessionStream, Engine::SlidingStream] {
        match run(engine, &[first.clone(), twice.clone()], &[]) {
            Err(Error::Schema { column, .. }) => assert_eq!(column, "k"),
            _ => panic!("{engine:?}: accepted duplicate columns"),
        }
    }
}

#[test]
fn duration_gaps_beyond_the_tick_range_are_clamped_to_max_gap() {
    // Nanosecond times, gaps in seconds: i64::MAX / 2 seconds has no i64 nanosecond count.
    const S: i64 = 1_000_000_000;
    let b = table(vec![
        ("k", Arc::new(StringArray::from(vec!["a", "a", "a"]))),
        (
            "ts",
            Arc::new(TimestampNanosecondArray::from(vec![0, 5 * S, 100 * S])),
        ),
        (
            "g",
            Arc::new(DurationSecondArray::from(vec![i64::MAX / 2, 1, 1])),
        ),
    ]);
    assert!(matches!(
        b.schema().field(1).data_type(),
        DataType::Timestamp(TimeUnit::Nanosecond, None)
    ));
    let gap = GapSpec::Column {
        column: "g".into(),
        // A length: a bare integer is refused on a timestamp column.
        max_gap: Duration::Nanos(10 * i128::from(S)),
    };
    for engine in [
        Engine::SessionStream,
        Engine::SessionComplete,
        Engine::SessionPartials,
    ] {
        let got = run_with(
            engine,
            std::slice::from_ref(&b),
            &[AggSpec::count()],
            gap.clone(),
        )
        .unwrap_or_else(|e| panic!("{engine:?}: {e}"));
        assert_eq!(got.rejected.num_rows(), 0, "{engine:?}");
        assert_eq!(got.gap_clamped, 1, "{engine:?}");
        // The clamped record at 0 reaches 10 s, so the record at 5 s joins it; 100 s is alone.
        let counts: Vec<String> = rendered(&got.windows)
            .iter()
            .map(|r| r[3].clone())
            .collect();
        assert_eq!(counts, vec!["2", "1"], "{engine:?}");
    }
}
