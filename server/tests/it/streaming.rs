//! A reply that streams: its pieces reach the open page as they come, a page opened mid-stream
//! starts from the text so far, the finished reply is recorded once and whole, and Stop keeps
//! the text so far, marked as stopped, cancelling the run (and the model call) through the
//! runtime. Stop and a question appearing at the same moment: exactly one wins.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use runtime::{
    ChatMessage, Completion, CompletionRequest, ModelProvider, ProviderError, Role, TextSink, ToolCall, ASK_CHOICE,
};
use serde_json::{json, Value};
use tokio::sync::Semaphore;

use crate::events::next_event;
use crate::harness::{texts, Client, TestServer};

const STORY: [&str; 4] = ["Once ", "upon ", "a ", "time."];
/// A reply in markdown (issue 40): formatting, an image, and a code fence that closes last.
const MARKDOWN: [&str; 4] = [
    "Some **bold** and ![chart](https://tracker.example/p.png)\n\n",
    "```\nlet a = 1 < 2;",
    "\nlet b = 3;",
    "\n```\nDone.",
];

/// Writes its reply piece by piece, each when the test lets it. "ask me" is answered with a
/// question instead (after one permit). Counts model calls abandoned before their end.
struct StreamingModel {
    gate: Semaphore,
    abandoned: AtomicUsize,
}

impl StreamingModel {
    fn new() -> Arc<StreamingModel> {
        Arc::new(StreamingModel { gate: Semaphore::new(0), abandoned: AtomicUsize::new(0) })
    }

    async fn wait(&self) -> Result<(), ProviderError> {
        let permit = self.gate.acquire().await.map_err(|_| ProviderError::Connection("closed".into()))?;
        permit.forget();
        Ok(())
    }
}

/// Counts a model call whose future was dropped before it returned (a Stop cancels it).
struct Abandoned<'a>(&'a AtomicUsize, bool);

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        if !self.1 {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[async_trait]
impl ModelProvider for StreamingModel {
    fn label(&self) -> String {
        "Streaming test model".into()
    }

    fn is_demo(&self) -> bool {
        false
    }

    async fn complete(&self, request: CompletionRequest) -> Result<Completion, ProviderError> {
        struct Discard;
        impl TextSink for Discard {
            fn text(&self, _: &str) {}
        }
        self.stream(request, &Discard).await
    }

    async fn stream(&self, request: CompletionRequest, sink: &dyn TextSink) -> Result<Completion, ProviderError> {
        let mut call = Abandoned(&self.abandoned, false);
        let last = request.messages.last().cloned().unwrap_or_else(|| ChatMessage::user(""));
        if last.role == Role::Tool {
            call.1 = true;
            return Ok(Completion { content: format!("Noted: {}", last.content), tool_calls: Vec::new() });
        }
        if last.content.contains("ask me") {
            self.wait().await?;
            call.1 = true;
            let arguments = json!({ "question": "Which point first?", "options": ["Title", "Images"] });
            let ask = ToolCall { id: "call-ask".into(), name: ASK_CHOICE.into(), arguments };
            return Ok(Completion { content: String::new(), tool_calls: vec![ask] });
        }
        let mut content = String::new();
        let story: &[&str] = if last.content.contains("markdown") { &MARKDOWN } else { &STORY };
        for piece in story {
            self.wait().await?;
            sink.text(piece);
            content.push_str(piece);
        }
        call.1 = true;
        Ok(Completion { content, tool_calls: Vec::new() })
    }
}

struct Piece {
    draft: String,
    offset: usize,
    text: String,
}

/// The next "piece" event of the stream.
async fn next_piece(stream: &mut reqwest::Response, buffer: &mut String) -> Piece {
    next_event(stream, buffer, "piece").await;
    // The event's data line follows its name; wait for the whole line.
    while !buffer.contains('\n') {
        let chunk = tokio::time::timeout(Duration::from_secs(5), stream.chunk()).await.unwrap().unwrap().unwrap();
        buffer.push_str(&String::from_utf8_lossy(&chunk));
    }
    let line: String = buffer.drain(..buffer.find('\n').unwrap() + 1).collect();
    let data: Value = serde_json::from_str(line.trim().strip_prefix("data: ").expect("a data line")).unwrap();
    Piece {
        draft: data["draft"].as_str().unwrap().to_string(),
        offset: data["offset"].as_u64().unwrap() as usize,
        text: data["text"].as_str().unwrap().to_string(),
    }
}

/// The next "html" event of the stream, as sent.
async fn next_rendered(stream: &mut reqwest::Response, buffer: &mut String) -> app::live_draft::Rendered {
    next_event(stream, buffer, "html").await;
    while !buffer.contains('\n') {
        let chunk = tokio::time::timeout(Duration::from_secs(5), stream.chunk()).await.unwrap().unwrap().unwrap();
        buffer.push_str(&String::from_utf8_lossy(&chunk));
    }
    let line: String = buffer.drain(..buffer.find('\n').unwrap() + 1).collect();
    serde_json::from_str(line.trim().strip_prefix("data: ").expect("a data line")).unwrap()
}

/// What a page has of the renderings its stream sent: the draft's key and HTML.
type Shown = Option<(String, String)>;

/// Renderings until one covers `length` bytes of the text: the page's HTML after each, built as
/// the page builds it, each on the one before (`shown`, which follows).
async fn renderings_until(
    stream: &mut reqwest::Response,
    buffer: &mut String,
    shown: &mut Shown,
    length: usize,
) -> Vec<String> {
    let mut pages = Vec::new();
    loop {
        let rendered = next_rendered(stream, buffer).await;
        let upto = rendered.upto;
        pages.push(rendered.onto(shown).expect("each rendering builds on the one before"));
        if upto >= length {
            return pages;
        }
    }
}

/// Pieces until the text reaches `length` bytes: each piece must follow on the one before (on
/// PostgreSQL pieces that queued up together arrive joined). Returns the draft key and the text.
async fn pieces_until(stream: &mut reqwest::Response, buffer: &mut String, length: usize) -> (String, String) {
    let first = next_piece(stream, buffer).await;
    assert_eq!(first.offset, 0);
    let (draft, mut text) = (first.draft, first.text);
    while text.len() < length {
        let piece = next_piece(stream, buffer).await;
        assert_eq!(piece.draft, draft, "one model turn, one draft");
        assert_eq!(piece.offset, text.len(), "each piece follows on the one before");
        text.push_str(&piece.text);
    }
    (draft, text)
}

/// A server on the streaming model, the demo user signed in, and a conversation of theirs.
async fn conversation_with_streaming_model() -> (Arc<StreamingModel>, TestServer, Client, String) {
    let model = StreamingModel::new();
    let server = TestServer::start_with(model.clone()).await;
    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;
    (model, server, client, id)
}

async fn open_stream(server: &TestServer, client: &Client, id: &str) -> (reqwest::Response, String) {
    let mut stream = client.http.get(format!("{}/events/conversations/{id}", server.base)).send().await.unwrap();
    let mut buffer = String::new();
    next_event(&mut stream, &mut buffer, "ready").await;
    (stream, buffer)
}

/// Reads the conversation until `done` says yes (or fails after a few seconds).
async fn conversation_until(client: &Client, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..200 {
        let (status, value) = client.conversation(id).await;
        assert_eq!(status, 200, "{value}");
        if done(&value) {
            return value;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the conversation never got there: {}", client.conversation(id).await.1);
}

async fn runs_in(server: &TestServer, status: &'static str) -> i64 {
    let sql = match status {
        "running" => "SELECT COUNT(*) FROM runs WHERE status = 'running'",
        "cancelled" => "SELECT COUNT(*) FROM runs WHERE status = 'cancelled'",
        "waiting_for_input" => "SELECT COUNT(*) FROM runs WHERE status = 'waiting_for_input'",
        "all" => "SELECT COUNT(*) FROM runs",
        other => panic!("no query for {other}"),
    };
    db::on!(server.store().db(), pool => sqlx::query_scalar::<_, i64>(sql).fetch_one(pool).await).unwrap()
}

#[tokio::test]
async fn pieces_reach_the_page_as_they_come_and_the_reply_is_recorded_once_whole() {
    let (model, server, client, id) = conversation_with_streaming_model().await;
    let (mut stream, mut buffer) = open_stream(&server, &client, &id).await;

    client.call_json("send_message", &[("conversation_id", &id), ("content", "tell a story")]).await;
    model.gate.add_permits(2);
    let (first, text) = pieces_until(&mut stream, &mut buffer, "Once upon ".len()).await;
    assert_eq!(text, "Once upon ");

    // A page opened now starts from the text so far, under the same key as the pieces.
    let opened = conversation_until(&client, &id, |view| view["draft"]["text"] == "Once upon ").await;
    assert_eq!(opened["status"], "processing");
    assert_eq!(opened["draft"]["key"], first.as_str());
    assert_eq!(texts(&opened), vec!["tell a story"], "nothing is recorded before the reply is whole");

    model.gate.add_permits(2);
    let settled = client.settled_conversation(&id).await;
    assert_eq!(texts(&settled), vec!["tell a story", "Once upon a time."]);
    assert_eq!(settled["draft"], Value::Null);
    assert!(settled["messages"][1].get("stopped").is_none(), "not stopped: left out");
    let drafts = db::on!(server.store().db(), pool => sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM drafts").fetch_one(pool).await).unwrap();
    assert_eq!(drafts, 0, "the draft goes when the reply is recorded");
    server.stop().await;
}

#[tokio::test]
async fn the_reply_reaches_the_page_as_safe_markdown_while_it_grows() {
    let (model, server, client, id) = conversation_with_streaming_model().await;
    let (mut stream, mut buffer) = open_stream(&server, &client, &id).await;
    client.call_json("send_message", &[("conversation_id", &id), ("content", "markdown please")]).await;
    let length = |pieces: usize| MARKDOWN[..pieces].concat().len();

    model.gate.add_permits(2);
    let mut shown = None;
    let pages = renderings_until(&mut stream, &mut buffer, &mut shown, length(2)).await;
    let page = pages.last().unwrap();
    assert!(page.contains("<strong>bold</strong>"), "{page}");
    // The image is a link that names its host: nothing loads by itself.
    assert!(page.contains("Image from tracker.example"), "{page}");
    let tags = server::html_tags::start_tags(page);
    assert!(
        tags.iter().all(|(name, attributes)| name != "img" && attributes.iter().all(|(a, _)| a != "src")),
        "{page}"
    );
    // The fence is still open: what follows it is code already, escaped.
    assert!(page.contains("<pre><code>let a = 1 &lt; 2;"), "{page}");

    // A page opened now (its stream joins mid-way) renders from the saved draft and follows on.
    conversation_until(&client, &id, |view| view["draft"]["text"].as_str().map(str::len) == Some(length(2))).await;
    let (mut late, mut late_buffer) = open_stream(&server, &client, &id).await;
    model.gate.add_permits(1);
    let joined = renderings_until(&mut late, &mut late_buffer, &mut None, length(3)).await;
    assert!(joined[0].starts_with("<p>Some <strong>bold</strong>"), "the text in front, from the draft: {joined:?}");
    assert!(joined.last().unwrap().contains("let b = 3;"), "{joined:?}");

    model.gate.add_permits(1);
    let pages = renderings_until(&mut stream, &mut buffer, &mut shown, length(4)).await;
    let whole = pages.last().unwrap();
    assert!(whole.ends_with("</code></pre>\n<p>Done.</p>\n"), "{whole}");
    // The recorded line is the same rendering.
    let settled = client.settled_conversation(&id).await;
    assert_eq!(settled["messages"][1]["html"].as_str(), Some(whole.as_str()), "{settled}");
    server.stop().await;
}

#[tokio::test]
async fn stop_keeps_the_text_so_far_marked_stopped_and_cancels_the_model_call() {
    let (model, server, client, id) = conversation_with_streaming_model().await;
    let (mut stream, mut buffer) = open_stream(&server, &client, &id).await;

    client.call_json("send_message", &[("conversation_id", &id), ("content", "tell a story")]).await;
    model.gate.add_permits(3);
    pieces_until(&mut stream, &mut buffer, "Once upon a ".len()).await;
    // Right away, before the text so far need have reached the database.
    let (status, body) = client.call_json("stop", &[("conversation_id", &id)]).await;
    assert_eq!(status, 200, "{body}");

    // The worker fills in what the model had written by the time it stopped.
    let stopped = conversation_until(&client, &id, |view| {
        view["messages"].as_array().is_some_and(|messages| messages.len() == 2)
            && crate::harness::text(&view["messages"][1]) == "Once upon a"
    })
    .await;
    assert_eq!(stopped["status"], "idle");
    assert_eq!(stopped["messages"][1]["stopped"], true);
    assert_eq!(stopped["error"], Value::Null);

    // The run is cancelled and its model call was given up, not read to its end.
    for _ in 0..100 {
        if model.abandoned.load(Ordering::SeqCst) == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(model.abandoned.load(Ordering::SeqCst), 1);
    assert_eq!(runs_in(&server, "cancelled").await, 1);
    assert_eq!(runs_in(&server, "running").await, 0);

    // Nothing is being written now: a second Stop is refused and changes nothing.
    let (status, body) = client.call_json("stop", &[("conversation_id", &id)]).await;
    assert_eq!(status, 409, "{body}");
    // The conversation takes the next message, and the model sees the stopped text.
    model.gate.add_permits(4);
    let (status, _) = client.call_json("send_message", &[("conversation_id", &id), ("content", "go on")]).await;
    assert_eq!(status, 200);
    client.settled_conversation(&id).await;
    assert_eq!(server.transcript(&id).await, vec!["tell a story", "Once upon a ", "go on", "Once upon a time."]);
    server.stop().await;
}

#[tokio::test]
async fn stop_is_only_for_the_owner_of_the_conversation() {
    let (model, server, owner, id) = conversation_with_streaming_model().await;
    owner.call_json("send_message", &[("conversation_id", &id), ("content", "tell a story")]).await;
    let intruder = server.signed_in("mallory").await;
    let (status, _) = intruder.call_json("stop", &[("conversation_id", &id)]).await;
    assert_eq!(status, 404);
    let (status, _) = server.client().call_json("stop", &[("conversation_id", &id)]).await;
    assert_eq!(status, 401);
    model.gate.add_permits(4);
    let settled = owner.settled_conversation(&id).await;
    assert_eq!(texts(&settled).last().unwrap(), "Once upon a time.");
    server.stop().await;
}

#[tokio::test]
async fn stop_and_a_question_appearing_at_once_have_exactly_one_winner() {
    let model = StreamingModel::new();
    let server = TestServer::start_with(model.clone()).await;
    let client = server.signed_in("demo").await;
    let (mut stopped, mut asked) = (0, 0);
    for round in 0..8 {
        let id = client.create_conversation().await;
        client.call_json("send_message", &[("conversation_id", &id), ("content", "ask me")]).await;
        // Let the turn reach the model, then release the question and press Stop together.
        conversation_until(&client, &id, |view| view["status"] == "processing").await;
        tokio::time::sleep(Duration::from_millis(if round % 2 == 0 { 5 } else { 60 })).await;
        model.gate.add_permits(1);
        let (status, body) = client.call_json("stop", &[("conversation_id", &id)]).await;
        let view = conversation_until(&client, &id, |view| view["status"] != "processing").await;
        // A losing run takes a moment to be cancelled (longer on a loaded machine): wait for it.
        let started = std::time::Instant::now();
        while runs_in(&server, "running").await > 0 {
            assert!(started.elapsed() < Duration::from_secs(10), "a run of round {round} is still running");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // A run stopped before it took the released permit leaves it behind; the next round's
        // model would pass its gate at once and ask before the round saw the turn processing.
        while let Ok(permit) = model.gate.try_acquire() {
            permit.forget();
        }
        let view = if view["status"] == "idle" { client.conversation(&id).await.1 } else { view };
        match status {
            200 => {
                stopped += 1;
                assert_eq!(view["status"], "idle", "{view}");
                assert_eq!(view["question"], Value::Null);
                assert_eq!(view["messages"].as_array().unwrap().last().unwrap()["stopped"], true);
            }
            409 => {
                asked += 1;
                assert_eq!(view["status"], "awaiting_input", "{body} {view}");
                assert!(view["question"].is_object(), "{view}");
            }
            other => panic!("stop answered {other}: {body}"),
        }
    }
    // Every asked turn's run still waits, and every other run ended cancelled: none is both. A
    // Stop that comes before the worker has begun the turn's run (a loaded machine) cancels the
    // queued turn, and no run is made for it: a stopped turn has at most one, cancelled.
    assert_eq!(runs_in(&server, "waiting_for_input").await, asked);
    let cancelled = runs_in(&server, "cancelled").await;
    assert!(cancelled <= stopped, "{cancelled} cancelled runs for {stopped} stopped turns");
    assert_eq!(runs_in(&server, "all").await, asked + cancelled);
    assert_eq!(runs_in(&server, "running").await, 0);
    server.stop().await;
}
