pub mod chat;
pub mod content;
pub mod header;
pub mod login;
pub mod tools;
