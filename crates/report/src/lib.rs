//! Reports on what a corpus repeats: Pomikálek & Rychlý's Table 1 (unique
//! and duplicate n-grams for a range of n) and Benko's length tables (units
//! and tokens a deduplication removed and kept, by unit length), as TSV and as
//! one self-contained HTML page whose charts are inline SVG — no script, no
//! network, readable offline and from an archive.

mod svg;

use dupgram_dedup::LengthTable;
use serde::Serialize;

/// One row of the n-gram table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct NgramRow {
    pub n: usize,
    /// N-gram occurrences.
    pub ngrams: u64,
    pub distinct: u64,
    /// N-grams occurring once (`N_unq`).
    pub unique: u64,
    /// N-grams occurring twice or more (`T_dup`), and their occurrences (`N_dup`).
    pub duplicate_types: u64,
    pub duplicate_occurrences: u64,
}

/// The length table of one deduplication run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LengthReport {
    /// Where it came from (a file name).
    pub name: String,
    /// `doc`, `p` or `s`.
    pub unit: String,
    pub table: LengthTable,
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 { 0.0 } else { 100.0 * part as f64 / whole as f64 }
}

/// Both tables as TSV, each under a `#` heading line.
pub fn tsv(ngrams: &[NgramRow], lengths: &[LengthReport]) -> String {
    let mut out = String::new();
    if !ngrams.is_empty() {
        out.push_str(
            "# n-grams\nn\tngrams\tdistinct\tunique\tduplicate_types\tduplicate_occurrences\tduplicate_share\n",
        );
        for r in ngrams {
            out.push_str(&format!(
                "{}\t{}\t{}\t{}\t{}\t{}\t{:.4}\n",
                r.n,
                r.ngrams,
                r.distinct,
                r.unique,
                r.duplicate_types,
                r.duplicate_occurrences,
                pct(r.duplicate_occurrences, r.ngrams) / 100.0
            ));
        }
    }
    for l in lengths {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!("# lengths of units ({}) in {}\n", l.unit, l.name));
        out.push_str("length\tunits_removed\tunits_kept\tunits\ttokens_removed\ttokens_kept\ttokens\n");
        for r in l.table.used_rows().copied().chain(std::iter::once(l.table.total())) {
            let label = if r == l.table.total() { "total".to_string() } else { r.length.to_string() };
            out.push_str(&format!(
                "{label}\t{}\t{}\t{}\t{}\t{}\t{}\n",
                r.units_removed,
                r.units_kept,
                r.units_removed + r.units_kept,
                r.tokens_removed,
                r.tokens_kept,
                r.tokens_removed + r.tokens_kept
            ));
        }
    }
    out
}

/// A self-contained HTML report.
pub fn html(title: &str, ngrams: &[NgramRow], lengths: &[LengthReport]) -> String {
    let mut body = String::new();
    if !ngrams.is_empty() {
        body.push_str("<h2>Duplicate n-grams by n</h2>\n<p>As in Pomikálek &amp; Rychlý's Table 1: n-grams occurring once (unique), distinct n-grams occurring twice or more (duplicate types) and their occurrences.</p>\n");
        body.push_str(&svg::bars(
            "Share of n-gram occurrences that are duplicates",
            &ngrams.iter().map(|r| (r.n.to_string(), vec![pct(r.duplicate_occurrences, r.ngrams)])).collect::<Vec<_>>(),
            &["duplicate occurrences, % of all"],
            "%",
        ));
        body.push_str(&svg::bars(
            "Duplicate n-gram types, % of distinct n-grams",
            &ngrams.iter().map(|r| (r.n.to_string(), vec![pct(r.duplicate_types, r.distinct)])).collect::<Vec<_>>(),
            &["duplicate types, % of distinct"],
            "%",
        ));
        body.push_str("<table>\n<tr><th>n</th><th>n-grams</th><th>distinct</th><th>unique</th><th>duplicate types</th><th>duplicate occurrences</th><th>share</th></tr>\n");
        for r in ngrams {
            body.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1} %</td></tr>\n",
                r.n,
                group(r.ngrams),
                group(r.distinct),
                group(r.unique),
                group(r.duplicate_types),
                group(r.duplicate_occurrences),
                pct(r.duplicate_occurrences, r.ngrams)
            ));
        }
        body.push_str("</table>\n");
    }
    for l in lengths {
        let total = l.table.total();
        let units = total.units_removed + total.units_kept;
        let tokens = total.tokens_removed + total.tokens_kept;
        body.push_str(&format!(
            "<h2>What deduplication removed: units ({}) by length — {}</h2>\n<p>{} of {} units removed ({:.1} %), {} of {} tokens ({:.1} %). Lengths are grouped by powers of two, as in Benko (2013): group 4 holds units of 4 to 7 tokens.</p>\n",
            escape(&l.unit),
            escape(&l.name),
            group(total.units_removed),
            group(units),
            pct(total.units_removed, units),
            group(total.tokens_removed),
            group(tokens),
            pct(total.tokens_removed, tokens)
        ));
        let rows: Vec<_> = l.table.used_rows().copied().collect();
        body.push_str(&svg::bars(
            "Units by length, % of all units",
            &rows
                .iter()
                .map(|r| (length_label(r.length), vec![pct(r.units_kept, units), pct(r.units_removed, units)]))
                .collect::<Vec<_>>(),
            &["kept", "removed"],
            "%",
        ));
        body.push_str(&svg::bars(
            "Tokens by unit length, % of all tokens",
            &rows
                .iter()
                .map(|r| (length_label(r.length), vec![pct(r.tokens_kept, tokens), pct(r.tokens_removed, tokens)]))
                .collect::<Vec<_>>(),
            &["kept", "removed"],
            "%",
        ));
        body.push_str("<table>\n<tr><th>length</th><th>units removed</th><th>units kept</th><th>tokens removed</th><th>tokens kept</th></tr>\n");
        for r in rows.iter().chain(std::iter::once(&total)) {
            let label = if std::ptr::eq(r, &total) { "total".to_string() } else { length_label(r.length) };
            body.push_str(&format!(
                "<tr><td>{label}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                group(r.units_removed),
                group(r.units_kept),
                group(r.tokens_removed),
                group(r.tokens_kept)
            ));
        }
        body.push_str("</table>\n");
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{title}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<h1>{title}</h1>\n{body}<p class=\"foot\">Made by dupgram.</p>\n</body>\n</html>\n",
        title = escape(title)
    )
}

const STYLE: &str =
    "body { font: 15px/1.5 system-ui, sans-serif; max-width: 60em; margin: 2em auto; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 1em 0 2em; }
th, td { padding: 0.2em 0.8em; text-align: right; border-bottom: 1px solid #ddd; }
th { background: #f4f4f4; }
svg { display: block; margin: 1em 0; }
.foot { color: #888; font-size: 0.85em; }
";

/// "4–7" for the group of length 4.
fn length_label(length: u64) -> String {
    if length <= 1 { length.to_string() } else { format!("{length}–{}", 2 * length - 1) }
}

/// Text safe inside HTML.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// 1234567 → "1,234,567": counts as the reports and the command line's summaries print them.
pub fn group(v: u64) -> String {
    let digits = v.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (Vec<NgramRow>, Vec<LengthReport>) {
        let rows = vec![
            NgramRow { n: 1, ngrams: 100, distinct: 40, unique: 25, duplicate_types: 15, duplicate_occurrences: 75 },
            NgramRow { n: 2, ngrams: 99, distinct: 80, unique: 70, duplicate_types: 10, duplicate_occurrences: 29 },
        ];
        let mut table = LengthTable::default();
        for (len, removed) in [(1, true), (3, false), (9, true), (9, false)] {
            table.add(len, removed);
        }
        (rows, vec![LengthReport { name: "run <1>".into(), unit: "p".into(), table }])
    }

    #[test]
    fn tsv_tables() {
        let (rows, lengths) = sample();
        let text = tsv(&rows, &lengths);
        assert!(text.starts_with("# n-grams\nn\tngrams"));
        assert!(text.contains("\n1\t100\t40\t25\t15\t75\t0.7500\n"));
        assert!(text.contains("# lengths of units (p) in run <1>\n"));
        assert!(text.contains("\n8\t1\t1\t2\t9\t9\t18\n"));
        assert!(text.contains("\ntotal\t2\t2\t4\t10\t12\t22\n"));
    }

    #[test]
    fn html_is_self_contained() {
        let (rows, lengths) = sample();
        let page = html("Report", &rows, &lengths);
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert_eq!(page.matches("<svg").count(), 4);
        assert!(page.contains("run &lt;1&gt;"));
        for external in ["<script", "<link", "src=", "url(", "http:", "https:"] {
            assert!(!page.contains(external), "{external} in the page");
        }
    }
}
