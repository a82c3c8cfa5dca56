//! JSON documents decoded into BEAM terms, each in one pass: the core's
//! parser drives a [`TermBuilder`], within the time of the call and the
//! caller's [`Options`].
//!
//! Each scheduler thread has one [`Decoder`], whose buffers every document
//! decoded there reuses; a NIF call uses it through a [`Session`].

use crate::builder::{PendingKey, TermBuilder};
use crate::decode_error::{error_item, Cause};
use crate::keys::KeyTable;
use crate::options::{Keys, Options};
use crate::outcome;
use crate::terms;
use crate::timeslice::{self, OutOfTime, Timeslice};
use mcp_framer_core::json::{self, ErrorKind, Limit, Parser};
use rustler::sys::ErlNifTerm;
use rustler::{Atom, Binary, Encoder, Env, Term};
use std::cell::RefCell;

mod atoms {
    rustler::atoms! { max_depth, max_values, duplicate_keys, keys, error }
}

/// Why a document's decoding stopped short of a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// It needs more time than the call has left.
    Dirty,
    /// A key cannot become an atom (see `TermBuilder::refused`).
    KeyRefused,
    /// The BEAM could not allocate a binary or a bignum.
    NoMemory,
    /// The parser and the builder's stack disagree. Unreachable by design;
    /// reported instead of panicking.
    Broken,
}

impl From<OutOfTime> for Stop {
    fn from(_: OutOfTime) -> Stop {
        Stop::Dirty
    }
}

/// Terms kept between documents, per buffer; more is freed. With the
/// parser's and the encoder's, what a scheduler thread keeps adds up to
/// about 2.25 MiB at most: the README says under 2.5 MiB, and
/// test/memory_test.exs checks it.
const KEEP_TERMS: usize = 8192;

/// What a document decodes to.
pub enum Decoded<'a> {
    /// What `Jason.decode/2` returns for it: `{:ok, term}`, or
    /// `{:error, %McpFramer.DecodeError{}}`.
    Result(Term<'a>),
    /// A key of it cannot become an atom, where `Jason.decode/2` raises:
    /// the error a framer gives for it instead, and the key, decoded.
    KeyRefused { item: Term<'a>, key: Term<'a> },
}

/// What a framed message becomes.
pub enum Item<'a> {
    /// What `Jason.decode/2` returns for it, or the error for a key that
    /// cannot become an atom.
    Decoded(Term<'a>),
    /// Over the call's time, to be decoded on a dirty scheduler by the
    /// Elixir side (see `outcome`).
    LeftDirty(Term<'a>),
}

/// A decoder's buffers, reused from one document to the next.
pub struct Decoder {
    parser: Parser,
    stack: Vec<ErlNifTerm>,
    map_keys: Vec<ErlNifTerm>,
    map_values: Vec<ErlNifTerm>,
    pending: Vec<PendingKey>,
    names: Vec<u8>,
    completed: Vec<ErlNifTerm>,
    /// Made anew in each call (see [`Session`]): one call decodes with
    /// one set of options, so its keys are all binaries or all atoms.
    key_table: Box<KeyTable>,
}

impl Default for Decoder {
    fn default() -> Decoder {
        Decoder {
            parser: Parser::default(),
            stack: Vec::new(),
            map_keys: Vec::new(),
            map_values: Vec::new(),
            pending: Vec::new(),
            names: Vec::new(),
            completed: Vec::new(),
            key_table: Box::new(KeyTable::new()),
        }
    }
}

/// Runs `f` with this scheduler thread's decoder, for a call in `env`.
pub fn with_session<'a, T>(env: Env<'a>, f: impl FnOnce(&mut Session<'_, 'a>) -> T) -> T {
    thread_local! {
        static DECODER: RefCell<Decoder> = RefCell::new(Decoder::default());
    }
    DECODER.with(|decoder| f(&mut Session::new(&mut decoder.borrow_mut(), env)))
}

/// The decoder, for the documents of one NIF call in `env`.
pub struct Session<'d, 'a> {
    decoder: &'d mut Decoder,
    env: Env<'a>,
}

impl<'d, 'a> Session<'d, 'a> {
    fn new(decoder: &'d mut Decoder, env: Env<'a>) -> Session<'d, 'a> {
        // The keys were made in another call.
        decoder.key_table.clear();
        Session { decoder, env }
    }

    /// The item for a framed `message`; one that would go past the call's
    /// `limits` is left dirty.
    pub fn item(
        &mut self,
        message: Binary<'a>,
        options: &Options,
        limits: Option<&Timeslice>,
    ) -> Result<Item<'a>, Stop> {
        match self.decode(message, options, limits) {
            Ok(Decoded::Result(item) | Decoded::KeyRefused { item, .. }) => Ok(Item::Decoded(item)),
            Err(Stop::Dirty) => Ok(Item::LeftDirty(outcome::left_dirty(self.env, message))),
            Err(stop) => Err(stop),
        }
    }

    /// Decodes `document` as `Jason.decode/2` does with `options`; the
    /// error's `data` is the document.
    ///
    /// Under `limits`, it stops with [`Stop::Dirty`] rather than go past
    /// their hard limit: at once for a document over
    /// [`timeslice::DECODE_NORMAL_MAX`], and for a long one as soon as it
    /// falls behind the pace that would finish it in time.
    pub fn decode(
        &mut self,
        document: Binary<'a>,
        options: &Options,
        limits: Option<&Timeslice>,
    ) -> Result<Decoded<'a>, Stop> {
        let env = self.env;
        let input = document.as_slice();
        match limits {
            Some(_) if input.len() > timeslice::DECODE_NORMAL_MAX => return Err(Stop::Dirty),
            Some(time) => time.begin_document(input.len()),
            None => {}
        }
        let decoder = &mut *self.decoder;
        let (parsed, refused) = match options.keys {
            Keys::Strings | Keys::Pairs => parse::<false>(decoder, env, document, options, limits),
            Keys::Atoms | Keys::ExistingAtoms => {
                parse::<true>(decoder, env, document, options, limits)
            }
        };
        let error = |position, cause| {
            if let (Some(time), true) = (limits, options.copy_strings) {
                // The error then holds a copy of the document, which
                // cannot stop once started.
                time.afford_copy(document.len())?;
            }
            // For a key function, the keys it is to be called on first, in
            // a list that cannot stop once started either.
            let completed = (options.keys == Keys::Pairs).then_some(&decoder.completed[..]);
            if let (Some(time), Some(keys)) = (limits, completed) {
                time.afford_terms(keys.len())?;
            }
            error_item(
                env,
                document,
                options.copy_strings,
                position,
                cause,
                completed,
            )
        };
        let decoded = (|| match parsed {
            // SAFETY: the builder made the term in `env`, during this call.
            Ok(term) => Ok(Decoded::Result(
                (outcome::atoms::ok(), unsafe { Term::new(env, term) }).encode(env),
            )),
            Err(json::Error {
                kind: ErrorKind::Exhausted,
                ..
            }) => Err(Stop::Dirty),
            Err(json::Error {
                kind: ErrorKind::Builder(Stop::KeyRefused),
                position,
            }) => {
                let name = refused.and_then(|from| decoder.names.get(from..));
                let key = terms::copy(env, name.ok_or(Stop::Broken)?).ok_or(Stop::NoMemory)?;
                let limit = (atoms::keys(), options.keys.atom().encode(env));
                let item = error(position, limit_cause(limit))?;
                // SAFETY: `copy` made the key in `env`.
                let key = unsafe { Term::new(env, key) };
                Ok(Decoded::KeyRefused { item, key })
            }
            Err(json::Error {
                kind: ErrorKind::Builder(stop),
                ..
            }) => Err(stop),
            Err(json::Error { position, kind }) => {
                let cause = match kind {
                    ErrorKind::InvalidToken { length } => Cause::Token { length },
                    ErrorKind::Limit(limit) => limit_cause(limit_named(env, limit, options)),
                    _ => Cause::Syntax,
                };
                error(position, cause).map(Decoded::Result)
            }
        })();
        // Whatever the result, the next document starts from empty buffers.
        for buffer in [
            &mut decoder.stack,
            &mut decoder.map_keys,
            &mut decoder.map_values,
            &mut decoder.completed,
        ] {
            buffer.clear();
            buffer.shrink_to(KEEP_TERMS);
        }
        decoder.pending.clear();
        decoder.pending.shrink_to(KEEP_TERMS);
        decoder.names.clear();
        decoder.names.shrink_to(Parser::KEEP_BYTES);
        decoded
    }
}

/// `document` parsed into terms, with keys made atoms if `ATOM_KEYS`; and
/// where the name of a key that could not become one is, if one was refused.
fn parse<'a, const ATOM_KEYS: bool>(
    decoder: &mut Decoder,
    env: Env<'a>,
    document: Binary<'a>,
    options: &Options,
    limits: Option<&Timeslice>,
) -> (Result<ErlNifTerm, json::Error<Stop>>, Option<usize>) {
    let mut builder = TermBuilder::<ATOM_KEYS> {
        env,
        document,
        copy_strings: options.copy_strings,
        keys: options.keys,
        limits,
        key_table: &mut decoder.key_table,
        stack: &mut decoder.stack,
        long_key_bytes: 0,
        map_keys: &mut decoder.map_keys,
        map_values: &mut decoder.map_values,
        pending: &mut decoder.pending,
        names: &mut decoder.names,
        completed: &mut decoder.completed,
        refused: None,
    };
    let input = document.as_slice();
    let parsed = match limits {
        Some(mut time) => decoder.parser.parse_rationed(
            input,
            &mut builder,
            options.limits,
            timeslice::FUEL_STEP,
            &mut time,
        ),
        None => decoder
            .parser
            .parse_limited(input, &mut builder, options.limits),
    };
    (parsed, builder.refused)
}

fn limit_cause((limit, value): (Atom, Term<'_>)) -> Cause<'_> {
    Cause::Limit { limit, value }
}

/// The option a document went past, and its value.
fn limit_named<'a>(env: Env<'a>, limit: Limit, options: &Options) -> (Atom, Term<'a>) {
    let limits = &options.limits;
    match limit {
        Limit::Depth => (atoms::max_depth(), (limits.max_depth as u64).encode(env)),
        Limit::Values => (atoms::max_values(), (limits.max_values as u64).encode(env)),
        Limit::DuplicateKey => (atoms::duplicate_keys(), atoms::error().encode(env)),
    }
}
