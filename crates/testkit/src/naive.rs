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

/// Scores of one pair, as the brute force computes them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NaiveScores {
    pub sscr: f64,
    pub ssr: f64,
    pub contain_a_in_b: f64,
    pub contain_b_in_a: f64,
    pub cover_a: f64,
    pub cover_b: f64,
    pub shared: u32,
}

/// Options of [`naive_pairs`], mirroring `dupgram pairs`.
#[derive(Debug, Clone)]
pub struct NaivePairOptions {
    pub ngrams: NaiveOptions,
    pub max_df: usize,
    pub max_group_pairs: usize,
    pub min_sscr: f64,
    pub min_ssr: f64,
    pub min_cover: f64,
}

/// Every pair `dupgram pairs` should report, by brute force over all pairs:
/// keyed by document index (a < b).
pub fn naive_pairs(docs: &[String], o: &NaivePairOptions) -> BTreeMap<(usize, usize), NaiveScores> {
    scored_pairs(docs, o, true)
}

/// Every pair of documents sharing an n-gram, scored, with no grouping of
/// identical documents: what `dupgram pairs --expand-groups` should report
/// when no group is capped (`--max-df` counts documents here, groups there).
pub fn naive_every_pair(docs: &[String], o: &NaivePairOptions) -> BTreeMap<(usize, usize), NaiveScores> {
    scored_pairs(docs, o, false)
}

fn scored_pairs(docs: &[String], o: &NaivePairOptions, grouped: bool) -> BTreeMap<(usize, usize), NaiveScores> {
    let n = o.ngrams.n;
    let tokens: Vec<Vec<String>> = docs.iter().map(|d| kept_tokens(d, &o.ngrams, docs)).collect();
    let grams: Vec<Vec<Vec<&str>>> =
        tokens.iter().map(|t| t.windows(n).map(|w| w.iter().map(String::as_str).collect()).collect()).collect();
    let sets: Vec<HashSet<&Vec<&str>>> = grams.iter().map(|g| g.iter().collect()).collect();
    // Identical documents (at least n tokens) group under the first.
    let mut rep: Vec<usize> = (0..docs.len()).collect();
    for i in 0..docs.len() {
        if grouped
            && tokens[i].len() >= n
            && let Some(first) = (0..i).find(|&j| rep[j] == j && tokens[j] == tokens[i])
        {
            rep[i] = first;
        }
    }
    // Document frequency over representatives.
    let mut df: HashMap<&Vec<&str>, HashSet<usize>> = HashMap::new();
    for (d, set) in sets.iter().enumerate() {
        for g in set {
            df.entry(g).or_default().insert(rep[d]);
        }
    }
    let mut out = BTreeMap::new();
    let reps: Vec<usize> = (0..docs.len()).filter(|&d| rep[d] == d).collect();
    for (x, &a) in reps.iter().enumerate() {
        for &b in &reps[x + 1..] {
            let shared: HashSet<&Vec<&str>> = sets[a].intersection(&sets[b]).copied().collect();
            if !shared.iter().any(|g| df[g].len() <= o.max_df) {
                continue;
            }
            let cover = |d: usize| {
                let mut marked = vec![false; tokens[d].len()];
                for (p, g) in grams[d].iter().enumerate() {
                    if shared.contains(g) {
                        marked[p..p + n].iter_mut().for_each(|m| *m = true);
                    }
                }
                marked.iter().filter(|&&m| m).count()
            };
            let (ca, cb) = (cover(a), cover(b));
            let (ta, tb) = (tokens[a].len(), tokens[b].len());
            let (sa, sb, s) = (sets[a].len(), sets[b].len(), shared.len());
            let scores = NaiveScores {
                sscr: (ca + cb) as f64 / (ta + tb) as f64,
                ssr: s as f64 / (sa + sb - s) as f64,
                contain_a_in_b: s as f64 / sa as f64,
                contain_b_in_a: s as f64 / sb as f64,
                cover_a: ca as f64 / ta as f64,
                cover_b: cb as f64 / tb as f64,
                shared: s as u32,
            };
            if scores.sscr >= o.min_sscr && scores.ssr >= o.min_ssr && scores.cover_a.max(scores.cover_b) >= o.min_cover
            {
                out.insert((a, b), scores);
            }
        }
    }
    for &r in &reps {
        let members: Vec<usize> = (0..docs.len()).filter(|&d| d != r && rep[d] == r).take(o.max_group_pairs).collect();
        for m in members {
            let s = sets[r].len() as u32;
            out.insert(
                (r, m),
                NaiveScores {
                    sscr: 1.0,
                    ssr: 1.0,
                    contain_a_in_b: 1.0,
                    contain_b_in_a: 1.0,
                    cover_a: 1.0,
                    cover_b: 1.0,
                    shared: s,
                },
            );
        }
    }
    out
}

/// A document's tokens with stop words (listed and most frequent) removed.
fn kept_tokens(doc: &str, o: &NaiveOptions, all: &[String]) -> Vec<String> {
    let mut stop: HashSet<String> = o.stopwords.iter().cloned().collect();
    if o.stop_top > 0 {
        let mut freq: HashMap<String, u64> = HashMap::new();
        for d in all {
            for w in tokenize(o.norm, d).into_iter().filter(|w| !stop.contains(w)) {
                *freq.entry(w).or_default() += 1;
            }
        }
        let mut ranked: Vec<(String, u64)> = freq.into_iter().collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        stop.extend(ranked.into_iter().take(o.stop_top).map(|(w, _)| w));
    }
    tokenize(o.norm, doc).into_iter().filter(|w| !stop.contains(w)).collect()
}
