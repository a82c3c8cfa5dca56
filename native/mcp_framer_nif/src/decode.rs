//! JSON documents decoded into BEAM terms: a `json::Builder` that makes
//! each term in place, with no intermediate Rust value.
//!
//! Finished terms wait on a stack. An array or object takes its items off
//! the top and becomes one term, made from an array in a single call.
//!
//! Each scheduler thread has one [`Decoder`], whose buffers every document
//! decoded there reuses; a NIF call uses it through a [`Session`].

use crate::timeslice::{self, OutOfTime, Timeslice};
use mcp_framer_core::json::{self, Builder, ErrorKind, Parser, Text};
use rustler::sys::{
    enif_binary_to_term, enif_get_map_size, enif_make_double, enif_make_int64,
    enif_make_list_from_array, enif_make_map_from_arrays, enif_make_map_put, enif_make_new_binary,
    enif_make_new_map, ErlNifTerm,
};
use rustler::{Binary, Encoder, Env, Term};
use std::cell::RefCell;
use std::mem::MaybeUninit;

mod atoms {
    pub use crate::outcome::atoms::{decode_dirty, error, ok};
    rustler::atoms! {
        nil, position, token, data,
        true_ = "true",
        false_ = "false",
        exception = "__exception__",
        struct_ = "__struct__",
        decode_error = "Elixir.McpFramer.DecodeError",
    }
}

/// A string this long or longer may be a sub-binary of the document instead
/// of a copy: the BEAM's own line between heap and reference-counted binaries.
const SUB_BINARY_MIN: usize = 64;

/// A list or map of more terms than this is made only if the call's time
/// can afford it: it is made in one call that cannot stop.
const LARGE_CONTAINER: usize = 1024;

/// What copying a byte into a fresh binary may cost, page faults included.
const COPY_NANOS_PER_BYTE: u64 = 1;

/// What making a term of a large list or map may cost.
const CONTAINER_NANOS_PER_TERM: u64 = 100;

/// Terms kept between documents, per buffer; more is freed.
const KEEP_TERMS: usize = 8192;

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

/// The object keys of one NIF call, to be made once: MCP messages repeat a
/// few keys ("jsonrpc", "type", "properties") thousands of times. A slot is
/// read only while its bit in `filled` is set; a new [`Session`] clears
/// them all, since a term is valid only in the call that made it.
struct KeyTable {
    slots: [KeySlot; KEY_SLOTS],
    filled: u64,
}

const KEY_SLOTS: usize = 64;
const KEY_MAX: usize = 22;

#[derive(Clone, Copy)]
struct KeySlot {
    len: u8,
    bytes: [u8; KEY_MAX],
    term: Option<ErlNifTerm>,
}

impl KeyTable {
    fn new() -> KeyTable {
        let empty = KeySlot {
            len: 0,
            bytes: [0; KEY_MAX],
            term: None,
        };
        KeyTable {
            slots: [empty; KEY_SLOTS],
            filled: 0,
        }
    }

    /// The slot a key may be kept in; `None` for keys too long to keep.
    #[inline]
    fn index(key: &[u8]) -> Option<usize> {
        let (&first, &last) = (key.first()?, key.last()?);
        if key.len() > KEY_MAX {
            return None;
        }
        Some((key.len() * 7 + usize::from(first) * 3 + usize::from(last) * 5) % KEY_SLOTS)
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<ErlNifTerm> {
        let index = Self::index(key)?;
        if self.filled & (1 << index) == 0 {
            return None;
        }
        let slot = &self.slots[index];
        let same = usize::from(slot.len) == key.len() && slot.bytes[..key.len()] == *key;
        same.then_some(slot.term)?
    }

    fn put(&mut self, key: &[u8], term: ErlNifTerm) {
        let Some(index) = Self::index(key) else {
            return;
        };
        let slot = &mut self.slots[index];
        slot.len = key.len() as u8;
        slot.bytes[..key.len()].copy_from_slice(key);
        slot.term = Some(term);
        self.filled |= 1 << index;
    }
}

/// What a framed message becomes.
pub enum Item<'a> {
    /// What `Jason.decode/1` returns for it.
    Decoded(Term<'a>),
    /// `{:decode_dirty, message, copy_strings}`: over the call's time, to
    /// be decoded on a dirty scheduler by the Elixir side.
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
        decoder.key_table.filled = 0;
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
        let env = self.env;
        match self.decode(message, copy_strings, limits) {
            Ok(item) => Ok(Item::Decoded(item)),
            Err(Stop::Dirty) => {
                let left = (atoms::decode_dirty(), message, copy_strings);
                Ok(Item::LeftDirty(left.encode(env)))
            }
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
            Some(mut time) => {
                decoder
                    .parser
                    .parse_rationed(input, &mut builder, timeslice::FUEL_STEP, &mut time)
            }
            None => decoder.parser.parse(input, &mut builder),
        };
        for buffer in [&mut decoder.stack, &mut decoder.keys, &mut decoder.values] {
            buffer.clear();
            buffer.shrink_to(KEEP_TERMS);
        }
        match parsed {
            // SAFETY: the builder made the term in `env`, during this call.
            Ok(term) => Ok((atoms::ok(), unsafe { Term::new(env, term) }).encode(env)),
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
                    time.afford(document.len() as u64 * COPY_NANOS_PER_BYTE)?;
                }
                error_item(env, document, copy_strings, position, token)
            }
        }
    }
}

/// `{:error, %McpFramer.DecodeError{}}` for `document`, whose token, if
/// any, is the `token` bytes from `position`.
fn error_item<'a>(
    env: Env<'a>,
    document: Binary<'a>,
    copy_strings: bool,
    position: usize,
    token: Option<usize>,
) -> Result<Term<'a>, Stop> {
    // With copied strings, the line in the error is a copy too: no part of
    // the result keeps the document's binary alive.
    let data = if copy_strings {
        // SAFETY: `copy` made a binary in `env`.
        unsafe { Term::new(env, copy(env, document.as_slice())?) }
    } else {
        document.to_term(env)
    };
    let token = match token {
        None => atoms::nil().as_c_arg(),
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
                .and_then(|rest| rest.get(..length));
            copy(env, token.ok_or(Stop::Broken)?)?
        }
    };
    let error = decode_error(env, data.as_c_arg(), position, token)?;
    Ok((atoms::error(), error).encode(env))
}

/// `%McpFramer.DecodeError{position: ..., token: ..., data: document}`.
fn decode_error(
    env: Env<'_>,
    data: ErlNifTerm,
    position: usize,
    token: ErlNifTerm,
) -> Result<Term<'_>, Stop> {
    let keys = [
        atoms::exception(),
        atoms::struct_(),
        atoms::data(),
        atoms::position(),
        atoms::token(),
    ]
    .map(|atom| atom.as_c_arg());
    let values = [
        atoms::true_().as_c_arg(),
        atoms::decode_error().as_c_arg(),
        data,
        (position as u64).encode(env).as_c_arg(),
        token,
    ];
    let map = make_map(env, &keys, &values).ok_or(Stop::NoMemory)?;
    Ok(unsafe { Term::new(env, map) })
}

/// A map from distinct keys, or `None` if any key repeats. OTP 25 does not
/// report a repeat in maps of over 32 pairs; it keeps one of the values,
/// so the size is checked as well.
fn make_map(env: Env<'_>, keys: &[ErlNifTerm], values: &[ErlNifTerm]) -> Option<ErlNifTerm> {
    let mut map = MaybeUninit::uninit();
    let mut size = 0;
    // SAFETY: both arrays hold `keys.len()` terms made in `env`.
    unsafe {
        let made = enif_make_map_from_arrays(
            env.as_c_arg(),
            keys.as_ptr(),
            values.as_ptr(),
            keys.len(),
            map.as_mut_ptr(),
        ) != 0;
        if !made {
            return None;
        }
        let map = map.assume_init();
        let sized = enif_get_map_size(env.as_c_arg(), map, &mut size) != 0;
        (sized && size == keys.len()).then_some(map)
    }
}

/// A copy of `bytes` in a binary of its own.
fn copy(env: Env<'_>, bytes: &[u8]) -> Result<ErlNifTerm, Stop> {
    let mut term = MaybeUninit::uninit();
    // SAFETY: the new binary has room for exactly `bytes.len()` bytes.
    unsafe {
        let data = enif_make_new_binary(env.as_c_arg(), bytes.len(), term.as_mut_ptr());
        if data.is_null() {
            return Err(Stop::NoMemory);
        }
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), data, bytes.len());
        Ok(term.assume_init())
    }
}

struct TermBuilder<'a, 'd> {
    env: Env<'a>,
    document: Binary<'a>,
    /// Every string is a copy, so no decoded term keeps the document alive.
    copy_strings: bool,
    limits: Option<&'d Timeslice>,
    key_table: &'d mut KeyTable,
    stack: &'d mut Vec<ErlNifTerm>,
    keys: &'d mut Vec<ErlNifTerm>,
    values: &'d mut Vec<ErlNifTerm>,
}

impl<'a> TermBuilder<'a, '_> {
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
            text => copy(self.env, text.as_str().as_bytes()),
        }
    }

    /// The last `count` terms, replaced by what `make` makes of them.
    fn collapse(
        &mut self,
        count: usize,
        make: impl FnOnce(&mut Self, usize) -> Result<ErlNifTerm, Stop>,
    ) -> Result<(), Stop> {
        let from = self.stack.len().checked_sub(count).ok_or(Stop::Broken)?;
        if count > LARGE_CONTAINER {
            if let Some(time) = self.limits {
                time.afford(count as u64 * CONTAINER_NANOS_PER_TERM)?;
            }
        }
        let term = make(self, from)?;
        self.stack.truncate(from);
        let units = u32::try_from(count / 16).unwrap_or(u32::MAX);
        self.push(term, units.saturating_add(1))
    }
}

impl<'a> Builder<'a> for TermBuilder<'a, '_> {
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
        let term = big_integer(self.env, digits).ok_or(Stop::NoMemory)?;
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
            let items = &builder.stack[from..];
            // SAFETY: `items` are terms made in this environment.
            Ok(unsafe {
                let count = u32::try_from(count).map_err(|_| Stop::Broken)?;
                enif_make_list_from_array(builder.env.as_c_arg(), items.as_ptr(), count)
            })
        })
    }

    fn key(&mut self, text: Text<'a, '_>) -> Result<(), Stop> {
        let key = text.as_str().as_bytes();
        if key.len() >= SUB_BINARY_MIN {
            return self.string(text);
        }
        let term = match self.key_table.get(key) {
            Some(term) => term,
            None => {
                let term = copy(self.env, key)?;
                self.key_table.put(key, term);
                term
            }
        };
        self.push(term, 1)
    }

    fn begin_object(&mut self) -> Result<(), Stop> {
        self.charge(1)
    }

    fn end_object(&mut self, count: usize) -> Result<(), Stop> {
        self.collapse(2 * count, |builder, from| {
            builder.keys.clear();
            builder.values.clear();
            for pair in builder.stack[from..].chunks_exact(2) {
                builder.keys.push(pair[0]);
                builder.values.push(pair[1]);
            }
            let env = builder.env;
            if let Some(map) = make_map(env, builder.keys, builder.values) {
                return Ok(map);
            }
            // A key repeats. Put the pairs last to first, so that the
            // first occurrence of a key is put last and wins.
            // SAFETY: every key and value is a term made in `env`.
            unsafe {
                let mut map = enif_make_new_map(env.as_c_arg());
                for (&key, &value) in builder.keys.iter().zip(builder.values.iter()).rev() {
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

/// The integer whose decimal text is `digits` (an optional `-`, then
/// digits), made through the external term format: the NIF interface has
/// no other way to make a bignum. The conversion to base 2^64 is quadratic
/// in the number of digits, which the parser limits.
fn big_integer(env: Env<'_>, digits: &str) -> Option<ErlNifTerm> {
    let (negative, digits) = match digits.strip_prefix('-') {
        Some(magnitude) => (true, magnitude),
        None => (false, digits),
    };
    // Little-endian base 2^64 limbs, 19 decimal digits folded in at a time.
    let mut limbs: Vec<u64> = Vec::with_capacity(digits.len() / 19 + 1);
    for group in digits.as_bytes().chunks(19) {
        let scale = 10u128.pow(group.len() as u32);
        let mut carry = group
            .iter()
            .fold(0u128, |value, digit| value * 10 + u128::from(digit - b'0'));
        for limb in limbs.iter_mut() {
            let product = u128::from(*limb) * scale + carry;
            *limb = product as u64;
            carry = product >> 64;
        }
        if carry > 0 {
            limbs.push(carry as u64);
        }
    }
    let mut magnitude: Vec<u8> = limbs.iter().flat_map(|limb| limb.to_le_bytes()).collect();
    while magnitude.last() == Some(&0) {
        magnitude.pop();
    }

    // SMALL_BIG_EXT (110) or LARGE_BIG_EXT (111), after the version byte.
    let mut external = Vec::with_capacity(magnitude.len() + 7);
    external.push(131);
    match u8::try_from(magnitude.len()) {
        Ok(length) => external.extend([110, length]),
        Err(_) => {
            external.push(111);
            external.extend(u32::try_from(magnitude.len()).ok()?.to_be_bytes());
        }
    }
    external.push(u8::from(negative));
    external.extend(magnitude);

    let mut term = MaybeUninit::uninit();
    // SAFETY: reads `external.len()` bytes; writes the term only on success.
    unsafe {
        let read = enif_binary_to_term(
            env.as_c_arg(),
            external.as_ptr(),
            external.len(),
            term.as_mut_ptr(),
            0,
        );
        (read == external.len()).then(|| term.assume_init())
    }
}
