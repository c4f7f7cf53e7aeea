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

/// What kind of failure an [`Error`] is: each kind is one exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A file that does not exist, or an argument that does not resolve
    /// (unknown field, phase, category, bad flag). Exit 2.
    Usage,
    /// `run` could not fill its window: no profile was written. Exit 3.
    NoProfile,
    /// A file that exists but cannot be parsed or analysed, or any other
    /// runtime failure. Exit 1.
    Failed,
    /// `compare --fail-on`: a gate failed. Exit 4.
    Gate,
}

impl Kind {
    pub fn exit_code(self) -> i32 {
        match self {
            Kind::Usage => exit::USAGE,
            Kind::NoProfile => exit::NO_PROFILE,
            Kind::Failed => exit::FAILURE,
            Kind::Gate => exit::GATE,
        }
    }
}

/// A failure: its [`Kind`] (the exit code), the message printed after
/// `error: `, and the error it comes from, if any.
///
/// The message is the whole text a user sees and already names the cause
/// (`cannot open x.json: Permission denied (os error 13)`; docs/spec.md
/// fixes these texts), so `Display` is the message alone. The cause is kept
/// as [`std::error::Error::source`] for code that wants it typed (an
/// `io::ErrorKind`, a serde position), not for printing again.
#[derive(Debug)]
pub struct Error {
    kind: Kind,
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl Error {
    pub fn new(kind: Kind, msg: impl Into<String>) -> Self {
        Error { kind, message: msg.into(), source: None }
    }
    pub fn usage(msg: impl Into<String>) -> Self {
        Error::new(Kind::Usage, msg)
    }
    pub fn failed(msg: impl Into<String>) -> Self {
        Error::new(Kind::Failed, msg)
    }
    pub fn no_profile(msg: impl Into<String>) -> Self {
        Error::new(Kind::NoProfile, msg)
    }
    pub fn gate(msg: impl Into<String>) -> Self {
        Error::new(Kind::Gate, msg)
    }
    /// This error, caused by `source` (kept for [`std::error::Error::source`];
    /// the message is unchanged).
    pub fn caused_by(
        mut self,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        self.source = Some(source.into());
        self
    }
    pub fn kind(&self) -> Kind {
        self.kind
    }
    /// The text printed after `error: ` (the same as `Display`).
    pub fn message(&self) -> &str {
        &self.message
    }
    pub fn exit_code(&self) -> i32 {
        self.kind.exit_code()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn std::error::Error + 'static))
    }
}

pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_source_is_kept_and_the_message_unchanged() {
        let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied");
        let e = Error::failed(format!("cannot open x: {io}")).caused_by(io);
        assert_eq!(e.to_string(), "cannot open x: denied");
        assert_eq!(e.exit_code(), exit::FAILURE);
        let src = std::error::Error::source(&e)
            .and_then(|s| s.downcast_ref::<std::io::Error>())
            .expect("the io error");
        assert_eq!(src.kind(), std::io::ErrorKind::PermissionDenied);
        // An error wrapping another keeps the chain.
        let outer = Error::failed(format!("failed to analyse x: {e}")).caused_by(e);
        let inner = std::error::Error::source(&outer)
            .and_then(|s| s.downcast_ref::<Error>())
            .expect("the inner error");
        assert!(std::error::Error::source(inner).is_some());
        assert_eq!(Error::usage("u").kind(), Kind::Usage);
        assert_eq!(
            (Error::no_profile("n").exit_code(), Error::gate("g").exit_code()),
            (exit::NO_PROFILE, exit::GATE)
        );
    }
}
