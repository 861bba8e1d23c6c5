pub mod account;
pub mod admin;
pub mod chat;
pub mod content;
pub mod header;
pub mod inbox;
pub mod login;
pub mod tools;
