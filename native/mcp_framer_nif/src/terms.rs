//! Terms made straight through `enif`, where rustler has no call as cheap:
//! a binary copied from bytes (at once, or in steps that can stop), and a
//! list or a map made from arrays in one call.

use mcp_framer_core::copy_pieces;
use rustler::sys::{
    enif_alloc_binary, enif_get_map_size, enif_inspect_binary, enif_make_binary,
    enif_make_list_from_array, enif_make_map_from_arrays, enif_make_new_binary,
    enif_make_sub_binary, enif_release_binary, ErlNifBinary, ErlNifTerm,
};
use rustler::Env;
use std::mem::MaybeUninit;
use std::num::NonZeroUsize;

/// A string this long or longer may be a sub-binary of the document instead
/// of a copy (from OTP 27 on, the VM copies one of [`HEAP_BINARY_MAX`]
/// bytes, this long, all the same).
pub const SUB_BINARY_MIN: usize = 64;

/// The longest binary the BEAM keeps on a process heap rather than
/// reference-counted.
pub const HEAP_BINARY_MAX: usize = 64;

/// Whether this VM copies a sub-binary of [`HEAP_BINARY_MAX`] bytes or
/// fewer into a binary of its own, as OTP 27 and later do: asked once,
/// of a binary made for it.
pub fn vm_copies_short_sub_binaries(env: Env<'_>) -> bool {
    let size = 2 * HEAP_BINARY_MAX;
    let mut whole = MaybeUninit::uninit();
    let mut part = MaybeUninit::<ErlNifBinary>::uninit();
    // SAFETY: all `size` bytes of the new binary are written before it is
    // read; the sub-binary lies within it.
    unsafe {
        let data = enif_make_new_binary(env.as_c_arg(), size, whole.as_mut_ptr());
        std::ptr::write_bytes(data, 0, size);
        let sub = enif_make_sub_binary(env.as_c_arg(), whole.assume_init(), 1, HEAP_BINARY_MAX);
        enif_inspect_binary(env.as_c_arg(), sub, part.as_mut_ptr()) != 0
            && part.assume_init().data != data.add(1)
    }
}

/// A copy of `bytes` in a binary of its own; `None` if the BEAM could not
/// allocate it.
pub fn copy(env: Env<'_>, bytes: &[u8]) -> Option<ErlNifTerm> {
    // SAFETY: `fill` is given room for exactly `bytes.len()` bytes.
    unsafe {
        new_binary(env, bytes.len(), |data| {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), data, bytes.len());
            true
        })
    }
}

/// Why [`copy_in_steps`] made no binary.
pub enum Unmade {
    /// The BEAM could not allocate it.
    NoMemory,
    /// `more` stopped the copy.
    Stopped,
}

/// A copy of `segments`, one after another, in a binary of its own,
/// written `step` bytes at a time: after each step it goes on only while
/// `more()`, and a copy that stops frees what it had made.
pub fn copy_in_steps(
    env: Env<'_>,
    segments: &[&[u8]],
    step: NonZeroUsize,
    more: impl FnMut() -> bool,
) -> Result<ErlNifTerm, Unmade> {
    let size = segments.iter().map(|segment| segment.len()).sum();
    let mut made = false;
    // SAFETY: `fill` writes the `size` bytes it is given through a slice
    // of that length, of slots not yet written, and gives up if the copy
    // stopped short.
    let binary = unsafe {
        new_binary(env, size, |data| {
            made = true;
            let to = std::slice::from_raw_parts_mut(data.cast::<MaybeUninit<u8>>(), size);
            copy_pieces(segments.iter().copied(), 0, to, step, more) == size
        })
    };
    match binary {
        Some(binary) => Ok(binary),
        None if made => Err(Unmade::Stopped),
        None => Err(Unmade::NoMemory),
    }
}

/// A new binary of `size` bytes, which `fill` writes, all of them, given
/// where they go; `None` if the BEAM could not allocate it, or `fill`
/// gave up (returned false). One of 64 bytes or fewer is made in the
/// process's heap; a larger one through `enif_alloc_binary`, which fails
/// where `enif_make_new_binary` would take the VM down, and is freed if
/// `fill` gives up.
///
/// # Safety
/// `fill` must write `size` bytes from the pointer it is given, no more,
/// or give up.
pub unsafe fn new_binary(
    env: Env<'_>,
    size: usize,
    fill: impl FnOnce(*mut u8) -> bool,
) -> Option<ErlNifTerm> {
    if size <= HEAP_BINARY_MAX {
        let mut term = MaybeUninit::uninit();
        let data = enif_make_new_binary(env.as_c_arg(), size, term.as_mut_ptr());
        // One given up is left to the garbage collector.
        return fill(data).then(|| term.assume_init());
    }
    let mut binary = MaybeUninit::<ErlNifBinary>::uninit();
    if enif_alloc_binary(size, binary.as_mut_ptr()) == 0 {
        return None;
    }
    let mut binary = binary.assume_init();
    if !fill(binary.data) {
        enif_release_binary(&mut binary);
        return None;
    }
    Some(enif_make_binary(env.as_c_arg(), &mut binary))
}

/// A list of `items`, terms made in `env`; `None` past the BEAM's count
/// for one call.
#[inline]
pub fn list(env: Env<'_>, items: &[ErlNifTerm]) -> Option<ErlNifTerm> {
    let count = u32::try_from(items.len()).ok()?;
    // SAFETY: `items` holds `count` terms made in `env`.
    Some(unsafe { enif_make_list_from_array(env.as_c_arg(), items.as_ptr(), count) })
}

/// The most pairs a flat map holds (the BEAM's MAP_SMALL_MAP_LIMIT): the
/// BEAM sorts its keys, and refuses to make it if one repeats.
const FLAT_MAP_MAX: usize = 32;

/// A map from distinct keys, or `None` if any key repeats. OTP 25 does not
/// report a repeat in maps of over [`FLAT_MAP_MAX`] pairs; it keeps one of
/// the values, so their size is checked as well.
pub fn map_from_arrays(
    env: Env<'_>,
    keys: &[ErlNifTerm],
    values: &[ErlNifTerm],
) -> Option<ErlNifTerm> {
    let mut map = MaybeUninit::uninit();
    let mut size = 0;
    // SAFETY: both arrays hold `keys.len()` terms made in `env`.
    unsafe {
        let made = enif_make_map_from_arrays(
            env.as_c_arg(),
            keys.as_ptr(),
            values.as_ptr(),
            keys.len(),
            map.as_mut_ptr(),
        ) != 0;
        if !made {
            return None;
        }
        let map = map.assume_init();
        if keys.len() <= FLAT_MAP_MAX {
            return Some(map);
        }
        let sized = enif_get_map_size(env.as_c_arg(), map, &mut size) != 0;
        (sized && size == keys.len()).then_some(map)
    }
}
