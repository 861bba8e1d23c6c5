//! The report's first table: every headline figure of the run beside its limit reference (measured
//! in the same run), the target the project set for it, and the figure the last committed run
//! gave, so a regression of more than a fifth stands out.
//!
//! The committed figures are read from `bench/figures.json` as `git` has it at `HEAD` (what the
//! committed RESULTS.md shows), not from the working tree, so two runs in a row without a commit
//! still compare with what was committed. The run writes its own figures there for the next one.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// A figure is "regressed" when it is this much worse than the committed one.
const REGRESSION: f64 = 0.20;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
}

/// One headline figure.
pub struct Figure {
    /// Stable name in `figures.json`.
    pub key: &'static str,
    pub name: String,
    /// `None`: the run does not measure it yet (the row still shows its target).
    pub value: Option<f64>,
    pub unit: &'static str,
    pub better: Better,
    pub reference: Option<f64>,
    /// Whether `reference` is a limit (the least a bare server does for the same result), or only
    /// a figure to compare with (SQLite's beside PostgreSQL's).
    pub limit: bool,
    pub target: Option<f64>,
    /// Values better than this count as this when judging a regression (see `saturating_at`).
    pub saturation: Option<f64>,
}

/// The unit of a count of round trips to the database: a whole number, shown bare.
pub const ROUND_TRIPS: &str = "round trips";

impl Figure {
    pub fn new(key: &'static str, name: impl Into<String>, value: f64, unit: &'static str, better: Better) -> Figure {
        Figure {
            key,
            name: name.into(),
            value: Some(value),
            unit,
            better,
            reference: None,
            limit: false,
            target: None,
            saturation: None,
        }
    }

    /// A figure the bench does not measure yet, shown with its target so the gap is not hidden.
    pub fn unmeasured(key: &'static str, name: impl Into<String>, unit: &'static str, better: Better) -> Figure {
        Figure {
            key,
            name: name.into(),
            value: None,
            unit,
            better,
            reference: None,
            limit: false,
            target: None,
            saturation: None,
        }
    }

    /// The limit reference's figure of the same run: Tourguide should not beat it.
    pub fn reference(mut self, reference: f64) -> Figure {
        self.reference = Some(reference);
        self.limit = true;
        self
    }

    /// A figure to show beside this one that is no limit for it (another backend's, say).
    pub fn comparison(mut self, other: f64) -> Figure {
        self.reference = Some(other);
        self.limit = false;
        self
    }

    /// Tourguide does better than its limit reference: a rate above it, or a time below it. Then
    /// the reference does more than the least work for the same result, and is not a limit.
    fn beats_its_limit(&self) -> bool {
        let timed = matches!(self.unit, "ms" | "µs");
        let rate = self.unit == "/s";
        let counted = self.unit == ROUND_TRIPS;
        match (self.value, self.reference) {
            (Some(value), Some(reference)) if self.limit && (timed || rate || counted) => match self.better {
                Better::Higher => value > reference,
                Better::Lower => value < reference,
            },
            _ => false,
        }
    }

    pub fn target(mut self, target: f64) -> Figure {
        self.target = Some(target);
        self
    }

    /// For a ratio whose ideal is `bound` (growth: as fast at scale as small, 1×): a value better
    /// than the ideal is noise, not a gain to defend, so 0.8× then 1.0× is no regression.
    pub fn saturating_at(mut self, bound: f64) -> Figure {
        self.saturation = Some(bound);
        self
    }

    fn saturated(&self, value: f64) -> f64 {
        match (self.saturation, self.better) {
            (Some(bound), Better::Lower) => value.max(bound),
            (Some(bound), Better::Higher) => value.min(bound),
            (None, _) => value,
        }
    }

    fn meets(&self, bound: f64) -> Option<bool> {
        Some(self.within(self.value?, bound))
    }

    fn within(&self, value: f64, bound: f64) -> bool {
        match self.better {
            Better::Higher => value >= bound,
            Better::Lower => value <= bound,
        }
    }

    /// The bare reference misses the target too: no cut of Tourguide's own overhead reaches it on
    /// this machine; only less work than the reference does would.
    fn target_beyond_reference(&self) -> bool {
        matches!((self.target, self.reference), (Some(bound), Some(reference)) if !self.within(reference, bound))
    }

    /// How much better (positive) or worse (negative) than `before`, as a share of `before`.
    fn gain_over(&self, before: f64) -> Option<f64> {
        let value = self.value?;
        // A share of nothing (a rate from 0, a cost down to 0) is no number to print.
        match self.better {
            Better::Higher if before > 0.0 => Some(value / before - 1.0),
            Better::Lower if value > 0.0 => Some(before / value - 1.0),
            _ => None,
        }
    }

    fn regressed_from(&self, before: f64) -> bool {
        let before = self.saturated(before);
        self.value.map(|value| self.saturated(value)).is_some_and(|value| match self.better {
            Better::Higher => value < before * (1.0 - REGRESSION),
            Better::Lower => value > before * (1.0 + REGRESSION),
        })
    }
}

/// What `figures.json` holds.
#[derive(Serialize, Deserialize, Default)]
pub struct Committed {
    pub commit: String,
    pub date: String,
    /// The CPU the figures were measured on (`model name` of `/proc/cpuinfo`); empty in files
    /// written before it was recorded.
    #[serde(default)]
    pub cpu: String,
    pub figures: BTreeMap<String, f64>,
}

impl Committed {
    /// The figures file as committed at `HEAD`; empty when there is none yet.
    pub fn at_head(path: &Path) -> Committed {
        let output = std::process::Command::new("git").arg("show").arg(format!("HEAD:{}", path.display())).output();
        match output {
            Ok(output) if output.status.success() => serde_json::from_slice(&output.stdout).unwrap_or_default(),
            _ => Committed::default(),
        }
    }
}

pub fn number(value: f64, unit: &str) -> String {
    if unit == ROUND_TRIPS {
        return format!("{value:.0}");
    }
    let digits = match value.abs() {
        v if v >= 100.0 => 0,
        v if v >= 10.0 => 1,
        _ => 2,
    };
    let spaced = matches!(unit, "ms" | "KiB" | "MiB" | "µs");
    format!("{value:.digits$}{}{unit}", if spaced { " " } else { "" })
}

/// What the summary found wrong: figures a fifth worse than committed, and limit references
/// Tourguide beats (which are then no limits).
#[derive(Default)]
pub struct Findings {
    pub regressions: Vec<String>,
    pub not_limits: Vec<String>,
}

/// The summary table (Markdown), and what it found wrong.
/// `cpu` is this run's CPU: committed figures from another one compare machines, not only code,
/// and the summary says so.
pub fn render(figures: &[Figure], committed: &Committed, cpu: &str) -> (String, Findings) {
    let mut out = String::new();
    let since = if committed.figures.is_empty() {
        "no committed figures to compare with yet (`bench/figures.json` is not in `HEAD`)".to_string()
    } else {
        let machine = match committed.cpu.as_str() {
            same if same == cpu => String::new(),
            "" => ", on a CPU it did not record, **perhaps not this one**: a change may be the machine's".to_string(),
            other => format!(", **on another CPU** ({other}): a change there is the machine's as much as the code's"),
        };
        format!("committed figures from the run of {} (commit {}){machine}", committed.date, committed.commit)
    };
    out.push_str(&format!(
        "\n## Summary: each figure beside its reference and its target\n\n\
         *Reference*: the same work done by a bare server in this run (see each section). *÷ reference*: how far \
         Tourguide is from it (for rates the share of the reference's rate, for times how many times longer). \
         A figure better than its limit reference's (a rate above it, a time below it) is no win: it reads \
         **reference is not a limit**, since the reference then does more than the least work for the same \
         result, and the bench exits non-zero. *Nor the reference*: the bare server misses the target as well, so no cut of Tourguide's overhead can meet \
         it on this machine; only doing less work than the reference would. Some targets are a share or a \
         multiple of the reference (answers ≥ 50 %, full poll ≥ 75 %, the page ≤ 4×, memory held ≤ 1.1×, \
         PostgreSQL ≥ 80 %: see each section); the column shows its value in this run. \
         *Committed*: {since}; a figure more than {:.0} % worse than it is marked **regression**.\n\n",
        REGRESSION * 100.0
    ));
    out.push_str("| figure | this run | reference | ÷ reference | target | met | committed | change |\n");
    out.push_str("|---|---|---|---|---|---|---|---|\n");
    let mut regressions = Vec::new();
    let mut not_limits = Vec::new();
    for figure in figures {
        let value = figure.value.map(|value| number(value, figure.unit)).unwrap_or_else(|| "not measured".into());
        let reference = figure.reference.map(|value| number(value, figure.unit)).unwrap_or_default();
        let mut ratio = match (figure.value, figure.reference) {
            (Some(value), Some(reference)) if reference > 0.0 => match figure.better {
                Better::Higher => format!("{:.0} %", 100.0 * value / reference),
                Better::Lower => format!("{:.1}×", value / reference),
            },
            _ => String::new(),
        };
        if figure.beats_its_limit() {
            not_limits.push(format!("{}: {ratio} of its reference", figure.name));
            ratio = format!("**reference is not a limit** ({ratio})");
        }
        let target = figure
            .target
            .map(|bound| {
                format!("{} {}", if figure.better == Better::Higher { "≥" } else { "≤" }, number(bound, figure.unit))
            })
            .unwrap_or_default();
        let met = match figure.target.map(|bound| figure.meets(bound)) {
            Some(Some(true)) => "yes",
            Some(Some(false)) if figure.target_beyond_reference() => "**no**, nor the reference",
            Some(Some(false)) => "**no**",
            Some(None) => "—",
            None => "",
        };
        let before = committed.figures.get(figure.key).copied();
        let change = match before {
            Some(before) => {
                let gain = figure.gain_over(before).map(|gain| format!("{:+.0} %", gain * 100.0)).unwrap_or_default();
                if figure.regressed_from(before) {
                    regressions.push(format!(
                        "{}: {} against {} committed",
                        figure.name,
                        figure.value.map(|value| number(value, figure.unit)).unwrap_or_default(),
                        number(before, figure.unit)
                    ));
                    format!("**regression {gain}**")
                } else {
                    gain
                }
            }
            None => String::new(),
        };
        out.push_str(&format!(
            "| {} | {value} | {reference} | {ratio} | {target} | {met} | {} | {change} |\n",
            figure.name,
            before.map(|before| number(before, figure.unit)).unwrap_or_default()
        ));
    }
    if !regressions.is_empty() {
        out.push_str(&format!("\n**Regressions against the committed figures:** {}.\n", regressions.join("; ")));
    }
    if !not_limits.is_empty() {
        out.push_str(&format!("\n**References that are not limits:** {}.\n", not_limits.join("; ")));
    }
    (out, Findings { regressions, not_limits })
}

/// The run's figures as the next run will compare with them.
pub fn to_json(figures: &[Figure], commit: &str, date: &str, cpu: &str) -> String {
    let committed = Committed {
        commit: commit.to_string(),
        date: date.to_string(),
        cpu: cpu.to_string(),
        figures: figures.iter().filter_map(|figure| Some((figure.key.to_string(), figure.value?))).collect(),
    };
    serde_json::to_string_pretty(&committed).unwrap() + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    const CPU: &str = "Test CPU";

    fn committed(key: &str, value: f64) -> Committed {
        Committed {
            commit: "abc".into(),
            date: "today".into(),
            cpu: CPU.into(),
            figures: [(key.to_string(), value)].into(),
        }
    }

    #[test]
    fn figures_committed_on_another_cpu_are_named_as_such() {
        let figure = || Figure::new("rate", "rate", 1000.0, "/s", Better::Higher);
        let (same, _) = render(&[figure()], &committed("rate", 1000.0), CPU);
        assert!(!same.contains("CPU"), "{same}");
        let (other, _) = render(&[figure()], &committed("rate", 1000.0), "Another CPU");
        assert!(other.contains("**on another CPU** (Test CPU)"), "{other}");
        let unknown = Committed { cpu: String::new(), ..committed("rate", 1000.0) };
        let (unrecorded, _) = render(&[figure()], &unknown, CPU);
        assert!(unrecorded.contains("**perhaps not this one**"), "{unrecorded}");
        let json: Committed = serde_json::from_str(&to_json(&[figure()], "abc", "today", CPU)).unwrap();
        assert_eq!(json.cpu, CPU);
    }

    #[test]
    fn a_cost_down_to_nothing_prints_no_change() {
        let time = Figure::new("time", "time", 0.0, "ms", Better::Lower);
        let (table, findings) = render(&[time], &committed("time", 1.0), CPU);
        assert!(findings.regressions.is_empty(), "{table}");
        assert!(!table.contains("inf"), "{table}");
    }

    #[test]
    fn a_figure_a_fifth_worse_than_committed_is_a_regression_either_way_round() {
        let rate = |value| Figure::new("rate", "rate", value, "/s", Better::Higher);
        let (table, findings) = render(&[rate(790.0)], &committed("rate", 1000.0), CPU);
        assert_eq!(findings.regressions.len(), 1, "{table}");
        assert!(table.contains("**regression -21 %**"), "{table}");
        let (_, findings) = render(&[rate(810.0)], &committed("rate", 1000.0), CPU);
        assert!(findings.regressions.is_empty());

        let time = |value| Figure::new("time", "time", value, "ms", Better::Lower);
        let (table, findings) = render(&[time(1.3)], &committed("time", 1.0), CPU);
        assert_eq!(findings.regressions.len(), 1, "{table}");
        let (table, findings) = render(&[time(0.5)], &committed("time", 1.0), CPU);
        assert!(findings.regressions.is_empty());
        assert!(table.contains("+100 %"), "half the time is twice as good: {table}");
    }

    #[test]
    fn a_ratio_better_than_its_ideal_is_noise_not_a_gain_to_defend() {
        let growth = |value| Figure::new("g", "growth", value, "×", Better::Lower).target(1.2).saturating_at(1.0);
        let (table, findings) = render(&[growth(1.04)], &committed("g", 0.79), CPU);
        assert!(findings.regressions.is_empty(), "0.79× then 1.04× is flat both times: {table}");
        let (table, findings) = render(&[growth(1.3)], &committed("g", 0.79), CPU);
        assert_eq!(findings.regressions.len(), 1, "1.3× is 30 % slower than flat: {table}");
    }

    #[test]
    fn targets_and_references_are_judged_in_the_figures_direction() {
        let figures = [
            Figure::new("a", "answers", 1500.0, "/s", Better::Higher).reference(2000.0).target(3000.0),
            Figure::new("b", "ssr", 1.2, "ms", Better::Lower).reference(0.4).target(1.5),
            Figure::unmeasured("c", "browser", "ms", Better::Lower).target(30.0),
            Figure::new("d", "poll", 15000.0, "/s", Better::Higher).reference(24000.0).target(20000.0),
            Figure::new("e", "page", 3.0, "ms", Better::Lower).reference(2.0).target(1.5),
        ];
        let (table, _) = render(&figures, &Committed::default(), CPU);
        assert!(
            table.contains("| answers | 1500/s | 2000/s | 75 % | ≥ 3000/s | **no**, nor the reference |"),
            "{table}"
        );
        assert!(table.contains("| ssr | 1.20 ms | 0.40 ms | 3.0× | ≤ 1.50 ms | yes |"), "{table}");
        assert!(table.contains("| browser | not measured |  |  | ≤ 30.0 ms | — |"), "{table}");
        // The reference meets this target: Tourguide's own overhead is what misses it.
        assert!(table.contains("| poll | 15000/s | 24000/s | 62 % | ≥ 20000/s | **no** |"), "{table}");
        assert!(
            table.contains("| page | 3.00 ms | 2.00 ms | 1.5× | ≤ 1.50 ms | **no**, nor the reference |"),
            "{table}"
        );
        let json: Committed = serde_json::from_str(&to_json(&figures, "abc", "today", CPU)).unwrap();
        assert_eq!(json.figures.len(), 4, "an unmeasured figure is not committed as a number");
    }

    #[test]
    fn a_figure_better_than_its_limit_reference_says_the_reference_is_not_a_limit() {
        let figures = [
            Figure::new("a", "answers", 3500.0, "/s", Better::Higher).reference(3000.0).target(3000.0),
            Figure::new("p", "page", 0.8, "ms", Better::Lower).reference(0.9),
            Figure::new("r", "rss", 16.0, "KiB", Better::Lower).reference(18.0),
            Figure::new("g", "pg answers", 900.0, "/s", Better::Higher).comparison(3000.0),
            Figure::new("f", "fast poll", 900.0, "/s", Better::Higher).reference(1000.0),
        ];
        let (table, findings) = render(&figures, &Committed::default(), CPU);
        assert!(table.contains("| answers | 3500/s | 3000/s | **reference is not a limit** (117 %) |"), "{table}");
        assert!(table.contains("| page | 0.80 ms | 0.90 ms | **reference is not a limit** (0.9×) |"), "{table}");
        // Neither a rate nor a time, nor a limit beside it, nor beaten: as before.
        assert!(table.contains("| rss | 16.0 KiB | 18.0 KiB | 0.9× |"), "{table}");
        assert!(table.contains("| pg answers | 900/s | 3000/s | 30 % |"), "{table}");
        assert!(table.contains("| fast poll | 900/s | 1000/s | 90 % |"), "{table}");
        assert_eq!(findings.not_limits.len(), 2, "{table}");
    }
}
