//! The measurements, each writing its part of the report: one module per family of scenarios,
//! `shared` holding the loads' sizes and the conversations several of them run on.

mod answers;
mod dom;
mod first_load;
mod growth;
mod memory;
mod outbox;
mod polls;
mod postgres;
mod round_trips;
mod shared;
mod ssr;
mod streaming;

pub use answers::{answer_throughput, answer_to_continuation};
pub use dom::browser;
pub use first_load::first_load;
pub use growth::growth;
pub use memory::{memory_and_event_streams, PURGE_NOW};
pub use outbox::outbox_cost;
pub use polls::poll_throughput;
pub use postgres::{postgres_side_by_side, Sqlite};
pub use round_trips::round_trips;
pub use shared::{LONG_CONVERSATION, POLLED_HISTORY, REFERENCE_ANSWERS};
pub use ssr::ssr_of_a_long_conversation;
pub use streaming::streaming;
