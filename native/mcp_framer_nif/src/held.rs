//! The bytes of an unfinished message, copied once: into the binary that
//! becomes the message.
//!
//! Each feed copies only its own chunk's tail, so no call does work beyond
//! its chunk; when the message completes, the buffer is handed to the BEAM
//! and the message is a sub-binary of it, without another copy.
//!
//! The buffer grows by doubling up to `SMALL_MAX`. Past that it is replaced
//! once by a buffer of the cap + 1 bytes: the BEAM's allocator resizes large
//! binaries by copying, so growing one step at a time costs more than the
//! framing itself. Pages of that buffer are only backed by memory once they
//! are written, so it costs the message's size in memory and the cap in
//! address space, until the message is garbage collected.

use crate::error::FramerError;
use rustler::{Binary, Env, NewBinary, OwnedBinary};

/// Messages up to this size become heap binaries: copying them is cheaper
/// than handing over a refcounted buffer.
const HEAP_BINARY_MAX: usize = 64;

/// The first buffer's size; it then doubles up to `SMALL_MAX`.
const FIRST_CAPACITY: usize = 256;

/// The largest buffer grown by doubling.
const SMALL_MAX: usize = 64 * 1024;

#[derive(Default)]
pub struct HeldBytes {
    /// Invariant: `len <= buffer.len()`; `len == 0` when there is no buffer.
    buffer: Option<OwnedBinary>,
    len: usize,
}

impl HeldBytes {
    /// Appends `bytes`. `limit` is the cap + 1: the most a framer ever holds.
    pub fn push(&mut self, bytes: &[u8], limit: usize) {
        let needed = self.len + bytes.len();
        let buffer = self.reserve(needed, limit);
        buffer.as_mut_slice()[needed - bytes.len()..needed].copy_from_slice(bytes);
        self.len = needed;
    }

    /// The message made of the first `held` held bytes and then `tail`:
    /// a heap binary if small, else a sub-binary of the buffer, which the
    /// message now owns. Leaves nothing held.
    pub fn take_message<'a>(
        &mut self,
        env: Env<'a>,
        held: usize,
        tail: &[u8],
    ) -> Result<Binary<'a>, FramerError> {
        if held > self.len {
            return Err(FramerError::HeldMismatch);
        }
        let size = held + tail.len();
        self.len = 0;
        if size <= HEAP_BINARY_MAX {
            let mut message = NewBinary::new(env, size);
            let held_bytes = self
                .buffer
                .as_ref()
                .map_or(&[][..], |b| &b.as_slice()[..held]);
            message.as_mut_slice()[..held].copy_from_slice(held_bytes);
            message.as_mut_slice()[held..].copy_from_slice(tail);
            return Ok(message.into());
        }
        let mut buffer = self.buffer.take().ok_or(FramerError::HeldMismatch)?;
        if buffer.len() < size && !buffer.realloc(size) {
            return Err(FramerError::OutOfMemory);
        }
        buffer.as_mut_slice()[held..size].copy_from_slice(tail);
        let whole = buffer.release(env);
        whole
            .make_subbinary(0, size)
            .map_err(|_| FramerError::HeldMismatch)
    }

    /// Forgets the held bytes and frees a large buffer.
    pub fn clear(&mut self) {
        self.len = 0;
        if self
            .buffer
            .as_ref()
            .is_some_and(|b| b.len() > FIRST_CAPACITY)
        {
            self.buffer = None;
        }
    }

    fn reserve(&mut self, needed: usize, limit: usize) -> &mut OwnedBinary {
        let capacity = self.buffer.as_ref().map_or(0, |b| b.len());
        if needed > capacity {
            let grown = if needed > SMALL_MAX {
                limit
            } else {
                (capacity * 2).clamp(FIRST_CAPACITY, SMALL_MAX).min(limit)
            };
            let grown = grown.max(needed);
            match self.buffer.as_mut() {
                Some(buffer) => buffer.realloc_or_copy(grown),
                None => self.buffer = Some(OwnedBinary::new(grown)),
            }
        }
        self.buffer
            .get_or_insert_with(|| OwnedBinary::new(FIRST_CAPACITY))
    }
}
