//! BEAM terms encoded as JSON text, byte for byte as `Jason.encode/2`
//! (1.4.5) writes them: a walk over the term ([`walk`]) that writes through
//! `mcp_framer_core::encode`, which knows JSON's text and nothing of terms.
//!
//! What `McpFramer.Native.encode/3` (or `encode_dirty/3`) replies, and what
//! `McpFramer.JSON.Encoder` then does:
//!
//! | reply                 | meaning                                        | the Elixir side then                  |
//! |-----------------------|------------------------------------------------|---------------------------------------|
//! | `{:ok, output}`       | the text: a binary, or iodata (see [`Form`])   | returns it                            |
//! | `{:error, reason}`    | a term Jason refuses; `reason` names it        | returns an `McpFramer.EncodeError`    |
//! | `:continue_dirty`     | more than a normal scheduler's call may take   | calls `encode_dirty/3`, same arguments|
//! | `:convert`            | a struct or key that only Elixir turns to text | converts the term, calls again, tagged|
//! | `:map_order`          | a map of over 32 pairs, this VM's order of such maps not known yet | calls `encode_map_order/2` with a map of 33 pairs and its keys in `Map.to_list/1`'s order, then calls again |
//!
//! `reason` is `{:invalid_byte, byte, string}`, `{:duplicate_key, key}`,
//! `{:unsupported, term}`, `{:struct, struct}`, `{:invalid_key, key}`,
//! `{:improper_list, tail}` or `{:no_memory, bytes}`.
//!
//! A term is converted at most once: the converted term carries the `tag`
//! (a fresh reference) in the tuples that stand for objects whose keys
//! were converted, `{tag, [{key, value}, ...]}`, and a call given a tag
//! takes what it still cannot write as an error. Nothing built in a call
//! that replies `:continue_dirty` or `:convert` lasts: the call that
//! follows starts over. `test/encode_protocol_test.exs` pins every row.

mod output;
mod pretty;
mod texts;
mod walk;

use crate::error::FramerError;
use crate::timeslice::{Scheduler, Timeslice};

use mcp_framer_core::encode::Escape;
use rustler::sys::ErlNifTerm;
use rustler::{Encoder, Env, NifResult, Term};
use std::cell::RefCell;
use walk::{Buffers, Invalid, Stop, Walker};

mod atoms {
    rustler::atoms! {
        ok, error, continue_dirty, convert, map_order,
        invalid_byte, duplicate_key, unsupported, invalid_key, improper_list, no_memory,
        struct_ = "struct",
    }
}

/// What the text is returned as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// One binary.
    Binary,
    /// Iodata: a binary, or a list of binaries in which each long string
    /// without escapes is the term's own binary instead of a copy.
    Iodata,
    /// Iodata, as `Iodata`, that ends in `\n`: a message for a Port.
    Line,
}

/// The options, as `McpFramer.JSON.Encoder` packs them: bits 0-1 the
/// escape mode, bit 2 `maps: :strict`, bits 3-4 the form.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    pub escape: Escape,
    pub strict: bool,
    pub form: Form,
}

impl Options {
    fn unpack(flags: u32) -> Option<Options> {
        let escape = match flags & 0b11 {
            0 => Escape::Json,
            1 => Escape::UnicodeSafe,
            2 => Escape::JavascriptSafe,
            _ => Escape::HtmlSafe,
        };
        let form = match (flags >> 3) & 0b11 {
            0 => Form::Binary,
            1 => Form::Iodata,
            2 => Form::Line,
            _ => return None,
        };
        (flags >> 5 == 0).then_some(Options {
            escape,
            strict: flags & 0b100 != 0,
            form,
        })
    }
}

/// Encodes `term` on a normal scheduler, within the time of one call.
#[rustler::nif]
fn encode<'a>(env: Env<'a>, term: Term<'a>, flags: u32, tag: Term<'a>) -> NifResult<Term<'a>> {
    run(env, term, flags, tag, Scheduler::Normal)
}

/// Encodes `term` of any size.
#[rustler::nif(schedule = "DirtyCpu")]
fn encode_dirty<'a>(
    env: Env<'a>,
    term: Term<'a>,
    flags: u32,
    tag: Term<'a>,
) -> NifResult<Term<'a>> {
    run(env, term, flags, tag, Scheduler::Dirty)
}

fn run<'a>(
    env: Env<'a>,
    term: Term<'a>,
    flags: u32,
    tag: Term<'a>,
    scheduler: Scheduler,
) -> NifResult<Term<'a>> {
    let options = Options::unpack(flags).ok_or(rustler::Error::BadArg)?;
    // `nil` on the first pass; the reference of a converted term after.
    let tag: Option<ErlNifTerm> = tag.is_ref().then(|| tag.as_c_arg());
    // The clock starts at the walk's first look at it, after a few hundred
    // values or some KiB of strings: a smaller term's time is taken to be
    // a message's, as a small chunk's is, since reading the clock would
    // cost a tenth of such a call. The text is counted as written before
    // each look (see `Walker::count_written`), and at the end.
    let time = Timeslice::new(scheduler, 0);
    time.count_messages(1);
    let reply = with_buffers(|buffers| {
        let mut walker = Walker::new(env, options, tag, time.limits(), buffers);
        let reply = walker.walk(term.as_c_arg()).and_then(|()| walker.finish());
        walker.count_written();
        reply
    });
    time.report(env);
    Ok(match reply {
        // SAFETY: the walker made the output in `env`, in this call.
        Ok(output) => (atoms::ok(), unsafe { Term::new(env, output) }).encode(env),
        Err(Stop::Dirty) => atoms::continue_dirty().encode(env),
        Err(Stop::Convert) => atoms::convert().encode(env),
        Err(Stop::MapOrder) => atoms::map_order().encode(env),
        Err(Stop::Invalid(invalid)) => (atoms::error(), reason(env, invalid)).encode(env),
        Err(Stop::Broken) => return Err(FramerError::EncoderMismatch.into()),
    })
}

/// Learns this VM's order of large maps from `map`, of over 32 pairs, and
/// its `keys` in `Map.to_list/1`'s order: `:ok`, or ErlangError
/// `:unknown_map_order` if its iterator gives that order neither way.
/// Other arguments are `ArgumentError`.
#[rustler::nif]
fn encode_map_order<'a>(env: Env<'a>, map: Term<'a>, keys: Term<'a>) -> NifResult<Term<'a>> {
    // rustler's list iterator panics at an improper tail; counting the
    // list first refuses one.
    keys.list_length()?;
    let keys: Vec<ErlNifTerm> = keys
        .into_list_iterator()?
        .map(|key| key.as_c_arg())
        .collect();
    if !matches!(map.map_size(), Ok(size) if size > 32 && size == keys.len()) {
        return Err(rustler::Error::BadArg);
    }
    if !walk::learn_map_order(env, map.as_c_arg(), &keys) {
        return Err(rustler::Error::RaiseAtom("unknown_map_order"));
    }
    Ok(atoms::ok().encode(env))
}

/// The `reason` of an `{:error, reason}` reply.
fn reason<'a>(env: Env<'a>, invalid: Invalid) -> Term<'a> {
    // SAFETY: every term an `Invalid` holds is part of the call's argument.
    let term = |raw: ErlNifTerm| unsafe { Term::new(env, raw) };
    match invalid {
        Invalid::Utf8 { string, byte } => (atoms::invalid_byte(), byte, term(string)).encode(env),
        Invalid::DuplicateKey(key) => {
            let key = String::from_utf8_lossy(&key).into_owned();
            (atoms::duplicate_key(), key).encode(env)
        }
        Invalid::Unsupported(value) => (atoms::unsupported(), term(value)).encode(env),
        Invalid::Struct(value) => (atoms::struct_(), term(value)).encode(env),
        Invalid::Key(key) => (atoms::invalid_key(), term(key)).encode(env),
        Invalid::ImproperList(tail) => (atoms::improper_list(), term(tail)).encode(env),
        Invalid::NoMemory(bytes) => (atoms::no_memory(), bytes as u64).encode(env),
    }
}

/// Runs `f` with this scheduler thread's byte buffer, empty, where the
/// walk writes its text: for `pretty`'s text laid out.
fn with_scratch<T>(f: impl FnOnce(&mut Vec<u8>) -> T) -> T {
    with_buffers(|buffers| f(buffers.scratch()))
}

/// Runs `f` with this scheduler thread's buffers, emptied before (a call
/// that stopped short may have left terms of its own in them) and after.
fn with_buffers<T>(f: impl FnOnce(&mut Buffers) -> T) -> T {
    thread_local! {
        static BUFFERS: RefCell<Buffers> = RefCell::new(Buffers::default());
    }
    BUFFERS.with(|buffers| {
        let mut buffers = buffers.borrow_mut();
        buffers.clear();
        let result = f(&mut buffers);
        buffers.clear();
        result
    })
}
