//! A global allocator that counts, for tests that a warm hot loop allocates nothing. A test
//! binary installs it with `#[global_allocator] static A: CountingAlloc = CountingAlloc;`
//! (safe code) and measures the loop with [`allocations_in`]. The count is per thread
//! (the thread that allocates), so run the loop on one thread — a one-thread rayon pool, or
//! none — and read the count there: a process-wide count would also see the test harness's
//! and idle pool threads' own allocations, and a scheduler stealing work between threads may
//! allocate (its deques grow and shrink) whatever the kernel does.
//!
//! It also keeps the process's live heap bytes and their peak ([`peak_bytes_in`]), for the
//! tests that compare a run's memory estimate with what it really holds.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Live heap bytes of the process, and the most since the last [`peak_bytes_in`] began.
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grow(bytes: usize) {
    let now = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

fn shrink(bytes: usize) {
    LIVE.fetch_sub(bytes, Ordering::Relaxed);
}

thread_local! {
    // A const-initialised `Cell` without a destructor: reading it never allocates, so the
    // allocator can touch it.
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn count() {
    // `try_with`: during thread teardown the slot may be gone; those allocations go uncounted.
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

/// The system allocator, counting allocations and reallocations.
pub struct CountingAlloc;

// SAFETY: every call is forwarded unchanged to the system allocator; the counter is a side
// effect only.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded from the caller.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grow(layout.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded from the caller.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grow(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        shrink(layout.size());
        // SAFETY: forwarded from the caller.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: forwarded from the caller.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            // Counted as the new block appearing before the old one goes (the worst case of a
            // moving reallocation).
            grow(new_size);
            shrink(layout.size());
        }
        p
    }
}

/// Allocations and reallocations so far on this thread (through [`CountingAlloc`] when it is
/// the global allocator; 0 otherwise).
fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

/// The most heap bytes the process held at once while `f` ran, above what it held when `f`
/// began (0 unless [`CountingAlloc`] is the global allocator). Process-wide: run nothing else
/// meanwhile (one test per binary, or tests that measure serially).
pub fn peak_bytes_in(f: impl FnOnce()) -> usize {
    let start = LIVE.load(Ordering::Relaxed);
    PEAK.store(start, Ordering::Relaxed);
    f();
    PEAK.load(Ordering::Relaxed).saturating_sub(start)
}

/// Allocations and reallocations made on this thread while `f` runs (0 for every `f` unless
/// [`CountingAlloc`] is the global allocator).
pub fn allocations_in(f: impl FnOnce()) -> usize {
    let before = allocations();
    f();
    allocations() - before
}
