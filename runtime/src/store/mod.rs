//! All SQL of the runtime, and the migrations of its tables. Kept in this one module so the
//! runtime's schema has one owner, whichever database is behind the handle.
//!
//! Every status change is a single conditional UPDATE naming the status it expects (and, on paths
//! owned by an executing segment, the segment's claim token). "One row affected" decides who won.
//!
//! Split by concern: [`records`] (the rows as types), [`reads`], [`transitions`] (the status
//! changes of a run's life), [`leases`] (what an executing segment writes while it owns its run),
//! [`cancels`], [`reaping`] (runs whose worker is gone), [`events`] and [`configurations`].

use db::{Db, Migrations};

/// The migrations of the runtime's tables: runs, their events, and configurations.
pub fn migrations() -> Migrations {
    Migrations::new(sqlx::migrate!("../migrations/sqlite/runtime"), sqlx::migrate!("../migrations/postgres/runtime"))
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("a stored value cannot be read: {0}")]
    Corrupt(String),
}

/// Every column of a run, in `records::RunRow`'s order, with `$checkpoint` in the transcript's
/// place: the one list each read and `RETURNING` names.
#[macro_export]
macro_rules! run_columns_with {
    ($checkpoint:literal) => {
        concat!(
            "id, status, owner_user_id, owner_admin, configuration, process, allowed_tools, max_rounds, ",
            $checkpoint,
            ", suspended_state, claimed_by, requeue_count, pending_effect, rounds, truncated, termination_reason, \
             answer, created_at, started_at, finished_at, updated_at, outside_content"
        )
    };
}

/// Every column of a run.
#[macro_export]
macro_rules! run_columns {
    () => {
        $crate::run_columns_with!("checkpoint")
    };
}

/// [`run_columns`] without the transcript (`checkpoint` reads as NULL): what a view of the run
/// and its pause needs. The transcript grows with the conversation; a view read on every answer
/// and every inbox look would otherwise carry all of it to be thrown away.
#[macro_export]
macro_rules! run_view_columns {
    () => {
        $crate::run_columns_with!("CAST(NULL AS TEXT) AS checkpoint")
    };
}

/// The run whose id is the SQL expression `$id` as one JSON object (`NULL` if there is none),
/// without its transcript, for a store that reads a run beside its own rows in one statement on
/// PostgreSQL; [`crate::Runtime::status_from_json`] reads it.
#[macro_export]
macro_rules! pg_run_json {
    ($id:literal) => {
        concat!(
            "(SELECT row_to_json(r) FROM (SELECT ",
            $crate::run_view_columns!(),
            " FROM runs WHERE id = ",
            $id,
            ") r)"
        )
    };
}

mod cancels;
mod configurations;
mod events;
mod leases;
mod reads;
mod reaping;
mod records;
mod transitions;

pub(crate) use events::NewEvent;
pub(crate) use records::{record_from_json, NewRun, RunRecord, Settle};

#[derive(Clone, Debug)]
pub(crate) struct Store {
    db: Db,
}

fn won(rows_affected: u64) -> bool {
    rows_affected == 1
}

impl Store {
    pub fn new(db: Db) -> Self {
        Store { db }
    }
}
