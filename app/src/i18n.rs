//! English and German. A typed catalogue: every text is an enum variant and the match below is
//! exhaustive, so a text missing in one language does not compile. No runtime loading, nothing
//! added to the WASM beyond the strings themselves.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Lang {
    #[default]
    En,
    De,
}

impl Lang {
    pub const ALL: [Lang; 2] = [Lang::En, Lang::De];

    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::De => "de",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Lang::En => "English",
            Lang::De => "Deutsch",
        }
    }

    pub fn parse(code: &str) -> Option<Lang> {
        let primary = code.trim().split(['-', '_']).next()?.to_ascii_lowercase();
        match primary.as_str() {
            "en" => Some(Lang::En),
            "de" => Some(Lang::De),
            _ => None,
        }
    }

    /// The best of our languages for an `Accept-Language` header, by quality, then by order.
    pub fn from_accept_language(header: &str) -> Option<Lang> {
        let mut best: Option<(f32, Lang)> = None;
        for entry in header.split(',') {
            let mut parts = entry.split(';');
            let Some(lang) = parts.next().and_then(Lang::parse) else { continue };
            let quality = parts
                .find_map(|param| param.trim().strip_prefix("q="))
                .and_then(|q| q.parse::<f32>().ok())
                .unwrap_or(1.0);
            if quality > 0.0 && best.is_none_or(|(best_quality, _)| quality > best_quality) {
                best = Some((quality, lang));
            }
        }
        best.map(|(_, lang)| lang)
    }

    pub fn t(self, text: Text) -> &'static str {
        let (en, de) = text.both();
        match self {
            Lang::En => en,
            Lang::De => de,
        }
    }
}

macro_rules! catalogue {
    ($($name:ident => $en:literal, $de:literal;)*) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
        pub enum Text { $($name,)* }

        impl Text {
            pub const ALL: &'static [Text] = &[$(Text::$name,)*];

            fn both(self) -> (&'static str, &'static str) {
                match self { $(Text::$name => ($en, $de),)* }
            }
        }
    };
}

catalogue! {
    AppName => "Tourguide", "Tourguide";
    SignInLead => "Sign in to chat with the assistant.", "Melde dich an, um mit dem Assistenten zu chatten.";
    UserName => "User name", "Benutzername";
    Password => "Password", "Passwort";
    SignIn => "Sign in", "Anmelden";
    SignOut => "Sign out", "Abmelden";
    Language => "Language", "Sprache";
    ModelTitle => "The model that answers", "Das Modell, das antwortet";
    Demo => "Demo", "Demo";
    Conversations => "Conversations", "Unterhaltungen";
    Conversation => "Conversation", "Unterhaltung";
    NewConversation => "New conversation", "Neue Unterhaltung";
    NoConversations => "No conversations yet.", "Noch keine Unterhaltungen.";
    Loading => "Loading…", "Wird geladen…";
    You => "You", "Du";
    Assistant => "Assistant", "Assistent";
    Message => "Message", "Nachricht";
    MessagePlaceholder => "Write a message…", "Nachricht schreiben…";
    Send => "Send", "Senden";
    Working => "The assistant is writing…", "Der Assistent schreibt…";
    WelcomeTitle => "Welcome to Tourguide", "Willkommen bei Tourguide";
    WelcomeBody => "Start a new conversation, or pick one from the list.", "Beginne eine neue Unterhaltung oder wähle eine aus der Liste.";
    NotFoundTitle => "Page not found", "Seite nicht gefunden";
    BackToChat => "Back to the chat", "Zurück zum Chat";
    StatusWorking => "working", "arbeitet";
    StatusAwaitingApproval => "waiting for approval", "wartet auf Freigabe";
    StatusAwaitingInput => "waiting for your answer", "wartet auf deine Antwort";
    StatusFailed => "failed", "fehlgeschlagen";
    // Errors (AppError)
    ErrorUnauthenticated => "Please sign in first.", "Bitte melde dich zuerst an.";
    ErrorBadCredentials => "The user name or password is wrong.", "Benutzername oder Passwort ist falsch.";
    ErrorNotFound => "Conversation not found.", "Unterhaltung nicht gefunden.";
    ErrorBusy => "The assistant is still working on this conversation.", "Der Assistent arbeitet noch an dieser Unterhaltung.";
    ErrorInternal => "Something went wrong on the server. Please try again.", "Auf dem Server ist etwas schiefgegangen. Bitte versuche es erneut.";
    ErrorTransport => "The request could not be completed. Please try again.", "Die Anfrage konnte nicht abgeschlossen werden. Bitte versuche es erneut.";
    ErrorEmptyMessage => "The message is empty.", "Die Nachricht ist leer.";
    ErrorMessageTooLong => "The message is too long.", "Die Nachricht ist zu lang.";
    ErrorProviderFailed => "The model could not be reached. Send your message again to retry.", "Das Modell war nicht erreichbar. Sende deine Nachricht erneut, um es noch einmal zu versuchen.";
    ErrorTurnFailed => "The assistant could not finish this turn.", "Der Assistent konnte diese Runde nicht abschließen.";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_language_picks_the_best_supported_language() {
        assert_eq!(Lang::from_accept_language("de-DE,de;q=0.9,en;q=0.8"), Some(Lang::De));
        assert_eq!(Lang::from_accept_language("fr-FR, en;q=0.5, de;q=0.7"), Some(Lang::De));
        assert_eq!(Lang::from_accept_language("fr, es"), None);
        assert_eq!(Lang::from_accept_language("de;q=0, en"), Some(Lang::En));
        assert_eq!(Lang::from_accept_language(""), None);
    }

    #[test]
    fn every_text_exists_in_both_languages() {
        for text in Text::ALL {
            assert!(!Lang::En.t(*text).is_empty(), "{text:?}");
            assert!(!Lang::De.t(*text).is_empty(), "{text:?}");
        }
    }
}
