//! Naming a slot of a `hashbrown` table to the cache without reading the table.
//!
//! A look-up in a table of megabytes waits on memory twice: for the group
//! of control bytes where its probe begins, then for the entry they point
//! to. A worker that knows the hashes of the words it will look up some
//! words later can ask for both lines ahead, so the misses overlap. Asking
//! through the table's own API ([`HashTable::get_bucket`]) first reads the
//! slot's control byte to see whether it is full, and the branch on that
//! read waits for memory each time it guesses wrong — on web-like text, a
//! fifth of a lexicon-pass worker's hand-over time.
//!
//! So the addresses are computed instead, from where the control bytes
//! begin: `hashbrown` lays a table out as its entries in reverse order of
//! slot, then the control bytes, and starts a probe for `hash` at slot
//! `hash & (buckets - 1)`. That layout is not a promise of `hashbrown`'s,
//! but the addresses are only ever handed to
//! [`dupgram_prefetch::prefetch_at`], which reads nothing and cannot
//! fault: were the layout to change, the hints would name other lines and
//! only the time would differ. A test checks the addresses against the
//! table's own.

use hashbrown::HashTable;

/// Where `table`'s control bytes begin, from the address of the first entry
/// it holds; `None` for an empty table. Scans from slot 0 to the first full
/// one: meant to run once per allocation of the table, where a full slot
/// is a few slots away at the least load `hashbrown` keeps.
pub(crate) fn control_address<T>(table: &HashTable<T>) -> Option<usize> {
    if table.is_empty() {
        return None;
    }
    let (slot, entry) = (0..table.num_buckets()).find_map(|i| table.get_bucket(i).map(|e| (i, e)))?;
    Some((std::ptr::from_ref(entry) as usize).wrapping_add((slot + 1) * std::mem::size_of::<T>()))
}

/// The address of slot `slot`'s entry in a table of `T` whose control bytes
/// begin at `control`.
pub(crate) fn entry_address<T>(control: usize, slot: usize) -> usize {
    control.wrapping_sub((slot + 1) * std::mem::size_of::<T>())
}

/// Asks for the control byte and the entry of the slot where a probe for
/// `hash` begins, in a table of `T` with `buckets` slots (a power of two)
/// whose control bytes begin at `control`.
#[inline]
pub(crate) fn prefetch_slot<T>(control: usize, buckets: usize, hash: u64) {
    let slot = hash as usize & buckets.wrapping_sub(1);
    dupgram_prefetch::prefetch_at(control.wrapping_add(slot));
    dupgram_prefetch::prefetch_at(entry_address::<T>(control, slot));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The computed addresses are those of the slots `hashbrown` gives, at
    /// every size a table grows through.
    #[test]
    fn computed_addresses_are_the_table_slots() {
        let mut table: HashTable<(u64, [u8; 12])> = HashTable::new();
        assert_eq!(control_address(&table), None, "an empty table has no entry to find it from");
        for i in 0..20_000u64 {
            let hash = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            table.insert_unique(hash, (hash, [0; 12]), |e| e.0);
            if !(i + 1).is_power_of_two() && i % 997 != 0 {
                continue;
            }
            let control = control_address(&table).expect("a table with entries");
            for slot in 0..table.num_buckets() {
                if let Some(entry) = table.get_bucket(slot) {
                    assert_eq!(entry_address::<(u64, [u8; 12])>(control, slot), std::ptr::from_ref(entry) as usize);
                }
            }
            prefetch_slot::<(u64, [u8; 12])>(control, table.num_buckets(), hash);
        }
        assert_eq!(table.len(), 20_000);
    }
}
