//! The guided page tour over real HTTP, played by the real demo model with the real content tools
//! on the seeded site: choose a point, ask for a variant, apply it, skip one, finish, and the page
//! has changed exactly as approved.

use std::sync::Arc;

use content::analysis::{analyse, propose, PointKind};
use content::seed::seed_pages;
use content::store::ContentStore;
use content::{Block, Page};
use serde_json::Value;
use server::Services;

use crate::harness::{texts, Client, TestServer};

pub(crate) async fn demo_server() -> TestServer {
    TestServer::start_services(tempfile::tempdir().unwrap(), Services::new(Arc::new(demo::DemoProvider))).await
}

pub(crate) fn content(server: &TestServer) -> ContentStore {
    ContentStore::new(server.store().db().clone())
}

pub(crate) async fn page(server: &TestServer, slug: &str) -> Page {
    content(server).page_by_slug(slug).await.unwrap().unwrap_or_else(|| panic!("seed page {slug}"))
}

/// Starts a tour the way the page's button does; the answer redirects to the conversation.
pub(crate) async fn start_tour(client: &Client, page_id: i64, accept_language: &str) -> String {
    let response = client
        .http
        .post(format!("{}/api/start_tour", client.base))
        .header("accept-language", accept_language)
        .form(&[("page_id", page_id.to_string())])
        .send()
        .await
        .unwrap();
    let status = response.status();
    let location = response.headers().get("location").and_then(|v| v.to_str().ok()).map(str::to_string);
    let body = response.text().await.unwrap();
    assert!(status.is_success() || status.is_redirection(), "{status} {body}");
    match location.as_deref().and_then(|location| location.strip_prefix("/c/")) {
        Some(id) => id.to_string(),
        None => serde_json::from_str::<String>(&body).unwrap_or_else(|_| panic!("no conversation id in {body}")),
    }
}

fn option_labels(conversation: &Value) -> Vec<String> {
    let options = conversation["question"]["form"]["options"].as_array().expect("a choice question");
    options.iter().map(|option| option["label"].as_str().unwrap().to_string()).collect()
}

/// Answers the open question with the option of this label, as its button does.
pub(crate) async fn answer(client: &Client, id: &str, conversation: &Value, label: &str) -> Value {
    let options = conversation["question"]["form"]["options"].as_array().expect("a choice question");
    let option = options.iter().find(|option| option["label"] == label).unwrap_or_else(|| panic!("no option {label}"));
    let choice = serde_json::to_string(&option["value"]).unwrap();
    let digest = conversation["question"]["digest"].as_str().unwrap();
    let (status, body) =
        client.call_json("answer", &[("conversation_id", id), ("digest", digest), ("choice", &choice)]).await;
    assert_eq!(status, 200, "{body}");
    client.settled_conversation(id).await
}

pub(crate) async fn decide(client: &Client, id: &str, conversation: &Value, decision: &str) -> Value {
    let digest = conversation["card"]["digest"].as_str().expect("a card");
    let (status, body) =
        client.call_json("decide", &[("conversation_id", id), ("digest", digest), ("decision", decision)]).await;
    assert_eq!(status, 200, "{body}");
    client.settled_conversation(id).await
}

/// The one call on a tour card: its tool and its arguments.
fn card_call(conversation: &Value) -> (String, Value) {
    assert_eq!(conversation["status"], "awaiting_approval", "{conversation}");
    let card = &conversation["card"];
    assert_eq!(card["answers"], "process", "a tour's write offers Übernehmen, Andere Variante, Überspringen");
    let calls = card["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "one proposal at a time: {card}");
    assert_eq!(calls[0]["declares_write"], true);
    let arguments = serde_json::from_str(calls[0]["arguments"].as_str().unwrap()).unwrap();
    (calls[0]["name"].as_str().unwrap().to_string(), arguments)
}

/// What the content domain proposes for the point of this kind on the page as it is now.
fn proposal(page: &Page, kind: PointKind, variant: usize) -> String {
    let point = analyse(page).points.into_iter().find(|point| point.kind == kind).expect("the point is there");
    propose(page, &point, variant).expect("a proposal").proposed
}

#[tokio::test]
async fn a_full_tour_changes_the_page_exactly_as_approved() {
    let server = demo_server().await;
    let client = server.signed_in("demo").await;
    let seeded = page(&server, "home").await;

    let id = start_tour(&client, seeded.id, "en").await;
    let conversation = client.settled_conversation(&id).await;
    assert_eq!(conversation["status"], "awaiting_input", "{conversation}");
    assert_eq!(conversation["process_run"], true);
    assert_eq!(
        texts(&conversation),
        ["Guide me through this page, one point at a time.", "Which point should we start with?"]
    );
    assert_eq!(
        option_labels(&conversation),
        ["1. Title too long", "2. Description missing", "3. Image without alt text", "4. Vague link text"]
    );

    // Start with the title: its best proposal comes first.
    let conversation = answer(&client, &id, &conversation, "1. Title too long").await;
    let (tool, first) = card_call(&conversation);
    assert_eq!(tool, "update_page_field");
    assert_eq!(first["field"], "title");
    assert_eq!(first["page_id"], seeded.id);
    assert_eq!(first["value"], proposal(&seeded, PointKind::TitleTooLong, 0));

    // Another variant: a different proposal for the same field, and nothing written yet.
    let conversation = decide(&client, &id, &conversation, "variant").await;
    let (tool, second) = card_call(&conversation);
    assert_eq!((tool.as_str(), &second["field"]), ("update_page_field", &Value::from("title")));
    assert_ne!(second["value"], first["value"]);
    let new_title = proposal(&seeded, PointKind::TitleTooLong, 1);
    assert_eq!(second["value"], new_title.as_str());
    assert_eq!(page(&server, "home").await, seeded);
    assert!(texts(&conversation).contains(&"Another variant".to_string()), "the reader's answer is in the chat");

    // Apply it: the page really changes, and the tour goes on to the description.
    let conversation = decide(&client, &id, &conversation, "approve").await;
    let after_title = page(&server, "home").await;
    assert_eq!(after_title.title, new_title);
    assert_eq!(after_title.version, seeded.version + 1);
    let (tool, description) = card_call(&conversation);
    assert_eq!((tool.as_str(), &description["field"]), ("update_page_field", &Value::from("description")));
    assert_eq!(description["value"], proposal(&after_title, PointKind::DescriptionMissing, 0));

    // Skip it: nothing changes.
    let conversation = decide(&client, &id, &conversation, "skip").await;
    assert_eq!(page(&server, "home").await, after_title);
    let (tool, alt) = card_call(&conversation);
    assert_eq!((tool.as_str(), &alt["block"]), ("set_alt_text", &Value::from(2)));
    let new_alt = proposal(&after_title, PointKind::AltMissing, 0);
    assert_eq!(alt["alt"], new_alt.as_str());

    let conversation = decide(&client, &id, &conversation, "approve").await;
    let (tool, link) = card_call(&conversation);
    assert_eq!(
        (tool.as_str(), &link["field"], &link["block"]),
        ("update_page_field", &Value::from("link_text"), &Value::from(5))
    );
    let conversation = decide(&client, &id, &conversation, "skip").await;

    // Every point was offered once: the tour asks how to go on.
    assert_eq!(conversation["status"], "awaiting_input", "{conversation}");
    assert_eq!(texts(&conversation).last().unwrap(), "Summary or next page?");
    assert_eq!(option_labels(&conversation), ["Summary", "Next page"]);
    let conversation = answer(&client, &id, &conversation, "Summary").await;
    assert_eq!(conversation["status"], "idle", "{conversation}");
    let summary = server.transcript(&id).await.last().unwrap().clone();
    assert!(summary.starts_with("Summary of the tour of"), "{summary}");
    for line in [
        "- Applied: 1. Title too long:",
        "- Skipped: 2. Description missing",
        "- Applied: 3. Image without alt text: \u{201c}\u{201d} → ",
        "- Skipped: 4. Vague link text",
        "The applied changes are saved on the page.",
    ] {
        assert!(summary.contains(line), "{line:?} missing in {summary}");
    }

    // The page is the seed with exactly the two approved changes.
    let seed = seed_pages().into_iter().find(|page| page.slug == "home").unwrap();
    let mut expected_blocks = seed.blocks.clone();
    let Block::Image { src, .. } = &seed.blocks[2] else { panic!("block 2 is the image") };
    expected_blocks[2] = Block::Image { src: src.clone(), alt: new_alt };
    let final_page = page(&server, "home").await;
    assert_eq!(final_page.title, new_title);
    assert_eq!(final_page.description, seed.description);
    assert_eq!(final_page.blocks, expected_blocks);
    assert_eq!(final_page.version, seeded.version + 2, "two writes, no more");
    for other in ["ueber-uns", "angebot", "kontakt", "blog/sourdough"] {
        let stored = page(&server, other).await;
        assert_eq!(stored.version, 1, "{other} was not touched");
    }
    server.stop().await;
}

#[tokio::test]
async fn a_tour_of_a_clean_page_in_german_points_to_the_next_page() {
    let server = demo_server().await;
    let client = server.signed_in("demo").await;
    let kontakt = page(&server, "kontakt").await;

    let id = start_tour(&client, kontakt.id, "de").await;
    let conversation = client.settled_conversation(&id).await;
    assert_eq!(conversation["status"], "awaiting_input", "{conversation}");
    assert_eq!(
        texts(&conversation),
        [
            "Führe mich Punkt für Punkt durch diese Seite.",
            "Diese Seite hat keine Punkte zum Verbessern. Zusammenfassung oder nächste Seite?"
        ]
    );
    assert_eq!(option_labels(&conversation), ["Zusammenfassung", "Nächste Seite"]);

    let conversation = answer(&client, &id, &conversation, "Nächste Seite").await;
    assert_eq!(conversation["status"], "idle", "{conversation}");
    let text = texts(&conversation).last().unwrap().clone();
    assert_eq!(
        text,
        "Auf dieser Seite wurden 0 Änderung(en) übernommen. Als Nächstes kommt \u{201e}Why our sourdough bread takes 48 \
         hours\u{201c} (/blog/sourdough). Öffne sie und starte dort einen Rundgang."
    );
    assert_eq!(page(&server, "kontakt").await, kontakt);
    server.stop().await;
}

#[tokio::test]
async fn a_message_while_a_tour_card_waits_starts_the_tour_over_and_writes_nothing() {
    let server = demo_server().await;
    let client = server.signed_in("demo").await;
    let seeded = page(&server, "angebot").await;
    let id = start_tour(&client, seeded.id, "en").await;
    let conversation = client.settled_conversation(&id).await;
    assert_eq!(
        option_labels(&conversation),
        ["1. Description too short", "2. No main heading", "3. Alt text says nothing", "4. Vague link text"]
    );
    let conversation = answer(&client, &id, &conversation, "3. Alt text says nothing").await;
    let (tool, _) = card_call(&conversation);
    assert_eq!(tool, "set_alt_text");

    // The waiting proposal is cancelled; the new turn analyses the page afresh and asks again.
    let (status, body) =
        client.call_json("send_message", &[("conversation_id", &id), ("content", "Let's start over")]).await;
    assert_eq!(status, 200, "{body}");
    let conversation = client.settled_conversation(&id).await;
    assert_eq!(conversation["status"], "awaiting_input", "{conversation}");
    assert_eq!(texts(&conversation).last().unwrap(), "Which point should we start with?");

    // A plain denial (no reason) ends the tour with what was done.
    let conversation = answer(&client, &id, &conversation, "4. Vague link text").await;
    let conversation = decide(&client, &id, &conversation, "deny").await;
    assert_eq!(conversation["status"], "idle", "{conversation}");
    let text = texts(&conversation).last().unwrap().clone();
    assert!(text.starts_with("You cancelled the proposal, so I stop the tour here."), "{text}");
    assert!(text.contains("Nothing on the page was changed."), "{text}");
    assert_eq!(page(&server, "angebot").await, seeded);
    server.stop().await;
}
