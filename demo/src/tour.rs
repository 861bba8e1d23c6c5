//! The guided page tour as the demo model plays it, with the same tools a real model gets:
//! analyse the page, ask which point to start with, propose one change at a time, and at the end
//! ask for a summary or the next page.
//!
//! It keeps no state of its own. Every step is worked out again from the tool calls and results of
//! the current run, so a pause, a restart or a retried segment changes nothing. A new chat turn is
//! a new run whose transcript holds no tool results, so the tour starts over from the page as it
//! is then.

use std::collections::{HashMap, HashSet};

use content::analysis::PointKind;
use content::context::page_named_in;
use content::tools::{ANALYSE_PAGE, LIST_PAGES, SET_ALT_TEXT, SUGGEST_CHANGE, UPDATE_PAGE_FIELD};
use runtime::results::{is_error, read_denial, read_rejected};
use runtime::{ChatMessage, Completion, CompletionRequest, DenialReason, Role, ToolCall, ASK_CHOICE, PICKED};
use serde_json::{json, Value};

// --- the words of the tour ---------------------------------------------------------------------

/// `ask_choice` takes at most this many options.
const MAX_OPTIONS: usize = 10;
/// Option labels are kept well under `ask_choice`'s limit of 120 characters.
const MAX_LABEL_CHARS: usize = 100;

/// The questions, in English and German. The tour recognises its own questions in the transcript
/// by these texts, whichever language they were asked in.
pub const START_QUESTION: [&str; 2] = ["Which point should we start with?", "Mit welchem Punkt sollen wir anfangen?"];
pub const END_QUESTION: [&str; 2] = ["Summary or next page?", "Zusammenfassung oder nächste Seite?"];
/// Put before the end question when the page has nothing to improve.
const NOTHING_FOUND: [&str; 2] =
    ["This page has no points to improve.", "Diese Seite hat keine Punkte zum Verbessern."];
pub const SUMMARY_OPTION: [&str; 2] = ["Summary", "Zusammenfassung"];
pub const NEXT_PAGE_OPTION: [&str; 2] = ["Next page", "Nächste Seite"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Lang {
    #[default]
    En,
    De,
}

impl Lang {
    /// German when the first thing the user wrote reads German; English otherwise.
    fn of(messages: &[ChatMessage]) -> Lang {
        let first = messages.iter().find(|m| m.role == Role::User).map(|m| m.content.as_str()).unwrap_or_default();
        if reads_german(first) {
            Lang::De
        } else {
            Lang::En
        }
    }

    fn pick<T: Copy>(self, texts: [T; 2]) -> T {
        match self {
            Lang::En => texts[0],
            Lang::De => texts[1],
        }
    }
}

fn reads_german(text: &str) -> bool {
    const MARKERS: &[&str] = &[
        "ich", "mich", "mir", "du", "der", "das", "und", "bitte", "diese", "dieser", "diesen", "seite", "punkt",
        "nicht", "ist", "wie", "hallo", "durch", "mit", "für",
    ];
    let lower = text.to_lowercase();
    lower.contains(['ä', 'ö', 'ü', 'ß'])
        || lower.split(|c: char| !c.is_alphanumeric()).any(|word| MARKERS.contains(&word))
}

/// A short label for a point kind, as analyse_page names it. A kind this build does not know yet
/// is shown as its own words.
fn kind_label(kind: &str, lang: Lang) -> String {
    let Ok(known) = serde_json::from_value::<PointKind>(Value::String(kind.to_string())) else {
        let words = kind.replace('_', " ");
        let mut chars = words.chars();
        return chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default();
    };
    let pair = match known {
        PointKind::TitleTooShort => ["Title too short", "Titel zu kurz"],
        PointKind::TitleTooLong => ["Title too long", "Titel zu lang"],
        PointKind::DescriptionMissing => ["Description missing", "Beschreibung fehlt"],
        PointKind::DescriptionTooShort => ["Description too short", "Beschreibung zu kurz"],
        PointKind::DescriptionTooLong => ["Description too long", "Beschreibung zu lang"],
        PointKind::NoH1 => ["No main heading", "Keine Hauptüberschrift"],
        PointKind::MultipleH1 => ["Second main heading", "Zweite Hauptüberschrift"],
        PointKind::SkippedHeadingLevel => ["Skipped heading level", "Übersprungene Überschriftenebene"],
        PointKind::AltMissing => ["Image without alt text", "Bild ohne Alternativtext"],
        PointKind::AltUseless => ["Alt text says nothing", "Alternativtext ohne Aussage"],
        PointKind::VagueLinkText => ["Vague link text", "Unklarer Linktext"],
        PointKind::LongSentences => ["Long sentences", "Lange Sätze"],
    };
    lang.pick(pair).to_string()
}

fn one_line(text: &str, max: usize) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let line: String = line.chars().filter(|c| !c.is_control()).collect();
    if line.chars().count() <= max {
        return line;
    }
    let cut: String = line.chars().take(max.saturating_sub(1)).collect();
    format!("{}…", cut.trim_end())
}

// --- what the transcript says ---------------------------------------------------------------------

/// One executed call of this run and the result it came back with.
struct Exchange<'a> {
    call: &'a ToolCall,
    result: &'a str,
}

fn exchanges(messages: &[ChatMessage]) -> Vec<Exchange<'_>> {
    let mut calls: HashMap<&str, &ToolCall> = HashMap::new();
    let mut out = Vec::new();
    for message in messages {
        match message.role {
            Role::Assistant => {
                for call in &message.tool_calls {
                    calls.insert(call.id.as_str(), call);
                }
            }
            Role::Tool => {
                if let Some(call) = message.tool_call_id.as_deref().and_then(|id| calls.get(id)) {
                    out.push(Exchange { call, result: &message.content });
                }
            }
            Role::System | Role::User => {}
        }
    }
    out
}

#[derive(Debug, Clone)]
struct PointRef {
    number: u64,
    /// The point's target (`title`, `block:2`): what stays the same when the numbers shift.
    key: String,
    kind: String,
}

#[derive(Debug, Clone)]
struct PageAnalysis {
    title: String,
    points: Vec<PointRef>,
}

impl PageAnalysis {
    fn point(&self, key: &str) -> Option<&PointRef> {
        self.points.iter().find(|point| point.key == key)
    }
}

fn point_key(value: &Value) -> Option<String> {
    let target = value.get("target")?.as_str()?;
    Some(match value.get("block").and_then(Value::as_u64) {
        Some(block) => format!("{target}:{block}"),
        None => target.to_string(),
    })
}

fn parse_analysis(result: &str) -> Option<PageAnalysis> {
    let value: Value = serde_json::from_str(result).ok()?;
    let points = value
        .get("points")?
        .as_array()?
        .iter()
        .map(|point| {
            Some(PointRef {
                number: point.get("number")?.as_u64()?,
                key: point_key(point)?,
                kind: point.get("kind")?.as_str()?.to_string(),
            })
        })
        .collect::<Option<Vec<_>>>()?;
    let title = value.get("title").and_then(Value::as_str).unwrap_or_default().to_string();
    Some(PageAnalysis { title, points })
}

#[derive(Debug, Clone, PartialEq)]
struct Proposal {
    tool: String,
    arguments: Value,
    current: String,
    proposed: String,
}

/// A suggest_change result: for which point and variant, and the proposal if there is one.
fn parse_suggestion(result: &str) -> Option<(String, usize, Option<Proposal>)> {
    let value: Value = serde_json::from_str(result).ok()?;
    let key = point_key(value.get("point")?)?;
    let variant = usize::try_from(value.get("variant")?.as_u64()?).ok()?;
    let text = |name: &str| value.get(name).and_then(Value::as_str).unwrap_or_default().to_string();
    let proposal = value.get("apply_with").and_then(|apply| {
        Some(Proposal {
            tool: apply.get("tool")?.as_str()?.to_string(),
            arguments: apply.get("arguments")?.clone(),
            current: text("current"),
            proposed: text("proposed"),
        })
    });
    Some((key, variant, proposal))
}

#[derive(Debug, Clone)]
struct PageEntry {
    id: i64,
    slug: String,
    title: String,
}

fn parse_pages(result: &str) -> Option<Vec<PageEntry>> {
    let value: Value = serde_json::from_str(result).ok()?;
    value
        .get("pages")?
        .as_array()?
        .iter()
        .map(|page| {
            Some(PageEntry {
                id: page.get("id")?.as_i64()?,
                slug: page.get("slug")?.as_str()?.to_string(),
                title: page.get("title")?.as_str()?.to_string(),
            })
        })
        .collect()
}

/// The index of the picked option, if the result is an answer to this call's question.
fn picked_option(call: &ToolCall, result: &str) -> Option<usize> {
    let picked = result.strip_prefix(PICKED)?;
    let options = call.arguments.get("options")?.as_array()?;
    options.iter().position(|option| option.as_str() == Some(picked))
}

// --- the walk through the points --------------------------------------------------------------------

/// One point of the tour, in the order the tour visits them.
#[derive(Debug, Clone)]
struct Stop {
    key: String,
    /// As the start question offered it: "1. Title too long".
    label: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Applied {
        old: String,
        new: String,
    },
    Skipped,
    NoProposal,
    NoFurtherVariant,
    /// An earlier change fixed this point too.
    AlreadyFixed,
    /// The write was refused (e.g. the page changed meanwhile).
    NotApplied,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EndChoice {
    Summary,
    NextPage,
}

/// What the run has done so far, folded from its exchanges in order.
#[derive(Default)]
struct Walk {
    /// The language of the option labels, which name the points in the summary too.
    lang: Lang,
    first: Option<PageAnalysis>,
    latest: Option<PageAnalysis>,
    /// Why the page could not be analysed at all (the tool's own words).
    analysis_failed: Option<String>,
    /// A later analysis failed: the tour cannot know the current point numbers.
    reanalysis_failed: bool,
    /// Set once the start point is known.
    stops: Option<Vec<Stop>>,
    position: usize,
    variant: usize,
    /// suggest_change results since the page last changed, by point key and variant.
    suggestions: HashMap<(String, usize), Option<Proposal>>,
    /// The page changed: point numbers may have shifted.
    needs_analysis: bool,
    /// A point had no proposal: ask for the rest at once, so skipping several such points never
    /// costs a round each (the runtime caps the rounds of a segment).
    batch: bool,
    outcomes: Vec<(String, Outcome)>,
    cancelled: bool,
    end: Option<EndChoice>,
    pages_asked: bool,
    pages: Option<Vec<PageEntry>>,
}

impl Walk {
    fn read(messages: &[ChatMessage], offered: &HashSet<&str>, lang: Lang) -> Walk {
        let mut walk = Walk { lang, ..Walk::default() };
        for exchange in exchanges(messages) {
            match exchange.call.name.as_str() {
                ANALYSE_PAGE => walk.on_analysis(exchange.result),
                name if name == ASK_CHOICE => walk.on_choice(exchange.call, exchange.result),
                SUGGEST_CHANGE => walk.on_suggestion(exchange.call, exchange.result),
                UPDATE_PAGE_FIELD | SET_ALT_TEXT => walk.on_write(exchange.result, offered),
                LIST_PAGES => {
                    walk.pages_asked = true;
                    walk.pages = parse_pages(exchange.result);
                }
                _ => {}
            }
        }
        walk.settle(offered);
        walk
    }

    fn on_analysis(&mut self, result: &str) {
        let Some(analysis) = parse_analysis(result) else {
            if self.first.is_none() {
                self.analysis_failed = Some(result.to_string());
            } else {
                self.reanalysis_failed = true;
            }
            return;
        };
        if self.first.is_none() {
            // With one point or none there is nothing to choose: the tour starts right away.
            if analysis.points.len() < 2 {
                self.stops = Some(stops_from(&analysis, 0, self.lang));
            }
            self.first = Some(analysis.clone());
        }
        self.latest = Some(analysis);
        self.page_changed(false);
    }

    fn on_choice(&mut self, call: &ToolCall, result: &str) {
        let question = call.arguments.get("question").and_then(Value::as_str).unwrap_or_default();
        // An answer that cannot be read falls back to the first option, so the tour never asks
        // the same question in a loop.
        let picked = picked_option(call, result).unwrap_or(0);
        if START_QUESTION.contains(&question) && self.stops.is_none() {
            if let Some(first) = &self.first {
                self.stops = Some(stops_from(first, picked, self.lang));
            }
        } else if END_QUESTION.iter().any(|end| question.ends_with(end)) {
            self.end = Some(if picked == 1 { EndChoice::NextPage } else { EndChoice::Summary });
        }
    }

    fn on_suggestion(&mut self, call: &ToolCall, result: &str) {
        if let Some((key, variant, proposal)) = parse_suggestion(result) {
            self.suggestions.insert((key, variant), proposal);
            return;
        }
        // A refusal (the point is gone, say): no proposal for the point the call asked about.
        let number = call.arguments.get("point").and_then(Value::as_u64);
        let variant = call.arguments.get("variant").and_then(Value::as_u64).unwrap_or(0);
        let key = self.latest.as_ref().and_then(|latest| latest.points.iter().find(|p| Some(p.number) == number));
        if let (Some(point), Ok(variant)) = (key, usize::try_from(variant)) {
            self.suggestions.insert((point.key.clone(), variant), None);
        }
    }

    fn on_write(&mut self, result: &str, offered: &HashSet<&str>) {
        // Brings the walk to where it was when the write was proposed.
        self.settle(offered);
        let Some(stop) = self.current().cloned() else { return };
        if let Some(reason) = read_denial(result) {
            match reason {
                Some(DenialReason::Variant) => self.variant += 1,
                Some(DenialReason::Skip) => self.advance(&stop, Outcome::Skipped),
                None => self.cancelled = true,
            }
        } else if is_error(result) {
            self.advance(&stop, Outcome::NotApplied);
            self.page_changed(true);
        } else {
            let used = self.suggestions.get(&(stop.key.clone(), self.variant)).cloned().flatten();
            let (old, new) = used.map(|p| (p.current, p.proposed)).unwrap_or_default();
            self.advance(&stop, Outcome::Applied { old, new });
            self.page_changed(true);
        }
    }

    /// Suggestions were made for the page as it was; after a change they (and the point numbers)
    /// may be out of date.
    fn page_changed(&mut self, needs_analysis: bool) {
        self.suggestions.clear();
        self.batch = false;
        self.needs_analysis = needs_analysis;
    }

    fn current(&self) -> Option<&Stop> {
        self.stops.as_ref()?.get(self.position)
    }

    fn remaining(&self) -> &[Stop] {
        self.stops.as_deref().and_then(|stops| stops.get(self.position..)).unwrap_or_default()
    }

    fn advance(&mut self, stop: &Stop, outcome: Outcome) {
        self.outcomes.push((stop.label.clone(), outcome));
        self.position += 1;
        self.variant = 0;
    }

    /// Moves past the points that need no round of their own: fixed by an earlier change, without
    /// a (further) proposal, or with a proposal no offered tool can apply.
    fn settle(&mut self, offered: &HashSet<&str>) {
        while !self.cancelled && !self.needs_analysis {
            let (Some(stop), Some(latest)) = (self.current().cloned(), self.latest.as_ref()) else { return };
            if latest.point(&stop.key).is_none() {
                self.advance(&stop, Outcome::AlreadyFixed);
                continue;
            }
            match self.suggestions.get(&(stop.key.clone(), self.variant)) {
                Some(None) => {
                    let outcome = if self.variant == 0 { Outcome::NoProposal } else { Outcome::NoFurtherVariant };
                    self.advance(&stop, outcome);
                    self.batch = true;
                }
                Some(Some(proposal)) if !offered.contains(proposal.tool.as_str()) => {
                    self.advance(&stop, Outcome::NotApplied);
                }
                _ => return,
            }
        }
    }
}

/// The points of the first analysis, starting at the picked one and wrapping around once.
fn stops_from(analysis: &PageAnalysis, start: usize, lang: Lang) -> Vec<Stop> {
    let count = analysis.points.len();
    (0..count)
        .map(|offset| &analysis.points[(start.min(count.saturating_sub(1)) + offset) % count])
        .map(|point| Stop { key: point.key.clone(), label: option_label(point, lang) })
        .collect()
}

fn option_label(point: &PointRef, lang: Lang) -> String {
    one_line(&format!("{}. {}", point.number, kind_label(&point.kind, lang)), MAX_LABEL_CHARS)
}

// --- the next step ------------------------------------------------------------------------------

pub(crate) struct Tour<'a> {
    page_id: i64,
    lang: Lang,
    offered: HashSet<&'a str>,
    messages: &'a [ChatMessage],
}

impl<'a> Tour<'a> {
    /// A tour needs the page sentence and the tools to analyse, suggest, ask and write.
    pub(crate) fn detect(request: &'a CompletionRequest) -> Option<Tour<'a>> {
        let system = request.messages.iter().find(|m| m.role == Role::System)?;
        let page_id = page_named_in(&system.content)?;
        let offered: HashSet<&str> = request.tools.iter().map(|tool| tool.name.as_str()).collect();
        let reads = [ANALYSE_PAGE, SUGGEST_CHANGE, ASK_CHOICE].iter().all(|name| offered.contains(name));
        let writes = offered.contains(UPDATE_PAGE_FIELD) || offered.contains(SET_ALT_TEXT);
        (reads && writes).then(|| Tour {
            page_id,
            lang: Lang::of(&request.messages),
            offered,
            messages: &request.messages,
        })
    }

    fn t(&self, texts: [&'static str; 2]) -> &'static str {
        self.lang.pick(texts)
    }

    pub(crate) fn next_step(&self) -> Completion {
        let walk = Walk::read(self.messages, &self.offered, self.lang);
        let Some(first) = &walk.first else {
            return match &walk.analysis_failed {
                Some(error) => self.answer(self.cannot_analyse(error)),
                None => self.call(
                    self.t(["I am analysing the page first.", "Ich analysiere zuerst die Seite."]),
                    vec![(ANALYSE_PAGE, json!({ "page_id": self.page_id }))],
                ),
            };
        };
        if walk.cancelled {
            let stop = self.t([
                "You cancelled the proposal, so I stop the tour here.",
                "Du hast den Vorschlag abgebrochen, also beende ich den Rundgang hier.",
            ]);
            return self.answer(format!("{stop}\n\n{}", self.recap(&walk, first)));
        }
        if walk.reanalysis_failed {
            let stop = self.t([
                "I could not analyse the page again, so I stop the tour here.",
                "Ich konnte die Seite nicht erneut analysieren, also beende ich den Rundgang hier.",
            ]);
            return self.answer(format!("{stop}\n\n{}", self.recap(&walk, first)));
        }
        let Some(stop) = walk.current() else {
            return match walk.stops {
                None => self.ask_start(first),
                Some(_) => self.finish(&walk, first),
            };
        };
        if walk.needs_analysis {
            return self.call(
                self.t(["Let me look at the page again.", "Ich schaue mir die Seite noch einmal an."]),
                vec![(ANALYSE_PAGE, json!({ "page_id": self.page_id }))],
            );
        }
        if let Some(Some(proposal)) = walk.suggestions.get(&(stop.key.clone(), walk.variant)) {
            let text = match self.lang {
                Lang::En => format!("A proposal for {}: \u{201c}{}\u{201d}", stop.label, proposal.proposed),
                Lang::De => format!("Ein Vorschlag zu {}: \u{201e}{}\u{201c}", stop.label, proposal.proposed),
            };
            return self.call(&text, vec![(proposal.tool.as_str(), proposal.arguments.clone())]);
        }
        self.call("", self.suggestion_calls(&walk, stop))
    }

    /// suggest_change for the current point; after a point without a proposal also for every
    /// later point not asked about yet.
    fn suggestion_calls(&self, walk: &Walk, stop: &Stop) -> Vec<(&'static str, Value)> {
        let Some(latest) = &walk.latest else { return Vec::new() };
        let mut wanted = vec![(stop.key.as_str(), walk.variant)];
        if walk.batch {
            let later = walk.remaining().iter().skip(1).map(|later| (later.key.as_str(), 0));
            wanted.extend(later.filter(|(key, _)| !walk.suggestions.contains_key(&(key.to_string(), 0))));
        }
        wanted
            .into_iter()
            .filter_map(|(key, variant)| latest.point(key).map(|point| (point.number, variant)))
            .map(|(number, variant)| {
                (SUGGEST_CHANGE, json!({ "page_id": self.page_id, "point": number, "variant": variant }))
            })
            .collect()
    }

    fn ask_start(&self, first: &PageAnalysis) -> Completion {
        let options: Vec<String> =
            first.points.iter().take(MAX_OPTIONS).map(|point| option_label(point, self.lang)).collect();
        let text = match self.lang {
            Lang::En => format!("I found {} points on \u{201c}{}\u{201d}.", first.points.len(), first.title),
            Lang::De => format!("Ich habe {} Punkte auf \u{201e}{}\u{201c} gefunden.", first.points.len(), first.title),
        };
        self.call(&text, vec![(ASK_CHOICE, json!({ "question": self.t(START_QUESTION), "options": options }))])
    }

    fn finish(&self, walk: &Walk, first: &PageAnalysis) -> Completion {
        match walk.end {
            None => {
                let question = if first.points.is_empty() {
                    format!("{} {}", self.t(NOTHING_FOUND), self.t(END_QUESTION))
                } else {
                    self.t(END_QUESTION).to_string()
                };
                let options = [self.t(SUMMARY_OPTION), self.t(NEXT_PAGE_OPTION)];
                self.call(
                    self.t(["That was the last point.", "Das war der letzte Punkt."]),
                    vec![(ASK_CHOICE, json!({ "question": question, "options": options }))],
                )
            }
            Some(EndChoice::Summary) => self.answer(self.recap(walk, first)),
            Some(EndChoice::NextPage) if !walk.pages_asked && self.offered.contains(LIST_PAGES) => {
                self.call("", vec![(LIST_PAGES, json!({}))])
            }
            Some(EndChoice::NextPage) => self.answer(self.next_page(walk)),
        }
    }

    fn cannot_analyse(&self, error: &str) -> String {
        // The tool's refusal is written for the model; its sentence is what the reader needs.
        let detail = read_rejected(error).unwrap_or_default();
        let lead = match self.lang {
            Lang::En => format!("I could not analyse page {}.", self.page_id),
            Lang::De => format!("Ich konnte die Seite {} nicht analysieren.", self.page_id),
        };
        format!("{lead} {detail}").trim_end().to_string()
    }

    /// What the tour did, point by point, in the order it visited them.
    fn recap(&self, walk: &Walk, first: &PageAnalysis) -> String {
        let de = self.lang == Lang::De;
        let quote = |text: &str| {
            let text = one_line(text, 80);
            if de {
                format!("\u{201e}{text}\u{201c}")
            } else {
                format!("\u{201c}{text}\u{201d}")
            }
        };
        let mut lines = vec![match self.lang {
            Lang::En => format!("Summary of the tour of {}:", quote(&first.title)),
            Lang::De => format!("Zusammenfassung des Rundgangs durch {}:", quote(&first.title)),
        }];
        if first.points.is_empty() {
            lines.push(self.t(NOTHING_FOUND).to_string());
        }
        for (label, outcome) in &walk.outcomes {
            let line = match outcome {
                Outcome::Applied { old, new } => {
                    format!("{} {label}: {} → {}", self.t(["Applied:", "Übernommen:"]), quote(old), quote(new))
                }
                Outcome::Skipped => format!("{} {label}", self.t(["Skipped:", "Übersprungen:"])),
                Outcome::NoProposal => format!("{} {label}", self.t(["No proposal:", "Kein Vorschlag:"])),
                Outcome::NoFurtherVariant => {
                    format!(
                        "{} {label}",
                        self.t(["Not changed, no further variant:", "Nicht geändert, keine weitere Variante:"])
                    )
                }
                Outcome::AlreadyFixed => {
                    format!(
                        "{} {label}",
                        self.t(["Fixed by an earlier change:", "Durch eine frühere Änderung erledigt:"])
                    )
                }
                Outcome::NotApplied => format!("{} {label}", self.t(["Not applied:", "Nicht übernommen:"])),
            };
            lines.push(format!("- {line}"));
        }
        for stop in walk.remaining() {
            lines.push(format!("- {} {}", self.t(["Not reached:", "Nicht erreicht:"]), stop.label));
        }
        let applied = walk.outcomes.iter().any(|(_, outcome)| matches!(outcome, Outcome::Applied { .. }));
        lines.push(
            if applied {
                self.t([
                    "The applied changes are saved on the page.",
                    "Die übernommenen Änderungen sind auf der Seite gespeichert.",
                ])
            } else {
                self.t(["Nothing on the page was changed.", "An der Seite wurde nichts geändert."])
            }
            .to_string(),
        );
        lines.join("\n")
    }

    /// The page after this one by id, or the first one after the last.
    fn next_page(&self, walk: &Walk) -> String {
        let applied = walk.outcomes.iter().filter(|(_, outcome)| matches!(outcome, Outcome::Applied { .. })).count();
        let mut text = match self.lang {
            Lang::En => format!("On this page {applied} change(s) were applied."),
            Lang::De => format!("Auf dieser Seite wurden {applied} Änderung(en) übernommen."),
        };
        let pages = walk.pages.as_deref().unwrap_or_default();
        let next = pages.iter().filter(|page| page.id > self.page_id).min_by_key(|page| page.id);
        let sentence = match (next, pages.iter().min_by_key(|page| page.id)) {
            (Some(page), _) => match self.lang {
                Lang::En => format!(
                    "Next is \u{201c}{}\u{201d} (/{}). Open it and start a tour there to go on.",
                    page.title, page.slug
                ),
                Lang::De => format!(
                    "Als Nächstes kommt \u{201e}{}\u{201c} (/{}). Öffne sie und starte dort einen Rundgang.",
                    page.title, page.slug
                ),
            },
            (None, Some(page)) if page.id != self.page_id => match self.lang {
                Lang::En => format!(
                    "This was the last page. To go round again, open \u{201c}{}\u{201d} (/{}) and start a tour there.",
                    page.title, page.slug
                ),
                Lang::De => format!(
                    "Das war die letzte Seite. Für eine neue Runde öffne \u{201e}{}\u{201c} (/{}) und starte dort einen Rundgang.",
                    page.title, page.slug
                ),
            },
            _ => self
                .t(["Open the next page and start a tour there.", "Öffne die nächste Seite und starte dort einen Rundgang."])
                .to_string(),
        };
        text.push(' ');
        text.push_str(&sentence);
        text
    }

    fn answer(&self, content: String) -> Completion {
        Completion { content, tool_calls: Vec::new() }
    }

    /// Tool calls with ids unique over the run: results are matched to calls by id.
    fn call(&self, content: &str, calls: Vec<(&str, Value)>) -> Completion {
        let turn = self.messages.iter().filter(|m| m.role == Role::Assistant && !m.tool_calls.is_empty()).count() + 1;
        let tool_calls = calls
            .into_iter()
            .enumerate()
            .map(|(index, (name, arguments))| ToolCall {
                id: format!("demo_{turn}_{index}"),
                name: name.to_string(),
                arguments,
            })
            .collect();
        Completion { content: content.to_string(), tool_calls }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_short_single_lines_in_both_languages() {
        assert!(reads_german("Führe mich Punkt für Punkt durch diese Seite."));
        assert!(reads_german("bitte weiter"));
        assert!(!reads_german("Guide me through this page, one point at a time."));
        assert_eq!(kind_label("alt_useless", Lang::De), "Alternativtext ohne Aussage");
        assert_eq!(kind_label("brand_new_kind", Lang::En), "Brand new kind");
        let long = PointRef { number: 7, key: "x".into(), kind: "y\n".repeat(200) };
        let label = option_label(&long, Lang::En);
        assert!(label.chars().count() <= MAX_LABEL_CHARS && !label.contains('\n'), "{label}");
    }

    #[test]
    fn every_point_kind_of_the_analysis_has_a_label_of_its_own() {
        for kind in [
            PointKind::TitleTooShort,
            PointKind::TitleTooLong,
            PointKind::DescriptionMissing,
            PointKind::DescriptionTooShort,
            PointKind::DescriptionTooLong,
            PointKind::NoH1,
            PointKind::MultipleH1,
            PointKind::SkippedHeadingLevel,
            PointKind::AltMissing,
            PointKind::AltUseless,
            PointKind::VagueLinkText,
            PointKind::LongSentences,
        ] {
            let name = serde_json::to_value(kind).unwrap();
            let name = name.as_str().unwrap();
            for lang in [Lang::En, Lang::De] {
                let label = kind_label(name, lang);
                assert!(!label.contains('_') && label != name, "{name}: {label}");
            }
        }
    }
}
