//! Terms the NIF interface has no call for, made by decoding their
//! external term format: bignums, and atoms of any UTF-8 on every OTP
//! (before OTP 26, `enif` makes atoms of Latin-1 only).

use rustler::sys::{
    enif_binary_to_term, enif_make_atom_len, enif_make_existing_atom_len, ErlNifCharEncoding,
    ErlNifTerm, ERL_NIF_BIN2TERM_SAFE,
};
use rustler::Env;
use std::mem::MaybeUninit;

/// The version byte that starts every term in the external format.
const VERSION: u8 = 131;
const SMALL_BIG_EXT: u8 = 110;
const LARGE_BIG_EXT: u8 = 111;
const ATOM_UTF8_EXT: u8 = 118;

/// The most characters an atom's name may have.
pub const ATOM_MAX_CHARS: usize = 255;

/// Why a name did not become an atom.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoAtom {
    /// No atom has that name, and none was to be made.
    Missing,
    /// The name has more characters than an atom may.
    TooLong,
}

/// Whether `name` has more characters than an atom may, found without
/// reading a long name through: a character is at most four bytes.
pub fn too_long_for_an_atom(name: &str) -> bool {
    name.len() > 4 * ATOM_MAX_CHARS
        || (name.len() > ATOM_MAX_CHARS && name.chars().count() > ATOM_MAX_CHARS)
}

/// The atom named `name`: made if `create`, else only if it exists
/// already.
pub fn atom(env: Env<'_>, name: &str, create: bool) -> Result<ErlNifTerm, NoAtom> {
    if too_long_for_an_atom(name) {
        return Err(NoAtom::TooLong);
    }
    if name.is_ascii() {
        let bytes = name.as_ptr().cast();
        // SAFETY: reads the `name.len()` bytes of `name`; an ASCII name is
        // the same in Latin-1, and short enough, as checked above.
        unsafe {
            if create {
                return Ok(enif_make_atom_len(env.as_c_arg(), bytes, name.len()));
            }
            let mut atom = MaybeUninit::uninit();
            let latin1 = ErlNifCharEncoding::ERL_NIF_LATIN1;
            let found = enif_make_existing_atom_len(
                env.as_c_arg(),
                bytes,
                name.len(),
                atom.as_mut_ptr(),
                latin1,
            );
            return match found {
                0 => Err(NoAtom::Missing),
                _ => Ok(atom.assume_init()),
            };
        }
    }
    // At most 255 characters of at most four bytes each.
    let length = u16::try_from(name.len()).map_err(|_| NoAtom::TooLong)?;
    let mut external = Vec::with_capacity(name.len() + 4);
    external.extend([VERSION, ATOM_UTF8_EXT]);
    external.extend(length.to_be_bytes());
    external.extend(name.as_bytes());
    // The safe decoding makes no atom that does not exist yet.
    let flags = if create { 0 } else { ERL_NIF_BIN2TERM_SAFE };
    from_external(env, &external, flags).ok_or(NoAtom::Missing)
}

/// The integer whose decimal text is `digits` (an optional `-`, then
/// digits). The conversion to base 2^64 is quadratic in the number of
/// digits, which the parser limits.
pub fn big_integer(env: Env<'_>, digits: &str) -> Option<ErlNifTerm> {
    let (negative, digits) = match digits.strip_prefix('-') {
        Some(magnitude) => (true, magnitude),
        None => (false, digits),
    };
    // Little-endian base 2^64 limbs, 19 decimal digits folded in at a time.
    let mut limbs: Vec<u64> = Vec::with_capacity(digits.len() / 19 + 1);
    for group in digits.as_bytes().chunks(19) {
        let scale = 10u128.pow(group.len() as u32);
        let mut carry = group
            .iter()
            .fold(0u128, |value, digit| value * 10 + u128::from(digit - b'0'));
        for limb in limbs.iter_mut() {
            let product = u128::from(*limb) * scale + carry;
            *limb = product as u64;
            carry = product >> 64;
        }
        if carry > 0 {
            limbs.push(carry as u64);
        }
    }
    let mut magnitude: Vec<u8> = limbs.iter().flat_map(|limb| limb.to_le_bytes()).collect();
    while magnitude.last() == Some(&0) {
        magnitude.pop();
    }

    let mut external = Vec::with_capacity(magnitude.len() + 7);
    external.push(VERSION);
    match u8::try_from(magnitude.len()) {
        Ok(length) => external.extend([SMALL_BIG_EXT, length]),
        Err(_) => {
            external.push(LARGE_BIG_EXT);
            external.extend(u32::try_from(magnitude.len()).ok()?.to_be_bytes());
        }
    }
    external.push(u8::from(negative));
    external.extend(magnitude);
    from_external(env, &external, 0)
}

/// The term `external` encodes, if it is one whole term.
fn from_external(env: Env<'_>, external: &[u8], flags: u32) -> Option<ErlNifTerm> {
    let mut term = MaybeUninit::uninit();
    // SAFETY: reads `external.len()` bytes; writes the term only on success.
    unsafe {
        let read = enif_binary_to_term(
            env.as_c_arg(),
            external.as_ptr(),
            external.len(),
            term.as_mut_ptr(),
            flags,
        );
        (read == external.len()).then(|| term.assume_init())
    }
}
