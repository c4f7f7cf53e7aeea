//! The error type of the `profile` command group and its exit codes.
//!
//! Every failure a user can cause maps to one of the group's codes (docs/spec.md §1.1):
//! `2` a path or argument that does not resolve, `3` a capture that produced
//! no profile, `1` anything that exists but cannot be read or analysed, `4`
//! a `compare --fail-on` gate that failed.

use std::fmt;

/// The group's exit codes, in one place.
pub mod exit {
    pub const OK: i32 = 0;
    pub const FAILURE: i32 = 1;
    pub const USAGE: i32 = 2;
    pub const NO_PROFILE: i32 = 3;
    /// `compare --fail-on`: a gate failed (a significant move past it).
    pub const GATE: i32 = 4;
}

#[derive(Debug)]
pub enum Error {
    /// A file that does not exist, or an argument that does not resolve
    /// (unknown field, phase, category, bad flag). Exit 2.
    Usage(String),
    /// `run` could not fill its window: no profile was written. Exit 3.
    NoProfile(String),
    /// A file that exists but cannot be parsed or analysed, or any other
    /// runtime failure. Exit 1.
    Failed(String),
    /// `compare --fail-on`: a gate failed. Exit 4.
    Gate(String),
}

impl Error {
    pub fn usage(msg: impl Into<String>) -> Self {
        Error::Usage(msg.into())
    }
    pub fn failed(msg: impl Into<String>) -> Self {
        Error::Failed(msg.into())
    }
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => exit::USAGE,
            Error::NoProfile(_) => exit::NO_PROFILE,
            Error::Failed(_) => exit::FAILURE,
            Error::Gate(_) => exit::GATE,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) | Error::NoProfile(m) | Error::Failed(m) | Error::Gate(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
