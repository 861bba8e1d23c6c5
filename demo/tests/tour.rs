//! The demo model plays the guided tour with the real runtime, the real content tools and a real
//! SQLite file: every proposal it makes is the one the content domain suggests for the page as
//! it is, and every approved change lands on the page.

use std::sync::Arc;

use content::analysis::{analyse, proposals, Point, PointKind, Target};
use content::context::page_sentence;
use content::seed::seed_pages;
use content::store::ContentStore;
use content::tools::{ANALYSE_PAGE, LIST_PAGES, SET_ALT_TEXT, UPDATE_PAGE_FIELD};
use content::{Block, NewPage, Page, PageField};
use db::Db;
use demo::DemoProvider;
use runtime::{
    Actor, ApprovalDecision, AskChoiceTool, ChatMessage, CompletionRequest, DenialReason, InputSubmission,
    ModelProvider, PendingCallView, RunOutcome, RunRequest, RunResult, Runtime, RuntimeSettings, ToolRegistry,
};
use serde_json::{json, Value};
use tempfile::TempDir;
use uuid::Uuid;

const OWNER: Actor = Actor { user_id: 1, admin: false };

#[derive(Debug)]
enum Pause {
    Question { run: Uuid, digest: String, question: String, options: Vec<String> },
    Card { run: Uuid, digest: String, call: Box<PendingCallView>, transcript: Vec<ChatMessage> },
    Done(String),
}

#[derive(Clone, Copy)]
enum Decision {
    Approve,
    Variant,
    Skip,
    Deny,
}

struct Tour {
    _dir: TempDir,
    content: ContentStore,
    runtime: Runtime,
    page_id: i64,
}

fn pause_of(result: RunResult) -> Pause {
    match result.outcome {
        RunOutcome::AwaitingInput { pause } => {
            let property = &pause.schema["properties"]["answer"];
            let options = property["enum"].as_array().unwrap().iter().map(|o| o.as_str().unwrap().to_string());
            Pause::Question {
                run: result.run_id,
                digest: pause.digest.clone(),
                question: property["title"].as_str().unwrap().to_string(),
                options: options.collect(),
            }
        }
        RunOutcome::AwaitingApproval { pause } => {
            assert_eq!(pause.pending_calls.len(), 1, "a process run proposes one change at a time");
            Pause::Card {
                run: result.run_id,
                digest: pause.digest.clone(),
                call: Box::new(pause.pending_calls[0].clone()),
                transcript: result.messages,
            }
        }
        // A truncated answer means the step needed more rounds than the default cap allows.
        RunOutcome::Completed { answer, truncated: false } => Pause::Done(answer),
        other => panic!("the tour stopped with {other:?}"),
    }
}

fn card(pause: &Pause) -> &PendingCallView {
    match pause {
        Pause::Card { call, .. } => call,
        other => panic!("expected a card, got {other:?}"),
    }
}

/// The value a card proposes, whichever write it is.
fn value(pause: &Pause) -> &str {
    let arguments = &card(pause).arguments;
    arguments.get("value").or_else(|| arguments.get("alt")).and_then(Value::as_str).unwrap()
}

fn asked(pause: &Pause) -> (&str, Vec<&str>) {
    match pause {
        Pause::Question { question, options, .. } => (question.as_str(), options.iter().map(String::as_str).collect()),
        other => panic!("expected a question, got {other:?}"),
    }
}

fn done(pause: Pause) -> String {
    match pause {
        Pause::Done(text) => text,
        other => panic!("expected an answer, got {other:?}"),
    }
}

impl Tour {
    /// A site of `pages` on a fresh SQLite file; the tour is about the page with `slug`.
    async fn on(pages: Vec<NewPage>, slug: &str) -> Tour {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open_sqlite(&dir.path().join("demo.sqlite")).await.unwrap();
        db.migrate(&runtime::migrations()).await.unwrap();
        db.migrate(&content::store::migrations()).await.unwrap();
        let content = ContentStore::new(db.clone());
        content.insert_if_empty(&pages).await.unwrap();
        let page_id = content.page_by_slug(slug).await.unwrap().expect("the page exists").id;
        let mut tools = ToolRegistry::new();
        tools.register(Arc::new(AskChoiceTool)).unwrap();
        content::tools::register(&mut tools, content.clone());
        let runtime = Runtime::new(db, Arc::new(tools), Arc::new(DemoProvider), RuntimeSettings::default());
        Tour { _dir: dir, content, runtime, page_id }
    }

    async fn home() -> Tour {
        Tour::on(seed_pages(), "home").await
    }

    fn system(&self, page_id: i64) -> ChatMessage {
        ChatMessage::system(format!("You are Tourguide.\n\nGuide the tour.\n\n{}", page_sentence(page_id)))
    }

    /// A process run with the runtime's default round cap: a tour step must fit in it.
    async fn start(&self, first_message: &str) -> Pause {
        self.start_on(self.page_id, first_message).await
    }

    async fn start_on(&self, page_id: i64, first_message: &str) -> Pause {
        let mut request = RunRequest::new(OWNER, "chat", vec![self.system(page_id), ChatMessage::user(first_message)]);
        request.process = true;
        pause_of(self.runtime.run(request).await.unwrap())
    }

    async fn answer(&self, pause: &Pause, option: &str) -> Pause {
        let Pause::Question { run, digest, .. } = pause else { panic!("expected a question, got {pause:?}") };
        let values = json!({ "answer": option }).as_object().cloned().unwrap();
        let submission = InputSubmission::values(values, Some(digest.clone()));
        pause_of(self.runtime.submit_input(&OWNER, *run, submission).await.unwrap())
    }

    async fn decide(&self, pause: &Pause, decision: Decision) -> Pause {
        let Pause::Card { run, digest, .. } = pause else { panic!("expected a card, got {pause:?}") };
        let decision = match decision {
            Decision::Approve => ApprovalDecision::approve(digest.clone()),
            Decision::Variant => ApprovalDecision::deny(digest.clone(), Some(DenialReason::Variant)),
            Decision::Skip => ApprovalDecision::deny(digest.clone(), Some(DenialReason::Skip)),
            Decision::Deny => ApprovalDecision::deny(digest.clone(), None),
        };
        pause_of(self.runtime.approve(&OWNER, *run, decision).await.unwrap())
    }

    async fn page(&self) -> Page {
        self.content.page(self.page_id).await.unwrap().unwrap()
    }

    /// What the content domain proposes for the page's (first) point of `kind`, as the page is now.
    async fn proposal(&self, kind: PointKind, variant: usize) -> String {
        self.proposal_where(|point| point.kind == kind, variant).await
    }

    async fn proposal_where(&self, which: impl Fn(&Point) -> bool, variant: usize) -> String {
        let page = self.page().await;
        let point = analyse(&page).points.into_iter().find(which).expect("the point is there");
        proposals(&page, &point)[variant].proposed.clone()
    }
}

fn field(pause: &Pause) -> (&str, Option<&str>, Option<u64>) {
    let call = card(pause);
    // Every write of the tour shows what it would change: the text it proposes.
    let proposed = call.arguments.get("value").or_else(|| call.arguments.get("alt")).and_then(|value| value.as_str());
    match &call.preview {
        Some(runtime::CallPreview::Ready(preview)) => assert_eq!(Some(preview.changes[0].proposed.as_str()), proposed),
        other => panic!("a tour card without a preview: {other:?}"),
    }
    (call.name.as_str(), call.arguments["field"].as_str(), call.arguments["block"].as_u64())
}

#[tokio::test]
async fn tour_walks_every_point_once_from_the_chosen_one() {
    let tour = Tour::home().await;
    let start = tour.start("Guide me through this page, one point at a time.").await;
    assert_eq!(
        asked(&start),
        (
            "Which point should we start with?",
            vec!["1. Title too long", "2. Description missing", "3. Image without alt text", "4. Vague link text"]
        )
    );
    let before = tour.page().await;

    let description = tour.answer(&start, "2. Description missing").await;
    assert_eq!(field(&description), (UPDATE_PAGE_FIELD, Some("description"), None));
    assert_eq!(value(&description), tour.proposal(PointKind::DescriptionMissing, 0).await);
    let variant = tour.decide(&description, Decision::Variant).await;
    let second = tour.proposal(PointKind::DescriptionMissing, 1).await;
    assert_eq!(value(&variant), second, "another variant of the same point");

    let alt = tour.decide(&variant, Decision::Approve).await;
    assert_eq!(tour.page().await.description, second, "the approved variant is on the page");
    assert_eq!(field(&alt), (SET_ALT_TEXT, None, Some(2)));
    assert_eq!(value(&alt), tour.proposal(PointKind::AltMissing, 0).await);
    let link = tour.decide(&alt, Decision::Skip).await;
    assert_eq!(field(&link), (UPDATE_PAGE_FIELD, Some("link_text"), Some(5)));
    let link_text = tour.proposal(PointKind::VagueLinkText, 0).await;
    assert_eq!(value(&link), link_text);
    let title = tour.decide(&link, Decision::Approve).await;
    assert_eq!(
        field(&title),
        (UPDATE_PAGE_FIELD, Some("title"), None),
        "wraps around to the points before the chosen one"
    );
    assert_eq!(value(&title), tour.proposal(PointKind::TitleTooLong, 0).await);
    let end = tour.decide(&title, Decision::Skip).await;
    assert_eq!(asked(&end), ("Summary or next page?", vec!["Summary", "Next page"]));

    let summary = done(tour.answer(&end, "Summary").await);
    let lines: Vec<&str> = summary.lines().collect();
    assert_eq!(lines.len(), 6, "{summary}");
    assert!(lines[0].starts_with("Summary of the tour of \u{201c}Bäckerei Sonnenkorn Freiburg"), "{summary}");
    assert!(
        lines[1].starts_with("- Applied: 2. Description missing: \u{201c}\u{201d} → \u{201c}Seit 1952"),
        "{summary}"
    );
    assert_eq!(lines[2], "- Skipped: 3. Image without alt text");
    assert_eq!(
        lines[3],
        format!("- Applied: 4. Vague link text: \u{201c}Hier klicken\u{201d} → \u{201c}{link_text}\u{201d}")
    );
    assert_eq!(lines[4], "- Skipped: 1. Title too long");
    assert_eq!(lines[5], "The applied changes are saved on the page.");

    let after = tour.page().await;
    assert_eq!(after.version, before.version + 2, "two changes were applied, each once");
    assert_eq!(after.title, before.title);
    assert_eq!(after.blocks[2], before.blocks[2], "the skipped alt text is unchanged");
    assert_eq!(after.blocks[5], Block::Link { text: link_text, href: "/angebot".into() });
}

#[tokio::test]
async fn tour_speaks_german_to_a_german_reader() {
    let tour = Tour::home().await;
    let start = tour.start("Führe mich Punkt für Punkt durch diese Seite.").await;
    let (question, options) = asked(&start);
    assert_eq!(question, "Mit welchem Punkt sollen wir anfangen?");
    assert_eq!(options[0], "1. Titel zu lang");
    assert_eq!(options[2], "3. Bild ohne Alternativtext");
    let mut call = tour.answer(&start, "4. Unklarer Linktext").await;
    for _ in 0..3 {
        call = tour.decide(&call, Decision::Skip).await;
    }
    let end = tour.decide(&call, Decision::Skip).await;
    assert_eq!(asked(&end), ("Zusammenfassung oder nächste Seite?", vec!["Zusammenfassung", "Nächste Seite"]));
    let summary = done(tour.answer(&end, "Zusammenfassung").await);
    assert!(summary.starts_with("Zusammenfassung des Rundgangs durch \u{201e}Bäckerei Sonnenkorn"), "{summary}");
    assert!(summary.contains("- Übersprungen: 4. Unklarer Linktext\n- Übersprungen: 1. Titel zu lang"), "{summary}");
    assert!(summary.ends_with("An der Seite wurde nichts geändert."), "{summary}");
    assert_eq!(tour.page().await.version, 1);
}

#[tokio::test]
async fn tour_moves_on_when_the_variants_run_out() {
    let tour = Tour::home().await;
    let start = tour.start("Guide me").await;
    let page = tour.page().await;
    let title = analyse(&page).points.into_iter().find(|point| point.target == Target::Title).unwrap();
    let variants = proposals(&page, &title).len();
    assert!(variants >= 2, "the seed's title has several proposals");

    let mut call = tour.answer(&start, "1. Title too long").await;
    for variant in 0..variants {
        assert_eq!(value(&call), tour.proposal(PointKind::TitleTooLong, variant).await);
        call = tour.decide(&call, Decision::Variant).await;
    }
    assert_eq!(
        field(&call),
        (UPDATE_PAGE_FIELD, Some("description"), None),
        "no further variant: on to the next point"
    );
    call = tour.decide(&call, Decision::Skip).await;
    call = tour.decide(&call, Decision::Skip).await;
    let end = tour.decide(&call, Decision::Skip).await;
    let summary = done(tour.answer(&end, "Summary").await);
    assert!(summary.contains("- Not changed, no further variant: 1. Title too long\n"), "{summary}");
}

/// A page whose title can be shortened, then eight points nobody can propose a fix for (no
/// heading at all, and links whose target says nothing), then a link that can be named.
fn page_with_points_without_proposals() -> NewPage {
    let mut blocks: Vec<Block> = (0..7).map(|_| Block::Link { text: "hier".into(), href: "mailto:".into() }).collect();
    blocks.push(Block::Link { text: "mehr".into(), href: "/kontakt".into() });
    NewPage {
        slug: "links".into(),
        title: "Bäckerei Sonnenkorn Freiburg – frisches Brot, Brötchen, Kuchen, Torten und Kaffee seit 1952".into(),
        description: "So erreichen Sie die Bäckerei Sonnenkorn in der Freiburger Wiehre: Adresse, Telefon, \
                      Öffnungszeiten und Bestellungen."
            .into(),
        blocks,
    }
}

#[tokio::test]
async fn tour_skips_points_without_a_proposal_within_the_round_cap() {
    let tour = Tour::on(vec![page_with_points_without_proposals()], "links").await;
    let start = tour.start("Guide me").await;
    assert_eq!(asked(&start).1.len(), 10);
    // The title is applied, then eight points in a row have no proposal: one batch of
    // suggestions, not a round for each (which the default cap of five would not allow).
    let title = tour.answer(&start, "1. Title too long").await;
    let link = tour.decide(&title, Decision::Approve).await;
    assert_eq!(field(&link), (UPDATE_PAGE_FIELD, Some("link_text"), Some(7)));
    let named = tour.proposal_where(|point| point.target == Target::Block { index: 7 }, 0).await;
    assert_eq!(value(&link), named);
    let Pause::Card { transcript, .. } = &link else { unreachable!() };
    let batched = transcript.iter().filter(|m| m.tool_calls.len() > 1).count();
    assert_eq!(batched, 1, "one batch of suggestions");
    let end = tour.decide(&link, Decision::Approve).await;
    let summary = done(tour.answer(&end, "Summary").await);
    assert_eq!(summary.matches("- No proposal: ").count(), 8, "{summary}");
}

#[tokio::test]
async fn tour_treats_a_point_fixed_by_an_earlier_change_as_done() {
    let tour = Tour::home().await;
    let start = tour.start("Guide me").await;
    // Someone else writes the description while the question waits.
    let description = "Seit 1952 backen wir in der Freiburger Wiehre Brot und Brötchen nach alten Familienrezepten.";
    tour.content.update_field(tour.page_id, PageField::Description, description, None).await.unwrap();
    let title = tour.answer(&start, "1. Title too long").await;
    let alt = tour.decide(&title, Decision::Approve).await;
    assert_eq!(field(&alt), (SET_ALT_TEXT, None, Some(2)));
    let link = tour.decide(&alt, Decision::Skip).await;
    let end = tour.decide(&link, Decision::Skip).await;
    let summary = done(tour.answer(&end, "Summary").await);
    assert!(summary.contains("- Fixed by an earlier change: 2. Description missing\n"), "{summary}");
    assert_eq!(tour.page().await.description, description);
}

#[tokio::test]
async fn tour_stops_when_the_proposal_is_cancelled() {
    let tour = Tour::home().await;
    let start = tour.start("Guide me").await;
    let title = tour.answer(&start, "1. Title too long").await;
    let new_title = value(&title).to_string();
    let description = tour.decide(&title, Decision::Approve).await;
    let text = done(tour.decide(&description, Decision::Deny).await);
    assert!(text.starts_with("You cancelled the proposal, so I stop the tour here."), "{text}");
    assert!(text.contains("- Applied: 1. Title too long"), "{text}");
    assert!(text.contains("- Not reached: 2. Description missing\n- Not reached: 3."), "{text}");
    let page = tour.page().await;
    assert_eq!((page.title, page.description, page.version), (new_title, String::new(), 2));
}

#[tokio::test]
async fn tour_names_the_next_page() {
    let mut pages = seed_pages();
    // The clean contact page with one point left: a title that is too long.
    pages[3].title = "Kontakt und Öffnungszeiten der Bäckerei Sonnenkorn in der Freiburger Wiehre".into();
    let tour = Tour::on(vec![pages[3].clone(), pages[1].clone()], "kontakt").await;
    // One point: nothing to choose, the card comes at once.
    let title = tour.start("Guide me").await;
    assert_eq!(field(&title), (UPDATE_PAGE_FIELD, Some("title"), None));
    let end = tour.decide(&title, Decision::Approve).await;
    let Pause::Question { run, .. } = &end else { panic!("expected the end question, got {end:?}") };
    let run = *run;
    let text = done(tour.answer(&end, "Next page").await);
    assert_eq!(
        text,
        "On this page 1 change(s) were applied. Next is \u{201c}Über uns\u{201d} (/ueber-uns). Open it and start a \
         tour there to go on."
    );
    let listed = tour.runtime.events(&OWNER, run, -1).await.unwrap();
    assert!(listed.iter().any(|event| event.payload["name"] == LIST_PAGES), "{listed:?}");
}

#[tokio::test]
async fn tour_of_a_clean_page_says_so_and_asks_what_next() {
    let tour = Tour::on(seed_pages(), "kontakt").await;
    let end = tour.start("Guide me").await;
    assert_eq!(
        asked(&end),
        ("This page has no points to improve. Summary or next page?", vec!["Summary", "Next page"])
    );
    let summary = done(tour.answer(&end, "Summary").await);
    assert!(summary.contains("\nThis page has no points to improve.\n"), "{summary}");
}

#[tokio::test]
async fn tour_reports_a_page_it_cannot_analyse() {
    let tour = Tour::home().await;
    let text = done(tour.start_on(9, "Guide me").await);
    assert_eq!(text, "I could not analyse page 9. There is no page with id 9; list_pages shows the ids.");
}

fn offered(tour: &Tour) -> Vec<runtime::ToolDefinition> {
    tour.runtime.tools().all().iter().map(|tool| tool.spec.definition()).collect()
}

#[tokio::test]
async fn tour_starts_over_in_a_new_run() {
    let tour = Tour::home().await;
    // A new chat turn carries only the chat's text messages: the tour analyses the page again.
    let messages = vec![
        tour.system(tour.page_id),
        ChatMessage::user("Guide me through this page, one point at a time."),
        ChatMessage::assistant("Which point should we start with?"),
        ChatMessage::user("Actually, let's start again"),
    ];
    let completion = DemoProvider.complete(CompletionRequest { messages, tools: offered(&tour) }).await.unwrap();
    assert_eq!(completion.tool_calls.len(), 1);
    assert_eq!(completion.tool_calls[0].name, ANALYSE_PAGE);
    assert_eq!(completion.tool_calls[0].arguments, json!({ "page_id": tour.page_id }));
}

#[tokio::test]
async fn without_the_page_or_the_tools_the_demo_echoes() {
    let tour = Tour::home().await;
    let all = offered(&tour);
    let reads_only: Vec<_> =
        all.iter().filter(|tool| !tool.name.contains("page_field") && tool.name != SET_ALT_TEXT).cloned().collect();
    let with_tools = CompletionRequest {
        messages: vec![ChatMessage::system("You are Tourguide."), ChatMessage::user("Hello")],
        tools: all.clone(),
    };
    let page_without_writes =
        CompletionRequest { messages: vec![tour.system(tour.page_id), ChatMessage::user("Hello")], tools: reads_only };
    let broken_sentence = CompletionRequest {
        messages: vec![
            ChatMessage::system("This conversation is about the page with id x."),
            ChatMessage::user("Hello"),
        ],
        tools: all,
    };
    for request in [with_tools, page_without_writes, broken_sentence] {
        let completion = DemoProvider.complete(request).await.unwrap();
        assert!(completion.tool_calls.is_empty());
        assert!(completion.content.starts_with("You said: \u{201c}Hello\u{201d}"), "{}", completion.content);
    }
}
