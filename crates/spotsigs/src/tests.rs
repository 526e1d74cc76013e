use super::*;
use proptest::prelude::*;

const SLIDES_TEXT: &str = "At a rally to kick off a weeklong campaign for the South Carolina primary, Obama tried to \
    set the record straight from an attack circulating widely on the Internet that is designed to play into \
    prejudices against Muslims and fears of terrorism.";

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

fn streamed(params: &SpotParams, tokens: &[&str]) -> Vec<String> {
    let mut extractor = SpotExtractor::new(params.clone());
    let mut out = Vec::new();
    for t in tokens {
        extractor.push(t, &mut |s| out.push(s.to_owned()));
    }
    extractor.end_document();
    out
}

/// The slides' worked example (page 11): antecedents {a, an, the, is} (their
/// list says {a, the, is}, their result also holds `an:attack:circulating`;
/// their `g:weeklong:campaign` is `a:weeklong:campaign` garbled), d = 1, c = 2.
#[test]
fn the_slides_worked_example() {
    let params = SpotParams::slides(1, 2).unwrap();
    let tokens = words(SLIDES_TEXT);
    let tokens: Vec<&str> = tokens.iter().map(String::as_str).collect();
    let found: Vec<String> = signatures(&params, &tokens).into_iter().map(|s| s.text).collect();
    let expected = [
        "a:rally:kick",
        "a:weeklong:campaign",
        "the:south:carolina",
        "the:record:straight",
        "an:attack:circulating",
        "the:internet:designed",
        "is:designed:play",
    ];
    assert_eq!(found, expected);
    assert_eq!(streamed(&params, &tokens), expected);
    // The list the slides name, without `an`: the same less that one.
    let three = SpotParams::new(["a", "the", "is"], ENGLISH_STOPWORDS, 1, 2).unwrap();
    let found: Vec<String> = signatures(&three, &tokens).into_iter().map(|s| s.text).collect();
    let without_an: Vec<&str> = expected.iter().copied().filter(|s| !s.starts_with("an:")).collect();
    assert_eq!(found, without_an);
}

#[test]
fn positions_are_the_antecedent_and_the_chain_words() {
    let params = SpotParams::slides(1, 2).unwrap();
    let tokens = ["the", "internet", "that", "is", "designed", "to", "play"];
    let sigs = signatures(&params, &tokens);
    assert_eq!(sigs[0].positions, [0, 1, 4]);
    assert_eq!(sigs[1].positions, [3, 4, 6]);
}

#[test]
fn spot_distance_skips_tokens_between_chain_words() {
    let params = SpotParams::slides(2, 2).unwrap();
    // From `the` at 0: d = 2 lands on `b` (2), then on `d` (4).
    let tokens = ["the", "a1", "b", "c", "d", "e"];
    let sigs = signatures(&params, &tokens);
    assert_eq!(sigs.iter().map(|s| s.text.as_str()).collect::<Vec<_>>(), ["the:b:d"]);
    assert_eq!(streamed(&params, &tokens), ["the:b:d"]);
}

#[test]
fn a_chain_cut_by_the_end_is_no_signature() {
    let params = SpotParams::slides(1, 3).unwrap();
    assert!(signatures(&params, &["the", "cat", "sat"]).is_empty());
    assert!(streamed(&params, &["the", "cat", "sat"]).is_empty());
}

#[test]
fn words_with_separators_never_collide() {
    let params = SpotParams::new(["x"], Vec::<String>::new(), 1, 2).unwrap();
    let one = signatures(&params, &["x", "a:b", "c"]);
    let two = signatures(&params, &["x", "a", "b:c"]);
    assert_eq!(one[0].text, "x:a\\:b:c");
    assert_eq!(two[0].text, "x:a:b\\:c");
    let spaced = signatures(&params, &["x", "new york", "c"]);
    assert_eq!(spaced[0].text, "x:new\\u{20}york:c");
}

#[test]
fn tokens_are_compared_lower_cased() {
    let params = SpotParams::slides(1, 2).unwrap();
    assert_eq!(streamed(&params, &["The", "South", "Carolina"]), ["the:south:carolina"]);
}

#[test]
fn parameters_out_of_range_are_refused() {
    assert!(SpotParams::slides(0, 2).unwrap_err().0.contains("--spot-distance"));
    assert!(SpotParams::slides(1, 0).unwrap_err().0.contains("--chain"));
    assert!(SpotParams::slides(1, MAX_CHAIN + 1).is_err());
    assert!(SpotParams::new(Vec::<String>::new(), ENGLISH_STOPWORDS, 1, 2).is_err());
}

proptest! {
    /// The streaming extractor finds exactly the reference's signatures,
    /// however the stop words and antecedents fall.
    #[test]
    fn streaming_equals_the_reference(
        tokens in prop::collection::vec(prop::sample::select(vec!["a", "the", "is", "to", "of", "x", "y", "z", "w"]), 0..80),
        d in 1usize..4,
        c in 1usize..4,
    ) {
        let params = SpotParams::new(["a", "the", "is"], ["to", "of"], d, c).unwrap();
        let mut reference: Vec<String> = signatures(&params, &tokens).into_iter().map(|s| s.text).collect();
        let mut found = streamed(&params, &tokens);
        reference.sort();
        found.sort();
        prop_assert_eq!(found, reference);
    }
}
