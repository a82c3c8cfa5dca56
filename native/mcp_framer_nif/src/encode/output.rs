//! The text a walk wrote, as the term its form asks for: one binary, or
//! iodata in which the strings the walk referenced are their own binaries.

use rustler::sys::{
    enif_make_list_from_array, enif_make_new_binary, enif_make_sub_binary, ErlNifTerm,
};
use rustler::Env;
use std::mem::MaybeUninit;

/// What copying `bytes` into a fresh binary may cost, page faults included.
pub fn copy_nanos(bytes: usize) -> u64 {
    bytes as u64
}

/// `out` as a binary, or, with `pieces`, a list of parts of that binary
/// with each piece's term at its place; `None` if the BEAM is out of
/// memory.
pub fn make(env: Env<'_>, out: &[u8], pieces: &[(usize, ErlNifTerm)]) -> Option<ErlNifTerm> {
    let raw = env.as_c_arg();
    let mut binary = MaybeUninit::uninit();
    // SAFETY: the new binary has room for exactly `out.len()` bytes, and
    // each sub-binary lies within it: `pieces` are in order, within `out`.
    unsafe {
        let data = enif_make_new_binary(raw, out.len(), binary.as_mut_ptr());
        if data.is_null() {
            return None;
        }
        std::ptr::copy_nonoverlapping(out.as_ptr(), data, out.len());
        let binary = binary.assume_init();
        if pieces.is_empty() {
            return Some(binary);
        }
        let mut parts = Vec::with_capacity(2 * pieces.len() + 1);
        let mut from = 0;
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
        let count = u32::try_from(parts.len()).ok()?;
        Some(enif_make_list_from_array(raw, parts.as_ptr(), count))
    }
}
