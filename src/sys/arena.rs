//! The global allocator: a bump arena in the binary's own zeroed memory,
//! libc's `malloc` past it. Used by every process of the helper; only the
//! stub (and the other modes: the doctor, `--setup`, the shim, the race
//! tester) allocates, init and the worker never do.
//!
//! Why not libc's allocator alone: musl's starts each process with two
//! `brk` and two `mmap` calls, spreads a run's allocations over a page
//! per size class, and unmaps a group once it is empty. An `munmap` while
//! init runs in the same memory (supervise/) makes the kernel interrupt
//! every CPU that memory was used on to flush its TLB: 30 us a call under
//! bubblewrap here, two of them in each guarded run's start. Here a run
//! allocates from `.bss` (demand-zero: a page costs only when first
//! written), packed, and nothing is ever unmapped; the stub's start-up
//! makes no allocator call at all.
//!
//! A piece is handed out by moving the free offset up (one
//! compare-and-swap, so threads are safe too, though only the race
//! tester's forked children and the unit tests run any); freeing the last
//! piece moves it back, freeing another leaves its bytes unused until
//! exit. What does not fit goes to libc's allocator, and returns there
//! when freed: a long observed run that allocates for every notification
//! uses the arena up, then libc's allocator, as before.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The arena's size: a run's allocations, and those of srt's largest
/// bubblewrap line (its `--args` profile: 1,500 bound files in the mount
/// guard's list), fit.
pub const SIZE: usize = 1024 * 1024;

/// `N` bytes handed out from the bottom up, and libc's allocator past them.
#[repr(C, align(4096))]
pub struct Arena<const N: usize> {
    space: UnsafeCell<[u8; N]>,
    /// The offset of the first free byte.
    next: AtomicUsize,
}

// SAFETY: the bytes are only reached through pieces handed out by
// `take`, which never hands out one overlapping a live one (`next` moves
// by compare-and-swap); each piece belongs to its holder alone.
unsafe impl<const N: usize> Sync for Arena<N> {}

impl<const N: usize> Arena<N> {
    pub const fn new() -> Arena<N> {
        Arena {
            space: UnsafeCell::new([0; N]),
            next: AtomicUsize::new(0),
        }
    }

    fn base(&self) -> usize {
        self.space.get() as usize
    }

    /// The offset of `ptr` in the arena, if it lies in it.
    fn offset(&self, ptr: *mut u8) -> Option<usize> {
        (ptr as usize).checked_sub(self.base()).filter(|&o| o < N)
    }

    /// A piece of `layout` from the arena, or None where it does not fit.
    fn take(&self, layout: Layout) -> Option<*mut u8> {
        let base = self.base();
        let mut next = self.next.load(Ordering::Relaxed);
        loop {
            let start = (base + next).checked_next_multiple_of(layout.align())? - base;
            let end = start.checked_add(layout.size())?;
            if end > N {
                return None;
            }
            match self
                .next
                .compare_exchange_weak(next, end, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Some((base + start) as *mut u8),
                Err(now) => next = now,
            }
        }
    }

    /// Moves `next` from `from` to `to` if nothing was handed out since:
    /// `from` is still the first free byte.
    fn reset(&self, from: usize, to: usize) -> bool {
        self.next
            .compare_exchange(from, to, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }
}

// SAFETY: `take` hands out pieces inside `space`, aligned as asked, never
// overlapping a live one (`next` moves back only over the piece being
// freed, when it is the last, or forward over the last one grown in
// place); everything else is libc's allocator's, passed through with the
// caller's own guarantees.
unsafe impl<const N: usize> GlobalAlloc for Arena<N> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match self.take(layout) {
            Some(ptr) => ptr,
            // SAFETY: the caller's layout, as `GlobalAlloc::alloc` requires.
            None => unsafe { System.alloc(layout) },
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match self.take(layout) {
            // SAFETY: a fresh piece of `layout.size()` bytes, ours alone; a
            // freed one handed out again may hold old bytes.
            Some(ptr) => unsafe {
                ptr.write_bytes(0, layout.size());
                ptr
            },
            // SAFETY: as in `alloc`.
            None => unsafe { System.alloc_zeroed(layout) },
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        match self.offset(ptr) {
            // The last piece handed out: the next one reuses its bytes.
            Some(at) => {
                self.reset(at + layout.size(), at);
            }
            // SAFETY: not the arena's, so libc's allocator gave it out,
            // with this layout (the caller's guarantee).
            None => unsafe { System.dealloc(ptr, layout) },
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let Some(at) = self.offset(ptr) else {
            // SAFETY: libc's piece, with the caller's guarantees.
            return unsafe { System.realloc(ptr, layout, new_size) };
        };
        // The last piece grows or shrinks where it is.
        if at.checked_add(new_size).is_some_and(|end| end <= N)
            && self.reset(at + layout.size(), at + new_size)
        {
            return ptr;
        }
        // SAFETY: `new_size` is non-zero and, rounded up to the alignment,
        // does not overflow (the caller's guarantees for `realloc`).
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: as in `alloc`.
        let fresh = unsafe { self.alloc(new_layout) };
        if !fresh.is_null() {
            // SAFETY: the old piece holds `layout.size()` bytes, the new one
            // `new_size`; they do not overlap (the old one is still live).
            unsafe {
                std::ptr::copy_nonoverlapping(ptr, fresh, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
        }
        fresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Each test its own arena: the harness's threads allocate from the
    // global one meanwhile.
    const TEST: usize = 64 * 1024;

    #[test]
    fn pieces_are_aligned_and_disjoint_and_the_last_one_is_given_back() {
        static A: Arena<TEST> = Arena::new();
        // SAFETY: non-zero layouts; each piece written within its size and
        // freed with its layout.
        unsafe {
            let l8 = Layout::from_size_align(24, 8).unwrap();
            let l64 = Layout::from_size_align(100, 64).unwrap();
            let p = A.alloc(l8);
            let q = A.alloc(l64);
            assert!(A.offset(p).is_some() && A.offset(q).is_some());
            assert_eq!(q as usize % 64, 0);
            assert!(q as usize >= p as usize + 24);
            p.write_bytes(0xaa, 24);
            q.write_bytes(0xbb, 100);
            assert_eq!(*p.add(23), 0xaa);
            // The last piece goes back; the next of its size reuses it.
            A.dealloc(q, l64);
            let r = A.alloc(l64);
            assert_eq!(r, q);
            // One freed out of order stays used.
            A.dealloc(p, l8);
            let s = A.alloc(l8);
            assert!(s as usize >= r as usize + 100);
        }
    }

    #[test]
    fn the_last_piece_grows_in_place_and_another_moves_with_its_bytes() {
        static A: Arena<TEST> = Arena::new();
        // SAFETY: as above.
        unsafe {
            let l = Layout::from_size_align(16, 8).unwrap();
            let p = A.alloc(l);
            p.write_bytes(7, 16);
            let grown = A.realloc(p, l, 64);
            assert_eq!(grown, p, "the last piece grows where it is");
            let l64 = Layout::from_size_align(64, 8).unwrap();
            let blocker = A.alloc(l);
            let moved = A.realloc(grown, l64, 128);
            assert_ne!(moved, grown);
            assert!(A.offset(moved).is_some());
            assert!((0..16).all(|i| *moved.add(i) == 7));
            A.dealloc(moved, Layout::from_size_align(128, 8).unwrap());
            A.dealloc(blocker, l);
        }
    }

    #[test]
    fn what_does_not_fit_goes_to_libc_and_back() {
        static A: Arena<TEST> = Arena::new();
        // SAFETY: as above.
        unsafe {
            let l = Layout::from_size_align(TEST / 2, 8).unwrap();
            let more = Layout::from_size_align(TEST / 2 + 8, 8).unwrap();
            let first = A.alloc(more);
            assert!(A.offset(first).is_some());
            let second = A.alloc(l);
            assert!(A.offset(second).is_none(), "past the end: libc's");
            second.write_bytes(1, TEST / 2);
            // Grown past the end, the last arena piece moves to libc's too.
            let moved = A.realloc(first, more, TEST + 8);
            assert!(A.offset(moved).is_none());
            assert_eq!(A.next.load(Ordering::Relaxed), 0, "the moved piece freed");
            let huge = Layout::from_size_align(TEST + 1, 8).unwrap();
            let z = A.alloc_zeroed(huge);
            assert!(A.offset(z).is_none() && *z.add(TEST) == 0);
            A.dealloc(z, huge);
            A.dealloc(moved, Layout::from_size_align(TEST + 8, 8).unwrap());
            A.dealloc(second, l);
        }
    }

    #[test]
    fn zeroed_pieces_are_zero_even_where_bytes_were_freed() {
        static A: Arena<TEST> = Arena::new();
        // SAFETY: as above.
        unsafe {
            let l = Layout::from_size_align(32, 8).unwrap();
            let p = A.alloc(l);
            p.write_bytes(0xff, 32);
            A.dealloc(p, l);
            let z = A.alloc_zeroed(l);
            assert_eq!(z, p);
            assert!((0..32).all(|i| *z.add(i) == 0));
        }
    }

    #[test]
    fn threads_never_get_the_same_piece() {
        static A: Arena<TEST> = Arena::new();
        let l = Layout::from_size_align(8, 8).unwrap();
        let handles: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(move || {
                    // SAFETY: as above; the pieces are never freed.
                    (0..500)
                        .map(|_| unsafe { A.alloc(l) } as usize)
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all: Vec<usize> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 2000);
    }
}
