//! The one error type the UI sees. Each variant maps to an HTTP status at the edge.
//!
//! On the wire (the body of every server function's error, and the `__err` of a plain form post
//! that failed) an error is its stable code and the sentence for the reader, e.g.
//! `{"code":"unauthenticated","message":"Please sign in first."}`; `Invalid` adds the sentence's
//! name (`reason`), so the client reads back the same error. Nothing else crosses: a framework
//! error's detail (which may name a field, a type or a value) goes to the server's log only.

use std::fmt;

use leptos::server_fn::error::{FromServerFnError, ServerFnErrorErr};
use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::i18n::{Lang, Text};

/// One field of edited arguments that does not fit its tool, and why, in the reader's language.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldProblem {
    pub field: String,
    pub message: String,
    /// Which of the card's calls it is about (its index), so the card puts the sentence beside
    /// that call's field; `None` for a problem of the edit as a whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AppError {
    #[error("Please sign in first")]
    Unauthenticated,
    #[error("The user name or password is wrong")]
    BadCredentials,
    #[error("Not found")]
    NotFound,
    #[error("invalid request: {0:?}")]
    Invalid(Text),
    #[error("The assistant is still working on this conversation")]
    Busy,
    #[error("Something went wrong on the server")]
    Internal,
    /// The state of a waiting run could not be read, so nothing was changed.
    #[error("the waiting run's state could not be checked")]
    Unavailable,
    #[error("the conversation is not waiting for an answer")]
    NotAwaitingInput,
    #[error("the answer was not offered")]
    AnswerNotOffered,
    #[error("the question changed since it was shown")]
    QuestionChanged,
    #[error("the conversation is not waiting for an approval")]
    NotAwaitingApproval,
    #[error("the card changed since it was shown")]
    CardChanged,
    #[error("a decision or answer is still in flight")]
    DecisionInFlight,
    #[error("the card still waits for a decision")]
    ApprovalStillPending,
    #[error("there is nothing to retry")]
    NotResumable,
    #[error("no reply is being written")]
    NothingToStop,
    /// The run to dismiss no longer waits (decided, dismissed or expired).
    #[error("nothing to dismiss")]
    NothingToDismiss,
    /// Too many sign-in attempts for this name or from this address in the last minute.
    #[error("too many sign-in attempts")]
    TooManyAttempts,
    /// The account may not do this (an editor asking for an admin's page or action).
    #[error("not permitted")]
    Forbidden,
    /// Four-eyes: the reader may not approve their own change; a reviewer decides it.
    #[error("this change waits for a reviewer")]
    NeedsReviewer,
    /// The framework could not read the function's arguments (missing, malformed).
    #[error("the request is missing a field or a field has the wrong form")]
    BadRequest,
    /// The request or its answer did not get through (the network, or the framework elsewhere).
    #[error("the request could not be completed")]
    Transport,
    /// Edited arguments that do not fit the tool's schema: a sentence per field. Nothing changed.
    #[error("the edited arguments do not fit the tool")]
    InvalidEdit(Vec<FieldProblem>),
    /// A form question's answer with fields that do not fit it: a sentence per field (the same
    /// shape as an edit's). Nothing was recorded.
    #[error("the answer's fields do not fit the question")]
    InvalidAnswer(Vec<FieldProblem>),
}

/// Every error without a payload, for reading a code back.
const PLAIN: [AppError; 21] = [
    AppError::Unauthenticated,
    AppError::BadCredentials,
    AppError::NotFound,
    AppError::Busy,
    AppError::Internal,
    AppError::Unavailable,
    AppError::NotAwaitingInput,
    AppError::AnswerNotOffered,
    AppError::QuestionChanged,
    AppError::NotAwaitingApproval,
    AppError::CardChanged,
    AppError::DecisionInFlight,
    AppError::ApprovalStillPending,
    AppError::NotResumable,
    AppError::NothingToStop,
    AppError::NothingToDismiss,
    AppError::TooManyAttempts,
    AppError::Forbidden,
    AppError::NeedsReviewer,
    AppError::BadRequest,
    AppError::Transport,
];

impl AppError {
    /// The sentence the reader sees, in their language.
    pub fn message(&self, lang: Lang) -> &'static str {
        lang.t(match self {
            AppError::Unauthenticated => Text::ErrorUnauthenticated,
            AppError::BadCredentials => Text::ErrorBadCredentials,
            AppError::NotFound => Text::ErrorNotFound,
            AppError::Invalid(text) => *text,
            AppError::Busy => Text::ErrorBusy,
            AppError::Internal => Text::ErrorInternal,
            AppError::Unavailable => Text::ErrorUnavailable,
            AppError::NotAwaitingInput => Text::ErrorNotAwaitingInput,
            AppError::AnswerNotOffered => Text::ErrorInputNotOffered,
            AppError::QuestionChanged => Text::ErrorQuestionChanged,
            AppError::NotAwaitingApproval => Text::ErrorNotAwaitingApproval,
            AppError::CardChanged => Text::ErrorCardChanged,
            AppError::DecisionInFlight => Text::ErrorDecisionInFlight,
            AppError::ApprovalStillPending => Text::ErrorApprovalStillPending,
            AppError::NotResumable => Text::ErrorNotResumable,
            AppError::NothingToStop => Text::ErrorNothingToStop,
            AppError::NothingToDismiss => Text::ErrorNothingToDismiss,
            AppError::Forbidden => Text::ErrorForbidden,
            AppError::TooManyAttempts => Text::ErrorTooManyAttempts,
            AppError::NeedsReviewer => Text::ErrorNeedsReviewer,
            AppError::BadRequest => Text::ErrorBadRequest,
            AppError::Transport => Text::ErrorTransport,
            AppError::InvalidEdit(_) => Text::ErrorEditInvalid,
            AppError::InvalidAnswer(_) => Text::ErrorAnswerFields,
        })
    }

    /// The stable name a client may act on; the sentence beside it may change.
    pub fn code(&self) -> &'static str {
        match self {
            AppError::Unauthenticated => "unauthenticated",
            AppError::BadCredentials => "bad_credentials",
            AppError::NotFound => "not_found",
            AppError::Invalid(_) => "invalid",
            AppError::Busy => "busy",
            AppError::Internal => "internal",
            AppError::Unavailable => "unavailable",
            AppError::NotAwaitingInput => "not_awaiting_input",
            AppError::AnswerNotOffered => "answer_not_offered",
            AppError::QuestionChanged => "question_changed",
            AppError::NotAwaitingApproval => "not_awaiting_approval",
            AppError::CardChanged => "card_changed",
            AppError::DecisionInFlight => "decision_in_flight",
            AppError::ApprovalStillPending => "approval_still_pending",
            AppError::NotResumable => "not_resumable",
            AppError::NothingToStop => "nothing_to_stop",
            AppError::NothingToDismiss => "nothing_to_dismiss",
            AppError::TooManyAttempts => "too_many_attempts",
            AppError::Forbidden => "forbidden",
            AppError::NeedsReviewer => "needs_reviewer",
            AppError::BadRequest => "bad_request",
            AppError::Transport => "transport",
            AppError::InvalidEdit(_) => "invalid_edit",
            AppError::InvalidAnswer(_) => "invalid_answer",
        }
    }

    pub fn status_code(&self) -> u16 {
        match self {
            AppError::Unauthenticated | AppError::BadCredentials => 401,
            AppError::NotFound => 404,
            AppError::Forbidden | AppError::NeedsReviewer => 403,
            AppError::TooManyAttempts => 429,
            AppError::Invalid(_)
            | AppError::AnswerNotOffered
            | AppError::InvalidEdit(_)
            | AppError::InvalidAnswer(_) => 422,
            AppError::Busy
            | AppError::NotAwaitingInput
            | AppError::QuestionChanged
            | AppError::NotAwaitingApproval
            | AppError::CardChanged
            | AppError::DecisionInFlight
            | AppError::ApprovalStillPending
            | AppError::NotResumable
            | AppError::NothingToStop
            | AppError::NothingToDismiss => 409,
            AppError::BadRequest => 400,
            AppError::Internal | AppError::Transport => 500,
            AppError::Unavailable => 503,
        }
    }
}

/// The language the sentence on the wire is written in: the reader's, while the server answers a
/// request (the framework writes the error inside the request's context); English elsewhere.
fn wire_lang() -> Lang {
    #[cfg(feature = "ssr")]
    return crate::reader::request_lang();
    #[cfg(not(feature = "ssr"))]
    Lang::En
}

// By hand, as `Text`'s: a derive over twenty variants (and the framework's error inside one)
// costs the WASM several visitors, and it wrote the variant's name, not a sentence.
impl Serialize for AppError {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.in_lang(wire_lang()).serialize(serializer)
    }
}

/// An error as the server functions send it, its sentence in a language given: for a route that
/// answers as a server function without the framework's request context (`server::poll_route`).
pub struct InLang<'a>(&'a AppError, Lang);

impl AppError {
    pub fn in_lang(&self, lang: Lang) -> InLang<'_> {
        InLang(self, lang)
    }
}

impl Serialize for InLang<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let InLang(error, lang) = *self;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("code", error.code())?;
        map.serialize_entry("message", error.message(lang))?;
        if let AppError::Invalid(text) = error {
            map.serialize_entry("reason", text)?;
        }
        if let AppError::InvalidEdit(fields) | AppError::InvalidAnswer(fields) = error {
            map.serialize_entry("fields", fields)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for AppError {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<AppError, D::Error> {
        deserializer.deserialize_map(Wire)
    }
}

struct Wire;

impl<'de> Visitor<'de> for Wire {
    type Value = AppError;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("an error's code and sentence")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AppError, A::Error> {
        let mut code: Option<String> = None;
        let mut reason: Option<Text> = None;
        let mut fields: Option<Vec<FieldProblem>> = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "code" => code = Some(map.next_value()?),
                "reason" => reason = Some(map.next_value()?),
                "fields" => fields = Some(map.next_value()?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let code = code.ok_or_else(|| de::Error::missing_field("code"))?;
        if code == "invalid" {
            return reason.map(AppError::Invalid).ok_or_else(|| de::Error::missing_field("reason"));
        }
        if code == "invalid_edit" {
            return fields.map(AppError::InvalidEdit).ok_or_else(|| de::Error::missing_field("fields"));
        }
        if code == "invalid_answer" {
            return fields.map(AppError::InvalidAnswer).ok_or_else(|| de::Error::missing_field("fields"));
        }
        PLAIN
            .into_iter()
            .find(|error| error.code() == code)
            .ok_or_else(|| de::Error::invalid_value(de::Unexpected::Str(&code), &"an error code"))
    }
}

impl FromServerFnError for AppError {
    // Read from text, as `form_action` reads it: one copy of its decoding in the WASM.
    type Encoder = crate::text_json::TextJsonEncoding;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        // On the server these three are the arguments the framework could not read: the client's
        // fault, said as one sentence; what exactly was wrong is for the log. In the browser a
        // framework error is the request or its answer not getting through.
        let arguments = matches!(
            value,
            ServerFnErrorErr::Args(_) | ServerFnErrorErr::MissingArg(_) | ServerFnErrorErr::Deserialization(_)
        );
        #[cfg(feature = "ssr")]
        {
            tracing::warn!(error = %value, "a server function's request was refused by the framework");
            if arguments {
                return AppError::BadRequest;
            }
        }
        let _ = arguments;
        AppError::Transport
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_crosses_the_wire_as_its_code_and_sentence_and_reads_back_the_same() {
        let mut all = PLAIN.to_vec();
        all.push(AppError::Invalid(Text::ErrorEmptyMessage));
        all.push(AppError::InvalidEdit(vec![FieldProblem {
            field: "content".into(),
            message: "Required.".into(),
            call: Some(0),
        }]));
        all.push(AppError::InvalidAnswer(vec![FieldProblem {
            field: "age".into(),
            message: "Enter a whole number.".into(),
            call: None,
        }]));
        for error in all {
            let json = serde_json::to_value(&error).unwrap();
            assert_eq!(json["code"], error.code());
            assert_eq!(json["message"], error.message(Lang::En));
            assert_eq!(serde_json::from_value::<AppError>(json).unwrap(), error);
        }
        assert_eq!(
            serde_json::to_value(AppError::Invalid(Text::ErrorEmptyMessage)).unwrap(),
            serde_json::json!({ "code": "invalid", "message": "The message is empty.", "reason": "ErrorEmptyMessage" })
        );
        // Every code is the error's own: none reads back as another.
        let mut codes: Vec<&str> = PLAIN.iter().map(AppError::code).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), PLAIN.len());
    }

    #[test]
    fn a_body_that_is_not_an_error_is_refused() {
        assert!(serde_json::from_str::<AppError>(r#"{"code":"no_such_code","message":"x"}"#).is_err());
        assert!(serde_json::from_str::<AppError>(r#"{"code":"invalid","message":"x"}"#).is_err());
        assert!(serde_json::from_str::<AppError>(r#"{"message":"x"}"#).is_err());
        assert!(serde_json::from_str::<AppError>(r#""Unauthenticated""#).is_err());
    }

    #[test]
    fn a_framework_error_keeps_its_detail_to_itself() {
        let error = AppError::from_server_fn_error(ServerFnErrorErr::Args(
            "missing field `content` at app::api::SendMessage".to_string(),
        ));
        let body = serde_json::to_string(&error).unwrap();
        assert!(!body.contains("content") && !body.contains("::"), "{body}");
        #[cfg(feature = "ssr")]
        assert_eq!(error, AppError::BadRequest);
    }
}
