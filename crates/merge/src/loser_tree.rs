/// A tournament tree that remembers the loser of every match.
///
/// After the winner's source advances, only the matches on its path to the
/// root are replayed: ⌈log₂k⌉ comparisons, against losers already stored in
/// the nodes. Comparison is supplied per call, so the tree holds no borrow of
/// the sources it ranks.
#[derive(Debug, Clone)]
pub struct LoserTree {
    /// `nodes[0]` is the overall winner; `nodes[1..k]` hold the loser of each internal match.
    nodes: Vec<usize>,
    k: usize,
}

impl LoserTree {
    /// Builds the tree over sources `0..k`; `less(a, b)` says whether source `a` beats `b`.
    pub fn new(k: usize, mut less: impl FnMut(usize, usize) -> bool) -> Self {
        let mut tree = LoserTree { nodes: vec![usize::MAX; k.max(1)], k };
        if k == 0 {
            return tree;
        }
        // winners[i] for internal node i (1..k); leaves are k..2k (source = leaf - k).
        let mut winners = vec![0usize; 2 * k];
        for (source, slot) in winners[k..].iter_mut().enumerate() {
            *slot = source;
        }
        for node in (1..k).rev() {
            let (a, b) = (winners[2 * node], winners[2 * node + 1]);
            let (win, lose) = if less(a, b) { (a, b) } else { (b, a) };
            winners[node] = win;
            tree.nodes[node] = lose;
        }
        tree.nodes[0] = if k == 1 { 0 } else { winners[1] };
        tree
    }

    /// The source holding the smallest element.
    #[inline]
    pub fn winner(&self) -> usize {
        self.nodes[0]
    }

    /// Re-ranks after source `changed` (the previous winner) moved on.
    #[inline]
    pub fn replay(&mut self, changed: usize, mut less: impl FnMut(usize, usize) -> bool) {
        let mut winner = changed;
        let mut node = (changed + self.k) / 2;
        while node > 0 {
            let other = self.nodes[node];
            if less(other, winner) {
                self.nodes[node] = winner;
                winner = other;
            }
            node /= 2;
        }
        self.nodes[0] = winner;
    }
}
