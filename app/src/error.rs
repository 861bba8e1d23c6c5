//! The one error type the UI sees. Each variant maps to an HTTP status at the edge.

use leptos::server_fn::codec::JsonEncoding;
use leptos::server_fn::error::{FromServerFnError, ServerFnErrorErr};
use serde::{Deserialize, Serialize};

use crate::i18n::{Lang, Text};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
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
    /// Too many sign-in attempts for this name or from this address in the last minute.
    #[error("too many sign-in attempts")]
    TooManyAttempts,
    /// The account may not do this (an editor asking for an admin's page or action).
    #[error("not permitted")]
    Forbidden,
    /// Four-eyes: the reader may not approve their own change; a reviewer decides it.
    #[error("this change waits for a reviewer")]
    NeedsReviewer,
    #[error("The request could not be completed: {0}")]
    ServerFn(ServerFnErrorErr),
}

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
            AppError::Forbidden => Text::ErrorForbidden,
            AppError::TooManyAttempts => Text::ErrorTooManyAttempts,
            AppError::NeedsReviewer => Text::ErrorNeedsReviewer,
            AppError::ServerFn(_) => Text::ErrorTransport,
        })
    }

    pub fn status_code(&self) -> u16 {
        match self {
            AppError::Unauthenticated | AppError::BadCredentials => 401,
            AppError::NotFound => 404,
            AppError::Forbidden | AppError::NeedsReviewer => 403,
            AppError::TooManyAttempts => 429,
            AppError::Invalid(_) | AppError::AnswerNotOffered => 422,
            AppError::Busy
            | AppError::NotAwaitingInput
            | AppError::QuestionChanged
            | AppError::NotAwaitingApproval
            | AppError::CardChanged
            | AppError::DecisionInFlight
            | AppError::ApprovalStillPending
            | AppError::NotResumable
            | AppError::NothingToStop => 409,
            AppError::Internal => 500,
            AppError::Unavailable => 503,
            AppError::ServerFn(ServerFnErrorErr::Args(_))
            | AppError::ServerFn(ServerFnErrorErr::MissingArg(_))
            | AppError::ServerFn(ServerFnErrorErr::Deserialization(_)) => 400,
            AppError::ServerFn(_) => 500,
        }
    }
}

impl FromServerFnError for AppError {
    type Encoder = JsonEncoding;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        AppError::ServerFn(value)
    }
}
