//! The bytes of an unfinished message, as binaries the VM can see.
//!
//! The held bytes are a list of pieces, in order, and then a gather buffer:
//!
//! * A piece of `REF_MIN` bytes or more is not copied. The framer keeps its
//!   chunk, the term copied into a process-independent environment.
//!   Only the first piece of a message can be part of a chunk (every later
//!   one is a whole chunk without a newline), so references keep at most
//!   one chunk alive beyond the held bytes.
//! * A shorter piece is copied into the gather buffer, which grows in steps
//!   that leave less than `SLACK` unused and, once it reaches `GATHER_MAX`,
//!   becomes a piece itself. A reference before it freezes it at its
//!   exact size.
//!
//! When the message completes, the pieces, the gathered bytes and the
//! chunk's tail are copied once into a binary of exactly the message's
//! size; a message with no pieces is written into the gather buffer,
//! resized to the message, unless it is long enough to be assembled over
//! several calls. So a message keeps alive no more than itself, and a
//! framer between feeds no more than its held bytes, one chunk and
//! `SLACK` (within a feed, also the message being assembled), beside the
//! framer's own state and the VM's header of each binary the bytes are
//! in, up to 64 bytes as `:erlang.memory(:binary)` counts them: one for
//! each referenced chunk, one for every `GATHER_MAX` gathered.
//!
//! Every allocation may fail without harm: `push` reports it, and the
//! caller discards the message as if it were oversized.

use crate::error::FramerError;
use crate::terms::HEAP_BINARY_MAX;
use mcp_framer_core::copy_pieces;
use rustler::sys::{
    enif_alloc_binary, enif_alloc_env, enif_clear_env, enif_free_env, enif_inspect_binary,
    enif_make_copy, ErlNifBinary, ErlNifEnv,
};
use rustler::{Binary, Env, NewBinary, OwnedBinary};
use std::mem::MaybeUninit;
use std::num::NonZeroUsize;
use std::ops::Range;

/// Pieces at least this long are referenced rather than copied.
const REF_MIN: usize = 1024;

/// The gather buffer's first size; it doubles up to `SLACK`, then grows by
/// `SLACK` at a time.
const FIRST_CAPACITY: usize = 256;
const SLACK: usize = 4096;

/// A full gather buffer of this size becomes a piece.
const GATHER_MAX: usize = 64 * 1024;

#[derive(Default)]
pub struct HeldBytes {
    /// Keeps the referenced chunks alive until `clear`.
    kept: Option<Kept>,
    /// Frozen gather buffers, kept alive until `clear`.
    frozen: Vec<OwnedBinary>,
    /// Where the bytes before the gathered ones are, in order, and their
    /// total size. Each lies in a binary kept alive by `kept` or `frozen`.
    pieces: Vec<Piece>,
    in_pieces: usize,
    /// The bytes after the pieces are `gather[..gathered]`.
    gather: Option<OwnedBinary>,
    gathered: usize,
    /// A large message being assembled over several calls, and how many
    /// held bytes it has so far.
    assembly: Option<(OwnedBinary, usize)>,
}

/// The address and length of a piece's bytes, so that copying them never
/// goes back through the kept term.
struct Piece {
    address: usize,
    len: usize,
}

impl Piece {
    fn of(bytes: &[u8]) -> Piece {
        Piece {
            address: bytes.as_ptr() as usize,
            len: bytes.len(),
        }
    }
}

/// The BEAM could not allocate a buffer.
pub struct NoMemory;

impl HeldBytes {
    /// Appends `chunk[bytes]`.
    pub fn push(&mut self, env: Env, chunk: Binary, bytes: Range<usize>) -> Result<(), NoMemory> {
        if bytes.len() >= REF_MIN {
            self.freeze()?;
            let kept = match self.kept.as_mut() {
                Some(kept) => kept,
                None => self.kept.insert(Kept::new()?),
            };
            let whole = kept.keep(env, chunk)?;
            let piece = whole.get(bytes.clone()).ok_or(NoMemory)?;
            self.pieces.push(Piece::of(piece));
            self.in_pieces += bytes.len();
            return Ok(());
        }
        let mut rest = &chunk.as_slice()[bytes];
        while !rest.is_empty() {
            if self.gathered == GATHER_MAX {
                self.freeze()?;
            }
            let from = self.gathered;
            let wanted = (from + rest.len()).min(GATHER_MAX);
            let n = wanted - from;
            self.reserve(wanted)?[from..wanted].copy_from_slice(&rest[..n]);
            self.gathered = wanted;
            rest = &rest[n..];
        }
        Ok(())
    }

    /// Held bytes; completing the message copies this many at most.
    pub fn len(&self) -> usize {
        self.in_pieces + self.gathered
    }

    /// Copies more of the first `held` held bytes into the message of
    /// `size` bytes being assembled, so that a large message is built over
    /// several short calls, each copying at most `slice` bytes. True once
    /// they are all there and the tail, the `size - held` bytes that
    /// `take_message` copies last, fits in what is left of this call's
    /// `slice`, or this call copied nothing: the caller's tail is never
    /// longer than a slice, and the message always completes. After each
    /// `step` bytes, the copy goes on only while `more()`.
    pub fn assemble_some(
        &mut self,
        held: usize,
        size: usize,
        slice: usize,
        step: NonZeroUsize,
        more: impl FnMut() -> bool,
    ) -> Result<bool, FramerError> {
        if held > self.len() || held > size {
            return Err(FramerError::HeldMismatch);
        }
        let (mut message, copied) = match self.assembly.take() {
            Some((message, copied)) if message.len() == size && copied <= held => (message, copied),
            _ => (alloc(size).map_err(|_| FramerError::OutOfMemory)?, 0),
        };
        let until = held.min(copied.saturating_add(slice));
        let target = &mut message.as_mut_slice()[copied..until];
        let now = self.copy_held(copied, target, step, more);
        let copied = copied + now;
        self.assembly = Some((message, copied));
        Ok(copied == held && (now == 0 || now + (size - held) <= slice))
    }

    /// The message made of the first `held` held bytes and then `tail`.
    /// Leaves nothing held, or, on error, changes nothing.
    pub fn take_message<'a>(
        &mut self,
        env: Env<'a>,
        held: usize,
        tail: &[u8],
    ) -> Result<Binary<'a>, FramerError> {
        if held > self.len() {
            return Err(FramerError::HeldMismatch);
        }
        let size = held + tail.len();
        // A heap binary: cheaper to copy into than a refcounted buffer.
        let message = if size <= HEAP_BINARY_MAX {
            let mut message = NewBinary::new(env, size);
            self.copy_all_held(&mut message.as_mut_slice()[..held]);
            message.as_mut_slice()[held..].copy_from_slice(tail);
            message.into()
        } else if let Some(mut message) = self.take_assembled(held, size) {
            message.as_mut_slice()[held..].copy_from_slice(tail);
            message.release(env)
        } else if self.pieces.is_empty() {
            // The gather buffer becomes the message: one copy of each byte.
            let mut gather = self.gather.take().ok_or(FramerError::HeldMismatch)?;
            if !gather.realloc(size) {
                self.gather = Some(gather);
                return Err(FramerError::OutOfMemory);
            }
            gather.as_mut_slice()[held..].copy_from_slice(tail);
            gather.release(env)
        } else {
            let mut message = alloc(size).map_err(|_| FramerError::OutOfMemory)?;
            self.copy_all_held(&mut message.as_mut_slice()[..held]);
            message.as_mut_slice()[held..].copy_from_slice(tail);
            message.release(env)
        };
        self.clear();
        Ok(message)
    }

    /// The message of `size` bytes that `assemble_some` built, once its
    /// first `held` bytes are all there.
    fn take_assembled(&mut self, held: usize, size: usize) -> Option<OwnedBinary> {
        match self.assembly.take() {
            Some((message, copied)) if message.len() == size && copied == held => Some(message),
            other => {
                self.assembly = other;
                None
            }
        }
    }

    /// Forgets the held bytes and lets go of their binaries.
    pub fn clear(&mut self) {
        self.gathered = 0;
        self.assembly = None;
        if self
            .gather
            .as_ref()
            .is_some_and(|g| g.len() > FIRST_CAPACITY)
        {
            self.gather = None;
        }
        if !self.pieces.is_empty() {
            self.pieces.clear();
            self.in_pieces = 0;
            self.frozen.clear();
            if let Some(kept) = self.kept.as_mut() {
                kept.clear();
            }
        }
    }

    /// Turns the gathered bytes into a piece of their exact size.
    fn freeze(&mut self) -> Result<(), NoMemory> {
        if self.gathered == 0 {
            return Ok(());
        }
        let mut gather = self.gather.take().ok_or(NoMemory)?;
        if gather.len() > self.gathered && !gather.realloc(self.gathered) {
            self.gather = Some(gather);
            return Err(NoMemory);
        }
        self.pieces.push(Piece::of(gather.as_slice()));
        self.frozen.push(gather);
        self.in_pieces += self.gathered;
        self.gathered = 0;
        Ok(())
    }

    /// The gather buffer, with room for at least `wanted` bytes.
    fn reserve(&mut self, wanted: usize) -> Result<&mut [u8], NoMemory> {
        let capacity = self.gather.as_ref().map_or(0, |g| g.len());
        if wanted > capacity {
            let step = if capacity < SLACK {
                (capacity * 2).max(FIRST_CAPACITY)
            } else {
                capacity + SLACK
            };
            let grown = step.max(wanted).min(GATHER_MAX);
            match self.gather.as_mut() {
                Some(gather) => {
                    if !gather.realloc(grown) {
                        return Err(NoMemory);
                    }
                }
                None => self.gather = Some(alloc(grown)?),
            }
        }
        Ok(self.gather.as_mut().ok_or(NoMemory)?.as_mut_slice())
    }

    /// Fills `to` with the held bytes, in order.
    fn copy_all_held(&self, to: &mut [u8]) {
        self.copy_held(0, to, NonZeroUsize::MAX, || true);
    }

    /// Fills `to` with the held bytes from offset `from` on, in order; after
    /// each `step` bytes, goes on only while `more()`. Returns how many
    /// bytes it copied.
    fn copy_held(
        &self,
        from: usize,
        to: &mut [u8],
        step: NonZeroUsize,
        more: impl FnMut() -> bool,
    ) -> usize {
        // SAFETY: every piece lies in a binary that `kept` or `frozen`
        // keeps alive, unchanged, until `clear` forgets the piece.
        let pieces = self.pieces.iter().map(|piece| unsafe {
            std::slice::from_raw_parts(piece.address as *const u8, piece.len)
        });
        let gathered = self.gather.as_ref().map(|g| &g.as_slice()[..self.gathered]);
        // SAFETY: `copy_pieces` only writes the slots, each with a byte.
        let to = unsafe { &mut *(std::ptr::from_mut(to) as *mut [MaybeUninit<u8>]) };
        copy_pieces(pieces.chain(gathered), from, to, step, more)
    }
}

/// A process-independent environment holding copies of chunk terms, which
/// keep their binaries alive until `clear`.
struct Kept(*mut ErlNifEnv);

// SAFETY: the environment is used by one thread at a time, under the
// framer's lock, as a process-independent environment may be.
unsafe impl Send for Kept {}

impl Kept {
    fn new() -> Result<Kept, NoMemory> {
        // SAFETY: no precondition; a null result is checked.
        let env = unsafe { enif_alloc_env() };
        if env.is_null() {
            return Err(NoMemory);
        }
        Ok(Kept(env))
    }

    /// Keeps `chunk`'s binary alive until `clear`, and returns its bytes,
    /// located through the kept copy: for a chunk that is not byte
    /// aligned, the aligned copy lives in this environment too.
    fn keep(&mut self, env: Env, chunk: Binary) -> Result<&[u8], NoMemory> {
        let mut bytes = MaybeUninit::<ErlNifBinary>::uninit();
        // SAFETY: `chunk`'s term belongs to `env`, the calling environment;
        // the copy belongs to `self.0`, which lives until `clear` or drop,
        // and so do the bytes it refers to.
        unsafe {
            let copy = enif_make_copy(self.0, chunk.to_term(env).as_c_arg());
            if enif_inspect_binary(self.0, copy, bytes.as_mut_ptr()) == 0 {
                return Err(NoMemory);
            }
            let bytes = bytes.assume_init();
            Ok(std::slice::from_raw_parts(bytes.data, bytes.size))
        }
    }

    fn clear(&mut self) {
        // SAFETY: `self.0` is a live environment that no one else uses.
        unsafe { enif_clear_env(self.0) }
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        // SAFETY: `self.0` was allocated by `enif_alloc_env` and is freed once.
        unsafe { enif_free_env(self.0) }
    }
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
