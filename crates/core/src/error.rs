use std::borrow::Cow;
use thiserror::Error;

/// A value outside what is accepted: the one validation error of every Kestrel crate.
///
/// Each library crate's error type wraps it (`XError::Invalid(Invalid)`), so the message
/// reads the same everywhere: `invalid FIELD = VALUE: ACCEPTED`. `field` names the parameter
/// (a config key or argument), `value` is the rejected value as the user wrote it or as
/// rendered, and `accepted` says what would be accepted.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("invalid {field} = {value}: {accepted}")]
pub struct Invalid {
    /// The parameter name.
    pub field: Cow<'static, str>,
    /// The value given, rendered.
    pub value: String,
    /// What is accepted.
    pub accepted: Cow<'static, str>,
}

impl Invalid {
    /// An error for `field = value`, stating what is `accepted`.
    pub fn new(
        field: impl Into<Cow<'static, str>>,
        value: impl ToString,
        accepted: impl Into<Cow<'static, str>>,
    ) -> Self {
        Invalid { field: field.into(), value: value.to_string(), accepted: accepted.into() }
    }
}

/// Errors returned by `kestrel-core` at construction boundaries.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum CoreError {
    /// A batch or buffer had the wrong length.
    #[error("{what}: expected length {expected}, got {got}")]
    Length {
        /// Which buffer.
        what: &'static str,
        /// Length required.
        expected: usize,
        /// Length given.
        got: usize,
    },
    /// A size parameter was zero or out of range.
    #[error(transparent)]
    Invalid(#[from] Invalid),
}

/// The most bytes one buffer, state or population may ask for (8 GiB, a third of this
/// project's machines): sizes past it are refused with the estimate before anything is
/// allocated, never left to abort the process.
pub const MAX_BYTES: u128 = 8 << 30;

/// Checks that `count` elements of `elem_bytes` bytes each fit [`MAX_BYTES`]; the error names
/// `field`, its `value` and the estimate.
pub fn check_bytes(
    field: impl Into<Cow<'static, str>>,
    value: impl ToString,
    count: u128,
    elem_bytes: u128,
) -> Result<(), Invalid> {
    let bytes = count.saturating_mul(elem_bytes);
    if bytes > MAX_BYTES {
        return Err(Invalid::new(
            field,
            value,
            format!(
                "a size whose memory fits: this needs about {:.1} GiB, the limit is {} GiB",
                bytes as f64 / (1u64 << 30) as f64,
                MAX_BYTES >> 30
            ),
        ));
    }
    Ok(())
}

/// Checks that `value` is finite and in `[lo, hi]`; the error names `field` and the value and
/// says `a finite number in [lo, hi]` (the config checks' one range rule).
pub fn check_finite(
    field: impl Into<Cow<'static, str>>,
    value: f64,
    lo: f64,
    hi: f64,
) -> Result<(), Invalid> {
    if value.is_finite() && value >= lo && value <= hi {
        Ok(())
    } else {
        Err(Invalid::new(field, value, format!("a finite number in [{lo}, {hi}]")))
    }
}

/// `XError::invalid(field, value, accepted)` for every error type that wraps [`Invalid`]
/// (each crate's error has `Invalid(#[from] Invalid)`), written once here.
pub trait FromInvalid: From<Invalid> {
    /// The error for `field = value`, stating what is `accepted`.
    fn invalid(
        field: impl Into<Cow<'static, str>>,
        value: impl ToString,
        accepted: impl Into<Cow<'static, str>>,
    ) -> Self {
        Invalid::new(field, value, accepted).into()
    }
}

impl<E: From<Invalid>> FromInvalid for E {}
