//! The reference: n-grams counted the obvious way, all in memory.

use std::collections::{BTreeMap, HashMap, HashSet};

use dupgram_lexicon::{Normalization, tokenize};

/// The options of [`naive_ngrams`], mirroring the engine's.
#[derive(Debug, Clone)]
pub struct NaiveOptions {
    pub norm: Normalization,
    pub stopwords: Vec<String>,
    pub stop_top: usize,
    pub n: usize,
    pub min_count: u64,
}

/// Every n-gram of `docs` occurring at least `min_count` times, as
/// "w1 w2 … wn" → count, computed with nothing but a hash map.
pub fn naive_ngrams(docs: &[String], o: &NaiveOptions) -> BTreeMap<String, u64> {
    let tokenized: Vec<Vec<String>> = docs.iter().map(|d| tokenize(o.norm, d)).collect();
    let mut stop: HashSet<String> = o.stopwords.iter().cloned().collect();
    if o.stop_top > 0 {
        let mut freq: HashMap<&str, u64> = HashMap::new();
        for w in tokenized.iter().flatten().filter(|w| !stop.contains(*w)) {
            *freq.entry(w).or_default() += 1;
        }
        let mut ranked: Vec<(&str, u64)> = freq.into_iter().collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let top: Vec<String> = ranked.iter().take(o.stop_top).map(|(w, _)| w.to_string()).collect();
        stop.extend(top);
    }
    let mut counts: HashMap<Vec<&str>, u64> = HashMap::new();
    for doc in &tokenized {
        let kept: Vec<&str> = doc.iter().map(String::as_str).filter(|w| !stop.contains(*w)).collect();
        for gram in kept.windows(o.n) {
            *counts.entry(gram.to_vec()).or_default() += 1;
        }
    }
    counts.into_iter().filter(|(_, c)| *c >= o.min_count).map(|(g, c)| (g.join(" "), c)).collect()
}
