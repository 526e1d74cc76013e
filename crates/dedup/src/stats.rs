//! Benko's length tables: what deduplication removed, by unit length.

use serde::{Deserialize, Serialize};

/// Units and tokens removed and kept for one length group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LengthRow {
    /// Shortest length in the group: 0, 1, 2, 4, 8, …
    pub length: u64,
    pub units_removed: u64,
    pub units_kept: u64,
    pub tokens_removed: u64,
    pub tokens_kept: u64,
}

/// Units grouped by length in powers of two (1, 2–3, 4–7, …; empty units apart).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LengthTable {
    pub rows: Vec<LengthRow>,
}

impl LengthTable {
    pub fn add(&mut self, tokens: u32, removed: bool) {
        let group = if tokens == 0 { 0 } else { 1 + tokens.ilog2() as usize };
        while self.rows.len() <= group {
            let g = self.rows.len();
            self.rows.push(LengthRow { length: if g == 0 { 0 } else { 1 << (g - 1) }, ..LengthRow::default() });
        }
        let row = &mut self.rows[group];
        if removed {
            row.units_removed += 1;
            row.tokens_removed += u64::from(tokens);
        } else {
            row.units_kept += 1;
            row.tokens_kept += u64::from(tokens);
        }
    }

    /// The sum of all rows (`length` is meaningless there).
    pub fn total(&self) -> LengthRow {
        self.rows.iter().fold(LengthRow::default(), |t, r| LengthRow {
            length: 0,
            units_removed: t.units_removed + r.units_removed,
            units_kept: t.units_kept + r.units_kept,
            tokens_removed: t.tokens_removed + r.tokens_removed,
            tokens_kept: t.tokens_kept + r.tokens_kept,
        })
    }

    /// Rows that hold anything.
    pub fn used_rows(&self) -> impl Iterator<Item = &LengthRow> {
        self.rows.iter().filter(|r| r.units_removed + r.units_kept > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_powers_of_two() {
        let mut t = LengthTable::default();
        for (len, removed) in [(1, true), (2, false), (3, true), (4, false), (7, false), (8, true), (0, true)] {
            t.add(len, removed);
        }
        let rows: Vec<(u64, u64, u64, u64, u64)> =
            t.used_rows().map(|r| (r.length, r.units_removed, r.units_kept, r.tokens_removed, r.tokens_kept)).collect();
        assert_eq!(rows, vec![(0, 1, 0, 0, 0), (1, 1, 0, 1, 0), (2, 1, 1, 3, 2), (4, 0, 2, 0, 11), (8, 1, 0, 8, 0)]);
        assert_eq!(t.total().units_removed, 4);
    }
}
