//! Rows the bench writes straight into a database (the server's, or a limit reference's), as the
//! server itself would write them.

/// The text of the `n`th message of a seeded transcript: a question with a little Markdown, or an
/// answer with lists, code and a quote.
pub fn message_text(n: usize) -> String {
    if n.is_multiple_of(2) {
        format!("Question {n}: could you look at the **opening hours** on the [contact page](/pages/3) and tell me what reads oddly?")
    } else {
        format!(
            "Answer {n}. Three things stand out:\n\n1. The hours use *two* formats.\n2. Sunday is missing.\n3. The phone \
             number is `+49 30 1234567` in one place and different in another.\n\n> Keep one format throughout.\n\n\
             ```\nMo–Fr 07:00–18:00\nSa 08:00–13:00\n```"
        )
    }
}

/// A line's stored rendering as the server writes it: an assistant line's HTML, made once.
pub fn stored_html(role: &str, content: &str) -> (Option<String>, Option<i64>) {
    match role {
        "assistant" => (Some(server::markdown::to_safe_html(content)), Some(server::markdown::RENDERER_VERSION)),
        _ => (None, None),
    }
}

/// One message as the server writes it, on `$executor` (a transaction of either backend).
macro_rules! insert_message {
    ($executor:expr, $id:expr, $role:expr, $content:expr, $at:expr) => {{
        let (html, version) = $crate::seed::stored_html($role, $content);
        sqlx::query("INSERT INTO messages (conversation_id, role, content, created_at, html, html_version) VALUES ($1, $2, $3, $4, $5, $6)")
            .bind($id)
            .bind($role)
            .bind($content)
            .bind($at)
            .bind(html)
            .bind(version)
            .execute($executor)
            .await
            .unwrap();
    }};
}

/// `$count` messages of [`message_text`], question and answer in turn, in the transaction `$tx`.
macro_rules! insert_transcript {
    ($tx:ident, $id:expr, $count:expr) => {{
        for n in 0..$count {
            let role = if n.is_multiple_of(2) { "user" } else { "assistant" };
            let content = $crate::seed::message_text(n);
            insert_message!(&mut *$tx, $id, role, content.as_str(), 1_700_000_000 + n as i64);
        }
    }};
}
