//! A hint to the cache: start loading the line that holds a value.
//!
//! Four stages spend more time waiting on memory than computing: the sieve,
//! whose counters are spread at random over hundreds of megabytes; the
//! index's document-major blocks, where each occurrence is written to a
//! document's slot far from the last one; the lexicon pass, whose
//! workers look each word up in a cache of megabytes and the words that
//! cache misses in a table of hundreds; and the passes that read text
//! with a lexicon in memory, a look-up a token. All hide the misses the
//! same way: they name the lines they will touch a few steps ahead, so
//! that the misses overlap instead of following one another — by a
//! reference to the value ([`prefetch`]), or by an address computed from
//! a table's layout ([`prefetch_at`]), where finding a reference would
//! itself wait on memory.
//!
//! The hint is the one `unsafe` operation those stages share. It lives here,
//! below them, so that it is written — and argued sound — once, rather than
//! once per stage; the stages above it stay free of `unsafe` for it.
//!
//! On other targets than x86-64 it does nothing: results never depend on it,
//! only the time does.

/// Starts loading the cache line that holds the start of `value` into every
/// level of the cache, and returns at once.
///
/// It changes no memory and cannot fail; it is only worth its cost when the
/// value is touched some hundreds of cycles later, and likely not cached.
#[inline]
pub fn prefetch<T: ?Sized>(value: &T) {
    prefetch_at(std::ptr::from_ref(value).cast::<u8>() as usize);
}

/// Starts loading the cache line at `address`, which need not hold a
/// value: a place computed from a layout a library does not promise (the
/// lexicon's tables, see `table_hint` in `dupgram-lexicon`), where a
/// reference would first have to read memory to prove the value is there.
///
/// Like [`prefetch`], it changes no memory, cannot fail, and reads nothing
/// into the program: a wrong or stale address costs time, never a result.
#[inline]
pub fn prefetch_at(address: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` needs SSE, which every x86-64 processor has
    // (it is in the target's baseline features, so no runtime check is
    // needed). A prefetch is a hint: it neither reads into the program nor
    // writes, and cannot fault on any address, mapped or not (Intel SDM,
    // PREFETCHh: "does not cause a fault"), so no address, however
    // computed, makes it unsound.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(address as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}

#[cfg(test)]
mod tests {
    use super::{prefetch, prefetch_at};

    #[test]
    fn prefetching_changes_nothing() {
        let words: Vec<u64> = (0..1u64 << 16).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).collect();
        let before = words.clone();
        for i in (0..words.len()).rev().step_by(97) {
            prefetch(&words[i]);
        }
        // Unsized values and values of no size are hinted too, and are no different.
        prefetch(&words[..]);
        prefetch("text");
        prefetch(&());
        prefetch(&[0u8; 0]);
        assert_eq!(words, before);
    }

    #[test]
    fn prefetching_any_address_changes_nothing_and_cannot_fault() {
        let words: Vec<u64> = (0..1u64 << 12).collect();
        let before = words.clone();
        // Addresses in the vector, past it, unmapped, and the extremes.
        let base = words.as_ptr() as usize;
        for address in [base, base + 8 * 4000, base.wrapping_add(1 << 40), 0, 8, usize::MAX, usize::MAX - 4095] {
            prefetch_at(address);
        }
        assert_eq!(words, before);
    }
}
