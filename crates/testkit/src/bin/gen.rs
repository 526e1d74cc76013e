//! `dupgram-gen`: writes a synthetic corpus with planted duplication.
//!
//!     dupgram-gen --tokens 10M --seed 7 --format jsonl > corpus.jsonl

use std::io::{BufWriter, Write};

use dupgram_testkit::CorpusSpec;
use dupgram_testkit::generate::{Layout, write_corpus};

fn main() -> anyhow::Result<()> {
    let mut spec = CorpusSpec::default();
    let mut layout = Layout::Jsonl;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| anyhow::anyhow!("{flag} needs a value"));
        match flag.as_str() {
            "--tokens" => spec.tokens = count(&value()?)?,
            "--seed" => spec.seed = value()?.parse()?,
            "--vocabulary" => spec.vocabulary = count(&value()?)? as u32,
            "--mean-doc-len" => spec.mean_doc_len = value()?.parse()?,
            "--exact" => spec.exact_copies = value()?.parse()?,
            "--near" => spec.near_copies = value()?.parse()?,
            "--passages" => spec.passages = value()?.parse()?,
            "--open-vocabulary" => spec.open_vocabulary = value()?.parse()?,
            "--open-zipf" => spec.open_zipf = value()?.parse()?,
            "--format" => {
                layout = match value()?.as_str() {
                    "jsonl" => Layout::Jsonl,
                    "text" => Layout::Text,
                    "vertical" => Layout::Vertical,
                    other => anyhow::bail!("unknown format {other}"),
                }
            }
            "-h" | "--help" => {
                println!(
                    "dupgram-gen [--tokens N] [--seed S] [--vocabulary V] [--mean-doc-len L] [--exact P] [--near P] [--passages P] [--open-vocabulary SHARE] [--open-zipf S] [--format jsonl|text|vertical]"
                );
                return Ok(());
            }
            other => anyhow::bail!("unknown option {other}"),
        }
    }
    anyhow::ensure!((0.0..=1.0).contains(&spec.open_vocabulary), "--open-vocabulary is a share, from 0 to 1");
    anyhow::ensure!(spec.open_zipf > 1.0, "--open-zipf must be more than 1");
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 20, stdout.lock());
    let (docs, tokens) = write_corpus(spec, layout, &mut out)?;
    out.flush()?;
    eprintln!("dupgram-gen: {docs} documents, {tokens} tokens");
    Ok(())
}

/// 10M → 10_000_000; 2k → 2000; 1B (or 1G) → 1_000_000_000.
fn count(text: &str) -> anyhow::Result<u64> {
    let (num, scale) = match text.chars().last() {
        Some('k' | 'K') => (&text[..text.len() - 1], 1_000),
        Some('m' | 'M') => (&text[..text.len() - 1], 1_000_000),
        Some('g' | 'G' | 'b' | 'B') => (&text[..text.len() - 1], 1_000_000_000),
        _ => (text, 1),
    };
    let num: f64 = num.parse().map_err(|_| anyhow::anyhow!("{text:?} is not a count (such as 100M, 1.5B or 2k)"))?;
    Ok((num * scale as f64) as u64)
}
