//! JSON documents decoded into BEAM terms, each in one pass: the core's
//! parser drives a [`TermBuilder`], within the time of the call.
//!
//! Each scheduler thread has one [`Decoder`], whose buffers every document
//! decoded there reuses; a NIF call uses it through a [`Session`].

use crate::builder::TermBuilder;
use crate::decode_error::error_item;
use crate::keys::KeyTable;
use crate::outcome;
use crate::timeslice::{self, OutOfTime, Timeslice};
use mcp_framer_core::json::{self, ErrorKind, Limits, Parser};
use rustler::sys::ErlNifTerm;
use rustler::{Binary, Encoder, Env, Term};
use std::cell::RefCell;

/// Why a document's decoding stopped short of a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// It needs more time than the call has left.
    Dirty,
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

/// Terms kept between documents, per buffer; more is freed.
const KEEP_TERMS: usize = 8192;

/// What a framed message becomes.
pub enum Item<'a> {
    /// What `Jason.decode/1` returns for it.
    Decoded(Term<'a>),
    /// Over the call's time, to be decoded on a dirty scheduler by the
    /// Elixir side (see `outcome`).
    LeftDirty(Term<'a>),
}

/// A decoder's buffers, reused from one document to the next.
pub struct Decoder {
    parser: Parser,
    stack: Vec<ErlNifTerm>,
    keys: Vec<ErlNifTerm>,
    values: Vec<ErlNifTerm>,
    key_table: Box<KeyTable>,
}

impl Default for Decoder {
    fn default() -> Decoder {
        Decoder {
            parser: Parser::default(),
            stack: Vec::new(),
            keys: Vec::new(),
            values: Vec::new(),
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
        copy_strings: bool,
        limits: Option<&Timeslice>,
    ) -> Result<Item<'a>, Stop> {
        match self.decode(message, copy_strings, limits) {
            Ok(item) => Ok(Item::Decoded(item)),
            Err(Stop::Dirty) => Ok(Item::LeftDirty(outcome::left_dirty(
                self.env,
                message,
                copy_strings,
            ))),
            Err(stop) => Err(stop),
        }
    }

    /// Decodes `document` into what `Jason.decode/1` returns for it:
    /// `{:ok, term}`, or `{:error, %McpFramer.DecodeError{}}` whose `data`
    /// is the document.
    ///
    /// Under `limits`, it stops with [`Stop::Dirty`] rather than go past
    /// their hard limit: at once for a document over
    /// [`timeslice::DECODE_NORMAL_MAX`], and for a long one as soon as it
    /// falls behind the pace that would finish it in time.
    pub fn decode(
        &mut self,
        document: Binary<'a>,
        copy_strings: bool,
        limits: Option<&Timeslice>,
    ) -> Result<Term<'a>, Stop> {
        let env = self.env;
        let input = document.as_slice();
        match limits {
            Some(_) if input.len() > timeslice::DECODE_NORMAL_MAX => return Err(Stop::Dirty),
            Some(time) => time.begin_document(input.len()),
            None => {}
        }
        let decoder = &mut *self.decoder;
        let mut builder = TermBuilder {
            env,
            document,
            copy_strings,
            limits,
            key_table: &mut decoder.key_table,
            stack: &mut decoder.stack,
            keys: &mut decoder.keys,
            values: &mut decoder.values,
        };
        let parsed = match limits {
            Some(mut time) => decoder.parser.parse_rationed(
                input,
                &mut builder,
                Limits::NONE,
                timeslice::FUEL_STEP,
                &mut time,
            ),
            None => decoder.parser.parse(input, &mut builder),
        };
        for buffer in [&mut decoder.stack, &mut decoder.keys, &mut decoder.values] {
            buffer.clear();
            buffer.shrink_to(KEEP_TERMS);
        }
        match parsed {
            // SAFETY: the builder made the term in `env`, during this call.
            Ok(term) => Ok((outcome::atoms::ok(), unsafe { Term::new(env, term) }).encode(env)),
            Err(json::Error {
                kind: ErrorKind::Exhausted,
                ..
            }) => Err(Stop::Dirty),
            Err(json::Error {
                kind: ErrorKind::Builder(stop),
                ..
            }) => Err(stop),
            Err(json::Error { position, kind }) => {
                let token = match kind {
                    ErrorKind::InvalidToken { length } => Some(length),
                    _ => None,
                };
                if let (Some(time), true) = (limits, copy_strings) {
                    // The error then holds a copy of the document, which
                    // cannot stop once started.
                    time.afford_copy(document.len())?;
                }
                error_item(env, document, copy_strings, position, token)
            }
        }
    }
}
