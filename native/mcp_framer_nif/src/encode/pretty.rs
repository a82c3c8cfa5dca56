//! The encoder's text laid out for people (`pretty:`), by
//! `mcp_framer_core::encode::pretty`: on a normal scheduler in one pass
//! into the thread's scratch, then copied into the result binary; on a
//! dirty one measured first, then written straight into the binary, which
//! may be gigabytes.
//!
//! `McpFramer.Native.pretty/2` (or `pretty_dirty/2`) takes the text and
//! `{indent, line, record, colon}` and replies `{:ok, binary}`,
//! `{:error, {:no_memory, bytes}}` (`bytes` the size laid out), or on a
//! normal scheduler `:continue_dirty` for text too long to lay out within
//! a call's time, having written at most what a call may; and `:error` to
//! a caller that died while its text was written.

use crate::error::FramerError;
use crate::terms;
use crate::timeslice::{Scheduler, Timeslice};
use mcp_framer_core::encode::pretty::{self, Layout, Short};
use rustler::{Binary, Encoder, Env, NifResult, Term};

/// The most text, and the most laid out, a normal scheduler's call takes.
/// MCP terms' text was laid out at 400-500 MB/s, the margins of deep
/// nesting at over 3 GB/s (2026-12-03, in a loop): well within a call.
const NORMAL_TEXT_MAX: usize = 64 * 1024;
const NORMAL_OUTPUT_MAX: usize = 256 * 1024;

/// What reading a byte of text, and writing one laid out, are taken to
/// cost: about twice the 1.6-1.8 ns measured on 2,000 small objects (41 KB
/// laid out to 115 KB, 2026-12-06, on a busy host). At 1 ns, a process
/// laying out such texts one after another held its scheduler 2-2.9 ms.
const PICOS_PER_BYTE: u64 = 3_500;

mod atoms {
    rustler::atoms! { ok, error, continue_dirty, no_memory }
}

type Separators<'a> = (Binary<'a>, Binary<'a>, Binary<'a>, Binary<'a>);

/// Lays out `text` on a normal scheduler, if it fits a call's time.
#[rustler::nif]
fn pretty<'a>(env: Env<'a>, text: Binary<'a>, separators: Separators<'a>) -> NifResult<Term<'a>> {
    run(env, text, separators, Scheduler::Normal)
}

/// Lays out `text` of any length.
#[rustler::nif(schedule = "DirtyCpu")]
fn pretty_dirty<'a>(
    env: Env<'a>,
    text: Binary<'a>,
    separators: Separators<'a>,
) -> NifResult<Term<'a>> {
    run(env, text, separators, Scheduler::Dirty)
}

fn run<'a>(
    env: Env<'a>,
    text: Binary<'a>,
    (indent, line, record, colon): Separators<'a>,
    scheduler: Scheduler,
) -> NifResult<Term<'a>> {
    let normal = scheduler == Scheduler::Normal;
    let time = Timeslice::new(scheduler, 0);
    let layout = Layout {
        indent: indent.as_slice(),
        line: line.as_slice(),
        record: record.as_slice(),
        colon: colon.as_slice(),
    };
    let reply = if normal && text.len() > NORMAL_TEXT_MAX {
        atoms::continue_dirty().encode(env)
    } else if normal {
        // In one pass, into the thread's scratch: a text laid out past
        // what a normal call may write, or with no memory for it, is laid
        // out again on a dirty scheduler, which knows its size first.
        super::with_scratch(|scratch| {
            let laid_out = pretty::write_vec(text.as_slice(), &layout, scratch, NORMAL_OUTPUT_MAX);
            // What was read and written, whether or not it was all.
            let bytes = (text.len() + scratch.len()) as u64;
            time.count_work(bytes * PICOS_PER_BYTE / 1000);
            match laid_out {
                Ok(()) => copied(env, scratch),
                Err(Short::Cap | Short::NoMemory) => atoms::continue_dirty().encode(env),
            }
        })
    } else {
        let size = pretty::len(text.as_slice(), &layout);
        let bytes = (text.len() as u64).saturating_add(size.unwrap_or(0) as u64);
        time.count_work(bytes.saturating_mul(PICOS_PER_BYTE) / 1000);
        match size {
            Some(size) => match laid_out(env, text.as_slice(), &layout, size)? {
                LaidOut::Text(binary) => (atoms::ok(), binary).encode(env),
                LaidOut::NoMemory => no_memory(env, size),
                // No one is left to read the reply.
                LaidOut::CallerGone => atoms::error().encode(env),
            },
            None => no_memory(env, usize::MAX),
        }
    };
    time.report(env);
    Ok(reply)
}

/// A laid-out text grows with the square of its nesting: a few KB of
/// brackets with a wide indent take gigabytes, and seconds to write on a
/// dirty scheduler, which nothing can preempt. After each piece that
/// takes it past a multiple of this many bytes written, the layout looks
/// whether its caller is still alive, and stops if not: a caller that
/// gave up waiting (a task killed on its timeout) frees the scheduler.
const ALIVE_CHECK_BYTES: usize = 4 * 1024 * 1024;

enum LaidOut<'a> {
    Text(Term<'a>),
    /// The BEAM could not allocate the binary, or the indents of the
    /// deepest line.
    NoMemory,
    /// The calling process died while the text was written.
    CallerGone,
}

/// A new binary of `size` bytes, `text` laid out, written straight into it.
fn laid_out<'a>(
    env: Env<'a>,
    text: &[u8],
    layout: &Layout,
    size: usize,
) -> Result<LaidOut<'a>, FramerError> {
    let (mut made, mut written, mut room, mut gone) = (false, 0, true, false);
    // SAFETY: `fill` writes each piece right after the one before, and
    // stops at the first that does not fit in the `size` bytes it is
    // given; it gives up unless every piece was written, filling the
    // binary exactly.
    let binary = unsafe {
        terms::new_binary(env, size, |data| {
            made = true;
            let mut fits = true;
            room = pretty::write_to(text, layout, |bytes| {
                fits = bytes.len() <= size - written;
                if !fits {
                    return false;
                }
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), data.add(written), bytes.len());
                let before = written / ALIVE_CHECK_BYTES;
                written += bytes.len();
                if written / ALIVE_CHECK_BYTES != before {
                    gone = rustler::sys::enif_is_current_process_alive(env.as_c_arg()) == 0;
                }
                !gone
            });
            room && fits && !gone && written == size
        })
    };
    match binary {
        // SAFETY: `new_binary` made the term in `env`.
        Some(binary) => Ok(LaidOut::Text(unsafe { Term::new(env, binary) })),
        None if !made || !room => Ok(LaidOut::NoMemory),
        None if gone => Ok(LaidOut::CallerGone),
        // `size` is what `len` gave for the same text and layout.
        None => Err(FramerError::EncoderMismatch),
    }
}

/// `{:ok, binary}` of `bytes`, or the error of no memory for them.
fn copied<'a>(env: Env<'a>, bytes: &[u8]) -> Term<'a> {
    // SAFETY: `fill` writes the `bytes.len()` bytes it is given room for.
    let binary = unsafe {
        terms::new_binary(env, bytes.len(), |data| {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), data, bytes.len());
            true
        })
    };
    match binary {
        // SAFETY: `new_binary` made the term in `env`.
        Some(binary) => (atoms::ok(), unsafe { Term::new(env, binary) }).encode(env),
        None => no_memory(env, bytes.len()),
    }
}

fn no_memory(env: Env<'_>, bytes: usize) -> Term<'_> {
    (atoms::error(), (atoms::no_memory(), bytes as u64)).encode(env)
}
