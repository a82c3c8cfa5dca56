//! The string loops, written once over a [`Block`] of N bytes (the
//! decoder's) or a [`Scan`] (the encoder's) and instantiated by each
//! instruction set's module inside a function compiled for it. Everything
//! here is inlined into that function, so that the block's instructions
//! are too.

use super::{Block, Copied, Decoded, Masks, Run, Scan, Special, Stops};
#[cfg(target_arch = "x86_64")]
use super::{ESCAPE_BLOCK, ESCAPE_ROOM};

/// The bits of a mask below bit `length` (< 64).
#[inline(always)]
fn below(length: u32) -> u64 {
    (1 << length) - 1
}

/// The bits of a mask below bit `length`, up to all 64.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn first(length: usize) -> u64 {
    u64::MAX.checked_shr(64 - length as u32).unwrap_or(0)
}

/// The N bytes from `at`, if there are so many.
#[inline(always)]
fn block_at<const N: usize>(input: &[u8], at: usize) -> Option<&[u8; N]> {
    input.get(at..at.checked_add(N)?)?.first_chunk()
}

/// How far ahead of a long scan [`prefetch_ahead`] asks for the input:
/// half a page. The CPU's own prefetcher most likely stops at the end of
/// each 4 KiB page, and a scan of text not in the cache waits there
/// (bench/HISTORY.md, "Prefetching ahead of long scans").
const PREFETCH_DISTANCE: usize = 2048;

/// Asks for the input's line [`PREFETCH_DISTANCE`] bytes past `at`, for
/// a scan about to read `step` bytes from `at`: once a line where a step
/// is shorter than one, once a step where it is longer (the CPU fetches
/// the line beside the one asked for; asking for both cost the decoding
/// framer's base64 row 1-3%).
#[inline(always)]
fn prefetch_ahead(input: &[u8], at: usize, step: usize) {
    let offset = (input.as_ptr() as usize).wrapping_add(at) % 64;
    if step < 64 && offset >= step {
        return;
    }
    let ahead = at.saturating_add(PREFETCH_DISTANCE);
    super::prefetch(
        input
            .get(ahead..)
            .and_then(|rest| rest.get(..1))
            .unwrap_or_default(),
    );
}

/// The masks of the N bytes from `at`. Where fewer are left, the bits
/// past the input's end are clear but for one special bit at the end
/// itself, so that every scan stops there.
///
/// # Safety
/// The CPU has `B`'s instruction set.
#[inline(always)]
unsafe fn masks_at<const N: usize, B: Block<N>>(input: &[u8], at: usize) -> Masks {
    match block_at::<N>(input, at) {
        // SAFETY: the caller's contract.
        Some(block) => unsafe { B::classify(block) },
        // SAFETY: the caller's contract.
        None => unsafe { last_masks::<N, B>(input, at) },
    }
}

/// [`masks_at`] for fewer than N bytes left: the input's last N bytes
/// with the bits of those before `at` shifted out, or, in an input
/// shorter than a block, the rest padded with zeros, which are special.
///
/// # Safety
/// The CPU has `B`'s instruction set.
#[inline(always)]
unsafe fn last_masks<const N: usize, B: Block<N>>(input: &[u8], at: usize) -> Masks {
    let left = input.len().saturating_sub(at);
    let end = 1 << left;
    match input.last_chunk::<N>() {
        _ if left == 0 => Masks {
            special: end,
            high: 0,
        },
        Some(block) => {
            // SAFETY: the caller's contract.
            let masks = unsafe { B::classify(block) };
            let seen = (N - left) as u32;
            Masks {
                special: masks.special >> seen | end,
                high: masks.high >> seen,
            }
        }
        // SAFETY: the caller's contract.
        None => unsafe { B::classify(&B::padded(input.get(at..).unwrap_or_default())) },
    }
}

/// `rest`, fewer than N bytes, padded to N with zeros: the portable way
/// to [`Block::padded`], two fixed-size moves that overlap in the middle
/// rather than a call to copy any length.
#[inline(always)]
pub(super) fn padded<const N: usize>(rest: &[u8]) -> [u8; N] {
    debug_assert!(rest.len() < N);
    let rest = &rest[..rest.len().min(N - 1)];
    let mut block = [0; N];
    let length = rest.len();
    let mut place = |from: usize, size: usize| {
        if let (Some(to), Some(from)) = (
            block.get_mut(from..from + size),
            rest.get(from..from + size),
        ) {
            to.copy_from_slice(from);
        }
    };
    for size in [32, 16, 8, 4, 2] {
        if length >= size {
            place(0, size);
            place(length - size, size);
            return block;
        }
    }
    place(0, length);
    block
}

/// [`super::find_special`] in blocks of N bytes.
///
/// # Safety
/// The CPU has `B`'s instruction set.
#[inline(always)]
pub(super) unsafe fn find_special<const N: usize, B: Block<N>>(input: &[u8], from: usize) -> Run {
    let mut at = from;
    let mut high = 0;
    loop {
        // SAFETY: the caller's contract.
        let masks = unsafe { masks_at::<N, B>(input, at) };
        if masks.special != 0 {
            let length = masks.special.trailing_zeros();
            return Run {
                stop: at + length as usize,
                ascii: (high | masks.high & below(length)) == 0,
            };
        }
        high |= masks.high;
        // Past a block without one, on from the next address that is a
        // multiple of N, so that no load straddles two cache lines (the
        // bytes read twice are known plain), and two blocks a step while no
        // special byte turns up: a long run, such as a base64 blob, takes
        // one test per 2N bytes.
        at += N - (input.as_ptr() as usize + at + N) % N;
        while let Some(pair) = block_at::<N>(input, at).zip(block_at::<N>(input, at + N)) {
            prefetch_ahead(input, at, 2 * N);
            // SAFETY: the caller's contract.
            let (first, second) = unsafe { (B::classify(pair.0), B::classify(pair.1)) };
            if first.special | second.special != 0 {
                break;
            }
            high |= first.high | second.high;
            at += 2 * N;
        }
    }
}

/// [`super::copy_runs`] in blocks of N bytes: each block is copied onto
/// `out` whole, and the length is then set to the run's, one fixed-size
/// move per block instead of a call to copy any length.
///
/// After an escape the block that finds the next special byte is read
/// from two bytes past its `\`, before the escape is decoded, and the
/// run's copy from where the escape ends: the path from one special byte
/// to the next is a load, a compare and a bit count, whatever the escape
/// was. Where an escape longer than two bytes holds a special byte past
/// its first two (a surrogate pair's second `\`), the loop reads again
/// from the escape's end.
///
/// # Safety
/// The CPU has `B`'s instruction set.
#[inline(always)]
pub(super) unsafe fn copy_runs<const N: usize, B: Block<N>, S: Special>(
    input: &[u8],
    from: usize,
    out: &mut Vec<u8>,
    special: &mut S,
) -> Copied {
    // Copies in locals, so that the loop keeps them in registers.
    let mut state = *special;
    let mut out = Writer::new(out);
    let mut at = from;
    let mut high = 0;
    loop {
        let (masks, put) = match block_at::<N>(input, at) {
            // SAFETY: the caller's contract.
            Some(block) => (unsafe { B::classify(block) }, out.put(block)),
            None => {
                // SAFETY: the caller's contract.
                let block = unsafe { B::padded(input.get(at..).unwrap_or_default()) };
                // SAFETY: the caller's contract.
                (unsafe { B::classify(&block) }, out.put(&block))
            }
        };
        if masks.special == 0 {
            high |= masks.high;
            put.keep(N);
            at += N;
            continue;
        }
        let length = masks.special.trailing_zeros();
        high |= masks.high & below(length);
        let mut room = put.keep(length as usize);
        // At most `input.len()`: a padded block's zeros are special.
        let mut stop = at + length as usize;
        // Escape after escape: the block from just past the `\` and its
        // letter is classified before the escape is decoded, as the bytes
        // a longer escape takes (a `\u` escape's hex digits) are not
        // special. So which kind the escape is stays off the path to the
        // next special byte.
        loop {
            // SAFETY: the caller's contract.
            let ahead = unsafe { masks_at::<N, B>(input, stop + 2) };
            let Some(decoded) = state.at(input, stop) else {
                out.finish();
                *special = state;
                return Copied {
                    at: stop,
                    ascii: high == 0,
                };
            };
            room.push(decoded);
            let next = decoded.next;
            debug_assert!(next > stop && next <= input.len());
            // Where the run after the escape ends: the special byte found,
            // or the end of the block, when it goes on past it.
            let to = stop + 2 + (ahead.special.trailing_zeros() as usize).min(N);
            // A surrogate pair took in the special byte found: on from past
            // it as above.
            if next > to {
                at = next;
                break;
            }
            let put = match block_at::<N>(input, next) {
                Some(block) => out.put(block),
                None => {
                    // SAFETY: the caller's contract.
                    let block = unsafe { B::padded(input.get(next..).unwrap_or_default()) };
                    out.put(&block)
                }
            };
            // The run's bits of the block: past the escape, up to `to`.
            let run = ahead.high & !below((next - stop - 2).min(63) as u32);
            if ahead.special == 0 {
                high |= run;
                put.keep(to - next);
                at = to;
                break;
            }
            high |= run & below((to - stop - 2) as u32);
            room = put.keep(to - next);
            stop = to;
        }
    }
}

/// What a block loop of [`copy_blocks`] did with a block of N bytes: how
/// many of its bytes it took, N to go on to the next block or fewer to
/// stop at a byte for the [`Special`], and the bits of those bytes that
/// are 0x80 or above.
#[cfg(target_arch = "x86_64")]
pub(super) struct Took {
    pub length: usize,
    pub high: u64,
}

/// [`super::copy_runs`] by a loop over blocks of N bytes that decodes each
/// block's one-byte escapes all at once, and with VBMI2 its `\u` escapes
/// and surrogate pairs (`avx512::copy_runs_compressed`,
/// `avx2::copy_runs_compressed`): `block` writes what it takes of the
/// block at `at`, the `Special` decodes what stopped it short, and the
/// last bytes, fewer than N, go to `rest`.
///
/// With `unicode_runs`, for a `block` that leaves `\u` escapes to the
/// `Special`, the `Special` decodes the `\u` escapes right after the
/// escape that stopped a block too: text escaped to ASCII has them in
/// runs, one for each character of a word not in Latin letters, and each
/// would otherwise begin a block of its own.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn copy_blocks<const N: usize, S: Special>(
    input: &[u8],
    from: usize,
    out: &mut Vec<u8>,
    special: &mut S,
    unicode_runs: bool,
    mut block: impl FnMut(&[u8; N], usize, &mut S, &mut Writer) -> Took,
    rest: impl FnOnce(&[u8], usize, &mut Vec<u8>, &mut S) -> Copied,
) -> Copied {
    // Copies in locals, so that the loop keeps them in registers.
    let mut state = *special;
    let mut writer = Writer::new(out);
    let mut at = from;
    let mut high = 0;
    while let Some(bytes) = block_at::<N>(input, at) {
        let took = block(bytes, at, &mut state, &mut writer);
        high |= took.high;
        if took.length == N {
            // `at + N`, not `at + took.length`: the next block's load need
            // not wait for this block's masks, which the branch predicts.
            at += N;
            continue;
        }
        at += took.length;
        loop {
            let Some(decoded) = state.at(input, at) else {
                writer.finish();
                *special = state;
                return Copied {
                    at,
                    ascii: high == 0,
                };
            };
            writer.push(decoded);
            at = decoded.next;
            if !unicode_runs || input.get(at..at + 2) != Some(b"\\u") {
                break;
            }
        }
    }
    writer.finish();
    let copied = rest(input, at, out, &mut state);
    *special = state;
    Copied {
        at: copied.at,
        ascii: copied.ascii && high == 0,
    }
}

/// How many bytes of a block a loop of [`copy_blocks`] takes: those before
/// the first of `stops`, a bit for each byte that ends it, and before the
/// first escape of `escapers`, the `\` that start one, that `special`
/// leaves for its [`Special::at`] ([`Special::simple`]); those escapes of
/// `unicode` are `\u` escapes, and those of `pairs` surrogate pairs, whose
/// second `\` is not in `escapers`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn run_length<S: Special>(
    special: &mut S,
    at: usize,
    escapers: u64,
    unicode: u64,
    pairs: u64,
    stops: u64,
) -> u32 {
    let mut length = stops.trailing_zeros();
    let escapes = escapers & first(length as usize);
    if escapes != 0 {
        let taken = special.simple(escapes, unicode & escapes, pairs & escapes, at);
        if taken != escapes {
            length = (escapes & !taken).trailing_zeros();
        }
    }
    length
}

/// The `\` of a block that start an escape, where the block does not start
/// inside one: in each run of `\`, the first, the third and so on.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn escapers(backslash: u64) -> u64 {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    let starts = backslash & !(backslash << 1);
    // Adding a run's first bit carries through the run and clears it: the
    // runs left are those that start at an odd bit.
    let odd_runs = backslash & backslash.wrapping_add(starts & EVEN);
    let even_runs = backslash & !odd_runs;
    even_runs & EVEN | odd_runs & !EVEN
}

/// The bit where a run of `\` that reaches the last byte of a block of N
/// starts, if one does: which of its `\` escape what the block cannot
/// tell.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn last_run_start<const N: usize>(backslash: u64) -> u64 {
    match (backslash << (64 - N)).leading_ones() {
        0 => 0,
        run => 1 << (N as u32 - run),
    }
}

/// [`super::escape_blocks`] by a loop over blocks of [`ESCAPE_BLOCK`]
/// bytes: `block` writes a block's text into the room it is given, of
/// [`ESCAPE_ROOM`] bytes past `out`'s length, and returns how many it
/// wrote, or `None` for a block with a byte written as `\u00XX`, which
/// ends the loop as a lack of room does.
///
/// # Safety
/// `block` writes every byte it counts, and stores only where
/// [`Room::at`] says.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) unsafe fn escape_blocks(
    text: &[u8],
    from: usize,
    out: &mut Vec<u8>,
    mut block: impl FnMut(&[u8; ESCAPE_BLOCK], Room) -> Option<usize>,
) -> usize {
    let mut at = from;
    while let Some(bytes) = block_at::<ESCAPE_BLOCK>(text, at) {
        let spare = out.capacity() - out.len();
        if spare < ESCAPE_ROOM {
            break;
        }
        // SAFETY: `out` has room for ESCAPE_ROOM bytes past its length, and
        // the caller's contract: `block` wrote as many as it counts there.
        unsafe {
            let room = Room::new(out.as_mut_ptr().add(out.len()), ESCAPE_ROOM, spare);
            let Some(written) = block(bytes, room) else {
                break;
            };
            debug_assert!(
                written <= ESCAPE_ROOM,
                "{written} bytes counted in a room of {ESCAPE_ROOM}"
            );
            out.set_len(out.len() + written);
        }
        at += ESCAPE_BLOCK;
    }
    at
}

/// [`super::find_stop`] in blocks of N bytes; the rest, fewer than N, as
/// `B` scans it.
///
/// # Safety
/// The CPU has `B`'s instruction set.
#[inline(always)]
pub(super) unsafe fn find_stop<const N: usize, B: Scan<N>>(
    text: &[u8],
    from: usize,
    stops: Stops,
) -> usize {
    let mut at = from;
    while let Some(block) = text.get(at..).and_then(|rest| rest.first_chunk::<N>()) {
        prefetch_ahead(text, at, N);
        // SAFETY: the caller's contract.
        let found = unsafe { B::stop_bits(block, stops) };
        if found != 0 {
            return at + (found.trailing_zeros() / B::BITS) as usize;
        }
        at += N;
    }
    // SAFETY: the caller's contract.
    unsafe { B::find_in_rest(text, at, stops) }
}

/// [`super::copy_to_stop`] in blocks of N bytes, each stored whole onto
/// `out` and the bytes from the stop on cut off again; the rest, fewer
/// than N, found as [`find_stop`] finds it and copied.
///
/// # Safety
/// The CPU has `B`'s instruction set.
#[inline(always)]
pub(super) unsafe fn copy_to_stop<const N: usize, B: Scan<N>>(
    text: &[u8],
    from: usize,
    stops: Stops,
    out: &mut Vec<u8>,
) -> usize {
    let mut at = from;
    while let Some(block) = text.get(at..).and_then(|rest| rest.first_chunk::<N>()) {
        // SAFETY: the caller's contract.
        let found = unsafe { B::stop_bits(block, stops) };
        out.extend_from_slice(block);
        if found != 0 {
            let kept = (found.trailing_zeros() / B::BITS) as usize;
            out.truncate(out.len() - N + kept);
            return at + kept;
        }
        at += N;
    }
    // SAFETY: the caller's contract.
    let stop = unsafe { B::find_in_rest(text, at, stops) };
    append_short(out, text.get(at..stop).unwrap_or_default());
    stop
}

/// Appends `bytes` to `out`: fewer than 16 in two loads and stores of 8,
/// 4 or 1 bytes each, overlapping as the length needs, where
/// `extend_from_slice` calls `memcpy` for a length it does not know. The
/// rest of a string after its lanes, or all of a short one, such as most
/// keys.
#[inline(always)]
pub(super) fn append_short(out: &mut Vec<u8>, bytes: &[u8]) {
    let n = bytes.len();
    if n >= 16 {
        return out.extend_from_slice(bytes);
    }
    out.reserve(n);
    let length = out.len();
    // SAFETY: `out` has room for `n` more bytes; each copy reads within
    // `bytes` and writes within the `n` bytes past the length, which it
    // covers before the length takes them in.
    unsafe {
        let (from, to) = (bytes.as_ptr(), out.as_mut_ptr().add(length));
        let pair = |size: usize| {
            std::ptr::copy_nonoverlapping(from, to, size);
            std::ptr::copy_nonoverlapping(from.add(n - size), to.add(n - size), size);
        };
        match n {
            8.. => pair(8),
            4..=7 => pair(4),
            1..=3 => {
                for i in [0, n / 2, n - 1] {
                    *to.add(i) = *from.add(i);
                }
            }
            0 => {}
        }
        out.set_len(length + n);
    }
}

/// Room made for a vector loop's stores past a buffer's length: `size`
/// bytes from `start`. A store that would leave it is a write past the
/// allocation, which no test sees unless it crashes; builds with debug
/// assertions (the tests' and the fuzz targets') stop it at [`Room::at`].
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(super) struct Room {
    start: *mut u8,
    size: usize,
}

#[cfg(target_arch = "x86_64")]
impl Room {
    /// # Safety
    /// `size` bytes from `start` are writable: `spare`, as many as there
    /// are from `start` to the allocation's end, is no fewer.
    #[inline(always)]
    unsafe fn new(start: *mut u8, size: usize, spare: usize) -> Self {
        debug_assert!(
            size <= spare,
            "a room of {size} bytes where {spare} are spare"
        );
        Room { start, size }
    }

    /// Where to store `width` bytes, `offset` bytes into the room.
    ///
    /// # Safety
    /// They lie inside it: `offset + width <= size`.
    #[inline(always)]
    pub(super) unsafe fn at(self, offset: usize, width: usize) -> *mut u8 {
        debug_assert!(
            offset + width <= self.size,
            "a store of {width} bytes at {offset} leaves a room of {}",
            self.size
        );
        // SAFETY: the caller's contract: inside the room.
        unsafe { self.start.add(offset) }
    }
}

/// Appends to a `Vec<u8>` through a pointer, with its length kept in a
/// register rather than in the `Vec` until [`Writer::finish`]: the loop's
/// writes would otherwise each load and store it.
///
/// Invariants: `pointer` and `capacity` are the `Vec`'s, `length <=
/// capacity`, and the bytes below `length` are initialized.
pub(super) struct Writer<'a> {
    out: &'a mut Vec<u8>,
    pointer: *mut u8,
    length: usize,
    capacity: usize,
}

/// N bytes that [`Writer::put`] wrote past the length, not yet counted,
/// with room for 4 more after them.
struct Put<'w, 'a, const N: usize>(&'w mut Writer<'a>);

impl<'w, 'a, const N: usize> Put<'w, 'a, N> {
    /// Counts the first `length` of them; there is room for 4 more.
    #[inline(always)]
    fn keep(self, length: usize) -> Spare<'w, 'a> {
        self.0.length += length.min(N);
        Spare(self.0)
    }
}

/// At least 4 bytes of room past a writer's length.
struct Spare<'w, 'a>(&'w mut Writer<'a>);

impl Spare<'_, '_> {
    /// Appends what an escape decoded to.
    #[inline(always)]
    fn push(self, decoded: Decoded) {
        let out = self.0;
        debug_assert!(out.capacity - out.length >= 4, "less than 4 bytes spare");
        // SAFETY: there is room for 4 bytes past the length, and at most
        // 4 are counted.
        unsafe {
            let to = out.pointer.add(out.length);
            std::ptr::copy_nonoverlapping(decoded.bytes.as_ptr(), to, 4);
        }
        out.length += decoded.length.min(4);
    }
}

impl<'a> Writer<'a> {
    #[inline(always)]
    pub(super) fn new(out: &'a mut Vec<u8>) -> Self {
        Writer {
            pointer: out.as_mut_ptr(),
            length: out.len(),
            capacity: out.capacity(),
            out,
        }
    }

    /// Makes room for `additional` bytes past the length.
    #[inline(always)]
    fn reserve(&mut self, additional: usize) {
        if self.capacity - self.length < additional {
            (self.pointer, self.capacity) = grow(self.out, self.length, additional);
        }
    }

    /// Writes `block` past the length, to be counted in part by [`Put::keep`].
    #[inline(always)]
    fn put<const N: usize>(&mut self, block: &[u8; N]) -> Put<'_, 'a, N> {
        self.reserve(N + 4);
        // SAFETY: N bytes past the length are reserved.
        unsafe {
            let to = self.pointer.add(self.length);
            std::ptr::copy_nonoverlapping(block.as_ptr(), to, N);
        }
        Put(self)
    }

    /// Room for `additional` bytes past the length, made; [`Writer::count`]
    /// counts those written.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub(super) fn room(&mut self, additional: usize) -> Room {
        self.reserve(additional);
        // SAFETY: the room was just made, within the allocation.
        unsafe {
            let spare = self.capacity - self.length;
            Room::new(self.pointer.add(self.length), additional, spare)
        }
    }

    /// Counts `length` bytes past the length as written.
    ///
    /// # Safety
    /// They were, in the room [`Writer::room`] made.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub(super) unsafe fn count(&mut self, length: usize) {
        debug_assert!(
            length <= self.capacity - self.length,
            "{length} bytes counted past the room"
        );
        self.length += length;
    }

    /// Appends what an escape decoded to.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub(super) fn push(&mut self, decoded: Decoded) {
        self.reserve(4);
        Spare(self).push(decoded);
    }

    /// Gives the `Vec` its length.
    #[inline(always)]
    pub(super) fn finish(self) {
        // SAFETY: the invariants: the bytes below `length` were written,
        // within the capacity.
        unsafe { self.out.set_len(self.length) };
    }
}

/// Grows `out`, whose first `length` bytes are written, to hold
/// `additional` more; its new pointer and capacity. A function of its own,
/// given the fields rather than the [`Writer`], so that the writer's
/// address is never taken.
#[cold]
#[inline(never)]
fn grow(out: &mut Vec<u8>, length: usize, additional: usize) -> (*mut u8, usize) {
    // SAFETY: the writer's invariants: the bytes below `length` were
    // written, within the capacity.
    unsafe { out.set_len(length) };
    out.reserve(additional);
    (out.as_mut_ptr(), out.capacity())
}

// The checks on a room hold only in builds with debug assertions, as
// the tests' and the fuzz targets' are; tests/arch.rs runs the vector
// loops under them.
#[cfg(all(test, debug_assertions, target_arch = "x86_64"))]
mod tests {
    use super::{Room, Writer};

    #[test]
    #[should_panic(expected = "a store of 16 bytes at 32 leaves a room of 40")]
    fn a_store_that_leaves_its_room_stops_the_build_with_debug_assertions() {
        let mut out = Vec::new();
        let room = Writer::new(&mut out).room(40);
        // SAFETY: the store is not made: the check stops it first.
        let _ = unsafe { room.at(32, 16) };
    }

    #[test]
    #[should_panic(expected = "a room of 64 bytes where 32 are spare")]
    fn a_room_larger_than_the_spare_capacity_stops_the_build_with_debug_assertions() {
        let mut out = Vec::with_capacity(32);
        // SAFETY: no store is made in it: the check stops it first.
        let _ = unsafe { Room::new(out.as_mut_ptr(), 64, out.capacity()) };
    }

    #[test]
    #[should_panic(expected = "bytes counted past the room")]
    fn counting_past_the_room_stops_the_build_with_debug_assertions() {
        let mut out = Vec::new();
        let mut writer = Writer::new(&mut out);
        let _ = writer.room(40);
        let spare = writer.capacity - writer.length;
        // SAFETY: not counted: the check stops it first.
        unsafe { writer.count(spare + 1) };
    }

    #[test]
    fn stores_that_fill_their_room_exactly_are_allowed() {
        let mut out = Vec::new();
        let mut writer = Writer::new(&mut out);
        let room = writer.room(40);
        // SAFETY: 40 bytes of room, written in two stores that fill it.
        unsafe {
            room.at(0, 32).write_bytes(b'a', 32);
            room.at(32, 8).write_bytes(b'b', 8);
            writer.count(40);
        }
        writer.finish();
        assert_eq!(out, [[b'a'; 32].as_slice(), &[b'b'; 8]].concat());
    }
}
