//! Story tests over real HTTP on 127.0.0.1 against a real SQLite file.

mod chat;
mod crash;
mod decisions;
mod events;
mod harness;
mod questions;
mod scripted;
mod security;
mod startup;
mod tour;
