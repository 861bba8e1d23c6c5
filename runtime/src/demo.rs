//! The built-in demo model: deterministic, offline, driven only by the transcript it is given.
//!
//! Outside a tour it echoes what the user said. In a guided page tour (the system prompt names the
//! page and the tour's tools are offered) it plays the tour with the same tools a real model gets:
//! analyse the page, ask which point to start with, propose one change at a time, and at the end
//! ask for a summary or the next page.
//!
//! It keeps no state of its own. Every step is worked out again from the tool calls and results of
//! the current run, so a pause, a restart or a retried segment changes nothing. A new chat turn is
//! a new run whose transcript holds no tool results, so the tour starts over from the page as it
//! is then.

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use serde_json::{json, Value};

use crate::ask_choice::ASK_CHOICE;
use crate::message::{ChatMessage, Role, ToolCall};
use crate::provider::{Completion, CompletionRequest, ModelProvider, ProviderError};

#[derive(Debug, Clone, Default)]
pub struct DemoProvider;

#[async_trait]
impl ModelProvider for DemoProvider {
    fn label(&self) -> String {
        "Demo model".to_string()
    }

    fn is_demo(&self) -> bool {
        true
    }

    async fn complete(&self, request: CompletionRequest) -> Result<Completion, ProviderError> {
        if let Some(tour) = Tour::detect(&request) {
            return Ok(tour.next_step());
        }
        if let Some(step) = crate::showcase::showcase(&request) {
            return Ok(step);
        }
        Ok(echo(&request.messages))
    }
}

fn echo(messages: &[ChatMessage]) -> Completion {
    let user_turns = messages.iter().filter(|m| m.role == Role::User).count();
    let last_user =
        messages.iter().rev().find(|m| m.role == Role::User).map(|m| m.content.trim().to_string()).unwrap_or_default();
    let content = if last_user.is_empty() {
        "Hello! I am the built-in demo model. Ask me anything, or start a guided page tour.".to_string()
    } else {
        format!(
            "You said: \u{201c}{last_user}\u{201d} (message {user_turns} of this conversation). \
             I am the built-in demo model and answer from a script; configure an \
             OpenAI-compatible model for real answers."
        )
    };
    Completion { content, tool_calls: Vec::new() }
}

// --- the protocol with the server's content tools -------------------------------------------------

/// The sentence the chat puts into the system prompt of a conversation about a page.
const PAGE_SENTENCE: &str = "This conversation is about the page with id ";
const LIST_PAGES: &str = "list_pages";
const ANALYSE_PAGE: &str = "analyse_page";
const SUGGEST_CHANGE: &str = "suggest_change";
const UPDATE_PAGE_FIELD: &str = "update_page_field";
const SET_ALT_TEXT: &str = "set_alt_text";
/// How `ask_choice` reports the answer.
const PICKED: &str = "The user picked: ";
const DENIED: &str = "Error: approval_denied";
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

/// A short label for a point kind, as analyse_page names it.
fn kind_label(kind: &str, lang: Lang) -> String {
    let pair = match kind {
        "title_too_short" => ["Title too short", "Titel zu kurz"],
        "title_too_long" => ["Title too long", "Titel zu lang"],
        "description_missing" => ["Description missing", "Beschreibung fehlt"],
        "description_too_short" => ["Description too short", "Beschreibung zu kurz"],
        "description_too_long" => ["Description too long", "Beschreibung zu lang"],
        "no_h1" => ["No main heading", "Keine Hauptüberschrift"],
        "multiple_h1" => ["Second main heading", "Zweite Hauptüberschrift"],
        "skipped_heading_level" => ["Skipped heading level", "Übersprungene Überschriftenebene"],
        "alt_missing" => ["Image without alt text", "Bild ohne Alternativtext"],
        "alt_useless" => ["Alt text says nothing", "Alternativtext ohne Aussage"],
        "vague_link_text" => ["Vague link text", "Unklarer Linktext"],
        "long_sentences" => ["Long sentences", "Lange Sätze"],
        other => {
            let words = other.replace('_', " ");
            let mut chars = words.chars();
            let readable: String = chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default();
            return readable;
        }
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
        if result.starts_with(DENIED) {
            if result.contains("reason: variant") {
                self.variant += 1;
            } else if result.contains("reason: skip") {
                self.advance(&stop, Outcome::Skipped);
            } else {
                self.cancelled = true;
            }
        } else if result.starts_with("Error:") {
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

struct Tour<'a> {
    page_id: i64,
    lang: Lang,
    offered: HashSet<&'a str>,
    messages: &'a [ChatMessage],
}

fn page_id_in(text: &str) -> Option<i64> {
    let start = text.find(PAGE_SENTENCE)? + PAGE_SENTENCE.len();
    let rest = &text[start..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    if !rest[digits.len()..].starts_with('.') {
        return None;
    }
    digits.parse().ok()
}

impl<'a> Tour<'a> {
    /// A tour needs the page sentence and the tools to analyse, suggest, ask and write.
    fn detect(request: &'a CompletionRequest) -> Option<Tour<'a>> {
        let system = request.messages.iter().find(|m| m.role == Role::System)?;
        let page_id = page_id_in(&system.content)?;
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

    fn next_step(&self) -> Completion {
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
        let detail = error.split_once("rejected its arguments: ").map_or("", |(_, detail)| detail);
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
    use crate::provider::ToolDefinition;

    #[tokio::test]
    async fn demo_answers_from_the_transcript() {
        let provider = DemoProvider;
        let request = CompletionRequest {
            messages: vec![ChatMessage::user("first"), ChatMessage::assistant("ok"), ChatMessage::user("Hi there")],
            tools: Vec::new(),
        };
        let completion = provider.complete(request).await.unwrap();
        assert!(completion.content.contains("\u{201c}Hi there\u{201d}"), "{}", completion.content);
        assert!(completion.content.contains("message 2"));
        assert!(completion.tool_calls.is_empty());
    }

    // --- a fake site and a fake runtime loop, so the tour plays exactly as it would for real ---

    const PAGE: i64 = 1;
    const TOUR_TOOLS: [&str; 6] =
        [LIST_PAGES, ANALYSE_PAGE, SUGGEST_CHANGE, UPDATE_PAGE_FIELD, SET_ALT_TEXT, ASK_CHOICE];
    const CAP: usize = crate::run::DEFAULT_MAX_ROUNDS as usize;

    #[derive(Clone)]
    struct FakePoint {
        kind: &'static str,
        target: &'static str,
        block: Option<u64>,
        variants: usize,
    }

    fn point(kind: &'static str, target: &'static str, block: Option<u64>, variants: usize) -> FakePoint {
        FakePoint { kind, target, block, variants }
    }

    /// The seed's home page as analyse_page sees it.
    fn home() -> Vec<FakePoint> {
        vec![
            point("title_too_long", "title", None, 2),
            point("description_missing", "description", None, 2),
            point("alt_missing", "block", Some(2), 2),
            point("vague_link_text", "block", Some(5), 2),
        ]
    }

    fn key_of(point: &FakePoint) -> String {
        match point.block {
            Some(block) => format!("{}:{block}", point.target),
            None => point.target.to_string(),
        }
    }

    /// Plays the content tools: points disappear when a write fixes them, numbers shift.
    struct Site {
        points: Vec<FakePoint>,
        fixed: Vec<String>,
        writes: Vec<String>,
    }

    impl Site {
        fn live(&self) -> Vec<&FakePoint> {
            self.points.iter().filter(|p| !self.fixed.contains(&key_of(p))).collect()
        }

        fn point_json(number: usize, point: &FakePoint) -> Value {
            let mut value = json!({ "number": number, "kind": point.kind, "target": point.target });
            if let Some(block) = point.block {
                value["block"] = json!(block);
            }
            value
        }

        fn execute(&mut self, call: &ToolCall) -> String {
            let args = &call.arguments;
            match call.name.as_str() {
                ANALYSE_PAGE if args["page_id"] == PAGE => {
                    let points: Vec<Value> =
                        self.live().iter().enumerate().map(|(i, p)| Self::point_json(i + 1, p)).collect();
                    json!({ "page_id": PAGE, "title": "Bäckerei Sonnenkorn", "points": points }).to_string()
                }
                ANALYSE_PAGE => "Error: tool \"analyse_page\" rejected its arguments: There is no page with id 9; list_pages shows the ids.".into(),
                SUGGEST_CHANGE => {
                    let number = args["point"].as_u64().unwrap() as usize;
                    let variant = args["variant"].as_u64().unwrap() as usize;
                    let live = self.live();
                    let Some(point) = live.get(number - 1) else {
                        return "Error: tool \"suggest_change\" rejected its arguments: no such point".into();
                    };
                    let key = key_of(point);
                    let mut value = json!({ "point": Self::point_json(number, point), "variant": variant, "variants": point.variants });
                    if variant < point.variants {
                        let tool = if point.kind == "alt_missing" { SET_ALT_TEXT } else { UPDATE_PAGE_FIELD };
                        value["current"] = json!(format!("old {key}"));
                        value["proposed"] = json!(format!("{key} v{variant}"));
                        value["apply_with"] = json!({ "tool": tool, "arguments": { "page_id": PAGE, "key": key, "value": format!("{key} v{variant}") } });
                    } else {
                        value["message"] = json!("There is no further variant.");
                    }
                    value.to_string()
                }
                UPDATE_PAGE_FIELD | SET_ALT_TEXT => {
                    let key = args["key"].as_str().unwrap().to_string();
                    self.writes.push(args["value"].as_str().unwrap().to_string());
                    self.fixed.push(key);
                    "Changed it.".into()
                }
                LIST_PAGES => json!({ "pages": [
                    { "id": 1, "slug": "home", "title": "Start" },
                    { "id": 2, "slug": "ueber-uns", "title": "Über uns" },
                ] })
                .to_string(),
                other => panic!("unexpected tool {other}"),
            }
        }
    }

    #[derive(Debug)]
    enum Pause {
        Question { call: ToolCall, question: String, options: Vec<String> },
        Card(ToolCall),
        Done(String),
    }

    #[derive(Clone, Copy)]
    enum Decision {
        Approve,
        Variant,
        Skip,
        Deny,
    }

    struct Sim {
        messages: Vec<ChatMessage>,
        tools: Vec<ToolDefinition>,
        site: Site,
    }

    fn system(page_id: i64) -> ChatMessage {
        ChatMessage::system(format!(
            "You are Tourguide.\n\nGuide the tour.\n\nThis conversation is about the page with id {page_id}."
        ))
    }

    fn definitions(names: &[&str]) -> Vec<ToolDefinition> {
        names
            .iter()
            .map(|name| ToolDefinition { name: name.to_string(), description: String::new(), parameters: json!({}) })
            .collect()
    }

    impl Sim {
        fn new(points: Vec<FakePoint>, first_message: &str) -> Sim {
            Sim {
                messages: vec![system(PAGE), ChatMessage::user(first_message)],
                tools: definitions(&TOUR_TOOLS),
                site: Site { points, fixed: Vec::new(), writes: Vec::new() },
            }
        }

        /// One segment as the runtime runs it: reads execute, a write or a question pauses, text
        /// ends the run. Fails when the segment needs more rounds than the default cap.
        async fn segment(&mut self) -> Pause {
            for _ in 0..CAP {
                let request = CompletionRequest { messages: self.messages.clone(), tools: self.tools.clone() };
                let completion = DemoProvider.complete(request).await.unwrap();
                if completion.tool_calls.is_empty() {
                    self.messages.push(ChatMessage::assistant(completion.content.clone()));
                    return Pause::Done(completion.content);
                }
                let calls = completion.tool_calls.clone();
                self.messages.push(ChatMessage::assistant_with_tool_calls(completion.content, calls.clone()));
                if let Some(write) = calls.iter().find(|c| c.name == UPDATE_PAGE_FIELD || c.name == SET_ALT_TEXT) {
                    assert_eq!(calls.len(), 1, "a write comes alone");
                    return Pause::Card(write.clone());
                }
                if let Some(ask) = calls.iter().find(|c| c.name == ASK_CHOICE) {
                    assert_eq!(calls.len(), 1, "a question comes alone");
                    let question = ask.arguments["question"].as_str().unwrap().to_string();
                    let options: Vec<String> = ask.arguments["options"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|o| o.as_str().unwrap().to_string())
                        .collect();
                    assert!((2..=MAX_OPTIONS).contains(&options.len()));
                    assert!(options.iter().all(|o| o.chars().count() <= 120 && !o.contains('\n')));
                    return Pause::Question { call: ask.clone(), question, options };
                }
                for call in calls {
                    let result = self.site.execute(&call);
                    self.messages.push(ChatMessage::tool_result(call.id, result));
                }
            }
            panic!("the tour needed more than {CAP} rounds in one segment: {:#?}", self.messages);
        }

        async fn answer(&mut self, call: &ToolCall, option: &str) -> Pause {
            self.messages.push(ChatMessage::tool_result(call.id.clone(), format!("{PICKED}{option}")));
            self.segment().await
        }

        async fn decide(&mut self, call: &ToolCall, decision: Decision) -> Pause {
            let denial = |reason: &str, advice: &str| {
                format!(
                    "Error: approval_denied (decided_by: run_owner{reason}). The approval for tool \"{}\" was declined by \
                     the run owner. Nothing was executed. {advice}",
                    call.name
                )
            };
            let result = match decision {
                Decision::Approve => self.site.execute(call),
                Decision::Variant => denial(", reason: variant", "Propose a different version of this change."),
                Decision::Skip => denial(", reason: skip", "Do not propose this change again; move on."),
                Decision::Deny => denial("", "Ask whether the change should be proposed again."),
            };
            self.messages.push(ChatMessage::tool_result(call.id.clone(), result));
            self.segment().await
        }
    }

    fn card(pause: Pause) -> ToolCall {
        match pause {
            Pause::Card(call) => call,
            other => panic!("expected a card, got {other:?}"),
        }
    }

    fn asked(pause: Pause) -> (ToolCall, String, Vec<String>) {
        match pause {
            Pause::Question { call, question, options } => (call, question, options),
            other => panic!("expected a question, got {other:?}"),
        }
    }

    fn done(pause: Pause) -> String {
        match pause {
            Pause::Done(text) => text,
            other => panic!("expected an answer, got {other:?}"),
        }
    }

    fn value(call: &ToolCall) -> &str {
        call.arguments["value"].as_str().unwrap()
    }

    #[tokio::test]
    async fn tour_walks_every_point_once_from_the_chosen_one() {
        let mut sim = Sim::new(home(), "Guide me through this page, one point at a time.");
        let (ask, question, options) = asked(sim.segment().await);
        assert_eq!(question, "Which point should we start with?");
        assert_eq!(
            options,
            ["1. Title too long", "2. Description missing", "3. Image without alt text", "4. Vague link text"]
        );

        let description = card(sim.answer(&ask, "2. Description missing").await);
        assert_eq!((description.name.as_str(), value(&description)), (UPDATE_PAGE_FIELD, "description v0"));
        let variant = card(sim.decide(&description, Decision::Variant).await);
        assert_eq!(value(&variant), "description v1", "another variant of the same point");
        let alt = card(sim.decide(&variant, Decision::Approve).await);
        assert_eq!((alt.name.as_str(), value(&alt)), (SET_ALT_TEXT, "block:2 v0"));
        let link = card(sim.decide(&alt, Decision::Skip).await);
        assert_eq!(value(&link), "block:5 v0");
        let title = card(sim.decide(&link, Decision::Approve).await);
        assert_eq!(value(&title), "title v0", "wraps around to the points before the chosen one");
        let (end, question, options) = asked(sim.decide(&title, Decision::Skip).await);
        assert_eq!(question, "Summary or next page?");
        assert_eq!(options, ["Summary", "Next page"]);

        let summary = done(sim.answer(&end, "Summary").await);
        assert_eq!(
            summary,
            "Summary of the tour of \u{201c}Bäckerei Sonnenkorn\u{201d}:\n\
             - Applied: 2. Description missing: \u{201c}old description\u{201d} → \u{201c}description v1\u{201d}\n\
             - Skipped: 3. Image without alt text\n\
             - Applied: 4. Vague link text: \u{201c}old block:5\u{201d} → \u{201c}block:5 v0\u{201d}\n\
             - Skipped: 1. Title too long\n\
             The applied changes are saved on the page."
        );
        assert_eq!(sim.site.writes, ["description v1", "block:5 v0"]);
    }

    #[tokio::test]
    async fn tour_speaks_german_to_a_german_reader() {
        let mut sim = Sim::new(home(), "Führe mich Punkt für Punkt durch diese Seite.");
        let (ask, question, options) = asked(sim.segment().await);
        assert_eq!(question, "Mit welchem Punkt sollen wir anfangen?");
        assert_eq!(options[0], "1. Titel zu lang");
        assert_eq!(options[2], "3. Bild ohne Alternativtext");
        let mut call = card(sim.answer(&ask, "4. Unklarer Linktext").await);
        for _ in 0..3 {
            call = card(sim.decide(&call, Decision::Skip).await);
        }
        let (end, question, options) = asked(sim.decide(&call, Decision::Skip).await);
        assert_eq!(question, "Zusammenfassung oder nächste Seite?");
        assert_eq!(options, ["Zusammenfassung", "Nächste Seite"]);
        let summary = done(sim.answer(&end, "Zusammenfassung").await);
        assert!(
            summary.starts_with("Zusammenfassung des Rundgangs durch \u{201e}Bäckerei Sonnenkorn\u{201c}:"),
            "{summary}"
        );
        assert!(
            summary.contains("- Übersprungen: 4. Unklarer Linktext\n- Übersprungen: 1. Titel zu lang"),
            "{summary}"
        );
        assert!(summary.ends_with("An der Seite wurde nichts geändert."), "{summary}");
    }

    #[tokio::test]
    async fn tour_moves_on_when_the_variants_run_out() {
        let mut sim = Sim::new(home(), "Guide me");
        let (ask, _, _) = asked(sim.segment().await);
        let mut call = card(sim.answer(&ask, "1. Title too long").await);
        assert_eq!(value(&call), "title v0");
        call = card(sim.decide(&call, Decision::Variant).await);
        assert_eq!(value(&call), "title v1");
        call = card(sim.decide(&call, Decision::Variant).await);
        assert_eq!(value(&call), "description v0", "no third variant: on to the next point");
        call = card(sim.decide(&call, Decision::Skip).await);
        call = card(sim.decide(&call, Decision::Skip).await);
        let (end, _, _) = asked(sim.decide(&call, Decision::Skip).await);
        let summary = done(sim.answer(&end, "Summary").await);
        assert!(summary.contains("- Not changed, no further variant: 1. Title too long\n"), "{summary}");
    }

    #[tokio::test]
    async fn tour_skips_points_without_a_proposal_within_the_round_cap() {
        let mut points: Vec<FakePoint> = (0..8).map(|block| point("long_sentences", "block", Some(block), 0)).collect();
        points.insert(0, point("title_too_long", "title", None, 2));
        points.push(point("vague_link_text", "block", Some(9), 1));
        let mut sim = Sim::new(points, "Guide me");
        let (ask, _, options) = asked(sim.segment().await);
        assert_eq!(options.len(), 10);
        // The title is applied, then eight points in a row have no proposal: one batch of
        // suggestions, not a round for each.
        let title = card(sim.answer(&ask, "1. Title too long").await);
        let link = card(sim.decide(&title, Decision::Approve).await);
        assert_eq!(value(&link), "block:9 v0");
        let batched = sim.messages.iter().filter(|m| m.tool_calls.len() > 1).count();
        assert_eq!(batched, 1, "one batch of suggestions");
        let (end, _, _) = asked(sim.decide(&link, Decision::Approve).await);
        let summary = done(sim.answer(&end, "Summary").await);
        assert_eq!(summary.matches("- No proposal: ").count(), 8, "{summary}");
    }

    #[tokio::test]
    async fn tour_treats_a_point_fixed_by_an_earlier_change_as_done() {
        let mut sim = Sim::new(home(), "Guide me");
        let (ask, _, _) = asked(sim.segment().await);
        let title = card(sim.answer(&ask, "1. Title too long").await);
        // Something else fixes the description meanwhile (another point's change did it too).
        sim.site.fixed.push("description".into());
        let alt = card(sim.decide(&title, Decision::Approve).await);
        assert_eq!(value(&alt), "block:2 v0");
        let link = card(sim.decide(&alt, Decision::Skip).await);
        let (end, _, _) = asked(sim.decide(&link, Decision::Skip).await);
        let summary = done(sim.answer(&end, "Summary").await);
        assert!(summary.contains("- Fixed by an earlier change: 2. Description missing\n"), "{summary}");
    }

    #[tokio::test]
    async fn tour_stops_when_the_proposal_is_cancelled() {
        let mut sim = Sim::new(home(), "Guide me");
        let (ask, _, _) = asked(sim.segment().await);
        let title = card(sim.answer(&ask, "1. Title too long").await);
        let description = card(sim.decide(&title, Decision::Approve).await);
        let text = done(sim.decide(&description, Decision::Deny).await);
        assert!(text.starts_with("You cancelled the proposal, so I stop the tour here."), "{text}");
        assert!(text.contains("- Applied: 1. Title too long"), "{text}");
        assert!(text.contains("- Not reached: 2. Description missing\n- Not reached: 3."), "{text}");
        assert_eq!(sim.site.writes, ["title v0"]);
    }

    #[tokio::test]
    async fn tour_names_the_next_page() {
        let mut sim = Sim::new(vec![point("title_too_long", "title", None, 1)], "Guide me");
        // One point: nothing to choose, the card comes at once.
        let title = card(sim.segment().await);
        let (end, _, _) = asked(sim.decide(&title, Decision::Approve).await);
        let text = done(sim.answer(&end, "Next page").await);
        assert_eq!(
            text,
            "On this page 1 change(s) were applied. Next is \u{201c}Über uns\u{201d} (/ueber-uns). Open it and start a \
             tour there to go on."
        );
        assert!(sim.messages.iter().any(|m| m.tool_calls.iter().any(|c| c.name == LIST_PAGES)));
    }

    #[tokio::test]
    async fn tour_of_a_clean_page_says_so_and_asks_what_next() {
        let mut sim = Sim::new(Vec::new(), "Guide me");
        let (end, question, options) = asked(sim.segment().await);
        assert_eq!(question, "This page has no points to improve. Summary or next page?");
        assert_eq!(options, ["Summary", "Next page"]);
        let summary = done(sim.answer(&end, "Summary").await);
        assert!(summary.contains("\nThis page has no points to improve.\n"), "{summary}");
    }

    #[tokio::test]
    async fn tour_reports_a_page_it_cannot_analyse() {
        let mut sim = Sim::new(home(), "Guide me");
        sim.messages[0] = system(9);
        let text = done(sim.segment().await);
        assert_eq!(text, "I could not analyse page 9. There is no page with id 9; list_pages shows the ids.");
    }

    #[tokio::test]
    async fn tour_starts_over_in_a_new_run() {
        // A new chat turn carries only the chat's text messages: the tour analyses the page again.
        let messages = vec![
            system(PAGE),
            ChatMessage::user("Guide me through this page, one point at a time."),
            ChatMessage::assistant("Which point should we start with?"),
            ChatMessage::user("Actually, let's start again"),
        ];
        let completion =
            DemoProvider.complete(CompletionRequest { messages, tools: definitions(&TOUR_TOOLS) }).await.unwrap();
        assert_eq!(completion.tool_calls.len(), 1);
        assert_eq!(completion.tool_calls[0].name, ANALYSE_PAGE);
        assert_eq!(completion.tool_calls[0].arguments, json!({ "page_id": PAGE }));
    }

    #[tokio::test]
    async fn without_the_page_or_the_tools_the_demo_echoes() {
        let with_tools = CompletionRequest {
            messages: vec![ChatMessage::system("You are Tourguide."), ChatMessage::user("Hello")],
            tools: definitions(&TOUR_TOOLS),
        };
        let page_without_writes = CompletionRequest {
            messages: vec![system(PAGE), ChatMessage::user("Hello")],
            tools: definitions(&[ANALYSE_PAGE, SUGGEST_CHANGE, ASK_CHOICE]),
        };
        let broken_sentence = CompletionRequest {
            messages: vec![
                ChatMessage::system("This conversation is about the page with id x."),
                ChatMessage::user("Hello"),
            ],
            tools: definitions(&TOUR_TOOLS),
        };
        for request in [with_tools, page_without_writes, broken_sentence] {
            let completion = DemoProvider.complete(request).await.unwrap();
            assert!(completion.tool_calls.is_empty());
            assert!(completion.content.starts_with("You said: \u{201c}Hello\u{201d}"), "{}", completion.content);
        }
    }

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
        assert_eq!(page_id_in("… This conversation is about the page with id 42."), Some(42));
        assert_eq!(page_id_in("This conversation is about the page with id 42"), None);
    }
}
