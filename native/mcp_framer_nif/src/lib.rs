//! NIF glue: decode arguments, lock, run `mcp_framer_core`, encode terms.

mod error;
mod held;

use error::FramerError;
use held::HeldBytes;
use mcp_framer_core::{Framer, Message};
use rustler::{Binary, Encoder, Env, NifResult, NifStruct, Resource, ResourceArc, Term};
use std::num::NonZeroUsize;
use std::sync::{Mutex, TryLockError};

mod atoms {
    rustler::atoms! { ok, error, message_too_large, continue_dirty }
}

struct State {
    framer: Framer,
    held: HeldBytes,
    /// Bumped by every feed; the `McpFramer` value carrying any other number
    /// is stale.
    generation: u64,
}

pub struct FramerResource(Mutex<State>);

#[rustler::resource_impl]
impl Resource for FramerResource {}

/// The `%McpFramer{}` struct. Only `resource` and `generation` are read back;
/// the other two fields describe the value for `inspect`.
#[derive(NifStruct)]
#[module = "McpFramer"]
struct McpFramer {
    resource: ResourceArc<FramerResource>,
    generation: u64,
    max_message_bytes: u64,
    buffered_bytes: u64,
}

/// How much work one call may do before it must move to a dirty scheduler.
#[derive(Clone, Copy)]
struct Budget {
    chunk_bytes: usize,
    join_bytes: usize,
    messages: usize,
}

/// A normal scheduler should get its thread back within about a millisecond.
/// Each limit is roughly 0.5 ms of work on the machine in the README.
const NORMAL: Budget = Budget {
    chunk_bytes: 1 << 20,
    join_bytes: 1 << 20,
    messages: 25_000,
};

const DIRTY: Budget = Budget {
    chunk_bytes: usize::MAX,
    join_bytes: usize::MAX,
    messages: usize::MAX,
};

/// Why a feed stopped before the end of its chunk.
enum Stop {
    OverBudget,
    Failed(FramerError),
}

#[rustler::nif]
fn new(max_message_bytes: u64) -> NifResult<McpFramer> {
    let cap = usize::try_from(max_message_bytes)
        .ok()
        .and_then(NonZeroUsize::new)
        .ok_or(FramerError::BadCap)?;
    let state = State {
        framer: Framer::new(cap),
        held: HeldBytes::default(),
        generation: 0,
    };
    Ok(McpFramer {
        resource: ResourceArc::new(FramerResource(Mutex::new(state))),
        generation: 0,
        max_message_bytes,
        buffered_bytes: 0,
    })
}

/// Feeds a chunk on a normal scheduler, or returns `:continue_dirty`
/// (changing nothing) when that would take too long.
#[rustler::nif]
fn feed<'a>(env: Env<'a>, framer: McpFramer, chunk: Binary<'a>) -> NifResult<Term<'a>> {
    feed_within(env, framer, chunk, NORMAL)
}

#[rustler::nif(schedule = "DirtyCpu")]
fn feed_dirty<'a>(env: Env<'a>, framer: McpFramer, chunk: Binary<'a>) -> NifResult<Term<'a>> {
    feed_within(env, framer, chunk, DIRTY)
}

#[rustler::nif]
fn buffered_bytes(framer: McpFramer) -> NifResult<u64> {
    let state = lock(&framer)?;
    Ok(state.framer.held() as u64)
}

fn lock(framer: &McpFramer) -> Result<std::sync::MutexGuard<'_, State>, FramerError> {
    // A scheduler thread must never wait for a lock: a second process loses.
    let state = framer.resource.0.try_lock().map_err(|error| match error {
        TryLockError::WouldBlock => FramerError::Busy,
        TryLockError::Poisoned(_) => FramerError::Poisoned,
    })?;
    if state.generation != framer.generation {
        return Err(FramerError::Stale);
    }
    Ok(state)
}

fn feed_within<'a>(
    env: Env<'a>,
    framer: McpFramer,
    chunk: Binary<'a>,
    budget: Budget,
) -> NifResult<Term<'a>> {
    let mut state = lock(&framer)?;
    if chunk.len() > budget.chunk_bytes {
        return Ok(atoms::continue_dirty().encode(env));
    }

    let State {
        framer: core,
        held,
        generation,
    } = &mut *state;
    let mut messages: Vec<Term<'a>> = Vec::new();
    let fed = core.feed(chunk.as_slice(), |message| {
        if messages.len() == budget.messages {
            return Err(Stop::OverBudget);
        }
        let binary = match message {
            Message::Inside { start, end } => chunk
                .make_subbinary(start, end - start)
                .map_err(|_| Stop::Failed(FramerError::HeldMismatch))?,
            Message::Joined { held: n, .. } if n > budget.join_bytes => {
                return Err(Stop::OverBudget)
            }
            Message::Joined { held: n, end } => held
                .join(env, n, &chunk.as_slice()[..end])
                .map_err(Stop::Failed)?,
        };
        messages.push(binary.to_term(env));
        Ok(())
    });
    let fed = match fed {
        Ok(fed) => fed,
        Err(Stop::OverBudget) => return Ok(atoms::continue_dirty().encode(env)),
        Err(Stop::Failed(error)) => return Err(error.into()),
    };

    if fed.released_held {
        held.clear();
    }
    if let Some(from) = fed.hold_from {
        held.push(&chunk, from);
    }
    *generation += 1;

    let next = McpFramer {
        resource: framer.resource.clone(),
        generation: *generation,
        max_message_bytes: framer.max_message_bytes,
        buffered_bytes: core.held() as u64,
    };
    let list = messages
        .iter()
        .rev()
        .fold(Term::list_new_empty(env), |list, message| {
            list.list_prepend(*message)
        });
    Ok(if fed.oversize > 0 {
        (atoms::error(), atoms::message_too_large(), list, next).encode(env)
    } else {
        (atoms::ok(), list, next).encode(env)
    })
}

rustler::init!("Elixir.McpFramer.Native");
