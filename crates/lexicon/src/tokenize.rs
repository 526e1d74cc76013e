//! Turning text into normalised tokens.
//!
//! The default mode follows Kupietz (2005, §2.1) with one deliberate change:
//! letters of every script are kept (Kupietz deleted non-ASCII characters,
//! which merges unrelated words in any language but English). A word is a
//! maximal run of letters, digits and combining marks; everything else —
//! whitespace, punctuation, symbols — is a boundary. Words are case-folded
//! with full Unicode folding (`Straße` → `strasse`), with an ASCII fast path
//! because most web text is ASCII and full folding is twice as slow.
//!
//! [`Tokenizer`] is a state machine fed arbitrary pieces of a document, so a
//! reader may hand over a document of any size in buffers of any size; only
//! the current token is held.

use caseless::Caseless;
use unicode_general_category::{GeneralCategory, get_general_category};
use xxhash_rust::xxh3::Xxh3;

/// How text is split into tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenMode {
    /// Unicode words, case-folded (the default).
    Words,
    /// Whitespace-separated tokens, untouched.
    Raw,
    /// One token per line, untouched (vertical files): a line's first
    /// column, the text before its first TAB.
    Lines,
}

/// Everything that decides which tokens a text yields. Stored in the lexicon
/// file, so a later stage tokenises exactly as the first did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Normalization {
    pub mode: TokenMode,
    /// Replace every number (a digit run, possibly with `.`/`,` between digits) by [`NUMBER_TOKEN`].
    pub numbers_as_token: bool,
    /// Drop `<…>` tags and decode character entities before tokenising.
    pub strip_markup: bool,
}

impl Default for Normalization {
    fn default() -> Self {
        Normalization { mode: TokenMode::Words, numbers_as_token: false, strip_markup: false }
    }
}

impl Normalization {
    pub fn raw() -> Self {
        Normalization { mode: TokenMode::Raw, ..Normalization::default() }
    }

    pub fn lines() -> Self {
        Normalization { mode: TokenMode::Lines, ..Normalization::default() }
    }

    /// Number and markup options only make sense when dupgram splits words itself.
    pub fn validate(&self) -> Result<(), &'static str> {
        if self.mode != TokenMode::Words && (self.numbers_as_token || self.strip_markup) {
            return Err(
                "--numbers-as-token and --strip-markup apply to the default word tokenizer only, not to raw or vertical tokens",
            );
        }
        Ok(())
    }
}

/// The token every number becomes under `numbers_as_token`. It cannot collide
/// with a word, since `#` is a boundary for the word tokenizer.
pub const NUMBER_TOKEN: &str = "#";

/// Tokens longer than this many bytes keep their first bytes and get a hash
/// of the whole token appended (see [`Tokenizer`]); it bounds memory on
/// garbage input such as a megabyte without a space.
pub const MAX_TOKEN_BYTES: usize = 1024;
const LONG_TOKEN_PREFIX: usize = MAX_TOKEN_BYTES - 24;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Empty,
    Word,
    Number,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Markup {
    Text,
    /// Just saw `<`.
    Open,
    Tag,
    /// Inside `&…;`, name collected in `entity`.
    Entity,
}

/// Splits and normalises the text of one document at a time.
///
/// A token longer than [`MAX_TOKEN_BYTES`] is emitted as its first bytes, `…`
/// and the 64-bit XXH3 hash of the whole token in hex. Two different long
/// tokens become one only if they share those first bytes *and* their hashes
/// collide (probability 2⁻⁶⁴ per pair); [`Tokenizer::long_tokens`] counts them.
pub struct Tokenizer {
    norm: Normalization,
    word: String,
    kind: Kind,
    /// A `.` or `,` right after digits: the number goes on if a digit follows.
    number_separator: bool,
    markup: Markup,
    entity: String,
    overflow: Option<Box<Xxh3>>,
    long_tokens: u64,
    /// See [`Tokenizer::taken`].
    taken: u64,
    /// Lines mode, past a line's first TAB: its other columns, up to the
    /// next `\n`, are no token.
    later_columns: bool,
    /// Lines mode: the last piece ended in a `\r`, kept out of the token
    /// until the next piece shows whether it ends the line.
    held_cr: bool,
}

impl Tokenizer {
    pub fn new(norm: Normalization) -> Self {
        Tokenizer {
            norm,
            word: String::with_capacity(64),
            kind: Kind::Empty,
            number_separator: false,
            markup: Markup::Text,
            entity: String::new(),
            overflow: None,
            long_tokens: 0,
            taken: 0,
            later_columns: false,
            held_cr: false,
        }
    }

    pub fn normalization(&self) -> Normalization {
        self.norm
    }

    /// Tokens cut to [`MAX_TOKEN_BYTES`] so far.
    pub fn long_tokens(&self) -> u64 {
        self.long_tokens
    }

    /// Whether a token is being built.
    pub fn in_token(&self) -> bool {
        self.kind != Kind::Empty
    }

    /// Whether a character entity (`&…;`, with `strip_markup`) is being read.
    pub fn in_entity(&self) -> bool {
        self.markup == Markup::Entity
    }

    /// A counter that grows whenever text is taken into a token. With
    /// [`Tokenizer::in_token`] it lets a caller that feeds one character at a
    /// time find the characters each token was made of.
    pub fn taken(&self) -> u64 {
        self.taken
    }

    /// Tokenises one more piece of the current document, calling `emit` per token.
    pub fn feed(&mut self, text: &str, emit: &mut impl FnMut(&str)) {
        match self.norm.mode {
            TokenMode::Lines => self.feed_lines(text, emit),
            TokenMode::Raw => self.feed_raw(text, emit),
            TokenMode::Words => self.feed_words(text, emit),
        }
    }

    /// One token per line: whole lines at once. A token is a line's first
    /// column: it ends at `\n`, or at a TAB, past which the line's other
    /// columns are skipped (a vertical file's lemma and tag columns come to
    /// the tokenizer as the reader found them, rather than cut out line by
    /// line). A `\r` that ends a line is no part of it (CRLF line ends); any
    /// other `\r` is, as the reader's `VerticalLine::classify` takes the line.
    fn feed_lines(&mut self, text: &str, emit: &mut impl FnMut(&str)) {
        let mut rest = text;
        if self.held_cr && !rest.is_empty() {
            self.held_cr = false;
            if !rest.starts_with('\n') {
                self.append_str("\r");
            }
        }
        while !rest.is_empty() {
            if self.later_columns {
                // A column is a few bytes: a plain loop beats a search call.
                let Some(i) = rest.bytes().position(|b| b == b'\n') else { return };
                self.later_columns = false;
                rest = &rest[i + 1..];
                continue;
            }
            match rest.bytes().position(|b| b == b'\n' || b == b'\t') {
                Some(i) => {
                    let end = rest.as_bytes()[i];
                    let token =
                        if end == b'\n' { rest[..i].strip_suffix('\r').unwrap_or(&rest[..i]) } else { &rest[..i] };
                    if !self.emit_in_place(token, emit) {
                        self.append_str(token);
                        self.boundary(emit);
                    }
                    self.later_columns = end == b'\t';
                    rest = &rest[i + 1..];
                }
                None => {
                    // A `\r` at the end of the piece may end its line: the next piece says.
                    self.held_cr = rest.ends_with('\r');
                    self.append_str(rest.strip_suffix('\r').unwrap_or(rest));
                    return;
                }
            }
        }
    }

    /// Hands on `token`, which lies whole in the text, as it stands there
    /// rather than copied, when no token is being gathered and it is within
    /// the length limit; false when it is left to the caller.
    #[inline]
    fn emit_in_place(&mut self, token: &str, emit: &mut impl FnMut(&str)) -> bool {
        if self.kind != Kind::Empty || token.is_empty() || token.len() > MAX_TOKEN_BYTES {
            return false;
        }
        self.taken += 1;
        emit(token);
        true
    }

    /// Whitespace-separated tokens: runs of ASCII non-space bytes at once.
    fn feed_raw(&mut self, text: &str, emit: &mut impl FnMut(&str)) {
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            if b < 0x80 && !b.is_ascii_whitespace() {
                let start = i;
                while i < bytes.len() && bytes[i] < 0x80 && !bytes[i].is_ascii_whitespace() {
                    i += 1;
                }
                // A whole token in the text (begun after a boundary, ended by
                // ASCII white space) is handed on as it stands there, not
                // copied; the space after it then ends nothing.
                if i < bytes.len() && bytes[i] < 0x80 && self.emit_in_place(&text[start..i], emit) {
                    continue;
                }
                self.append_str(&text[start..i]);
            } else if b < 0x80 {
                self.boundary(emit);
                i += 1;
            } else {
                let c = text[i..].chars().next().expect("index is on a char boundary");
                self.content_char(c, emit);
                i += c.len_utf8();
            }
        }
    }

    /// Appends text that is all token (no boundary in it).
    #[inline]
    fn append_str(&mut self, run: &str) {
        if run.is_empty() {
            return;
        }
        self.taken += 1;
        if self.kind == Kind::Empty {
            self.kind = Kind::Word;
        }
        if self.overflow.is_none() && self.word.len() + run.len() <= MAX_TOKEN_BYTES {
            self.word.push_str(run);
        } else {
            for c in run.chars() {
                self.append(c);
            }
        }
    }

    fn feed_words(&mut self, text: &str, emit: &mut impl FnMut(&str)) {
        let bytes = text.as_bytes();
        let fast = !self.norm.strip_markup;
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            if fast && self.is_ascii_word_byte(b) {
                // Most text is ASCII: take a whole run of word bytes at once.
                let start = i;
                let mut upper = false;
                while i < bytes.len() && self.is_ascii_word_byte(bytes[i]) {
                    upper |= bytes[i].is_ascii_uppercase();
                    i += 1;
                }
                // Most words are a whole token already: begun after a
                // boundary, lower case, and ended by an ASCII byte that ends
                // a word (the loop stopped at it). Such a word is handed on
                // as it stands in the text, not copied and folded; the byte
                // after it is then taken as it would be after any word.
                if self.kind == Kind::Empty
                    && !upper
                    && i < bytes.len()
                    && bytes[i] < 0x80
                    && i - start <= MAX_TOKEN_BYTES
                {
                    self.taken += 1;
                    emit(&text[start..i]);
                    continue;
                }
                if self.kind == Kind::Number {
                    self.boundary(emit);
                }
                self.kind = Kind::Word;
                self.append_ascii_run(&text[start..i]);
                continue;
            }
            if b < 0x80 {
                if self.norm.strip_markup {
                    self.markup_char(b as char, emit);
                } else {
                    self.ascii(b, emit);
                }
                i += 1;
            } else {
                let c = text[i..].chars().next().expect("index is on a char boundary");
                if self.norm.strip_markup {
                    self.markup_char(c, emit);
                } else {
                    self.content_char(c, emit);
                }
                i += c.len_utf8();
            }
        }
    }

    /// Ends the current document: emits the last token and resets all state.
    pub fn finish(&mut self, emit: &mut impl FnMut(&str)) {
        if self.markup == Markup::Entity {
            self.flush_entity_as_text(emit);
        }
        self.markup = Markup::Text;
        // A `\r` held at the document's end ended its last line.
        (self.later_columns, self.held_cr) = (false, false);
        self.boundary(emit);
    }

    /// A byte the fast path may take into a word: a letter, or a digit when numbers are words.
    #[inline]
    fn is_ascii_word_byte(&self, b: u8) -> bool {
        b.is_ascii_alphabetic() || (b.is_ascii_digit() && !self.norm.numbers_as_token)
    }

    /// Appends ASCII word bytes, lower-cased.
    #[inline]
    fn append_ascii_run(&mut self, run: &str) {
        self.taken += 1;
        if self.overflow.is_none() && self.word.len() + run.len() <= MAX_TOKEN_BYTES {
            let start = self.word.len();
            self.word.push_str(run);
            self.word[start..].make_ascii_lowercase();
        } else {
            for c in run.chars() {
                self.append(c.to_ascii_lowercase());
            }
        }
    }

    #[inline]
    fn ascii(&mut self, b: u8, emit: &mut impl FnMut(&str)) {
        match self.norm.mode {
            TokenMode::Words => {
                if b.is_ascii_alphabetic() {
                    self.letter_bytes(b.to_ascii_lowercase() as char, emit);
                } else if b.is_ascii_digit() {
                    if self.norm.numbers_as_token {
                        self.digit(emit);
                    } else {
                        self.letter_bytes(b as char, emit);
                    }
                } else if (b == b'.' || b == b',') && self.kind == Kind::Number && !self.number_separator {
                    self.number_separator = true;
                } else {
                    self.boundary(emit);
                }
            }
            TokenMode::Raw => {
                if b.is_ascii_whitespace() {
                    self.boundary(emit);
                } else {
                    self.append(b as char);
                }
            }
            TokenMode::Lines => {
                if b == b'\n' || b == b'\r' {
                    self.boundary(emit);
                } else {
                    self.append(b as char);
                }
            }
        }
    }

    fn content_char(&mut self, c: char, emit: &mut impl FnMut(&str)) {
        if c.is_ascii() {
            return self.ascii(c as u8, emit);
        }
        match self.norm.mode {
            TokenMode::Words => {
                if self.norm.numbers_as_token && c.is_numeric() {
                    self.digit(emit);
                } else if is_word_char(c) {
                    if self.kind == Kind::Number {
                        self.boundary(emit);
                    }
                    self.kind = Kind::Word;
                    for folded in std::iter::once(c).default_case_fold() {
                        self.append(folded);
                    }
                } else {
                    self.boundary(emit);
                }
            }
            TokenMode::Raw => {
                if c.is_whitespace() {
                    self.boundary(emit);
                } else {
                    self.append(c);
                }
            }
            TokenMode::Lines => self.append(c),
        }
    }

    /// An already-normalised letter (or a digit when numbers are words).
    #[inline]
    fn letter_bytes(&mut self, c: char, emit: &mut impl FnMut(&str)) {
        if self.kind == Kind::Number {
            self.boundary(emit);
        }
        self.kind = Kind::Word;
        self.append(c);
    }

    fn digit(&mut self, emit: &mut impl FnMut(&str)) {
        if self.kind == Kind::Word {
            self.boundary(emit);
        }
        self.kind = Kind::Number;
        self.number_separator = false;
        self.taken += 1;
    }

    #[inline]
    fn append(&mut self, c: char) {
        self.taken += 1;
        if self.kind == Kind::Empty {
            self.kind = Kind::Word;
        }
        if let Some(hasher) = &mut self.overflow {
            hasher.update(c.encode_utf8(&mut [0u8; 4]).as_bytes());
        } else if self.word.len() + c.len_utf8() <= MAX_TOKEN_BYTES {
            self.word.push(c);
        } else {
            let mut hasher = Box::new(Xxh3::new());
            hasher.update(self.word.as_bytes());
            hasher.update(c.encode_utf8(&mut [0u8; 4]).as_bytes());
            self.overflow = Some(hasher);
        }
    }

    #[inline]
    fn boundary(&mut self, emit: &mut impl FnMut(&str)) {
        match self.kind {
            Kind::Empty => {}
            Kind::Number => emit(NUMBER_TOKEN),
            Kind::Word => {
                if let Some(hasher) = self.overflow.take() {
                    let mut cut = LONG_TOKEN_PREFIX;
                    while !self.word.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    self.word.truncate(cut);
                    self.word.push_str(&format!("…{:016x}", hasher.digest()));
                    self.long_tokens += 1;
                }
                if !self.word.is_empty() {
                    emit(&self.word);
                }
                self.word.clear();
            }
        }
        self.kind = Kind::Empty;
        self.number_separator = false;
    }

    fn markup_char(&mut self, c: char, emit: &mut impl FnMut(&str)) {
        match self.markup {
            Markup::Text => match c {
                '<' => self.markup = Markup::Open,
                '&' => {
                    self.markup = Markup::Entity;
                    self.entity.clear();
                }
                _ => self.content_char(c, emit),
            },
            Markup::Open => {
                if c.is_ascii_alphabetic() || matches!(c, '/' | '!' | '?') {
                    self.markup = Markup::Tag;
                    self.boundary(emit);
                } else {
                    self.markup = Markup::Text;
                    self.content_char('<', emit);
                    self.markup_char(c, emit);
                }
            }
            Markup::Tag => {
                if c == '>' {
                    self.markup = Markup::Text;
                }
            }
            Markup::Entity => {
                if c == ';' {
                    self.markup = Markup::Text;
                    match decode_entity(&self.entity) {
                        Some(decoded) => self.content_char(decoded, emit),
                        None => self.boundary(emit),
                    }
                } else if (c.is_ascii_alphanumeric() || c == '#') && self.entity.len() < 12 {
                    self.entity.push(c);
                } else {
                    self.flush_entity_as_text(emit);
                    self.markup_char(c, emit);
                }
            }
        }
    }

    /// A `&` that did not start an entity is plain text, and so is what followed it.
    fn flush_entity_as_text(&mut self, emit: &mut impl FnMut(&str)) {
        self.markup = Markup::Text;
        self.content_char('&', emit);
        let pending = std::mem::take(&mut self.entity);
        for c in pending.chars() {
            self.content_char(c, emit);
        }
        self.entity = pending;
    }
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric()
        || matches!(
            get_general_category(c),
            GeneralCategory::NonspacingMark | GeneralCategory::SpacingMark | GeneralCategory::EnclosingMark
        )
}

/// The XML entities, `&nbsp;` and numeric references. Other named entities
/// (there are two thousand in HTML5) become a word boundary.
fn decode_entity(name: &str) -> Option<char> {
    match name {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        "nbsp" => Some(' '),
        _ => {
            let num = name.strip_prefix('#')?;
            let code = match num.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => num.parse().ok()?,
            };
            char::from_u32(code)
        }
    }
}

/// Convenience for tests and small inputs: all tokens of one document.
pub fn tokenize(norm: Normalization, text: &str) -> Vec<String> {
    let mut t = Tokenizer::new(norm);
    let mut out = Vec::new();
    t.feed(text, &mut |w| out.push(w.to_owned()));
    t.finish(&mut |w| out.push(w.to_owned()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn words(text: &str) -> Vec<String> {
        tokenize(Normalization::default(), text)
    }

    #[test]
    fn words_split_at_punctuation_and_fold_case() {
        assert_eq!(words("Hello, World! Don't  stop-now."), ["hello", "world", "don", "t", "stop", "now"]);
        assert_eq!(words("Straße ÉCOLE Ωμέγα"), ["strasse", "école", "ωμέγα"]);
        assert_eq!(words("日本語 テキスト"), ["日本語", "テキスト"]);
        assert_eq!(words("e\u{301}te\u{301}"), ["e\u{301}te\u{301}"]);
        assert_eq!(words("   "), Vec::<String>::new());
        assert_eq!(words("a1b2 2024"), ["a1b2", "2024"]);
    }

    #[test]
    fn numbers_as_token() {
        let norm = Normalization { numbers_as_token: true, ..Normalization::default() };
        assert_eq!(
            tokenize(norm, "In 2024, 1,000.5 units; abc123def 3. Then"),
            ["in", "#", "#", "units", "abc", "#", "def", "#", "then"]
        );
        assert_eq!(tokenize(norm, "٣٤ apples"), ["#", "apples"]);
    }

    #[test]
    fn strip_markup() {
        let norm = Normalization { strip_markup: true, ..Normalization::default() };
        assert_eq!(
            tokenize(norm, "<p class=\"x\">Fish &amp; chips</p><br/>caf&#233; &#x41;B"),
            ["fish", "chips", "café", "ab"]
        );
        assert_eq!(tokenize(norm, "a < b && c &unknown; d &no"), ["a", "b", "c", "d", "no"]);
        assert_eq!(tokenize(norm, "AT&T"), ["at", "t"]);
    }

    #[test]
    fn raw_and_lines_keep_tokens_untouched() {
        assert_eq!(tokenize(Normalization::raw(), " Don't\tSTOP\u{a0}now. "), ["Don't", "STOP", "now."]);
        assert_eq!(tokenize(Normalization::lines(), "New York\n\nis\r\nbig\n"), ["New York", "is", "big"]);
    }

    #[test]
    fn lines_take_the_first_column() {
        let lines = Normalization::lines();
        // Later columns, a `\r` among them, an empty first column, and a document ending in a column.
        let text = "New\tNNP\tnew\nYork\tN\rNP\r\n\tX\tY\nis\r\n\nbig\tJJ";
        assert_eq!(tokenize(lines, text), ["New", "York", "is", "big"]);
        // The columns skipped in one piece are skipped across pieces too.
        let mut t = Tokenizer::new(lines);
        let mut out = Vec::new();
        for piece in ["a\tDT", "\tthe\nb", "ig\tJJ\tbi", "g\nc"] {
            t.feed(piece, &mut |w| out.push(w.to_owned()));
        }
        t.finish(&mut |w| out.push(w.to_owned()));
        assert_eq!(out, ["a", "big", "c"]);
    }

    #[test]
    fn lines_drop_only_a_carriage_return_that_ends_the_line() {
        let lines = Normalization::lines();
        // Inside a column, or ending a column before a TAB, a `\r` is part of the token.
        let text = "a\rb\nc\r\n\r\n\r\tX\nd\r\tY\r\ne\r\r\n";
        assert_eq!(tokenize(lines, text), ["a\rb", "c", "\r", "d\r", "e\r"]);
        // The same across pieces: a `\r` ending a piece waits for what follows.
        let mut t = Tokenizer::new(lines);
        let mut out = Vec::new();
        for piece in ["f\r", "\ng\r", "h\n", "i\r", "\tZ\n", "j\r"] {
            t.feed(piece, &mut |w| out.push(w.to_owned()));
        }
        t.finish(&mut |w| out.push(w.to_owned()));
        assert_eq!(out, ["f", "g\rh", "i\r", "j"]);
    }

    #[test]
    fn long_tokens_are_cut_and_hashed() {
        let a = "x".repeat(5000);
        let b = format!("{}y", "x".repeat(4999));
        let ta = tokenize(Normalization::default(), &a);
        let tb = tokenize(Normalization::default(), &b);
        assert_eq!(ta.len(), 1);
        assert!(ta[0].len() <= MAX_TOKEN_BYTES);
        assert_ne!(ta, tb);
        assert_eq!(ta, tokenize(Normalization::default(), &a));
        // Raw and line tokens ended within the text: kept whole up to the limit, cut past it.
        for (norm, end) in [(Normalization::raw(), " z"), (Normalization::lines(), "\nz")] {
            let at_limit = tokenize(norm, &format!("{}{end}", "x".repeat(MAX_TOKEN_BYTES)));
            assert_eq!(at_limit, ["x".repeat(MAX_TOKEN_BYTES), "z".to_string()]);
            let past = tokenize(norm, &format!("{}{end}", "x".repeat(MAX_TOKEN_BYTES + 1)));
            assert_eq!(past.len(), 2);
            assert!(past[0].len() <= MAX_TOKEN_BYTES && past[0].contains('…'), "{norm:?}");
        }
    }

    proptest! {
        #[test]
        fn any_split_gives_the_same_tokens(text in "[a-zA-Z0-9 .,<>&;#éß日\u{301}\u{a0}\n\r\t]{0,80}", cut in 0usize..80, numbers: bool, markup: bool, mode in 0u8..3) {
            let norm = match mode {
                0 => Normalization { mode: TokenMode::Words, numbers_as_token: numbers, strip_markup: markup },
                1 => Normalization::raw(),
                _ => Normalization::lines(),
            };
            let whole = tokenize(norm, &text);
            let mut cut = cut.min(text.len());
            while !text.is_char_boundary(cut) { cut -= 1; }
            let mut t = Tokenizer::new(norm);
            let mut parts = Vec::new();
            t.feed(&text[..cut], &mut |w| parts.push(w.to_owned()));
            t.feed(&text[cut..], &mut |w| parts.push(w.to_owned()));
            t.finish(&mut |w| parts.push(w.to_owned()));
            prop_assert_eq!(whole, parts);
        }

        /// Fed one character at a time, no word is ever whole within one
        /// piece, so this compares the whole-word path with the general one.
        #[test]
        fn whole_words_and_one_character_at_a_time_agree(text in "[a-zA-Z0-9 .,;'<>&#éÉß日\u{301}\n-]{0,120}", numbers: bool, markup: bool) {
            let norm = Normalization { mode: TokenMode::Words, numbers_as_token: numbers, strip_markup: markup };
            let whole = tokenize(norm, &text);
            let mut t = Tokenizer::new(norm);
            let mut chars = Vec::new();
            let mut buf = [0u8; 4];
            for c in text.chars() {
                t.feed(c.encode_utf8(&mut buf), &mut |w| chars.push(w.to_owned()));
            }
            t.finish(&mut |w| chars.push(w.to_owned()));
            prop_assert_eq!(whole, chars);
        }

        #[test]
        fn tokens_are_never_empty_and_never_hold_boundaries(text in "\\PC{0,60}") {
            for w in words(&text) {
                prop_assert!(!w.is_empty());
                prop_assert!(!w.chars().any(|c| c.is_whitespace()));
            }
        }
    }
}
