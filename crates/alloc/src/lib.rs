//! The global allocator of the binaries, examples and benches: mimalloc.
//! The `mimalloc` crate's `MiMalloc` passes every request to mimalloc's
//! aligned entry points, whose alignment checks took a quarter of each
//! allocation on a check (which makes hundreds of thousands of small
//! ones); requests that need no more than the word alignment every
//! mimalloc block has go to the plain ones instead.

use libmimalloc_sys as mi;
use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

/// The alignment of every mimalloc block: block sizes are whole words.
const WORD: usize = std::mem::size_of::<usize>();

pub struct Mimalloc;

unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe {
            if layout.align() <= WORD {
                mi::mi_malloc(layout.size()) as *mut u8
            } else {
                mi::mi_malloc_aligned(layout.size(), layout.align()) as *mut u8
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        unsafe {
            if layout.align() <= WORD {
                mi::mi_zalloc(layout.size()) as *mut u8
            } else {
                mi::mi_zalloc_aligned(layout.size(), layout.align()) as *mut u8
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        unsafe { mi::mi_free(ptr as *mut c_void) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        unsafe {
            if layout.align() <= WORD {
                mi::mi_realloc(ptr as *mut c_void, new_size) as *mut u8
            } else {
                mi::mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align()) as *mut u8
            }
        }
    }
}

/// `mi_option_purge_delay` of mimalloc.h, which `libmimalloc-sys` does not name.
const MI_OPTION_PURGE_DELAY: mi::mi_option_t = 15;

/// Memory the process frees goes back to the system at once instead of
/// staying resident for mimalloc's default delay: for a one-shot process
/// (tables outgrown while a large file is checked).
pub fn return_freed_memory_at_once() {
    return_freed_memory_after(std::time::Duration::ZERO);
}

/// Memory the process frees goes back to the system once it has stayed
/// free for `delay` (mimalloc's purge delay).
pub fn return_freed_memory_after(delay: std::time::Duration) {
    let ms = i64::try_from(delay.as_millis()).unwrap_or(i64::MAX);
    // SAFETY: mimalloc reads and sets its options atomically, from any thread.
    unsafe { mi::mi_option_set(MI_OPTION_PURGE_DELAY, ms as _) };
}
