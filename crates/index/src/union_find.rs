/// Disjoint sets of documents: the clusters of similar pairs.
#[derive(Debug, Clone)]
pub struct UnionFind {
    parent: Vec<u32>,
    size: Vec<u32>,
}

impl UnionFind {
    pub fn new(len: usize) -> Self {
        UnionFind { parent: (0..len as u32).collect(), size: vec![1; len] }
    }

    /// The representative of `x`'s set (path halving).
    pub fn find(&mut self, mut x: u32) -> u32 {
        while self.parent[x as usize] != x {
            let grand = self.parent[self.parent[x as usize] as usize];
            self.parent[x as usize] = grand;
            x = grand;
        }
        x
    }

    /// Joins the sets of `a` and `b` (union by size).
    pub fn union(&mut self, a: u32, b: u32) {
        let (mut a, mut b) = (self.find(a), self.find(b));
        if a == b {
            return;
        }
        if self.size[a as usize] < self.size[b as usize] {
            std::mem::swap(&mut a, &mut b);
        }
        self.parent[b as usize] = a;
        self.size[a as usize] += self.size[b as usize];
    }

    /// Sets of more than one member, each sorted, ordered by their smallest member.
    pub fn clusters(&mut self) -> Vec<Vec<u32>> {
        let len = self.parent.len() as u32;
        let mut by_root: std::collections::HashMap<u32, Vec<u32>> = std::collections::HashMap::new();
        for x in 0..len {
            let root = self.find(x);
            if self.size[root as usize] > 1 {
                by_root.entry(root).or_default().push(x);
            }
        }
        let mut clusters: Vec<Vec<u32>> = by_root.into_values().collect();
        clusters.sort_by_key(|c| c[0]);
        clusters
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components() {
        let mut u = UnionFind::new(8);
        u.union(5, 1);
        u.union(1, 3);
        u.union(6, 7);
        u.union(3, 5);
        assert_eq!(u.clusters(), vec![vec![1, 3, 5], vec![6, 7]]);
        assert_eq!(u.find(3), u.find(5));
        assert_ne!(u.find(0), u.find(1));
    }
}
