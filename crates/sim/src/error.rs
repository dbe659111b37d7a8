//! The simulator's error type. Everything here is control path (reading traces, building
//! caches, writing reports), so errors carry a message with context rather than a code.

use std::fmt;

/// What stopped a simulation.
#[derive(Debug)]
pub enum Error {
    /// Invalid settings (unknown policy, empty size list, …).
    Config(String),
    /// A trace could not be opened or read, or a generator could not be built.
    Input(String),
    /// A report or plot could not be written.
    Output(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(m) => write!(f, "invalid settings: {m}"),
            Self::Input(m) => write!(f, "input: {m}"),
            Self::Output(m) => write!(f, "output: {m}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<fridge_workload::Error> for Error {
    fn from(e: fridge_workload::Error) -> Self {
        Self::Input(e.to_string())
    }
}
