//! Helpers shared by the integration tests.

use windowstore_core::input::InputSpec;
use windowstore_core::KeyedSession;

/// A session copied out of the store: key, start, end, value.
pub type Row = (Vec<u8>, i64, i64, Vec<u8>);

/// Copies borrowed sessions into owned rows, for comparison after the store changes.
pub fn rows(sessions: &[KeyedSession<'_>]) -> Vec<Row> {
    sessions
        .iter()
        .map(|k| {
            (
                k.key.to_vec(),
                k.session.start,
                k.session.end,
                k.session.value.to_vec(),
            )
        })
        .collect()
}

/// The proptest configuration of a property: `PROPTEST_CASES` cases if set (the check runs
/// 10,000), else `default`.
pub fn cases(default: u32) -> proptest::prelude::ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(default);
    proptest::prelude::ProptestConfig {
        cases,
        ..proptest::prelude::ProptestConfig::default()
    }
}

/// The input of most tests: key column `k`, integer time column `t` in milliseconds.
pub fn input() -> InputSpec {
    InputSpec {
        key: vec!["k".into()],
        time: "t".into(),
        time_unit: None,
        gap: None,
    }
}
