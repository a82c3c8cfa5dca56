//! The `json::Builder` that makes BEAM terms in place, with no intermediate
//! Rust value. It knows terms and nothing of JSON, as the parser knows JSON
//! and nothing of terms.
//!
//! Finished terms wait on a stack. An array or object takes its items off
//! the top and becomes one term, made from an array in a single call.
//!
//! A key that is to become an atom and is not one yet waits for its pair to
//! be complete, as Jason converts it at the `,` or `}` after the value: an
//! error in the value comes first, and no atom is made for a pair that
//! never completes. For a key function ([`Keys::Pairs`]), an object is its
//! pairs in the document's order, and each key is noted as its pair
//! completes, for the Elixir side to call the function where Jason does.

use crate::decode::Stop;
use crate::external::{self, NoAtom};
use crate::keys::KeyTable;
use crate::options::Keys;
use crate::terms::{self, Unmade, SUB_BINARY_MIN};
use crate::timeslice::{self, Timeslice};
use mcp_framer_core::json::{Builder, Text};
use mcp_framer_core::pace;
use rustler::sys::{
    enif_make_double, enif_make_int64, enif_make_map_put, enif_make_new_map,
    enif_make_tuple_from_array, ErlNifTerm,
};
use rustler::{Binary, Env};
use std::mem::MaybeUninit;

mod atoms {
    rustler::atoms! {
        nil,
        true_ = "true",
        false_ = "false",
    }
}

/// A map this small is made without an estimate of its cost: with up to
/// 32 pairs whose keys hold under 4 KiB, `pace::map_put_nanos` is under
/// 30 us, well below what `Timeslice::afford_map` checks. Every object of
/// a document without keys of [`SUB_BINARY_MIN`] bytes or more is, up to
/// 32 pairs.
const SMALL_MAP_PAIRS: usize = 32;
const SMALL_MAP_KEY_BYTES: usize = 4096;

/// Makes the terms of one document; with `ATOM_KEYS`, its keys become
/// atoms, else binaries, a choice made once per document so that a
/// framer of binary keys pays nothing for atoms.
pub struct TermBuilder<'a, 'd, const ATOM_KEYS: bool> {
    pub env: Env<'a>,
    pub document: Binary<'a>,
    /// Every string is a copy, so no decoded term keeps the document alive.
    pub copy_strings: bool,
    /// With `ATOM_KEYS`, which atoms; else strings, or pairs.
    pub keys: Keys,
    pub limits: Option<&'d Timeslice>,
    pub key_table: &'d mut KeyTable,
    pub stack: &'d mut Vec<ErlNifTerm>,
    /// The bytes of the document's binary keys of [`SUB_BINARY_MIN`] bytes
    /// or more so far: with each object's count of pairs, a bound on what
    /// hashing or sorting its keys may cost, kept for long keys alone so
    /// that short ones cost nothing.
    pub long_key_bytes: usize,
    /// Where an object's keys and values are gathered to make its map.
    pub map_keys: &'d mut Vec<ErlNifTerm>,
    pub map_values: &'d mut Vec<ErlNifTerm>,
    /// With atom keys: one entry per pair not yet complete, innermost
    /// last, and the names of those still to be made.
    pub pending: &'d mut Vec<PendingKey>,
    pub names: &'d mut Vec<u8>,
    /// With [`Keys::Pairs`], the key of each pair completed, in order.
    pub completed: &'d mut Vec<ErlNifTerm>,
    /// Where the name of a key that cannot become an atom starts in
    /// `names`, once one is refused.
    pub refused: Option<usize>,
}

/// An atom key whose pair is not complete yet.
#[derive(Clone, Copy)]
pub enum PendingKey {
    /// Its atom is on the stack.
    Made,
    /// To be made from its name, `names[from..]`; a placeholder holds its
    /// place on the stack.
    Create { from: usize },
    /// It cannot become an atom, and its pair is refused once complete.
    Refused { from: usize },
}

impl<'a, const ATOM_KEYS: bool> TermBuilder<'a, '_, ATOM_KEYS> {
    #[inline]
    fn push(&mut self, term: ErlNifTerm, units: u32) -> Result<(), Stop> {
        self.stack.push(term);
        self.charge(units)
    }

    #[inline]
    fn charge(&mut self, units: u32) -> Result<(), Stop> {
        match self.limits {
            Some(time) => Ok(time.charge(units)?),
            None => Ok(()),
        }
    }

    fn copy(&self, bytes: &[u8]) -> Result<ErlNifTerm, Stop> {
        terms::copy(self.env, bytes).ok_or(Stop::NoMemory)
    }

    /// A long string's copy, made a step at a time, each only if the call
    /// can afford it: into memory not yet touched, a mebibyte's copy took
    /// up to 4.6 ms on a busy host, which no pace of the parse foresees.
    #[cold]
    #[inline(never)]
    fn copy_in_steps(&self, bytes: &[u8], time: &Timeslice) -> Result<ErlNifTerm, Stop> {
        let more = || time.afford_copy_step();
        let copy = terms::copy_in_steps(self.env, &[bytes], timeslice::COPY_STEP, more);
        copy.map_err(|unmade| match unmade {
            Unmade::NoMemory => Stop::NoMemory,
            Unmade::Stopped => Stop::Dirty,
        })
    }

    fn text(&self, text: Text<'a, '_>) -> Result<ErlNifTerm, Stop> {
        match text {
            Text::Input(text) if text.len() >= SUB_BINARY_MIN && !self.copy_strings => {
                // The parser's `Input` text is a slice of the document.
                let base = self.document.as_slice().as_ptr() as usize;
                let offset = (text.as_ptr() as usize)
                    .checked_sub(base)
                    .ok_or(Stop::Broken)?;
                let binary = self
                    .document
                    .make_subbinary(offset, text.len())
                    .map_err(|_| Stop::Broken)?;
                Ok(binary.to_term(self.env).as_c_arg())
            }
            text => {
                let bytes = text.as_str().as_bytes();
                match self.limits {
                    Some(time) if bytes.len() > timeslice::COPY_STEP.get() => {
                        self.copy_in_steps(bytes, time)
                    }
                    _ => self.copy(bytes),
                }
            }
        }
    }

    /// A key that is to be an atom: the atom if it exists already, else a
    /// placeholder until its pair is complete. Only as much of a name is
    /// kept as an atom may have and one character more: that is enough to
    /// make the atom, or for the Elixir side to raise what Jason raises.
    fn atom_key(&mut self, name: &str) -> Result<(), Stop> {
        let existing = match self.key_table.get(name.as_bytes()) {
            Some(atom) => Ok(atom),
            None => {
                let atom = external::atom(self.env, name, false);
                if let Ok(atom) = atom {
                    self.key_table.put(name.as_bytes(), atom);
                }
                atom
            }
        };
        let (term, pending) = match existing {
            Ok(atom) => (atom, PendingKey::Made),
            Err(missing) => {
                let from = self.names.len();
                let kept = name
                    .char_indices()
                    .nth(external::ATOM_MAX_CHARS + 1)
                    .map_or(name.len(), |(end, _)| end);
                self.names
                    .extend_from_slice(name.as_bytes().get(..kept).unwrap_or_default());
                let pending = match (self.keys, missing) {
                    (Keys::Atoms, NoAtom::Missing) => PendingKey::Create { from },
                    _ => PendingKey::Refused { from },
                };
                (atoms::nil().as_c_arg(), pending)
            }
        };
        self.pending.push(pending);
        let units = 1 + name.len() / 64;
        self.push(term, u32::try_from(units).unwrap_or(u32::MAX))
    }

    /// The last `count` terms, replaced by what `make` makes of them.
    fn collapse(
        &mut self,
        count: usize,
        make: impl FnOnce(&mut Self, usize) -> Result<ErlNifTerm, Stop>,
    ) -> Result<(), Stop> {
        let from = self.stack.len().checked_sub(count).ok_or(Stop::Broken)?;
        if let Some(time) = self.limits {
            time.afford_terms(count)?;
        }
        let term = make(self, from)?;
        self.stack.truncate(from);
        let units = u32::try_from(count / 16).unwrap_or(u32::MAX);
        self.push(term, units.saturating_add(1))
    }
}

impl<'a, const ATOM_KEYS: bool> Builder<'a> for TermBuilder<'a, '_, ATOM_KEYS> {
    type Value = ErlNifTerm;
    type Error = Stop;

    fn null(&mut self) -> Result<(), Stop> {
        self.push(atoms::nil().as_c_arg(), 1)
    }

    fn bool(&mut self, value: bool) -> Result<(), Stop> {
        let atom = if value {
            atoms::true_()
        } else {
            atoms::false_()
        };
        self.push(atom.as_c_arg(), 1)
    }

    fn integer(&mut self, value: i64) -> Result<(), Stop> {
        // SAFETY: makes a term in the call's own environment.
        let term = unsafe { enif_make_int64(self.env.as_c_arg(), value) };
        self.push(term, 1)
    }

    fn big_integer(&mut self, digits: &'a str) -> Result<(), Stop> {
        // At most `json::INTEGER_MAX_CHARS` digits, which the parser
        // charged for.
        let term = external::big_integer(self.env, digits).ok_or(Stop::NoMemory)?;
        let units = u32::try_from(digits.len() / 16).unwrap_or(u32::MAX);
        self.push(term, units.saturating_add(1))
    }

    fn float(&mut self, value: f64) -> Result<(), Stop> {
        // SAFETY: the parser gives only finite floats, which enif accepts.
        let term = unsafe { enif_make_double(self.env.as_c_arg(), value) };
        self.push(term, 1)
    }

    fn string(&mut self, text: Text<'a, '_>) -> Result<(), Stop> {
        let units = 1 + text.as_str().len() / 64;
        let term = self.text(text)?;
        self.push(term, u32::try_from(units).unwrap_or(u32::MAX))
    }

    fn begin_array(&mut self) -> Result<(), Stop> {
        self.charge(1)
    }

    fn end_array(&mut self, count: usize) -> Result<(), Stop> {
        self.collapse(count, |builder, from| {
            terms::list(builder.env, &builder.stack[from..]).ok_or(Stop::Broken)
        })
    }

    fn key(&mut self, text: Text<'a, '_>) -> Result<(), Stop> {
        if ATOM_KEYS {
            return self.atom_key(text.as_str());
        }
        let key = text.as_str().as_bytes();
        if key.len() >= SUB_BINARY_MIN {
            self.long_key_bytes = self.long_key_bytes.saturating_add(key.len());
            return self.string(text);
        }
        let term = match self.key_table.get(key) {
            Some(term) => term,
            None => {
                let term = self.copy(key)?;
                self.key_table.put(key, term);
                term
            }
        };
        self.push(term, 1)
    }

    fn end_pair(&mut self) -> Result<(), Stop> {
        if !ATOM_KEYS {
            if self.keys == Keys::Pairs {
                // The key is right below the pair's value.
                let key = self.stack.len().checked_sub(2).ok_or(Stop::Broken)?;
                self.completed.push(self.stack[key]);
            }
            return Ok(());
        }
        match self.pending.pop().ok_or(Stop::Broken)? {
            PendingKey::Made => Ok(()),
            PendingKey::Create { from } => {
                let name = self.names.get(from..).ok_or(Stop::Broken)?;
                let name = std::str::from_utf8(name).map_err(|_| Stop::Broken)?;
                let atom = external::atom(self.env, name, true).map_err(|_| Stop::Broken)?;
                self.key_table.put(name.as_bytes(), atom);
                // The key's placeholder is right below the pair's value.
                let slot = self.stack.len().checked_sub(2).ok_or(Stop::Broken)?;
                self.stack[slot] = atom;
                self.names.truncate(from);
                Ok(())
            }
            PendingKey::Refused { from } => {
                self.refused = Some(from);
                Err(Stop::KeyRefused)
            }
        }
    }

    fn begin_object(&mut self) -> Result<(), Stop> {
        self.charge(1)
    }

    fn end_object(&mut self, count: usize) -> Result<(), Stop> {
        if self.keys == Keys::Pairs {
            return self.collapse(2 * count, |builder, from| {
                let pairs = terms::list(builder.env, &builder.stack[from..]).ok_or(Stop::Broken)?;
                // SAFETY: `pairs` was made in the call's environment.
                Ok(unsafe { enif_make_tuple_from_array(builder.env.as_c_arg(), &pairs, 1) })
            });
        }
        // The map is made in one call that cannot stop, which hashes or
        // sorts the keys, and made again a pair at a time if one repeats:
        // a map of many pairs or long keys only if the call can afford it.
        let key_bytes = (count * SUB_BINARY_MIN).saturating_add(self.long_key_bytes);
        let small = count <= SMALL_MAP_PAIRS && key_bytes < SMALL_MAP_KEY_BYTES;
        let afford_map = |limits: Option<&Timeslice>, nanos: fn(usize, usize) -> u64| match limits {
            Some(time) if !small => time.afford_map(nanos(count, key_bytes)),
            _ => Ok(()),
        };
        afford_map(self.limits, pace::map_nanos)?;
        self.collapse(2 * count, |builder, from| {
            builder.map_keys.clear();
            builder.map_values.clear();
            for pair in builder.stack[from..].chunks_exact(2) {
                builder.map_keys.push(pair[0]);
                builder.map_values.push(pair[1]);
            }
            let env = builder.env;
            if let Some(map) = terms::map_from_arrays(env, builder.map_keys, builder.map_values) {
                return Ok(map);
            }
            // A key repeats. Put the pairs last to first, so that the
            // first occurrence of a key is put last and wins.
            afford_map(builder.limits, pace::map_put_nanos)?;
            // SAFETY: every key and value is a term made in `env`.
            unsafe {
                let mut map = enif_make_new_map(env.as_c_arg());
                let pairs = builder.map_keys.iter().zip(builder.map_values.iter());
                for (&key, &value) in pairs.rev() {
                    let mut next = MaybeUninit::uninit();
                    if enif_make_map_put(env.as_c_arg(), map, key, value, next.as_mut_ptr()) == 0 {
                        return Err(Stop::NoMemory);
                    }
                    map = next.assume_init();
                }
                Ok(map)
            }
        })
    }

    fn finish(&mut self) -> Result<ErlNifTerm, Stop> {
        self.stack.pop().ok_or(Stop::Broken)
    }
}
