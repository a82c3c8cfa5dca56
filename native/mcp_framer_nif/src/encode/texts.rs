//! Texts the walk writes again and again, kept so that each is read and
//! escaped once:
//!
//! * [`Atoms`]: an atom's text, as `Atom.to_string/1` gives it, escaped
//!   and quoted, kept per scheduler thread: atoms live as long as the VM,
//!   so an atom's term stands for the same text in every call.
//! * [`Keys`]: a binary map key, escaped, quoted, with its `:`, for one
//!   call only: MCP messages repeat a few keys (`"type"`, `"properties"`)
//!   and a decoded document holds each as one term, but a term is the same
//!   binary only for as long as the call lasts.

use mcp_framer_core::encode::{self, Escape};
use rustler::sys::{enif_get_atom, enif_get_atom_length, ErlNifCharEncoding, ErlNifTerm};
use rustler::{Env, Term};
use std::hash::{Hash, Hasher};

const SLOTS: usize = 512;
/// The longest text kept, quotes included. A kept text is written as all
/// of its slot's bytes, cut back to its length: a copy of a known size
/// needs no call to `memcpy`.
const TEXT_MAX: usize = 48;

#[derive(Clone, Copy)]
struct Slot {
    term: ErlNifTerm,
    escape: Option<Escape>,
    length: u8,
    text: [u8; TEXT_MAX],
}

pub struct Atoms {
    slots: Box<[Slot]>,
}

impl Default for Atoms {
    fn default() -> Atoms {
        let empty = Slot {
            term: ErlNifTerm::default(),
            escape: None,
            length: 0,
            text: [0; TEXT_MAX],
        };
        Atoms {
            slots: vec![empty; SLOTS].into_boxed_slice(),
        }
    }
}

/// Takes the term's word as its hash.
struct Word(u64);

impl Hasher for Word {
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }
    fn write_usize(&mut self, word: usize) {
        self.0 = word as u64;
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A term's slot, from its word: an atom's index above six tag bits, or a
/// boxed term's pointer.
fn slot(term: ErlNifTerm) -> usize {
    let mut word = Word(0);
    term.hash(&mut word);
    ((word.0 >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 55) as usize % SLOTS
}

impl Atoms {
    /// Appends the atom's text as a JSON string; `Err` if out of memory.
    pub fn write(
        &mut self,
        env: Env<'_>,
        atom: ErlNifTerm,
        escape: Escape,
        out: &mut Vec<u8>,
    ) -> Result<(), ()> {
        let slot = &mut self.slots[slot(atom)];
        if slot.term == atom && slot.escape == Some(escape) {
            let length = out.len() + usize::from(slot.length);
            out.extend_from_slice(&slot.text);
            out.truncate(length);
            return Ok(());
        }
        let start = out.len();
        let text = utf8(env, atom).ok_or(())?;
        out.try_reserve(text.len() + 2).map_err(|_| ())?;
        out.push(b'"');
        // An atom's text is valid UTF-8.
        encode::write_escaped(out, &text, 0, escape).map_err(|_| ())?;
        out.push(b'"');
        let written = &out[start..];
        if written.len() <= TEXT_MAX {
            slot.term = atom;
            slot.escape = Some(escape);
            slot.length = written.len() as u8;
            slot.text[..written.len()].copy_from_slice(written);
        }
        Ok(())
    }
}

/// The atom's text in UTF-8.
fn utf8(env: Env<'_>, atom: ErlNifTerm) -> Option<Vec<u8>> {
    let raw = env.as_c_arg();
    let mut length = 0;
    let latin1 = ErlNifCharEncoding::ERL_NIF_LATIN1;
    // SAFETY: `atom` is an atom; at most 255 characters and a NUL are
    // written into the 256 bytes given.
    unsafe {
        if enif_get_atom_length(raw, atom, &mut length, latin1) != 0 {
            let mut bytes = [0u8; 256];
            let written = enif_get_atom(raw, atom, bytes.as_mut_ptr().cast(), 256, latin1);
            let latin1 = bytes.get(..(written as usize).checked_sub(1)?)?;
            let mut text = Vec::with_capacity(latin1.len() * 2);
            for &byte in latin1 {
                if byte < 0x80 {
                    text.push(byte);
                } else {
                    text.extend_from_slice(&[0xC0 | byte >> 6, 0x80 | (byte & 0x3F)]);
                }
            }
            return Some(text);
        }
    }
    // Characters past Latin-1: the external term format holds the text
    // in UTF-8, as ATOM_UTF8_EXT (118) or SMALL_ATOM_UTF8_EXT (119).
    // SAFETY: `atom` is part of the call's argument.
    let external = unsafe { Term::new(env, atom) }.to_binary();
    match external.as_slice() {
        [131, 118, high, low, text @ ..] => {
            let length = usize::from(u16::from_be_bytes([*high, *low]));
            text.get(..length).map(<[u8]>::to_vec)
        }
        [131, 119, length, text @ ..] => text.get(..usize::from(*length)).map(<[u8]>::to_vec),
        _ => None,
    }
}

/// The keys of one call: a slot is read only while its bit in `filled` is
/// set, and a new call clears them all. The first [`UNKEPT`] keys a call
/// writes are not kept: a small message names each of its keys once, and
/// keeping them cost a copy each that no later key read.
pub struct Keys {
    slots: Box<[Slot]>,
    filled: u64,
    written: usize,
}

const KEY_SLOTS: usize = 64;
const UNKEPT: usize = 16;

impl Default for Keys {
    fn default() -> Keys {
        let empty = Slot {
            term: ErlNifTerm::default(),
            escape: None,
            length: 0,
            text: [0; TEXT_MAX],
        };
        Keys {
            slots: vec![empty; KEY_SLOTS].into_boxed_slice(),
            filled: 0,
            written: 0,
        }
    }
}

impl Keys {
    /// Forgets every key: their terms were of another call.
    pub fn clear(&mut self) {
        self.filled = 0;
        self.written = 0;
    }

    /// Appends the text kept for `key`, if there is one.
    #[inline]
    pub fn write(&self, key: ErlNifTerm, out: &mut Vec<u8>) -> bool {
        let index = slot(key) % KEY_SLOTS;
        let slot = &self.slots[index];
        let found = self.filled & (1 << index) != 0 && slot.term == key;
        if found {
            let length = out.len() + usize::from(slot.length);
            out.extend_from_slice(&slot.text);
            out.truncate(length);
        }
        found
    }

    /// Keeps `text` for `key`, if it is short enough and the call has
    /// written [`UNKEPT`] keys before it.
    pub fn put(&mut self, key: ErlNifTerm, text: &[u8]) {
        if self.written < UNKEPT {
            self.written += 1;
            return;
        }
        let index = slot(key) % KEY_SLOTS;
        if let (Some(slot), Ok(length)) = (self.slots.get_mut(index), u8::try_from(text.len())) {
            if text.len() <= TEXT_MAX {
                slot.term = key;
                slot.length = length;
                slot.text[..text.len()].copy_from_slice(text);
                self.filled |= 1 << index;
            }
        }
    }
}
