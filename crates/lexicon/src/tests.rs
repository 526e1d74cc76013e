use super::*;
use std::path::Path;

fn build(texts: &[&str], stop: &[&str], stop_top: usize) -> Lexicon {
    let mut b = LexiconBuilder::new(stop.iter().map(|s| s.to_string()));
    for t in texts {
        for w in tokenize(Normalization::default(), t) {
            b.add(&w);
        }
    }
    b.finish(Normalization::default(), stop_top)
}

#[test]
fn ids_follow_frequency_then_bytes() {
    let lex = build(&["b a c a b a d"], &[], 0);
    let words: Vec<&str> = (0..lex.len() as u32).map(|i| lex.word(i)).collect();
    assert_eq!(words, ["a", "b", "c", "d"]);
    assert_eq!(lex.repeated_len(), 2);
    assert_eq!(lex.lookup("b"), Lookup::Id(1));
    assert_eq!(lex.lookup("zzz"), Lookup::Unknown);
}

#[test]
fn stop_words_and_stop_top() {
    let lex = build(&["the cat and the dog and the end"], &["and"], 1);
    assert_eq!(lex.stopwords(), ["and", "the"]);
    assert_eq!(lex.lookup("the"), Lookup::Stop);
    assert_eq!(lex.lookup("and"), Lookup::Stop);
    assert!(matches!(lex.lookup("cat"), Lookup::Id(_)));
    let mut b = LexiconBuilder::new(["and".to_string()]);
    assert_eq!(b.add("and"), Counted::Stop);
    assert_eq!(b.add("cat"), Counted::Word(word_hash(b"cat")));
}

#[test]
fn absorb_equals_one_builder() {
    let mut a = LexiconBuilder::new([]);
    let mut b = LexiconBuilder::new([]);
    let mut one = LexiconBuilder::new([]);
    for (i, w) in "x y z x y x w v x".split(' ').enumerate() {
        if i % 2 == 0 {
            a.add(w)
        } else {
            b.add(w)
        };
        one.add(w);
    }
    a.absorb(b);
    let (l1, l2) = (a.finish(Normalization::default(), 0), one.finish(Normalization::default(), 0));
    assert_eq!(l1.identity(), l2.identity());
    assert_eq!(l1.len(), 5);
}

#[test]
fn counted_parts_equal_one_builder() {
    // Two parts counted apart, saved, and added back word by word number
    // the words exactly as one builder over the whole text does.
    let (first, second) = ("the cat sat on the mat", "the dog sat on the log and the cat");
    let whole = build(&[first, second], &[], 1);
    let mut merged = LexiconBuilder::new([]);
    for part in [first, second] {
        let lex = build(&[part], &[], 0);
        for id in 0..lex.len() as u32 {
            merged.add_counted(lex.word_bytes(id), lex.count(id));
        }
    }
    assert_eq!(merged.tokens(), 15);
    let merged = merged.finish(Normalization::default(), 1);
    assert_eq!(merged.identity(), whole.identity());
    assert_eq!(merged.stopwords(), ["the"]);
}

#[test]
fn save_load_round_trip_and_scopes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lex");
    let lex = build(&["one two two three three three Straße", "four"], &["two"], 0);
    lex.save(&path).unwrap();
    let all = Lexicon::load(&path, Scope::All).unwrap();
    assert_eq!(all.identity(), lex.identity());
    assert_eq!(all.len(), lex.len());
    for id in 0..lex.len() as u32 {
        assert_eq!(all.word(id), lex.word(id));
        assert_eq!(all.count(id), lex.count(id));
    }
    assert_eq!(all.stopwords(), ["two"]);
    let rep = Lexicon::load(&path, Scope::Repeated).unwrap();
    assert_eq!(rep.len(), 1);
    assert_eq!(rep.total_words(), lex.len() as u64);
    assert_eq!(rep.lookup("three"), Lookup::Id(0));
    assert_eq!(rep.lookup("one"), Lookup::Unknown);
    assert_eq!(rep.lookup("two"), Lookup::Stop);
    assert_eq!(rep.identity(), lex.identity());
    // No temporary files are left beside it.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn damaged_lexicons_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lex");
    build(&["alpha beta beta gamma gamma gamma"], &[], 0).save(&path).unwrap();
    let good = std::fs::read(&path).unwrap();
    for cut in [0, 5, 16, good.len() / 2, good.len() - 1] {
        std::fs::write(&path, &good[..cut]).unwrap();
        let err = Lexicon::load(&path, Scope::All).unwrap_err().to_string();
        assert!(err.starts_with(&path.display().to_string()), "{err}");
    }
    let mut flipped = good.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    std::fs::write(&path, &flipped).unwrap();
    assert!(Lexicon::load(&path, Scope::All).unwrap_err().to_string().contains("checksum"));
    assert!(Lexicon::load(Path::new("/nonexistent/lex"), Scope::All).is_err());
}

#[test]
fn builder_writes_the_same_file_as_the_lexicon() {
    let dir = tempfile::tempdir().unwrap();
    let texts = ["the quick brown fox jumps over the lazy dog the end", "quick quick fox"];
    let lex = build(&texts, &["lazy"], 1);
    lex.save(&dir.path().join("a")).unwrap();
    let mut b = LexiconBuilder::new(["lazy".to_string()]);
    for t in texts {
        for w in tokenize(Normalization::default(), t) {
            b.add(&w);
        }
    }
    let mut bytes = Vec::new();
    let identity = b.write_to(Normalization::default(), 1, &mut bytes).unwrap();
    assert_eq!(identity, lex.identity());
    assert_eq!(bytes, std::fs::read(dir.path().join("a")).unwrap());
}

#[test]
fn updated_lexicons_keep_ids_and_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let base = build(&["b a c a b a d"], &["the"], 0);
    let mut day = LexiconBuilder::new(["the".to_string()]);
    for w in "d d e f f f the a".split(' ') {
        day.add(w);
    }
    let updated = base.updated(&day).unwrap();
    let words: Vec<&str> = (0..updated.len() as u32).map(|i| updated.word(i)).collect();
    assert_eq!(words, ["a", "b", "c", "d", "f", "e"], "old IDs kept, new words after them");
    let counts: Vec<u64> = (0..updated.len() as u32).map(|i| updated.count(i)).collect();
    assert_eq!(counts, [4, 2, 1, 3, 3, 1]);
    assert!(updated.has_fixed_ids());
    assert_eq!(updated.repeated_len(), 4);
    assert_eq!(updated.lookup("the"), Lookup::Stop);

    let path = dir.path().join("u.lex");
    updated.save(&path).unwrap();
    let head = std::fs::read(&path).unwrap();
    assert_eq!(u16::from_le_bytes([head[8], head[9]]), 2, "fixed IDs need format version 2");
    // Scope::Repeated cannot drop words without renumbering: all are kept.
    let loaded = Lexicon::load(&path, Scope::Repeated).unwrap();
    assert_eq!(loaded.identity(), updated.identity());
    assert_eq!(loaded.len(), 6);
    assert_eq!(loaded.lookup("e"), Lookup::Id(5));
    // A lexicon loaded in part cannot be updated: its rare words would come back as new.
    let base_path = dir.path().join("b.lex");
    base.save(&base_path).unwrap();
    let head = std::fs::read(&base_path).unwrap();
    assert_eq!(u16::from_le_bytes([head[8], head[9]]), 1, "frequency-ordered lexicons stay version 1");
    assert!(Lexicon::load(&base_path, Scope::Repeated).unwrap().updated(&day).is_none());
}

#[test]
fn renumbering_maps_first_seen_ids_to_the_written_lexicon() {
    let text = "b a c a b a zz stop d d d only once top top top top top";
    let mut builder = LexiconBuilder::new(["stop".to_string()]);
    let mut first_seen = Vec::new();
    for w in text.split_whitespace() {
        if builder.is_stopword(w) {
            builder.add_stop_tokens(1);
            continue;
        }
        let Seen::Word(id) = builder.add_first_seen(w.as_bytes(), word_hash(w.as_bytes())) else {
            panic!("{w}: an unfrozen builder takes every word that is not a stop word")
        };
        first_seen.push((w, id));
    }
    // First-seen IDs count up as words first appear.
    assert_eq!(&first_seen[..4], &[("b", 0), ("a", 1), ("c", 2), ("a", 1)]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("words.lex");
    let mut file = Vec::new();
    let (identity, renumbering) = builder.write_renumbered(Normalization::default(), 1, &mut file).unwrap();
    std::fs::write(&path, &file).unwrap();
    let lex = Lexicon::load(&path, Scope::Repeated).unwrap();
    assert_eq!(lex.identity(), identity);
    assert_eq!(renumbering.ids.len(), renumbering.hashes.len());
    for (word, id) in first_seen {
        let mapped = renumbering.ids[id as usize];
        match lex.lookup(word) {
            Lookup::Id(want) => {
                assert_eq!(mapped, want, "{word}");
                assert_eq!(renumbering.hashes[id as usize], word_hash(word.as_bytes()));
            }
            // "top", the most frequent, joined the stop list (stop_top 1).
            Lookup::Stop => assert_eq!((word, mapped), ("top", Renumbering::STOP)),
            Lookup::Unknown => assert_eq!(mapped, Renumbering::BREAK, "{word} was seen once"),
        }
    }
    let mut dropped = lex;
    dropped.drop_lookup();
    assert_eq!(dropped.lookup("a"), Lookup::Unknown);
    assert_eq!(dropped.word(0), "a");
}

#[test]
fn prefetching_the_table_changes_nothing() {
    let mut b = LexiconBuilder::new([]);
    // An empty table has no bucket to hint at.
    b.prefetch(word_hash(b"cat"));
    let words: Vec<String> = (0..5000).map(|i| format!("word{i}")).collect();
    for w in &words {
        b.prefetch(word_hash(w.as_bytes()));
        b.add(w);
    }
    // Hints at present and absent words alike, on a table of many buckets.
    for w in words.iter().chain([&"absent".to_string()]) {
        b.prefetch(word_hash(w.as_bytes()));
    }
    assert_eq!(b.len(), words.len());
    let lex = b.finish(Normalization::default(), 0);
    assert!(words.iter().all(|w| matches!(lex.lookup(w), Lookup::Id(_))));
}

proptest::proptest! {
    /// The ranking is `rank_order`'s, whatever the words share: prefixes
    /// shorter and longer than four bytes, NUL bytes, equal counts.
    #[test]
    fn the_ranking_is_rank_order(words in proptest::collection::vec(("[ab\u{0}]{1,6}", 1u8..4), 1..200)) {
        let mut builder = LexiconBuilder::new([]);
        for (word, times) in &words {
            for _ in 0..*times {
                builder.add(word);
            }
        }
        let (ranked, _) = builder.ranking();
        for pair in ranked.windows(2) {
            proptest::prop_assert!(rank_order(pair[0].count, pair[0].bytes, pair[1].count, pair[1].bytes).is_lt());
            proptest::prop_assert_eq!(pair[0].prefix, order_prefix(pair[0].bytes));
        }
    }
}

#[test]
fn order_prefixes_order_words() {
    let words: [&[u8]; 7] = [b"", b"\0", b"a", b"a\0", b"a\0\0\0\0", b"ab", b"abcde"];
    for a in words {
        for b in words {
            let (pa, pb) = (order_prefix(a), order_prefix(b));
            if pa != pb {
                assert_eq!(pa.cmp(&pb), a.cmp(b), "{a:?} {b:?}");
            }
        }
    }
}

/// A lexicon file is read back by every pass after the lexicon pass, at
/// any budget: its zstd window stays [`crate::lexicon::LEXICON_WINDOW_LOG`] bits, so a
/// reader that accepts no more decodes it, from a builder and from a lexicon.
#[test]
fn a_lexicon_file_is_read_within_a_small_window() {
    let builder = || {
        let mut b = LexiconBuilder::new(Vec::<String>::new());
        let mut x = 7u64;
        for i in 0..60_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            b.add_counted(format!("w{:x}{i}", x >> 40).as_bytes(), 1 + x % 5);
        }
        b
    };
    let mut saved = Vec::new();
    builder().finish(Normalization::default(), 0).write_to(&mut saved).unwrap();
    let mut written = Vec::new();
    builder().write_to(Normalization::default(), 0, &mut written).unwrap();
    assert_eq!(saved, written, "both writers make one file");
    // The magic and version (16 bytes), one zstd frame, the identity (8 bytes).
    let frame = &written[16..written.len() - 8];
    assert!(frame.len() > 2 << crate::lexicon::LEXICON_WINDOW_LOG, "a body longer than the window: {}", frame.len());
    let mut decoder = zstd::Decoder::new(frame).unwrap();
    decoder.window_log_max(crate::lexicon::LEXICON_WINDOW_LOG).unwrap();
    let mut body = Vec::new();
    std::io::Read::read_to_end(&mut decoder, &mut body).unwrap();
    assert!(body.len() > frame.len());
}
