//! Story tests over real HTTP on 127.0.0.1 against a real database: a SQLite file, or, when
//! `TOURGUIDE_TEST_POSTGRES` names a server (`scripts/test` runs the suite both ways), a fresh
//! PostgreSQL database per test.

mod accounts;
mod assets;
mod attachments;
mod audit;
mod chat;
mod corrections;
mod crash;
mod decisions;
mod edit;
mod errors;
mod events;
mod four_processes;
mod harness;
mod inbox;
mod mail;
mod mcp;
mod mcp_links;
mod mcp_oauth;
mod mcp_restart;
mod mcp_workers;
mod metrics;
mod model_errors;
mod outside;
mod page_head;
mod plans;
mod previews;
mod processes;
mod questions;
mod round_trips;
mod scale;
mod scripted;
mod security;
mod sign_in;
mod startup;
mod streaming;
mod tour;
mod waiting_count;
mod webhooks;
