//! A global allocator that counts, for tests that a warm hot loop allocates nothing. A test
//! binary installs it with `#[global_allocator] static A: CountingAlloc = CountingAlloc;`
//! (safe code) and measures the loop with [`allocations_in`]. The count is per thread
//! (the thread that allocates), so run the loop on one thread — a one-thread rayon pool, or
//! none — and read the count there: a process-wide count would also see the test harness's
//! and idle pool threads' own allocations, and a scheduler stealing work between threads may
//! allocate (its deques grow and shrink) whatever the kernel does.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

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
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded from the caller.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded from the caller.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: forwarded from the caller.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Allocations and reallocations so far on this thread (through [`CountingAlloc`] when it is
/// the global allocator; 0 otherwise).
fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

/// Allocations and reallocations made on this thread while `f` runs (0 for every `f` unless
/// [`CountingAlloc`] is the global allocator).
pub fn allocations_in(f: impl FnOnce()) -> usize {
    let before = allocations();
    f();
    allocations() - before
}
