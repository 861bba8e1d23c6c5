//! Why a conversation stopped: the codes stored in `conversations.error_code`, and the sentence
//! each one reads as. Codes, not sentences, are stored, so every reader gets their own language.

use app::i18n::{Lang, Text};
use runtime::Refusal;

/// The stored code for a refused answer. Every refusal hands the question back: the runtime
/// leaves the run waiting in each case, so the reader can answer again (or write a message).
pub fn input_code(refusal: &Refusal) -> &'static str {
    match refusal {
        Refusal::StaleTurn => "input_stale",
        Refusal::InvalidSubmission(_) => "input_invalid",
        Refusal::SubmitterNotPermitted => "input_not_permitted",
        Refusal::AlreadyResuming => "input_already_resuming",
        Refusal::ConfigurationInactive => "input_config_off",
        Refusal::NotWaiting { .. } => "not_awaiting_input",
        // Not expected from the chat (the owner submits, in the chat), or a store failure: the
        // sentence says only that the answer was not taken.
        Refusal::AccessDenied
        | Refusal::InitiatorOnly
        | Refusal::CorruptState
        | Refusal::ApproverNotPermitted
        | Refusal::Unavailable(_) => "input_not_taken",
    }
}

/// The stored code for a refused decision; every refusal hands the card back.
pub fn approval_code(refusal: &Refusal) -> &'static str {
    match refusal {
        Refusal::StaleTurn => "stale_turn",
        Refusal::AlreadyResuming => "already_resuming",
        Refusal::ApproverNotPermitted => "approver_not_permitted",
        Refusal::ConfigurationInactive => "configuration_inactive",
        Refusal::NotWaiting { .. } => "not_awaiting_approval",
        Refusal::AccessDenied
        | Refusal::InitiatorOnly
        | Refusal::CorruptState
        | Refusal::SubmitterNotPermitted
        | Refusal::InvalidSubmission(_)
        | Refusal::Unavailable(_) => "decision_failed",
    }
}

/// The sentence for a stored code, in the reader's language.
pub fn sentence(code: &str, lang: Lang) -> &'static str {
    lang.t(match code {
        "input_stale" => Text::HandBackInputStale,
        "input_invalid" => Text::HandBackInputInvalid,
        "input_not_permitted" => Text::HandBackInputNotPermitted,
        "input_already_resuming" => Text::HandBackInputAlreadyResuming,
        "input_config_off" => Text::HandBackInputConfigOff,
        "not_awaiting_input" => Text::HandBackNotAwaitingInput,
        "stale_turn" => Text::HandBackStaleTurn,
        "already_resuming" => Text::HandBackAlreadyResuming,
        "approver_not_permitted" => Text::HandBackApproverNotPermitted,
        "configuration_inactive" => Text::HandBackConfigurationInactive,
        "not_awaiting_approval" => Text::HandBackNotAwaitingApproval,
        "decision_failed" => Text::HandBackUnknown,
        "input_not_taken" => Text::HandBackInputNotTaken,
        "not_delivered" => Text::HandBackNotDelivered,
        "provider_failed" | "retries_exhausted" => Text::ErrorProviderFailed,
        _ => Text::ErrorTurnFailed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use runtime::RunStatus;

    #[test]
    fn the_six_input_refusals_hand_the_question_back_with_a_sentence_in_both_languages() {
        let refusals = [
            Refusal::StaleTurn,
            Refusal::InvalidSubmission(runtime::InvalidSubmission::Structure { path: "x".into() }),
            Refusal::SubmitterNotPermitted,
            Refusal::AlreadyResuming,
            Refusal::ConfigurationInactive,
            Refusal::NotWaiting { expected: RunStatus::WaitingForInput },
        ];
        let mut codes = Vec::new();
        for refusal in &refusals {
            let code = input_code(refusal);
            for lang in Lang::ALL {
                assert_ne!(sentence(code, lang), lang.t(Text::ErrorTurnFailed), "{code} has no sentence");
            }
            assert_ne!(sentence(code, Lang::En), sentence(code, Lang::De));
            codes.push(code);
        }
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), 6);
        assert_eq!(input_code(&Refusal::AccessDenied), "input_not_taken");
        assert_ne!(sentence("input_not_taken", Lang::De), Lang::De.t(Text::ErrorTurnFailed));
    }

    #[test]
    fn approval_refusals_map_to_their_own_codes() {
        assert_eq!(approval_code(&Refusal::StaleTurn), "stale_turn");
        assert_eq!(approval_code(&Refusal::ApproverNotPermitted), "approver_not_permitted");
        assert_eq!(approval_code(&Refusal::InitiatorOnly), "decision_failed");
        for code in ["stale_turn", "already_resuming", "approver_not_permitted", "configuration_inactive", "not_awaiting_approval"] {
            assert_ne!(sentence(code, Lang::De), Lang::De.t(Text::ErrorTurnFailed));
        }
    }
}
