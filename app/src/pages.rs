pub mod chat;
pub mod login;
