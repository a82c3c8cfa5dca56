//! `{:error, %McpFramer.DecodeError{}}`, made in the NIF for a document
//! that is not JSON.

use crate::decode::Stop;
use crate::terms::{self, SUB_BINARY_MIN};
use rustler::sys::ErlNifTerm;
use rustler::{Atom, Binary, Encoder, Env, Term};

mod atoms {
    pub use crate::outcome::atoms::error;
    rustler::atoms! {
        nil, position, token, data, limit, limit_value,
        true_ = "true",
        exception = "__exception__",
        struct_ = "__struct__",
        decode_error = "Elixir.McpFramer.DecodeError",
    }
}

/// What an error is about, beyond its position.
#[derive(Clone, Copy)]
pub enum Cause<'a> {
    /// The document is not JSON there.
    Syntax,
    /// The `length` bytes from the position are a token with no value.
    Token { length: usize },
    /// The document goes past the option named `limit`, set to `value`.
    Limit { limit: Atom, value: Term<'a> },
}

/// `{:error, %McpFramer.DecodeError{}}` for `document`, or with the
/// `completed` keys for a key function, `{:error, error, keys}`. With
/// `copy_strings`, the document in it is a copy too, so that no part of a
/// result keeps the document's binary alive.
pub fn error_item<'a>(
    env: Env<'a>,
    document: Binary<'a>,
    copy_strings: bool,
    position: usize,
    cause: Cause<'a>,
    completed: Option<&[ErlNifTerm]>,
) -> Result<Term<'a>, Stop> {
    let data = if copy_strings {
        let copy = terms::copy(env, document.as_slice()).ok_or(Stop::NoMemory)?;
        // SAFETY: `copy` made a binary in `env`.
        unsafe { Term::new(env, copy) }
    } else {
        document.to_term(env)
    };
    let nil = atoms::nil().as_c_arg();
    let (token, limit) = match cause {
        Cause::Syntax => (None, (nil, nil)),
        Cause::Token { length } => (Some(length), (nil, nil)),
        Cause::Limit { limit, value } => (None, (limit.as_c_arg(), value.as_c_arg())),
    };
    let token = match token {
        None => nil,
        // A long token is part of the line the error holds anyway, as
        // Jason's is; a short one is a copy that keeps nothing alive.
        Some(length) if length >= SUB_BINARY_MIN => Binary::from_term(data)
            .and_then(|line| line.make_subbinary(position, length))
            .map_err(|_| Stop::Broken)?
            .to_term(env)
            .as_c_arg(),
        Some(length) => {
            let token = document
                .as_slice()
                .get(position..)
                .and_then(|rest| rest.get(..length))
                .ok_or(Stop::Broken)?;
            terms::copy(env, token).ok_or(Stop::NoMemory)?
        }
    };
    let error = decode_error(env, data.as_c_arg(), position, token, limit)?;
    let Some(completed) = completed else {
        return Ok((atoms::error(), error).encode(env));
    };
    let keys = terms::list(env, completed).ok_or(Stop::Broken)?;
    // SAFETY: the keys were made in `env`, during this call.
    Ok((atoms::error(), error, unsafe { Term::new(env, keys) }).encode(env))
}

/// `%McpFramer.DecodeError{position: ..., token: ..., data: document,
/// limit: ..., limit_value: ...}`.
fn decode_error(
    env: Env<'_>,
    data: ErlNifTerm,
    position: usize,
    token: ErlNifTerm,
    (limit, limit_value): (ErlNifTerm, ErlNifTerm),
) -> Result<Term<'_>, Stop> {
    let keys = [
        atoms::exception(),
        atoms::struct_(),
        atoms::data(),
        atoms::limit(),
        atoms::limit_value(),
        atoms::position(),
        atoms::token(),
    ]
    .map(|atom| atom.as_c_arg());
    let values = [
        atoms::true_().as_c_arg(),
        atoms::decode_error().as_c_arg(),
        data,
        limit,
        limit_value,
        (position as u64).encode(env).as_c_arg(),
        token,
    ];
    let map = terms::map_from_arrays(env, &keys, &values).ok_or(Stop::NoMemory)?;
    // SAFETY: the map was made in `env`.
    Ok(unsafe { Term::new(env, map) })
}
