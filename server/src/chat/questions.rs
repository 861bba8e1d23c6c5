//! Questions: one as the reader sees it, and an answer checked against it as it stands and
//! recorded, from whichever surface it came.

use app::backend::CurrentUser;
use app::error::{AppError, FieldProblem};
use app::i18n::{Lang, Text};
use app::model::QuestionView;
use question::form::{AnswerRefused, FieldErrorKind, InputAnswer, InputPauseForm, TextFormat, YesNo};
use runtime::{Actor, PauseView};

use super::{ChatService, MAX_MESSAGE_CHARS};
use crate::audit::{self, Surface};
use crate::conversation::{ConversationStatus, Reply};
use crate::failures::{internal, runtime_failure};

/// A question as the reader sees it.
pub(super) fn question_view(pause: runtime::InputPause, lang: Lang) -> QuestionView {
    let connect = pause.schema[mcp::CONNECT_KEY]["server"].as_str().map(str::to_string);
    let mut form = InputPauseForm::parse(&pause.schema);
    // A connect question is ours, not the server's: its one button speaks the reader's language.
    if let (Some(_), InputPauseForm::Choice(choice)) = (&connect, &mut form) {
        for option in &mut choice.options {
            option.label = lang.t(Text::McpConnectContinue).to_string();
        }
    }
    QuestionView {
        connect,
        link: link_view(&pause.schema),
        form,
        declinable: pause.asked_while_running,
        asked_by: pause.asked_by,
        digest: pause.digest,
        run: None,
    }
}

/// The link an MCP server asks the reader to open (`mcp::LINK_KEY`), read again here with the
/// parser browsers follow, so the host shown is the host the click goes to. `None` for anything
/// but a plain `http`/`https` address (the question then shows as its bare "Done").
fn link_view(schema: &serde_json::Value) -> Option<app::model::LinkView> {
    let link = schema.get(mcp::LINK_KEY)?;
    let url = url::Url::parse(link["url"].as_str()?).ok()?;
    let plain = matches!(url.scheme(), "https" | "http") && url.username().is_empty() && url.password().is_none();
    let host = url.host_str().filter(|host| plain && !host.is_empty())?;
    let host = match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    };
    Some(app::model::LinkView { server: link["server"].as_str()?.to_string(), url: url.to_string(), host })
}

/// An answer checked against the question as it stands (digest, options, field types), and the
/// line it reads as in the transcript.
pub(super) fn checked_reply(
    pause: &runtime::InputPause,
    digest: &str,
    answer: InputAnswer,
    lang: Lang,
) -> Result<(Reply, String), AppError> {
    if !runtime::digest::digests_match(&pause.digest, Some(digest)) {
        return Err(AppError::QuestionChanged);
    }
    if let InputAnswer::FreeText(text) = &answer {
        if text.chars().count() > MAX_MESSAGE_CHARS {
            return Err(AppError::Invalid(Text::ErrorMessageTooLong));
        }
    }
    match answer {
        // Only a question a tool asked while it ran can be declined.
        InputAnswer::Decline if pause.asked_while_running => Ok((Reply::Decline, lang.t(Text::Declined).to_string())),
        InputAnswer::Decline => Err(AppError::AnswerNotOffered),
        answer => {
            let form = InputPauseForm::parse(&pause.schema);
            let words = YesNo { yes: lang.t(Text::Yes), no: lang.t(Text::No) };
            // The schema's own check too: what it would refuse later is named field by field now.
            let schema_check = |form: &question::form::Form, values: &serde_json::Map<String, serde_json::Value>| {
                question::schema::field_errors(&pause.schema, form, values)
            };
            let accepted = form.check_with(&answer, words, &schema_check).map_err(|refused| match refused {
                AnswerRefused::NotOffered => AppError::AnswerNotOffered,
                AnswerRefused::Fields(fields) => AppError::InvalidAnswer(
                    fields
                        .into_iter()
                        .map(|error| FieldProblem {
                            message: field_sentence(&error.kind, lang),
                            field: error.field,
                            call: None,
                        })
                        .collect(),
                ),
            })?;
            // The one answer of a link or connect question is ours, not the server's: its line in
            // the transcript is in the reader's language, as the button was.
            let display = if pause.schema.get(mcp::LINK_KEY).is_some() {
                lang.t(Text::McpLinkDone).to_string()
            } else if pause.schema.get(mcp::CONNECT_KEY).is_some() {
                lang.t(Text::McpConnectContinue).to_string()
            } else {
                accepted.display
            };
            Ok((Reply::Values(accepted.data), display))
        }
    }
}

/// What a form's field wants instead of the value it got, in the reader's language.
fn field_sentence(kind: &FieldErrorKind, lang: Lang) -> String {
    let with = |text: Text, value: &str| lang.t(text).replace("{}", value);
    match kind {
        FieldErrorKind::Required => lang.t(Text::AnswerFieldRequired).to_string(),
        FieldErrorKind::WholeNumber => lang.t(Text::AnswerFieldWholeNumber).to_string(),
        FieldErrorKind::Number => lang.t(Text::AnswerFieldNumber).to_string(),
        FieldErrorKind::YesOrNo => lang.t(Text::AnswerFieldYesOrNo).to_string(),
        FieldErrorKind::Text => lang.t(Text::AnswerFieldText).to_string(),
        FieldErrorKind::OneOf(options) => with(Text::AnswerFieldOneOf, &options.join(", ")),
        FieldErrorKind::TooLong(max) => with(Text::AnswerFieldTooLong, &max.to_string()),
        FieldErrorKind::TooFew(min) => with(Text::AnswerFieldTooFew, &min.to_string()),
        FieldErrorKind::TooMany(max) => with(Text::AnswerFieldTooMany, &max.to_string()),
        FieldErrorKind::AtLeast(limit) => with(Text::AnswerFieldAtLeast, limit),
        FieldErrorKind::AtMost(limit) => with(Text::AnswerFieldAtMost, limit),
        FieldErrorKind::Above(limit) => with(Text::AnswerFieldAbove, limit),
        FieldErrorKind::Below(limit) => with(Text::AnswerFieldBelow, limit),
        FieldErrorKind::MultipleOf(step) => with(Text::AnswerFieldMultipleOf, step),
        FieldErrorKind::TooShort(min) => with(Text::AnswerFieldTooShort, &min.to_string()),
        FieldErrorKind::Pattern => lang.t(Text::AnswerFieldPattern).to_string(),
        FieldErrorKind::Format(format) => lang
            .t(match format {
                TextFormat::Email => Text::AnswerFieldEmail,
                TextFormat::Uri => Text::AnswerFieldUri,
                TextFormat::Date => Text::AnswerFieldDate,
                TextFormat::DateTime => Text::AnswerFieldDateTime,
            })
            .to_string(),
        FieldErrorKind::Other => lang.t(Text::AnswerFieldOther).to_string(),
    }
}

impl ChatService {
    /// An answer to the question the conversation waits on, from `surface` (the chat, the runs
    /// inbox, the JSON input route): checked against the question as it stands, recorded with its
    /// audit row in one guarded write.
    pub async fn answer_from(
        &self,
        user: &CurrentUser,
        id: &str,
        digest: &str,
        answer: InputAnswer,
        lang: Lang,
        surface: Surface,
    ) -> Result<(), AppError> {
        // The conversation and, on PostgreSQL, its run in one read.
        let read = self.store.conversation_with_run_of(user.id, id).await.map_err(internal)?;
        let (row, run) = read.ok_or(AppError::NotFound)?;
        self.answer_read(user, row, run, digest, answer, lang, surface).await
    }

    /// An answer from the chat's server function: its session, the conversation and, on
    /// PostgreSQL, its run in one read (`Store::answer_head`), so the answer costs that read and
    /// its write. `browser_lang` is for a user who chose no language.
    pub async fn answer_with_session(
        &self,
        session_token: &str,
        id: &str,
        digest: &str,
        answer: InputAnswer,
        browser_lang: Lang,
    ) -> Result<(), AppError> {
        let hash = crate::auth::token_hash(session_token);
        let Some((user, row, run)) = self.store.answer_head(&hash, id).await.map_err(internal)? else {
            return Err(self.refusal_of(&hash).await);
        };
        let user = crate::auth::current_user(user);
        let lang = user.language.unwrap_or(browser_lang);
        self.answer_read(&user, row, run, digest, answer, lang, Surface::Chat).await
    }

    /// Checks and records an answer to the question of `row`, read with its run (`run`, on
    /// PostgreSQL) for `user`.
    #[allow(clippy::too_many_arguments)]
    async fn answer_read(
        &self,
        user: &CurrentUser,
        row: crate::conversation::Conversation,
        run: Option<String>,
        digest: &str,
        answer: InputAnswer,
        lang: Lang,
        surface: Surface,
    ) -> Result<(), AppError> {
        if row.status != ConversationStatus::AwaitingInput {
            return Err(AppError::NotAwaitingInput);
        }
        let pause = match run {
            Some(run) => {
                let view = self.runtime.status_from_json(&Actor::user(row.user_id), &run).map_err(runtime_failure)?;
                view.and_then(|view| view.pause)
            }
            None => self.pause_of(&row).await?,
        };
        let (Some(run_id), Some(PauseView::Input(pause))) = (row.run_id, pause) else {
            return Err(AppError::NotAwaitingInput);
        };
        let (reply, display) = checked_reply(&pause, digest, answer, lang)?;
        let entry = audit::answer_entry(&reply, &display, user.id, surface, run_id, &pause);
        let recorded = self
            .store
            .record_answer(user.id, &row.id, &pause.digest, &reply, Some(&display), &entry, pause.held_by.as_deref())
            .await
            .map_err(internal)?;
        if !recorded {
            return Err(AppError::NotAwaitingInput);
        }
        self.wake_announced(&row.id);
        Ok(())
    }
}
