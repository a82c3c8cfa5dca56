//! How a document is decoded: the options `McpFramer.JSON` checks and hands
//! over as `{strings, keys, max_depth, max_values, duplicate_keys}`, with 0
//! for a limit that is not set, and `:pairs` for `keys` given a function.

use crate::error::FramerError;
use mcp_framer_core::json::Limits;
use rustler::{Atom, Decoder, NifResult, Term};

mod atoms {
    rustler::atoms! {
        reference, copy, strings, atoms, pairs, first, error,
        existing_atoms = "atoms!",
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Every string is a copy, so that no decoded term keeps the document
    /// alive.
    pub copy_strings: bool,
    pub keys: Keys,
    pub limits: Limits,
}

/// What object keys become.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keys {
    Strings,
    /// Atoms, made when they do not exist (`String.to_atom/1`).
    Atoms,
    /// Atoms that exist already (`String.to_existing_atom/1`).
    ExistingAtoms,
    /// Binaries, for a key function the Elixir side calls: each object is
    /// `{pairs}`, its keys and values alternating in the document's order,
    /// and an error also lists the keys of the pairs completed before it.
    Pairs,
}

impl Keys {
    /// The option's value, as `keys:` is given it.
    pub fn atom(self) -> Atom {
        match self {
            Keys::Strings => atoms::strings(),
            Keys::Atoms => atoms::atoms(),
            Keys::ExistingAtoms => atoms::existing_atoms(),
            Keys::Pairs => atoms::pairs(),
        }
    }
}

impl<'a> Decoder<'a> for Options {
    fn decode(term: Term<'a>) -> NifResult<Options> {
        let bad = || FramerError::BadOptions;
        let (strings, keys, max_depth, max_values, duplicate_keys): (Atom, Atom, u64, u64, Atom) =
            term.decode().map_err(|_| bad())?;
        let copy_strings = match strings {
            s if s == atoms::reference() => false,
            s if s == atoms::copy() => true,
            _ => return Err(bad().into()),
        };
        let keys = match keys {
            k if k == atoms::strings() => Keys::Strings,
            k if k == atoms::atoms() => Keys::Atoms,
            k if k == atoms::existing_atoms() => Keys::ExistingAtoms,
            k if k == atoms::pairs() => Keys::Pairs,
            _ => return Err(bad().into()),
        };
        let unique_keys = match duplicate_keys {
            d if d == atoms::first() => false,
            d if d == atoms::error() => true,
            _ => return Err(bad().into()),
        };
        let limit = |max: u64| match max {
            0 => usize::MAX,
            max => usize::try_from(max).unwrap_or(usize::MAX),
        };
        Ok(Options {
            copy_strings,
            keys,
            limits: Limits {
                max_depth: limit(max_depth),
                max_values: limit(max_values),
                unique_keys,
            },
        })
    }
}
