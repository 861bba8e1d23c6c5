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
        match self {
            Lang::En => Packed::<TEXTS>::EN.get(text as usize),
            Lang::De => Packed::<TEXTS>::DE.get(text as usize),
        }
    }
}

/// The texts of one kind (English, German, names) one after another in one string, and where each
/// ends. A `match` of every text to its two strings was a table of four numbers per text in the
/// WASM beside the strings, and the names a table of two; this is one number (issue 40).
struct Packed<const N: usize> {
    all: &'static str,
    ends: [u16; N],
}

impl<const N: usize> Packed<N> {
    const fn new(all: &'static str, lengths: [usize; N]) -> Packed<N> {
        assert!(all.len() <= u16::MAX as usize, "the texts of one kind take more than 64 KiB");
        let mut ends = [0u16; N];
        let (mut index, mut end) = (0, 0);
        while index < N {
            end += lengths[index];
            ends[index] = end as u16;
            index += 1;
        }
        Packed { all, ends }
    }

    fn get(&self, index: usize) -> &'static str {
        let start = match index {
            0 => 0,
            index => self.ends[index - 1] as usize,
        };
        self.all.get(start..self.ends[index] as usize).unwrap_or_default()
    }
}

macro_rules! catalogue {
    ($($name:ident => $en:literal, $de:literal;)*) => {
        #[derive(Clone, Copy, PartialEq, Eq)]
        pub enum Text { $($name,)* }

        impl Text {
            pub const ALL: &'static [Text] = &[$(Text::$name,)*];
        }

        const TEXTS: usize = Text::ALL.len();

        impl Packed<TEXTS> {
            const EN: Packed<TEXTS> = Packed::new(concat!($($en,)*), [$($en.len(),)*]);
            const DE: Packed<TEXTS> = Packed::new(concat!($($de,)*), [$($de.len(),)*]);
            /// Each text's name, in the order of `ALL`.
            const NAMES: Packed<TEXTS> =
                Packed::new(concat!($(stringify!($name),)*), [$(stringify!($name).len(),)*]);
        }
    };
}

impl Text {
    /// What the text is called on the wire (an error carries one) and in logs.
    pub fn name(self) -> &'static str {
        Packed::<TEXTS>::NAMES.get(self as usize)
    }
}

// By hand over the table of names, with the wire format serde's derive would write (the name as a
// string): the derive matches every name, in several visitors, about 23 KB of the WASM before
// wasm-opt.
impl Serialize for Text {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Text, D::Error> {
        let name = String::deserialize(deserializer)?;
        match Text::ALL.iter().find(|text| text.name() == name) {
            Some(text) => Ok(*text),
            None => Err(serde::de::Error::custom(format_args!("unknown variant `{name}`"))),
        }
    }
}

impl std::fmt::Debug for Text {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.name())
    }
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
    // Outside content: an image in the assistant's text is a link naming where it points
    ImageFromHost => "Image from {} — open", "Bild von {} — öffnen";
    ImageOnThisSite => "Image on this site — open", "Bild auf dieser Website — öffnen";
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
    ErrorUnavailable => "It could not be checked whether the assistant still waits here, so nothing was changed. Please try again in a moment.", "Es ließ sich nicht prüfen, ob der Assistent hier noch wartet, daher wurde nichts geändert. Bitte versuche es gleich noch einmal.";
    ErrorTransport => "The request could not be completed. Please try again.", "Die Anfrage konnte nicht abgeschlossen werden. Bitte versuche es erneut.";
    // error codes (a framework error as a sentence)
    ErrorBadRequest => "The request is missing a field or a field has the wrong form.", "Der Anfrage fehlt ein Feld, oder ein Feld hat die falsche Form.";
    ErrorEmptyMessage => "The message is empty.", "Die Nachricht ist leer.";
    ErrorMessageTooLong => "The message is too long.", "Die Nachricht ist zu lang.";
    ErrorProviderFailed => "The model could not be reached. Send your message again to retry.", "Das Modell war nicht erreichbar. Sende deine Nachricht erneut, um es noch einmal zu versuchen.";
    ErrorModelTimedOut => "The model took too long to answer. Use Retry to ask again.", "Das Modell hat zu lange für die Antwort gebraucht. Mit „Erneut versuchen“ fragst du noch einmal.";
    ErrorModelRateLimited => "The model is receiving too many requests right now. Wait a moment, then use Retry.", "Das Modell erhält gerade zu viele Anfragen. Warte einen Moment und wähle dann „Erneut versuchen“.";
    ErrorContextTooLong => "This conversation has become too long for the model. Start a new conversation, or edit an earlier message to shorten it.", "Diese Unterhaltung ist für das Modell zu lang geworden. Beginne eine neue Unterhaltung oder kürze sie, indem du eine frühere Nachricht bearbeitest.";
    ErrorModelBrokeOff => "The model's reply broke off. Use Retry to ask again.", "Die Antwort des Modells ist abgebrochen. Mit „Erneut versuchen“ fragst du noch einmal.";
    ErrorModelRejected => "The model's server refused the request. Check the model settings, then use Retry.", "Der Server des Modells hat die Anfrage abgelehnt. Prüfe die Modelleinstellungen und wähle dann „Erneut versuchen“.";
    Stop => "Stop", "Stopp";
    Edit => "Edit", "Bearbeiten";
    Attach => "Attach file", "Datei anhängen";
    AttachHint => "PDF, DOCX, XLSX, text or Markdown, up to", "PDF, DOCX, XLSX, Text oder Markdown, bis";
    AttachedForNext => "Goes with your next message:", "Geht mit deiner nächsten Nachricht mit:";
    Remove => "Remove", "Entfernen";
    TextCut => "only the beginning was given to the model", "nur der Anfang ging an das Modell";
    ErrorAttachmentTooLarge => "The file is larger than the limit.", "Die Datei ist größer als erlaubt.";
    ErrorAttachmentEmpty => "The file is empty.", "Die Datei ist leer.";
    ErrorAttachmentType => "Only PDF, DOCX, XLSX, plain text and Markdown files can be attached.", "Anhängen lassen sich nur PDF-, DOCX-, XLSX-, Text- und Markdown-Dateien.";
    ErrorAttachmentWrongContent => "The file's content does not match its name: it is not the kind of file its ending says.", "Der Inhalt der Datei passt nicht zu ihrem Namen: Sie ist nicht die Art Datei, die ihre Endung angibt.";
    ErrorAttachmentEncrypted => "The PDF is password-protected. Attach a copy without a password.", "Das PDF ist passwortgeschützt. Hänge eine Kopie ohne Passwort an.";
    ErrorAttachmentDamaged => "The file could not be read; it may be damaged.", "Die Datei ließ sich nicht lesen; sie ist vielleicht beschädigt.";
    ErrorAttachmentBomb => "The file unpacks to far more than its size allows, so it was refused.", "Die Datei entpackt sich zu weit mehr als erlaubt und wurde deshalb abgelehnt.";
    ErrorAttachmentNoText => "No text was found in the file (a scanned document needs text recognition first).", "In der Datei wurde kein Text gefunden (ein eingescanntes Dokument braucht zuerst eine Texterkennung).";
    ErrorTooManyAttachments => "At most five files can go with one message.", "Mit einer Nachricht können höchstens fünf Dateien mitgehen.";
    ErrorNoFile => "Choose a file to attach.", "Wähle eine Datei zum Anhängen.";
    EditSubmit => "Send edited message", "Geänderte Nachricht senden";
    EditCancel => "Cancel", "Abbrechen";
    EditHint => "Everything after this message is replaced by a new reply.", "Alles nach dieser Nachricht wird durch eine neue Antwort ersetzt.";
    EditKeepsChanges => "Changes you approved after this message were applied and stay applied: editing does not undo them.", "Änderungen, die du nach dieser Nachricht freigegeben hast, wurden übernommen und bleiben bestehen: Bearbeiten macht sie nicht rückgängig.";
    ErrorNotEditable => "This message cannot be edited.", "Diese Nachricht lässt sich nicht bearbeiten.";
    StopHint => "Stop the reply", "Antwort anhalten";
    Stopped => "Stopped", "Angehalten";
    ErrorNothingToStop => "The assistant is not writing a reply here any more.", "Der Assistent schreibt hier gerade keine Antwort mehr.";
    ErrorTurnFailed => "The assistant could not finish this turn.", "Der Assistent konnte diese Runde nicht abschließen.";
    ErrorNotAwaitingInput => "This question is no longer open.", "Diese Rückfrage ist nicht mehr offen.";
    ErrorInputNotOffered => "This answer does not fit the question. Choose one of the answers offered.", "Diese Antwort passt nicht zur Rückfrage. Bitte eine der angebotenen Antworten wählen.";
    // answers to a form question, field by field
    ErrorAnswerFields => "Some answers do not fit the question; see the note beside each field.", "Einige Angaben passen nicht zur Rückfrage; siehe den Hinweis beim jeweiligen Feld.";
    AnswerFieldRequired => "This field is required.", "Dieses Feld ist erforderlich.";
    AnswerFieldWholeNumber => "Enter a whole number.", "Bitte eine ganze Zahl eingeben.";
    AnswerFieldNumber => "Enter a number.", "Bitte eine Zahl eingeben.";
    AnswerFieldOneOf => "Choose one of: {}.", "Bitte eines davon wählen: {}.";
    AnswerFieldYesOrNo => "Answer yes or no.", "Bitte mit Ja oder Nein antworten.";
    AnswerFieldText => "Enter text.", "Bitte einen Text eingeben.";
    AnswerFieldTooLong => "Use at most {} characters.", "Bitte höchstens {} Zeichen verwenden.";
    AnswerFieldTooFew => "Choose at least {}.", "Bitte mindestens {} auswählen.";
    AnswerFieldTooMany => "Choose at most {}.", "Bitte höchstens {} auswählen.";
    // issue 40: what the schema's own check refuses, field by field
    AnswerFieldAtLeast => "Enter a number of at least {}.", "Bitte eine Zahl von mindestens {} eingeben.";
    AnswerFieldAtMost => "Enter a number of at most {}.", "Bitte eine Zahl von höchstens {} eingeben.";
    AnswerFieldAbove => "Enter a number greater than {}.", "Bitte eine Zahl größer als {} eingeben.";
    AnswerFieldBelow => "Enter a number less than {}.", "Bitte eine Zahl kleiner als {} eingeben.";
    AnswerFieldMultipleOf => "Enter a multiple of {}.", "Bitte ein Vielfaches von {} eingeben.";
    AnswerFieldTooShort => "Use at least {} characters.", "Bitte mindestens {} Zeichen verwenden.";
    AnswerFieldPattern => "Enter it in the form this field asks for.", "Bitte in der Form eingeben, die dieses Feld verlangt.";
    AnswerFieldEmail => "Enter an e-mail address.", "Bitte eine E-Mail-Adresse eingeben.";
    AnswerFieldUri => "Enter a full web address, such as https://example.org.", "Bitte eine vollständige Webadresse eingeben, etwa https://example.org.";
    AnswerFieldDate => "Enter a date as YYYY-MM-DD.", "Bitte ein Datum als JJJJ-MM-TT eingeben.";
    AnswerFieldDateTime => "Enter a date and time, such as 2026-12-24T18:00:00Z.", "Bitte Datum und Uhrzeit eingeben, etwa 2026-12-24T18:00:00Z.";
    AnswerFieldOther => "This value does not fit the question.", "Dieser Wert passt nicht zur Rückfrage.";
    ErrorQuestionChanged => "The question changed after it was shown, so the answer was not taken. Answer again.", "Die Rückfrage hat sich nach dem Anzeigen geändert, deshalb wurde die Antwort nicht übernommen. Bitte erneut antworten.";
    ErrorNotAwaitingApproval => "This conversation is not waiting for an approval.", "Der Chat wartet nicht auf eine Freigabe.";
    ErrorCardChanged => "The card changed after it was shown, so nothing was carried out. Check the card and decide again.", "Die Karte hat sich nach dem Anzeigen geändert, deshalb wurde nichts ausgeführt. Bitte die Karte prüfen und erneut entscheiden.";
    ErrorDecisionInFlight => "A decision or answer for this conversation is still being carried out.", "Eine Entscheidung oder Antwort für diesen Chat wird noch ausgeführt.";
    ErrorApprovalStillPending => "This step is still waiting for a decision. Decide on the card — a message does not approve it.", "Dieser Schritt wartet noch auf eine Entscheidung. Bitte auf der Karte entscheiden – eine Nachricht erteilt keine Freigabe.";
    // Hand-backs: why an answer or a decision was not taken (stored as codes, rendered per reader)
    HandBackInputStale => "The question changed after it was shown, so the answer was not taken. Answer again.", "Die Rückfrage hat sich nach dem Anzeigen geändert, deshalb wurde die Antwort nicht übernommen. Bitte erneut antworten.";
    HandBackInputInvalid => "The answer does not fit the question, so it was not taken. Answer again.", "Die Antwort passt nicht zur Rückfrage, deshalb wurde sie nicht übernommen. Bitte erneut antworten.";
    HandBackInputNotPermitted => "Your own permissions do not cover the step this question belongs to, so the answer was not taken.", "Deine eigenen Rechte decken den Schritt nicht ab, zu dem diese Rückfrage gehört, deshalb wurde die Antwort nicht übernommen.";
    HandBackInputToolGone => "The tool this question belongs to is no longer registered, so the answer was not taken. Write a message of your own to go on.", "Das Werkzeug, zu dem diese Rückfrage gehört, ist nicht mehr registriert, deshalb wurde die Antwort nicht übernommen. Schreib eine eigene Nachricht, um weiterzumachen.";
    HandBackApprovalToolGone => "The tool of a call on this card is no longer registered, so nothing was carried out. Deny the card, or write a message of your own.", "Das Werkzeug eines Aufrufs auf dieser Karte ist nicht mehr registriert, deshalb wurde nichts ausgeführt. Lehne die Karte ab oder schreib eine eigene Nachricht.";
    HandBackInputAlreadyResuming => "This question was already answered, so this answer was not taken.", "Diese Rückfrage wurde bereits beantwortet, deshalb wurde diese Antwort nicht übernommen.";
    HandBackInputConfigOff => "The AI configuration of this chat is switched off, so the answer was not taken. The question waits until it is switched on again; then answer again.", "Die KI-Konfiguration dieses Chats ist ausgeschaltet, deshalb wurde die Antwort nicht übernommen. Die Rückfrage wartet, bis sie wieder eingeschaltet ist; danach bitte erneut antworten.";
    HandBackNotAwaitingInput => "This question no longer waits for an answer, so nothing was taken.", "Diese Rückfrage wartet nicht mehr auf eine Antwort, deshalb wurde nichts übernommen.";
    HandBackStaleTurn => "The conversation moved on after this card was shown, so nothing was carried out. Check the card and decide again.", "Die Unterhaltung hat sich nach dem Anzeigen dieser Karte weiterentwickelt, deshalb wurde nichts ausgeführt. Bitte die Karte prüfen und erneut entscheiden.";
    HandBackAlreadyResuming => "This step is already being carried out after an earlier decision, so this one was not applied.", "Dieser Schritt wird nach einer früheren Entscheidung bereits ausgeführt, diese Entscheidung wurde deshalb nicht übernommen.";
    HandBackApproverNotPermitted => "Your own permissions do not cover this change, so you may not approve it and nothing was carried out.", "Deine eigenen Rechte decken diese Änderung nicht ab, deshalb darfst du sie nicht freigeben, und es wurde nichts ausgeführt.";
    HandBackConfigurationInactive => "The AI configuration of this chat is switched off, so nothing was carried out. The step waits until it is switched on again; then decide again.", "Die KI-Konfiguration dieses Chats ist ausgeschaltet, deshalb wurde nichts ausgeführt. Der Schritt wartet, bis sie wieder eingeschaltet ist; danach bitte erneut entscheiden.";
    HandBackNotAwaitingApproval => "This step no longer waits for a decision, so nothing was carried out.", "Dieser Schritt wartet nicht mehr auf eine Entscheidung, deshalb wurde nichts ausgeführt.";
    QuestionWithdrawn => "The tool stopped waiting for an answer, so the assistant carried on without it.", "Das Werkzeug hat nicht länger auf eine Antwort gewartet, deshalb hat der Assistent ohne sie weitergemacht.";
    HandBackNotDelivered => "Your answer or decision did not reach the assistant, so nothing was carried out. Answer or decide again.", "Deine Antwort oder Entscheidung hat den Assistenten nicht erreicht, deshalb wurde nichts ausgeführt. Bitte erneut antworten oder entscheiden.";
    ErrorNotResumable => "There is nothing to retry in this conversation.", "In dieser Unterhaltung gibt es nichts zu wiederholen.";
    Retry => "Retry", "Erneut versuchen";
    TourTitle => "Tour", "Rundgang";
    ConversationActions => "Rename or delete", "Umbenennen oder löschen";
    Title => "Title", "Titel";
    Rename => "Rename", "Umbenennen";
    Delete => "Delete conversation", "Unterhaltung löschen";
    DeleteHint => "Deleting removes the conversation and its messages for good.", "Löschen entfernt die Unterhaltung und ihre Nachrichten endgültig.";
    ErrorEmptyTitle => "The title must not be empty.", "Der Titel darf nicht leer sein.";
    Navigation => "Main", "Hauptnavigation";
    NavChat => "Chat", "Chat";
    NavPages => "Pages", "Seiten";
    NavTools => "Tools", "Werkzeuge";
    NavInbox => "Waiting", "Wartend";
    ErrorPasswordLength => "A password has 8 to 200 characters.", "Ein Passwort hat 8 bis 200 Zeichen.";
    ErrorUsername => "A user name has 1 to 64 characters.", "Ein Benutzername hat 1 bis 64 Zeichen.";
    // sign-in that tells nothing: names that differ only in case or width are one name
    ErrorUsernameTaken => "This user name is already taken.", "Dieser Benutzername ist bereits vergeben.";
    ErrorUsernameConfusable => "This user name mixes scripts or has characters that could pass for others (such as a Cyrillic о in a Latin name). Use letters of one script.", "Dieser Benutzername mischt Schriften oder enthält Zeichen, die mit anderen verwechselt werden können (etwa ein kyrillisches о in einem lateinischen Namen). Bitte Buchstaben einer Schrift verwenden.";
    ErrorOwnAdminRole => "You cannot take away your own admin role.", "Du kannst dir die Administrationsrolle nicht selbst nehmen.";
    NavAdmin => "Accounts", "Konten";
    Ago => "{} ago", "vor {}";
    InTime => "in {}", "in {}";
    SessionsTitle => "Your sessions", "Deine Sitzungen";
    // accessibility: the theme on /account
    ThemeHeading => "Appearance", "Darstellung";
    ThemeLead => "Colours in this browser", "Farben in diesem Browser";
    ThemeLight => "Light", "Hell";
    ThemeDark => "Dark", "Dunkel";
    ThemeSystem => "As the system", "Wie das System";
    AuditPagesNav => "Pages of the log", "Seiten des Protokolls";
    SessionsLead => "Where you are signed in. End a session you do not know, or all but this one.", "Wo du angemeldet bist. Beende eine Sitzung, die du nicht kennst, oder alle außer dieser.";
    SessionThis => "This browser", "Dieser Browser";
    SessionUnknownBrowser => "Unknown browser", "Unbekannter Browser";
    SessionBegan => "began", "begonnen";
    SessionEnds => "ends", "endet";
    SessionEnd => "End", "Beenden";
    SessionEndOthers => "End all other sessions", "Alle anderen Sitzungen beenden";
    ErrorTourFourEyes => "A guided tour is decided by the one who starts it, so it needs an account that may approve its own changes. Ask an admin.", "Ein Rundgang wird von der Person entschieden, die ihn startet; dafür braucht es ein Konto, das eigene Änderungen freigeben darf. Bitte eine Administratorin fragen.";
    AdminTitle => "Accounts", "Konten";
    AdminLead => "Who may sign in, and what they may do. An editor without “may approve own changes” has every change of theirs decided by a reviewer.", "Wer sich anmelden darf und was. Bei einer Redakteurin ohne „darf eigene Änderungen freigeben“ entscheidet eine Prüferin über jede ihrer Änderungen.";
    AdminUser => "User name", "Benutzername";
    AdminPassword => "Password", "Passwort";
    AdminNewPassword => "New password", "Neues Passwort";
    AdminRoleAdmin => "Admin", "Admin";
    AdminMayApproveOwn => "May approve own changes", "Darf eigene Änderungen freigeben";
    AdminAdd => "Add account", "Konto anlegen";
    AdminSave => "Save", "Speichern";
    AdminSetPassword => "Set password", "Passwort setzen";
    AdminEndSessions => "End sessions", "Sitzungen beenden";
    AdminSessions => "open sessions", "offene Sitzungen";
    AdminYou => "(you)", "(du)";
    AdminDone => "Saved.", "Gespeichert.";
    // webhooks (admin page /admin/webhooks, CLI `server webhook`)
    WebhooksTitle => "Webhooks", "Webhooks";
    WebhooksLead => "Other services hear of runs that wait, are decided, expire or fail: a signed JSON POST per event (Standard Webhooks; Slack, Mattermost and Teams show its text). A delivery that fails is tried again for a day.", "Andere Dienste erfahren von Läufen, die warten, entschieden werden, ablaufen oder scheitern: ein signierter JSON-POST pro Ereignis (Standard Webhooks; Slack, Mattermost und Teams zeigen seinen Text). Eine gescheiterte Zustellung wird einen Tag lang wiederholt.";
    WebhookUrl => "Address (URL)", "Adresse (URL)";
    WebhookEvents => "Events", "Ereignisse";
    WebhookSecret => "Secret", "Geheimnis";
    WebhookSecretOnce => "Copy this secret now: the receiver checks the signature with it, and after adding only its start is shown.", "Dieses Geheimnis jetzt kopieren: Der Empfänger prüft damit die Signatur, und nach dem Hinzufügen wird nur sein Anfang gezeigt.";
    WebhookAdd => "Add webhook", "Webhook hinzufügen";
    WebhookRemove => "Remove", "Entfernen";
    WebhookNone => "No webhooks yet.", "Noch keine Webhooks.";
    WebhookDeliveries => "Recent deliveries", "Letzte Zustellungen";
    WebhookDeliveriesNone => "Nothing was sent yet.", "Noch nichts gesendet.";
    WebhookEvent => "Event", "Ereignis";
    WebhookStatus => "Status", "Status";
    WebhookAttempts => "Attempts", "Versuche";
    WebhookLastError => "Last error", "Letzter Fehler";
    WebhookPending => "pending", "ausstehend";
    WebhookDelivered => "delivered", "zugestellt";
    WebhookFailed => "failed", "gescheitert";
    WebhookResend => "Send again", "Erneut senden";
    WebhookResent => "(sent again)", "(erneut gesendet)";
    ErrorWebhookUrl => "The webhook's address must be a full URL such as https://hooks.example.com/tourguide.", "Die Adresse des Webhooks muss eine vollständige URL sein, etwa https://hooks.example.com/tourguide.";
    ErrorWebhookScheme => "A webhook's address must start with http:// or https://.", "Die Adresse eines Webhooks muss mit http:// oder https:// beginnen.";
    ErrorWebhookHost => "The webhook's address names no host.", "Die Adresse des Webhooks nennt keinen Host.";
    ErrorWebhookUserinfo => "Put no user name or password into the webhook's address: the receiver knows the sender by the signature.", "Keinen Benutzernamen und kein Passwort in die Adresse des Webhooks schreiben: Der Empfänger erkennt den Absender an der Signatur.";
    ErrorWebhookSelf => "That address is this server itself; a webhook must go to another service.", "Diese Adresse ist dieser Server selbst; ein Webhook muss an einen anderen Dienst gehen.";
    ErrorWebhookEvents => "Choose at least one event for the webhook.", "Bitte mindestens ein Ereignis für den Webhook wählen.";
    ErrorWebhookSecret => "A webhook's secret is whsec_ followed by 24 to 64 bytes in base64.", "Das Geheimnis eines Webhooks ist whsec_ gefolgt von 24 bis 64 Bytes in Base64.";
    ErrorTooManyAttempts => "Too many sign-in attempts. Wait a minute and try again.", "Zu viele Anmeldeversuche. Bitte eine Minute warten und erneut versuchen.";
    ErrorForbidden => "Your account may not do this.", "Dein Konto darf das nicht.";
    ErrorNeedsReviewer => "You cannot approve your own change: it waits for a reviewer (an admin or a colleague who may approve), who decides it under Waiting.", "Du kannst deine eigene Änderung nicht freigeben: Sie wartet auf eine Prüfung durch eine Administratorin oder eine Kollegin mit Freigaberecht, die unter „Wartend“ entscheidet.";
    ReviewerWaits => "Waits for a reviewer: an admin or a colleague who may approve decides it under Waiting. You can still cancel it.", "Wartet auf eine Prüfung: Eine Administratorin oder eine Kollegin mit Freigaberecht entscheidet unter „Wartend“. Abbrechen kannst du weiterhin.";
    InboxReview => "Review: a change by", "Prüfung: eine Änderung von";
    InboxTitle => "Waiting for you", "Wartet auf dich";
    InboxLead => "Every run that waits for your decision or answer, also in chats that have moved on. Deciding here carries the run on; its chat shows it.", "Alle Läufe, die auf deine Entscheidung oder Antwort warten, auch aus Chats, die weitergegangen sind. Eine Entscheidung hier setzt den Lauf fort; sein Chat zeigt das.";
    InboxEmpty => "Nothing waits for you.", "Nichts wartet auf dich.";
    InboxWaitsApproval => "Waits for approval", "Wartet auf Freigabe";
    InboxWaitsAnswer => "Waits for an answer", "Wartet auf Antwort";
    InboxWaitingFor => "for", "seit";
    InboxMovedOn => "The chat has moved on since. Deciding here carries this run on, and its answer joins the chat as a line of its own.", "Der Chat ist inzwischen weitergegangen. Eine Entscheidung hier setzt diesen Lauf fort, und seine Antwort erscheint als eigene Zeile im Chat.";
    // Being told (issue 39): how many runs wait, browser notifications
    WaitingOne => "1 run waits for you", "1 Lauf wartet auf dich";
    WaitingMany => "{} runs wait for you", "{} Läufe warten auf dich";
    NotifyApproval => "Tourguide: a run waits for your approval", "Tourguide: Ein Lauf wartet auf deine Freigabe";
    NotifyAnswer => "Tourguide: a run waits for your answer", "Tourguide: Ein Lauf wartet auf deine Antwort";
    NotifyHeading => "Notifications", "Benachrichtigungen";
    NotifyLead => "Be told in this browser when a run starts to wait for you, while a Tourguide page is open. The browser asks you once.", "Lass dich in diesem Browser benachrichtigen, wenn ein Lauf auf dich zu warten beginnt, solange eine Tourguide-Seite offen ist. Der Browser fragt dich einmal.";
    NotifyOn => "Notify me in this browser", "In diesem Browser benachrichtigen";
    NotifyOff => "Stop notifying me in this browser", "In diesem Browser nicht mehr benachrichtigen";
    NotifyRefused => "This browser does not allow notifications for this site. Allow them in its site settings, then try again.", "Dieser Browser erlaubt für diese Seite keine Benachrichtigungen. Bitte in den Website-Einstellungen erlauben und erneut versuchen.";
    // e-mail (issue 39): the account page's settings, and the mails themselves
    MailHeading => "E-mail", "E-Mail";
    MailLead => "Tourguide can e-mail you when a run waits for you, and when it is decided, expires or fails. The e-mail only links to the conversation: deciding or answering needs you to sign in.", "Tourguide kann dir eine E-Mail schicken, wenn ein Lauf auf dich wartet, und wenn er entschieden wird, abläuft oder fehlschlägt. Die E-Mail verlinkt nur die Unterhaltung: Entscheiden oder Antworten geht nur angemeldet.";
    MailUnavailable => "This server sends no e-mail: no SMTP server is configured.", "Dieser Server verschickt keine E-Mails: Es ist kein SMTP-Server eingerichtet.";
    MailAddress => "E-mail address", "E-Mail-Adresse";
    MailNotify => "Send me an e-mail when a run waits for me", "Schick mir eine E-Mail, wenn ein Lauf auf mich wartet";
    MailSave => "Save", "Speichern";
    ErrorMailAddress => "That is not an e-mail address this server can send to; write it like name@example.com. Nothing was changed.", "Das ist keine E-Mail-Adresse, an die dieser Server schreiben kann; bitte in der Form name@example.com angeben. Es wurde nichts geändert.";
    ErrorMailAddressMissing => "Give an e-mail address to be sent e-mails. Nothing was changed.", "Für E-Mails bitte eine E-Mail-Adresse angeben. Es wurde nichts geändert.";
    MailUntitled => "a conversation without a title", "eine Unterhaltung ohne Titel";
    MailSubjectApproval => "Tourguide: a run waits for your approval — {}", "Tourguide: Ein Lauf wartet auf deine Freigabe — {}";
    MailSubjectAnswer => "Tourguide: a run waits for your answer — {}", "Tourguide: Ein Lauf wartet auf deine Antwort — {}";
    MailSubjectReview => "Tourguide: a change by {} waits for your review — {}", "Tourguide: Eine Änderung von {} wartet auf deine Prüfung — {}";
    MailSubjectDecided => "Tourguide: a run was decided — {}", "Tourguide: Ein Lauf wurde entschieden — {}";
    MailSubjectExpired => "Tourguide: a run waited too long and was cancelled — {}", "Tourguide: Ein Lauf hat zu lange gewartet und wurde abgebrochen — {}";
    MailSubjectFailed => "Tourguide: a run failed — {}", "Tourguide: Ein Lauf ist fehlgeschlagen — {}";
    MailSubjectReminder => "Tourguide: a run still waits for a decision or an answer — {}", "Tourguide: Ein Lauf wartet noch auf eine Entscheidung oder Antwort — {}";
    MailSubjectOther => "Tourguide: news of a run — {}", "Tourguide: Neues von einem Lauf — {}";
    MailConversation => "Conversation: {}", "Unterhaltung: {}";
    MailDecision => "Decision: {}", "Entscheidung: {}";
    MailDecisionBy => "Decision: {}, by {}", "Entscheidung: {}, von {}";
    MailReason => "Reason: {}", "Grund: {}";
    MailExpiresAt => "Unless someone decides, it is cancelled at {}.", "Ohne Entscheidung wird er am {} abgebrochen.";
    MailOpen => "Open it (you will be asked to sign in): {}", "Öffnen (mit Anmeldung): {}";
    MailOpenPath => "Open {} on your Tourguide server (you will be asked to sign in).", "{} auf deinem Tourguide-Server öffnen (mit Anmeldung).";
    MailNoDecisionByMail => "Nothing can be approved or answered from this e-mail; that happens on the page.", "Aus dieser E-Mail heraus lässt sich nichts freigeben oder beantworten; das geht nur auf der Seite.";
    MailWhy => "You get this e-mail because you asked for it on your account page in Tourguide; you can turn it off there.", "Du bekommst diese E-Mail, weil du sie auf deiner Kontoseite in Tourguide bestellt hast; dort kannst du sie abbestellen.";
    ToolsTitle => "Tools", "Werkzeuge";
    ToolsLead => "What the assistant can use. Reads run at once; writes wait for your approval on a card.", "Was der Assistent benutzen kann. Lesendes läuft sofort; Schreibendes wartet auf deine Freigabe auf einer Karte.";
    ToolsBuiltIn => "Built in", "Eingebaut";
    ToolsMcpServers => "MCP servers", "MCP-Server";
    ToolsNoMcp => "No MCP servers are configured (start with --mcp-config to add some).", "Es sind keine MCP-Server eingerichtet (mit --mcp-config hinzufügen).";
    McpStarting => "connecting…", "verbindet…";
    McpReady => "connected", "verbunden";
    McpDown => "not reachable", "nicht erreichbar";
    McpRetryIn => "next attempt in", "nächster Versuch in";
    McpNoTools => "No tools while it is not connected.", "Keine Werkzeuge, solange er nicht verbunden ist.";
    // MCP OAuth sign-in (issue 42)
    McpSignInNeeded => "waiting for a sign-in", "wartet auf eine Anmeldung";
    McpOAuthShared => "Signs in once for everyone (an admin connects it):", "Eine Anmeldung für alle (eine Admin-Person verbindet ihn):";
    McpOAuthPerUser => "Each user connects their own account. Yours:", "Alle verbinden ihr eigenes Konto. Deins:";
    McpConnected => "connected", "verbunden";
    McpNotConnected => "not connected", "nicht verbunden";
    McpConnect => "Connect", "Verbinden";
    McpDisconnect => "Disconnect", "Trennen";
    McpConnectServer => "Connect {}", "{} verbinden";
    McpConnectThenContinue => "Connect your account, then press Continue.", "Verbinde dein Konto und drücke dann auf Weiter.";
    McpConnectContinue => "Continue", "Weiter";
    ErrorMcpNotOAuth => "This MCP server does not sign in with OAuth here.", "Dieser MCP-Server meldet sich hier nicht mit OAuth an.";
    OAuthStateMismatch => "This sign-in was not started in this session or has expired, so nothing was stored. Start it again from the Tools page.", "Diese Anmeldung wurde nicht in dieser Sitzung begonnen oder ist abgelaufen, deshalb wurde nichts gespeichert. Bitte auf der Werkzeug-Seite neu beginnen.";
    OAuthDenied => "The sign-in was refused at the authorization server, so nothing was stored.", "Die Anmeldung wurde beim Autorisierungsserver abgelehnt, deshalb wurde nichts gespeichert.";
    OAuthExchange => "The authorization server did not accept the sign-in (the code was wrong, used or expired), so nothing was stored. Try again.", "Der Autorisierungsserver hat die Anmeldung nicht angenommen (der Code war falsch, verbraucht oder abgelaufen), deshalb wurde nichts gespeichert. Bitte erneut versuchen.";
    OAuthDiscovery => "The server's sign-in could not be found or reached, so nothing was stored. Try again later.", "Die Anmeldung des Servers war nicht auffindbar oder nicht erreichbar, deshalb wurde nichts gespeichert. Bitte später erneut versuchen.";
    OAuthNeedsPublicUrl => "Signing in to this server needs the address people reach Tourguide at (--public-url), which is not set. Ask an admin to set it.", "Die Anmeldung bei diesem Server braucht die Adresse, unter der Tourguide erreichbar ist (--public-url), und die ist nicht gesetzt. Bitte eine Administration, sie zu setzen.";
    OAuthIssuer => "The answer came from another authorization server than expected, so nothing was stored.", "Die Antwort kam von einem anderen Autorisierungsserver als erwartet, deshalb wurde nichts gespeichert.";
    OAuthStorage => "The sign-in could not be saved. Try again.", "Die Anmeldung konnte nicht gespeichert werden. Bitte erneut versuchen.";
    OAuthTitle => "Sign-in to an MCP server", "Anmeldung bei einem MCP-Server";
    OAuthBackToTools => "Back to the tools", "Zurück zu den Werkzeugen";
    // MCP problems by kind (secrets stay inside)
    McpProblemCannotStart => "Its command could not be started.", "Sein Befehl ließ sich nicht starten.";
    McpProblemExited => "Its process ended.", "Sein Prozess wurde beendet.";
    McpProblemUnreachable => "Its address could not be reached.", "Seine Adresse war nicht erreichbar.";
    McpProblemDisconnected => "The connection to it closed.", "Die Verbindung zu ihm wurde geschlossen.";
    McpProblemRefused => "It refused the connection.", "Er hat die Verbindung abgelehnt.";
    McpProblemCredentials => "It refused the credentials.", "Er hat die Zugangsdaten abgelehnt.";
    McpProblemHandshake => "The MCP handshake with it failed.", "Der MCP-Handshake mit ihm ist fehlgeschlagen.";
    McpProblemTimedOut => "It did not answer in time.", "Er hat nicht rechtzeitig geantwortet.";
    McpProblemProtocol => "It did not answer as an MCP server does.", "Er hat nicht wie ein MCP-Server geantwortet.";
    McpProblemAuthorizationServerChanged => "It now names another sign-in service than the one it was connected with, so nothing is sent there. Check the server, then connect it again.", "Er nennt jetzt einen anderen Anmeldedienst als den, mit dem er verbunden wurde, deshalb wird dorthin nichts gesendet. Bitte den Server prüfen und danach erneut verbinden.";
    McpProblemMisconfigured => "Its configuration cannot be used as given.", "Seine Konfiguration lässt sich so nicht verwenden.";
    McpAddress => "Address", "Adresse";
    McpCommand => "Command", "Befehl";
    EffectReads => "reads", "liest";
    EffectWritesIdempotent => "writes (safe to repeat)", "schreibt (wiederholbar)";
    EffectWrites => "writes", "schreibt";
    NeedsApproval => "needs approval", "braucht Freigabe";
    Seconds => "s", "s";
    PagesTitle => "Pages of your site", "Seiten deiner Website";
    PagesLead => "Open a page to see it, or start a guided tour that improves it one point at a time.", "Öffne eine Seite, um sie anzusehen, oder starte einen Rundgang, der sie Punkt für Punkt verbessert.";
    StartTour => "Start a guided tour", "Rundgang starten";
    MetaDescription => "Meta description", "Meta-Beschreibung";
    AltText => "Alt text", "Alternativtext";
    Missing => "(missing)", "(fehlt)";
    Empty => "(empty)", "(leer)";
    ChatAboutPage => "Chat about this page", "Chat zu dieser Seite";
    PageNotFound => "This page does not exist.", "Diese Seite gibt es nicht.";
    TourFirstMessage => "Guide me through this page, one point at a time.", "Führe mich Punkt für Punkt durch diese Seite.";
    HandBackInputNotTaken => "The answer could not be delivered, so it was not taken. Answer again.", "Die Antwort konnte nicht zugestellt werden, deshalb wurde sie nicht übernommen. Bitte erneut antworten.";
    HandBackUnknown => "The decision could not be carried out. Check the card and decide again.", "Die Entscheidung konnte nicht ausgeführt werden. Bitte die Karte prüfen und erneut entscheiden.";
    // Reply options
    ReplyOptions => "Reply options", "Antwortmöglichkeiten";
    // issue 40: the polite live region when a question or a card appears
    AnnounceQuestion => "The assistant asks: {}", "Der Assistent fragt: {}";
    AnnounceQuestionPlain => "The assistant asks a question.", "Der Assistent hat eine Rückfrage.";
    AnnounceApproval => "Approval needed: {}", "Freigabe nötig: {}";
    ChooseAnswer => "Choose an answer", "Bitte eine Antwort wählen";
    FreeTextHint => "Or write your own answer below.", "Oder schreibe unten eine eigene Antwort.";
    FreeTextPlaceholder => "Write your own answer…", "Eigene Antwort schreiben…";
    FormSubmit => "Send answer", "Antwort senden";
    Decline => "Decline", "Ablehnen";
    Declined => "(declined)", "(abgelehnt)";
    AskedBy => "Asked by", "Gefragt von";
    // MCP links (URL-mode elicitation)
    McpLinkAsks => "{} asks you to open a page on", "{} bittet dich, eine Seite zu öffnen auf";
    McpLinkOpen => "Open", "Öffnen";
    McpLinkDone => "Done", "Erledigt";
    McpLinkCompleted => "The MCP server said the step at its link is done, so the assistant carried on.", "Der MCP-Server hat gemeldet, dass der Schritt unter seinem Link erledigt ist, deshalb hat der Assistent weitergemacht.";
    McpLinkHint => "The page opens in a new tab. Come back and choose Done when you have finished there.", "Die Seite öffnet sich in einem neuen Tab. Komm zurück und wähle Erledigt, wenn du dort fertig bist.";
    ProposedBy => "from", "von";
    MessageEndsQuestion => "A message of your own ends the question.", "Eine eigene Nachricht beendet die Rückfrage.";
    InputUnsupported => "The chat cannot show this question.", "Diese Rückfrage kann der Chat nicht anzeigen.";
    Yes => "Yes", "Ja";
    No => "No", "Nein";
    Required => "required", "Pflichtfeld";
    // Approval card
    ApprovalPending => "Waiting for your approval", "Wartet auf deine Freigabe";
    ApprovalTitle => "Planned step", "Geplanter Schritt";
    ApprovalTitleMany => "Planned steps", "Geplante Schritte";
    ApprovalApply => "Apply", "Übernehmen";
    ApprovalCancel => "Cancel", "Abbrechen";
    ApprovalVariant => "Another variant", "Andere Variante";
    ApprovalSkip => "Skip", "Überspringen";
    ApprovalArguments => "Arguments", "Argumente";
    ApprovalWrites => "Changes content", "Ändert Inhalte";
    ApprovalReads => "Reads only", "Liest nur";
    // Approval card: open-world calls in a conversation with outside content
    ApprovalSendsOut => "This call can send text from this conversation to {}.", "Dieser Aufruf kann Text aus dieser Unterhaltung an {} senden.";
    ApprovalDetails => "Show technical details", "Technische Details anzeigen";
    PreviewCurrent => "Now", "Bisher";
    PreviewProposed => "Proposed", "Neu";
    PreviewEmpty => "(empty)", "(leer)";
    PreviewFailed => "No preview could be made, so this change cannot be applied yet:", "Es konnte keine Vorschau erstellt werden, deshalb lässt sich diese Änderung noch nicht übernehmen:";
    PreviewRetry => "Try the preview again", "Vorschau erneut versuchen";
    FieldTitle => "Title", "Titel";
    FieldDescription => "Meta description", "Meta-Beschreibung";
    FieldHeading => "Heading", "Überschrift";
    FieldHeadingLevel => "Heading level", "Überschriftenebene";
    FieldParagraph => "Paragraph", "Absatz";
    FieldLinkText => "Link text", "Linktext";
    FieldAltText => "Alt text", "Alternativtext";
    HandBackPreviewStale => "The page changed since this was proposed, so nothing was written. The preview shows its current state — check it and decide again.", "Die Seite hat sich seit diesem Vorschlag geändert, deshalb wurde nichts geschrieben. Die Vorschau zeigt den aktuellen Stand – bitte prüfen und erneut entscheiden.";
    HandBackPreviewFailed => "No preview of this change could be made, so nothing was written. Try the preview again later, or decline the change.", "Für diese Änderung konnte keine Vorschau erstellt werden, deshalb wurde nichts geschrieben. Bitte die Vorschau später erneut versuchen oder die Änderung ablehnen.";
    // Corrections (issue 39): respond instead, edit before approve, always allow
    ApprovalRespond => "Respond…", "Antworten…";
    ApprovalRespondLabel => "What should the assistant do instead?", "Was soll der Assistent stattdessen tun?";
    ApprovalRespondSend => "Decline and send", "Ablehnen und senden";
    ApprovalSentenceOptional => "A sentence for the assistant (optional)", "Ein Satz für den Assistenten (optional)";
    ApprovalEdit => "Edit", "Bearbeiten";
    ApprovalApplyEdited => "Apply edited", "Bearbeitet übernehmen";
    ApprovalEditJson => "Arguments (JSON)", "Argumente (JSON)";
    ApprovalEditText => "Proposed text", "Vorgeschlagener Text";
    ApprovalAlwaysHere => "Always allow {} in this conversation", "{} in dieser Unterhaltung immer erlauben";
    ApprovalAlwaysMine => "Always allow {} for me", "{} für mich immer erlauben";
    ApprovalAlwaysAsk => "Ask me each time", "Jedes Mal fragen";
    DecisionResponded => "Declined: {}", "Abgelehnt: {}";
    DecisionEdited => "Applied as edited", "Bearbeitet übernommen";
    DecisionAutoApproved => "Approved automatically: {} (always allowed)", "Automatisch übernommen: {} (immer erlaubt)";
    ErrorResponseEmpty => "Write a sentence for the assistant first.", "Bitte zuerst einen Satz für den Assistenten schreiben.";
    ErrorResponseTooLong => "The sentence is too long (at most 2,000 characters).", "Der Satz ist zu lang (höchstens 2.000 Zeichen).";
    ErrorEditInvalid => "The edited arguments do not fit the tool; nothing was changed.", "Die bearbeiteten Argumente passen nicht zum Werkzeug; es wurde nichts geändert.";
    EditFieldRequired => "This field is required.", "Dieses Feld ist erforderlich.";
    EditFieldType => "This must be {}.", "Hier wird {} erwartet.";
    EditFieldEnum => "Pick one of the offered values.", "Bitte einen der angebotenen Werte wählen.";
    EditFieldUnknown => "The tool does not take this field.", "Dieses Feld nimmt das Werkzeug nicht an.";
    EditFieldOther => "This value does not fit the tool: {}", "Dieser Wert passt nicht zum Werkzeug: {}";
    EditJsonUnreadable => "This is not a JSON object.", "Das ist kein JSON-Objekt.";
    HandBackEditInvalid => "The edited arguments no longer fit this step, so nothing was carried out. Edit again or decide as shown.", "Die bearbeiteten Argumente passen nicht mehr zu diesem Schritt, deshalb wurde nichts ausgeführt. Bitte erneut bearbeiten oder wie angezeigt entscheiden.";
    HandBackEditPreviewFailed => "No preview of the edited change could be made, so nothing was written. Check the edit and try again.", "Für die bearbeitete Änderung konnte keine Vorschau erstellt werden, deshalb wurde nichts geschrieben. Bitte die Bearbeitung prüfen und erneut versuchen.";
    PoliciesTitle => "Always allowed", "Immer erlaubt";
    PoliciesNone => "You have not always allowed any tool.", "Du hast noch kein Werkzeug immer erlaubt.";
    PolicyEverywhere => "in all my conversations", "in allen meinen Unterhaltungen";
    PolicyInConversation => "in “{}”", "in „{}“";
    PolicyRevoke => "Revoke", "Widerrufen";
    PolicyFourEyes => "Your changes wait for a second person, so a tool that changes content cannot be always allowed for you.", "Deine Änderungen warten auf eine zweite Person, deshalb lässt sich ein Werkzeug, das Inhalte ändert, für dich nicht immer erlauben.";
    PolicyNotPermitted => "An admin has not permitted always allowing this tool for yourself.", "Eine Administration hat nicht erlaubt, dieses Werkzeug für dich selbst immer zu erlauben.";
    PolicyPermitTitle => "“Always for me”", "„Für mich immer“";
    PolicyPermit => "Let users always allow it for themselves", "Nutzern erlauben, es für sich immer zu erlauben";
    PolicyPermitted => "Users may always allow it for themselves", "Nutzer dürfen es für sich immer erlauben";
    PolicyWithdraw => "Withdraw", "Zurücknehmen";
    // Always allow, permitted per tool on the tools page (issue 39 gaps)
    PolicyPermitNeverWaits => "This tool never waits for a card, so there is nothing to always allow. Nothing was changed.", "Dieses Werkzeug wartet nie auf eine Karte, deshalb gibt es nichts immer zu erlauben. Es wurde nichts geändert.";
    RunExpired => "This step waited too long without a decision and was cancelled. Nothing was carried out.", "Dieser Schritt hat zu lange auf eine Entscheidung gewartet und wurde abgebrochen. Es wurde nichts ausgeführt.";
    NoteDecidedElsewhere => "Carried on after a decision in the runs inbox:", "Nach einer Entscheidung in den wartenden Läufen fortgesetzt:";
    // On record (issue 39): the audit log, dismissing from the runs inbox
    NoteDismissed => "Dismissed from the runs inbox by {}.", "Aus den wartenden Läufen verworfen von {}.";
    InboxDismiss => "Dismiss", "Verwerfen";
    InboxDismissTitle => "Cancel this run without deciding it; a line in its conversation says so.", "Diesen Lauf ohne Entscheidung abbrechen; eine Zeile in seiner Unterhaltung sagt das.";
    ErrorNothingToDismiss => "This run no longer waits: it was decided, dismissed or expired in the meantime. Nothing was changed.", "Dieser Lauf wartet nicht mehr: Er wurde inzwischen entschieden, verworfen oder ist abgelaufen. Es wurde nichts geändert.";
    ErrorAuditDate => "A date must be written as YYYY-MM-DD.", "Ein Datum bitte als JJJJ-MM-TT angeben.";
    NavAudit => "Audit log", "Protokoll";
    AuditTitle => "Audit log", "Protokoll";
    AuditLeadAdmin => "Every question and card a run waited on, and what became of it: who answered or decided, when, from where, with which arguments. Entries are never changed or removed, also when their conversation is deleted.", "Jede Rückfrage und Karte, auf die ein Lauf gewartet hat, und was daraus wurde: wer wann und wo geantwortet oder entschieden hat, mit welchen Argumenten. Einträge werden nie geändert oder entfernt, auch nicht mit ihrer Unterhaltung.";
    AuditLeadOwn => "What happened to the questions and cards of your conversations: who answered or decided, when, from where, with which arguments. Entries are never changed or removed.", "Was aus den Rückfragen und Karten deiner Unterhaltungen wurde: wer wann und wo geantwortet oder entschieden hat, mit welchen Argumenten. Einträge werden nie geändert oder entfernt.";
    AuditUser => "User", "Person";
    AuditTool => "Tool", "Werkzeug";
    AuditFrom => "From", "Von";
    AuditUntil => "To", "Bis";
    AuditFilter => "Filter", "Filtern";
    AuditClear => "Clear", "Zurücksetzen";
    AuditExportCsv => "Export CSV", "Als CSV exportieren";
    AuditExportJson => "Export JSON", "Als JSON exportieren";
    AuditEmpty => "No entries.", "Keine Einträge.";
    AuditNewer => "Newer", "Neuere";
    AuditOlder => "Older", "Ältere";
    AuditWhen => "When", "Wann";
    AuditAction => "What", "Was";
    AuditWho => "Who", "Wer";
    AuditConversation => "Conversation", "Unterhaltung";
    AuditSurface => "Where", "Wo";
    AuditDetails => "Details", "Einzelheiten";
    AuditSystem => "System", "System";
    AuditOwner => "Owner", "Besitzer";
    AuditArguments => "Arguments as proposed", "Argumente wie vorgeschlagen";
    AuditArgumentsRun => "Arguments as run", "Argumente wie ausgeführt";
    AuditPreview => "Change shown", "Gezeigte Änderung";
    AuditAnswer => "Answer", "Antwort";
    AuditReason => "Reason", "Grund";
    AuditWaiting => "Waiting", "Wartet";
    AuditAnswered => "Answered", "Beantwortet";
    AuditApproved => "Approved", "Freigegeben";
    AuditApprovedEdited => "Approved as edited", "Bearbeitet freigegeben";
    AuditDenied => "Denied", "Abgelehnt";
    AuditAutoApproved => "Approved automatically", "Automatisch freigegeben";
    AuditExpired => "Expired", "Abgelaufen";
    AuditCancelled => "Cancelled", "Abgebrochen";
    AuditDismissed => "Dismissed", "Verworfen";
    AuditFailed => "Failed", "Fehlgeschlagen";
    // The audit's row for a question its tool took back (issue 39 gaps)
    AuditWithdrawn => "Withdrawn by the tool", "Vom Werkzeug zurückgezogen";
    AuditSurfaceChat => "Chat", "Chat";
    AuditSurfaceInbox => "Runs inbox", "Wartende Läufe";
    AuditSurfaceApi => "API", "API";
    AuditSurfaceWorker => "Worker", "Hintergrund";
    NoteElsewhereFailed => "A run decided in the runs inbox could not be finished.", "Ein in den wartenden Läufen entschiedener Lauf konnte nicht abgeschlossen werden.";
    Minute => "minute", "Minute";
    Minutes => "minutes", "Minuten";
    Hour => "hour", "Stunde";
    Hours => "hours", "Stunden";
    Day => "day", "Tag";
    Days => "days", "Tagen";
    ApprovalToolGone => "The tool for this call is no longer registered.", "Das Werkzeug für diesen Aufruf ist nicht mehr registriert.";
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
    fn a_text_crosses_the_wire_by_its_name() {
        for text in Text::ALL {
            let json = serde_json::to_string(text).unwrap();
            assert_eq!(json, format!("\"{text:?}\""));
            assert_eq!(serde_json::from_str::<Text>(&json).unwrap(), *text);
        }
        assert_eq!(serde_json::to_string(&Text::ErrorEmptyMessage).unwrap(), "\"ErrorEmptyMessage\"");
        let unknown = serde_json::from_str::<Text>("\"NoSuchText\"").unwrap_err();
        assert!(unknown.to_string().contains("unknown variant `NoSuchText`"), "{unknown}");
        assert!(serde_json::from_str::<Text>("3").is_err());
    }

    // issue 40: the packed strings give each text whole, first, in between and last.
    #[test]
    fn each_text_reads_back_whole_from_its_packed_string() {
        assert_eq!((Lang::En.t(Text::AppName), Lang::De.t(Text::AppName)), ("Tourguide", "Tourguide"));
        assert_eq!((Lang::En.t(Text::SignIn), Lang::De.t(Text::SignIn)), ("Sign in", "Anmelden"));
        assert_eq!(Lang::De.t(Text::WaitingMany), "{} Läufe warten auf dich");
        assert_eq!(Text::ALL[0].name(), "AppName");
        for packed in [Packed::<TEXTS>::EN, Packed::<TEXTS>::DE, Packed::<TEXTS>::NAMES] {
            assert_eq!(packed.ends[TEXTS - 1] as usize, packed.all.len());
        }
        let last = *Text::ALL.last().unwrap();
        assert!(Packed::<TEXTS>::DE.all.ends_with(Lang::De.t(last)) && !Lang::De.t(last).is_empty());
    }

    #[test]
    fn every_text_exists_in_both_languages() {
        for text in Text::ALL {
            assert!(!Lang::En.t(*text).is_empty(), "{text:?}");
            assert!(!Lang::De.t(*text).is_empty(), "{text:?}");
        }
    }
}
