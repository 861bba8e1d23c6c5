//! Approval cards that show the change: the tour's writes previewed (current and proposed value,
//! word diff, in the reader's language), a page edited elsewhere between preview and approval
//! refused with a fresh preview, and a preview that cannot be made blocking Apply but not Skip.

use content::PageField;
use serde_json::Value;

use crate::harness::{texts, Client};
use crate::tour::{answer, content, decide, demo_server, page, start_tour};

/// The preview of the card's one call.
fn preview(conversation: &Value) -> &Value {
    let call = &conversation["card"]["calls"][0];
    assert!(!call["preview"].is_null(), "the write shows a preview: {conversation}");
    &call["preview"]
}

/// The text as one side of the card shows it: the words that stay, and those that go (`before`)
/// or come (`after`).
fn side(preview: &Value, drop: &str) -> String {
    let diff = preview["Ready"]["changes"][0]["diff"].as_array().expect("a ready preview");
    diff.iter().filter(|part| part["kind"] != drop).map(|part| part["text"].as_str().unwrap()).collect()
}

async fn decide_raw(client: &Client, id: &str, digest: &str, decision: &str) -> (u16, Value) {
    client.call_json("decide", &[("conversation_id", id), ("digest", digest), ("decision", decision)]).await
}

#[tokio::test]
async fn a_tour_card_previews_the_change_and_a_page_edited_elsewhere_is_refused_with_a_fresh_preview() {
    let server = demo_server().await;
    let client = server.signed_in("demo").await;
    let (status, _) = client.call_json("set_language", &[("language", "de")]).await;
    assert_eq!(status, 200);
    let home = page(&server, "home").await;
    let id = start_tour(&client, home.id, "de").await;
    let conversation = client.settled_conversation(&id).await;
    let first_option = conversation["question"]["form"]["options"][0]["label"].as_str().unwrap().to_string();
    let conversation = answer(&client, &id, &conversation, &first_option).await;
    assert_eq!(conversation["status"], "awaiting_approval", "{conversation}");

    let shown = preview(&conversation).clone();
    let proposed: Value =
        serde_json::from_str(conversation["card"]["calls"][0]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(shown["Ready"]["subject"], home.title.as_str());
    assert_eq!(shown["Ready"]["changes"][0]["label"], "Titel", "the field in the reader's language");
    assert_eq!(side(&shown, "Added"), home.title, "the left side is the title as it is");
    assert_eq!(side(&shown, "Removed"), proposed["value"].as_str().unwrap(), "the right side is the proposal");
    assert!(shown["Ready"]["changes"][0]["diff"].as_array().unwrap().iter().any(|part| part["kind"] == "Removed"));
    assert_eq!(conversation["card"]["preview_failed"], false);

    // Someone edits the page's title elsewhere before the card is approved.
    let store = content(&server);
    store.update_field(home.id, PageField::Title, "Edited in the page editor", None).await.unwrap();
    let old_digest = conversation["card"]["digest"].as_str().unwrap().to_string();
    let conversation = decide(&client, &id, &conversation, "approve").await;
    assert_eq!(conversation["status"], "awaiting_approval", "the run still waits: {conversation}");
    assert_eq!(
        conversation["error"],
        "Die Seite hat sich seit diesem Vorschlag geändert, deshalb wurde nichts geschrieben. Die Vorschau zeigt den \
         aktuellen Stand – bitte prüfen und erneut entscheiden."
    );
    assert_eq!(page(&server, "home").await.title, "Edited in the page editor", "nothing was written");
    let fresh = preview(&conversation);
    assert_eq!(side(fresh, "Added"), "Edited in the page editor", "the fresh preview shows the page as it is");
    let new_digest = conversation["card"]["digest"].as_str().unwrap().to_string();
    assert_ne!(new_digest, old_digest);

    // The card as first shown cannot be approved any more; the fresh one applies.
    let (status, body) = decide_raw(&client, &id, &old_digest, "approve").await;
    assert_eq!(status, 409, "{body}");
    let conversation = decide(&client, &id, &conversation, "approve").await;
    assert!(conversation["error"].is_null(), "{conversation}");
    let applied = page(&server, "home").await;
    assert_eq!(applied.title, proposed["value"].as_str().unwrap());
    server.stop().await;
}

#[tokio::test]
async fn a_preview_that_cannot_be_made_blocks_apply_but_skip_goes_through() {
    let server = demo_server().await;
    let client = server.signed_in("demo").await;
    let home = page(&server, "home").await;
    let id = start_tour(&client, home.id, "en").await;
    let conversation = client.settled_conversation(&id).await;
    let conversation = answer(&client, &id, &conversation, "3. Image without alt text").await;
    assert_eq!(conversation["card"]["calls"][0]["name"], "set_alt_text", "{conversation}");

    // The page goes away before the card is approved: the write cannot be previewed any more.
    server.exec("DELETE FROM pages WHERE slug = 'home'").await;
    let store = content(&server);

    let conversation = decide(&client, &id, &conversation, "approve").await;
    assert_eq!(conversation["status"], "awaiting_approval", "{conversation}");
    assert_eq!(conversation["card"]["preview_failed"], true);
    let reason = preview(&conversation)["Failed"]["reason"].as_str().unwrap().to_string();
    assert!(reason.contains(&format!("no page with id {}", home.id)), "{reason}");
    assert!(conversation["error"].as_str().unwrap().starts_with("No preview of this change could be made"));
    // Approving again only tries the preview again: still nothing is written.
    let conversation = decide(&client, &id, &conversation, "approve").await;
    assert_eq!(conversation["card"]["preview_failed"], true);
    assert_eq!(store.page(home.id).await.unwrap(), None, "nothing was written");

    let conversation = decide(&client, &id, &conversation, "skip").await;
    assert_ne!(conversation["card"]["calls"][0]["name"], "set_alt_text", "the card was decided: {conversation}");
    assert!(texts(&conversation).contains(&"Skip".to_string()), "{conversation}");
    server.stop().await;
}
