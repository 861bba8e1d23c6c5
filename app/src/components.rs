pub mod approval_card;
pub mod chat_panel;
pub mod html_line;
pub mod mail;
pub mod policies;
pub mod reply_options;
pub mod waiting;
