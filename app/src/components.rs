pub mod approval_card;
pub mod chat_panel;
pub mod reply_options;
