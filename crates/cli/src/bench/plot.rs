//! The figures of `pronto bench`, drawn in Rust.
//!
//! An experiment describes its figure as data, a [`Figure`] of line or bar
//! [`Chart`]s side by side, and [`Figure::save`] draws it to PNG with
//! plotters. Text is set in DejaVu Sans, read at run time from the system
//! (Debian's `fonts-dejavu-core`); without that font the PNG is still drawn,
//! with lines, bars and grid but no text, and the line that reports it says
//! which package to install.
//!
//! [`plot`] is the common case: lines read from columns of the CSV that an
//! experiment just wrote. `pronto bench plot` draws the same from any CSV
//! (the Python benchmark scripts use it).

use std::ops::Range;
use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::ranged1d::{
    AsRangedCoord, DefaultFormatting, KeyPointHint, Ranged, ValueFormatter,
};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

/// The Debian package that has the font charts are lettered with.
pub const FONT_PACKAGE: &str = "fonts-dejavu-core";

/// Where distributions put DejaVu Sans, Debian's first.
const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
];

/// The family the font is registered under. Not plotters' default
/// `sans-serif`: a text drawn without naming this family fails loudly
/// (and a chart drawn without text is sure to have none).
const FAMILY: &str = "pronto-sans";

/// Matplotlib's default colour cycle ("tab10"), so the figures keep the
/// colours they had.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
];

/// Sizes in pixels of the title, axis labels and tick labels.
const TITLE_PX: u32 = 16;
const LABEL_PX: u32 = 15;
const TICK_PX: u32 = 13;

/// One figure: charts side by side under an optional title.
pub struct Figure {
    /// Over all the charts; empty for none (a single chart has its own).
    pub title: String,
    /// Width and height in pixels.
    pub size: (u32, u32),
    /// Left to right.
    pub charts: Vec<Chart>,
}

/// One chart of a figure.
pub enum Chart {
    /// Lines through points.
    Line(LineChart),
    /// Bars by category.
    Bar(BarChart),
}

/// Lines through (x, y) points.
pub struct LineChart {
    /// Over the chart; empty for none.
    pub title: String,
    /// Under the x axis.
    pub x_label: String,
    /// Beside the y axis.
    pub y_label: String,
    /// Drawn in order; the legend lists them in the same order.
    pub series: Vec<Series>,
    /// Logarithmic x axis, base 2 (frame sizes, counts that double).
    pub log_x: bool,
    /// Logarithmic y axis, base 10.
    pub log_y: bool,
    /// The x axis starts at 0 (linear axes only).
    pub x_from_zero: bool,
    /// The y axis starts at 0 (linear axes only).
    pub y_from_zero: bool,
}

/// One line of a [`LineChart`].
pub struct Series {
    /// Its name in the legend.
    pub label: String,
    /// Drawn in this order; points that are not finite, or not positive on
    /// a logarithmic axis, are left out.
    pub points: Vec<(f64, f64)>,
    /// How it is drawn.
    pub style: LineStyle,
}

/// How a [`Series`] is drawn.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum LineStyle {
    /// A solid line with a dot at each point, in the next palette colour:
    /// a measurement.
    Marked,
    /// A black dashed line: a reference such as a line rate.
    Dashed,
    /// A grey dotted line: a guide such as "no loss".
    Dotted,
}

/// Bars by category; with several groups, one bar per group side by side.
pub struct BarChart {
    /// Over the chart; empty for none.
    pub title: String,
    /// Under each cluster of bars.
    pub categories: Vec<String>,
    /// Beside the y axis.
    pub y_label: String,
    /// One bar per category each (NaN: no bar); a legend when several.
    pub groups: Vec<Bars>,
}

/// One group of a [`BarChart`].
pub struct Bars {
    /// Its name in the legend.
    pub label: String,
    /// One per category.
    pub values: Vec<f64>,
}

impl Figure {
    /// A figure of one chart, of matplotlib's size for it (7 x 4.2 inches
    /// at 110 dpi).
    pub fn single(chart: Chart) -> Figure {
        Figure {
            title: String::new(),
            size: (770, 462),
            charts: vec![chart],
        }
    }

    /// Draws the figure into `png` and reports both files in one line:
    /// `wrote CSV and PNG`, with a note when there was no font for the text.
    pub fn save(&self, csv: &Path, png: &Path) -> Result<(), String> {
        let text = self.draw(png)?;
        if text {
            crate::outln!("wrote {} and {}", csv.display(), png.display());
        } else {
            crate::outln!(
                "wrote {} and {} (the plot has no text: no DejaVuSans.ttf found; install {FONT_PACKAGE})",
                csv.display(),
                png.display()
            );
        }
        Ok(())
    }

    /// Draws the figure into `png`; whether it has its text (false when no
    /// font was found).
    pub fn draw(&self, png: &Path) -> Result<bool, String> {
        let text = font_loaded();
        self.render(png, text)?;
        Ok(text)
    }

    /// Draws the figure into `png`, with or without any text.
    fn render(&self, png: &Path, text: bool) -> Result<(), String> {
        let fail = |e: String| format!("drawing {}: {e}", png.display());
        let root = BitMapBackend::new(png, self.size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(e.to_string()))?;
        let body = if text && !self.title.is_empty() {
            root.titled(&self.title, (FAMILY, TITLE_PX))
                .map_err(|e| fail(e.to_string()))?
        } else {
            root.clone()
        };
        let panels = body.split_evenly((1, self.charts.len().max(1)));
        for (chart, area) in self.charts.iter().zip(&panels) {
            match chart {
                Chart::Line(c) => c.render(area, text),
                Chart::Bar(c) => c.render(area, text),
            }
            .map_err(fail)?;
        }
        root.present().map_err(|e| fail(e.to_string()))
    }
}

/// Whether DejaVu Sans was found and registered (looked for once).
fn font_loaded() -> bool {
    static LOADED: OnceLock<bool> = OnceLock::new();
    *LOADED.get_or_init(|| {
        FONT_PATHS.iter().any(|p| {
            let Ok(bytes) = std::fs::read(p) else {
                return false;
            };
            // plotters keeps a registered font for the whole process.
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            plotters::style::register_font(FAMILY, FontStyle::Normal, bytes).is_ok()
        })
    })
}

type Area<'a> = DrawingArea<BitMapBackend<'a>, Shift>;

/// A chart's frame on `area`: margins, and with `text` the label areas
/// and the title.
fn builder<'a, 'b>(
    area: &'a Area<'b>,
    text: bool,
    title: &str,
) -> ChartBuilder<'a, 'b, BitMapBackend<'b>> {
    let mut b = ChartBuilder::on(area);
    b.margin(12);
    if text {
        b.x_label_area_size(44).y_label_area_size(64);
        if !title.is_empty() {
            b.caption(title, (FAMILY, TITLE_PX));
        }
    } else {
        b.x_label_area_size(6).y_label_area_size(6);
    }
    b
}

impl LineChart {
    /// The axes' ranges: the points' extent with 5% to spare on each side
    /// (as matplotlib), from 0 where asked.
    fn ranges(&self) -> (Range<f64>, Range<f64>) {
        let pts = self.series.iter().flat_map(|s| self.visible(s));
        let (mut x, mut y) = (Extent::default(), Extent::default());
        for (px, py) in pts {
            x.add(px);
            y.add(py);
        }
        (
            x.range(self.log_x, self.x_from_zero),
            y.range(self.log_y, self.y_from_zero),
        )
    }

    /// The points of `s` that can be drawn on these axes.
    fn visible<'s>(&self, s: &'s Series) -> impl Iterator<Item = (f64, f64)> + 's {
        let (lx, ly) = (self.log_x, self.log_y);
        s.points.iter().copied().filter(move |&(x, y)| {
            x.is_finite() && y.is_finite() && (!lx || x > 0.0) && (!ly || y > 0.0)
        })
    }

    fn render(&self, area: &Area<'_>, text: bool) -> Result<(), String> {
        let (x, y) = self.ranges();
        match (self.log_x, self.log_y) {
            (false, false) => self.render_in(area, text, x, y),
            (true, false) => self.render_in(area, text, x.log_scale().base(2.0), y),
            (false, true) => self.render_in(area, text, x, y.log_scale()),
            (true, true) => self.render_in(area, text, x.log_scale().base(2.0), y.log_scale()),
        }
    }

    fn render_in<X, Y>(&self, area: &Area<'_>, text: bool, x: X, y: Y) -> Result<(), String>
    where
        X: AsRangedCoord<Value = f64>,
        Y: AsRangedCoord<Value = f64>,
        X::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
        Y::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let e = |e: DrawingAreaErrorKind<_>| e.to_string();
        let mut chart = builder(area, text, &self.title)
            .build_cartesian_2d(x, y)
            .map_err(e)?;
        let ticks = |v: &f64| tick(*v);
        // On a logarithmic y axis, labels at 1, 2 and 5 times a power of
        // ten only.
        let log_ticks = |v: &f64| {
            let m = v / 10f64.powf(v.log10().floor());
            if [1.0, 2.0, 5.0].iter().any(|k| (m - k).abs() < 1e-6) {
                tick(*v)
            } else {
                String::new()
            }
        };
        if text {
            chart
                .configure_mesh()
                .light_line_style(TRANSPARENT)
                .bold_line_style(BLACK.mix(0.12))
                .axis_style(BLACK.mix(0.8))
                .x_desc(&self.x_label)
                .y_desc(&self.y_label)
                .axis_desc_style((FAMILY, LABEL_PX))
                .label_style((FAMILY, TICK_PX))
                .x_label_formatter(&ticks)
                .y_label_formatter(if self.log_y { &log_ticks } else { &ticks })
                .draw()
                .map_err(e)?;
        } else {
            bare_axes(&mut chart, true)?;
        }

        let mut colour = 0;
        for s in &self.series {
            let pts: Vec<(f64, f64)> = self.visible(s).collect();
            let style = match s.style {
                LineStyle::Marked => {
                    let c = PALETTE[colour % PALETTE.len()];
                    colour += 1;
                    c.stroke_width(2)
                }
                LineStyle::Dashed => BLACK.stroke_width(2),
                LineStyle::Dotted => RGBColor(0x80, 0x80, 0x80).stroke_width(2),
            };
            let drawn = match s.style {
                LineStyle::Marked => {
                    let dots = pts.iter().map(|&p| Circle::new(p, 4, style.filled()));
                    chart.draw_series(dots).map_err(e)?;
                    chart.draw_series(LineSeries::new(pts, style)).map_err(e)?
                }
                LineStyle::Dashed => chart
                    .draw_series(DashedLineSeries::new(pts, 9, 5, style))
                    .map_err(e)?,
                LineStyle::Dotted => chart
                    .draw_series(DashedLineSeries::new(pts, 2, 4, style))
                    .map_err(e)?,
            };
            if text {
                drawn
                    .label(&s.label)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
            }
        }
        if text && !self.series.is_empty() {
            chart
                .configure_series_labels()
                .label_font((FAMILY, TICK_PX))
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK.mix(0.25))
                .position(self.legend_corner())
                .draw()
                .map_err(e)?;
        }
        Ok(())
    }

    /// The corner with the fewest points under it, upper right first
    /// (matplotlib's "best", roughly).
    fn legend_corner(&self) -> SeriesLabelPosition {
        let (x, y) = self.ranges();
        let unit = |v: f64, r: &Range<f64>, log: bool| {
            let (v, lo, hi) = if log {
                (v.ln(), r.start.ln(), r.end.ln())
            } else {
                (v, r.start, r.end)
            };
            if hi > lo {
                (v - lo) / (hi - lo)
            } else {
                0.5
            }
        };
        let corners = [
            (SeriesLabelPosition::UpperRight, true, true),
            (SeriesLabelPosition::UpperLeft, false, true),
            (SeriesLabelPosition::LowerRight, true, false),
            (SeriesLabelPosition::LowerLeft, false, false),
        ];
        let mut count = [0usize; 4];
        for s in &self.series {
            for (px, py) in self.visible(s) {
                let (ux, uy) = (unit(px, &x, self.log_x), unit(py, &y, self.log_y));
                for (n, &(_, right, top)) in count.iter_mut().zip(&corners) {
                    let in_x = if right { ux > 0.5 } else { ux < 0.5 };
                    let in_y = if top { uy > 0.6 } else { uy < 0.4 };
                    if in_x && in_y {
                        *n += 1;
                    }
                }
            }
        }
        let best = (0..4).min_by_key(|&i| count[i]).unwrap_or(0);
        corners[best].0.clone()
    }
}

impl BarChart {
    fn render(&self, area: &Area<'_>, text: bool) -> Result<(), String> {
        let e = |e: DrawingAreaErrorKind<_>| e.to_string();
        let n = self.categories.len().max(1);
        let mut top = Extent::default();
        for v in self.groups.iter().flat_map(|g| &g.values) {
            top.add(*v);
        }
        let y = top.range(false, true);
        let x = Categories {
            n,
            linear: (-0.5..n as f64 - 0.5).into(),
        };
        let mut chart = builder(area, text, &self.title)
            .build_cartesian_2d(x, y)
            .map_err(e)?;
        let names = |v: &f64| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 {
                self.categories.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        let ticks = |v: &f64| tick(*v);
        if text {
            chart
                .configure_mesh()
                .light_line_style(TRANSPARENT)
                .bold_line_style(BLACK.mix(0.12))
                .axis_style(BLACK.mix(0.8))
                .disable_x_mesh()
                .x_labels(n)
                .y_desc(&self.y_label)
                .axis_desc_style((FAMILY, LABEL_PX))
                .label_style((FAMILY, TICK_PX))
                .x_label_formatter(&names)
                .y_label_formatter(&ticks)
                .draw()
                .map_err(e)?;
        } else {
            bare_axes(&mut chart, false)?;
        }

        // As matplotlib: one bar 0.8 wide, or the group's bars 0.38 each.
        let groups = self.groups.len().max(1);
        let w = if groups == 1 {
            0.8
        } else {
            0.76 / groups as f64
        };
        for (g, bars) in self.groups.iter().enumerate() {
            let colour = PALETTE[g % PALETTE.len()];
            let shift = (g as f64 - (groups as f64 - 1.0) / 2.0) * w;
            let rects = bars
                .values
                .iter()
                .enumerate()
                .filter(|(_, v)| v.is_finite())
                .map(|(i, &v)| {
                    let left = i as f64 + shift - w / 2.0;
                    Rectangle::new([(left, 0.0), (left + w, v)], colour.filled())
                });
            let drawn = chart.draw_series(rects).map_err(e)?;
            if text && groups > 1 {
                drawn.label(&bars.label).legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 14, y + 5)], colour.filled())
                });
            }
        }
        if text && groups > 1 {
            chart
                .configure_series_labels()
                .label_font((FAMILY, TICK_PX))
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK.mix(0.25))
                .position(SeriesLabelPosition::UpperLeft)
                .draw()
                .map_err(e)?;
        }
        Ok(())
    }
}

/// For a chart without text: the left and bottom axes and the grid lines
/// at the ticks (vertical ones too when `vertical`), drawn by hand, as
/// plotters' mesh letters every tick it draws.
fn bare_axes<'a, X, Y>(
    chart: &mut ChartContext<'a, BitMapBackend<'a>, Cartesian2d<X, Y>>,
    vertical: bool,
) -> Result<(), String>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let style = BLACK.mix(0.12);
    let (xs, ys) = (chart.x_range(), chart.y_range());
    let spec = chart.as_coord_spec();
    let (xk, yk) = (spec.x_spec().key_points(10), spec.y_spec().key_points(10));
    let rows = yk
        .into_iter()
        .map(|y| PathElement::new(vec![(xs.start, y), (xs.end, y)], style));
    chart.draw_series(rows).map_err(|e| e.to_string())?;
    if vertical {
        let columns = xk
            .into_iter()
            .map(|x| PathElement::new(vec![(x, ys.start), (x, ys.end)], style));
        chart.draw_series(columns).map_err(|e| e.to_string())?;
    }
    let axes = PathElement::new(
        vec![(xs.start, ys.end), (xs.start, ys.start), (xs.end, ys.start)],
        BLACK.mix(0.8),
    );
    chart
        .draw_series(std::iter::once(axes))
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// The x axis of a bar chart: category `i` is centred on `i`, and the
/// ticks (and labels) are the centres.
struct Categories {
    n: usize,
    linear: RangedCoordf64,
}

impl Ranged for Categories {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.linear.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        (0..self.n).map(|i| i as f64).collect()
    }

    fn range(&self) -> Range<f64> {
        self.linear.range()
    }
}

/// The smallest and largest of some values.
#[derive(Default)]
struct Extent {
    lo: Option<f64>,
    hi: Option<f64>,
}

impl Extent {
    fn add(&mut self, v: f64) {
        if v.is_finite() {
            self.lo = Some(self.lo.map_or(v, |l| l.min(v)));
            self.hi = Some(self.hi.map_or(v, |h| h.max(v)));
        }
    }

    /// An axis range over the values with 5% of the span to spare.
    fn range(&self, log: bool, from_zero: bool) -> Range<f64> {
        let (Some(lo), Some(hi)) = (self.lo, self.hi) else {
            return if log { 1.0..10.0 } else { 0.0..1.0 };
        };
        if log {
            let (l, h) = (lo.ln(), hi.ln());
            let pad = if h > l { (h - l) * 0.05 } else { 2f64.ln() };
            return (l - pad).exp()..(h + pad).exp();
        }
        let lo = if from_zero { lo.min(0.0) } else { lo };
        let span = if hi > lo { hi - lo } else { hi.abs().max(1.0) };
        let start = if from_zero && lo >= 0.0 {
            0.0
        } else {
            lo - span * 0.05
        };
        start..hi + span * 0.05
    }
}

/// A tick label: three significant digits at most, thousands as `k`,
/// millions as `M`.
pub fn tick(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        return format!("{}G", short(v / 1e9));
    }
    if a >= 1e6 {
        return format!("{}M", short(v / 1e6));
    }
    if a >= 1e4 {
        return format!("{}k", short(v / 1e3));
    }
    short(v)
}

/// `v` with up to three significant digits (all of its integer part),
/// trailing zeros dropped.
fn short(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v.is_finite() {
            "0".into()
        } else {
            v.to_string()
        };
    }
    let magnitude = v.abs().log10().floor() as i32;
    let decimals = (2 - magnitude).clamp(0, 6) as usize;
    let s = format!("{v:.decimals$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" {
        "0".into()
    } else {
        s
    }
}

/// A CSV file as `pronto bench` writes it: a header, then rows of cells
/// with no commas or quotes in them.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// Reads the table in `path`.
    pub fn read(path: &Path) -> Result<Table, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Ok(Table::parse(&text))
    }

    /// The table in `text`.
    pub fn parse(text: &str) -> Table {
        let mut lines = text.lines().filter(|l| !l.trim().is_empty());
        let cells = |l: &str| l.split(',').map(|c| c.trim().to_string()).collect();
        let header = lines.next().map(cells).unwrap_or_default();
        Table {
            header,
            rows: lines.map(cells).collect(),
        }
    }

    /// The index of column `name`.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name)
    }

    /// The rows, each a cell per column (or fewer, when the row is short).
    pub fn rows(&self) -> &[Vec<String>] {
        &self.rows
    }

    /// The cell of `row` in column `col`, when there is one and it is not
    /// empty.
    pub fn cell(row: &[String], col: Option<usize>) -> Option<&str> {
        col.and_then(|c| row.get(c))
            .map(String::as_str)
            .filter(|c| !c.is_empty())
    }

    /// The number in `row`, column `col`; None when empty or not a number.
    pub fn number(row: &[String], col: Option<usize>) -> Option<f64> {
        Table::cell(row, col).and_then(|c| c.parse().ok())
    }

    /// The (x, y) points of columns `x` and `y`, in row order, leaving out
    /// rows where either is empty.
    pub fn points(&self, x: &str, y: &str) -> Vec<(f64, f64)> {
        let (xc, yc) = (self.column(x), self.column(y));
        self.rows
            .iter()
            .filter_map(|r| Some((Table::number(r, xc)?, Table::number(r, yc)?)))
            .collect()
    }
}

/// What [`plot`] draws from a CSV.
pub struct PlotSpec<'a> {
    /// Title over the plot.
    pub title: &'a str,
    /// CSV column on the x axis, and its label.
    pub x: (&'a str, &'a str),
    /// Label of the y axis.
    pub ylabel: &'a str,
    /// `column` or `column:legend` for each line.
    pub ys: &'a [&'a str],
}

/// Draws lines from columns of the CSV `csv` into `png`: one per `ys`,
/// rows with an empty x or y left out, the y axis from 0, the x axis
/// logarithmic (base 2) when the largest x is at least 100 times the
/// smallest.
pub fn plot(csv: &Path, png: &Path, spec: &PlotSpec<'_>) -> Result<(), String> {
    let table = Table::read(csv)?;
    line_figure(&table, spec).save(csv, png)
}

/// The figure [`plot`] draws.
fn line_figure(table: &Table, spec: &PlotSpec<'_>) -> Figure {
    let series: Vec<Series> = spec
        .ys
        .iter()
        .map(|y| {
            let (col, label) = y.split_once(':').unwrap_or((y, y));
            Series {
                label: label.to_string(),
                points: table.points(spec.x.0, col),
                style: LineStyle::Marked,
            }
        })
        .collect();
    let xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    Figure::single(Chart::Line(LineChart {
        title: spec.title.to_string(),
        x_label: spec.x.1.to_string(),
        y_label: spec.ylabel.to_string(),
        log_x: wide(&xs),
        log_y: false,
        x_from_zero: false,
        y_from_zero: true,
        series,
    }))
}

/// `pronto bench plot CSV PNG --x COL[:LABEL] --y COL[:LEGEND]...`: draws
/// lines from any CSV, as [`plot`] does for the experiments' own. `--by COL`
/// makes one line of the (single) `--y` column per value of COL; `--ref
/// COL[:LEGEND]` adds a black dashed reference line (the first value of COL
/// at each x); `--title`, `--ylabel`, `--log-y`.
pub fn main(args: &[String]) -> Result<(), String> {
    let mut files = Vec::new();
    let (mut x, mut ys, mut by, mut reference) = (None, Vec::new(), None, None);
    let (mut title, mut ylabel, mut log_y) = (String::new(), String::new(), false);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value (`pronto bench help`)"))
        };
        match a.as_str() {
            "--x" => x = Some(value("--x")?),
            "--y" => ys.push(value("--y")?),
            "--by" => by = Some(value("--by")?),
            "--ref" => reference = Some(value("--ref")?),
            "--title" => title = value("--title")?,
            "--ylabel" => ylabel = value("--ylabel")?,
            "--log-y" => log_y = true,
            o if o.starts_with("--") => {
                return Err(format!("plot: unknown option `{o}` (`pronto bench help`)"))
            }
            f => files.push(f.to_string()),
        }
    }
    let [csv, png] = files.as_slice() else {
        return Err("plot: give the CSV to read and the PNG to write".into());
    };
    let x = x.ok_or("plot: --x COLUMN[:LABEL] is needed")?;
    if ys.is_empty() {
        return Err("plot: give at least one --y COLUMN[:LEGEND]".into());
    }
    let (csv, png) = (Path::new(csv), Path::new(png));
    let table = Table::read(csv)?;
    let (x_col, x_label) = x.split_once(':').unwrap_or((&x, &x));
    for col in std::iter::once(x_col)
        .chain(
            ys.iter()
                .map(|y| y.split_once(':').map_or(y.as_str(), |p| p.0)),
        )
        .chain(by.as_deref())
    {
        if table.column(col).is_none() {
            return Err(format!("plot: {} has no column `{col}`", csv.display()));
        }
    }
    let mut series = match &by {
        None => ys
            .iter()
            .map(|y| {
                let (col, label) = y.split_once(':').unwrap_or((y, y));
                Series {
                    label: label.to_string(),
                    points: table.points(x_col, col),
                    style: LineStyle::Marked,
                }
            })
            .collect(),
        Some(by) => {
            let [y] = ys.as_slice() else {
                return Err("plot: --by draws one --y column".into());
            };
            let y_col = y.split_once(':').map_or(y.as_str(), |p| p.0);
            let (xc, yc, bc) = (table.column(x_col), table.column(y_col), table.column(by));
            let mut series: Vec<Series> = Vec::new();
            for r in table.rows() {
                let (Some(key), Some(px), Some(py)) = (
                    Table::cell(r, bc),
                    Table::number(r, xc),
                    Table::number(r, yc),
                ) else {
                    continue;
                };
                match series.iter_mut().find(|s| s.label == key) {
                    Some(s) => s.points.push((px, py)),
                    None => series.push(Series {
                        label: key.to_string(),
                        points: vec![(px, py)],
                        style: LineStyle::Marked,
                    }),
                }
            }
            series
        }
    };
    if let Some(r) = &reference {
        let (col, label) = r.split_once(':').unwrap_or((r, r));
        if table.column(col).is_none() {
            return Err(format!("plot: {} has no column `{col}`", csv.display()));
        }
        let mut points: Vec<(f64, f64)> = Vec::new();
        for p in table.points(x_col, col) {
            if !points.iter().any(|q| q.0 == p.0) {
                points.push(p);
            }
        }
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        series.insert(
            0,
            Series {
                label: label.to_string(),
                points,
                style: LineStyle::Dashed,
            },
        );
    }
    let xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    Figure::single(Chart::Line(LineChart {
        title,
        x_label: x_label.to_string(),
        y_label: ylabel,
        log_x: wide(&xs),
        log_y,
        x_from_zero: false,
        y_from_zero: true,
        series,
    }))
    .save(csv, png)
}

/// Whether values span enough (the largest at least 100 times the
/// smallest, all positive) for a logarithmic axis.
pub fn wide(v: &[f64]) -> bool {
    let mut e = Extent::default();
    v.iter().for_each(|&x| e.add(x));
    matches!((e.lo, e.hi), (Some(lo), Some(hi)) if lo > 0.0 && hi >= 100.0 * lo)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the font is here; says SKIPPED when not.
    fn lettered() -> bool {
        let ok = font_loaded();
        if !ok {
            eprintln!("SKIPPED lettered plot test: no DejaVuSans.ttf; install {FONT_PACKAGE}");
        }
        ok
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// The PNG's width, height and RGB pixels.
    fn decode(path: &Path) -> (u32, u32, Vec<[u8; 3]>) {
        let file = std::fs::File::open(path).expect("the PNG was written");
        let mut reader = png::Decoder::new(file).read_info().expect("a PNG header");
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).expect("a PNG frame");
        assert_eq!(info.color_type, png::ColorType::Rgb, "plotters writes RGB");
        let px = buf[..info.buffer_size()]
            .chunks_exact(3)
            .map(|c| [c[0], c[1], c[2]])
            .collect();
        (info.width, info.height, px)
    }

    fn count(px: &[[u8; 3]], c: RGBColor) -> usize {
        px.iter().filter(|p| **p == [c.0, c.1, c.2]).count()
    }

    fn line(log_x: bool, log_y: bool) -> LineChart {
        LineChart {
            title: "Mpps by frame size".into(),
            x_label: "frame size (bytes)".into(),
            y_label: "Mpps".into(),
            series: vec![
                Series {
                    label: "switch".into(),
                    points: vec![(64.0, 14.0), (128.0, 9.5), (512.0, 3.0), (1500.0, 0.9)],
                    style: LineStyle::Marked,
                },
                Series {
                    label: "ring".into(),
                    points: vec![(64.0, 20.0), (128.0, 15.0), (512.0, 6.0), (1500.0, 2.1)],
                    style: LineStyle::Marked,
                },
                Series {
                    label: "10 Gb/s line rate".into(),
                    points: vec![(64.0, 14.88), (1500.0, 0.81)],
                    style: LineStyle::Dashed,
                },
            ],
            log_x,
            log_y,
            x_from_zero: false,
            y_from_zero: true,
        }
    }

    /// Draws `fig` with or without text and checks the PNG: its size, that
    /// it is not one colour, and that each of the first `colours` palette
    /// colours is drawn.
    fn check(fig: &Figure, text: bool, colours: usize) -> Vec<[u8; 3]> {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let png = dir.path().join("chart.png");
        fig.render(&png, text).expect("drawn");
        let (w, h, px) = decode(&png);
        assert_eq!((w, h), fig.size);
        assert_eq!(px.len(), (w * h) as usize);
        let white = count(&px, RGBColor(255, 255, 255));
        assert!(white < px.len(), "all white");
        assert!(
            white > px.len() / 2,
            "mostly background: {white} of {}",
            px.len()
        );
        for c in &PALETTE[..colours] {
            assert!(count(&px, *c) > 20, "colour {c:?} drawn");
        }
        px
    }

    #[test]
    fn line_charts_are_drawn_on_each_kind_of_axis() {
        if !lettered() {
            return;
        }
        for (lx, ly) in [(false, false), (true, false), (false, true), (true, true)] {
            let px = check(&Figure::single(Chart::Line(line(lx, ly))), true, 2);
            assert!(
                count(&px, RGBColor(0, 0, 0)) > 50,
                "the dashed line and text"
            );
        }
    }

    #[test]
    fn bar_figure_has_both_panels() {
        if !lettered() {
            return;
        }
        let cats: Vec<String> = ["kernel", "SOCKET", "RING", "XDP"].map(String::from).into();
        let fig = Figure {
            title: "TCP and ping".into(),
            size: (1100, 462),
            charts: vec![
                Chart::Bar(BarChart {
                    title: String::new(),
                    categories: cats.clone(),
                    y_label: "iperf3 TCP (Gb/s)".into(),
                    groups: vec![Bars {
                        label: String::new(),
                        values: vec![30.0, 2.5, 6.0, f64::NAN],
                    }],
                }),
                Chart::Bar(BarChart {
                    title: String::new(),
                    categories: cats,
                    y_label: "ping RTT, idle (µs)".into(),
                    groups: vec![
                        Bars {
                            label: "p50".into(),
                            values: vec![20.0, 45.0, 40.0, 30.0],
                        },
                        Bars {
                            label: "p99".into(),
                            values: vec![35.0, 80.0, 70.0, 50.0],
                        },
                    ],
                }),
            ],
        };
        let px = check(&fig, true, 2);
        // The left panel's bars are all blue, the right has orange ones.
        let w = fig.size.0 as usize;
        let blue_left = px
            .iter()
            .enumerate()
            .filter(|(i, p)| i % w < w / 2 && **p == [0x1f, 0x77, 0xb4])
            .count();
        let orange_left = px
            .iter()
            .enumerate()
            .filter(|(i, p)| i % w < w / 2 && **p == [0xff, 0x7f, 0x0e])
            .count();
        assert!(blue_left > 1000, "left bars: {blue_left} blue pixels");
        assert_eq!(orange_left, 0, "no p99 bars in the left panel");
    }

    #[test]
    fn without_a_font_the_chart_is_drawn_without_text() {
        // No text at all is drawn: every text would name the font family,
        // and the same figures drawn with text have more dark pixels.
        let lined = Figure::single(Chart::Line(line(true, false)));
        let bare = check(&lined, false, 2);
        if font_loaded() {
            let lettered = check(&lined, true, 2);
            let dark = |px: &[[u8; 3]]| px.iter().filter(|p| p.iter().all(|&c| c < 80)).count();
            assert!(dark(&lettered) > dark(&bare) + 500, "text adds dark pixels");
        }
        let bars = Figure::single(Chart::Bar(BarChart {
            title: "t".into(),
            categories: vec!["a".into(), "b".into()],
            y_label: "y".into(),
            groups: vec![
                Bars {
                    label: "p50".into(),
                    values: vec![1.0, 2.0],
                },
                Bars {
                    label: "p99".into(),
                    values: vec![2.0, 3.0],
                },
            ],
        }));
        check(&bars, false, 2);
    }

    #[test]
    fn empty_and_degenerate_charts_still_draw() {
        // Text only where the font is registered: `render` draws what it is
        // told to and does not look for the font itself.
        let text = font_loaded();
        let mut c = line(false, false);
        c.series = vec![Series {
            label: "one point".into(),
            points: vec![(5.0, 0.0), (f64::NAN, 1.0)],
            style: LineStyle::Marked,
        }];
        let dir = tempfile::tempdir().expect("a temporary directory");
        let png = dir.path().join("one.png");
        Figure::single(Chart::Line(c))
            .render(&png, text)
            .expect("drawn");
        let mut c = line(true, true);
        c.series.clear();
        Figure::single(Chart::Line(c))
            .render(&png, text)
            .expect("drawn");
        let (w, h, _) = decode(&png);
        assert_eq!((w, h), (770, 462));
    }

    #[test]
    fn plot_reads_the_columns_named() {
        let t = Table::parse("size,a_mpps,b_mpps,note\n64,14.2,,x\n1500,0.8,0.7,\n,3,3,no size\n");
        let spec = PlotSpec {
            title: "t",
            x: ("size", "frame size"),
            ylabel: "Mpps",
            ys: &["a_mpps:first", "b_mpps", "missing:none"],
        };
        let fig = line_figure(&t, &spec);
        let Chart::Line(c) = &fig.charts[0] else {
            panic!("a line chart");
        };
        let got: Vec<(&str, &[(f64, f64)])> = c
            .series
            .iter()
            .map(|s| (s.label.as_str(), s.points.as_slice()))
            .collect();
        assert_eq!(
            got,
            [
                ("first", &[(64.0, 14.2), (1500.0, 0.8)][..]),
                ("b_mpps", &[(1500.0, 0.7)][..]),
                ("none", &[][..]),
            ]
        );
        assert!(!c.log_x, "1500 / 64 is under 100");
        assert!(c.y_from_zero);
        assert!(wide(&[1.0, 100.0]) && !wide(&[1.0, 99.0]) && !wide(&[0.0, 1e6]));
    }

    #[test]
    fn plot_writes_csv_columns_to_png() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let csv = dir.path().join("x.csv");
        std::fs::write(
            &csv,
            "bytes,write_us_p50,read_us_p50\n1,10,8\n1024,12,9\n65536,40,30\n",
        )
        .expect("CSV written");
        let png = dir.path().join("x.png");
        let spec = PlotSpec {
            title: "round trips",
            x: ("bytes", "payload (bytes)"),
            ylabel: "µs (median)",
            ys: &["write_us_p50:write", "read_us_p50:read"],
        };
        plot(&csv, &png, &spec).expect("plotted");
        let (w, h, px) = decode(&png);
        assert_eq!((w, h), (770, 462));
        assert!(count(&px, PALETTE[0]) > 20 && count(&px, PALETTE[1]) > 20);
    }

    #[test]
    fn plot_command_groups_rows_and_draws_a_reference() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let csv = dir.path().join("sizes.csv");
        std::fs::write(
            &csv,
            "example,frame_bytes,mpps,line_rate_10g_mpps\n\
             nat,64,2.0,14.88\nnat,1500,1.5,0.81\nlb,64,3.0,14.88\nlb,1500,2.5,0.81\n",
        )
        .expect("CSV written");
        let png = dir.path().join("sizes.png");
        let (c, p) = (csv.display().to_string(), png.display().to_string());
        let args = strings(&[
            &c,
            &p,
            "--x",
            "frame_bytes:frame size (bytes)",
            "--y",
            "mpps",
            "--by",
            "example",
            "--ref",
            "line_rate_10g_mpps:10 Gb/s line rate",
            "--ylabel",
            "Mpps",
            "--log-y",
        ]);
        main(&args).expect("plotted");
        let (w, h, px) = decode(&png);
        assert_eq!((w, h), (770, 462));
        // Two examples, two colours; the reference is black.
        assert!(count(&px, PALETTE[0]) > 20 && count(&px, PALETTE[1]) > 20);
        assert_eq!(count(&px, PALETTE[2]), 0, "no third line");

        let e = main(&strings(&[&c, &p, "--x", "size", "--y", "mpps"])).expect_err("no column");
        assert!(e.contains("no column `size`"), "{e}");
        let e = main(&strings(&[&c, &p, "--x", "frame_bytes"])).expect_err("no --y");
        assert!(e.contains("--y"), "{e}");
        let e = main(&strings(&[&c, "--x", "frame_bytes", "--y", "mpps"])).expect_err("no PNG");
        assert!(e.contains("the PNG"), "{e}");
    }

    #[test]
    fn tick_labels_are_short() {
        let got: Vec<String> = [
            0.0, 0.5, 1.25, 14.88, 123.4, 2048.0, 20000.0, 1.5e6, -3.0, 0.0012,
        ]
        .map(tick)
        .into();
        assert_eq!(
            got,
            ["0", "0.5", "1.25", "14.9", "123", "2048", "20k", "1.5M", "-3", "0.0012"]
        );
    }

    #[test]
    fn legend_goes_where_the_lines_are_not() {
        // Falling lines leave the upper right empty; rising ones do not.
        let falling = line(false, false);
        assert_eq!(falling.legend_corner(), SeriesLabelPosition::UpperRight);
        let mut rising = line(false, false);
        for s in &mut rising.series {
            for p in &mut s.points {
                p.1 = p.0 / 100.0;
            }
        }
        assert_eq!(rising.legend_corner(), SeriesLabelPosition::UpperLeft);
    }
}
