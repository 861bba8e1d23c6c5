//! Integration tests of the runtime against a real SQLite file.

mod asks;
mod corrections;
mod flows;
mod openai;
mod outside;
mod previews;
mod races;
mod reaper;
mod refusals;
mod restart;
mod streams;
mod support;
