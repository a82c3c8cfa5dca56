//! The walk over a term, in the order Jason's walk takes: depth first,
//! list items in order, a map's pairs in `Map.to_list/1`'s order, each
//! key before its value.
//!
//! No recursion: open lists and maps wait on a stack of [`Frame`]s, so a
//! term nested a million levels deep needs a million frames of heap, not of
//! native stack. A map's pairs are read once, as it opens, onto a stack of
//! terms of their own, and written from there.

use super::output;
use super::texts;
use super::{Form, Options};
use crate::terms::Unmade;
use crate::timeslice::{OutOfTime, Timeslice};
use mcp_framer_core::encode::{self, WriteError};
use rustler::sys::{
    enif_get_double, enif_get_int64, enif_get_list_cell, enif_get_map_size, enif_get_tuple,
    enif_get_uint64, enif_inspect_binary, enif_is_empty_list, enif_map_iterator_create,
    enif_map_iterator_destroy, enif_map_iterator_get_pair, enif_map_iterator_next,
    enif_map_iterator_prev, enif_term_type, ErlNifBinary, ErlNifEnv, ErlNifMapIterator,
    ErlNifMapIteratorEntry, ErlNifTerm, ErlNifTermType,
};
use rustler::{Env, Term};
use std::cell::Cell;
use std::collections::HashSet;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU8, Ordering};

mod atoms {
    rustler::atoms! {
        nil,
        true_ = "true",
        false_ = "false",
        struct_ = "__struct__",
        date = "Elixir.Date",
        time = "Elixir.Time",
        naive_date_time = "Elixir.NaiveDateTime",
        date_time = "Elixir.DateTime",
    }
}

/// A string without escapes this long or longer is not copied into the
/// walk's text: iodata holds the term's own binary, and a whole binary
/// copies it once, from the term. Shorter strings cost less to copy than
/// the list cells and sub-binary a reference takes. `McpFramer.JSON.Encoder`'s
/// docs give this number.
const REFERENCE_MIN: usize = 1024;

/// A map of more pairs than this is a HAMT; a smaller one is a flat map,
/// whose iterator runs in `Map.to_list/1`'s order from its first pair.
/// (The BEAM's MAP_SMALL_MAP_LIMIT; a HAMT that shrinks to it becomes a
/// flat map.) A HAMT's iterator gives that order backwards from its last
/// pair on OTP 25 and 27, forwards from its first on OTP 29: which, this
/// VM's Elixir side finds out once ([`learn_map_order`]).
const FLAT_MAP_MAX: usize = 32;

/// How this VM's HAMTs are read in `Map.to_list/1`'s order: not known yet,
/// from the first pair on, or from the last pair back.
static HAMT_ORDER: AtomicU8 = AtomicU8::new(UNKNOWN);
const UNKNOWN: u8 = 0;
const FROM_FIRST: u8 = 1;
const FROM_LAST: u8 = 2;

/// Learns, from a HAMT and its keys in `Map.to_list/1`'s order, which way
/// this VM's HAMTs are read in that order; `false` if neither way.
pub fn learn_map_order(env: Env<'_>, map: ErlNifTerm, keys: &[ErlNifTerm]) -> bool {
    for order in [FROM_FIRST, FROM_LAST] {
        if map_keys(env.as_c_arg(), map, order).as_deref() == Some(keys) {
            HAMT_ORDER.store(order, Ordering::Relaxed);
            return true;
        }
    }
    false
}

/// A map's keys in the iterator's order from the first pair, or from the
/// last back.
fn map_keys(raw: *mut ErlNifEnv, map: ErlNifTerm, order: u8) -> Option<Vec<ErlNifTerm>> {
    let mut keys = Vec::new();
    let mut read = |key, _value| {
        keys.push(key);
        Ok::<(), ()>(())
    };
    iterate(raw, map, order == FROM_FIRST, &mut read).ok()?;
    Some(keys)
}

/// Calls `each` with a map's pairs, in the iterator's order from the
/// first pair (`forward`) or from the last back, until it fails.
fn iterate<E>(
    raw: *mut ErlNifEnv,
    map: ErlNifTerm,
    forward: bool,
    each: &mut impl FnMut(ErlNifTerm, ErlNifTerm) -> Result<(), E>,
) -> Result<(), Option<E>> {
    let entry = if forward {
        ErlNifMapIteratorEntry::ERL_NIF_MAP_ITERATOR_HEAD
    } else {
        ErlNifMapIteratorEntry::ERL_NIF_MAP_ITERATOR_TAIL
    };
    // The iterator stays where the BEAM wrote it: a copy of it, read right
    // after the BEAM's stores, would stall.
    let mut iterator = MaybeUninit::<ErlNifMapIterator>::uninit();
    let iterator = iterator.as_mut_ptr();
    // SAFETY: `map` is a term of the call; once created, the iterator is
    // used only until it is destroyed below, on every path.
    if unsafe { enif_map_iterator_create(raw, map, iterator, entry) } == 0 {
        return Err(None);
    }
    let mut result = Ok(());
    loop {
        let (mut key, mut value) = (ErlNifTerm::default(), ErlNifTerm::default());
        // SAFETY: the iterator is live; the pair is written on success.
        if unsafe { enif_map_iterator_get_pair(raw, iterator, &mut key, &mut value) } == 0 {
            break;
        }
        if let Err(error) = each(key, value) {
            result = Err(Some(error));
            break;
        }
        // SAFETY: as above.
        unsafe {
            if forward {
                enif_map_iterator_next(raw, iterator);
            } else {
                enif_map_iterator_prev(raw, iterator);
            }
        }
    }
    // SAFETY: created above, destroyed once.
    unsafe { enif_map_iterator_destroy(raw, iterator) };
    result
}

/// The most bytes a scalar other than a string takes, or a bracket and a
/// comma: a float's 24 at most, an integer's 20.
const SCALAR_MAX: usize = 32;

/// A string this long is scanned only if the call's time affords it.
const LONG_STRING: usize = 16 * 1024;

/// What scanning and copying a byte of a string may cost, and escaping one,
/// in picoseconds: about twice the slowest measured.
const SCAN_PICOS_PER_BYTE: u64 = 500;
const ESCAPE_PICOS_PER_BYTE: u64 = 8000;

/// Iodata of this many referenced strings or more is made only if the
/// call can afford it, at this much a string: 3,000 strings of 1 KB took
/// 0.7-1.3 ms to walk and make into iodata on a busy host.
const MANY_PIECES: usize = 512;
const PIECE_NANOS: u64 = 200;

/// What checking a byte of a key for a repeat may cost under `maps:
/// :strict`, in picoseconds: a copy into the set, where memory not yet
/// touched took up to 4.4 ns a byte on a busy host, and its hash.
const KEY_CHECK_PICOS_PER_BYTE: u64 = 6000;

/// What writing a byte of text is taken to cost until the clock starts
/// (all of a call too short to read it): small MCP messages are written
/// at about 300 MB/s.
const WRITE_PICOS_PER_BYTE: u64 = 3_500;

/// What a bignum's digits may cost per pair of 64-bit limbs: about twice
/// the 6.9-8.2 ns measured from 100 to 1,600 limbs (2026-12-06, on a busy
/// host). At 2 ns, 14,314 digits were written in 2 ms on a normal
/// scheduler.
const BIG_PICOS_PER_LIMB_PAIR: u64 = 16_000;

/// Why the walk stopped short of the text.
pub enum Stop {
    /// It needs more time than the call has left.
    Dirty,
    /// The term holds a struct or key that Elixir turns into text.
    Convert,
    /// Jason refuses the term.
    Invalid(Invalid),
    /// The term holds a HAMT, and this VM's order of them is not known yet.
    MapOrder,
    /// The walk's stack and its pairs disagree. Unreachable by design;
    /// reported instead of panicking.
    Broken,
}

impl From<OutOfTime> for Stop {
    fn from(_: OutOfTime) -> Stop {
        Stop::Dirty
    }
}

impl From<Invalid> for Stop {
    fn from(invalid: Invalid) -> Stop {
        Stop::Invalid(invalid)
    }
}

/// What Jason refuses, and the term that shows it.
pub enum Invalid {
    /// A string that is not UTF-8; `byte` starts its first bad sequence.
    Utf8 { string: ErlNifTerm, byte: u8 },
    /// Under `maps: :strict`, a key written twice in one map, escaped.
    DuplicateKey(Vec<u8>),
    /// A term no JSON stands for: a tuple, pid, port, reference, function
    /// or bitstring.
    Unsupported(ErlNifTerm),
    /// A struct Jason has no encoding for without other packages.
    Struct(ErlNifTerm),
    /// A map key that neither is a binary, atom or integer nor became one.
    Key(ErlNifTerm),
    /// The tail of an improper list.
    ImproperList(ErlNifTerm),
    /// The output could not grow past this many bytes.
    NoMemory(usize),
}

impl Invalid {
    /// The string `string`, whose bytes are `text`, is not UTF-8 from
    /// `invalid` on.
    fn utf8(string: ErlNifTerm, text: &[u8], invalid: encode::InvalidUtf8) -> Invalid {
        let byte = text.get(invalid.position).copied().unwrap_or(0);
        Invalid::Utf8 { string, byte }
    }

    /// What stopped writing `string`, whose bytes are `text`, onto a
    /// buffer `written` bytes long.
    fn write(string: ErlNifTerm, text: &[u8], error: WriteError, written: usize) -> Invalid {
        match error {
            WriteError::InvalidUtf8(invalid) => Invalid::utf8(string, text, invalid),
            WriteError::NoMemory => Invalid::NoMemory(written),
        }
    }
}

/// An open list or map.
#[derive(Clone, Copy)]
enum Frame {
    /// A list, written up to `rest`; `first` until an item is written.
    List { rest: ErlNifTerm, first: bool },
    /// A map's pairs, `pairs[at..end]` still to write, from `start` on.
    /// `seen` indexes the keys written so far, when they must be checked.
    Object {
        start: usize,
        at: usize,
        end: usize,
        seen: Option<usize>,
    },
}

struct Atoms {
    nil: ErlNifTerm,
    true_: ErlNifTerm,
    false_: ErlNifTerm,
    struct_: ErlNifTerm,
}

/// The buffers of a walk, kept between calls on a scheduler thread.
#[derive(Default)]
pub struct Buffers {
    out: Vec<u8>,
    /// Where in `out` each long string without escapes goes, and their
    /// bytes in all: iodata holds each as its own binary, and a whole
    /// binary copies each once, straight from the term.
    pieces: Vec<(usize, ErlNifTerm)>,
    pieces_bytes: usize,
    stack: Vec<Frame>,
    /// Keys and values of the open maps, in turn.
    pairs: Vec<ErlNifTerm>,
    /// The keys written in each open map whose keys are checked.
    seen: Vec<HashSet<Vec<u8>>>,
    /// Texts of atoms, kept between calls, and of binary keys, for one.
    atom_texts: texts::Atoms,
    keys: texts::Keys,
}

/// Bytes, terms and key sets kept between calls; more is freed. With the
/// decoder's (see `decode::KEEP_TERMS`), under the 2.5 MiB a scheduler
/// thread keeps at most, as the README says.
const KEEP_BYTES: usize = 1024 * 1024;
const KEEP_TERMS: usize = 8192;
const KEEP_SETS: usize = 64;

impl Buffers {
    /// The text's buffer, for other text than the walk's.
    pub fn scratch(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }

    pub fn clear(&mut self) {
        self.out.clear();
        self.out.shrink_to(KEEP_BYTES);
        self.pieces.clear();
        self.pieces.shrink_to(KEEP_TERMS);
        self.pieces_bytes = 0;
        self.stack.clear();
        self.stack.shrink_to(KEEP_TERMS);
        self.pairs.clear();
        self.pairs.shrink_to(KEEP_TERMS);
        self.seen.clear();
        self.seen.shrink_to(KEEP_SETS);
        self.keys.clear();
    }
}

/// Where the key of a map came from, for `maps: :strict`: keys of one kind
/// are distinct terms and so distinct text, and need no check.
const BINARY_KEY: u8 = 1;
const ATOM_KEY: u8 = 2;
const INTEGER_KEY: u8 = 4;
const OTHER_KEY: u8 = 8;

pub struct Walker<'a, 'b> {
    env: Env<'a>,
    raw: *mut ErlNifEnv,
    /// The atoms compared with every atom and map key, read once.
    atoms: Atoms,
    options: Options,
    /// The tag of a converted term; `None` on the first pass.
    tag: Option<ErlNifTerm>,
    time: Option<&'b Timeslice>,
    /// The bytes of text counted as the call's work so far.
    counted: Cell<usize>,
    buffers: &'b mut Buffers,
}

impl<'a, 'b> Walker<'a, 'b> {
    pub fn new(
        env: Env<'a>,
        options: Options,
        tag: Option<ErlNifTerm>,
        time: Option<&'b Timeslice>,
        buffers: &'b mut Buffers,
    ) -> Walker<'a, 'b> {
        Walker {
            env,
            raw: env.as_c_arg(),
            atoms: Atoms {
                nil: atoms::nil().as_c_arg(),
                true_: atoms::true_().as_c_arg(),
                false_: atoms::false_().as_c_arg(),
                struct_: atoms::struct_().as_c_arg(),
            },
            options,
            tag,
            time,
            counted: Cell::new(0),
            buffers,
        }
    }

    /// Writes `term`.
    pub fn walk(&mut self, term: ErlNifTerm) -> Result<(), Stop> {
        self.value(term)?;
        while let Some(&frame) = self.buffers.stack.last() {
            let depth = self.buffers.stack.len();
            match frame {
                Frame::List { rest, first } => self.items(depth, rest, first)?,
                Frame::Object {
                    start,
                    at,
                    end,
                    seen,
                } => self.pairs(depth, start, at, end, seen)?,
            }
        }
        Ok(())
    }

    /// Writes the items of the list open at `depth` from `rest` on, until
    /// it ends or an item opens a list or map. The frame is written back
    /// only then: a run of scalars never touches the stack.
    fn items(&mut self, depth: usize, mut rest: ErlNifTerm, first: bool) -> Result<(), Stop> {
        let mut comma = !first;
        loop {
            let Some((head, tail)) = list_cell(self.raw, rest) else {
                if !is_empty_list(self.raw, rest) {
                    return Err(Invalid::ImproperList(rest).into());
                }
                self.buffers.out.push(b']');
                self.buffers.stack.pop();
                return Ok(());
            };
            if comma {
                self.buffers.out.push(b',');
            }
            comma = true;
            rest = tail;
            self.value(head)?;
            if self.buffers.stack.len() > depth {
                let frame = Frame::List { rest, first: false };
                return self.set_frame(depth, frame);
            }
        }
    }

    /// Writes the pairs of the map open at `depth`, `pairs[at..end]`, until
    /// they end or a value opens a list or map, as [`Walker::items`] does.
    fn pairs(
        &mut self,
        depth: usize,
        start: usize,
        mut at: usize,
        end: usize,
        seen: Option<usize>,
    ) -> Result<(), Stop> {
        while at < end {
            let Some(&[key, value]) = self.buffers.pairs.get(at..at + 2) else {
                return Err(Stop::Broken);
            };
            if at != start {
                self.buffers.out.push(b',');
            }
            at += 2;
            self.key(key, seen)?;
            self.value(value)?;
            if self.buffers.stack.len() > depth {
                let frame = Frame::Object {
                    start,
                    at,
                    end,
                    seen,
                };
                return self.set_frame(depth, frame);
            }
        }
        self.buffers.out.push(b'}');
        self.buffers.pairs.truncate(start);
        if seen.is_some() {
            self.buffers.seen.pop();
        }
        self.buffers.stack.pop();
        Ok(())
    }

    /// Puts back the frame of the list or map open at `depth`.
    fn set_frame(&mut self, depth: usize, frame: Frame) -> Result<(), Stop> {
        let slot = depth
            .checked_sub(1)
            .and_then(|i| self.buffers.stack.get_mut(i));
        *slot.ok_or(Stop::Broken)? = frame;
        Ok(())
    }

    /// Counts the text written since the last count as the call's work:
    /// before each look at the clock, whose start it moves back, as a
    /// clock that starts late counts the work before it as estimated.
    /// Referenced strings count too.
    pub fn count_written(&self) {
        let written = self.buffers.out.len() + self.buffers.pieces_bytes;
        if let Some(time) = self.time {
            let new = written.saturating_sub(self.counted.replace(written)) as u64;
            time.count_work(new * WRITE_PICOS_PER_BYTE / 1000);
        }
    }

    /// The walk's text as the result term its form asks for.
    pub fn finish(&mut self) -> Result<ErlNifTerm, Stop> {
        if self.options.form == Form::Line {
            self.buffers.out.push(b'\n');
        }
        self.count_written();
        let whole = self.options.form == Form::Binary;
        let copied = self.buffers.out.len() + if whole { self.buffers.pieces_bytes } else { 0 };
        if let Some(time) = self.time {
            if copied >= LONG_STRING {
                time.afford(output::copy_nanos(copied))?;
            }
            // Iodata is a list of a sub-binary and a piece for each string
            // referenced, made in one go.
            let pieces = self.buffers.pieces.len();
            if !whole && pieces >= MANY_PIECES {
                time.afford(pieces as u64 * PIECE_NANOS)?;
            }
        }
        // The copy is made in steps, each only if the call can afford it:
        // into memory not yet touched it may take 4 ns a byte, not 1.
        let Buffers { out, pieces, .. } = &*self.buffers;
        output::make(self.env, out, pieces, whole, self.time).map_err(|unmade| match unmade {
            Unmade::NoMemory => Stop::Invalid(Invalid::NoMemory(copied)),
            Unmade::Stopped => Stop::Dirty,
        })
    }

    /// Makes room for `bytes` more of text, or fails: no write of a
    /// scalar, bracket or comma then allocates, so running out of memory
    /// is an error, not an abort.
    #[inline]
    fn reserve(&mut self, bytes: usize) -> Result<(), Stop> {
        let out = &mut self.buffers.out;
        out.try_reserve(bytes)
            .map_err(|_| Invalid::NoMemory(out.len()).into())
    }

    fn push_frame(&mut self, frame: Frame) -> Result<(), Stop> {
        let Buffers { stack, out, .. } = &mut *self.buffers;
        stack
            .try_reserve(1)
            .map_err(|_| Invalid::NoMemory(out.len()))?;
        stack.push(frame);
        Ok(())
    }

    #[inline]
    fn charge(&self, units: usize) -> Result<(), Stop> {
        match self.time {
            Some(time) => {
                let units = u32::try_from(units).unwrap_or(u32::MAX);
                Ok(time.charge_then(units, || self.count_written())?)
            }
            None => Ok(()),
        }
    }

    /// Whether `nanos` more work still ends within the call's time.
    fn afford(&self, picos: u64) -> Result<(), Stop> {
        match self.time {
            Some(time) => {
                self.count_written();
                Ok(time.afford(picos / 1000)?)
            }
            None => Ok(()),
        }
    }

    /// Writes a scalar, or opens a list or map.
    fn value(&mut self, term: ErlNifTerm) -> Result<(), Stop> {
        self.charge(1)?;
        self.reserve(SCALAR_MAX)?;
        // SAFETY: `term` is part of the call's argument, made in `env`.
        match unsafe { enif_term_type(self.raw, term) } {
            ErlNifTermType::ERL_NIF_TERM_TYPE_BITSTRING => match self.binary(term) {
                Some(text) => self.string(term, text, true),
                None => Err(Invalid::Unsupported(term).into()),
            },
            ErlNifTermType::ERL_NIF_TERM_TYPE_ATOM => self.atom(term),
            ErlNifTermType::ERL_NIF_TERM_TYPE_INTEGER => self.integer(term),
            ErlNifTermType::ERL_NIF_TERM_TYPE_FLOAT => {
                let mut value = 0.0;
                // SAFETY: `term` is a float; the BEAM's floats are finite.
                unsafe { enif_get_double(self.raw, term, &mut value) };
                encode::write_float(&mut self.buffers.out, value);
                Ok(())
            }
            ErlNifTermType::ERL_NIF_TERM_TYPE_LIST => {
                if is_empty_list(self.raw, term) {
                    self.buffers.out.extend_from_slice(b"[]");
                } else {
                    self.buffers.out.push(b'[');
                    self.push_frame(Frame::List {
                        rest: term,
                        first: true,
                    })?;
                }
                Ok(())
            }
            ErlNifTermType::ERL_NIF_TERM_TYPE_MAP => self.map(term),
            ErlNifTermType::ERL_NIF_TERM_TYPE_TUPLE => match self.converted_pairs(term) {
                Some(pairs) => self.pair_list(pairs),
                None => Err(Invalid::Unsupported(term).into()),
            },
            _ => Err(Invalid::Unsupported(term).into()),
        }
    }

    fn atom(&mut self, atom: ErlNifTerm) -> Result<(), Stop> {
        let out = &mut self.buffers.out;
        match atom {
            _ if atom == self.atoms.nil => out.extend_from_slice(b"null"),
            _ if atom == self.atoms.true_ => out.extend_from_slice(b"true"),
            _ if atom == self.atoms.false_ => out.extend_from_slice(b"false"),
            _ => return self.atom_string(atom),
        }
        Ok(())
    }

    /// Writes an atom's text as a string, as `Atom.to_string/1` gives it.
    fn atom_string(&mut self, atom: ErlNifTerm) -> Result<(), Stop> {
        let Buffers {
            out, atom_texts, ..
        } = &mut *self.buffers;
        atom_texts
            .write(self.env, atom, self.options.escape, out)
            .map_err(|()| Invalid::NoMemory(out.len()).into())
    }

    /// A binary's bytes; `None` for a bitstring that is not a binary.
    fn binary(&self, term: ErlNifTerm) -> Option<&'a [u8]> {
        let mut binary = MaybeUninit::<ErlNifBinary>::uninit();
        // SAFETY: on success the BEAM fills `binary` with the bytes of
        // `term`, which live as long as the call's environment.
        unsafe {
            if enif_inspect_binary(self.raw, term, binary.as_mut_ptr()) == 0 {
                return None;
            }
            let binary = binary.assume_init();
            if binary.size == 0 {
                return Some(&[]);
            }
            Some(std::slice::from_raw_parts(binary.data, binary.size))
        }
    }

    /// Writes a string; a long one without escapes may go into iodata as
    /// `term` itself, if `may_reference`.
    fn string(&mut self, term: ErlNifTerm, text: &[u8], may_reference: bool) -> Result<(), Stop> {
        let escape = self.options.escape;
        if text.len() >= LONG_STRING {
            self.afford(text.len() as u64 * SCAN_PICOS_PER_BYTE)?;
        }
        // A unit of the time's count is a value, or 64 bytes of a string.
        self.charge(text.len() / 64)?;
        let long = may_reference && text.len() >= REFERENCE_MIN;
        if !long && text.len() < LONG_STRING {
            return self.short_string(term, text);
        }
        // The ASCII prefix that needs no escape: all of a plain ASCII
        // string. Past it the text is checked as it is written, but a
        // string that may be referenced is looked at whole first.
        let ascii = encode::plain_ascii(text, escape);
        let plain = match ascii {
            _ if ascii == text.len() || !long => ascii,
            _ => encode::first_escape(text, ascii, escape),
        };
        if plain == text.len() && long {
            encode::check_utf8_from(text, ascii).map_err(|e| Invalid::utf8(term, text, e))?;
            let out = &mut self.buffers.out;
            out.push(b'"');
            self.buffers.pieces.push((out.len(), term));
            self.buffers.pieces_bytes += text.len();
            out.push(b'"');
            return Ok(());
        }
        if text.len() - plain >= LONG_STRING {
            self.afford((text.len() - plain) as u64 * ESCAPE_PICOS_PER_BYTE)?;
        }
        let out = &mut self.buffers.out;
        // The quotes, and what `write_plain` stores past a short string.
        out.try_reserve(text.len() + 10)
            .map_err(|_| Invalid::NoMemory(out.len()))?;
        out.push(b'"');
        if ascii == text.len() {
            encode::write_plain(out, text);
        } else {
            out.extend_from_slice(&text[..ascii]);
            encode::write_checked_from(out, text, ascii, escape)
                .map_err(|error| Invalid::write(term, text, error, out.len()))?;
        }
        out.push(b'"');
        Ok(())
    }

    /// Writes a string that is not to be referenced, in one pass over its
    /// ASCII prefix without escapes.
    fn short_string(&mut self, term: ErlNifTerm, text: &[u8]) -> Result<(), Stop> {
        let out = &mut self.buffers.out;
        out.try_reserve(text.len() + 2)
            .map_err(|_| Invalid::NoMemory(out.len()))?;
        out.push(b'"');
        encode::write_checked(out, text, self.options.escape)
            .map_err(|error| Invalid::write(term, text, error, out.len()))?;
        out.push(b'"');
        Ok(())
    }

    fn integer(&mut self, term: ErlNifTerm) -> Result<(), Stop> {
        let out = &mut self.buffers.out;
        let (mut signed, mut unsigned) = (0i64, 0u64);
        // SAFETY: `term` is an integer; each call only reads it.
        unsafe {
            if enif_get_int64(self.raw, term, &mut signed) != 0 {
                encode::write_integer(out, signed);
                return Ok(());
            }
            if enif_get_uint64(self.raw, term, &mut unsigned) != 0 {
                encode::write_unsigned(out, unsigned);
                return Ok(());
            }
        }
        self.big_integer(term)
    }

    /// A bignum, read from its external term format: the NIF interface has
    /// no other way to read one.
    fn big_integer(&mut self, term: ErlNifTerm) -> Result<(), Stop> {
        // SAFETY: `term` is part of the call's argument.
        let external = unsafe { Term::new(self.env, term) }.to_binary();
        let (negative, magnitude) = match external.as_slice() {
            [131, 110, length, sign, rest @ ..] => (*sign != 0, rest.get(..usize::from(*length))),
            [131, 111, a, b, c, d, sign, rest @ ..] => {
                let length = u32::from_be_bytes([*a, *b, *c, *d]) as usize;
                (*sign != 0, rest.get(..length))
            }
            _ => (false, None),
        };
        let magnitude = magnitude.ok_or(Invalid::Unsupported(term))?;
        let limbs = magnitude.len() as u64 / 8 + 1;
        self.afford(limbs * limbs / 2 * BIG_PICOS_PER_LIMB_PAIR)?;
        // At most 2.5 digits a byte, and a sign.
        self.reserve(magnitude.len() * 5 / 2 + 2)?;
        encode::write_big_integer(&mut self.buffers.out, negative, magnitude);
        Ok(())
    }

    /// Writes a map's key and the `:` after it; under `seen`, checks it
    /// was not written before in its map.
    fn key(&mut self, key: ErlNifTerm, seen: Option<usize>) -> Result<(), Stop> {
        // A kept key's slot, and an integer key's quotes and colon.
        self.reserve(64)?;
        let start = self.buffers.out.len();
        if self.buffers.keys.write(key, &mut self.buffers.out) {
            return self.check_key(start, seen);
        }
        // A term the BEAM inspects as a binary is one: only another key's
        // type is asked for.
        match self.binary(key) {
            Some(text) => {
                self.string(key, text, false)?;
                self.buffers.out.push(b':');
                let Buffers { out, keys, .. } = &mut *self.buffers;
                keys.put(key, &out[start..]);
            }
            None => {
                // SAFETY: `key` is part of the call's argument.
                let kind = unsafe { enif_term_type(self.raw, key) };
                self.other_key(key, kind)?;
                self.buffers.out.push(b':');
            }
        }
        self.check_key(start, seen)
    }

    /// Under `seen`, checks that the key written from `start` on, `"text":`,
    /// was not written before in its map.
    fn check_key(&mut self, start: usize, seen: Option<usize>) -> Result<(), Stop> {
        let Some(index) = seen else {
            return Ok(());
        };
        let length = self.buffers.out.len().saturating_sub(start + 3);
        if length >= LONG_STRING {
            self.afford(length as u64 * KEY_CHECK_PICOS_PER_BYTE)?;
        }
        let out = &self.buffers.out;
        let text = out.get(start + 1..out.len() - 2).unwrap_or_default();
        let set = self.buffers.seen.get_mut(index).ok_or(Stop::Broken)?;
        if !set.insert(text.to_vec()) {
            return Err(Invalid::DuplicateKey(text.to_vec()).into());
        }
        Ok(())
    }

    /// Writes a key that is not a binary, of type `kind`.
    fn other_key(&mut self, key: ErlNifTerm, kind: ErlNifTermType) -> Result<(), Stop> {
        match kind {
            ErlNifTermType::ERL_NIF_TERM_TYPE_ATOM => self.atom_string(key),
            ErlNifTermType::ERL_NIF_TERM_TYPE_INTEGER => {
                self.buffers.out.push(b'"');
                self.integer(key)?;
                self.buffers.out.push(b'"');
                Ok(())
            }
            // `String.Chars` may turn anything else into a key: in Elixir.
            _ if self.tag.is_none() => Err(Stop::Convert),
            _ => Err(Invalid::Key(key).into()),
        }
    }

    /// Opens a map, reading its pairs in `Map.to_list/1`'s order.
    fn map(&mut self, map: ErlNifTerm) -> Result<(), Stop> {
        let mut size = 0;
        // SAFETY: `map` is a map.
        unsafe { enif_get_map_size(self.raw, map, &mut size) };
        if size == 0 {
            self.buffers.out.extend_from_slice(b"{}");
            return Ok(());
        }
        let start = self.buffers.pairs.len();
        let kinds = self.read_pairs(map, size)?;
        if kinds & STRUCT != 0 {
            self.buffers.pairs.truncate(start);
            return self.structure(map);
        }
        let checked = self.options.strict && (kinds & (kinds - 1)) != 0;
        self.open_object(start, checked)
    }

    fn open_object(&mut self, start: usize, checked: bool) -> Result<(), Stop> {
        let seen = checked.then(|| {
            self.buffers.seen.push(HashSet::new());
            self.buffers.seen.len() - 1
        });
        self.buffers.out.push(b'{');
        let end = self.buffers.pairs.len();
        self.push_frame(Frame::Object {
            start,
            at: start,
            end,
            seen,
        })
    }

    /// Pushes a map's keys and values onto `pairs`; returns the kinds of
    /// its keys, with [`STRUCT`] for a struct.
    fn read_pairs(&mut self, map: ErlNifTerm, size: usize) -> Result<u8, Stop> {
        let forward = match HAMT_ORDER.load(Ordering::Relaxed) {
            _ if size <= FLAT_MAP_MAX => true,
            FROM_FIRST => true,
            FROM_LAST => false,
            _ => return Err(Stop::MapOrder),
        };
        let Buffers { pairs, out, .. } = &mut *self.buffers;
        let room = pairs.try_reserve(2 * size);
        room.map_err(|_| Invalid::NoMemory(out.len()))?;
        let struct_key = self.atoms.struct_;
        let (raw, strict, time) = (self.raw, self.options.strict, self.time);
        let pairs = &mut self.buffers.pairs;
        let mut kinds = 0;
        let mut read = |key, value| {
            if strict {
                kinds |= key_kind(raw, key);
            }
            if key == struct_key && is_atom(raw, value) {
                kinds |= STRUCT;
            }
            pairs.push(key);
            pairs.push(value);
            // Reading a pair costs about what writing a small value does.
            match time {
                Some(time) => time.charge(1),
                None => Ok(()),
            }
        };
        match iterate(raw, map, forward, &mut read) {
            Ok(()) => Ok(kinds),
            Err(Some(out_of_time)) => Err(out_of_time.into()),
            Err(None) => Err(Invalid::Unsupported(map).into()),
        }
    }

    /// A struct: the four Jason knows are written by Elixir's
    /// `to_iso8601/1`, on the converting pass; any other is refused.
    fn structure(&mut self, map: ErlNifTerm) -> Result<(), Stop> {
        let module = self.struct_module(map);
        let known = [
            atoms::date(),
            atoms::time(),
            atoms::naive_date_time(),
            atoms::date_time(),
        ];
        let is_known = known.iter().any(|atom| Some(atom.as_c_arg()) == module);
        if is_known && self.tag.is_none() {
            Err(Stop::Convert)
        } else {
            Err(Invalid::Struct(map).into())
        }
    }

    fn struct_module(&self, map: ErlNifTerm) -> Option<ErlNifTerm> {
        // SAFETY: `map` is a map, and the key an atom term.
        unsafe { Term::new(self.env, map) }
            .map_get(atoms::struct_())
            .ok()
            .map(|module| module.as_c_arg())
    }

    /// The pairs list of an object whose keys Elixir converted,
    /// `{tag, pairs}`, on the pass after the conversion.
    fn converted_pairs(&self, tuple: ErlNifTerm) -> Option<ErlNifTerm> {
        let tag = self.tag?;
        let elements = self.tuple(tuple)?;
        match elements {
            [first, pairs] if *first == tag => Some(*pairs),
            _ => None,
        }
    }

    /// Opens an object from a list of `{key, value}` tuples, in order.
    /// Converted keys may repeat, so under `maps: :strict` they are checked.
    fn pair_list(&mut self, list: ErlNifTerm) -> Result<(), Stop> {
        let start = self.buffers.pairs.len();
        let mut rest = list;
        while let Some((pair, tail)) = list_cell(self.raw, rest) {
            match self.tuple(pair) {
                Some(&[key, value]) => {
                    self.buffers.pairs.push(key);
                    self.buffers.pairs.push(value);
                }
                _ => return Err(Invalid::Unsupported(pair).into()),
            }
            self.charge(1)?;
            rest = tail;
        }
        if self.buffers.pairs.len() == start {
            self.buffers.out.extend_from_slice(b"{}");
            return Ok(());
        }
        self.open_object(start, self.options.strict)
    }

    fn tuple(&self, term: ErlNifTerm) -> Option<&'a [ErlNifTerm]> {
        let mut arity = 0;
        let mut elements = std::ptr::null();
        // SAFETY: on success the BEAM points `elements` at the tuple's
        // `arity` elements, which live as long as the call's environment.
        unsafe {
            if enif_get_tuple(self.raw, term, &mut arity, &mut elements) == 0 || elements.is_null()
            {
                return None;
            }
            Some(std::slice::from_raw_parts(elements, arity as usize))
        }
    }
}

fn list_cell(raw: *mut ErlNifEnv, list: ErlNifTerm) -> Option<(ErlNifTerm, ErlNifTerm)> {
    let (mut head, mut tail) = (ErlNifTerm::default(), ErlNifTerm::default());
    // SAFETY: reads a term of the call's argument; writes on success.
    let is_cell = unsafe { enif_get_list_cell(raw, list, &mut head, &mut tail) } != 0;
    is_cell.then_some((head, tail))
}

fn key_kind(raw: *mut ErlNifEnv, key: ErlNifTerm) -> u8 {
    // SAFETY: `key` is part of the call's argument.
    match unsafe { enif_term_type(raw, key) } {
        ErlNifTermType::ERL_NIF_TERM_TYPE_BITSTRING => BINARY_KEY,
        ErlNifTermType::ERL_NIF_TERM_TYPE_ATOM => ATOM_KEY,
        ErlNifTermType::ERL_NIF_TERM_TYPE_INTEGER => INTEGER_KEY,
        _ => OTHER_KEY,
    }
}

fn is_atom(raw: *mut ErlNifEnv, term: ErlNifTerm) -> bool {
    // SAFETY: reads a term of the call's argument.
    matches!(
        unsafe { enif_term_type(raw, term) },
        ErlNifTermType::ERL_NIF_TERM_TYPE_ATOM
    )
}

fn is_empty_list(raw: *mut ErlNifEnv, term: ErlNifTerm) -> bool {
    // SAFETY: reads a term of the call's argument.
    unsafe { enif_is_empty_list(raw, term) != 0 }
}

/// In the kinds [`Walker::read_pairs`] returns: the map is a struct.
const STRUCT: u8 = 16;
