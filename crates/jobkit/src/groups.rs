//! Groups of identical documents, as `dupgram pairs` reports them.
//!
//! Each document maps to its group's first document (its representative;
//! itself when alone). Only representatives are paired with other
//! documents; a group is reported as pairs of its first document with the
//! others, at most `max_group_pairs` of them. With `expand_groups` every
//! member gets its first document's pairs (copies have the same tokens, so
//! the same scores) and every pair within the group is listed — except in a
//! *capped* group, one of more than `max_group_pairs + 1` documents, which
//! is reported as without expansion.

/// The groups, members in document order and the representative first,
/// in one flat list: 4 bytes per grouped document, whatever the number of
/// groups.
#[derive(Debug, Default)]
pub struct Groups {
    members: Vec<u32>,
    /// Where each group starts in `members`, and one more for the end.
    starts: Vec<u32>,
}

impl Groups {
    /// The groups of `rep_of` (each document's representative, the lowest-numbered member).
    pub fn new(rep_of: &[u32]) -> Self {
        // (first, member) of every member but the first, which opens its group below.
        let mut pairs: Vec<(u32, u32)> = rep_of
            .iter()
            .enumerate()
            .filter(|&(doc, &rep)| rep != doc as u32)
            .map(|(doc, &rep)| (rep, doc as u32))
            .collect();
        pairs.sort_unstable();
        let mut groups = Groups { members: Vec::new(), starts: Vec::new() };
        for (i, &(rep, doc)) in pairs.iter().enumerate() {
            if i == 0 || pairs[i - 1].0 != rep {
                groups.starts.push(groups.members.len() as u32);
                groups.members.push(rep);
            }
            groups.members.push(doc);
        }
        groups.starts.push(groups.members.len() as u32);
        groups
    }

    /// Each group's members, representative first, groups in order of their first.
    pub fn iter(&self) -> impl Iterator<Item = &[u32]> {
        self.starts.windows(2).map(|w| &self.members[w[0] as usize..w[1] as usize])
    }

    /// The number of groups.
    pub fn len(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The members of the group whose first document is `rep`, if it has one.
    pub fn of(&self, rep: u32) -> Option<&[u32]> {
        let groups = &self.starts[..self.len()];
        let i = groups.partition_point(|&s| self.members[s as usize] < rep);
        let start = *groups.get(i)? as usize;
        (self.members[start] == rep).then(|| &self.members[start..self.starts[i + 1] as usize])
    }
}

/// Which groups `expand_groups` expands.
#[derive(Debug, Clone, Copy)]
pub struct Expansion {
    pub expand: bool,
    pub max_group_pairs: u64,
}

impl Expansion {
    /// A group too large to expand (or, without expansion, to report whole).
    pub fn capped(&self, group: &[u32]) -> bool {
        group.len() as u64 > self.max_group_pairs.saturating_add(1)
    }

    /// The documents that get representative `rep`'s pairs: its group when
    /// expanded, else none but itself (`None`).
    pub fn copies<'g>(&self, groups: &'g Groups, rep: u32) -> Option<&'g [u32]> {
        if !self.expand {
            return None;
        }
        groups.of(rep).filter(|g| !self.capped(g))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_found_by_their_first_and_capped_by_size() {
        // Documents 1, 4 and 6 are copies of 0; 5 of 3; 2 and 7 alone.
        let rep_of = [0, 0, 2, 3, 0, 3, 0, 7];
        let groups = Groups::new(&rep_of);
        assert_eq!(groups.len(), 2);
        assert_eq!(groups.iter().collect::<Vec<_>>(), [&[0, 1, 4, 6][..], &[3, 5][..]]);
        assert_eq!(groups.of(0), Some(&[0, 1, 4, 6][..]));
        assert_eq!(groups.of(3), Some(&[3, 5][..]));
        for alone in [1, 2, 5, 7, 9] {
            assert_eq!(groups.of(alone), None);
        }
        assert!(Groups::new(&[0, 1, 2]).is_empty());
        assert_eq!(Groups::new(&[]).of(0), None);
        let expansion = Expansion { expand: true, max_group_pairs: 2 };
        assert_eq!(expansion.copies(&groups, 0), None, "4 documents: capped at 2 pairs");
        assert_eq!(expansion.copies(&groups, 3), Some(&[3, 5][..]));
        assert_eq!(expansion.copies(&groups, 2), None);
        let expansion = Expansion { expand: true, max_group_pairs: 3 };
        assert_eq!(expansion.copies(&groups, 0), Some(&[0, 1, 4, 6][..]));
        let off = Expansion { expand: false, max_group_pairs: 3 };
        assert_eq!(off.copies(&groups, 0), None);
    }
}
