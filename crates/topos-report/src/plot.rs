//! Plots as SVG written by hand (no plotting crate: a few axes, lines and bars are less code than
//! a dependency), and their PNG rendering through `resvg` with a bundled font (so no system font
//! or fontconfig is needed): the convergence of several runs (held-out log-likelihood per token
//! and tokens/s against iterations and against training seconds, runs overlaid) and topic
//! prevalence. Every text is XML-escaped.

use crate::trainlog::TrainLog;
use std::fmt::Write as _;

/// Colours of the runs, in order (Okabe–Ito, distinguishable with colour blindness).
pub const COLOURS: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442",
];

/// Escapes `&`, `<`, `>`, `"` and `'` for XML and HTML text and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// One line of a chart.
pub struct Series<'a> {
    pub name: &'a str,
    pub colour: &'a str,
    pub points: Vec<(f64, f64)>,
}

/// Round tick positions covering [lo, hi].
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = (hi - lo).max(f64::MIN_POSITIVE);
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 6.0)
        .unwrap_or(10.0 * mag);
    let mut t = (lo / step).ceil() * step;
    let mut out = Vec::new();
    while t <= hi + step * 1e-9 && out.len() < 20 {
        out.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
        t += step;
    }
    out
}

fn label(x: f64) -> String {
    let a = x.abs();
    if a >= 1e6 {
        let s = format!("{:.3}", x / 1e6);
        format!("{}M", s.trim_end_matches('0').trim_end_matches('.'))
    } else if a >= 1e4 {
        format!("{:.0}k", x / 1e3)
    } else if a == 0.0 || a >= 1.0 && x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        let s = format!("{x:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// One line chart at (`x0`, `y0`) of `w` × `h` pixels, appended to `svg`.
#[allow(clippy::too_many_arguments)]
pub fn line_chart(
    svg: &mut String,
    x0: f64,
    y0: f64,
    w: f64,
    h: f64,
    title: &str,
    x_label: &str,
    series: &[Series],
) {
    let (ml, mr, mt, mb) = (62.0, 12.0, 26.0, 40.0);
    let (pw, ph) = (w - ml - mr, h - mt - mb);
    let pts = series.iter().flat_map(|s| s.points.iter());
    let (mut xmin, mut xmax, mut ymin, mut ymax) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in pts {
        xmin = xmin.min(x);
        xmax = xmax.max(x);
        ymin = ymin.min(y);
        ymax = ymax.max(y);
    }
    let _ = write!(
        svg,
        r#"<g transform="translate({x0},{y0})"><text x="{}" y="16" font-size="13" text-anchor="middle" font-weight="bold">{}</text>"#,
        w / 2.0,
        escape(title)
    );
    if xmin > xmax {
        let _ = write!(
            svg,
            r##"<text x="{}" y="{}" font-size="12" text-anchor="middle" fill="#777">no data</text></g>"##,
            w / 2.0,
            h / 2.0
        );
        return;
    }
    if xmax - xmin < 1e-12 {
        xmax = xmin + 1.0;
    }
    if ymax - ymin < 1e-12 * ymax.abs().max(1.0) {
        ymin -= 0.5 * ymin.abs().max(1e-3);
        ymax += 0.5 * ymax.abs().max(1e-3);
    } else {
        let pad = 0.05 * (ymax - ymin);
        ymin -= pad;
        ymax += pad;
    }
    let sx = |x: f64| ml + (x - xmin) / (xmax - xmin) * pw;
    let sy = |y: f64| mt + (ymax - y) / (ymax - ymin) * ph;
    let _ = write!(
        svg,
        r##"<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>"##
    );
    for t in ticks(xmin, xmax) {
        let x = sx(t);
        let _ = write!(
            svg,
            r##"<line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{}" stroke="#eee"/><text x="{x:.1}" y="{}" font-size="11" text-anchor="middle">{}</text>"##,
            mt,
            mt + ph,
            mt + ph + 14.0,
            label(t)
        );
    }
    for t in ticks(ymin, ymax) {
        let y = sy(t);
        let _ = write!(
            svg,
            r##"<line x1="{ml}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#eee"/><text x="{}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"##,
            ml + pw,
            ml - 4.0,
            y + 4.0,
            label(t)
        );
    }
    let _ = write!(
        svg,
        r#"<text x="{}" y="{}" font-size="12" text-anchor="middle">{}</text>"#,
        ml + pw / 2.0,
        h - 6.0,
        escape(x_label)
    );
    for s in series {
        if s.points.is_empty() {
            continue;
        }
        let path: Vec<String> = s
            .points
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", sx(x), sy(y)))
            .collect();
        let _ = write!(
            svg,
            r#"<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>"#,
            s.colour,
            path.join(" ")
        );
        for &(x, y) in &s.points {
            let _ = write!(
                svg,
                r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{}"/>"#,
                sx(x),
                sy(y),
                s.colour
            );
        }
    }
    svg.push_str("</g>");
}

fn svg_open(w: f64, h: f64) -> String {
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="DejaVu Sans, sans-serif"><rect width="{w}" height="{h}" fill="white"/>"#
    )
}

/// The convergence figure of several runs: held-out log-likelihood per token (the training one
/// for a run that logged none) and tokens/s, each against iterations and against training
/// seconds, one colour per run with a legend. A log that holds several runs appended to one
/// file draws each as its own line ([`crate::trainlog::series_of`]).
pub fn convergence_svg(logs: &[TrainLog]) -> String {
    let logs = &crate::trainlog::series_of(logs);
    let (w, h) = (900.0, 640.0);
    let mut svg = svg_open(w, h);
    let held = logs
        .iter()
        .any(|l| l.points.iter().any(|p| p.heldout_ll.is_some()));
    let ll = |p: &crate::trainlog::LogPoint| if held { p.heldout_ll } else { p.train_ll };
    let what = if held {
        "held-out log-likelihood per token"
    } else {
        "training log-likelihood per token"
    };
    let series = |f: &dyn Fn(&crate::trainlog::LogPoint) -> Option<(f64, f64)>| -> Vec<Series> {
        logs.iter()
            .enumerate()
            .map(|(i, l)| Series {
                name: &l.name,
                colour: COLOURS[i % COLOURS.len()],
                points: l.points.iter().filter_map(f).collect(),
            })
            .collect()
    };
    let panels: [(&str, &str, Vec<Series>); 4] = [
        (
            what,
            "iteration",
            series(&|p| ll(p).map(|y| (p.iteration as f64, y))),
        ),
        (
            what,
            "training seconds",
            series(&|p| ll(p).map(|y| (p.seconds, y))),
        ),
        (
            "tokens/s",
            "iteration",
            series(&|p| Some((p.iteration as f64, p.tokens_per_second))),
        ),
        (
            "tokens/s",
            "training seconds",
            series(&|p| Some((p.seconds, p.tokens_per_second))),
        ),
    ];
    let legend_h = 24.0;
    let (pw, ph) = (w / 2.0, (h - legend_h) / 2.0);
    for (i, (title, xl, s)) in panels.iter().enumerate() {
        let (x0, y0) = ((i % 2) as f64 * pw, legend_h + (i / 2) as f64 * ph);
        line_chart(&mut svg, x0, y0, pw, ph, title, xl, s);
    }
    let mut x = 10.0;
    for (i, l) in logs.iter().enumerate() {
        let c = COLOURS[i % COLOURS.len()];
        let _ = write!(
            svg,
            r#"<rect x="{x}" y="6" width="14" height="12" fill="{c}"/><text x="{}" y="16" font-size="12">{}</text>"#,
            x + 18.0,
            escape(&l.name)
        );
        x += 30.0 + 7.5 * l.name.chars().count() as f64;
    }
    svg.push_str("</svg>");
    svg
}

/// Topic prevalence: one bar per topic, largest first, with its number (at most `max_bars`
/// bars; the rest are summed into one "others" bar).
pub fn prevalence_svg(proportion: &[f64], max_bars: usize) -> String {
    let mut order: Vec<usize> = (0..proportion.len()).collect();
    order.sort_by(|&a, &b| proportion[b].total_cmp(&proportion[a]).then(a.cmp(&b)));
    let shown = order.len().min(max_bars.max(1));
    let rest: f64 = order[shown..].iter().map(|&t| proportion[t]).sum();
    let bars = shown + usize::from(shown < order.len());
    let (w, bar_h) = (640.0, 16.0);
    let h = 40.0 + bars as f64 * bar_h;
    let mut svg = svg_open(w, h);
    let top = proportion
        .iter()
        .fold(0.0f64, |m, &p| m.max(p))
        .max(rest)
        .max(1e-12);
    let _ = write!(
        svg,
        r#"<text x="{}" y="18" font-size="13" text-anchor="middle" font-weight="bold">topic prevalence (share of tokens)</text>"#,
        w / 2.0
    );
    let row = |svg: &mut String, i: usize, name: String, p: f64| {
        let y = 30.0 + i as f64 * bar_h;
        let _ = write!(
            svg,
            r##"<text x="86" y="{:.1}" font-size="11" text-anchor="end">{}</text><rect x="90" y="{:.1}" width="{:.1}" height="{:.1}" fill="#0072B2"/><text x="{:.1}" y="{:.1}" font-size="10">{:.2}%</text>"##,
            y + 12.0,
            escape(&name),
            y + 2.0,
            (w - 160.0) * p / top,
            bar_h - 4.0,
            94.0 + (w - 160.0) * p / top,
            y + 12.0,
            100.0 * p
        );
    };
    for (i, &t) in order[..shown].iter().enumerate() {
        row(&mut svg, i, format!("topic {t}"), proportion[t]);
    }
    if shown < order.len() {
        row(
            &mut svg,
            shown,
            format!("{} others", order.len() - shown),
            rest,
        );
    }
    svg.push_str("</svg>");
    svg
}

/// DejaVu Sans (fonts/DejaVu-LICENSE.txt), the one font PNG plots are drawn with.
const FONT: &[u8] = include_bytes!("../fonts/DejaVuSans.ttf");

/// Renders an SVG of this module as PNG, with the bundled font.
pub fn svg_to_png(svg: &str) -> Result<Vec<u8>, String> {
    use resvg::{tiny_skia, usvg};
    let mut opt = usvg::Options {
        font_family: "DejaVu Sans".into(),
        ..usvg::Options::default()
    };
    {
        let db = opt.fontdb_mut();
        db.load_font_data(FONT.to_vec());
        db.set_sans_serif_family("DejaVu Sans");
    }
    let tree =
        usvg::Tree::from_str(svg, &opt).map_err(|e| format!("cannot render the plot: {e}"))?;
    let size = tree.size().to_int_size();
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| "cannot render an empty plot".to_string())?;
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap
        .encode_png()
        .map_err(|e| format!("cannot encode the PNG: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trainlog::parse_log;

    #[test]
    fn convergence_of_two_runs_escapes_names() {
        let a = parse_log(
            "<run a>",
            "{\"iteration\":10,\"seconds\":1,\"tokens_per_second\":5e5,\"heldout_ll\":-8}\n{\"iteration\":20,\"seconds\":2,\"tokens_per_second\":6e5,\"heldout_ll\":-7.5}",
        )
        .unwrap();
        let b = parse_log(
            "b",
            "{\"iteration\":10,\"seconds\":3,\"tokens_per_second\":2e5,\"heldout_ll\":-7.9}",
        )
        .unwrap();
        let svg = convergence_svg(&[a, b]);
        assert!(svg.contains("&lt;run a&gt;") && !svg.contains("<run a>"));
        assert_eq!(svg.matches("<polyline").count(), 8);
        assert!(svg.contains("held-out log-likelihood"));
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    }

    #[test]
    fn runs_appended_to_one_log_are_separate_lines() {
        let text = [10, 20, 30, 10, 20, 30]
            .iter()
            .map(|it| {
                format!("{{\"iteration\":{it},\"seconds\":{it},\"tokens_per_second\":1e6,\"train_ll\":-7}}\n")
            })
            .collect::<String>();
        let svg = convergence_svg(&[parse_log("run", &text).unwrap()]);
        // Two runs, four panels: eight lines, none going back.
        assert_eq!(svg.matches("<polyline").count(), 8);
        assert!(svg.contains(">run 1<") && svg.contains(">run 2<"), "{svg}");
        assert!(svg.contains(COLOURS[0]) && svg.contains(COLOURS[1]));
        for line in svg.split("points=\"").skip(1) {
            let xs: Vec<f64> = line[..line.find('"').unwrap()]
                .split(' ')
                .map(|p| p.split(',').next().unwrap().parse().unwrap())
                .collect();
            assert!(xs.windows(2).all(|w| w[0] < w[1]), "{xs:?}");
        }
    }

    #[test]
    fn png_rendering_draws_text_and_lines() {
        let svg = prevalence_svg(&[0.6, 0.4], 10);
        let png = svg_to_png(&svg).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert!(png.len() > 2000, "{} bytes", png.len());
    }

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(ticks(0.0, 10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        let t = ticks(-7.93, -7.41);
        assert!(t.len() >= 3 && t[0] >= -7.93 && *t.last().unwrap() <= -7.41);
        assert_eq!(label(2_000_000.0), "2M");
        assert_eq!(label(-7.5), "-7.5");
    }

    #[test]
    fn prevalence_lists_the_largest_and_sums_the_rest() {
        let svg = prevalence_svg(&[0.1, 0.5, 0.3, 0.1], 2);
        assert!(svg.contains("topic 1") && svg.contains("topic 2") && svg.contains("2 others"));
        assert!(!svg.contains("topic 0<"));
    }
}
