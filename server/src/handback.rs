//! Why a conversation stopped: the codes stored in `conversations.error_code`, and the sentence
//! each one reads as. Codes, not sentences, are stored, so every reader gets their own language.

use app::i18n::{Lang, Text};
use runtime::{FailureReason, Refusal};

use crate::conversation::ErrorCode;

/// The stored code for a refused answer. Every refusal hands the question back: the runtime
/// leaves the run waiting in each case, so the reader can answer again (or write a message).
pub fn input_code(refusal: &Refusal) -> ErrorCode {
    match refusal {
        Refusal::StaleTurn => ErrorCode::InputStale,
        Refusal::InvalidSubmission(_) => ErrorCode::InputInvalid,
        Refusal::SubmitterNotPermitted => ErrorCode::InputNotPermitted,
        Refusal::ToolGone { .. } => ErrorCode::InputToolGone,
        Refusal::AlreadyResuming => ErrorCode::InputAlreadyResuming,
        Refusal::ConfigurationInactive => ErrorCode::InputConfigOff,
        Refusal::NotWaiting { .. } => ErrorCode::NotAwaitingInput,
        // Not expected from the chat (the owner submits, in the chat), or a store failure: the
        // sentence says only that the answer was not taken.
        Refusal::AccessDenied
        | Refusal::InitiatorOnly
        | Refusal::CorruptState
        | Refusal::ApproverNotPermitted
        | Refusal::PreviewStale
        | Refusal::PreviewFailed
        | Refusal::EditInvalid(_)
        | Refusal::EditPreviewFailed
        | Refusal::Unavailable(_) => ErrorCode::InputNotTaken,
    }
}

/// The stored code for a refused decision; every refusal hands the card back.
pub fn approval_code(refusal: &Refusal) -> ErrorCode {
    match refusal {
        Refusal::StaleTurn => ErrorCode::StaleTurn,
        Refusal::AlreadyResuming => ErrorCode::AlreadyResuming,
        Refusal::ApproverNotPermitted => ErrorCode::ApproverNotPermitted,
        Refusal::ToolGone { .. } => ErrorCode::ApprovalToolGone,
        Refusal::ConfigurationInactive => ErrorCode::ConfigurationInactive,
        Refusal::NotWaiting { .. } => ErrorCode::NotAwaitingApproval,
        Refusal::PreviewStale => ErrorCode::PreviewStale,
        Refusal::PreviewFailed => ErrorCode::PreviewFailed,
        Refusal::EditInvalid(_) => ErrorCode::EditInvalid,
        Refusal::EditPreviewFailed => ErrorCode::EditPreviewFailed,
        Refusal::AccessDenied
        | Refusal::InitiatorOnly
        | Refusal::CorruptState
        | Refusal::SubmitterNotPermitted
        | Refusal::InvalidSubmission(_)
        | Refusal::Unavailable(_) => ErrorCode::DecisionFailed,
    }
}

/// The sentence for a stored code, in the reader's language.
pub fn sentence(code: ErrorCode, lang: Lang) -> &'static str {
    lang.t(match code {
        ErrorCode::InputStale => Text::HandBackInputStale,
        ErrorCode::InputInvalid => Text::HandBackInputInvalid,
        ErrorCode::InputNotPermitted => Text::HandBackInputNotPermitted,
        ErrorCode::InputAlreadyResuming => Text::HandBackInputAlreadyResuming,
        ErrorCode::InputConfigOff => Text::HandBackInputConfigOff,
        ErrorCode::NotAwaitingInput => Text::HandBackNotAwaitingInput,
        ErrorCode::InputNotTaken => Text::HandBackInputNotTaken,
        ErrorCode::InputToolGone => Text::HandBackInputToolGone,
        ErrorCode::ApprovalToolGone => Text::HandBackApprovalToolGone,
        ErrorCode::StaleTurn => Text::HandBackStaleTurn,
        ErrorCode::AlreadyResuming => Text::HandBackAlreadyResuming,
        ErrorCode::ApproverNotPermitted => Text::HandBackApproverNotPermitted,
        ErrorCode::ConfigurationInactive => Text::HandBackConfigurationInactive,
        ErrorCode::NotAwaitingApproval => Text::HandBackNotAwaitingApproval,
        ErrorCode::DecisionFailed => Text::HandBackUnknown,
        ErrorCode::PreviewStale => Text::HandBackPreviewStale,
        ErrorCode::PreviewFailed => Text::HandBackPreviewFailed,
        ErrorCode::NotDelivered => Text::HandBackNotDelivered,
        ErrorCode::EditInvalid => Text::HandBackEditInvalid,
        ErrorCode::EditPreviewFailed => Text::HandBackEditPreviewFailed,
        ErrorCode::QuestionWithdrawn => Text::QuestionWithdrawn,
        ErrorCode::LinkCompleted => Text::McpLinkCompleted,
        ErrorCode::Run(FailureReason::ProviderFailed | FailureReason::RetriesExhausted) => Text::ErrorProviderFailed,
        ErrorCode::Run(FailureReason::ModelTimedOut) => Text::ErrorModelTimedOut,
        ErrorCode::Run(FailureReason::ModelRateLimited) => Text::ErrorModelRateLimited,
        ErrorCode::Run(FailureReason::ContextTooLong) => Text::ErrorContextTooLong,
        ErrorCode::Run(FailureReason::ModelBrokeOff) => Text::ErrorModelBrokeOff,
        ErrorCode::Run(FailureReason::ModelRejected) => Text::ErrorModelRejected,
        ErrorCode::Run(
            FailureReason::NotRetryable
            | FailureReason::SuspendFailed
            | FailureReason::ToolMisconfigured
            | FailureReason::StateUnreadable
            | FailureReason::StoreFailed,
        )
        | ErrorCode::Cancelled
        | ErrorCode::RunMissing
        | ErrorCode::Internal => Text::ErrorTurnFailed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use runtime::RunStatus;

    #[test]
    fn the_seven_input_refusals_hand_the_question_back_with_a_sentence_in_both_languages() {
        let refusals = [
            Refusal::StaleTurn,
            Refusal::InvalidSubmission(runtime::InvalidSubmission::Structure { path: "x".into() }),
            Refusal::SubmitterNotPermitted,
            Refusal::ToolGone { name: "everything.echo".into() },
            Refusal::AlreadyResuming,
            Refusal::ConfigurationInactive,
            Refusal::NotWaiting { expected: RunStatus::WaitingForInput },
        ];
        let mut codes = Vec::new();
        for refusal in &refusals {
            let code = input_code(refusal);
            for lang in Lang::ALL {
                assert_ne!(sentence(code, lang), lang.t(Text::ErrorTurnFailed), "{code:?} has no sentence");
            }
            assert_ne!(sentence(code, Lang::En), sentence(code, Lang::De));
            codes.push(code.as_str());
        }
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), 7);
        assert_eq!(input_code(&Refusal::AccessDenied), ErrorCode::InputNotTaken);
        assert_ne!(sentence(ErrorCode::InputNotTaken, Lang::De), Lang::De.t(Text::ErrorTurnFailed));
    }

    #[test]
    fn approval_refusals_map_to_their_own_codes() {
        assert_eq!(approval_code(&Refusal::StaleTurn), ErrorCode::StaleTurn);
        assert_eq!(approval_code(&Refusal::ApproverNotPermitted), ErrorCode::ApproverNotPermitted);
        assert_eq!(approval_code(&Refusal::InitiatorOnly), ErrorCode::DecisionFailed);
        assert_eq!(approval_code(&Refusal::PreviewStale), ErrorCode::PreviewStale);
        assert_eq!(approval_code(&Refusal::PreviewFailed), ErrorCode::PreviewFailed);
        assert_eq!(approval_code(&Refusal::ToolGone { name: "a.b".into() }), ErrorCode::ApprovalToolGone);
        // A gone tool never reads as a permission refusal, in either language.
        for lang in Lang::ALL {
            assert_ne!(sentence(ErrorCode::ApprovalToolGone, lang), sentence(ErrorCode::ApproverNotPermitted, lang));
            assert_ne!(sentence(ErrorCode::InputToolGone, lang), sentence(ErrorCode::InputNotPermitted, lang));
        }
        for code in [
            ErrorCode::StaleTurn,
            ErrorCode::AlreadyResuming,
            ErrorCode::ApproverNotPermitted,
            ErrorCode::ConfigurationInactive,
            ErrorCode::NotAwaitingApproval,
            ErrorCode::PreviewStale,
            ErrorCode::PreviewFailed,
            ErrorCode::ApprovalToolGone,
        ] {
            assert_ne!(sentence(code, Lang::De), Lang::De.t(Text::ErrorTurnFailed));
        }
    }
}
