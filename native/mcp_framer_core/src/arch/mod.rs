//! All of the crate's vector code, in memchr's `arch/` manner: each
//! instruction set in a module of its own, behind one safe function
//! that picks the best the CPU has, detected once at run time, and a
//! portable twin built on every target, which the tests and fuzz targets
//! hold every variant to.
//!
//! What is here:
//! * `newline_mask`: where the newlines are in 64 bytes, for the framer.
//!   SSE2, which every x86-64 CPU has (elsewhere the framer uses memchr).
//! * [`classify_lane`]: the special bytes of a string (`"`, `\`, below
//!   0x20) and its bytes of 0x80 and above, in 16 bytes: the first look
//!   at every string, inlined into the parser. SSE2, or the twin.
//! * [`find_special`]: the first special byte from a position, and
//!   whether the text before it is ASCII: the rest of a string without
//!   escapes.
//! * [`copy_runs`]: copies string text onto a buffer up to each special
//!   byte, and hands that byte to a [`Special`], which decodes the escape
//!   or stops: a string with escapes.
//! * [`is_utf8`]: whether text is UTF-8, for both; AVX-512 has its own,
//!   others simdutf8's.
//! * [`prefetch`]: a hint to fetch text before a loop reaches it, for
//!   the encoder's segments and both long scans.
//! * [`find_stop`]: for the encoder, the first byte from a position that
//!   one escape mode's [`Stops`] hold for.
//! * [`copy_to_stop`]: for the encoder, copies string text onto a buffer
//!   up to that byte, a 16-byte lane at a time: the text between escapes.
//! * [`escape_blocks`]: for the encoder, writes text with escapes in the
//!   JSON mode, a block of 32 bytes at a time, with AVX2 or AVX-512 VBMI2.
//!
//! [`find_special`], [`copy_runs`] and [`find_stop`] use the widest
//! instruction set the CPU has ([`Isa::best`]): blocks of 16 bytes with
//! SSE2 or the portable twin (8 for [`find_stop`]'s), 32 with AVX2, and
//! with AVX-512 64 for [`copy_runs`] and AVX2's 32 for the scans (see
//! `x86_64::avx512`). With AVX2, and where AVX-512 has VBMI and VBMI2
//! too, [`copy_runs`] decodes a block's one-byte escapes all at once, by
//! the table of its [`Special`] (a permute and a compress with VBMI2,
//! shuffles with AVX2), and with VBMI2 its `\u` escapes and surrogate
//! pairs too, where the [`Special`] decodes them as JSON does. The
//! loops are written once, in `generic`, over a `Block` or a `Scan` of
//! each instruction set; each instruction set's module instantiates them
//! inside a function compiled for it. `unsafe` is confined to those
//! modules and to the calls below that only a detected [`Isa`] makes.
//! The vector loops store into a `generic::Room` made past the output's
//! length; builds with debug assertions, the tests' and the fuzz
//! targets', stop any store that would leave it.

mod generic;
pub mod portable;
#[cfg(target_arch = "x86_64")]
mod x86_64;

use std::sync::atomic::{AtomicU8, Ordering};

/// Bit `i` of `special` is set when byte `i` of a block is `"`, `\` or
/// below 0x20; bit `i` of `high` when it is 0x80 or above. Bits past the
/// block's length are clear.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Masks {
    pub special: u64,
    pub high: u64,
}

/// Where a scan for a special byte stopped: at the first one, or at the
/// end of the input; `ascii` tells whether every byte before it was
/// below 0x80.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub stop: usize,
    pub ascii: bool,
}

/// The value of each hex digit; 0xFF for the bytes that are not one. The
/// parser's `\u` escapes read it a digit at a time, and the VBMI2 loop of
/// [`copy_runs`] a block at a time.
pub(crate) static HEX_DIGITS: [u8; 256] = {
    let mut table = [0xFF; 256];
    let mut digit = 0;
    while digit < 10 {
        table[b'0' as usize + digit] = digit as u8;
        digit += 1;
    }
    let mut letter = 0;
    while letter < 6 {
        table[b'a' as usize + letter] = 10 + letter as u8;
        table[b'A' as usize + letter] = 10 + letter as u8;
        letter += 1;
    }
    table
};

/// Decides what a special byte of string text means to [`copy_runs`]. It
/// is `Copy` so that the loop can keep it in registers.
pub trait Special: Copy {
    /// A run of text ends at `at`: `input[at]` is `"`, `\` or below 0x20,
    /// or `at` is `input.len()`. Decode what starts there, or return
    /// `None` to stop there.
    fn at(&mut self, input: &[u8], at: usize) -> Option<Decoded>;

    /// The escapes of one byte, by the letter after the `\`: what `at`
    /// decodes that escape to, wherever it is, or 0 for a letter whose
    /// escape `at` decodes otherwise, or refuses. A loop may decode these
    /// escapes many at a time by the table, as [`Special::simple`] allows.
    const SIMPLE: [u8; 128] = [0; 128];

    /// Whether `at` decodes `\u` and four hex digits of either case as
    /// JSON does, whenever [`Special::simple`] would take it: outside the
    /// surrogates, to the UTF-8 of that code point (`\u0000` to a zero
    /// byte), going on six bytes; a high surrogate with a low one right
    /// after it, to the UTF-8 of the pair's code point, going on twelve.
    /// What it does with a lone surrogate is its own. A loop may then
    /// decode those escapes many at a time too, where [`Special::SIMPLE`]
    /// leaves `u` to `at`.
    const UNICODE: bool = false;

    /// Escapes that a loop is about to decode by itself, a bit for the `\`
    /// of each: bit `i` for `input[at + i]`. Those of `unicode`, a part of
    /// `escapes` that is empty unless [`Special::UNICODE`], are `\u`
    /// escapes, the others [`Special::SIMPLE`]'s; those of `pairs`, a part
    /// of `unicode`, are surrogate pairs, each one escape of twelve bytes
    /// whose second `\` is not in `escapes`. Returns the first of them, in
    /// order, as many as `at` would decode in a row, counted as `at` counts
    /// them; the loop stops at the first left out and asks `at` about it.
    fn simple(&mut self, escapes: u64, unicode: u64, pairs: u64, at: usize) -> u64 {
        let _ = (escapes, unicode, pairs, at);
        0
    }
}

/// What a [`Special`] decoded: `bytes[..length]`, 1 to 4 of them, and
/// where the next run starts, past the special byte and at most at the
/// input's end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decoded {
    pub next: usize,
    pub bytes: [u8; 4],
    pub length: usize,
}

/// Where [`copy_runs`] stopped: the special byte its [`Special`] did not
/// go past, and whether every run it copied was ASCII.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Copied {
    pub at: usize,
    pub ascii: bool,
}

/// N bytes classified at once by one instruction set: the one piece of
/// vector code the loops in `generic` need.
trait Block<const N: usize> {
    /// # Safety
    /// The CPU has the block's instruction set.
    unsafe fn classify(bytes: &[u8; N]) -> Masks;

    /// `rest`, fewer than N bytes, padded to N with zeros: a zero is
    /// special, so a scan of the block stops at the input's end at the
    /// latest.
    ///
    /// # Safety
    /// As for [`Block::classify`].
    #[inline(always)]
    unsafe fn padded(rest: &[u8]) -> [u8; N] {
        generic::padded(rest)
    }
}

/// The bytes [`find_stop`] stops at: always `"`, `\` and every byte
/// below 0x20; then each of `extra` (an escape mode repeats a byte when
/// it needs fewer than three), and every byte of 0x80 or above when
/// `high` is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stops {
    pub extra: [u8; 3],
    pub high: bool,
}

impl Stops {
    /// Whether a scan stops at `byte`: the definition the vector code is
    /// held to.
    #[inline]
    pub fn stops_at(self, byte: u8) -> bool {
        byte == b'"'
            || byte == b'\\'
            || byte < 0x20
            || self.extra.contains(&byte)
            || (self.high && byte >= 0x80)
    }
}

/// N bytes tested at once for a set of [`Stops`] by one instruction set:
/// the piece of vector code the encoder's loops in `generic` need.
trait Scan<const N: usize> {
    /// How many bits of [`Scan::stop_bits`] stand for each byte.
    const BITS: u32;

    /// Nonzero when `stops` holds for a byte of `bytes`, and then the
    /// lowest set bit lies in the [`Scan::BITS`] bits of the first such
    /// byte, the first byte's bits the lowest.
    ///
    /// # Safety
    /// The CPU has the block's instruction set.
    unsafe fn stop_bits(bytes: &[u8; N], stops: Stops) -> u64;

    /// [`find_stop`] where fewer than N bytes are left from `at`, which
    /// may be the input's end or past it.
    ///
    /// # Safety
    /// As for [`Scan::stop_bits`].
    unsafe fn find_in_rest(text: &[u8], at: usize, stops: Stops) -> usize;
}

/// The bytes [`escape_blocks`] takes at once, and the room in its output
/// it needs for each block: a block of escapes only doubles.
pub const ESCAPE_BLOCK: usize = 32;
pub const ESCAPE_ROOM: usize = 2 * ESCAPE_BLOCK;

/// The letter after the `\` of each ASCII byte that the JSON escape mode
/// writes as two bytes (`\"`, `\\`, `\b`, `\t`, `\n`, `\f`, `\r`);
/// 0 for the others, of which those below 0x20 are written as `\u00XX`
/// and the rest as they are.
pub const JSON_LETTERS: [u8; 128] = {
    let mut letters = [0; 128];
    letters[0x08] = b'b';
    letters[0x09] = b't';
    letters[0x0A] = b'n';
    letters[0x0C] = b'f';
    letters[0x0D] = b'r';
    letters[b'"' as usize] = b'"';
    letters[b'\\' as usize] = b'\\';
    letters
};

/// An instruction set this CPU has. Only [`Isa::best`] and [`Isa::all`]
/// make one, each after checking the CPU, so a function given an `Isa`
/// may run its instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Isa(Kind);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Kind {
    Portable = 1,
    #[cfg(target_arch = "x86_64")]
    Sse2,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(target_arch = "x86_64")]
    Avx512,
    #[cfg(target_arch = "x86_64")]
    Avx512Vbmi2,
}

/// The best [`Kind`] as a `u8`, 0 until it is detected.
static BEST: AtomicU8 = AtomicU8::new(0);

impl Isa {
    /// The instruction set of [`lane`], which needs no detection.
    #[cfg(target_arch = "x86_64")]
    const LANE: Isa = Isa(Kind::Sse2);
    #[cfg(not(target_arch = "x86_64"))]
    const LANE: Isa = Isa(Kind::Portable);

    /// The widest instruction set this CPU has, or the one the environment
    /// variable `MCP_FRAMER_ISA` names ([`Isa::name`]) if the CPU has it:
    /// chosen on first use and kept, so that each later call is one load.
    /// The variable lets the tests and benchmarks run a narrower one on a
    /// machine that has a wider.
    #[inline(always)]
    pub fn best() -> Isa {
        match BEST.load(Ordering::Relaxed) {
            0 => Isa::detect(),
            #[cfg(target_arch = "x86_64")]
            5 => Isa(Kind::Avx512Vbmi2),
            #[cfg(target_arch = "x86_64")]
            4 => Isa(Kind::Avx512),
            #[cfg(target_arch = "x86_64")]
            3 => Isa(Kind::Avx2),
            #[cfg(target_arch = "x86_64")]
            2 => Isa(Kind::Sse2),
            _ => Isa(Kind::Portable),
        }
    }

    #[cold]
    fn detect() -> Isa {
        let all = Isa::all();
        let named = std::env::var("MCP_FRAMER_ISA").ok();
        let chosen = all.iter().find(|isa| named.as_deref() == Some(isa.name()));
        let best = *chosen.or(all.last()).unwrap_or(&Isa(Kind::Portable));
        BEST.store(best.0 as u8, Ordering::Relaxed);
        best
    }

    /// Every instruction set this CPU has, from the portable twin up.
    pub fn all() -> Vec<Isa> {
        #[cfg(target_arch = "x86_64")]
        {
            let mut all = vec![Isa(Kind::Portable), Isa(Kind::Sse2)];
            if x86_64::avx2::detected() {
                all.push(Isa(Kind::Avx2));
            }
            if x86_64::avx512::detected() {
                all.push(Isa(Kind::Avx512));
            }
            if x86_64::avx512::vbmi2_detected() {
                all.push(Isa(Kind::Avx512Vbmi2));
            }
            all
        }
        #[cfg(not(target_arch = "x86_64"))]
        vec![Isa(Kind::Portable)]
    }

    pub fn name(self) -> &'static str {
        match self.0 {
            Kind::Portable => "portable",
            #[cfg(target_arch = "x86_64")]
            Kind::Sse2 => "sse2",
            #[cfg(target_arch = "x86_64")]
            Kind::Avx2 => "avx2",
            #[cfg(target_arch = "x86_64")]
            Kind::Avx512 => "avx512",
            #[cfg(target_arch = "x86_64")]
            Kind::Avx512Vbmi2 => "avx512vbmi2",
        }
    }

    /// [`find_special`] with this instruction set.
    #[inline(always)]
    pub fn find_special(self, input: &[u8], from: usize) -> Run {
        match self.0 {
            Kind::Portable => portable::find_special(input, from),
            #[cfg(target_arch = "x86_64")]
            Kind::Sse2 => x86_64::sse2::find_special(input, from),
            // SAFETY: an `Isa` of this kind is made only where the CPU has it.
            #[cfg(target_arch = "x86_64")]
            Kind::Avx2 => unsafe { x86_64::avx2::find_special(input, from) },
            // SAFETY: as above.
            #[cfg(target_arch = "x86_64")]
            Kind::Avx512 | Kind::Avx512Vbmi2 => unsafe {
                x86_64::avx512::find_special(input, from)
            },
        }
    }

    /// [`copy_runs`] with this instruction set.
    #[inline(always)]
    pub fn copy_runs<S: Special>(
        self,
        input: &[u8],
        from: usize,
        out: &mut Vec<u8>,
        special: &mut S,
    ) -> Copied {
        match self.0 {
            Kind::Portable => portable::copy_runs(input, from, out, special),
            #[cfg(target_arch = "x86_64")]
            Kind::Sse2 => x86_64::sse2::copy_runs(input, from, out, special),
            // SAFETY: an `Isa` of this kind is made only where the CPU has it.
            #[cfg(target_arch = "x86_64")]
            Kind::Avx2 => unsafe { x86_64::avx2::copy_runs_compressed(input, from, out, special) },
            // SAFETY: as above.
            #[cfg(target_arch = "x86_64")]
            Kind::Avx512 => unsafe { x86_64::avx512::copy_runs(input, from, out, special) },
            // SAFETY: as above.
            #[cfg(target_arch = "x86_64")]
            Kind::Avx512Vbmi2 => unsafe {
                x86_64::avx512::copy_runs_compressed(input, from, out, special)
            },
        }
    }

    /// [`is_utf8`] with this instruction set: AVX-512's own check, or
    /// simdutf8's, which picks AVX2 or SSE4.2 itself; the portable twin is
    /// std's.
    #[inline(always)]
    pub fn is_utf8(self, bytes: &[u8]) -> bool {
        match self.0 {
            Kind::Portable => std::str::from_utf8(bytes).is_ok(),
            #[cfg(target_arch = "x86_64")]
            Kind::Sse2 | Kind::Avx2 => simdutf8::basic::from_utf8(bytes).is_ok(),
            // SAFETY: an `Isa` of this kind is made only where the CPU has it.
            #[cfg(target_arch = "x86_64")]
            Kind::Avx512 | Kind::Avx512Vbmi2 => unsafe { x86_64::avx512::is_utf8(bytes) },
        }
    }

    /// [`find_stop`] with this instruction set.
    #[inline(always)]
    pub fn find_stop(self, text: &[u8], from: usize, stops: Stops) -> usize {
        match self.0 {
            Kind::Portable => portable::find_stop(text, from, stops),
            #[cfg(target_arch = "x86_64")]
            Kind::Sse2 => x86_64::sse2::find_stop(text, from, stops),
            // AVX-512 in AVX2's blocks, compiled for AVX2 alone (see
            // `x86_64::avx512`). SAFETY: an `Isa` of either kind is made
            // only where the CPU has AVX2, BMI1 and BMI2.
            #[cfg(target_arch = "x86_64")]
            Kind::Avx2 | Kind::Avx512 | Kind::Avx512Vbmi2 => unsafe {
                x86_64::avx2::find_stop(text, from, stops)
            },
        }
    }

    /// [`escape_blocks`] with this instruction set: `None` for one without
    /// a block loop for it, where the encoder's loop escapes every byte.
    #[inline(always)]
    // Elsewhere there is no block loop, and nothing to give the arguments to.
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables, clippy::ptr_arg))]
    pub fn escape_blocks(self, text: &[u8], from: usize, out: &mut Vec<u8>) -> Option<usize> {
        match self.0 {
            // SAFETY: an `Isa` of this kind is made only where the CPU has it.
            #[cfg(target_arch = "x86_64")]
            Kind::Avx2 | Kind::Avx512 => {
                Some(unsafe { x86_64::avx2::escape_blocks(text, from, out) })
            }
            // SAFETY: as above.
            #[cfg(target_arch = "x86_64")]
            Kind::Avx512Vbmi2 => Some(unsafe { x86_64::avx512::escape_blocks(text, from, out) }),
            _ => None,
        }
    }
}

/// The first byte from `from` that is `"`, `\` or below 0x20, or
/// `input.len()` if there is none; and whether the bytes before it are
/// ASCII. `from` is at most `input.len()`.
#[inline(always)]
pub fn find_special(input: &[u8], from: usize) -> Run {
    Isa::best().find_special(input, from)
}

/// Copies the text from `from` onto `out` up to the first special byte
/// ([`find_special`]'s), asks `special` what that byte starts, appends
/// what it decoded, and goes on from where it says, until it says stop.
#[inline(always)]
pub fn copy_runs<S: Special>(
    input: &[u8],
    from: usize,
    out: &mut Vec<u8>,
    special: &mut S,
) -> Copied {
    Isa::best().copy_runs(input, from, out, special)
}

/// Whether `bytes` is UTF-8: `std::str::from_utf8(bytes).is_ok()`, fast.
/// Under 16 bytes it is std's loop; a longer text goes to the best
/// instruction set's through a call, not inlined: the parser's loop, where
/// most strings need no check, ran progress notifications 0.87x-0.92x with
/// it inlined. AVX-512's checks a text of 16 to 63 bytes in one masked
/// block, faster than std's loop over a short string past ASCII (a
/// `tools/list` description: encoded 1.06x as fast, bench/HISTORY.md);
/// simdutf8, for SSE4.2 and AVX2, hands text under 64 bytes to std's loop.
#[inline(always)]
pub fn is_utf8(bytes: &[u8]) -> bool {
    if bytes.len() < 16 {
        return std::str::from_utf8(bytes).is_ok();
    }
    is_long_utf8(bytes)
}

#[inline(never)]
fn is_long_utf8(bytes: &[u8]) -> bool {
    Isa::best().is_utf8(bytes)
}

/// Asks the CPU to bring `bytes` into its caches, a 64-byte line at a
/// time, without waiting for them: for text that a loop reaches later,
/// whose reads would otherwise wait for memory. A hint, with no effect on
/// any result; nothing elsewhere.
#[inline(always)]
pub fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    for line in bytes.chunks(64) {
        // SAFETY: SSE is part of x86-64, and a prefetch reads nothing the
        // program sees; the address is in `bytes`.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                line.as_ptr().cast(),
            )
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}

/// The first index from `from` on whose byte `stops` holds, or
/// `text.len()` if there is none.
///
/// A rest of under 64 bytes, most strings, is scanned by the 16-byte lane
/// every target has, inlined with the mode's stops as constants: it is not
/// worth even the load of the chosen [`Isa`].
#[inline(always)]
pub fn find_stop(text: &[u8], from: usize, stops: Stops) -> usize {
    let isa = match text.len().saturating_sub(from) {
        ..64 => Isa::LANE,
        _ => Isa::best(),
    };
    isa.find_stop(text, from, stops)
}

/// The lane every target has, which needs no detection: SSE2 on x86-64,
/// the portable twin elsewhere.
#[cfg(target_arch = "x86_64")]
use x86_64::sse2 as lane;

#[cfg(not(target_arch = "x86_64"))]
use portable as lane;

/// [`Masks`] of a 16-byte lane, from `lane`, so that it inlines into the
/// parser's loop.
pub use lane::classify_lane;

/// Appends `text[from..stop]` to `out` and returns `stop`, the index
/// [`find_stop`] gives. Each lane is stored whole and the bytes past the
/// stop cut off again: a run between two escapes is copied without a call
/// to `memcpy`, which costs more than such a run. In `lane`'s lanes of
/// 16 bytes, inlined with the mode's stops as constants, on every CPU: the
/// runs between escapes are short.
///
/// Every lane it stores lies in `text`: `out` grows only where it has
/// room for fewer than `text.len() - from` more bytes.
pub use lane::copy_to_stop;

/// Appends `bytes` to `out`, one of under 16 without a call to `memcpy`:
/// for the many short pieces of a text laid out by `pretty:`.
#[inline(always)]
pub fn append(out: &mut Vec<u8>, bytes: &[u8]) {
    generic::append_short(out, bytes);
}

/// Bit `i` is set when `bytes[at + i]` is `\n`, for the up to 64 bytes
/// from `at`; 0 past the end. SSE2, so x86-64 only: elsewhere the framer
/// uses memchr's iterator, and the portable twin serves the tests.
#[cfg(target_arch = "x86_64")]
pub use x86_64::sse2::newline_mask;

/// Appends `text[from..]` to `out` as the JSON escape mode writes it (see
/// [`JSON_LETTERS`]), whole blocks of [`ESCAPE_BLOCK`] bytes at a time,
/// and returns where it stopped: at the first block that holds a byte
/// written as `\u00XX`, that `out` has less than [`ESCAPE_ROOM`] bytes of
/// room for, or that the text does not fill. Bytes of 0x80 and above are
/// copied: whether they are UTF-8 is the caller's to check.
///
/// AVX-512 with VBMI2 places a block's bytes around the `\` of its
/// escapes by one expand, AVX2 (and AVX-512 without VBMI2) by a shuffle
/// for each 8 of them; with SSE2 alone, and on other targets, it writes
/// nothing and returns `from`, and the encoder's loop escapes every byte.
/// The portable twin, [`portable::escape_blocks`], is what the tests and
/// the fuzz target hold the loops to.
#[inline(always)]
pub fn escape_blocks(text: &[u8], from: usize, out: &mut Vec<u8>) -> usize {
    Isa::best().escape_blocks(text, from, out).unwrap_or(from)
}
