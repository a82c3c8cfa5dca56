//! NIF glue: decode arguments, lock, run `mcp_framer_core`, encode terms.
//!
//! How long each call may run is `timeslice`'s; what a feed returns, and
//! which replies advance a framer's generation, is `outcome`'s.

mod alloc;
mod builder;
mod decode;
mod decode_error;
mod encode;
mod error;
mod external;
mod held;
mod keys;
mod options;
mod outcome;
mod terms;
mod timeslice;

use decode::{Decoded, Item, Session, Stop};
use error::FramerError;
use held::HeldBytes;
use mcp_framer_core::arch::Isa;
use mcp_framer_core::{Framer, Message, Reply};
use options::{Keys, Options};
use outcome::{atoms, Items, Outcome};
use rustler::sys::{enif_make_list_from_array, ErlNifTerm};
use rustler::{Binary, Encoder, Env, NifResult, Resource, ResourceArc, Term};
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};
use terms::HEAP_BINARY_MAX;
use timeslice::{Scheduler, Timeslice};

struct State {
    framer: Framer,
    held: HeldBytes,
    /// Advanced by every outcome that changes the state or keeps it for a
    /// dirty call (see `outcome`); a `%McpFramer{}` carrying another number
    /// is stale.
    generation: u64,
    /// The messages of the current call, kept between calls so that building
    /// the list allocates nothing but the list; room for at most
    /// [`KEEP_MESSAGES`] is kept. Cleared as each call starts.
    messages: Vec<ErlNifTerm>,
}

/// Room kept for a call's messages, 64 KiB: what a call on a normal
/// scheduler takes at most. A dirty call's millions are let go.
const KEEP_MESSAGES: usize = 8192;

/// A framer's state, shared by every copy of its `%McpFramer{}`, and its
/// settings: its cap, and how it decodes each message as JSON, if it
/// does; fixed when it is made, so read without the lock.
struct FramerResource {
    state: Mutex<State>,
    cap: NonZeroUsize,
    decode: Option<Options>,
}

#[rustler::resource_impl]
impl Resource for FramerResource {}

/// A new framer's state. `McpFramer` keeps it in its struct with the
/// generation, 0. With `decode`, each message is decoded as JSON with
/// those options; not with keys for a function, which only
/// `McpFramer.JSON` calls.
#[rustler::nif]
fn new(env: Env<'_>, max_message_bytes: u64, decode: Option<Options>) -> NifResult<Term<'_>> {
    let cap = usize::try_from(max_message_bytes)
        .ok()
        .and_then(NonZeroUsize::new)
        .ok_or(FramerError::BadCap)?;
    if decode.is_some_and(|options| options.keys == Keys::Pairs) {
        return Err(FramerError::BadOptions.into());
    }
    let state = State {
        framer: Framer::new(cap),
        held: HeldBytes::default(),
        generation: 0,
        messages: Vec::new(),
    };
    let resource = FramerResource {
        state: Mutex::new(state),
        cap,
        decode,
    };
    Ok(ResourceArc::new(resource).encode(env))
}

/// Feeds a chunk on a normal scheduler; replies as `outcome` describes.
#[rustler::nif]
fn feed<'a>(
    env: Env<'a>,
    resource: Term<'a>,
    generation: Term<'a>,
    chunk: Binary<'a>,
) -> NifResult<Term<'a>> {
    feed_chunk(env, resource, generation, chunk, Scheduler::Normal)
}

/// Feeds a chunk of any size on a dirty CPU scheduler.
#[rustler::nif(schedule = "DirtyCpu")]
fn feed_dirty<'a>(
    env: Env<'a>,
    resource: Term<'a>,
    generation: Term<'a>,
    chunk: Binary<'a>,
) -> NifResult<Term<'a>> {
    feed_chunk(env, resource, generation, chunk, Scheduler::Dirty)
}

/// The held byte count, or `:busy` while another process holds the lock.
#[rustler::nif]
fn buffered_bytes<'a>(
    env: Env<'a>,
    resource: Term<'a>,
    generation: Term<'a>,
) -> NifResult<Term<'a>> {
    Ok(match lock(framer(resource)?, generation)? {
        Some(state) => (state.framer.held() as u64).encode(env),
        None => atoms::busy().encode(env),
    })
}

/// A framer's settings, `{max_message_bytes, decode}` (`:json` or `nil`),
/// which any copy of it may ask for, stale ones too.
#[rustler::nif]
fn settings<'a>(env: Env<'a>, resource: Term<'a>) -> NifResult<Term<'a>> {
    let framer = framer(resource)?;
    let decode = framer.decode.map(|_| atoms::json());
    Ok((framer.cap.get() as u64, decode).encode(env))
}

/// The framer a `%McpFramer{}`'s `resource` field holds, which a caller
/// may have altered.
fn framer<'a>(resource: Term<'a>) -> NifResult<&'a FramerResource> {
    resource
        .decode()
        .map_err(|_| FramerError::NotAFramer.into())
}

/// Locks the framer's state, if `generation` is its latest; `None` if
/// another process holds the lock. A scheduler thread never waits for it:
/// the Elixir side yields and asks again. `generation` comes from a
/// `%McpFramer{}` too.
fn lock<'a>(
    framer: &'a FramerResource,
    generation: Term<'a>,
) -> NifResult<Option<MutexGuard<'a, State>>> {
    let generation: u64 = generation.decode().map_err(|_| FramerError::NotAFramer)?;
    let state = match framer.state.try_lock() {
        Ok(state) => state,
        Err(TryLockError::WouldBlock) => return Ok(None),
        Err(TryLockError::Poisoned(_)) => return Err(FramerError::Poisoned.into()),
    };
    // Only an altered struct can be ahead of its framer.
    if generation > state.generation {
        return Err(FramerError::NotAFramer.into());
    }
    if generation < state.generation {
        return Err(FramerError::Stale.into());
    }
    Ok(Some(state))
}

/// Feeds `chunk` within the time of a call on `scheduler`, and reports it.
fn feed_chunk<'a>(
    env: Env<'a>,
    resource: Term<'a>,
    generation: Term<'a>,
    chunk: Binary<'a>,
    scheduler: Scheduler,
) -> NifResult<Term<'a>> {
    let time = Timeslice::new(scheduler, chunk.len());
    let reply = feed_within(env, resource, generation, chunk, &time);
    time.report(env);
    reply
}

fn feed_within<'a>(
    env: Env<'a>,
    resource: Term<'a>,
    generation: Term<'a>,
    chunk: Binary<'a>,
    time: &Timeslice,
) -> NifResult<Term<'a>> {
    let framer = framer(resource)?;
    let outcome = match lock(framer, generation)? {
        None => Outcome::Busy,
        Some(mut state) => {
            let outcome = if time.needs_dirty() {
                Outcome::NeedsDirty
            } else if let Some(options) = framer.decode {
                decode::with_session(env, |session| {
                    frame(env, &mut state, chunk, time, Some((session, options)))
                })?
            } else {
                frame(env, &mut state, chunk, time, None)?
            };
            if outcome.advances_generation() {
                state.generation += 1;
            }
            outcome
        }
    };
    Ok(outcome.encode(env))
}

/// Frames `chunk` within the call's `time`, decoding each message with
/// `decoder` if given.
fn frame<'a>(
    env: Env<'a>,
    state: &mut State,
    chunk: Binary<'a>,
    time: &Timeslice,
    mut decoder: Option<(&mut Session<'_, 'a>, Options)>,
) -> Result<Outcome<'a>, FramerError> {
    let State {
        framer: core,
        held,
        messages,
        ..
    } = state;
    let max_messages = time.max_messages(decoder.is_some());
    let limits = decoder.as_ref().and(time.limits());
    let mut left_dirty = false;
    let mut copying = false;
    // Framing alone: the decoder takes each message as a `Binary`.
    let copy_short = decoder.is_none() && COPY_SHORT_MESSAGES.load(Ordering::Relaxed);

    messages.clear();
    // The part of the chunk this call searches (its start, on a normal
    // scheduler); the reply's `consumed` tells the Elixir side where the
    // rest begins.
    let whole = chunk.as_slice();
    let searched = whole.get(..time.search_len()).unwrap_or(whole);
    let fed = core.feed_offering(searched, |message| {
        let spent = match limits {
            Some(time) => time.spent(),
            None => time.framing_spent(messages.len()),
        };
        if messages.len() == max_messages || (spent && !messages.is_empty()) {
            return Ok(Reply::Declined);
        }
        let binary = match message {
            Message::Inside { start, end } if start <= end && end <= chunk.len() => {
                if copy_short && end - start <= HEAP_BINARY_MAX {
                    let copy = terms::copy(env, &whole[start..end]);
                    messages.push(copy.ok_or(FramerError::OutOfMemory)?);
                    return Ok(Reply::Taken);
                }
                // SAFETY: the range was just checked to lie within the chunk.
                unsafe { chunk.make_subbinary_unchecked(start, end - start) }
            }
            Message::Inside { .. } => return Err(FramerError::HeldMismatch),
            Message::Joined { held: n, end } => {
                let tail = chunk
                    .as_slice()
                    .get(..end)
                    .ok_or(FramerError::HeldMismatch)?;
                time.start_clock();
                if time.copies_in_slices(n + end) {
                    let more = || time.copy_more();
                    let step = timeslice::COPY_STEP;
                    if !held.assemble_some(n, n + end, timeslice::COPY_SLICE, step, more)? {
                        // Declining the first message consumes nothing.
                        copying = true;
                        return Ok(Reply::Declined);
                    }
                }
                held.take_message(env, n, tail)?
            }
        };
        let item = match decoder.as_mut() {
            None => binary.to_term(env),
            Some((session, options)) => match session.item(binary, options, limits)? {
                Item::Decoded(item) => item,
                Item::LeftDirty(item) => {
                    left_dirty = true;
                    item
                }
            },
        };
        messages.push(item.as_c_arg());
        Ok(Reply::Taken)
    })?;
    time.count_messages(messages.len());
    if copying {
        return Ok(Outcome::Copying);
    }

    if fed.released_held {
        held.clear();
    }
    let mut oversize = fed.oversize;
    if let Some(from) = fed.hold_from {
        if held.push(env, chunk, from..fed.consumed).is_err() {
            // Without memory to hold it, the message is lost like an
            // oversized one, and the rest of its line is skipped.
            held.clear();
            core.discard_held();
            oversize += 1;
        }
    }

    // SAFETY: every element is a term made in `env` during this call.
    let list = unsafe {
        let list =
            enif_make_list_from_array(env.as_c_arg(), messages.as_ptr(), messages.len() as u32);
        Term::new(env, list)
    };
    messages.clear();
    messages.shrink_to(KEEP_MESSAGES);
    let items = Items {
        list,
        oversize: oversize > 0,
        left_dirty,
    };
    if fed.consumed < chunk.len() {
        time.yield_thread();
        return Ok(Outcome::Paused {
            items,
            consumed: fed.consumed,
        });
    }
    Ok(Outcome::Done { items })
}

/// Decodes a whole JSON document on a normal scheduler: `{:ok, term}` or
/// `{:error, %McpFramer.DecodeError{}}`, `{:key_refused, key, error}` for
/// a key that cannot become an atom, or `:continue_dirty` (having built
/// nothing that lasts) if it needs more time than a call may take.
#[rustler::nif]
fn decode<'a>(env: Env<'a>, document: Binary<'a>, options: Options) -> NifResult<Term<'a>> {
    decode_on(env, document, options, Scheduler::Normal)
}

/// Decodes a whole JSON document of any size; replies as `decode/3`,
/// never `:continue_dirty`.
#[rustler::nif(schedule = "DirtyCpu")]
fn decode_dirty<'a>(env: Env<'a>, document: Binary<'a>, options: Options) -> NifResult<Term<'a>> {
    decode_on(env, document, options, Scheduler::Dirty)
}

/// Decodes a message that a decoding framer's normal call left for a
/// dirty scheduler (`{:decode_dirty, message}`), with that framer's own
/// options; replies as `decode_dirty/2`.
#[rustler::nif(schedule = "DirtyCpu")]
fn decode_framed_dirty<'a>(
    env: Env<'a>,
    resource: Term<'a>,
    message: Binary<'a>,
) -> NifResult<Term<'a>> {
    let options = framer(resource)?.decode.ok_or(FramerError::BadOptions)?;
    decode_on(env, message, options, Scheduler::Dirty)
}

/// Decodes `document` within the time of a call on `scheduler`; only a
/// normal one runs out of it.
fn decode_on<'a>(
    env: Env<'a>,
    document: Binary<'a>,
    options: Options,
    scheduler: Scheduler,
) -> NifResult<Term<'a>> {
    let time = Timeslice::new(scheduler, document.len());
    let decoded = decode::with_session(env, |session| {
        session.decode(document, &options, time.limits())
    });
    time.report(env);
    match decoded {
        Err(Stop::Dirty) if scheduler == Scheduler::Normal => {
            Ok(atoms::continue_dirty().encode(env))
        }
        decoded => document_reply(env, decoded),
    }
}

fn document_reply<'a>(env: Env<'a>, decoded: Result<Decoded<'a>, Stop>) -> NifResult<Term<'a>> {
    match decoded {
        Ok(Decoded::Result(result)) => Ok(result),
        Ok(Decoded::KeyRefused { item, key }) => Ok((atoms::key_refused(), key, item).encode(env)),
        Err(stop) => Err(FramerError::from(stop).into()),
    }
}

/// Whether a message of [`HEAP_BINARY_MAX`] bytes or fewer that lies
/// inside its chunk is copied here, where the VM would copy its sub-binary
/// anyway, at a greater cost (see [`terms::vm_copies_short_sub_binaries`]);
/// set as the library loads.
static COPY_SHORT_MESSAGES: AtomicBool = AtomicBool::new(false);

/// Whether the framer copies short messages itself, for the tests.
#[rustler::nif]
fn copies_short_messages() -> bool {
    COPY_SHORT_MESSAGES.load(Ordering::Relaxed)
}

/// The instruction set the string code runs (`MCP_FRAMER_ISA`'s, where
/// the CPU has it, or the widest) and every one this CPU has, narrowest
/// first, for the tests and benchmarks to show.
#[rustler::nif]
fn instruction_set() -> (&'static str, Vec<&'static str>) {
    let all = Isa::all().into_iter().map(Isa::name).collect();
    (Isa::best().name(), all)
}

/// Whether this library was built with debug assertions: the `checked`
/// profile (`Cargo.toml`), which `make soak` runs.
#[rustler::nif]
fn debug_assertions() -> bool {
    cfg!(debug_assertions)
}

fn load(env: Env<'_>, _info: Term<'_>) -> bool {
    let copies = terms::vm_copies_short_sub_binaries(env);
    COPY_SHORT_MESSAGES.store(copies, Ordering::Relaxed);
    true
}

rustler::init!("Elixir.McpFramer.Native", load = load);
