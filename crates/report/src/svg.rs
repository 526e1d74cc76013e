//! Bar charts as inline SVG.

use std::fmt::Write;

const COLORS: [&str; 3] = ["#4878a8", "#d8743c", "#6aa35a"];
const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 260.0;
const LEFT: f64 = 56.0;
const BOTTOM: f64 = 40.0;
const TOP: f64 = 34.0;

/// A bar chart: one bar per label, its values stacked; `series` names the values.
pub fn bars(title: &str, data: &[(String, Vec<f64>)], series: &[&str], unit: &str) -> String {
    let max = data.iter().map(|(_, v)| v.iter().sum::<f64>()).fold(0.0, f64::max);
    let top = nice_ceiling(max);
    let plot_w = WIDTH - LEFT - 16.0;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let slot = plot_w / data.len().max(1) as f64;
    let bar = (slot * 0.7).min(60.0);
    let mut svg = String::new();
    let _ = write!(
        svg,
        "<svg width=\"{WIDTH}\" height=\"{HEIGHT}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\" aria-label=\"{t}\">\n<text x=\"{LEFT}\" y=\"18\" font-size=\"14\" font-weight=\"bold\">{t}</text>\n",
        t = crate::escape(title)
    );
    for i in 0..=4 {
        let v = top * f64::from(i) / 4.0;
        let y = TOP + plot_h - plot_h * f64::from(i) / 4.0;
        let _ = writeln!(
            svg,
            "<line x1=\"{LEFT}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\">{}{unit}</text>",
            WIDTH - 16.0,
            LEFT - 6.0,
            y + 4.0,
            short(v)
        );
    }
    for (i, (label, values)) in data.iter().enumerate() {
        let x = LEFT + slot * i as f64 + (slot - bar) / 2.0;
        let mut y = TOP + plot_h;
        for (j, &v) in values.iter().enumerate() {
            let h = if top > 0.0 { plot_h * v / top } else { 0.0 };
            y -= h;
            let _ = writeln!(
                svg,
                "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{bar:.1}\" height=\"{h:.1}\" fill=\"{}\"><title>{}: {}{unit}</title></rect>",
                COLORS[j % COLORS.len()],
                crate::escape(series.get(j).copied().unwrap_or("")),
                short(v)
            );
        }
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">{}</text>",
            x + bar / 2.0,
            TOP + plot_h + 16.0,
            crate::escape(label)
        );
    }
    // The legend sits top right, beside the title (one series needs none: the title names it).
    let widths: Vec<f64> = series.iter().map(|s| 24.0 + 7.0 * s.chars().count() as f64).collect();
    for (j, name) in series.iter().enumerate().filter(|_| series.len() > 1) {
        let x = WIDTH - 16.0 - widths[j..].iter().sum::<f64>();
        let _ = writeln!(
            svg,
            "<rect x=\"{x:.1}\" y=\"8\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{:.1}\" y=\"18\" font-size=\"12\">{}</text>",
            COLORS[j % COLORS.len()],
            x + 16.0,
            crate::escape(name)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// A round number at or above `v` for the top of an axis.
fn nice_ceiling(v: f64) -> f64 {
    if v <= 0.0 {
        return 1.0;
    }
    let scale = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * scale).find(|&c| c >= v).unwrap_or(10.0 * scale)
}

fn short(v: f64) -> String {
    if v >= 100.0 || v == v.floor() { format!("{v:.0}") } else { format!("{v:.1}") }
}

#[cfg(test)]
mod tests {
    #[test]
    fn axis_tops_are_round() {
        assert_eq!(super::nice_ceiling(73.0), 100.0);
        assert_eq!(super::nice_ceiling(18.0), 20.0);
        assert_eq!(super::nice_ceiling(0.0), 1.0);
        assert_eq!(super::nice_ceiling(2.2), 2.5);
    }
}
