//! The bytes of an unfinished message, kept so that each is copied once.
//!
//! A large piece is kept as a reference to the chunk binary it arrived in
//! (saved in a process-independent env, which bumps the binary's refcount and
//! copies nothing). A small piece, or one that is a small part of its chunk,
//! is copied instead: cheaper than a reference, and it does not pin a whole
//! chunk in memory for a few bytes.

use crate::error::FramerError;
use rustler::env::{OwnedEnv, SavedTerm};
use rustler::{Binary, Env, NewBinary};
use std::ops::Range;

/// Pieces shorter than this are copied rather than referenced.
const COPY_BELOW: usize = 1024;

/// After a release, a copy buffer larger than this is freed, not kept.
const KEEP_CAPACITY: usize = 64 * 1024;

enum Piece {
    /// `copied[range]`.
    Copied(Range<usize>),
    /// `range` of a chunk binary saved in `env`.
    Kept {
        chunk: SavedTerm,
        range: Range<usize>,
    },
}

#[derive(Default)]
pub struct HeldBytes {
    /// Owns the saved chunks. Invariant: it is cleared only together with
    /// `pieces`, so every `Kept` piece can be loaded from it.
    env: Option<OwnedEnv>,
    pieces: Vec<Piece>,
    copied: Vec<u8>,
}

impl HeldBytes {
    /// Appends `chunk[from..]`.
    pub fn push(&mut self, chunk: &Binary, from: usize) {
        let piece = &chunk.as_slice()[from..];
        if piece.len() < COPY_BELOW || piece.len() < chunk.len() / 2 {
            let start = self.copied.len();
            self.copied.extend_from_slice(piece);
            match self.pieces.last_mut() {
                Some(Piece::Copied(range)) if range.end == start => range.end = self.copied.len(),
                _ => self.pieces.push(Piece::Copied(start..self.copied.len())),
            }
        } else {
            let env = self.env.get_or_insert_with(OwnedEnv::new);
            self.pieces.push(Piece::Kept {
                chunk: env.save(*chunk),
                range: from..chunk.len(),
            });
        }
    }

    /// A new binary of the first `held` held bytes followed by `tail`.
    pub fn join<'a>(
        &self,
        env: Env<'a>,
        held: usize,
        tail: &[u8],
    ) -> Result<Binary<'a>, FramerError> {
        let mut message = NewBinary::new(env, held + tail.len());
        let out = message.as_mut_slice();
        let mut at = 0;
        for piece in &self.pieces {
            let wanted = held - at;
            if wanted == 0 {
                break;
            }
            at += match piece {
                Piece::Copied(range) => {
                    copy_prefix(&self.copied[range.clone()], &mut out[at..held])
                }
                Piece::Kept { chunk, range } => {
                    let env = self.env.as_ref().ok_or(FramerError::HeldMismatch)?;
                    env.run(|env| {
                        let bytes = Binary::from_term(chunk.load(env))
                            .map_err(|_| FramerError::HeldMismatch)?;
                        let bytes = bytes.as_slice().get(range.clone());
                        let bytes = bytes.ok_or(FramerError::HeldMismatch)?;
                        Ok(copy_prefix(bytes, &mut out[at..held]))
                    })?
                }
            };
        }
        if at != held {
            return Err(FramerError::HeldMismatch);
        }
        out[held..].copy_from_slice(tail);
        Ok(message.into())
    }

    /// Forgets every held byte and lets go of the chunks they pinned.
    pub fn clear(&mut self) {
        self.pieces.clear();
        if let Some(env) = self.env.as_mut() {
            env.clear();
        }
        if self.copied.capacity() > KEEP_CAPACITY {
            self.copied = Vec::new();
        } else {
            self.copied.clear();
        }
    }
}

/// Copies as much of `from` as fits into `to`; returns how much that was.
fn copy_prefix(from: &[u8], to: &mut [u8]) -> usize {
    let n = from.len().min(to.len());
    to[..n].copy_from_slice(&from[..n]);
    n
}
