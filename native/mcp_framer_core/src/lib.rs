//! Newline framing of a byte stream, as a state machine over positions.
//!
//! [`Framer`] never owns message bytes. Each call to [`Framer::feed`] searches
//! one chunk for `\n` and reports every message it finished as positions: in
//! the chunk, or "the first `n` held bytes, then the chunk up to `end`". The
//! caller keeps the held bytes however suits it (the NIF copies short pieces
//! and keeps references to the chunks of long ones, [`BufferedFramer`] keeps
//! a `Vec`), so a message that spans chunks is copied exactly once, by
//! whoever builds it.
//!
//! The rules:
//! * A message ends at `\n`; exactly one `\r` before it is stripped.
//! * A line that is empty after that strip is skipped.
//! * Bytes are never inspected beyond the `\n` search: messages are untouched.
//! * Every byte fed is searched once; held bytes are never searched again.
//! * A message longer than the cap (its `\r` and `\n` excluded) is oversize.
//!   That is detected as soon as it is certain; every byte up to and
//!   including the next `\n` is then discarded.

pub mod arch;
pub mod encode;
pub mod json;
mod newlines;
pub mod pace;
mod pieces;

use newlines::newlines;
pub use pieces::copy_pieces;
use std::convert::Infallible;
use std::num::NonZeroUsize;

/// A message that a chunk finished, located by positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Message {
    /// `chunk[start..end]`: the message lies wholly inside the chunk.
    Inside { start: usize, end: usize },
    /// The first `held` held bytes, followed by `chunk[..end]`.
    Joined { held: usize, end: usize },
}

impl Message {
    /// The message's length in bytes.
    pub fn len(&self) -> usize {
        match *self {
            Message::Inside { start, end } => end - start,
            Message::Joined { held, end } => held.saturating_add(end),
        }
    }

    /// Always false: blank lines are never reported.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What a feed did besides emitting messages, in the order the caller must
/// apply it to its held bytes: first release, then hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fed {
    /// Lines this feed found to be over the cap.
    pub oversize: usize,
    /// The bytes held before this feed are no longer needed: they ended in a
    /// message (already emitted) or were discarded.
    pub released_held: bool,
    /// `chunk[from..]` is an unfinished message: append it to the held bytes.
    pub hold_from: Option<usize>,
    /// How much of the chunk the feed consumed: all of it, unless it paused
    /// (see [`Framer::feed_some`]); the rest is fed as a chunk of its own.
    pub consumed: usize,
}

/// What the caller of [`Framer::feed_offering`] did with a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    Taken,
    /// Not taken: the feed pauses before it.
    Declined,
}

/// The framing state. It is `Copy`: a few integers and flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Framer {
    /// The longest message allowed, `\r` and `\n` excluded.
    cap: NonZeroUsize,
    /// Length of the unfinished message the caller holds. Invariant:
    /// `held - held_ends_in_cr <= cap`, so `held <= cap + 1`.
    held: usize,
    /// The last held byte is `\r`: it is stripped if the next byte is `\n`.
    /// Meaningful only while `held > 0`.
    held_ends_in_cr: bool,
    /// Dropping bytes through the next `\n` after an oversize line.
    /// Invariant: `discarding` implies `held == 0`.
    discarding: bool,
    /// Every byte ever fed, each counted when its chunk is searched. Since the
    /// framer never sees held bytes again, this equals the bytes fed.
    searched: u64,
}

impl Framer {
    /// A framer whose messages may be up to `cap` bytes long.
    pub fn new(cap: NonZeroUsize) -> Framer {
        Framer {
            cap,
            held: 0,
            held_ends_in_cr: false,
            discarding: false,
            searched: 0,
        }
    }

    /// The message length cap.
    pub fn cap(&self) -> usize {
        self.cap.get()
    }

    /// Bytes of an unfinished message the caller must hold; 0 while discarding.
    pub fn held(&self) -> usize {
        self.held
    }

    /// Whether the framer is dropping the rest of an oversize line.
    pub fn is_discarding(&self) -> bool {
        self.discarding
    }

    /// Bytes searched for newlines since creation: one pass per byte fed.
    pub fn bytes_searched(&self) -> u64 {
        self.searched
    }

    /// Gives up the unfinished message as if it were oversized: for a caller
    /// that cannot hold it (out of memory). The rest of its line will be
    /// discarded.
    pub fn discard_held(&mut self) {
        if self.held > 0 {
            self.held = 0;
            self.discarding = true;
        }
    }

    /// Searches `chunk` once and calls `emit` for each message it finishes,
    /// in order.
    ///
    /// If `emit` fails, the feed stops and the framer is left exactly as it
    /// was before the call, so the same chunk can be fed again elsewhere (the
    /// NIF uses this to move long work to a dirty scheduler). On success the
    /// caller applies the returned [`Fed`] to its held bytes.
    ///
    /// Cost: one pass over `chunk`, plus O(1) per newline.
    pub fn feed<E>(
        &mut self,
        chunk: &[u8],
        emit: impl FnMut(Message) -> Result<(), E>,
    ) -> Result<Fed, E> {
        self.feed_some(chunk, usize::MAX, emit)
    }

    /// Like [`Framer::feed`], but emits at most `max_messages` messages,
    /// pausing right before the message after the last: blank lines, and
    /// an unfinished message, after the last are consumed as `feed` would.
    /// The state is then exactly as if the chunk had ended at the pause,
    /// so feeding `chunk[fed.consumed..]` next gives the same messages as
    /// one call would have: the caller can give its thread back in between.
    /// Every byte is still searched once.
    pub fn feed_some<E>(
        &mut self,
        chunk: &[u8],
        max_messages: usize,
        mut emit: impl FnMut(Message) -> Result<(), E>,
    ) -> Result<Fed, E> {
        let mut left = max_messages;
        self.feed_offering(chunk, |message| {
            if left == 0 {
                return Ok(Reply::Declined);
            }
            left -= 1;
            emit(message)?;
            Ok(Reply::Taken)
        })
    }

    /// Like [`Framer::feed`], but `offer` may decline a message: the feed
    /// then pauses before that message's line, and the state is exactly as
    /// if the chunk had ended there. Feeding `chunk[fed.consumed..]` next
    /// offers the declined message again. A message that joins held bytes
    /// is always the first offered; declining it consumes nothing.
    pub fn feed_offering<E>(
        &mut self,
        chunk: &[u8],
        mut offer: impl FnMut(Message) -> Result<Reply, E>,
    ) -> Result<Fed, E> {
        let cap = self.cap.get();
        let mut next = *self;
        let mut fed = Fed::default();
        let mut line_start = 0;
        let mut chunk = chunk;

        // A chunk that continues a long line is searched by memchr up to its
        // first newline, which the masks would reach more slowly.
        let long_first = next.discarding || next.held > 256;
        for newline in newlines(chunk, long_first) {
            let cr = newline > line_start && chunk[newline - 1] == b'\r';
            let end = newline - usize::from(cr);

            let joins_held = line_start == 0 && next.held > 0 && !next.discarding;
            let message = if joins_held {
                // With `\n` first in the chunk, the `\r` to strip is the
                // held partial's last byte.
                let held = next.held - usize::from(newline == 0 && next.held_ends_in_cr);
                Message::Joined { held, end }
            } else {
                Message::Inside {
                    start: line_start,
                    end,
                }
            };
            if next.discarding {
                next.discarding = false;
            } else if message.len() > cap {
                fed.oversize += 1;
            } else if !message.is_empty() && offer(message)? == Reply::Declined {
                chunk = &chunk[..line_start];
                break;
            }
            if joins_held {
                fed.released_held = true;
                next.held = 0;
            }
            line_start = newline + 1;
        }

        let tail = &chunk[line_start..];
        if let (false, Some(&last)) = (next.discarding, tail.last()) {
            // Without a newline in the chunk, the tail continues the held bytes.
            let held = next.held.saturating_add(tail.len());
            let ends_in_cr = last == b'\r';
            // A trailing `\r` may yet be stripped, so it does not count.
            if held - usize::from(ends_in_cr) > cap {
                fed.oversize += 1;
                fed.released_held |= next.held > 0;
                next.held = 0;
                next.discarding = true;
            } else {
                fed.hold_from = Some(line_start);
                next.held = held;
                next.held_ends_in_cr = ends_in_cr;
            }
        }

        fed.consumed = chunk.len();
        next.searched += chunk.len() as u64;
        *self = next;
        Ok(fed)
    }
}

/// A framer that keeps its held bytes in a `Vec`: the simplest complete user
/// of [`Framer`], and the reference the tests compare against.
#[derive(Clone, Debug)]
pub struct BufferedFramer {
    framer: Framer,
    held: Vec<u8>,
}

impl BufferedFramer {
    pub fn new(cap: NonZeroUsize) -> BufferedFramer {
        BufferedFramer {
            framer: Framer::new(cap),
            held: Vec::new(),
        }
    }

    /// The framing state.
    pub fn framer(&self) -> &Framer {
        &self.framer
    }

    /// Feeds a chunk; returns its messages and how many lines were oversize.
    pub fn feed(&mut self, chunk: &[u8]) -> (Vec<Vec<u8>>, usize) {
        let mut messages = Vec::new();
        let held = &self.held;
        let fed = self
            .framer
            .feed(chunk, |message| {
                messages.push(match message {
                    Message::Inside { start, end } => chunk[start..end].to_vec(),
                    Message::Joined { held: n, end } => [&held[..n], &chunk[..end]].concat(),
                });
                Ok::<(), Infallible>(())
            })
            .unwrap_or_else(|never| match never {});
        if fed.released_held {
            self.held.clear();
        }
        if let Some(from) = fed.hold_from {
            self.held.extend_from_slice(&chunk[from..]);
        }
        (messages, fed.oversize)
    }
}
