pub mod approval_card;
pub mod chat_panel;
pub mod html_line;
pub mod reply_options;
