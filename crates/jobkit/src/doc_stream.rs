//! The corpus read back document by document, with its structure, for the
//! passes that write documents out again (`dedup`'s decisions, `--exact-only`,
//! `--unit span`): each document's text or lines, its units and their token
//! counts, numbered as the index pass numbered them.
//!
//! This sits below the jobs that use it: they import from here, never the
//! other way round.

use std::borrow::Cow;
use std::collections::HashSet;
use std::io::BufRead;
use std::ops::Range;
use std::sync::Arc;

use dupgram_corpus::{CorpusError, Format, Input, ParquetRows, ReadOptions, VerticalLine, parse_record_noting};
use dupgram_dedup::{ExactHasher, UnitKind, segment_text};
use dupgram_lexicon::{Normalization, Tokenizer};

use crate::attributes::json_field;
use crate::control::Control;
use crate::error::PipelineError;
use crate::memory::{MemoryPlan, human_bytes};

pub fn vertical_attributes(name: &str) -> PipelineError {
    PipelineError::Usage(format!(
        "--attributes: {name} is a vertical file; attributes give character offsets in a document's text, \
         which JSON Lines and plain text have and vertical files do not"
    ))
}

/// A bound on the bytes read ahead of their use, in slots: the reading side
/// [`takes`](ReadAheadTaker::take) the slots a document's (or a batch's)
/// bytes need before handing it over, and the using side
/// [`gives`](ReadAheadGiver::give) them back when done with it. Something
/// larger than all slots takes them all, so it waits until nothing else is
/// ahead. Dropping the giver wakes a waiting taker for good.
pub fn read_ahead(bytes: u64, slots: usize) -> (ReadAheadTaker, ReadAheadGiver) {
    let slots = slots.max(1);
    let (tx, rx) = crossbeam_channel::bounded::<()>(slots);
    for _ in 0..slots {
        let _ = tx.send(());
    }
    let slot_bytes = (bytes / slots as u64).max(1) as usize;
    (ReadAheadTaker { rx, slot_bytes, slots }, ReadAheadGiver { tx })
}

pub struct ReadAheadTaker {
    rx: crossbeam_channel::Receiver<()>,
    slot_bytes: usize,
    slots: usize,
}

impl ReadAheadTaker {
    /// Waits for the slots `bytes` need; how many it took, or None once the giver is gone.
    pub fn take(&self, bytes: usize) -> Option<usize> {
        let slots = bytes.div_ceil(self.slot_bytes).clamp(1, self.slots);
        (0..slots).all(|_| self.rx.recv().is_ok()).then_some(slots)
    }

    pub fn slot_bytes(&self) -> usize {
        self.slot_bytes
    }
}

pub struct ReadAheadGiver {
    tx: crossbeam_channel::Sender<()>,
}

impl ReadAheadGiver {
    pub fn give(&self, slots: usize) {
        for _ in 0..slots {
            let _ = self.tx.try_send(());
        }
    }
}

/// Documents of the corpus in order, handed to `each` with whether they are
/// vertical and the reader's position.
///
/// One thread reads (and decompresses) the corpus and cuts it into records;
/// `threads` workers parse and tokenise them; `each` gets them back in
/// corpus order on the calling thread, where token counts known from an
/// earlier pass ([`DocStream::known`]) are applied too, since those are read
/// in order. Records travel in batches: one hand-over per document costs
/// more in thread wake-ups than the work on a short document. A record that
/// fails is reported where the reading in order would have met it: the
/// batches before it are handed over first.
pub fn read_batched(
    mut stream: DocStream<'_>,
    control: &Control,
    (working, threads): (u64, usize),
    mut each: impl FnMut(Item, bool, u64) -> Result<(), PipelineError>,
) -> Result<(), PipelineError> {
    const BATCH_DOCS: usize = 256;
    let workers = threads.clamp(1, 16);
    // Text handed to the workers and not yet taken by `each` is at most
    // `in_flight` batches' worth; with one batch filling and one in use,
    // each holding its text about three times (the record, its text, the
    // keys), a fifth of the working memory in all.
    let in_flight = 2 * workers + 2;
    let batch_bytes = (working / (15 * (in_flight as u64 + 2))).clamp(1 << 16, 4 << 20) as usize;
    let makers: Vec<DocMaker> = (0..workers).map(|_| stream.maker()).collect();
    // Known counts are applied here, in order, tokenising the wanted units with a maker of this thread's.
    let own = stream.known.is_some().then(|| stream.maker());
    let mut known = stream.known.take().zip(own);
    let (work_tx, work_rx) = crossbeam_channel::bounded::<(Batch, Vec<(Fetched, bool, u64)>)>(in_flight);
    let (made_tx, made_rx) = crossbeam_channel::bounded::<MadeBatch>(in_flight);
    // Slots of `batch_bytes` each: the reader takes as many as a batch
    // fills before it hands it over, `each` gives them back when done with
    // it, so neither a slow batch nor long documents can let text pile up.
    let (ahead, done_with) = read_ahead((batch_bytes * in_flight) as u64, in_flight);
    std::thread::scope(|scope| {
        let reader = scope.spawn(move || -> Result<(), PipelineError> {
            let send = |seq, bytes: usize, batch| {
                ahead.take(bytes).is_some_and(|slots| work_tx.send((Batch { seq, slots }, batch)).is_ok())
            };
            let (mut seq, mut bytes) = (0u64, 0usize);
            let mut batch = Vec::with_capacity(BATCH_DOCS);
            loop {
                let fetched = match stream.next_fetched() {
                    Ok(Some(fetched)) => fetched,
                    Ok(None) => break,
                    Err(e) => {
                        // The records before it may hold an earlier error.
                        send(seq, bytes, batch);
                        return Err(e);
                    }
                };
                bytes += fetched.bytes();
                batch.push((fetched, stream.is_vertical(), stream.position()));
                if batch.len() == BATCH_DOCS || bytes >= batch_bytes {
                    if !send(seq, bytes, std::mem::replace(&mut batch, Vec::with_capacity(BATCH_DOCS))) {
                        return Ok(());
                    }
                    (seq, bytes) = (seq + 1, 0);
                }
            }
            send(seq, bytes, batch);
            Ok(())
        });
        let workers: Vec<_> = makers
            .into_iter()
            .map(|mut maker| {
                let (work_rx, made_tx) = (work_rx.clone(), made_tx.clone());
                scope.spawn(move || {
                    for (id, batch) in work_rx {
                        if made_tx.send(maker.make_batch(id, batch)).is_err() {
                            return;
                        }
                    }
                })
            })
            .collect();
        drop((work_rx, made_tx));
        let done = (|| -> Result<(), PipelineError> {
            let mut waiting = std::collections::BTreeMap::new();
            let mut next = 0u64;
            for made in &made_rx {
                waiting.insert(made.id.seq, made);
                while let Some(made) = waiting.remove(&next) {
                    next += 1;
                    if control.interrupted() {
                        return Err(PipelineError::Interrupted);
                    }
                    for (mut item, vertical, position) in made.items {
                        if let Some((known, own)) = known.as_mut() {
                            known.apply(own, &mut item)?;
                        }
                        each(item, vertical, position)?;
                        control.progress.bytes.store(position, std::sync::atomic::Ordering::Relaxed);
                    }
                    if let Some(error) = made.failed {
                        return Err(error);
                    }
                    done_with.give(made.id.slots);
                }
            }
            if waiting.is_empty() {
                Ok(())
            } else {
                Err(PipelineError::Usage("internal error: a batch of documents was lost".into()))
            }
        })();
        drop((made_rx, done_with));
        let panicked = || PipelineError::Usage("internal error: a reading thread panicked".into());
        let read = reader.join().unwrap_or_else(|_| Err(panicked()));
        // Every worker joined, so that none is left for the scope to find panicked.
        let joined: Vec<bool> = workers.into_iter().map(|w| w.join().is_ok()).collect();
        let made = if joined.iter().all(|&ok| ok) { Ok(()) } else { Err(panicked()) };
        // A panicked worker first (its batch is missing); then `each`, which
        // meets the records in order, so its error is the first one; else
        // the reader's, which came after every record handed over.
        made.and(done).and(read)
    })
}

/// A batch's place in the corpus, and the slots of read-ahead it holds.
#[derive(Clone, Copy)]
struct Batch {
    seq: u64,
    slots: usize,
}

/// A batch of documents made by a worker: the first `items`, and the error
/// that stopped it, if one did.
struct MadeBatch {
    id: Batch,
    items: Vec<(Item, bool, u64)>,
    failed: Option<PipelineError>,
}

/// A line of a vertical document: which unit it belongs to, or the document tags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Unit(u32),
    DocTag,
}

/// One document as read back for deduplication.
#[derive(Debug)]
pub struct Doc {
    pub body: Body,
    /// The document's ID, but for vertical documents: the record's
    /// `--id-field` (as the record has it when attributes are written, a
    /// number staying a number; else as text), or its line or row number as
    /// the corpus reader numbers it.
    pub id: Box<serde_json::Value>,
    /// Tokens of each unit (stop words excluded).
    pub unit_tokens: Vec<u32>,
    /// Each unit's fingerprint, when asked for: Benko's
    /// ([`DocStream::hasher`]), or its key's ([`DocStream::digest`]).
    pub fingerprints: Vec<u128>,
    /// Each unit's normalised text, when asked for (`--exact-only`): its
    /// tokens back to back, each followed by 0xFF, a byte no UTF-8 text holds,
    /// so two units have equal keys exactly when their token sequences are equal.
    pub keys: Vec<u8>,
    /// Where each unit's key ends in `keys`.
    pub key_ends: Vec<u32>,
}

impl Doc {
    /// Gives a whole document made with [`DocStream::counts_known`] the
    /// token count a table holds for it; a vertical document, counted as
    /// its lines were read, keeps its own for the caller to compare.
    pub fn count_as(&mut self, tokens: u32) {
        if self.unit_tokens.is_empty() {
            debug_assert!(
                matches!(&self.body, Body::Jsonl { units, .. } | Body::Text { units, .. } if units.len() == 1)
            );
            self.unit_tokens.push(tokens);
        }
    }

    /// Bytes its buffers hold (their capacities): what holding it costs.
    pub fn heap_bytes(&self) -> usize {
        let body = match &self.body {
            Body::Vertical { bytes, ends, roles } => {
                bytes.capacity() + ends.capacity() * 4 + roles.capacity() * std::mem::size_of::<Role>()
            }
            Body::Jsonl { line, text, units, .. } => {
                line.capacity() + text.capacity() + units.capacity() * std::mem::size_of::<Range<usize>>()
            }
            Body::Text { text, units } => text.capacity() + units.capacity() * std::mem::size_of::<Range<usize>>(),
        };
        body + self.unit_tokens.capacity() * 4
            + self.fingerprints.capacity() * 16
            + self.keys.capacity()
            + self.key_ends.capacity() * 4
    }

    /// The normalised text of unit `u` (empty unless keys were asked for).
    pub fn key(&self, u: usize) -> &[u8] {
        &self.keys[self.key_start(u)..self.key_ends[u] as usize]
    }

    /// The length of unit `u`'s key, whether the keys were kept or digested.
    pub fn key_len(&self, u: usize) -> usize {
        self.key_ends[u] as usize - self.key_start(u)
    }

    fn key_start(&self, u: usize) -> usize {
        if u == 0 { 0 } else { self.key_ends[u - 1] as usize }
    }

    /// Keeps of the document only what a pass that compares units by
    /// fingerprint needs: each unit's token count, key length and key
    /// fingerprint under `fingerprint` (in [`Self::fingerprints`]). Its text
    /// and keys go, freed by the thread that made them, where they are
    /// cheapest to free, and the document is small to hand on.
    fn digest(&mut self, fingerprint: fn(&[u8]) -> u128) {
        let fingerprints: Vec<u128> = (0..self.key_ends.len()).map(|u| fingerprint(self.key(u))).collect();
        self.fingerprints = fingerprints;
        self.keys = Vec::new();
        self.body = Body::Text { text: String::new(), units: Vec::new() };
    }
}

/// Ends every token in a unit's key.
pub const KEY_SEPARATOR: u8 = 0xFF;

/// The fields a marked JSON Lines record gets.
const MARK_FIELDS: [&str; 2] = ["dup_fraction", "dup_spans"];

/// Slices this long or shorter are appended by [`extend_short`] as a whole
/// window of this many bytes.
const SHORT_COPY: usize = 16;

/// Appends `src[range]` to `out`. The lines of a vertical file are a few
/// bytes each, and a call to copy one costs more than its bytes: a short
/// slice with [`SHORT_COPY`] bytes of `src` from its start is appended as
/// that whole window, a copy of fixed length (no call), then cut back.
#[inline]
pub fn extend_short(out: &mut Vec<u8>, src: &[u8], range: std::ops::Range<usize>) {
    let len = range.len();
    let window = src.get(range.start..range.start + SHORT_COPY).and_then(|w| <&[u8; SHORT_COPY]>::try_from(w).ok());
    match window {
        Some(window) if len <= SHORT_COPY => {
            let at = out.len();
            out.extend_from_slice(window);
            out.truncate(at + len);
        }
        _ => out.extend_from_slice(&src[range]),
    }
}

/// A JSON Lines record marked: `dup_fraction` (rounded to 6 decimals) and
/// `dup_spans` (character offsets) added, and a newline. An `appendable`
/// record is written as it was read with the two fields put before its
/// closing brace; one that has such fields already gets them replaced,
/// through a parse of the whole record (which writes it compact).
pub fn marked_record(
    out: &mut Vec<u8>,
    line: &str,
    appendable: bool,
    fraction: f64,
    spans: &[[u64; 2]],
) -> Result<(), PipelineError> {
    let fraction = (fraction * 1e6).round() / 1e6;
    let line = line.trim_end();
    if appendable && let Some(open) = line.strip_suffix('}') {
        // Written as serde_json writes the values, without building them.
        let json = |e: serde_json::Error| PipelineError::Usage(format!("internal error: {e}"));
        out.extend_from_slice(open.as_bytes());
        out.extend_from_slice(format!(",\"{}\":", MARK_FIELDS[0]).as_bytes());
        serde_json::to_writer(&mut *out, &fraction).map_err(json)?;
        out.extend_from_slice(format!(",\"{}\":", MARK_FIELDS[1]).as_bytes());
        serde_json::to_writer(&mut *out, spans).map_err(json)?;
        out.extend_from_slice(b"}\n");
        return Ok(());
    }
    rewritten(out, line, [(MARK_FIELDS[0], serde_json::json!(fraction)), (MARK_FIELDS[1], serde_json::json!(spans))])
}

/// A JSON Lines record under `--strip`: with its text replaced by `kept`
/// when something was cut out of it, else as it was read; and a newline.
pub fn stripped_record(
    out: &mut Vec<u8>,
    line: &str,
    text_field: &str,
    kept: Option<String>,
) -> Result<(), PipelineError> {
    match kept {
        Some(text) => rewritten(out, line, [(text_field, text.into())]),
        None => {
            out.extend_from_slice(line.trim_end().as_bytes());
            out.push(b'\n');
            Ok(())
        }
    }
}

/// A record parsed whole, `fields` set in it, written compact with a newline.
fn rewritten<const N: usize>(
    out: &mut Vec<u8>,
    line: &str,
    fields: [(&str, serde_json::Value); N],
) -> Result<(), PipelineError> {
    let mut value: serde_json::Value =
        serde_json::from_str(line).map_err(|e| PipelineError::Changed(format!("a record no longer parses: {e}")))?;
    let object =
        value.as_object_mut().ok_or_else(|| PipelineError::Changed("a record is no longer an object".into()))?;
    for (name, field) in fields {
        object.insert(name.to_owned(), field);
    }
    out.extend_from_slice(value.to_string().as_bytes());
    out.push(b'\n');
    Ok(())
}

#[derive(Debug)]
pub enum Body {
    /// All lines, back to back; `ends[i]` is where line `i` ends.
    Vertical {
        bytes: Vec<u8>,
        ends: Vec<u32>,
        roles: Vec<Role>,
    },
    /// A JSON Lines record: the line, its text field and the text's units (byte ranges).
    Jsonl {
        line: String,
        text: String,
        units: Vec<Range<usize>>,
        /// The line is an object without the fields marking adds (see [`marked_record`]).
        appendable: bool,
    },
    Text {
        text: String,
        units: Vec<Range<usize>>,
    },
}

pub enum Item {
    Doc(Doc),
    /// A line that is no document (blank, skipped, outside documents): written as it is.
    Passthrough(Vec<u8>),
}

impl Item {
    /// Bytes its buffers hold.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Item::Doc(doc) => doc.heap_bytes(),
            Item::Passthrough(line) => line.capacity(),
        }
    }
}

struct OpenInput {
    /// Its name, shared by the records read from it.
    name: Arc<str>,
    reader: Box<dyn BufRead + Send>,
    format: Format,
    line: u64,
    in_doc: bool,
    /// A `<doc>` line read while finishing the previous document.
    pending: Option<Vec<u8>>,
    /// Bytes read from it so far (for progress).
    position: u64,
    /// Bytes of the stored (compressed) file read so far: where a read error is.
    stored: Arc<std::sync::atomic::AtomicU64>,
    /// A Parquet input's rows, and the row groups counted in `position`.
    parquet: Option<(ParquetRows, usize)>,
}

/// Documents with their structure, in input order, numbered as the index pass numbered them.
pub struct DocStream<'a> {
    inputs: &'a [Input],
    next_input: usize,
    current: Option<OpenInput>,
    options: ReadOptions,
    unit: UnitKind,
    /// The vertical tag that delimits units (`p`, `s`), none for whole documents.
    unit_tag: Option<&'static str>,
    norm: Normalization,
    stopwords: Arc<HashSet<String>>,
    /// Makes the documents of JSON Lines, text and Parquet inputs when they are read here (see [`Self::next`]).
    maker: Option<DocMaker>,
    pub hasher: Option<ExactHasher>,
    /// Collect each unit's normalised text ([`Doc::keys`]).
    pub keys: bool,
    /// With `keys`: hand on each document digested under this
    /// fingerprint. Not with `known`: that keys only the wanted units, and
    /// is applied after a worker would digest (see [`read_batched`]).
    pub digest: Option<fn(&[u8]) -> u128>,
    /// Token counts known from an earlier pass: only the units asked for are tokenised again.
    pub known: Option<KnownUnits<'a>>,
    /// The caller has every document's token count already (a table the
    /// index made): documents of JSON Lines, text and Parquet are cut into
    /// units and not tokenised, their `unit_tokens` left empty. A vertical
    /// document counts its tokens as it is read, at no cost, and still does.
    pub counts_known: bool,
    /// Each document's ID, when asked for: the names of the inputs as given (for default IDs).
    pub ids: Option<Vec<String>>,
    doc_limit: usize,
    /// Documents written already, whose buffers can be used again.
    spare: crossbeam_channel::Receiver<Doc>,
}

impl<'a> DocStream<'a> {
    /// Reads `inputs` (files: standard input must have been copied) in units of `unit`.
    pub fn new(
        inputs: &'a [Input],
        read: &ReadOptions,
        plan: MemoryPlan,
        unit: UnitKind,
        (norm, stopwords): (Normalization, &[String]),
        doc_limit: usize,
        spare: crossbeam_channel::Receiver<Doc>,
    ) -> Self {
        DocStream {
            inputs,
            next_input: 0,
            current: None,
            options: ReadOptions {
                max_record_bytes: plan.max_record,
                zstd_window_log_max: plan.zstd_window_log,
                ..read.clone()
            },
            unit,
            unit_tag: match unit {
                UnitKind::Paragraph => Some("p"),
                UnitKind::Sentence => Some("s"),
                UnitKind::Document | UnitKind::Line => None,
            },
            norm,
            stopwords: Arc::new(stopwords.iter().cloned().collect()),
            maker: None,
            hasher: None,
            keys: false,
            digest: None,
            known: None,
            counts_known: false,
            ids: None,
            doc_limit,
            spare,
        }
    }

    pub fn is_vertical(&self) -> bool {
        self.current.as_ref().is_some_and(|c| c.format == Format::Vertical)
    }

    /// Bytes read from the inputs so far (for progress).
    pub fn position(&self) -> u64 {
        self.current.as_ref().map_or(0, |c| c.position)
    }

    /// The next document, made on this thread.
    pub fn next_doc(&mut self) -> Result<Option<Item>, PipelineError> {
        let Some(fetched) = self.next_fetched()? else { return Ok(None) };
        if self.maker.is_none() {
            self.maker = Some(self.maker());
        }
        let maker = self.maker.as_mut().expect("made above");
        let mut item = match fetched {
            Fetched::Made(item) => item,
            Fetched::Raw(raw) => maker.make(raw)?,
        };
        if let Some(known) = self.known.as_mut() {
            known.apply(maker, &mut item)?;
        }
        maker.finish(&mut item);
        Ok(Some(item))
    }

    /// What makes documents as this stream was asked to (keys, fingerprints, IDs): one for each thread that does.
    pub fn maker(&self) -> DocMaker {
        debug_assert!(self.digest.is_none() || self.known.is_none(), "a digest of keys applied later");
        DocMaker {
            text_field: self.options.text_field.clone(),
            id_field: self.options.id_field.clone(),
            skip_bad: self.options.skip_bad,
            unit: self.unit,
            tokenizer: Tokenizer::new(self.norm),
            stopwords: self.stopwords.clone(),
            hasher: self.hasher.as_ref().map(|_| ExactHasher::default()),
            keys: self.keys,
            digest: self.digest.filter(|_| self.keys),
            ids: self.ids.is_some(),
            counts_later: self.known.is_some() || self.counts_known,
        }
    }

    /// The next document read: made already (a vertical one, whose lines
    /// are its tokens), or still to be parsed and tokenised (a line or row).
    pub fn next_fetched(&mut self) -> Result<Option<Fetched>, PipelineError> {
        loop {
            if self.current.is_none() {
                let Some(input) = self.inputs.get(self.next_input) else { return Ok(None) };
                self.next_input += 1;
                self.current = Some(self.open(input)?);
            }
            let fetched = match self.current.as_ref().map(|c| c.format) {
                Some(Format::Vertical) => self.next_vertical()?.map(Fetched::Made),
                Some(Format::Jsonl) => self.next_line(true)?.map(Fetched::Raw),
                Some(Format::Parquet) => self.next_row()?.map(Fetched::Raw),
                _ => self.next_line(false)?.map(Fetched::Raw),
            };
            match fetched {
                Some(fetched) => return Ok(Some(fetched)),
                None => self.current = None,
            }
        }
    }

    fn open(&self, input: &Input) -> Result<OpenInput, PipelineError> {
        let Input::Path(path) = input else {
            return Err(PipelineError::Usage("internal error: standard input was not copied".into()));
        };
        let name = path.display().to_string();
        let open_err = |error| PipelineError::Corpus(CorpusError::Open { name: name.clone(), error });
        let (mut reader, stored) = dupgram_corpus::open_decoded_counted(path).map_err(open_err)?;
        let format = match self.options.format.or_else(|| Format::from_path(path)) {
            Some(f) => f,
            None => Format::sniff(reader.fill_buf().map_err(open_err)?),
        };
        if format == Format::Vertical && self.ids.is_some() {
            return Err(vertical_attributes(&name));
        }
        let parquet = match format {
            Format::Parquet => Some((ParquetRows::open(path, &name, &self.options)?, 0)),
            _ => None,
        };
        if format == Format::Vertical && self.unit == UnitKind::Line {
            return Err(PipelineError::Usage(format!(
                "--unit line: {name} is a vertical file, whose lines are tokens; use --unit doc, p or s"
            )));
        }
        let name = Arc::from(name);
        Ok(OpenInput { name, reader, format, line: 0, in_doc: false, pending: None, position: 0, stored, parquet })
    }

    /// Appends the next line of the current input to `buf`, without its
    /// newline; returns where it starts, or None at the end of the input.
    fn read_line(&mut self, buf: &mut Vec<u8>) -> Result<Option<usize>, PipelineError> {
        let limit = self.options.max_record_bytes;
        let input = self.current.as_mut().expect("an open input");
        let start = buf.len();
        if let Some(line) = input.pending.take() {
            buf.extend_from_slice(&line);
            return Ok(Some(start));
        }
        // Straight from the reader's buffer: one search and one copy per line
        // in the common case that the line is buffered whole.
        let mut read = 0usize;
        loop {
            let available = match input.reader.fill_buf() {
                Ok(available) => available,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(source) => return Err(read_failed(input, source)),
            };
            if available.is_empty() {
                break;
            }
            let (take, newline) = match memchr::memchr(b'\n', available) {
                Some(i) => (i, true),
                None => (available.len(), false),
            };
            buf.extend_from_slice(&available[..take]);
            let used = take + usize::from(newline);
            input.reader.consume(used);
            read += used;
            if newline {
                input.line += 1;
                input.position += read as u64;
                return Ok(Some(start));
            }
            if buf.len() - start > limit {
                input.line += 1;
                return Err(PipelineError::Corpus(CorpusError::RecordTooLong {
                    name: input.name.to_string(),
                    line: input.line,
                    limit,
                }));
            }
        }
        if read == 0 {
            return Ok(None);
        }
        // The last line, without a newline.
        input.line += 1;
        input.position += read as u64;
        if buf.len() - start > limit {
            return Err(PipelineError::Corpus(CorpusError::RecordTooLong {
                name: input.name.to_string(),
                line: input.line,
                limit,
            }));
        }
        Ok(Some(start))
    }

    /// The next row of a Parquet input.
    fn next_row(&mut self) -> Result<Option<RawDoc>, PipelineError> {
        let skip_bad = self.options.skip_bad;
        let several = self.inputs.len() > 1;
        let input = self.current.as_mut().expect("an open input");
        let Some((rows, counted)) = input.parquet.as_mut() else { return Ok(None) };
        let row = loop {
            match rows.next_row()? {
                None => return Ok(None),
                // Skipped by the index pass too, so the documents are numbered alike.
                Some(Err(_)) if skip_bad => {}
                Some(Err(bad)) => return Err(PipelineError::Corpus(bad.error(&input.name))),
                Some(Ok(row)) => break row,
            }
        };
        while *counted <= row.row_group {
            input.position += rows.row_group_bytes(*counted);
            *counted += 1;
        }
        let id = row.id.unwrap_or_else(|| default_id(&input.name, row.row, several));
        Ok(Some(RawDoc::Row { id, text: row.text }))
    }

    /// The next line of a JSON Lines or text input.
    fn next_line(&mut self, json: bool) -> Result<Option<RawDoc>, PipelineError> {
        // The line buffer of a document already written, when one came back;
        // the rest of it is freed here, on the thread that made it.
        let mut raw = match self.spare.try_recv() {
            Ok(Doc { body: Body::Jsonl { line: text, .. } | Body::Text { text, .. }, .. }) => text.into_bytes(),
            _ => Vec::new(),
        };
        raw.clear();
        if self.read_line(&mut raw)?.is_none() {
            return Ok(None);
        }
        let several = self.inputs.len() > 1;
        let input = self.current.as_ref().expect("an open input");
        Ok(Some(RawDoc::Line { raw, json, name: input.name.clone(), line: input.line, several }))
    }

    /// Vertical, inside a document: appends the whole token lines at the
    /// front of the read buffer (not starting with `<`) to the current unit,
    /// as the line-by-line path would, with one search per line and no
    /// classifying; false when the buffer does not begin with one.
    /// (`dedup`'s decisions read on one thread and write on another, and
    /// both do a little per line. Taking the tag lines here too, or handing
    /// runs of lines over joined for the writer to split, moved that work
    /// between the threads without making less of it: on the Reddit
    /// comments as three-column vertical text the decisions took as long.)
    fn token_lines(
        &mut self,
        bytes: &mut Vec<u8>,
        ends: &mut Vec<u32>,
        roles: &mut Vec<Role>,
        units: &mut [u32],
    ) -> Result<bool, PipelineError> {
        let (doc_limit, line_limit) = (self.doc_limit, self.options.max_record_bytes);
        let input = self.current.as_mut().expect("an open input");
        if !input.in_doc || input.pending.is_some() {
            return Ok(false);
        }
        let available = match input.reader.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => return Ok(false),
            Err(source) => return Err(read_failed(input, source)),
        };
        let (unit, count) = (units.len() as u32 - 1, units.last_mut().expect("a unit"));
        // One search over the buffer, and no call to copy a line: token
        // lines are a few bytes each, and a search or a copy started per
        // line costs more than the line.
        let (mut at, mut lines) = (0, 0u64);
        for newline in memchr::memchr_iter(b'\n', available) {
            let line = &available[at..newline];
            // Past a limit, the line-by-line path says where.
            if line.first() == Some(&b'<') || line.len() > line_limit || bytes.len() + line.len() > doc_limit {
                break;
            }
            extend_short(bytes, available, at..newline);
            ends.push(bytes.len() as u32);
            roles.push(Role::Unit(unit));
            // A token when its first column is not empty (see `VerticalLine::classify`).
            let text = line.strip_suffix(b"\r").unwrap_or(line);
            *count += u32::from(text.first().is_some_and(|&b| b != b'\t'));
            lines += 1;
            at = newline + 1;
        }
        input.line += lines;
        input.reader.consume(at);
        input.position += at as u64;
        Ok(at > 0)
    }

    /// The next vertical document (or a line outside documents).
    fn next_vertical(&mut self) -> Result<Option<Item>, PipelineError> {
        // The buffers of a document already written, when one came back.
        let (mut bytes, mut ends, mut roles, mut units, mut fingerprints, mut keys, mut key_ends) = match self
            .spare
            .try_recv()
        {
            Ok(Doc {
                body: Body::Vertical { bytes, ends, roles }, unit_tokens, fingerprints, keys, key_ends, ..
            }) => (bytes, ends, roles, unit_tokens, fingerprints, keys, key_ends),
            _ => Default::default(),
        };
        bytes.clear();
        ends.clear();
        roles.clear();
        units.clear();
        units.push(0);
        fingerprints.clear();
        keys.clear();
        key_ends.clear();
        let mut unit_has_lines = false;
        let mut boundary_next = false;
        // Token lines need no more than counting when nothing else is asked of them.
        let plain = self.stopwords.is_empty() && self.hasher.is_none() && !self.keys;
        loop {
            if plain && !boundary_next && self.token_lines(&mut bytes, &mut ends, &mut roles, &mut units)? {
                unit_has_lines = true;
                continue;
            }
            let Some(start) = self.read_line(&mut bytes)? else {
                let input = self.current.as_mut().expect("an open input");
                if !input.in_doc {
                    return Ok(None);
                }
                input.in_doc = false;
                break;
            };
            let in_doc = self.current.as_ref().is_some_and(|c| c.in_doc);
            let line = &bytes[start..];
            let kind = VerticalLine::classify(line);
            let (role, token) = match kind {
                VerticalLine::DocOpen(_) if in_doc => {
                    // The next document begins: this one ends here.
                    let input = self.current.as_mut().expect("an open input");
                    input.pending = Some(line.to_vec());
                    input.in_doc = false;
                    bytes.truncate(start);
                    break;
                }
                VerticalLine::DocOpen(_) => {
                    self.current.as_mut().expect("an open input").in_doc = true;
                    (Role::DocTag, None)
                }
                VerticalLine::DocClose if in_doc => {
                    ends.push(bytes.len() as u32);
                    roles.push(Role::DocTag);
                    self.current.as_mut().expect("an open input").in_doc = false;
                    break;
                }
                VerticalLine::DocClose | VerticalLine::Structure(_) | VerticalLine::Blank if !in_doc => {
                    return Ok(Some(Item::Passthrough(line.to_vec())));
                }
                VerticalLine::Token(word) => {
                    if !in_doc {
                        self.current.as_mut().expect("an open input").in_doc = true;
                    }
                    (Role::Unit(0), Some(word))
                }
                _ => (Role::Unit(0), None),
            };
            if role == Role::Unit(0) {
                let (opens, closes) = match (self.unit_tag, kind) {
                    (Some(tag), VerticalLine::Structure(s)) => (is_open_tag(s, tag), is_close_tag(s, tag)),
                    _ => (false, false),
                };
                if (opens || boundary_next) && unit_has_lines {
                    if let Some(h) = self.hasher.as_mut() {
                        fingerprints.push(h.finish());
                    }
                    if self.keys {
                        key_ends.push(keys.len() as u32);
                    }
                    units.push(0);
                }
                boundary_next = closes;
                unit_has_lines = true;
                if let Some(word) = token
                    && !word.is_empty()
                {
                    let count = units.last_mut().expect("a unit");
                    // One token per line, taken as it is: no tokenizer needed to count it.
                    if self.stopwords.is_empty() && self.hasher.is_none() && !self.keys {
                        *count += 1;
                    } else {
                        let word = String::from_utf8_lossy(word);
                        if self.stopwords.is_empty() || !self.stopwords.contains(word.as_ref()) {
                            *count += 1;
                            if let Some(h) = self.hasher.as_mut() {
                                h.add(&word);
                            }
                            if self.keys {
                                keys.extend_from_slice(word.as_bytes());
                                keys.push(KEY_SEPARATOR);
                            }
                        }
                    }
                }
            }
            if bytes.len() > self.doc_limit {
                let input = self.current.as_ref().expect("an open input");
                return Err(PipelineError::Memory {
                    budget: String::new(),
                    what: format!(
                        "{}: line {}: a document larger than {} cannot be held for deduplication; raise --memory",
                        input.name,
                        input.line,
                        human_bytes(self.doc_limit as u64)
                    ),
                });
            }
            ends.push(bytes.len() as u32);
            roles.push(match role {
                Role::Unit(_) => Role::Unit(units.len() as u32 - 1),
                other => other,
            });
        }
        if let Some(h) = self.hasher.as_mut() {
            fingerprints.push(h.finish());
        }
        if self.keys {
            key_ends.push(keys.len() as u32);
        }
        Ok(Some(Item::Doc(Doc {
            body: Body::Vertical { bytes, ends, roles },
            id: Box::new(serde_json::Value::Null),
            unit_tokens: units,
            fingerprints,
            keys,
            key_ends,
        })))
    }
}

/// A read error on the line after `input`'s last, with its offset in the stored file.
fn read_failed(input: &OpenInput, source: std::io::Error) -> PipelineError {
    let offset = input.stored.load(std::sync::atomic::Ordering::Relaxed);
    PipelineError::Corpus(CorpusError::reading(&input.name, input.line + 1, offset, source))
}

/// A document as the reader hands it over.
pub enum Fetched {
    /// Made already: a vertical document (its lines are its tokens), or a line outside documents.
    Made(Item),
    /// A record still to be parsed and tokenised, by a [`DocMaker`].
    Raw(RawDoc),
}

impl Fetched {
    /// The bytes it holds, about (a made document: all its buffers).
    fn bytes(&self) -> usize {
        match self {
            Fetched::Raw(RawDoc::Line { raw, .. }) => raw.len(),
            Fetched::Raw(RawDoc::Row { id, text }) => id.len() + text.len(),
            Fetched::Made(item) => item.heap_bytes(),
        }
    }
}

/// A record read but not yet parsed or tokenised.
pub enum RawDoc {
    /// A line of a JSON Lines (`json`) or text input, without its newline.
    Line { raw: Vec<u8>, json: bool, name: Arc<str>, line: u64, several: bool },
    /// A Parquet row: its ID (given, or numbered) and text.
    Row { id: String, text: String },
}

/// The ID a document without one gets: its line (or row) number, after the
/// input's name when there are several inputs, as the corpus reader numbers it.
fn default_id(name: &str, number: u64, several: bool) -> String {
    if several { format!("{name}:{number}") } else { number.to_string() }
}

/// Makes documents out of raw records: parses them, cuts them into units
/// and tokenises them. It holds no state between documents, so several can
/// work on the records of one stream, one per thread.
pub struct DocMaker {
    text_field: String,
    id_field: String,
    skip_bad: bool,
    unit: UnitKind,
    tokenizer: Tokenizer,
    stopwords: Arc<HashSet<String>>,
    hasher: Option<ExactHasher>,
    /// Collect each unit's normalised text ([`Doc::keys`]).
    keys: bool,
    /// Digest each document made under this fingerprint ([`Doc::digest`]).
    digest: Option<fn(&[u8]) -> u128>,
    /// Give each document its ID as the record has it (for attributes).
    ids: bool,
    /// Leave the token counts to [`KnownUnits::apply`] or to the caller
    /// ([`DocStream::counts_known`]): cut into units only.
    counts_later: bool,
}

impl DocMaker {
    /// Makes the documents of a batch, in order, up to the first that fails.
    fn make_batch(&mut self, id: Batch, batch: Vec<(Fetched, bool, u64)>) -> MadeBatch {
        let mut items = Vec::with_capacity(batch.len());
        for (fetched, vertical, position) in batch {
            let mut item = match fetched {
                Fetched::Made(item) => item,
                Fetched::Raw(raw) => match self.make(raw) {
                    Ok(item) => item,
                    Err(error) => return MadeBatch { id, items, failed: Some(error) },
                },
            };
            self.finish(&mut item);
            items.push((item, vertical, position));
        }
        MadeBatch { id, items, failed: None }
    }

    /// What is done to a document made, on the thread that made it.
    fn finish(&self, item: &mut Item) {
        if let (Some(fingerprint), Item::Doc(doc)) = (self.digest, item) {
            doc.digest(fingerprint);
        }
    }

    pub fn make(&mut self, raw: RawDoc) -> Result<Item, PipelineError> {
        match raw {
            RawDoc::Line { raw, json: false, name, line, several } => {
                let text = utf8_lossy(raw).0;
                let id = Box::new(serde_json::Value::String(default_id(&name, line, several)));
                let units = segment_text(&text, self.unit);
                let doc = self.tokenize_units(&text, &units);
                Ok(Item::Doc(Doc { body: Body::Text { text, units }, id, ..doc }))
            }
            RawDoc::Line { raw, json: true, name, line, several } => self.record(raw, &name, line, several),
            RawDoc::Row { id, text } => {
                let mut record = serde_json::Map::new();
                record.insert(self.id_field.clone(), id.clone().into());
                record.insert(self.text_field.clone(), text.clone().into());
                let appendable = ![&self.id_field, &self.text_field].iter().any(|f| MARK_FIELDS.contains(&f.as_str()));
                let line = serde_json::Value::Object(record).to_string();
                let units = segment_text(&text, self.unit);
                let doc = self.tokenize_units(&text, &units);
                let body = Body::Jsonl { line, text, units, appendable };
                Ok(Item::Doc(Doc { body, id: Box::new(id.into()), ..doc }))
            }
        }
    }

    /// A JSON Lines record.
    fn record(&mut self, raw: Vec<u8>, name: &str, number: u64, several: bool) -> Result<Item, PipelineError> {
        let (line, invalid) = utf8_lossy(raw);
        // Lines that are no record are written back as they were read.
        let as_read = |line: String| invalid.unwrap_or_else(|| line.into_bytes());
        if line.trim().is_empty() {
            return Ok(Item::Passthrough(as_read(line)));
        }
        let (text, id, noted, fault) = match parse_record_noting(&line, &self.text_field, &self.id_field, &MARK_FIELDS)
        {
            Ok(record) => (record.text.map(Cow::into_owned), record.id, record.noted, None),
            Err(e) => (None, None, true, Some(format!("malformed JSON: {e}"))),
        };
        let Some(text) = text else {
            if self.skip_bad {
                return Ok(Item::Passthrough(as_read(line)));
            }
            let mut what = fault.unwrap_or_else(|| format!("no string field \"{}\"", self.text_field));
            if self.counts_later {
                // An earlier pass read this line as a record: only a change to the file explains it now.
                what.push_str(" (the file changed since it was indexed?)");
            }
            return Err(PipelineError::Corpus(CorpusError::BadRecord { name: name.to_owned(), line: number, what }));
        };
        let id = id.unwrap_or_else(|| default_id(name, number, several));
        // Attributes give the ID as the record has it (a number stays a number).
        let id = Box::new(match self.ids {
            true => {
                json_field(&line, &self.id_field).filter(|id| !id.is_null()).unwrap_or(serde_json::Value::String(id))
            }
            false => serde_json::Value::String(id),
        });
        let units = segment_text(&text, self.unit);
        let doc = self.tokenize_units(&text, &units);
        let appendable = !noted && line.trim_end().ends_with('}');
        Ok(Item::Doc(Doc { body: Body::Jsonl { line, text, units, appendable }, id, ..doc }))
    }

    /// Token counts (and fingerprints, and keys) of a text's units; none with `counts_later`.
    fn tokenize_units(&mut self, text: &str, units: &[Range<usize>]) -> Doc {
        let mut doc = Doc {
            body: Body::Text { text: String::new(), units: Vec::new() },
            id: Box::new(serde_json::Value::Null),
            unit_tokens: Vec::new(),
            fingerprints: Vec::new(),
            keys: Vec::new(),
            key_ends: Vec::new(),
        };
        if self.counts_later {
            return doc;
        }
        doc.unit_tokens = vec![0u32; units.len()];
        let (stop, hasher, want_keys) = (&self.stopwords, &mut self.hasher, self.keys);
        let (keys, key_ends, fingerprints) = (&mut doc.keys, &mut doc.key_ends, &mut doc.fingerprints);
        if want_keys {
            // A key is the text's words, each ending in one byte: about the
            // text's length, so it is mostly allocated once, not grown.
            keys.reserve(text.len() + units.len());
            key_ends.reserve(units.len());
        }
        for (i, range) in units.iter().enumerate() {
            let count = &mut doc.unit_tokens[i];
            let mut emit = |w: &str| {
                if stop.is_empty() || !stop.contains(w) {
                    *count += 1;
                    if let Some(h) = hasher.as_mut() {
                        h.add(w);
                    }
                    if want_keys {
                        keys.extend_from_slice(w.as_bytes());
                        keys.push(KEY_SEPARATOR);
                    }
                }
            };
            self.tokenizer.feed(&text[range.clone()], &mut emit);
            if i + 1 == units.len() {
                self.tokenizer.finish(&mut emit);
            }
            if let Some(h) = hasher.as_mut() {
                fingerprints.push(h.finish());
            }
            if want_keys {
                key_ends.push(keys.len() as u32);
            }
        }
        doc
    }
}

/// A line as text, its invalid UTF-8 replaced; and the bytes as read when
/// they were not valid UTF-8 (valid ones are the text's own, not copied).
fn utf8_lossy(raw: Vec<u8>) -> (String, Option<Vec<u8>>) {
    match String::from_utf8(raw) {
        Ok(text) => (text, None),
        Err(e) => {
            let raw = e.into_bytes();
            (String::from_utf8_lossy(&raw).into_owned(), Some(raw))
        }
    }
}

/// Each input file's [`FileStamp`](dupgram_corpus::FileStamp) taken before
/// a job's first reading, to show at the end that a later reading read the
/// same files: what a job relies on when it takes token counts from its
/// first reading ([`DocStream::counts_known`]) instead of counting again.
pub struct InputStamps(Vec<Option<dupgram_corpus::FileStamp>>);

impl InputStamps {
    /// The stamps of `inputs` now (none for standard input, which a job reads once and then from its own copy).
    pub fn of(inputs: &[Input]) -> Self {
        InputStamps(inputs.iter().map(Input::stamp).collect())
    }

    /// Fails when a file of `inputs` (the same list) was written to, cut or replaced since.
    pub fn check(&self, inputs: &[Input]) -> Result<(), PipelineError> {
        for (input, before) in inputs.iter().zip(&self.0) {
            if before.is_some() && input.stamp() != *before {
                return Err(PipelineError::Changed(format!(
                    "{} is not the file it was when the job began (its length or modification time changed)",
                    input.name()
                )));
            }
        }
        Ok(())
    }
}

/// Each unit's token count, saved by an earlier pass, read back in order;
/// the units whose bit is set in `wanted` are tokenised again for their keys.
pub struct KnownUnits<'a> {
    pub counts: std::io::BufReader<std::fs::File>,
    pub path: std::path::PathBuf,
    pub wanted: &'a [u64],
    pub next: u64,
}

impl KnownUnits<'_> {
    /// Fills in the token counts of a document made with `counts_later`
    /// (and the keys of its wanted units); a vertical document, which counts
    /// its tokens as it is read, only moves the count on.
    pub fn apply(&mut self, maker: &mut DocMaker, item: &mut Item) -> Result<(), PipelineError> {
        let Item::Doc(doc) = item else { return Ok(()) };
        let (text, units) = match &doc.body {
            Body::Vertical { .. } => return self.skip(doc.unit_tokens.len()),
            Body::Jsonl { text, units, .. } | Body::Text { text, units } => (text, units),
        };
        let made = self.units(&mut maker.tokenizer, &maker.stopwords, text, units)?;
        doc.unit_tokens = made.unit_tokens;
        doc.keys = made.keys;
        doc.key_ends = made.key_ends;
        Ok(())
    }

    fn count(&mut self) -> Result<u32, PipelineError> {
        let mut bytes = [0u8; 4];
        std::io::Read::read_exact(&mut self.counts, &mut bytes).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                PipelineError::Changed("the corpus has more units than when it was fingerprinted".into())
            } else {
                PipelineError::io(&self.path, e)
            }
        })?;
        Ok(u32::from_le_bytes(bytes))
    }

    fn skip(&mut self, units: usize) -> Result<(), PipelineError> {
        for _ in 0..units {
            self.count()?;
        }
        self.next += units as u64;
        Ok(())
    }

    /// The units of a text: their saved counts, and the keys of the wanted ones.
    fn units(
        &mut self,
        tokenizer: &mut Tokenizer,
        stopwords: &HashSet<String>,
        text: &str,
        units: &[Range<usize>],
    ) -> Result<Doc, PipelineError> {
        let mut counts = Vec::with_capacity(units.len());
        let (mut keys, mut key_ends) = (Vec::new(), Vec::with_capacity(units.len()));
        for range in units {
            let count = self.count()?;
            let u = self.next;
            self.next += 1;
            if self.wanted.get((u / 64) as usize).is_some_and(|w| w & (1 << (u % 64)) != 0) {
                let mut tokens = 0u32;
                let mut emit = |w: &str| {
                    if stopwords.is_empty() || !stopwords.contains(w) {
                        tokens += 1;
                        keys.extend_from_slice(w.as_bytes());
                        keys.push(KEY_SEPARATOR);
                    }
                };
                tokenizer.feed(&text[range.clone()], &mut emit);
                tokenizer.finish(&mut emit);
                if tokens != count {
                    return Err(PipelineError::Changed(format!(
                        "unit {} has {tokens} tokens now and had {count} when it was fingerprinted",
                        u + 1
                    )));
                }
            }
            counts.push(count);
            key_ends.push(keys.len() as u32);
        }
        Ok(Doc {
            body: Body::Text { text: String::new(), units: Vec::new() },
            id: Box::new(serde_json::Value::Null),
            unit_tokens: counts,
            fingerprints: Vec::new(),
            keys,
            key_ends,
        })
    }
}

/// `<p>` or `<p …>` for tag `p`.
fn is_open_tag(line: &[u8], tag: &str) -> bool {
    line.strip_prefix(b"<")
        .and_then(|rest| rest.strip_prefix(tag.as_bytes()))
        .is_some_and(|rest| rest.first().is_some_and(|&b| b == b'>' || b == b' '))
}

/// `</p>` for tag `p`.
fn is_close_tag(line: &[u8], tag: &str) -> bool {
    line.strip_prefix(b"</").and_then(|rest| rest.strip_prefix(tag.as_bytes())) == Some(b">".as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::ZstdNeed;

    /// A JSON Lines file of `lines` records, the ones in `bad` not records at all.
    fn corpus(dir: &std::path::Path, lines: usize, bad: &[usize]) -> Input {
        let path = dir.join("corpus.jsonl");
        let mut text = String::new();
        for i in 1..=lines {
            if bad.contains(&i) {
                text.push_str("{\"text\": \n");
            } else {
                text.push_str(&format!("{{\"id\": \"d{i}\", \"text\": \"Word {} and WORD {i}. Next one\"}}\n", i % 7));
            }
        }
        std::fs::write(&path, text).unwrap();
        Input::Path(path)
    }

    fn stream<'a>(inputs: &'a [Input], unit: UnitKind) -> DocStream<'a> {
        let plan = MemoryPlan::new(64 << 20, 2, ZstdNeed::None).unwrap();
        let mut stream = DocStream::new(
            inputs,
            &ReadOptions::default(),
            plan,
            unit,
            (Normalization::default(), &[]),
            1 << 20,
            crossbeam_channel::never(),
        );
        stream.keys = true;
        stream
    }

    /// A document's ID, unit token counts and keys (the separators as `|`).
    fn described(doc: &Doc) -> String {
        format!("{} {:?} {}", doc.id, doc.unit_tokens, String::from_utf8_lossy(&doc.keys).replace('\u{fffd}', "|"))
    }

    /// What `each` sees: every document described.
    fn read_all(inputs: &[Input], threads: usize) -> Result<Vec<String>, PipelineError> {
        let mut seen = Vec::new();
        // A small working memory: batches of a few records, many of them in flight.
        read_batched(stream(inputs, UnitKind::Sentence), &Control::default(), (1 << 20, threads), |item, _, _| {
            if let Item::Doc(doc) = item {
                seen.push(described(&doc));
            }
            Ok(())
        })?;
        Ok(seen)
    }

    #[test]
    fn the_workers_hand_documents_over_in_corpus_order() {
        let dir = tempfile::tempdir().unwrap();
        let inputs = [corpus(dir.path(), 5000, &[])];
        let mut one_by_one = Vec::new();
        let mut s = stream(&inputs, UnitKind::Sentence);
        while let Some(item) = s.next_doc().unwrap() {
            if let Item::Doc(doc) = item {
                one_by_one.push(described(&doc));
            }
        }
        assert_eq!(one_by_one.len(), 5000);
        assert_eq!(one_by_one[4], r#""d5" [5, 2] word|5|and|word|5|next|one|"#);
        for threads in [1, 2, 5] {
            assert_eq!(read_all(&inputs, threads).unwrap(), one_by_one, "{threads} threads");
        }
    }

    /// Every item of a vertical stream: documents as their lines, each line's
    /// role and their units' token counts; other lines as they are.
    fn vertical_items(inputs: &[Input], unit: UnitKind, keys: bool) -> Vec<String> {
        let mut s = stream(inputs, unit);
        s.keys = keys;
        let mut items = Vec::new();
        while let Some(item) = s.next_doc().unwrap() {
            items.push(match item {
                Item::Doc(Doc { body: Body::Vertical { bytes, ends, roles }, unit_tokens, .. }) => {
                    let lines = ends.iter().scan(0, |start, &end| {
                        let line = String::from_utf8_lossy(&bytes[*start as usize..end as usize]).into_owned();
                        *start = end;
                        Some(line)
                    });
                    format!("{:?} {:?} {unit_tokens:?}", lines.collect::<Vec<_>>(), roles)
                }
                Item::Doc(_) => panic!("a vertical input made another kind of document"),
                Item::Passthrough(line) => format!("passthrough {}", String::from_utf8_lossy(&line)),
            });
        }
        items
    }

    #[test]
    fn a_short_slice_appended_as_a_window_is_the_slice() {
        let src: Vec<u8> = (0..40u8).collect();
        for start in 0..=src.len() {
            for end in start..=src.len() {
                let mut out = b"before".to_vec();
                extend_short(&mut out, &src, start..end);
                assert_eq!(out[..6], *b"before");
                assert_eq!(out[6..], src[start..end], "{start}..{end}");
            }
        }
    }

    #[test]
    fn vertical_token_lines_read_in_runs_make_what_line_by_line_makes() {
        // Counting tokens only, a run of token lines is taken at once; with
        // keys, every line is classified alone.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mixed.vert");
        std::fs::write(&path, dupgram_fuzzkit::samples::mixed_vertical(150_000, 7)).unwrap();
        let inputs = [Input::Path(path)];
        for unit in [UnitKind::Document, UnitKind::Paragraph, UnitKind::Sentence] {
            let line_by_line = vertical_items(&inputs, unit, true);
            assert!(line_by_line.len() > 5000, "{unit:?}: {} items", line_by_line.len());
            assert_eq!(vertical_items(&inputs, unit, false), line_by_line, "{unit:?}");
        }
    }

    /// A document's unit token counts, and each unit's key length and fingerprint.
    type UnitDigests = (Vec<u32>, Vec<(usize, u128)>);

    /// A fingerprint that is the key itself, as far as 16 bytes hold it.
    fn key_prefix(key: &[u8]) -> u128 {
        key.iter().take(16).fold(0, |f, &b| (f << 8) | u128::from(b))
    }

    #[test]
    fn a_digested_document_keeps_each_key_as_its_length_and_fingerprint() {
        let dir = tempfile::tempdir().unwrap();
        let inputs = [corpus(dir.path(), 300, &[])];
        let mut kept: Vec<UnitDigests> = Vec::new();
        let mut s = stream(&inputs, UnitKind::Sentence);
        while let Some(item) = s.next_doc().unwrap() {
            if let Item::Doc(doc) = item {
                let units = 0..doc.unit_tokens.len();
                kept.push((
                    doc.unit_tokens.clone(),
                    units.map(|u| (doc.key(u).len(), key_prefix(doc.key(u)))).collect(),
                ));
            }
        }
        for threads in [1, 2] {
            let mut digested: Vec<UnitDigests> = Vec::new();
            let mut s = stream(&inputs, UnitKind::Sentence);
            s.digest = Some(key_prefix);
            read_batched(s, &Control::default(), (1 << 20, threads), |item, _, _| {
                if let Item::Doc(doc) = item {
                    assert!(doc.keys.is_empty() && doc.heap_bytes() < 128, "{}", doc.heap_bytes());
                    let units = 0..doc.unit_tokens.len();
                    digested.push((
                        doc.unit_tokens.clone(),
                        units.map(|u| (doc.key_len(u), doc.fingerprints[u])).collect(),
                    ));
                }
                Ok(())
            })
            .unwrap();
            assert_eq!(digested, kept, "{threads} threads");
        }
    }

    #[test]
    fn documents_longer_than_a_batch_take_the_read_ahead_alone_and_arrive_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("long.jsonl");
        let mut text = String::new();
        for i in 0..60 {
            // Every fifth record is 300 KB, more than all the slots (64 KB each) together.
            let words = if i % 5 == 0 { 60_000 } else { 3 };
            text.push_str(&format!("{{\"id\": {i}, \"text\": \"{}\"}}\n", "w0rd ".repeat(words)));
        }
        std::fs::write(&path, text).unwrap();
        let inputs = [Input::Path(path)];
        for threads in [1, 2] {
            let mut seen = Vec::new();
            read_batched(stream(&inputs, UnitKind::Document), &Control::default(), (1 << 20, threads), |item, _, _| {
                if let Item::Doc(doc) = item {
                    seen.push((doc.id.to_string(), doc.unit_tokens));
                }
                Ok(())
            })
            .unwrap();
            let expected: Vec<_> =
                (0..60).map(|i| (format!("\"{i}\""), vec![if i % 5 == 0 { 60_000 } else { 3 }])).collect();
            assert_eq!(seen, expected, "{threads} threads");
        }
    }

    #[test]
    fn the_first_bad_record_in_corpus_order_is_the_one_reported() {
        let dir = tempfile::tempdir().unwrap();
        let inputs = [corpus(dir.path(), 5000, &[4100, 1503, 2700])];
        for threads in [1, 2, 5] {
            let error = read_all(&inputs, threads).unwrap_err().to_string();
            assert!(error.contains("line 1503"), "{threads} threads: {error}");
        }
    }

    #[test]
    fn an_error_of_each_stops_the_reading() {
        let dir = tempfile::tempdir().unwrap();
        let inputs = [corpus(dir.path(), 5000, &[])];
        let mut docs = 0;
        let result = read_batched(stream(&inputs, UnitKind::Document), &Control::default(), (1 << 20, 2), |_, _, _| {
            docs += 1;
            if docs == 700 { Err(PipelineError::Interrupted) } else { Ok(()) }
        });
        assert!(matches!(result, Err(PipelineError::Interrupted)));
        assert_eq!(docs, 700);
    }

    #[test]
    fn a_marked_record_keeps_its_bytes_and_gets_no_second_field_of_a_name() {
        let mut out = Vec::new();
        let line = "{\"id\": 1, \"text\": \"caf\\u00e9 x\"}  ";
        marked_record(&mut out, line, true, 0.5, &[[0, 4]]).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"id\": 1, \"text\": \"caf\\u00e9 x\",\"dup_fraction\":0.5,\"dup_spans\":[[0,4]]}\n"
        );
        let mut out = Vec::new();
        marked_record(&mut out, "{\"text\": \"a\"}", true, 0.0, &[]).unwrap();
        marked_record(&mut out, "{\"text\": \"a\"}", true, 2.0 / 3.0, &[[1, 2], [3, 4]]).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"text\": \"a\",\"dup_fraction\":0.0,\"dup_spans\":[]}\n\
             {\"text\": \"a\",\"dup_fraction\":0.666667,\"dup_spans\":[[1,2],[3,4]]}\n"
        );
        // A record that has one of the fields already: it is replaced, not repeated.
        let mut out = Vec::new();
        marked_record(&mut out, "{\"text\": \"a\", \"dup_spans\": 7}", false, 1.0 / 3.0, &[]).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "{\"text\":\"a\",\"dup_spans\":[],\"dup_fraction\":0.333333}\n");
    }

    #[test]
    fn a_stripped_record_is_written_as_read_unless_something_was_cut() {
        let line = "{\"id\": 1, \"text\": \"a b c\", \"x\": 1.50}\r";
        let mut out = Vec::new();
        stripped_record(&mut out, line, "text", None).unwrap();
        stripped_record(&mut out, line, "text", Some("a c".into())).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"id\": 1, \"text\": \"a b c\", \"x\": 1.50}\n{\"id\":1,\"text\":\"a c\",\"x\":1.5}\n"
        );
    }

    #[test]
    fn records_with_the_marking_fields_are_not_appendable() {
        let mut maker = stream(&[], UnitKind::Document).maker();
        let appendable = |maker: &mut DocMaker, line: &str| {
            let raw = RawDoc::Line {
                raw: line.as_bytes().to_vec(),
                json: true,
                name: Arc::from("x"),
                line: 1,
                several: false,
            };
            match maker.make(raw).unwrap() {
                Item::Doc(Doc { body: Body::Jsonl { appendable, .. }, .. }) => appendable,
                _ => panic!("not a record: {line}"),
            }
        };
        assert!(appendable(&mut maker, r#"{"text": "a b"}"#));
        assert!(!appendable(&mut maker, r#"{"text": "a b", "dup_fraction": 0}"#));
        assert!(!appendable(&mut maker, r#"{"dup\u005fspans": [], "text": "a b"}"#));
    }
}
