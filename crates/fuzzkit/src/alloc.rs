//! A global allocator that counts, per thread, the bytes a decoder holds,
//! so a fuzz test can check that a huge length field allocated nothing huge.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The system allocator, counting each thread's live bytes and their peak.
///
/// A fuzz test binary installs it with
/// `#[global_allocator] static ALLOC: TrackingAlloc = TrackingAlloc;`;
/// [`crate::Fuzz`] refuses to run without it. Bytes are charged to the
/// thread that allocates and credited to the one that frees, so a thread's
/// count is exact for what it allocates and frees itself (a decoder's
/// buffers), which is what [`measure`] looks at.
pub struct TrackingAlloc;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn note(delta: isize) {
    // `try_with`: allocations while a thread's locals are torn down are not counted.
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: every call is forwarded unchanged to `System`, which upholds the
// `GlobalAlloc` contract; the bookkeeping touches only const-initialised
// thread-locals (no allocation, no unwinding, no reentrancy).
unsafe impl GlobalAlloc for TrackingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's guarantees for `layout` are those `System.alloc` needs.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            note(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            note(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by this allocator, that is by `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        note(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` and `layout` come from this allocator, that is from `System`.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            note(new_size as isize - layout.size() as isize);
        }
        p
    }
}

/// Runs `f` and returns its result with the most bytes this thread held
/// beyond what it held before, at any moment while `f` ran.
pub fn measure<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let start = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(start));
    let out = f();
    let peak = PEAK.with(Cell::get);
    (out, (peak - start).max(0) as usize)
}

/// Whether [`TrackingAlloc`] is this program's allocator.
pub fn is_installed() -> bool {
    let (held, peak) = measure(|| std::hint::black_box(vec![0u8; 4096]));
    drop(held);
    peak >= 4096
}

#[cfg(test)]
mod tests {
    use super::*;

    #[global_allocator]
    static ALLOC: TrackingAlloc = TrackingAlloc;

    #[test]
    fn measures_the_peak_not_what_is_left() {
        assert!(is_installed());
        let ((), peak) = measure(|| {
            let big = std::hint::black_box(vec![1u8; 1 << 20]);
            drop(big);
            let small = std::hint::black_box(vec![1u8; 10]);
            drop(small);
        });
        assert!((1 << 20..(1 << 20) + 4096).contains(&peak), "{peak}");
        let (v, peak) = measure(|| {
            let mut v = Vec::new();
            for i in 0..1000u32 {
                v.push(i);
            }
            v
        });
        assert!(peak >= 4000, "{peak}");
        drop(v);
    }
}
