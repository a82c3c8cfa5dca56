//! What `mcp_framer_core::encode::pretty` allocates, through an allocator
//! that, on the thread a test watches, notes the largest block asked for
//! and refuses blocks from a given size.

use mcp_framer_core::encode::pretty::{self, Layout, Short};
use std::alloc::{GlobalAlloc, Layout as Block, System};
use std::cell::Cell;

struct Watching;

thread_local! {
    /// On a watched thread, the size from which blocks are refused.
    static REFUSED_FROM: Cell<Option<usize>> = const { Cell::new(None) };
    /// The largest block the watched thread asked for.
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

impl Watching {
    fn allows(size: usize) -> bool {
        match REFUSED_FROM.get() {
            Some(refused_from) => {
                LARGEST.set(LARGEST.get().max(size));
                size < refused_from
            }
            None => true,
        }
    }
}

unsafe impl GlobalAlloc for Watching {
    unsafe fn alloc(&self, block: Block) -> *mut u8 {
        if Watching::allows(block.size()) {
            unsafe { System.alloc(block) }
        } else {
            std::ptr::null_mut()
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, block: Block) {
        unsafe { System.dealloc(ptr, block) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, block: Block, size: usize) -> *mut u8 {
        if Watching::allows(size) {
            unsafe { System.realloc(ptr, block, size) }
        } else {
            std::ptr::null_mut()
        }
    }
}

#[global_allocator]
static ALLOCATOR: Watching = Watching;

/// `f`, watched: blocks from `refused_from` bytes on refused; returns its
/// result and the largest block it asked for.
fn watched<T>(refused_from: usize, f: impl FnOnce() -> T) -> (T, usize) {
    LARGEST.set(0);
    REFUSED_FROM.set(Some(refused_from));
    let result = f();
    REFUSED_FROM.set(None);
    (result, LARGEST.get())
}

const WIDE: usize = 1 << 20;
/// A static, so that making it allocates nothing.
static WIDE_INDENT: [u8; WIDE] = [b' '; WIDE];

#[test]
fn write_vec_is_out_of_memory_when_a_line_s_margin_cannot_be_allocated() {
    let layout = Layout {
        indent: &WIDE_INDENT,
        line: b"\n",
        record: b"\n",
        colon: b" ",
    };
    let mut out = Vec::with_capacity(64);
    // The first item's line takes a margin of a newline and one indent.
    let (result, _) = watched(WIDE, || {
        pretty::write_vec(b"[1]", &layout, &mut out, usize::MAX)
    });
    assert_eq!(result, Err(Short::NoMemory));
}

/// The margin holds a newline and the indents of the deepest line so far,
/// and grows as a `Vec` does, at most doubling: no block it asks for is
/// twice the widest margin.
#[test]
fn a_line_s_margin_takes_less_than_twice_the_widest_one() {
    let layout = Layout {
        indent: b"  ",
        line: b"\n",
        record: b"\n",
        colon: b" ",
    };
    let depth = 1000;
    let text = ["[".repeat(depth), "1".into(), "]".repeat(depth)].concat();
    let widest = layout.line.len() + depth * layout.indent.len();
    let mut out = vec![0; pretty::len(text.as_bytes(), &layout).unwrap()];
    // `write` lays out into `out` as it is: the margin is all it allocates.
    let (written, largest) = watched(usize::MAX, || {
        pretty::write(text.as_bytes(), &layout, &mut out)
    });
    assert_eq!(written, Some(out.len()));
    assert!(largest < 2 * widest, "{largest} for {widest}");
}
