//! NIF glue: decode arguments, lock, run `mcp_framer_core`, encode terms.

mod decode;
mod error;
mod held;

use decode::{Budget, Decoder, Decoding, Item, Keys, Stop};
use error::FramerError;
use held::HeldBytes;
use mcp_framer_core::{Framer, Message, Reply};
use rustler::schedule::consume_timeslice;
use rustler::sys::{enif_make_list_from_array, ErlNifTerm};
use rustler::{Binary, Encoder, Env, NifResult, Resource, ResourceArc, Term};
use std::cell::{Cell, RefCell};
use std::num::NonZeroUsize;
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

mod atoms {
    rustler::atoms! {
        ok, error, continue_dirty, copying, busy, decode_dirty,
        paused = "continue",
    }
}

struct State {
    framer: Framer,
    held: HeldBytes,
    /// Bumped by every feed; a `%McpFramer{}` carrying another number is stale.
    generation: u64,
    /// The messages of the current call, kept between calls so that building
    /// the list allocates nothing but the list. Cleared as each call starts.
    messages: Vec<ErlNifTerm>,
    /// Set for a framer that decodes each message as JSON; boxed, so that
    /// a framer that does not decode keeps its state small (a feed on a
    /// ~300 B chunk measured 176-188 ns boxed, 205-295 ns unboxed).
    decoding: Option<Box<Decoding>>,
}

/// A framer's state, shared by every copy of its `%McpFramer{}`.
struct FramerResource(Mutex<State>);

#[rustler::resource_impl]
impl Resource for FramerResource {}

/// A normal scheduler should get its thread back within about a millisecond.
/// Work that may take longer runs on a dirty CPU scheduler instead: a chunk
/// over this size (searching it takes over 0.2 ms, and its messages make a
/// heap too large to collect quickly), known before searching.
const NORMAL_CHUNK_MAX: usize = 4 * 1024 * 1024;

/// A message that completes with more held bytes than this is copied into
/// place at most this many bytes per call: the feed stops at its newline,
/// changing nothing but the copy's progress, and returns `:copying`; the
/// Elixir side calls again with the same chunk, which is searched again up
/// to that newline. (A dirty scheduler for the copy cost about 150 us a
/// message in wake-ups, and 10% on ~4 MiB messages.)
const COPY_SLICE: usize = 1024 * 1024;

/// The copy goes `COPY_STEP` bytes at a time and stops at the first step
/// that ends after `COPY_TIME` of copying. A warm mebibyte takes about
/// 0.15 ms and still goes in one call. A fresh one, whose every page faults
/// in, took 0.8-1.0 ms, close enough to 2 ms that a busy host made a stall
/// of it (one `long_schedule` of 3 ms in 8 runs of the scheduler test); in
/// steps, such calls take 0.3-0.45 ms.
const COPY_STEP: NonZeroUsize = NonZeroUsize::new(128 * 1024).unwrap();
const COPY_TIME: Duration = Duration::from_micros(250);

/// A normal-scheduler call pauses after this many messages (about 0.3 ms of
/// work) and returns `{:continue, tag, messages, consumed}`, with the state
/// exactly as if the chunk had ended there. The Elixir side feeds the rest
/// in a new call, so the process can be descheduled in between.
const NORMAL_MESSAGES_MAX: usize = 8192;

/// A chunk larger than a Port ever delivers pauses sooner: a list of
/// thousands of messages outgrows the process heap and costs a copying
/// garbage collection. Measured with `make bench`: 1 MiB chunks of 200 B
/// messages ran 2.4x the baseline with 8192 and 3.8x with 2048, while 2048
/// for 64 KiB chunks of `{}` dropped them from 3.5x to 1.3x.
const LARGE_CHUNK_MESSAGES_MAX: usize = 2048;
const PORT_CHUNK_MAX: usize = 64 * 1024;

/// A decoding framer on a normal scheduler decodes within a time
/// [`Budget`]: once its soft limit passes, the call pauses before the next
/// message. A message that would take it past the hard limit, or that is
/// longer than `decode::NORMAL_MAX`, is left for a dirty scheduler (see
/// `Decoding::item`). And it decodes at most this many messages a call:
/// each is a few terms at least.
const DECODE_MESSAGES_MAX: usize = 2048;

#[derive(Clone, Copy)]
enum Scheduler {
    Normal,
    Dirty,
}

/// A new framer's state. `McpFramer` keeps it in its struct with the
/// generation, 0, which every successful call advances by one.
/// With `decode`, each message is decoded as JSON; `copy_strings` makes
/// every decoded string a copy.
#[rustler::nif]
fn new(
    env: Env<'_>,
    max_message_bytes: u64,
    decode: bool,
    copy_strings: bool,
) -> NifResult<Term<'_>> {
    let cap = usize::try_from(max_message_bytes)
        .ok()
        .and_then(NonZeroUsize::new)
        .ok_or(FramerError::BadCap)?;
    let state = State {
        framer: Framer::new(cap),
        held: HeldBytes::default(),
        generation: 0,
        messages: Vec::new(),
        decoding: decode.then(|| Box::new(Decoding::new(copy_strings))),
    };
    Ok(ResourceArc::new(FramerResource(Mutex::new(state))).encode(env))
}

/// Feeds a chunk on a normal scheduler. Returns `{tag, messages}`, where the
/// tag is `:error` if an oversized line was found; `:continue_dirty`
/// (changing nothing) for a chunk too large for a normal scheduler;
/// `:copying` (having copied part of a large message) to be called again;
/// `{:continue, tag, messages, consumed}` when it paused; and `:busy`
/// (changing nothing) while another process holds the lock.
#[rustler::nif]
fn feed<'a>(
    env: Env<'a>,
    resource: Term<'a>,
    generation: Term<'a>,
    chunk: Binary<'a>,
) -> NifResult<Term<'a>> {
    let mut cost = CallCost::new(chunk.len());
    let result = feed_chunk(
        env,
        resource,
        generation,
        chunk,
        Scheduler::Normal,
        &mut cost,
    );
    cost.report(env);
    result
}

/// What a normal-scheduler call tells the scheduler it used of its time
/// slice (about 1 ms, so 1% is 10 us). Without it, every call counts as one
/// reduction, and a process making many calls in a row is not preempted
/// for many milliseconds.
///
/// Byte counts are a poor estimate of a copy: the first copy into a new
/// message binary page-faults every 4 KiB and runs several times slower
/// than a warm one. So a call is timed with the clock from its start if its
/// chunk is large, and from its first copy of held bytes otherwise. Only a
/// small chunk searched without a copy, whose cost is predictable, is
/// estimated: reading the clock twice costs about 90 ns here, as much as
/// a whole call on a 16-byte chunk.
struct CallCost {
    chunk: usize,
    messages: usize,
    timed_from: Option<Instant>,
}

/// Chunks this large are timed from the start of the call. At 8 KiB the two
/// clock reads cost ~100 KiB messages in 8 KiB chunks 7% (0.85-0.93x of
/// the baseline in four make bench runs, 0.98-1.02x at 32 KiB).
const TIMED_CHUNK_MIN: usize = 32 * 1024;

impl CallCost {
    fn new(chunk: usize) -> CallCost {
        let timed_from = (chunk >= TIMED_CHUNK_MIN).then(Instant::now);
        CallCost {
            chunk,
            messages: 0,
            timed_from,
        }
    }

    /// Called before work whose time a byte count does not predict: held
    /// bytes copied (page faults start there) or messages decoded. Returns
    /// the time the clock runs from.
    fn start_clock(&mut self) -> Instant {
        *self.timed_from.get_or_insert_with(Instant::now)
    }

    /// A generous estimate of an untimed call: 200 ns of call overhead, a
    /// search at 2 GB/s and 40 ns a message (measured: 150 ns, 4 GB/s or
    /// more, 20-30 ns).
    fn nanos(&self) -> u64 {
        match self.timed_from {
            Some(start) => u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX),
            None => 200 + self.chunk as u64 / 2 + 40 * self.messages as u64,
        }
    }

    /// The time below a whole percent is carried to the next call on the
    /// same scheduler thread, which may be another process's: rounding
    /// each call up to 1% would make a process feeding small chunks yield
    /// ten times too often. At most 10 us of time moves that way.
    fn report(&self, env: Env<'_>) {
        const PERCENT_NS: u64 = 10_000;
        thread_local! {
            static UNREPORTED_NS: Cell<u64> = const { Cell::new(0) };
        }
        UNREPORTED_NS.with(|unreported| {
            let total = unreported.get().saturating_add(self.nanos());
            // A call over a whole slice reports one slice: it is preempted
            // all the same, and the next process is not charged for it.
            let percent = (total / PERCENT_NS).min(100);
            unreported.set(total % PERCENT_NS);
            if percent > 0 {
                consume_timeslice(env, percent as i32);
            }
        });
    }
}

#[rustler::nif(schedule = "DirtyCpu")]
fn feed_dirty<'a>(
    env: Env<'a>,
    resource: Term<'a>,
    generation: Term<'a>,
    chunk: Binary<'a>,
) -> NifResult<Term<'a>> {
    // A dirty scheduler has no time slice: the cost is kept, not reported.
    let mut cost = CallCost::new(chunk.len());
    feed_chunk(
        env,
        resource,
        generation,
        chunk,
        Scheduler::Dirty,
        &mut cost,
    )
}

/// The held byte count, or `:busy` while another process holds the lock.
#[rustler::nif]
fn buffered_bytes<'a>(
    env: Env<'a>,
    resource: Term<'a>,
    generation: Term<'a>,
) -> NifResult<Term<'a>> {
    Ok(match lock(resource, generation)? {
        Some(state) => (state.framer.held() as u64).encode(env),
        None => atoms::busy().encode(env),
    })
}

/// Locks the framer's state, if `generation` is its latest; `None` if
/// another process holds the lock. A scheduler thread never waits for it:
/// the Elixir side yields and asks again. The arguments come from a
/// `%McpFramer{}`, whose fields a caller may have altered.
fn lock<'a>(resource: Term<'a>, generation: Term<'a>) -> NifResult<Option<MutexGuard<'a, State>>> {
    let resource: &FramerResource = resource.decode().map_err(|_| FramerError::NotAFramer)?;
    let generation: u64 = generation.decode().map_err(|_| FramerError::NotAFramer)?;
    let state = match resource.0.try_lock() {
        Ok(state) => state,
        Err(TryLockError::WouldBlock) => return Ok(None),
        Err(TryLockError::Poisoned(_)) => return Err(FramerError::Poisoned.into()),
    };
    if state.generation != generation {
        return Err(FramerError::Stale.into());
    }
    Ok(Some(state))
}

fn feed_chunk<'a>(
    env: Env<'a>,
    resource: Term<'a>,
    generation: Term<'a>,
    chunk: Binary<'a>,
    scheduler: Scheduler,
    cost: &mut CallCost,
) -> NifResult<Term<'a>> {
    let Some(mut state) = lock(resource, generation)? else {
        return Ok(atoms::busy().encode(env));
    };
    let State {
        framer: core,
        held,
        generation,
        messages,
        decoding,
    } = &mut *state;

    let max_messages = match scheduler {
        Scheduler::Normal if chunk.len() > NORMAL_CHUNK_MAX => {
            return Ok(atoms::continue_dirty().encode(env));
        }
        Scheduler::Normal if chunk.len() > PORT_CHUNK_MAX => LARGE_CHUNK_MESSAGES_MAX,
        Scheduler::Normal => NORMAL_MESSAGES_MAX,
        // A list is built from at most u32::MAX terms at once.
        Scheduler::Dirty => u32::MAX as usize,
    };
    let budget = match (&decoding, scheduler) {
        (Some(_), Scheduler::Normal) => Some(Budget::new(cost.start_clock())),
        _ => None,
    };
    let max_messages = match budget {
        Some(_) => max_messages.min(DECODE_MESSAGES_MAX),
        None => max_messages,
    };
    let mut left_dirty = false;
    let mut keys = Keys::new(env);

    messages.clear();
    let fed = core.feed_offering(chunk.as_slice(), |message| {
        let spent = budget.as_ref().is_some_and(Budget::spent);
        if messages.len() == max_messages || (spent && !messages.is_empty()) {
            return Ok(Reply::Declined);
        }
        let binary = match message {
            Message::Inside { start, end } if start <= end && end <= chunk.len() => {
                // SAFETY: the range was just checked to lie within the chunk.
                unsafe { chunk.make_subbinary_unchecked(start, end - start) }
            }
            Message::Inside { .. } => return Err(FramerError::HeldMismatch),
            Message::Joined { held: n, end } => {
                let tail = chunk
                    .as_slice()
                    .get(..end)
                    .ok_or(FramerError::HeldMismatch)?;
                cost.start_clock();
                if matches!(scheduler, Scheduler::Normal) && n > COPY_SLICE {
                    // Timed from the copy's own start: each call searches
                    // its chunk again up to the newline, which for a chunk
                    // of megabytes would leave the copy no time at all.
                    let copying = Instant::now();
                    let more = || copying.elapsed() < COPY_TIME;
                    if !held.assemble_some(n, n + end, COPY_SLICE, COPY_STEP, more)? {
                        return Err(FramerError::Unfinished);
                    }
                }
                held.take_message(env, n, tail)?
            }
        };
        let item = match decoding.as_deref_mut() {
            None => binary.to_term(env),
            Some(decoding) => match decoding.item(env, binary, budget.as_ref(), &mut keys)? {
                Item::Decoded(item) => item,
                Item::LeftDirty(item) => {
                    left_dirty = true;
                    item
                }
            },
        };
        messages.push(item.as_c_arg());
        Ok(Reply::Taken)
    });
    cost.messages = messages.len();
    let fed = match fed {
        Ok(fed) => fed,
        // Nothing changed: the first message stopped the feed.
        Err(FramerError::Unfinished) => return Ok(atoms::copying().encode(env)),
        Err(error) => return Err(error.into()),
    };

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
    *generation += 1;

    // SAFETY: every element is a term made in `env` during this call.
    let list = unsafe {
        let list =
            enif_make_list_from_array(env.as_c_arg(), messages.as_ptr(), messages.len() as u32);
        Term::new(env, list)
    };
    let tag = if oversize > 0 {
        atoms::error()
    } else {
        atoms::ok()
    };
    let result = if fed.consumed < chunk.len() {
        consume_timeslice(env, 100);
        (atoms::paused(), tag, list, fed.consumed).encode(env)
    } else {
        (tag, list).encode(env)
    };
    if left_dirty {
        return Ok((atoms::decode_dirty(), result).encode(env));
    }
    Ok(result)
}

/// Decodes a whole JSON document on a normal scheduler: `{:ok, term}` or
/// `{:error, %McpFramer.DecodeError{}}`, or `:continue_dirty` (having
/// built nothing that lasts) if it needs more time than a call may take.
#[rustler::nif]
fn decode<'a>(env: Env<'a>, document: Binary<'a>, copy_strings: bool) -> NifResult<Term<'a>> {
    let mut cost = CallCost::new(document.len());
    let budget = Budget::new(cost.start_clock());
    let mut keys = Keys::new(env);
    let decoded = with_decoder(|decoder| {
        decoder.decode(env, document, copy_strings, Some(&budget), &mut keys)
    });
    cost.report(env);
    match decoded {
        Ok(item) => Ok(item),
        Err(Stop::Dirty) => Ok(atoms::continue_dirty().encode(env)),
        Err(stop) => Err(FramerError::from(stop).into()),
    }
}

/// Decodes a whole JSON document of any size.
#[rustler::nif(schedule = "DirtyCpu")]
fn decode_dirty<'a>(env: Env<'a>, document: Binary<'a>, copy_strings: bool) -> NifResult<Term<'a>> {
    let mut keys = Keys::new(env);
    with_decoder(|decoder| decoder.decode(env, document, copy_strings, None, &mut keys))
        .map_err(|stop| FramerError::from(stop).into())
}

/// Runs `f` with this scheduler thread's decoder, whose buffers are reused
/// by every document decoded on the thread and bounded in between.
fn with_decoder<T>(f: impl FnOnce(&mut Decoder) -> T) -> T {
    thread_local! {
        static DECODER: RefCell<Decoder> = RefCell::new(Decoder::default());
    }
    DECODER.with(|decoder| f(&mut decoder.borrow_mut()))
}

rustler::init!("Elixir.McpFramer.Native");
