//! The text a walk wrote, as the term its form asks for: one binary, or
//! iodata in which the strings the walk referenced are their own binaries.

use crate::terms::{self, Unmade};
use crate::timeslice::{Timeslice, COPY_STEP};
use rustler::sys::{enif_make_sub_binary, ErlNifTerm};
use rustler::{Binary, Env, Term};

/// What copying `bytes` into a fresh binary may cost, page faults included.
pub fn copy_nanos(bytes: usize) -> u64 {
    bytes as u64
}

/// The text as one binary of its own (`whole`), or as iodata: `out`
/// alone, or a list of parts of it with each piece's binary at its place.
/// A piece is a long string without escapes, which the walk left out of
/// `out`: in iodata it stays the term's own binary, and into one binary it
/// is copied once, straight from the term. Under `time`, a long copy is
/// made in steps, each only if the call can afford it.
pub fn make(
    env: Env<'_>,
    out: &[u8],
    pieces: &[(usize, ErlNifTerm)],
    whole: bool,
    time: Option<&Timeslice>,
) -> Result<ErlNifTerm, Unmade> {
    if whole && !pieces.is_empty() {
        return join(env, out, pieces, time);
    }
    let raw = env.as_c_arg();
    let binary = copy(env, &[out], time)?;
    if pieces.is_empty() {
        return Ok(binary);
    }
    let mut parts = Vec::with_capacity(2 * pieces.len() + 1);
    let mut from = 0;
    // SAFETY: each sub-binary lies within `binary`, which holds `out`:
    // `pieces` are in order, within `out`.
    unsafe {
        for &(at, term) in pieces {
            let at = at.clamp(from, out.len());
            if at > from {
                parts.push(enif_make_sub_binary(raw, binary, from, at - from));
            }
            parts.push(term);
            from = at;
        }
        if from < out.len() {
            parts.push(enif_make_sub_binary(raw, binary, from, out.len() - from));
        }
    }
    terms::list(env, &parts).ok_or(Unmade::NoMemory)
}

/// `out` with each piece's bytes at its place, in one binary.
fn join(
    env: Env<'_>,
    out: &[u8],
    pieces: &[(usize, ErlNifTerm)],
    time: Option<&Timeslice>,
) -> Result<ErlNifTerm, Unmade> {
    let mut segments = Vec::with_capacity(2 * pieces.len() + 1);
    let mut from = 0;
    for &(at, term) in pieces {
        let at = at.clamp(from, out.len());
        segments.push(&out[from..at]);
        // SAFETY: a piece's term is a binary of the call's argument.
        segments.push(
            unsafe { Term::new(env, term) }
                .decode::<Binary>()
                .map_err(|_| Unmade::NoMemory)?
                .as_slice(),
        );
        from = at;
    }
    segments.push(&out[from..]);
    copy(env, &segments, time)
}

/// A new binary of `segments`, one after another; in steps, under `time`,
/// if it is long.
fn copy(env: Env<'_>, segments: &[&[u8]], time: Option<&Timeslice>) -> Result<ErlNifTerm, Unmade> {
    let size = segments.iter().map(|segment| segment.len()).sum();
    if let Some(time) = time.filter(|_| size > COPY_STEP.get()) {
        return terms::copy_in_steps(env, segments, COPY_STEP, || time.afford_copy_step());
    }
    // SAFETY: `fill` is given room for exactly `size` bytes, the segments'
    // total, and copies each after the one before.
    let made = unsafe {
        terms::new_binary(env, size, |mut data| {
            for segment in segments {
                std::ptr::copy_nonoverlapping(segment.as_ptr(), data, segment.len());
                data = data.add(segment.len());
            }
            true
        })
    };
    made.ok_or(Unmade::NoMemory)
}
