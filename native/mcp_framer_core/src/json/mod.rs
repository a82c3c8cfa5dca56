//! A JSON parser that decodes exactly as Elixir's `Jason.decode/1` (1.4.5).
//!
//! The parser only recognises the grammar; what a value becomes is up to a
//! [`Builder`], which it drives with one call per scalar and a begin/end pair
//! per container. The builder keeps its own stack of finished values, so
//! `end_array(n)` means "the last `n` values you built are my items". That
//! lets a NIF builder make each list or map from an array in one call, and
//! [`ValueBuilder`] make plain Rust values for tests and fuzzing.
//!
//! Nesting is tracked in a `Vec`, never by recursion: depth is limited only
//! by the input's length, and no input can overflow the native stack.
//!
//! What Jason accepts, and so what this accepts:
//! * Any value at top level, surrounded by whitespace that is exactly space,
//!   tab, CR and LF. Nothing else may follow; empty input is an error.
//! * Objects have string keys; when a key repeats, the first occurrence wins
//!   (the builder is told every pair and keeps the first).
//! * Strings must be valid UTF-8 with no unescaped byte below 0x20. All JSON
//!   escapes are decoded; `\u` surrogate pairs are joined and a lone
//!   surrogate is an error.
//! * Numbers follow the JSON grammar strictly. An integer's text may be up
//!   to [`INTEGER_MAX_CHARS`] long, sign included; a longer one is an
//!   invalid token. A number with a fraction or exponent is a float, of any
//!   length, correctly rounded, and an error if it overflows to infinity
//!   (underflow gives 0.0).
//!
//! Errors carry the byte position Jason reports, which is the first
//! offending byte except where Jason says otherwise (see [`ErrorKind`]).

mod number;
mod string;
mod unique;
mod value;

pub use number::INTEGER_MAX_CHARS;
pub use value::{Unbalanced, Value, ValueBuilder};

use number::Number;
use unique::OpenKeys;

/// A decoded string: borrowed from the input when it had no escapes, else
/// the parser's scratch buffer, valid until the builder call returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Text<'de, 's> {
    Input(&'de str),
    Unescaped(&'s str),
}

impl Text<'_, '_> {
    pub fn as_str(&self) -> &str {
        match *self {
            Text::Input(text) | Text::Unescaped(text) => text,
        }
    }
}

/// Receives the values the parser finds, innermost first, and builds them.
///
/// Any method may fail; parsing then stops with [`ErrorKind::Builder`] at the
/// position of the byte that led to the call.
pub trait Builder<'de> {
    /// What a whole document becomes.
    type Value;
    type Error;

    fn null(&mut self) -> Result<(), Self::Error>;
    fn bool(&mut self, value: bool) -> Result<(), Self::Error>;
    /// An integer that fits in an `i64`.
    fn integer(&mut self, value: i64) -> Result<(), Self::Error>;
    /// An integer outside `i64`, as its decimal text: an optional `-`, then
    /// digits without leading zeros.
    fn big_integer(&mut self, digits: &'de str) -> Result<(), Self::Error>;
    /// A finite float.
    fn float(&mut self, value: f64) -> Result<(), Self::Error>;
    fn string(&mut self, text: Text<'de, '_>) -> Result<(), Self::Error>;

    /// An array opens; its items follow as values, then `end_array`.
    fn begin_array(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
    /// The array that opened last is done: its items are the last `count`
    /// values built.
    fn end_array(&mut self, count: usize) -> Result<(), Self::Error>;

    /// An object opens; its pairs follow as `key` then a value, then
    /// `end_object`.
    fn begin_object(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
    fn key(&mut self, text: Text<'de, '_>) -> Result<(), Self::Error>;
    /// The innermost object's last pair is complete: its value is built,
    /// and a `,` or `}` follows it. An error here is reported at the
    /// pair's key.
    fn end_pair(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
    /// The object that opened last is done: its pairs are the last `count`
    /// keys and values built, in input order. Repeated keys are included;
    /// Jason keeps the first occurrence.
    fn end_object(&mut self, count: usize) -> Result<(), Self::Error>;

    /// The document is complete: exactly one value was built at top level.
    fn finish(&mut self) -> Result<Self::Value, Self::Error>;
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error<E> {
    /// Byte offset into the input; equal to its length at unexpected end.
    pub position: usize,
    pub kind: ErrorKind<E>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind<E> {
    /// The input ended inside a value (or was empty).
    UnexpectedEnd,
    /// The byte at `position` cannot be there. As in Jason, a bad literal
    /// (`tru`, `nul x`) is reported at its first byte, and a string ending
    /// in a lone `\` or a short `\u` escape at that `\`.
    UnexpectedByte,
    /// The `length` bytes from `position` are a well-formed token that has
    /// no value: an integer longer than [`INTEGER_MAX_CHARS`], a float that
    /// overflows, or a `\u` escape that is not hex or is a lone surrogate
    /// (12 bytes when a high surrogate's partner is bad).
    InvalidToken { length: usize },
    /// The parser used up the work it was allowed (see [`Ration`]). Nothing
    /// is wrong with the input as far as it was read.
    Exhausted,
    /// The document goes past one of the caller's [`Limits`], at the byte
    /// where it does.
    Limit(Limit),
    /// The builder refused a value.
    Builder(E),
}

/// Which of the caller's [`Limits`] a document went past.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// An array or object opens deeper than `max_depth`.
    Depth,
    /// A value begins past `max_values`.
    Values,
    /// A key repeats within its object under `unique_keys`.
    DuplicateKey,
}

/// What a caller accepts of a document beyond the grammar; by default,
/// anything, as Jason does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The deepest nesting: a top-level array or object is depth 1.
    pub max_depth: usize,
    /// The most values in the document: each scalar, array and object
    /// counts one; keys do not.
    pub max_values: usize,
    /// A key that repeats within one object, compared decoded, is an error
    /// instead of losing to the first.
    pub unique_keys: bool,
}

impl Limits {
    pub const NONE: Limits = Limits {
        max_depth: usize::MAX,
        max_values: usize::MAX,
        unique_keys: false,
    };
}

impl Default for Limits {
    fn default() -> Limits {
        Limits::NONE
    }
}

impl<E> Error<E> {
    /// Jason's two position-only errors differ only in whether the position
    /// is the end of the input.
    fn at(position: usize, input: &[u8]) -> Self {
        let kind = if position >= input.len() {
            ErrorKind::UnexpectedEnd
        } else {
            ErrorKind::UnexpectedByte
        };
        Error { position, kind }
    }

    fn token(position: usize, length: usize) -> Self {
        Error {
            position,
            kind: ErrorKind::InvalidToken { length },
        }
    }

    fn limit(position: usize, limit: Limit) -> Self {
        Error {
            position,
            kind: ErrorKind::Limit(limit),
        }
    }

    fn builder(position: usize, error: E) -> Self {
        Error {
            position,
            kind: ErrorKind::Builder(error),
        }
    }
}

impl Error<std::convert::Infallible> {
    /// The same error for a builder with another error type: grammar errors
    /// are found before any builder is involved.
    fn cast<F>(self) -> Error<F> {
        let kind = match self.kind {
            ErrorKind::UnexpectedEnd => ErrorKind::UnexpectedEnd,
            ErrorKind::UnexpectedByte => ErrorKind::UnexpectedByte,
            ErrorKind::InvalidToken { length } => ErrorKind::InvalidToken { length },
            ErrorKind::Exhausted => ErrorKind::Exhausted,
            ErrorKind::Limit(limit) => ErrorKind::Limit(limit),
            ErrorKind::Builder(never) => match never {},
        };
        Error {
            position: self.position,
            kind,
        }
    }
}

/// Grammar errors, before a builder's error type is known.
type Syntax = Error<std::convert::Infallible>;

/// Rations the parser's work: once the fuel it was given runs out, the
/// parser asks for more, telling how far into the input it has got and how
/// much the work it is about to do needs. Fuel is charged before the work
/// it pays for, and no step of work is left uncharged for long: an escape
/// costs two units a byte, a long number one a byte (its conversion
/// included), whitespace one per two bytes and the text between escapes
/// one per eight, and each item of an array or object four, as it closes;
/// only plain strings, scanned many bytes at a time, are free.
pub trait Ration {
    /// At least `needed` more fuel, at `position`; 0 stops the parse with
    /// [`ErrorKind::Exhausted`] there.
    fn more(&mut self, position: usize, needed: usize) -> usize;
}

/// No fuel beyond what the parse started with.
struct NoMore;

impl Ration for NoMore {
    fn more(&mut self, _position: usize, _needed: usize) -> usize {
        0
    }
}

/// A run of whitespace is charged for every this many bytes, so that even
/// a long one asks for fuel as it goes.
const WHITESPACE_BLOCK: usize = 16 * 1024;

/// What an item of an array or object costs in fuel, charged as its
/// container closes: structure with no long token in it still reports its
/// progress, without a charge on every value.
const ITEM_FUEL: usize = 4;

/// A container still waiting for its closing bracket.
enum Open {
    /// With its items so far.
    Array(usize),
    Object {
        /// Its pairs so far.
        pairs: usize,
        /// Where its last key's `"` is.
        key_at: usize,
    },
}

/// Parses one JSON document, driving `builder`.
pub fn parse<'de, B: Builder<'de>>(
    input: &'de [u8],
    builder: &mut B,
) -> Result<B::Value, Error<B::Error>> {
    Parser::default().parse(input, builder)
}

/// A parser that keeps its scratch space between documents, so that
/// decoding many messages allocates only for the rare large one. What it
/// keeps is bounded: anything over [`Parser::KEEP_BYTES`] is freed after
/// each document.
#[derive(Default)]
pub struct Parser {
    /// Where strings with escapes are decoded.
    scratch: Vec<u8>,
    /// The containers still open, innermost last.
    open: Vec<Open>,
    /// The keys of the open objects, under [`Limits::unique_keys`].
    seen: OpenKeys,
}

impl Parser {
    /// Scratch space kept between documents, per buffer.
    pub const KEEP_BYTES: usize = 64 * 1024;

    /// Parses one JSON document, driving `builder`.
    pub fn parse<'de, B: Builder<'de>>(
        &mut self,
        input: &'de [u8],
        builder: &mut B,
    ) -> Result<B::Value, Error<B::Error>> {
        self.parse_limited(input, builder, Limits::NONE)
    }

    /// Like [`Parser::parse`], within the caller's `limits`.
    pub fn parse_limited<'de, B: Builder<'de>>(
        &mut self,
        input: &'de [u8],
        builder: &mut B,
        limits: Limits,
    ) -> Result<B::Value, Error<B::Error>> {
        self.parse_rationed(input, builder, limits, usize::MAX, &mut NoMore)
    }

    /// Like [`Parser::parse`], but stops with [`ErrorKind::Exhausted`]
    /// once its work passes `fuel` (see [`Ration`] for the units).
    pub fn parse_within<'de, B: Builder<'de>>(
        &mut self,
        input: &'de [u8],
        builder: &mut B,
        fuel: usize,
    ) -> Result<B::Value, Error<B::Error>> {
        self.parse_rationed(input, builder, Limits::NONE, fuel, &mut NoMore)
    }

    /// Like [`Parser::parse_limited`], starting with `fuel` and asking
    /// `ration` for more each time it runs out, inside a token too: a
    /// caller can stop a parse that will take too long as soon as it can
    /// tell.
    pub fn parse_rationed<'de, B: Builder<'de>>(
        &mut self,
        input: &'de [u8],
        builder: &mut B,
        limits: Limits,
        fuel: usize,
        ration: &mut dyn Ration,
    ) -> Result<B::Value, Error<B::Error>> {
        let mut cursor = Cursor {
            input,
            position: 0,
            scratch: std::mem::take(&mut self.scratch),
            fuel,
            ration,
        };
        let (open, seen) = (&mut self.open, &mut self.seen);
        let parsed = match (limits == Limits::NONE, limits.unique_keys) {
            (true, _) => {
                parse_document::<false, false, B>(&mut cursor, open, seen, limits, builder)
            }
            (false, false) => {
                parse_document::<true, false, B>(&mut cursor, open, seen, limits, builder)
            }
            (false, true) => {
                parse_document::<true, true, B>(&mut cursor, open, seen, limits, builder)
            }
        };
        self.scratch = cursor.scratch;
        self.trim();
        parsed
    }

    /// Bytes held for the next document.
    pub fn capacity(&self) -> usize {
        self.scratch.capacity()
            + self.open.capacity() * std::mem::size_of::<Open>()
            + self.seen.capacity()
    }

    fn trim(&mut self) {
        self.scratch.clear();
        self.scratch.shrink_to(Self::KEEP_BYTES);
        self.open.clear();
        self.open
            .shrink_to(Self::KEEP_BYTES / std::mem::size_of::<Open>());
        self.seen.clear();
    }
}

/// One document's parse, driving `builder`: within `limits` if `LIMITED`,
/// else with no check of them at all, so that a caller who sets none pays
/// nothing for them; keys are checked for repeats only if `UNIQUE`.
fn parse_document<'de, const LIMITED: bool, const UNIQUE: bool, B: Builder<'de>>(
    cursor: &mut Cursor<'de, '_>,
    open: &mut Vec<Open>,
    seen: &mut OpenKeys,
    limits: Limits,
    builder: &mut B,
) -> Result<B::Value, Error<B::Error>> {
    let input = cursor.input;
    // Values begun so far, under `limits.max_values`.
    let mut values = 0;
    // Within the limits, a value begins at `start`, an array or object if
    // `nests`; or the parse stops there.
    let mut begin_value = |start: usize, nests: bool, depth: usize| {
        if LIMITED {
            values += 1;
            if values > limits.max_values {
                return Err(Error::limit(start, Limit::Values));
            }
            if nests && depth >= limits.max_depth {
                return Err(Error::limit(start, Limit::Depth));
            }
        }
        Ok(())
    };
    'value: loop {
        cursor.skip_whitespace().map_err(Error::cast)?;
        let start = cursor.position;
        let built = match cursor.peek() {
            Some(b'[') => {
                begin_value(start, true, open.len())?;
                cursor.position += 1;
                builder
                    .begin_array()
                    .map_err(|e| Error::builder(start, e))?;
                cursor.skip_whitespace().map_err(Error::cast)?;
                if cursor.peek() != Some(b']') {
                    open.push(Open::Array(0));
                    continue 'value;
                }
                cursor.position += 1;
                builder.end_array(0)
            }
            Some(b'{') => {
                begin_value(start, true, open.len())?;
                cursor.position += 1;
                builder
                    .begin_object()
                    .map_err(|e| Error::builder(start, e))?;
                cursor.skip_whitespace().map_err(Error::cast)?;
                if cursor.peek() != Some(b'}') {
                    let key_at = cursor.position;
                    if UNIQUE {
                        seen.open();
                    }
                    cursor.key::<B, UNIQUE>(builder, seen)?;
                    open.push(Open::Object { pairs: 0, key_at });
                    continue 'value;
                }
                cursor.position += 1;
                builder.end_object(0)
            }
            Some(b'"') => {
                begin_value(start, false, 0)?;
                cursor.position += 1;
                let text = cursor.string().map_err(Error::cast)?;
                builder.string(text)
            }
            Some(b'-' | b'0'..=b'9') => {
                begin_value(start, false, 0)?;
                match cursor.number().map_err(Error::cast)? {
                    Number::Integer(value) => builder.integer(value),
                    Number::Big(digits) => builder.big_integer(digits),
                    Number::Float(value) => builder.float(value),
                }
            }
            Some(b't') => {
                begin_value(start, false, 0)?;
                cursor.literal(b"true").map_err(Error::cast)?;
                builder.bool(true)
            }
            Some(b'f') => {
                begin_value(start, false, 0)?;
                cursor.literal(b"false").map_err(Error::cast)?;
                builder.bool(false)
            }
            Some(b'n') => {
                begin_value(start, false, 0)?;
                cursor.literal(b"null").map_err(Error::cast)?;
                builder.null()
            }
            _ => return Err(Error::at(start, input)),
        };
        built.map_err(|e| Error::builder(start, e))?;

        // A value is complete: close every container it completes, until
        // one expects another value or the document ends.
        loop {
            cursor.skip_whitespace().map_err(Error::cast)?;
            let here = cursor.position;
            let Some(innermost) = open.last_mut() else {
                if here < input.len() {
                    return Err(Error::at(here, input));
                }
                return builder.finish().map_err(|e| Error::builder(here, e));
            };
            let (count, object) = match innermost {
                Open::Array(count) => {
                    *count += 1;
                    match cursor.peek() {
                        Some(b',') => {
                            cursor.position += 1;
                            continue 'value;
                        }
                        Some(b']') => (*count, false),
                        _ => return Err(Error::at(here, input)),
                    }
                }
                Open::Object { pairs, key_at } => {
                    *pairs += 1;
                    match cursor.peek() {
                        Some(b',') => {
                            builder.end_pair().map_err(|e| Error::builder(*key_at, e))?;
                            cursor.position += 1;
                            cursor.skip_whitespace().map_err(Error::cast)?;
                            *key_at = cursor.position;
                            cursor.key::<B, UNIQUE>(builder, seen)?;
                            continue 'value;
                        }
                        Some(b'}') => {
                            builder.end_pair().map_err(|e| Error::builder(*key_at, e))?;
                            if UNIQUE {
                                seen.close();
                            }
                            (*pairs, true)
                        }
                        _ => return Err(Error::at(here, input)),
                    }
                }
            };
            open.pop();
            cursor.position += 1;
            cursor
                .burn(count.saturating_mul(ITEM_FUEL))
                .map_err(Error::cast)?;
            let closed = if object {
                builder.end_object(count)
            } else {
                builder.end_array(count)
            };
            closed.map_err(|e| Error::builder(here, e))?;
        }
    }
}

/// The input and how far parsing has got; `position <= input.len()` always.
struct Cursor<'de, 'r> {
    input: &'de [u8],
    position: usize,
    /// Where strings with escapes are decoded, reused across strings.
    scratch: Vec<u8>,
    /// Work left before `ration` is asked for more.
    fuel: usize,
    ration: &'r mut dyn Ration,
}

impl<'de> Cursor<'de, '_> {
    #[inline(always)]
    fn peek(&self) -> Option<u8> {
        self.input.get(self.position).copied()
    }

    #[inline(always)]
    fn skip_whitespace(&mut self) -> Result<(), Syntax> {
        // Most JSON on the wire has none.
        if !matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            return Ok(());
        }
        let mut from = self.position;
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.position += 1;
            if self.position - from == WHITESPACE_BLOCK {
                self.burn(WHITESPACE_BLOCK / 2)?;
                from = self.position;
            }
        }
        match self.position - from {
            0 | 1 => Ok(()),
            run => self.burn(run / 2),
        }
    }

    /// Uses up `units` of the fuel, asking for more when it runs out, or
    /// fails where the cursor is.
    #[inline(always)]
    fn burn(&mut self, units: usize) -> Result<(), Syntax> {
        match self.fuel.checked_sub(units) {
            Some(left) => {
                self.fuel = left;
                Ok(())
            }
            None => self.refuel(units),
        }
    }

    #[cold]
    #[inline(never)]
    fn refuel(&mut self, units: usize) -> Result<(), Syntax> {
        let needed = units - self.fuel;
        let more = self.ration.more(self.position, needed);
        if more < needed {
            return Err(Error {
                position: self.position,
                kind: ErrorKind::Exhausted,
            });
        }
        self.fuel = self.fuel.saturating_add(more) - units;
        Ok(())
    }

    /// An object key and its colon, whitespace skipped before the key. If
    /// `UNIQUE`, a key `seen` before in its object is an error at its `"`.
    fn key<B: Builder<'de>, const UNIQUE: bool>(
        &mut self,
        builder: &mut B,
        seen: &mut OpenKeys,
    ) -> Result<(), Error<B::Error>> {
        let start = self.position;
        if self.peek() != Some(b'"') {
            return Err(Error::at(start, self.input));
        }
        self.position += 1;
        let text = self.string().map_err(Error::cast)?;
        // Noting a key copies it, and checking it compares or hashes it: a
        // unit a byte, paid before the work, as far as the key's text allows.
        // A key taken from the input is paid for at once; one decoded from
        // escapes lives in the scratch the cursor holds, and is copied (no
        // more than its decoding cost) before it is paid for.
        let (text, unpaid) = match text {
            Text::Input(input) if UNIQUE => {
                self.burn(input.len()).map_err(Error::cast)?;
                (Text::Input(input), 0)
            }
            text => (text, text.as_str().len()),
        };
        if UNIQUE {
            seen.note(text.as_str());
        }
        builder.key(text).map_err(|e| Error::builder(start, e))?;
        if UNIQUE {
            self.burn(unpaid).map_err(Error::cast)?;
            if !seen.is_new() {
                return Err(Error::limit(start, Limit::DuplicateKey));
            }
        }
        self.skip_whitespace().map_err(Error::cast)?;
        if self.peek() != Some(b':') {
            return Err(Error::at(self.position, self.input));
        }
        self.position += 1;
        Ok(())
    }

    /// `true`, `false` or `null`. Jason reports a misspelling at its first
    /// byte, however far the spelling matched.
    #[inline]
    fn literal(&mut self, word: &[u8]) -> Result<(), Syntax> {
        let rest = self.input.get(self.position..).unwrap_or_default();
        if !rest.starts_with(word) {
            return Err(Error::at(self.position, self.input));
        }
        self.position += word.len();
        Ok(())
    }
}
