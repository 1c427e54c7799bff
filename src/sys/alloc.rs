//! The process's allocator: mimalloc (its 2.x line), called the way its own
//! aligned path would call it.
//!
//! The `mimalloc` crate's `GlobalAlloc` sends every allocation through
//! `mi_malloc_aligned`, whose checks run before it falls back to the plain
//! `mi_malloc` for a block that is naturally aligned anyway: ~60
//! instructions per allocation where `mi_malloc` takes ~20, and a proxied
//! request allocates a few dozen blocks. Here a layout whose alignment is at
//! most 16 bytes (`MI_MAX_ALIGN_SIZE`) and at most its size goes straight to
//! `mi_malloc`: the rule of mimalloc's `mi_malloc_is_naturally_aligned`, under
//! which its aligned path returns `mi_malloc`'s block itself. Any other layout
//! goes through the aligned calls, as before.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// The largest alignment every `mi_malloc` block of at least that size has
/// (`MI_MAX_ALIGN_SIZE` on 64-bit Linux).
const NATURAL_ALIGN: usize = 16;

/// Whether `mi_malloc(size)` (or `mi_realloc` to `size`) is aligned to
/// `align` by construction.
fn natural(size: usize, align: usize) -> bool {
    align <= NATURAL_ALIGN && align <= size
}

/// mimalloc as the global allocator (see the module's text).
pub struct MiMalloc;

// SAFETY: every method returns a block from mimalloc of at least the
// layout's size and alignment (natural ones by mimalloc's guarantee for
// `mi_malloc` — blocks of at least 16 bytes are 16-aligned and smaller ones
// aligned to their size class — the others by the aligned calls), or null
// on failure; `dealloc` and `realloc` receive only blocks these methods
// returned, which `mi_free` and `mi_realloc*` accept whatever call made them.
unsafe impl GlobalAlloc for MiMalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if natural(layout.size(), layout.align()) {
            // SAFETY: any size may be asked of mi_malloc.
            unsafe { mi::mi_malloc(layout.size()).cast() }
        } else {
            // SAFETY: Layout guarantees a power-of-two alignment.
            unsafe { mi::mi_malloc_aligned(layout.size(), layout.align()).cast() }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if natural(layout.size(), layout.align()) {
            // SAFETY: as in `alloc`.
            unsafe { mi::mi_zalloc(layout.size()).cast() }
        } else {
            // SAFETY: as in `alloc`.
            unsafe { mi::mi_zalloc_aligned(layout.size(), layout.align()).cast() }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator (GlobalAlloc's contract).
        unsafe { mi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if natural(new_size, layout.align()) {
            // SAFETY: `ptr` came from this allocator; a block mi_realloc
            // moves to is a new mi_malloc block of `new_size`, naturally
            // aligned, and one it keeps was aligned already.
            unsafe { mi::mi_realloc(ptr.cast::<c_void>(), new_size).cast() }
        } else {
            // SAFETY: `ptr` came from this allocator; the alignment is a
            // power of two.
            unsafe { mi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast() }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_have_the_alignment_their_layout_asks() {
        let a = MiMalloc;
        for size in [
            1usize, 2, 3, 7, 8, 9, 15, 16, 17, 24, 40, 48, 56, 100, 1000, 5000, 70000,
        ] {
            for align in [1usize, 2, 4, 8, 16, 32, 64, 4096] {
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: a non-zero size; the block is freed below.
                let p = unsafe { a.alloc(layout) };
                assert!(!p.is_null());
                assert_eq!(p as usize % align, 0, "size {size} align {align}");
                // SAFETY: the block holds `size` bytes.
                unsafe { p.write_bytes(0xa5, size) };
                let grown = size * 3 + 1;
                // SAFETY: `p` came from `a` with `layout`.
                let q = unsafe { a.realloc(p, layout, grown) };
                assert_eq!(q as usize % align, 0, "realloc size {grown} align {align}");
                // SAFETY: the first `size` bytes were kept by realloc.
                assert!(
                    unsafe { std::slice::from_raw_parts(q, size) }
                        .iter()
                        .all(|&b| b == 0xa5)
                );
                let layout = Layout::from_size_align(grown, align).unwrap();
                // SAFETY: `q` came from `a` with this layout.
                unsafe { a.dealloc(q, layout) };
                // SAFETY: as above; freed at once.
                let z = unsafe { a.alloc_zeroed(Layout::from_size_align(size, align).unwrap()) };
                assert_eq!(z as usize % align, 0);
                // SAFETY: the zeroed block holds `size` bytes.
                assert!(
                    unsafe { std::slice::from_raw_parts(z, size) }
                        .iter()
                        .all(|&b| b == 0)
                );
                // SAFETY: `z` came from `a`.
                unsafe { a.dealloc(z, Layout::from_size_align(size, align).unwrap()) };
            }
        }
    }
}
