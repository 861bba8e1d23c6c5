//! Story tests over real HTTP on 127.0.0.1 against a real SQLite file.

mod decisions;
mod events;
mod harness;
mod questions;
mod scripted;
mod chat;
mod crash;
mod security;
mod startup;
mod tour;
