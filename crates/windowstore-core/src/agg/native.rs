//! Primitive natives as the aggregations see them: a total order, a state word, a sum term.
//!
//! The order of floats is IEEE `totalOrder` with every NaN mapped to the positive quiet NaN,
//! as Polars and Spark do: NaN is greater than every number (+inf included), all NaNs are equal,
//! and `-0.0 < +0.0`. Min and max emit NaN as the canonical `f64::NAN` / `f32::NAN`, so their
//! results do not depend on which NaN payload came first. Other functions keep values bit-exact.

use arrow_buffer::ArrowNativeType;

/// A primitive native type of an accepted column.
pub(crate) trait Num: ArrowNativeType {
    /// The total-order key of a value (see the module docs for floats).
    type Key: Ord + Copy;
    /// The least and the greatest key of the type.
    const KEY_MIN: Self::Key;
    const KEY_MAX: Self::Key;
    /// The total-order key of `self`.
    fn key(self) -> Self::Key;
    /// The canonical value of a key: `from_key(v.key()) == v.canon()` bit for bit.
    fn from_key(key: Self::Key) -> Self;
    /// `self`, with any NaN replaced by the canonical NaN.
    fn canon(self) -> Self;
    /// The value as a state word (see [`super::value_kind::Kind`]).
    fn to_word(self) -> u64;
    /// The value of a state word (truncating garbage words, never failing).
    fn from_word(word: u64) -> Self;
    /// The value as an exact integer sum term (integers only; floats truncate, unused).
    fn to_i128(self) -> i128;
    /// The value as a floating-point sum term.
    fn to_f64(self) -> f64;
}

/// A [`Num`] impl's key type `$key` and its bounds, the same for every type.
macro_rules! key_type {
    ($key:ty) => {
        type Key = $key;
        const KEY_MIN: $key = <$key>::MIN;
        const KEY_MAX: $key = <$key>::MAX;
    };
}

macro_rules! impl_int {
    ($($t:ty => $key:ty),*) => {$(
        impl Num for $t {
            key_type!($key);
            #[inline(always)]
            fn key(self) -> $key {
                self as $key
            }
            #[inline(always)]
            fn from_key(key: $key) -> Self {
                key as $t
            }
            #[inline(always)]
            fn canon(self) -> Self {
                self
            }
            #[inline(always)]
            fn to_word(self) -> u64 {
                self as $key as u64
            }
            #[inline(always)]
            fn from_word(word: u64) -> Self {
                word as $key as $t
            }
            #[inline(always)]
            fn to_i128(self) -> i128 {
                self as i128
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
        }
    )*};
}

impl_int!(i8 => i64, i16 => i64, i32 => i64, i64 => i64, u8 => u64, u16 => u64, u32 => u64, u64 => u64);

/// The better of two keys: the greater for `max` (`MAX`), the lesser for `min` (a conditional
/// move, where a compare-and-branch mispredicts on unordered data).
#[inline(always)]
pub(crate) fn better_key<K: Ord, const MAX: bool>(x: K, y: K) -> K {
    if MAX {
        x.max(y)
    } else {
        x.min(y)
    }
}

/// The flip between a float's bits (as a signed integer) and its total-order key, either way:
/// a negative value's bits below the sign are inverted.
macro_rules! flip {
    ($bits:expr, $key:ty, $ukey:ty) => {{
        let bits: $key = $bits;
        bits ^ (((bits >> (<$key>::BITS - 1)) as $ukey) >> 1) as $key
    }};
}

/// [`Num`] for the float types: keys in IEEE `totalOrder`, NaN canonical (see the module docs).
macro_rules! impl_float {
    ($($t:ident => $key:ty, $ukey:ty),*) => {$(
        impl Num for $t {
            key_type!($key);
            #[inline(always)]
            fn key(self) -> $key {
                flip!(self.canon().to_bits() as $key, $key, $ukey)
            }
            #[inline(always)]
            fn from_key(key: $key) -> Self {
                // The key's transform is its own inverse.
                $t::from_bits(flip!(key, $key, $ukey) as $ukey)
            }
            #[inline(always)]
            fn canon(self) -> Self {
                if self.is_nan() {
                    $t::NAN
                } else {
                    self
                }
            }
            #[inline(always)]
            fn to_word(self) -> u64 {
                u64::from(self.to_bits())
            }
            #[inline(always)]
            fn from_word(word: u64) -> Self {
                $t::from_bits(word as $ukey)
            }
            #[inline(always)]
            fn to_i128(self) -> i128 {
                self as i128
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                f64::from(self)
            }
        }
    )*};
}

impl_float!(f64 => i64, u64, f32 => i32, u32);

/// `$body` with `$T` naming the type `$ty` (what the dispatches below run per type).
macro_rules! typed {
    ($ty:ty, $T:ident, $body:expr) => {{
        type $T = $ty;
        $body
    }};
}

/// Runs `$body` with `$T` the `ArrowPrimitiveType` of a numeric data type (integers, floats);
/// evaluates `$other` for any other type.
macro_rules! dispatch_numeric {
    ($dt:expr, |$T:ident| $body:expr, _ => $other:expr) => {{
        use arrow_array::types as t;
        use arrow_schema::DataType as D;
        use $crate::agg::native::typed;
        arrow_array::downcast_integer! {
            $dt => ($crate::agg::native::typed, $T, $body),
            D::Float32 => typed!(t::Float32Type, $T, $body),
            D::Float64 => typed!(t::Float64Type, $T, $body),
            _ => $other,
        }
    }};
}

/// Runs `$body` with `$T` the `ArrowPrimitiveType` of a word-kind data type (integers,
/// floats, timestamps, dates, durations); evaluates `$other` for any other type.
macro_rules! dispatch_word {
    ($dt:expr, |$T:ident| $body:expr, _ => $other:expr) => {{
        // `t`, `D` and `typed` are dispatch_numeric's, in whose scope `$other` runs.
        use arrow_schema::TimeUnit as U;
        $crate::agg::native::dispatch_numeric!($dt, |$T| $body, _ => match $dt {
            D::Timestamp(U::Second, _) => typed!(t::TimestampSecondType, $T, $body),
            D::Timestamp(U::Millisecond, _) => typed!(t::TimestampMillisecondType, $T, $body),
            D::Timestamp(U::Microsecond, _) => typed!(t::TimestampMicrosecondType, $T, $body),
            D::Timestamp(U::Nanosecond, _) => typed!(t::TimestampNanosecondType, $T, $body),
            D::Date32 => typed!(t::Date32Type, $T, $body),
            D::Date64 => typed!(t::Date64Type, $T, $body),
            D::Duration(U::Second) => typed!(t::DurationSecondType, $T, $body),
            D::Duration(U::Millisecond) => typed!(t::DurationMillisecondType, $T, $body),
            D::Duration(U::Microsecond) => typed!(t::DurationMicrosecondType, $T, $body),
            D::Duration(U::Nanosecond) => typed!(t::DurationNanosecondType, $T, $body),
            _ => $other,
        })
    }};
}

pub(crate) use {dispatch_numeric, dispatch_word, typed};

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Min and max fold keys and emit `from_key`: it must give back the canonical value.
        #[test]
        fn a_key_gives_back_its_canonical_value(bits in any::<u64>(), int in any::<i64>()) {
            let x = f64::from_bits(bits);
            prop_assert_eq!(f64::from_key(x.key()).to_bits(), x.canon().to_bits());
            let y = f32::from_bits(bits as u32);
            prop_assert_eq!(f32::from_key(y.key()).to_bits(), y.canon().to_bits());
            prop_assert_eq!(i64::from_key(int.key()), int);
            prop_assert_eq!(i8::from_key((int as i8).key()), int as i8);
            prop_assert_eq!(u64::from_key((int as u64).key()), int as u64);
            prop_assert_eq!(u16::from_key((int as u16).key()), int as u16);
        }
    }

    #[test]
    fn keys_of_special_floats_round_trip() {
        for x in [
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -f64::NAN,
            f64::MIN_POSITIVE,
        ] {
            assert_eq!(f64::from_key(x.key()).to_bits(), x.canon().to_bits());
        }
    }
}
