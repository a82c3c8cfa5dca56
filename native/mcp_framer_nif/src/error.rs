//! Every failure a NIF can report, turned into an Elixir exception in one place.

use crate::decode::Stop;
use rustler::NifException;

/// Raised as `%ArgumentError{message: ...}`, so Elixir callers can `rescue` it.
#[derive(NifException)]
#[module = "ArgumentError"]
struct ArgumentError {
    message: String,
}

/// Raised as `%McpFramer.InternalError{message: ...}`: a bug of ours, not a
/// mistake of the caller's.
#[derive(NifException)]
#[module = "McpFramer.InternalError"]
struct InternalError {
    message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FramerError {
    /// A `%McpFramer{}` whose `resource` or `generation` field was altered.
    NotAFramer,
    /// A later `feed/2` superseded this framer value.
    Stale,
    /// `max_message_bytes` was zero or does not fit this machine's `usize`.
    BadCap,
    /// Decoding options not made by `McpFramer.JSON`.
    BadOptions,
    /// The BEAM could not allocate a message buffer or a term.
    OutOfMemory,
    /// A panic while the lock was held; the state cannot be trusted.
    Poisoned,
    /// The held bytes disagree with the framer state. Unreachable by design;
    /// reported instead of panicking.
    HeldMismatch,
    /// The JSON parser and the term builder disagree. Unreachable by
    /// design; reported instead of panicking.
    DecoderMismatch,
    /// The encoder's walk and its output disagree. Unreachable by design;
    /// reported instead of panicking.
    EncoderMismatch,
}

impl FramerError {
    fn message(self) -> &'static str {
        match self {
            FramerError::NotAFramer => {
                "expected a framer from McpFramer.new/1, got a %McpFramer{} \
                 whose fields were altered"
            }
            FramerError::Stale => {
                "stale McpFramer: a later feed/2 has superseded this value; \
                 use the framer returned by the most recent feed/2"
            }
            FramerError::BadCap => {
                "max_message_bytes must be a positive integer that fits in a machine word"
            }
            FramerError::BadOptions => "expected decoding options made by McpFramer.JSON",
            FramerError::OutOfMemory => {
                "McpFramer could not allocate memory for a message or a term"
            }
            FramerError::Poisoned => "the framer is unusable after a panic in the NIF",
            FramerError::HeldMismatch => "the held bytes are out of step with the framer",
            FramerError::DecoderMismatch => "the JSON parser and the term builder are out of step",
            FramerError::EncoderMismatch => {
                "the JSON encoder's walk and its output are out of step"
            }
        }
    }

    /// Whether the failure is a bug in McpFramer rather than a bad argument.
    pub fn is_internal(self) -> bool {
        matches!(
            self,
            FramerError::Poisoned
                | FramerError::HeldMismatch
                | FramerError::DecoderMismatch
                | FramerError::EncoderMismatch
        )
    }
}

impl From<Stop> for FramerError {
    fn from(stop: Stop) -> FramerError {
        match stop {
            Stop::NoMemory => FramerError::OutOfMemory,
            // Time runs out only under limits, whose callers leave the
            // message for a dirty scheduler instead; a refused key is an
            // item, never an exception.
            Stop::Dirty | Stop::KeyRefused | Stop::Broken => FramerError::DecoderMismatch,
        }
    }
}

impl From<FramerError> for rustler::Error {
    fn from(error: FramerError) -> rustler::Error {
        let message = error.message().to_owned();
        if error.is_internal() {
            return rustler::Error::RaiseTerm(Box::new(InternalError { message }));
        }
        rustler::Error::RaiseTerm(Box::new(ArgumentError { message }))
    }
}
