//! What a feed tells the Elixir side: the protocol between
//! `McpFramer.Native.feed/3` (or `feed_dirty/3`) and `McpFramer.feed/2`.
//!
//! | outcome      | on the wire                              | generation | the Elixir side then       |
//! |--------------|------------------------------------------|------------|----------------------------|
//! | `Done`       | `{:ok, items}` or `{:error, items}`      | advances   | returns                    |
//! | `Paused`     | `{:continue, tag, items, consumed}`      | advances   | feeds the rest of the chunk|
//! | `Copying`    | `:copying`                               | advances   | feeds the same chunk again |
//! | `NeedsDirty` | `:continue_dirty`                        | advances   | calls `feed_dirty/3`       |
//! | `Busy`       | `:busy`                                  | stays      | yields, then asks again    |
//!
//! `:error` says the chunk held a line over the cap. When some of the items
//! are `{:decode_dirty, message}`, messages a normal
//! scheduler had no time to decode, `Done` and `Paused` come wrapped as
//! `{:decode_dirty, reply}`: the Elixir side decodes each on a dirty
//! scheduler, with the framer's own options (`decode_framed_dirty/2`),
//! then goes on with `reply`.
//!
//! An outcome that advances the generation changed the framer's state, or
//! (`NeedsDirty`) keeps it for the caller's dirty call, so the
//! `%McpFramer{}` the call was given is stale from then on, for any
//! process that holds it: a second holder cannot feed in between. One that
//! stays changed nothing. `test/protocol_test.exs`
//! pins every row.

use rustler::{Binary, Encoder, Env, Term};

/// The atoms of the protocol, and of the results inside it.
pub mod atoms {
    rustler::atoms! {
        ok, error, copying, busy, decode_dirty, continue_dirty, key_refused, json,
        continue_ = "continue",
    }
}

pub enum Outcome<'a> {
    /// The whole chunk is framed.
    Done { items: Items<'a> },
    /// The call stopped after `consumed` bytes of the chunk, the state
    /// exactly as if the chunk had ended there.
    Paused { items: Items<'a>, consumed: usize },
    /// The call copied part of a large message, its only progress.
    Copying,
    /// The chunk, or the copy of the message it completes first, is too
    /// large for a normal scheduler.
    NeedsDirty,
    /// Another process holds the framer.
    Busy,
}

/// The items a call made, as a list term.
pub struct Items<'a> {
    pub list: Term<'a>,
    /// The chunk held a line over the cap.
    pub oversize: bool,
    /// Some items wait to be decoded on a dirty scheduler.
    pub left_dirty: bool,
}

impl<'a> Outcome<'a> {
    pub fn advances_generation(&self) -> bool {
        match self {
            Outcome::Done { .. }
            | Outcome::Paused { .. }
            | Outcome::Copying
            | Outcome::NeedsDirty => true,
            Outcome::Busy => false,
        }
    }

    pub fn encode(self, env: Env<'a>) -> Term<'a> {
        let (reply, left_dirty) = match self {
            Outcome::Done { items } => ((tag(&items), items.list).encode(env), items.left_dirty),
            Outcome::Paused { items, consumed } => {
                let reply = (atoms::continue_(), tag(&items), items.list, consumed);
                (reply.encode(env), items.left_dirty)
            }
            Outcome::Copying => return atoms::copying().encode(env),
            Outcome::NeedsDirty => return atoms::continue_dirty().encode(env),
            Outcome::Busy => return atoms::busy().encode(env),
        };
        if left_dirty {
            return (atoms::decode_dirty(), reply).encode(env);
        }
        reply
    }
}

fn tag(items: &Items<'_>) -> rustler::Atom {
    if items.oversize {
        atoms::error()
    } else {
        atoms::ok()
    }
}

/// The item of a message a normal scheduler had no time to decode:
/// `{:decode_dirty, message}`, to be decoded with the framer's options.
pub fn left_dirty<'a>(env: Env<'a>, message: Binary<'a>) -> Term<'a> {
    (atoms::decode_dirty(), message).encode(env)
}
