//! The NIF's buffers come from the BEAM's own allocator (`enif_alloc`),
//! so that the VM counts them: `:erlang.memory(:system)` holds the
//! decoder's and the encoder's buffers, those kept between calls and
//! those of a call still running, as `:binary` holds the binaries.
//! Memory from the C library's `malloc` is counted by nothing the VM
//! reports, and a user who watches `:erlang.memory/0` would not see it.
//!
//! Blocks under [`COUNTED_MIN`] bytes still come from `malloc`: every
//! call makes one (rustler's list of the call's arguments), and through
//! `enif_alloc` that made framing one small message per chunk 9-13%
//! slower (`make compare`, best runs). Such blocks are a call's small
//! bookkeeping, freed as it ends, and buffers kept while they are small.
//!
//! `enif_alloc` gives blocks aligned to 8 bytes at least. A rarer layout
//! aligned to more is placed inside a larger block, with the block's
//! address kept in the word before it.

use rustler::sys::{c_void, enif_alloc, enif_free, enif_realloc};
use std::alloc::{GlobalAlloc, Layout, System};
use std::ptr;

/// Blocks of this many bytes or more come from `enif_alloc`.
const COUNTED_MIN: usize = 4096;

/// The alignment every block from `enif_alloc` has, at least.
const BLOCK_ALIGN: usize = 8;

struct BeamAllocator;

#[global_allocator]
static ALLOCATOR: BeamAllocator = BeamAllocator;

// SAFETY: blocks come from `enif_alloc` and `malloc`, both thread-safe,
// and each is freed by the allocator it came from, which its size tells:
// Rust gives back the size a block was last made or resized with.
unsafe impl GlobalAlloc for BeamAllocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() < COUNTED_MIN {
            System.alloc(layout)
        } else {
            beam_alloc(layout)
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if layout.size() < COUNTED_MIN {
            System.dealloc(ptr, layout)
        } else {
            beam_free(ptr, layout)
        }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.size() < COUNTED_MIN && new_size < COUNTED_MIN {
            System.realloc(ptr, layout, new_size)
        } else {
            beam_realloc(ptr, layout, new_size)
        }
    }
}

#[inline(never)]
unsafe fn beam_alloc(layout: Layout) -> *mut u8 {
    if layout.align() <= BLOCK_ALIGN {
        return enif_alloc(layout.size()).cast();
    }
    // The alignment is a power of two over 8, so the aligned address is
    // from 8 to `align` bytes into the block: room for the word.
    let Some(size) = layout.size().checked_add(layout.align()) else {
        return ptr::null_mut();
    };
    let block: *mut u8 = enif_alloc(size).cast();
    if block.is_null() {
        return block;
    }
    let offset = layout.align() - (block as usize & (layout.align() - 1));
    let aligned = block.add(offset);
    aligned.cast::<*mut u8>().sub(1).write(block);
    aligned
}

#[inline(never)]
unsafe fn beam_free(ptr: *mut u8, layout: Layout) {
    let block = if layout.align() <= BLOCK_ALIGN {
        ptr
    } else {
        ptr.cast::<*mut u8>().sub(1).read()
    };
    enif_free(block.cast::<c_void>());
}

/// A counted block resized, or a block moved from one allocator to the
/// other.
#[inline(never)]
unsafe fn beam_realloc(ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
    let counted = layout.size() >= COUNTED_MIN && new_size >= COUNTED_MIN;
    if counted && layout.align() <= BLOCK_ALIGN {
        return enif_realloc(ptr.cast(), new_size).cast();
    }
    let moved = ALLOCATOR.alloc(Layout::from_size_align_unchecked(new_size, layout.align()));
    if !moved.is_null() {
        ptr::copy_nonoverlapping(ptr, moved, layout.size().min(new_size));
        ALLOCATOR.dealloc(ptr, layout);
    }
    moved
}
