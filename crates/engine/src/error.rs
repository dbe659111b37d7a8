//! Errors: operations return the small `Copy` enum [`EngineError`]; construction returns a
//! [`ConfigError`] with a message. The engine's errors are about storage only; a caller
//! whose update closure can fail for its own reasons (a value that is not a number) returns
//! that reason as the closure's result ([`crate::Update::Done`]).

/// Why an operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineError {
    /// The item (key record + value) exceeds `max_item_size` or a segment, or the value
    /// exceeds `max_value_len`. Nothing was changed.
    TooLarge,
    /// The key is longer than 65535 bytes.
    KeyTooLong,
    /// No segment could be found: memory is too small for the number of writers.
    OutOfMemory,
    /// More worker handles than `max_participants`.
    TooManyWorkers,
    /// The key holds a value of another [`Kind`](crate::item::Kind) than the operation works
    /// on (Redis's `WRONGTYPE`). Nothing was changed.
    WrongKind,
    /// The write would add a key to a tenant that holds its `max_keys` keys
    /// ([`crate::TenantPolicy::max_keys`]). Nothing was changed.
    KeyLimit,
    /// The write would take a tenant past its `max_bytes`
    /// ([`crate::TenantPolicy::max_bytes`]). Nothing was changed.
    ByteLimit,
}

impl std::fmt::Display for EngineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EngineError::TooLarge => "object too large for cache",
            EngineError::KeyTooLong => "key too long",
            EngineError::OutOfMemory => "out of memory",
            EngineError::TooManyWorkers => "too many worker handles",
            EngineError::WrongKind => "the key holds a value of another kind",
            EngineError::KeyLimit => "the tenant holds its max_keys keys",
            EngineError::ByteLimit => "the write would take the tenant past its max_bytes",
        })
    }
}

impl std::error::Error for EngineError {}

/// A configuration problem, explained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}
