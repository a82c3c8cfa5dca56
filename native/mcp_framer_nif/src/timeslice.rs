//! How long a NIF call may run, and what it does when it cannot finish.
//!
//! No call may hold a normal scheduler for 2 ms: the guarantee that
//! `McpFramer`'s docs ("Schedulers") and the README give, and that
//! test/scheduler_test.exs checks. The limits here keep every call well
//! inside it, and every call made on a normal scheduler has a [`Timeslice`]:
//!
//! * Work known to be too long goes to a dirty CPU scheduler before it
//!   starts: a chunk over [`NORMAL_CHUNK_MAX`] before it is searched, a
//!   message over [`DECODE_NORMAL_MAX`] before it is decoded.
//! * The rest runs against one clock and two limits. Past [`SOFT`], the call
//!   takes no new message and a large copy stops at its next step; past
//!   [`HARD`], the message being decoded is left for a dirty scheduler, and
//!   so is a long document as soon as its pace shows it would get there.
//! * A call also stops after a number of messages (see
//!   [`Timeslice::max_messages`]), searches at most [`SEARCH_SLICE`] bytes
//!   of its chunk, and copies at most [`COPY_SLICE`] bytes into a large
//!   message made from held bytes, looking at the clock every
//!   [`COPY_STEP`].
//! * The clock starts only for work whose time a byte count does not
//!   predict: a large chunk, a copy of held bytes, a long document, and
//!   whatever work asks for more time than it was given (the parser's fuel,
//!   the builder's units). The rest is estimated from its bytes: reading the
//!   clock twice costs as much as searching a small chunk, and a few
//!   percent of decoding a small document. A clock that starts late counts
//!   the work before it as estimated.
//! * On the way out the call reports its time to the scheduler, once
//!   (`enif_consume_timeslice`; a no-op on a dirty scheduler).
//!
//! A call that stops early says so in its [`crate::outcome::Outcome`].

use mcp_framer_core::json::Ration;
use mcp_framer_core::pace;
use rustler::schedule::consume_timeslice;
use rustler::Env;
use std::cell::Cell;
use std::num::NonZeroUsize;
use std::time::{Duration, Instant};

/// Past this, a call starts no new message, and a copy no new step.
pub const SOFT: Duration = Duration::from_micros(300);

/// Past this, the message being decoded is given up, to be decoded again on
/// a dirty scheduler: the call must still end well inside the guarantee.
pub const HARD: Duration = Duration::from_micros(700);

/// A chunk larger than this is framed on a dirty scheduler: searching it
/// and the heap its messages make would hold a normal one too long.
pub const NORMAL_CHUNK_MAX: usize = 4 * 1024 * 1024;

/// A message longer than this is decoded on a dirty scheduler: only one
/// made mostly of plain strings could finish in time.
pub const DECODE_NORMAL_MAX: usize = 1024 * 1024;

/// A call on a normal scheduler searches at most this much of its chunk;
/// the calls after it take the rest. Searching memory the cache does not
/// hold ran at 1-2.5 GB/s on a busy host, a millisecond a MiB.
pub const SEARCH_SLICE: usize = 256 * 1024;

/// A message longer than this that completes from held bytes is copied
/// into place over several calls, at most this many bytes each, the
/// chunk's tail included. Copying into memory not yet touched ran at
/// 0.3-1.3 GB/s on a busy host (a page fault every 4 KiB), so a copy made
/// in one go stays this short.
pub const COPY_SLICE: usize = 256 * 1024;

// A message's tail is in the part of its chunk a call searched, so a call
// that copies nothing else copies at most a slice.
const _: () = assert!(SEARCH_SLICE <= COPY_SLICE);

/// A sliced copy looks at the clock after every step of this size.
pub const COPY_STEP: NonZeroUsize = NonZeroUsize::new(32 * 1024).unwrap();

/// Chunks this large start the clock with the call: their search alone
/// has a cost worth measuring.
const TIMED_CHUNK_MIN: usize = 32 * 1024;

/// A normal-scheduler call takes at most this many messages: each is a
/// term for the list the call returns.
const MESSAGES_MAX: usize = 8192;

/// Fewer for a chunk larger than a Port delivers: a list of thousands of
/// messages outgrows the process heap and costs a copying collection.
const LARGE_CHUNK_MESSAGES_MAX: usize = 2048;
const PORT_CHUNK_MAX: usize = 64 * 1024;

/// And fewer when decoding: each message is several terms at least.
const DECODE_MESSAGES_MAX: usize = 2048;

/// A call framing without decoding looks at its clock after this many
/// messages.
const MESSAGES_PER_LOOK: usize = 512;

/// The clock is read every this many units of term building: a unit is a
/// value, or 64 bytes of a string.
const CHECK_UNITS: u32 = 256;

/// The parser's work between two looks at the clock, inside a token too
/// (see `json::Ration`); a parse starts with this much.
pub const FUEL_STEP: usize = 2048;

/// The time a unit of the parser's fuel stands for.
const FUEL_UNIT_PICOS: u64 = 2500;

/// A document this short is decoded without starting the clock: until
/// its parse asks for more fuel ([`FUEL_STEP`], about 5 us) or its builder
/// looks at the clock ([`CHECK_UNITS`]), it does no more work than its
/// size predicts, and either starts the clock.
const UNTIMED_DOCUMENT_MAX: usize = 4 * 1024;

/// What decoding such a document is taken to cost: this much, and this
/// much a byte. Small MCP messages decode at about 250 MB/s, framing and
/// the call included; a chunk of `{}` lines at about 110 ns a document,
/// the collections of its terms included.
const DOCUMENT_NANOS: u64 = 150;
const DECODE_PICOS_PER_BYTE: u64 = 5000;

/// A document this long has its pace watched, so that one that cannot
/// finish in time goes to a dirty scheduler at once, not when the time has
/// run out.
const PACED_MIN: usize = 64 * 1024;

/// What an untimed call is taken to cost: this much, a search of its
/// chunk at this rate, and this much a message.
const CALL_NANOS: u64 = 200;
const SEARCH_PICOS_PER_BYTE: u64 = 500;
const MESSAGE_NANOS: u64 = 40;

/// A list or map of more terms than this is made only if the call's time
/// can afford it: it is made in one call that cannot stop.
const LARGE_CONTAINER: usize = 1024;

/// What making a term of a large list or map may cost, per term.
const CONTAINER_NANOS_PER_TERM: u64 = 100;

/// A map estimated to cost less than this is made without a look at the
/// clock: about what a map of 1,024 terms was given before its keys were
/// counted.
const MAP_NANOS_UNCHECKED: u64 = 100_000;

/// What copying a byte into a fresh binary may cost, page faults included.
const COPY_NANOS_PER_BYTE: u64 = 1;

/// One percent of a time slice, as `enif_consume_timeslice` counts it.
const PERCENT_NANOS: u64 = 10_000;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Scheduler {
    Normal,
    Dirty,
}

/// One call's time. Shared by the feed loop, the term builder and the
/// parser, so its state is in cells.
pub struct Timeslice {
    scheduler: Scheduler,
    /// The bytes the call was given, and the messages it took: what an
    /// untimed call is estimated from.
    chunk: usize,
    messages: Cell<usize>,
    /// What else an untimed call is estimated to have cost, in nanoseconds.
    work_nanos: Cell<u64>,
    /// When the clock started, if it has.
    started: Cell<Option<Instant>>,
    /// The soft limit has passed.
    spent: Cell<bool>,
    /// Building left before the next look at the clock.
    units_left: Cell<u32>,
    /// When the document being decoded started, and its length, if its
    /// pace is watched.
    document: Cell<Option<(Instant, usize)>>,
    /// The call stopped short and gives its thread up: it reports a whole
    /// slice.
    yields: Cell<bool>,
}

impl Timeslice {
    /// The time of a call given `chunk` bytes.
    pub fn new(scheduler: Scheduler, chunk: usize) -> Timeslice {
        let timed = scheduler == Scheduler::Normal && chunk >= TIMED_CHUNK_MIN;
        Timeslice {
            scheduler,
            chunk,
            messages: Cell::new(0),
            work_nanos: Cell::new(0),
            started: Cell::new(timed.then(Instant::now)),
            spent: Cell::new(false),
            units_left: Cell::new(CHECK_UNITS),
            document: Cell::new(None),
            yields: Cell::new(false),
        }
    }

    /// Whether the chunk must be framed on a dirty scheduler instead.
    pub fn needs_dirty(&self) -> bool {
        self.scheduler == Scheduler::Normal && self.chunk > NORMAL_CHUNK_MAX
    }

    /// How much of the chunk the call searches.
    pub fn search_len(&self) -> usize {
        match self.scheduler {
            Scheduler::Normal => self.chunk.min(SEARCH_SLICE),
            Scheduler::Dirty => self.chunk,
        }
    }

    /// The most messages the call may take.
    pub fn max_messages(&self, decoding: bool) -> usize {
        match self.scheduler {
            // A list is made from at most u32::MAX terms.
            Scheduler::Dirty => u32::MAX as usize,
            Scheduler::Normal if decoding => DECODE_MESSAGES_MAX,
            Scheduler::Normal if self.chunk > PORT_CHUNK_MAX => LARGE_CHUNK_MESSAGES_MAX,
            Scheduler::Normal => MESSAGES_MAX,
        }
    }

    /// Whether a call framing without decoding, having taken `taken`
    /// messages, is past the soft limit: it looks at the clock once every
    /// [`MESSAGES_PER_LOOK`] messages (making their terms can take
    /// milliseconds where the heap's memory is not yet touched).
    pub fn framing_spent(&self, taken: usize) -> bool {
        self.scheduler == Scheduler::Normal
            && taken % MESSAGES_PER_LOOK == MESSAGES_PER_LOOK - 1
            && self.now_within(SOFT).is_none()
    }

    /// The limits decoding runs under: none on a dirty scheduler.
    pub fn limits(&self) -> Option<&Timeslice> {
        (self.scheduler == Scheduler::Normal).then_some(self)
    }

    /// Whether a message of `size` bytes that completes from held bytes is
    /// copied in slices, over several calls.
    pub fn copies_in_slices(&self, size: usize) -> bool {
        self.scheduler == Scheduler::Normal && size > COPY_SLICE
    }

    /// Starts the clock, if it has not started: the work about to begin is
    /// not predicted by a byte count. The work before it is taken to have
    /// cost its estimate, so the clock starts that much earlier.
    pub fn start_clock(&self) {
        if self.started.get().is_none() {
            let now = Instant::now();
            let before = Duration::from_nanos(self.estimated_nanos());
            self.started
                .set(Some(now.checked_sub(before).unwrap_or(now)));
        }
    }

    /// Whether the soft limit has passed, as last seen.
    pub fn spent(&self) -> bool {
        self.spent.get()
    }

    /// Whether a copy may go on for another step: until the soft limit.
    pub fn copy_more(&self) -> bool {
        self.now_within(SOFT).is_some()
    }

    /// The call took `messages` messages: part of its estimated time.
    pub fn count_messages(&self, messages: usize) {
        self.messages.set(messages);
    }

    /// The call did work of its own estimated to cost `nanos`: part of its
    /// estimated time, should its clock not have started.
    pub fn count_work(&self, nanos: u64) {
        self.work_nanos
            .set(self.work_nanos.get().saturating_add(nanos));
    }

    /// The call stops short of its chunk and gives its thread up.
    pub fn yield_thread(&self) {
        self.yields.set(true);
    }

    /// Building `units` more terms, within the hard limit.
    #[inline]
    pub fn charge(&self, units: u32) -> Result<(), OutOfTime> {
        self.charge_then(units, || ())
    }

    /// Like [`Timeslice::charge`], calling `before_look` before a look at
    /// the clock: where work not yet counted may be counted.
    #[inline]
    pub fn charge_then(&self, units: u32, before_look: impl FnOnce()) -> Result<(), OutOfTime> {
        match self.units_left.get().checked_sub(units) {
            Some(left) if left > 0 => {
                self.units_left.set(left);
                Ok(())
            }
            _ => {
                before_look();
                self.check()
            }
        }
    }

    #[cold]
    fn check(&self) -> Result<(), OutOfTime> {
        self.units_left.set(CHECK_UNITS);
        self.now_within(HARD).map(|_| ()).ok_or(OutOfTime)
    }

    /// Whether `nanos` more of work, which cannot stop once started (a
    /// large list or map, made in one call), still ends within the hard
    /// limit.
    pub fn afford(&self, nanos: u64) -> Result<(), OutOfTime> {
        match self.now_within(HARD) {
            Some(now) => self.afford_at(now, nanos),
            None => self.afford_nothing(),
        }
    }

    /// Whether a list or map of `terms` terms, made in one call that
    /// cannot stop, still ends within the hard limit; a small one always
    /// does.
    pub fn afford_terms(&self, terms: usize) -> Result<(), OutOfTime> {
        if terms <= LARGE_CONTAINER {
            return Ok(());
        }
        self.afford(terms as u64 * CONTAINER_NANOS_PER_TERM)
    }

    /// Whether a map estimated to take `nanos` (`pace::map_nanos` and
    /// `map_put_nanos`), made in one call or in puts that cannot stop,
    /// still ends within the hard limit; a small one always does.
    pub fn afford_map(&self, nanos: u64) -> Result<(), OutOfTime> {
        if nanos < MAP_NANOS_UNCHECKED {
            return Ok(());
        }
        self.afford(nanos)
    }

    /// Whether a copy made in steps of [`COPY_STEP`] may take one more:
    /// what a long string's copy, or an encoded text's, goes on while.
    pub fn afford_copy_step(&self) -> bool {
        self.afford_copy(COPY_STEP.get()).is_ok()
    }

    /// Whether a copy of `bytes` bytes into a new binary, which cannot stop
    /// once started, still ends within the hard limit.
    pub fn afford_copy(&self, bytes: usize) -> Result<(), OutOfTime> {
        self.afford(bytes as u64 * COPY_NANOS_PER_BYTE)
    }

    /// Like [`Timeslice::afford`], with the clock read at `now`.
    fn afford_at(&self, now: Instant, nanos: u64) -> Result<(), OutOfTime> {
        match now.checked_add(Duration::from_nanos(nanos)) {
            Some(end) if end < self.clock() + HARD => Ok(()),
            _ => self.afford_nothing(),
        }
    }

    /// Out of time for work that cannot stop: the call takes no new message.
    fn afford_nothing(&self) -> Result<(), OutOfTime> {
        self.spent.set(true);
        Err(OutOfTime)
    }

    /// A document of `length` bytes starts decoding: a short one is
    /// estimated from its length, a longer one timed, and a long one has
    /// its pace watched.
    pub fn begin_document(&self, length: usize) {
        if length <= UNTIMED_DOCUMENT_MAX {
            self.count_work(DOCUMENT_NANOS + length as u64 * DECODE_PICOS_PER_BYTE / 1000);
        } else {
            self.start_clock();
        }
        let paced = (length >= PACED_MIN).then(|| (Instant::now(), length));
        self.document.set(paced);
    }

    /// When the clock started, starting it now if it has not.
    fn clock(&self) -> Instant {
        self.start_clock();
        self.started.get().unwrap_or_else(Instant::now)
    }

    /// The time now, if it is within `limit` of the clock's start. Past the
    /// soft limit, the call is spent.
    fn now_within(&self, limit: Duration) -> Option<Instant> {
        let started = self.clock();
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(started);
        if elapsed >= SOFT {
            self.spent.set(true);
        }
        (elapsed < limit).then_some(now)
    }

    /// Whether the document, `position` bytes in `now`, keeps a pace that
    /// ends it within the hard limit.
    fn on_pace(&self, now: Instant, position: usize) -> bool {
        let Some((started, length)) = self.document.get() else {
            return true;
        };
        let left = (self.clock() + HARD).saturating_duration_since(now);
        pace::on_pace(
            now.saturating_duration_since(started),
            position,
            length,
            left,
        )
    }

    /// What the call took, in nanoseconds: measured if the clock ran, else
    /// estimated.
    fn used_nanos(&self) -> u64 {
        match self.started.get() {
            Some(started) => u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX),
            None => self.estimated_nanos(),
        }
    }

    /// What the call's work so far is estimated, generously, to have cost:
    /// from its bytes, its messages and the work it counted.
    fn estimated_nanos(&self) -> u64 {
        let chunk = self.chunk as u64 * SEARCH_PICOS_PER_BYTE / 1000;
        let messages = MESSAGE_NANOS * self.messages.get() as u64;
        CALL_NANOS + chunk + messages + self.work_nanos.get()
    }

    /// Reports the call's time to the scheduler, as it returns. Time below
    /// a whole percent is carried to the next call on the same thread,
    /// which may be another process's: rounding each call up to 1% would
    /// make a process feeding small chunks yield ten times too often. A
    /// call that gave its thread up reports a whole slice.
    pub fn report(&self, env: Env<'_>) {
        thread_local! {
            static UNREPORTED_NANOS: Cell<u64> = const { Cell::new(0) };
        }
        if self.yields.get() {
            consume_timeslice(env, 100);
            return;
        }
        UNREPORTED_NANOS.with(|unreported| {
            let total = unreported.get().saturating_add(self.used_nanos());
            let percent = total / PERCENT_NANOS;
            unreported.set(total % PERCENT_NANOS);
            // Over a whole slice, one slice: the call is preempted all the
            // same, and the next process is not charged for it.
            if percent > 0 {
                consume_timeslice(env, percent.min(100) as i32);
            }
        });
    }
}

/// The call's time has run out for the work under way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfTime;

/// The parser runs on the call's time: more fuel while the work it asks
/// for ends within the hard limit and the document keeps a pace that
/// finishes it there.
impl Ration for &Timeslice {
    fn more(&mut self, position: usize, needed: usize) -> usize {
        let nanos = (needed as u64).saturating_mul(FUEL_UNIT_PICOS) / 1000;
        match self.now_within(HARD) {
            Some(now) if self.on_pace(now, position) && self.afford_at(now, nanos).is_ok() => {
                needed.max(FUEL_STEP)
            }
            _ => 0,
        }
    }
}
