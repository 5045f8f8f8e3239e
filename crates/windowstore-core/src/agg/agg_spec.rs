//! What the user asks for: [`AggSpec`] = an [`AggFunc`] over an optional column, with an alias.

/// What a bounded `collect` does when a window holds more than `max_size` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Overflow {
    /// Keep the newest `max_size` values by `(time, seq)`.
    DropOldest,
    /// Keep the oldest `max_size` values by `(time, seq)`.
    DropNewest,
    /// Fail with [`crate::Error::CollectOverflow`].
    Fail,
}

impl Overflow {
    /// The public (Python) spelling: `drop_oldest`, `drop_newest` or `fail`.
    pub fn name(self) -> &'static str {
        match self {
            Self::DropOldest => "drop_oldest",
            Self::DropNewest => "drop_newest",
            Self::Fail => "fail",
        }
    }

    /// Parses [`Overflow::name`]'s spellings.
    pub fn parse(name: &str) -> crate::Result<Self> {
        [Self::DropOldest, Self::DropNewest, Self::Fail]
            .into_iter()
            .find(|o| o.name() == name)
            .ok_or_else(|| {
                crate::Error::invalid(
                    "overflow",
                    format!("unknown strategy {name:?}; expected drop_oldest, drop_newest or fail"),
                )
            })
    }
}

/// An aggregation function of a window's records. All of them are mergeable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AggFunc {
    /// Number of records (rows, nulls included) → Int64.
    Count,
    /// Sum of the non-null values → Int64 (integer input), Float64 (floating input) or
    /// Decimal128(min(38, p + 10), s) (Decimal128(p, s) input).
    Sum,
    /// Smallest non-null value → the input type.
    Min,
    /// Largest non-null value → the input type.
    Max,
    /// Mean of the non-null values → Float64, or Decimal128(min(38, p + 4), min(38, s + 4))
    /// rounded half away from zero (Decimal128(p, s) input).
    Mean,
    /// Value of the non-null record with the smallest `(time, seq)` → the input type.
    First,
    /// Value of the non-null record with the largest `(time, seq)` → the input type.
    Last,
    /// Every record's value, nulls included, in `(time, seq)` order → List of the input type
    /// (one element per record: what a user-defined aggregate receives).
    CollectAll {
        /// At most this many values are kept (`None`: unbounded; `Some(0)` is refused).
        max_size: Option<usize>,
        /// What to do beyond `max_size`.
        overflow: Overflow,
    },
    /// The number of distinct non-null values (exact; floats with `-0.0 == 0.0` and one NaN)
    /// → Int64, 0 for a window without values.
    CountDistinct,
    /// The non-null values in `(time, seq)` order → List of the input type.
    Collect {
        /// At most this many values are kept (`None`: unbounded; `Some(0)` is refused).
        max_size: Option<usize>,
        /// What to do beyond `max_size`.
        overflow: Overflow,
    },
}

impl AggFunc {
    /// The function's public name, also the prefix of default output names.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Count => "count",
            Self::Sum => "sum",
            Self::Min => "min",
            Self::Max => "max",
            Self::Mean => "mean",
            Self::First => "first",
            Self::Last => "last",
            Self::CountDistinct => "count_distinct",
            Self::CollectAll { .. } => "collect_all",
            Self::Collect { .. } => "collect",
        }
    }

    /// The function named `name` ([`AggFunc::name`]); `max_size` and `overflow` go to `collect`.
    pub fn from_name(
        name: &str,
        max_size: Option<usize>,
        overflow: Overflow,
    ) -> crate::Result<Self> {
        Ok(match name {
            "count" => Self::Count,
            "sum" => Self::Sum,
            "min" => Self::Min,
            "max" => Self::Max,
            "mean" => Self::Mean,
            "first" => Self::First,
            "last" => Self::Last,
            "count_distinct" => Self::CountDistinct,
            "collect_all" => Self::CollectAll { max_size, overflow },
            "collect" => Self::Collect { max_size, overflow },
            other => {
                return Err(crate::Error::invalid(
                    "aggs",
                    format!("unknown aggregation {other:?}"),
                ))
            }
        })
    }
}

/// One requested aggregation: a function, its input column (`None` only for `Count`) and an
/// optional output name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AggSpec {
    /// The function.
    pub func: AggFunc,
    /// The input column; `None` for `Count`, `Some` for every other function.
    pub column: Option<String>,
    /// The output name; `None` for the default (`count`, `sum_<col>`, ...).
    pub alias: Option<String>,
}

/// The constructors of the functions that take one column and nothing else: `$name(column)`
/// is a spec of `AggFunc::$func` over `column`.
macro_rules! column_functions {
    ($($(#[$doc:meta])* $name:ident => $func:ident,)*) => {$(
        $(#[$doc])*
        pub fn $name(column: impl Into<String>) -> Self {
            Self::new(AggFunc::$func, Some(column.into()))
        }
    )*};
}

impl AggSpec {
    /// A spec of `func` over `column`, without alias.
    pub fn new(func: AggFunc, column: Option<String>) -> Self {
        Self {
            func,
            column,
            alias: None,
        }
    }

    /// `count`: the number of records.
    pub fn count() -> Self {
        Self::new(AggFunc::Count, None)
    }

    column_functions! {
        /// `sum(column)`.
        sum => Sum,
        /// `min(column)`.
        min => Min,
        /// `max(column)`.
        max => Max,
        /// `mean(column)`.
        mean => Mean,
        /// `first(column)`.
        first => First,
        /// `last(column)`.
        last => Last,
        /// `count_distinct(column)`.
        count_distinct => CountDistinct,
    }

    /// `collect_all(column, max_size, overflow)`: every record's value, nulls included.
    pub fn collect_all(
        column: impl Into<String>,
        max_size: Option<usize>,
        overflow: Overflow,
    ) -> Self {
        Self::new(
            AggFunc::CollectAll { max_size, overflow },
            Some(column.into()),
        )
    }

    /// `collect(column, max_size, overflow)`.
    pub fn collect(column: impl Into<String>, max_size: Option<usize>, overflow: Overflow) -> Self {
        Self::new(AggFunc::Collect { max_size, overflow }, Some(column.into()))
    }

    /// The same spec, output under `alias`.
    pub fn with_alias(mut self, alias: impl Into<String>) -> Self {
        self.alias = Some(alias.into());
        self
    }

    /// The output column name: the alias if any, else `count` or `<func>_<column>`.
    pub fn output_name(&self) -> String {
        if let Some(alias) = &self.alias {
            return alias.clone();
        }
        match (&self.func, &self.column) {
            (AggFunc::Count, _) | (_, None) => self.func.name().to_string(),
            (func, Some(column)) => format!("{}_{column}", func.name()),
        }
    }
}
