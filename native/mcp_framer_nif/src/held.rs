//! The bytes of an unfinished message, each copied once at most.
//!
//! A small piece (a chunk tail under `REF_MIN`) is copied at once, while its
//! chunk is in cache, into a buffer that becomes the message when it
//! completes. The buffer doubles up to `SMALL_MAX`; past that it is replaced
//! once by one of the cap + 1 bytes, but at most `RESERVE_MAX`, beyond which
//! it doubles again. (The BEAM resizes large binaries by copying them, so
//! growing in small steps costs more than the framing: 0.2x the baseline on
//! 4 MiB messages in 4 KiB chunks.) Pages of a reserved buffer are only
//! backed by memory once written.
//!
//! A large piece is not copied: the framer keeps a reference to its chunk,
//! saved in a process-independent environment, and copies it once, into a
//! binary of exactly the message's size, when the message completes. A line
//! that goes over the cap is then dropped without its bytes being copied.
//! Referenced chunks stay alive until then: at most the cap plus one chunk.
//!
//! Every allocation may fail without harm: `push` reports it, and the
//! caller discards the message as if it were oversized.

use crate::error::FramerError;
use rustler::env::{OwnedEnv, SavedTerm};
use rustler::sys::{enif_alloc_binary, ErlNifBinary};
use rustler::{Binary, Env, NewBinary, OwnedBinary};
use std::mem::MaybeUninit;
use std::ops::Range;

/// Messages up to this size become heap binaries: copying them is cheaper
/// than handing over a refcounted buffer.
const HEAP_BINARY_MAX: usize = 64;

/// The buffer's first size; it then doubles up to `SMALL_MAX`.
const FIRST_CAPACITY: usize = 256;

/// The largest buffer grown by doubling.
const SMALL_MAX: usize = 64 * 1024;

/// The most address space reserved ahead of need; past it the buffer doubles.
const RESERVE_MAX: usize = 64 * 1024 * 1024;

/// Pieces at least this long are referenced rather than copied.
const REF_MIN: usize = 16 * 1024;

/// Copies run at a third of their speed when the destination sits a few
/// bytes past the source modulo 4 KiB (the CPU takes the store for one a
/// later load depends on), so large buffers start half a page away from
/// the bytes first copied into them.
const PAGE: usize = 4096;

#[derive(Default)]
pub struct HeldBytes {
    /// The copied bytes are `buffer[start..start + copied]`.
    buffer: Option<OwnedBinary>,
    start: usize,
    copied: usize,
    /// Referenced pieces, in order, saved in `chunks`.
    chunks: Option<OwnedEnv>,
    pieces: Vec<Piece>,
    referenced: usize,
}

struct Piece {
    /// How many copied bytes come before this piece in the message.
    after_copied: usize,
    /// A sub-binary holding exactly the piece.
    term: SavedTerm,
    /// Where its bytes are; only to choose an alignment, never read.
    address: usize,
}

/// The BEAM could not allocate a buffer.
pub struct NoMemory;

impl HeldBytes {
    /// Appends `chunk[bytes]`. `limit` is the cap + 1: the most ever held.
    pub fn push(
        &mut self,
        env: Env,
        chunk: Binary,
        bytes: Range<usize>,
        limit: usize,
    ) -> Result<(), NoMemory> {
        let len = bytes.len();
        let address = chunk.as_slice()[bytes.clone()].as_ptr() as usize;
        if len >= REF_MIN {
            let piece = chunk
                .make_subbinary(bytes.start, len)
                .map_err(|_| NoMemory)?;
            let chunks = self.chunks.get_or_insert_with(OwnedEnv::new);
            self.pieces.push(Piece {
                after_copied: self.copied,
                term: chunks.save(piece.to_term(env)),
                address,
            });
            self.referenced += len;
            return Ok(());
        }
        let needed = self.copied + len;
        if needed > self.capacity() {
            self.grow(needed, limit, address)?;
        }
        let at = self.start + self.copied;
        let buffer = self.buffer.as_mut().ok_or(NoMemory)?;
        buffer.as_mut_slice()[at..at + len].copy_from_slice(&chunk.as_slice()[bytes]);
        self.copied = needed;
        Ok(())
    }

    /// The message made of the first `held` held bytes and then `tail`.
    /// Leaves nothing held, or, on error, changes nothing.
    pub fn take_message<'a>(
        &mut self,
        env: Env<'a>,
        held: usize,
        tail: &[u8],
    ) -> Result<Binary<'a>, FramerError> {
        if held > self.copied + self.referenced {
            return Err(FramerError::HeldMismatch);
        }
        let size = held + tail.len();
        let message = if size <= HEAP_BINARY_MAX {
            let mut message = NewBinary::new(env, size);
            self.assemble(&mut message.as_mut_slice()[..held])?;
            message.as_mut_slice()[held..].copy_from_slice(tail);
            message.into()
        } else if self.pieces.is_empty() {
            // The buffer becomes the message: no second copy.
            let start = self.start;
            let buffer = self.buffer.as_mut().ok_or(FramerError::HeldMismatch)?;
            if buffer.len() < start + size && !buffer.realloc(start + size) {
                return Err(FramerError::OutOfMemory);
            }
            buffer.as_mut_slice()[start + held..start + size].copy_from_slice(tail);
            let buffer = self.buffer.take().ok_or(FramerError::HeldMismatch)?;
            buffer
                .release(env)
                .make_subbinary(start, size)
                .map_err(|_| FramerError::HeldMismatch)?
        } else {
            let first = self.pieces[0].address;
            let mut whole = alloc(size + PAGE).map_err(|_| FramerError::OutOfMemory)?;
            let start = away(&whole, self.pieces[0].after_copied, first);
            let message = &mut whole.as_mut_slice()[start..start + size];
            self.assemble(&mut message[..held])?;
            message[held..].copy_from_slice(tail);
            whole
                .release(env)
                .make_subbinary(start, size)
                .map_err(|_| FramerError::HeldMismatch)?
        };
        self.clear();
        Ok(message)
    }

    /// Forgets the held bytes, releases the chunks and frees a large buffer.
    pub fn clear(&mut self) {
        self.copied = 0;
        if self.capacity() > FIRST_CAPACITY {
            self.buffer = None;
            self.start = 0;
        }
        if !self.pieces.is_empty() {
            self.pieces.clear();
            self.referenced = 0;
            if let Some(chunks) = self.chunks.as_mut() {
                chunks.clear();
            }
        }
    }

    /// Held bytes kept as chunk references, to be copied on completion.
    pub fn referenced(&self) -> usize {
        self.referenced
    }

    fn capacity(&self) -> usize {
        self.buffer.as_ref().map_or(0, |b| b.len() - self.start)
    }

    /// Fills `to` with the first `to.len()` held bytes, in message order.
    fn assemble(&self, to: &mut [u8]) -> Result<(), FramerError> {
        let copied = self.buffer.as_ref().map_or(&[][..], |b| {
            &b.as_slice()[self.start..self.start + self.copied]
        });
        let mut at = 0;
        let mut next_copied = 0;
        let mut put = |to: &mut [u8], bytes: &[u8]| {
            let n = bytes.len().min(to.len() - at);
            to[at..at + n].copy_from_slice(&bytes[..n]);
            at += n;
        };
        if let Some(chunks) = &self.chunks {
            chunks.run(|chunks_env| {
                for piece in &self.pieces {
                    put(to, &copied[next_copied..piece.after_copied]);
                    next_copied = piece.after_copied;
                    let bytes: Binary = piece
                        .term
                        .load(chunks_env)
                        .decode()
                        .map_err(|_| FramerError::HeldMismatch)?;
                    put(to, bytes.as_slice());
                }
                Ok::<(), FramerError>(())
            })?;
        }
        put(to, &copied[next_copied..]);
        Ok(())
    }

    /// Moves the copied bytes into a new buffer with room for `needed`.
    fn grow(&mut self, needed: usize, limit: usize, source: usize) -> Result<(), NoMemory> {
        let capacity = self.capacity();
        let wanted = if needed <= SMALL_MAX {
            (capacity * 2).clamp(FIRST_CAPACITY, SMALL_MAX)
        } else if needed <= RESERVE_MAX {
            RESERVE_MAX
        } else {
            capacity.saturating_mul(2)
        };
        let capacity = wanted.min(limit).max(needed);
        let pad = if capacity > SMALL_MAX { PAGE } else { 0 };
        let mut buffer = alloc(capacity.checked_add(pad).ok_or(NoMemory)?)?;
        let start = if pad == 0 {
            0
        } else {
            away(&buffer, self.copied, source)
        };
        if let Some(old) = &self.buffer {
            let copied = &old.as_slice()[self.start..self.start + self.copied];
            buffer.as_mut_slice()[start..start + self.copied].copy_from_slice(copied);
        }
        self.buffer = Some(buffer);
        self.start = start;
        Ok(())
    }
}

/// Where to start a message in `buffer` (a page longer than it) so that
/// offset `at` of the message lies half a page from `source`, modulo a page.
fn away(buffer: &OwnedBinary, at: usize, source: usize) -> usize {
    let destination = buffer.as_slice().as_ptr() as usize + at;
    source.wrapping_add(PAGE / 2).wrapping_sub(destination) % PAGE
}

/// `OwnedBinary::new` aborts the VM when the BEAM has no memory; this fails.
fn alloc(size: usize) -> Result<OwnedBinary, NoMemory> {
    let mut binary = MaybeUninit::<ErlNifBinary>::uninit();
    // SAFETY: enif_alloc_binary initializes `binary` when it returns true,
    // and only then is it read.
    unsafe {
        if enif_alloc_binary(size, binary.as_mut_ptr()) == 0 {
            return Err(NoMemory);
        }
        Ok(OwnedBinary::from_raw(binary.assume_init()))
    }
}
