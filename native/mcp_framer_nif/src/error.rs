//! Every failure a NIF can report, turned into an Elixir exception in one place.

use crate::decode::Stop;
use rustler::NifException;

/// Raised as `%ArgumentError{message: ...}`, so Elixir callers can `rescue` it.
#[derive(NifException)]
#[module = "ArgumentError"]
struct ArgumentError {
    message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FramerError {
    /// A `%McpFramer{}` whose `resource` or `generation` field was altered.
    NotAFramer,
    /// A later `feed/2` superseded this framer value.
    Stale,
    /// A panic while the lock was held; the state cannot be trusted.
    Poisoned,
    /// `max_message_bytes` was zero or does not fit this machine's `usize`.
    BadCap,
    /// The BEAM could not resize a message buffer.
    OutOfMemory,
    /// The held bytes disagree with the framer state. Unreachable by design;
    /// reported instead of panicking.
    HeldMismatch,
    /// The JSON parser and the term builder disagree. Unreachable by
    /// design; reported instead of panicking.
    DecoderMismatch,
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
            FramerError::Poisoned => "McpFramer is unusable after an internal panic",
            FramerError::BadCap => {
                "max_message_bytes must be a positive integer that fits in a machine word"
            }
            FramerError::OutOfMemory => "McpFramer could not allocate a message buffer",
            FramerError::HeldMismatch => "McpFramer internal error: held bytes out of step",
            FramerError::DecoderMismatch => "McpFramer internal error: JSON decoder out of step",
        }
    }
}

impl From<Stop> for FramerError {
    fn from(stop: Stop) -> FramerError {
        match stop {
            Stop::NoMemory => FramerError::OutOfMemory,
            // Time runs out only under limits, whose callers leave the
            // message for a dirty scheduler instead.
            Stop::Dirty | Stop::Broken => FramerError::DecoderMismatch,
        }
    }
}

impl From<FramerError> for rustler::Error {
    fn from(error: FramerError) -> rustler::Error {
        rustler::Error::RaiseTerm(Box::new(ArgumentError {
            message: error.message().to_owned(),
        }))
    }
}
