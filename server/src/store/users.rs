//! Accounts and their sessions: who may sign in, their role, and whether they may approve their
//! own changes (four-eyes).

use db::{now, on, on_read, Backend};

use super::{Store, StoreError};
use crate::names;

/// A session's user (`users.SessionUser`), read beside a session `s` joined to its user `u`.
macro_rules! session_user_columns {
    () => {
        "u.id AS account_id, u.username, u.language, u.role, u.may_approve_own"
    };
}
pub(super) use session_user_columns;

/// What an account may do beyond its own conversations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Manages accounts, and reviews (approves) other users' changes.
    Admin,
    /// Works in their own conversations.
    Editor,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Editor => "editor",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "admin" => Some(Role::Admin),
            "editor" => Some(Role::Editor),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct UserRow {
    pub id: i64,
    pub username: String,
    pub password_hash: String,
    pub language: Option<String>,
    role: String,
    pub may_approve_own: bool,
}

/// The signed-in user as a session shows them: what a request needs, not the password hash.
/// Read with `session_user_columns!`: `account_id` names the user's id beside a conversation's.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SessionUser {
    #[sqlx(rename = "account_id")]
    pub id: i64,
    pub username: String,
    pub language: Option<String>,
    role: String,
    pub may_approve_own: bool,
}

/// A role this build does not know grants nothing beyond an editor's.
fn granted_role(stored: &str) -> Role {
    Role::parse(stored).unwrap_or(Role::Editor)
}

impl SessionUser {
    pub fn role(&self) -> Role {
        granted_role(&self.role)
    }

    /// The user from a row read on the calling thread (`db::Here`), by the names
    /// `session_user_columns!` gives, as the derived `FromRow` reads them from sqlx's rows.
    pub(crate) fn from_here(row: &db::rusqlite::Row<'_>) -> db::rusqlite::Result<SessionUser> {
        Ok(SessionUser {
            id: row.get("account_id")?,
            username: row.get("username")?,
            language: row.get("language")?,
            role: row.get("role")?,
            may_approve_own: row.get("may_approve_own")?,
        })
    }
}

impl UserRow {
    pub fn role(&self) -> Role {
        granted_role(&self.role)
    }

    /// Four-eyes: without this a reviewer decides the account's changes (as
    /// `CurrentUser::approves_own_changes` says for the signed-in user, made from these fields).
    pub fn approves_own_changes(&self) -> bool {
        self.role() == Role::Admin || self.may_approve_own
    }
}

impl Store {
    pub async fn count_users(&self) -> Result<i64, StoreError> {
        Ok(on_read!(&self.db, pool => sqlx::query_scalar("SELECT COUNT(*) FROM users").fetch_one(pool).await)?)
    }

    /// An editor who may approve their own changes, as every account could before roles.
    pub async fn create_user(&self, username: &str, password_hash: &str) -> Result<i64, StoreError> {
        self.add_user(username, password_hash, Role::Editor, true).await
    }

    /// `StoreError::NameTaken` when an account has the name or one with the same key; the
    /// unique index decides, so two adding one name at once add it once.
    pub async fn add_user(
        &self,
        username: &str,
        password_hash: &str,
        role: Role,
        may_approve_own: bool,
    ) -> Result<i64, StoreError> {
        // SQLite would give a removed newest account's id to the next one (a rowid is the highest
        // plus one), and with it the audit log's rows that name it: there an account takes the
        // highest id ever given plus one (`user_ids`). PostgreSQL's identity never repeats one.
        let sql = match self.db.backend() {
            Backend::Postgres => {
                "INSERT INTO users (username, name_key, password_hash, role, may_approve_own, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6) RETURNING id"
            }
            Backend::Sqlite => {
                "INSERT INTO users (id, username, name_key, password_hash, role, may_approve_own, created_at)
                 SELECT highest + 1, $1, $2, $3, $4, $5, $6 FROM user_ids RETURNING id"
            }
        };
        let added = on!(&self.db, pool => sqlx::query_scalar(sql)
        .bind(username)
        .bind(names::key(username))
        .bind(password_hash)
        .bind(role.as_str())
        .bind(may_approve_own)
        .bind(now())
        .fetch_one(pool)
        .await);
        match added {
            Ok(id) => Ok(id),
            Err(sqlx::Error::Database(error)) if error.is_unique_violation() => Err(StoreError::NameTaken),
            Err(error) => Err(error.into()),
        }
    }

    /// Creates the user only while there is none; false when another process was first.
    pub async fn create_first_user(&self, username: &str, password_hash: &str) -> Result<bool, StoreError> {
        // The id as in `add_user`.
        let sql = match self.db.backend() {
            Backend::Postgres => {
                "INSERT INTO users (username, name_key, password_hash, role, may_approve_own, created_at)
                 SELECT $1, $2, $3, 'admin', $4, $5 WHERE NOT EXISTS (SELECT 1 FROM users)"
            }
            Backend::Sqlite => {
                "INSERT INTO users (id, username, name_key, password_hash, role, may_approve_own, created_at)
                 SELECT highest + 1, $1, $2, $3, 'admin', $4, $5 FROM user_ids WHERE NOT EXISTS (SELECT 1 FROM users)"
            }
        };
        let created = on!(&self.db, pool => sqlx::query(sql)
        .bind(username)
        .bind(names::key(username))
        .bind(password_hash)
        .bind(true)
        .bind(now())
        .execute(pool)
        .await
        .map(|done| done.rows_affected()));
        match created {
            Ok(rows) => Ok(rows == 1),
            Err(sqlx::Error::Database(error)) if error.is_unique_violation() => Ok(false),
            Err(error) => Err(error.into()),
        }
    }

    pub async fn user_by_id(&self, id: i64) -> Result<Option<UserRow>, StoreError> {
        Ok(on_read!(&self.db, pool => sqlx::query_as(
            "SELECT id, username, password_hash, language, role, may_approve_own FROM users WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(pool)
        .await)?)
    }

    /// The account a name means: by its key (`names::key`: `BOB` finds `bob`), or by the exact
    /// name, which wins, for an account from before keys whose key another one had already.
    pub async fn user_by_name(&self, username: &str) -> Result<Option<UserRow>, StoreError> {
        Ok(on_read!(&self.db, pool => sqlx::query_as(
            "SELECT id, username, password_hash, language, role, may_approve_own FROM users
             WHERE name_key = $1 OR username = $2
             ORDER BY CASE WHEN username = $2 THEN 0 ELSE 1 END LIMIT 1",
        )
        .bind(names::key(username))
        .bind(username)
        .fetch_optional(pool)
        .await)?)
    }

    /// Gives each account from before name keys its key, once per database (a start finds none
    /// left). Two such accounts whose names have one key (`Bob` and `bob`) cannot both have it:
    /// the older one gets it, the newer keeps none and signs in by its exact name, and the
    /// operator is told. Returns the names left without a key.
    pub async fn fill_name_keys(&self) -> Result<Vec<String>, StoreError> {
        let missing: Vec<(i64, String)> = on_read!(&self.db, pool => sqlx::query_as(
            "SELECT id, username FROM users WHERE name_key IS NULL ORDER BY id",
        )
        .fetch_all(pool)
        .await)?;
        let mut left = Vec::new();
        for (id, username) in missing {
            let filled = on!(&self.db, pool => sqlx::query(
                "UPDATE users SET name_key = $1 WHERE id = $2 AND name_key IS NULL",
            )
            .bind(names::key(&username))
            .bind(id)
            .execute(pool)
            .await
            .map(|done| done.rows_affected()));
            match filled {
                Ok(_) => {}
                Err(sqlx::Error::Database(error)) if error.is_unique_violation() => left.push(username),
                Err(error) => return Err(error.into()),
            }
        }
        Ok(left)
    }

    /// The account a device cookie's token (hashed) was given to, while it lasts.
    pub async fn device_owner(&self, token_hash: &str) -> Result<Option<i64>, StoreError> {
        Ok(on_read!(&self.db, pool => sqlx::query_scalar(
            "SELECT user_id FROM devices WHERE token_hash = $1 AND expires_at > $2",
        )
        .bind(token_hash)
        .bind(now())
        .fetch_optional(pool)
        .await)?)
    }

    /// Records a browser the user signed in from; `replaces` is the device token it had, which
    /// stops counting, so a copy of an old cookie is worth nothing once its browser signed in
    /// again. A user keeps their newest `MAX_DEVICES` devices.
    pub async fn add_device(
        &self,
        token_hash: &str,
        user_id: i64,
        expires_at: i64,
        replaces: Option<&str>,
    ) -> Result<(), StoreError> {
        let now = now();
        if let Some(old) = replaces {
            on!(&self.db, pool => sqlx::query("DELETE FROM devices WHERE token_hash = $1 AND user_id = $2")
                .bind(old)
                .bind(user_id)
                .execute(pool)
                .await
                .map(|done| done.rows_affected()))?;
        }
        on!(&self.db, pool => sqlx::query(
            "INSERT INTO devices (token_hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)",
        )
        .bind(token_hash)
        .bind(user_id)
        .bind(now)
        .bind(expires_at)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        on!(&self.db, pool => sqlx::query(
            "DELETE FROM devices WHERE user_id = $1 AND (expires_at <= $2 OR token_hash NOT IN
                 (SELECT token_hash FROM devices WHERE user_id = $1 ORDER BY created_at DESC, token_hash LIMIT $3))",
        )
        .bind(user_id)
        .bind(now)
        .bind(MAX_DEVICES)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(())
    }

    pub async fn create_session(
        &self,
        token_hash: &str,
        user_id: i64,
        expires_at: i64,
        user_agent: Option<&str>,
    ) -> Result<(), StoreError> {
        on!(&self.db, pool => sqlx::query(
            "INSERT INTO sessions (token_hash, user_id, expires_at, created_at, user_agent) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(token_hash)
        .bind(user_id)
        .bind(expires_at)
        .bind(now())
        .bind(user_agent)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(())
    }

    /// The user's sessions that have not expired, the newest first. Each is named by the start of
    /// its token's hash: enough to tell them apart, nothing a cookie could be made from.
    pub async fn sessions_of(&self, user_id: i64) -> Result<Vec<SessionRow>, StoreError> {
        let rows: Vec<(String, i64, i64, Option<String>)> = on_read!(&self.db, pool => sqlx::query_as(
            "SELECT token_hash, created_at, expires_at, user_agent FROM sessions
             WHERE user_id = $1 AND expires_at > $2 ORDER BY created_at DESC, token_hash",
        )
        .bind(user_id)
        .bind(now())
        .fetch_all(pool)
        .await)?;
        Ok(rows
            .into_iter()
            .map(|(hash, created_at, expires_at, user_agent)| SessionRow {
                handle: session_handle(&hash).to_string(),
                created_at,
                expires_at,
                user_agent,
            })
            .collect())
    }

    /// Ends one of the user's sessions, named by its handle; false if they have none of that name.
    pub async fn end_session(&self, user_id: i64, handle: &str) -> Result<bool, StoreError> {
        if handle.len() != HANDLE_CHARS || !handle.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            return Ok(false);
        }
        let ended = on!(&self.db, pool => sqlx::query(
            "DELETE FROM sessions WHERE user_id = $1 AND substr(token_hash, 1, 16) = $2",
        )
        .bind(user_id)
        .bind(handle)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(ended > 0)
    }

    /// Ends every session of the user but this one.
    pub async fn end_other_sessions(&self, user_id: i64, keep_hash: &str) -> Result<u64, StoreError> {
        Ok(on!(&self.db, pool => sqlx::query("DELETE FROM sessions WHERE user_id = $1 AND token_hash <> $2")
            .bind(user_id)
            .bind(keep_hash)
            .execute(pool)
            .await
            .map(|done| done.rows_affected()))?)
    }

    pub async fn user_for_session(&self, token_hash: &str) -> Result<Option<SessionUser>, StoreError> {
        Ok(on_read!(&self.db, pool => sqlx::query_as(concat!(
            "SELECT ",
            session_user_columns!(),
            " FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = $1 AND s.expires_at > $2"
        ))
        .bind(token_hash)
        .bind(now())
        .fetch_optional(pool)
        .await)?)
    }

    pub async fn set_language(&self, user_id: i64, language: Option<&str>) -> Result<(), StoreError> {
        on!(&self.db, pool => sqlx::query("UPDATE users SET language = $1 WHERE id = $2")
            .bind(language)
            .bind(user_id)
            .execute(pool)
            .await
            .map(|done| done.rows_affected()))?;
        Ok(())
    }

    /// Ends one session; whose it was, if it was one.
    pub async fn delete_session(&self, token_hash: &str) -> Result<Option<i64>, StoreError> {
        Ok(on!(&self.db, pool => sqlx::query_scalar("DELETE FROM sessions WHERE token_hash = $1 RETURNING user_id")
            .bind(token_hash)
            .fetch_optional(pool)
            .await)?)
    }

    /// Whether the session `token_hash` of `user_id` is still open (an event stream lives as long).
    pub async fn session_open(&self, token_hash: &str, user_id: i64) -> Result<bool, StoreError> {
        let open: i64 = on_read!(&self.db, pool => sqlx::query_scalar(
            "SELECT COUNT(*) FROM sessions WHERE token_hash = $1 AND user_id = $2 AND expires_at > $3",
        )
        .bind(token_hash)
        .bind(user_id)
        .bind(now())
        .fetch_one(pool)
        .await)?;
        Ok(open > 0)
    }

    /// Every account, with how many sessions it has open.
    pub async fn users(&self) -> Result<Vec<UserSummary>, StoreError> {
        let rows: Vec<(i64, String, String, bool, i64)> = on_read!(&self.db, pool => sqlx::query_as(
            "SELECT u.id, u.username, u.role, u.may_approve_own,
                    (SELECT COUNT(*) FROM sessions s WHERE s.user_id = u.id AND s.expires_at > $1)
             FROM users u ORDER BY u.username",
        )
        .bind(now())
        .fetch_all(pool)
        .await)?;
        Ok(rows
            .into_iter()
            .map(|(id, username, role, may_approve_own, sessions)| UserSummary {
                id,
                username,
                role: granted_role(&role),
                may_approve_own,
                sessions,
            })
            .collect())
    }

    /// A new password; every session of the account ends with the old one.
    pub async fn set_password(&self, user_id: i64, password_hash: &str) -> Result<bool, StoreError> {
        let changed = on!(&self.db, pool => sqlx::query("UPDATE users SET password_hash = $1 WHERE id = $2")
            .bind(password_hash)
            .bind(user_id)
            .execute(pool)
            .await
            .map(|done| done.rows_affected()))?;
        self.end_sessions(user_id).await?;
        // A device cookie vouched for a browser that knew the old password: it no longer does
        // (the per-device sign-in limit would otherwise outlast the change or a lock).
        on!(&self.db, pool => sqlx::query("DELETE FROM devices WHERE user_id = $1")
            .bind(user_id)
            .execute(pool)
            .await
            .map(|done| done.rows_affected()))?;
        Ok(changed == 1)
    }

    pub async fn set_role(&self, user_id: i64, role: Role, may_approve_own: bool) -> Result<bool, StoreError> {
        let changed = on!(&self.db, pool => sqlx::query("UPDATE users SET role = $1, may_approve_own = $2 WHERE id = $3")
            .bind(role.as_str())
            .bind(may_approve_own)
            .bind(user_id)
            .execute(pool)
            .await
            .map(|done| done.rows_affected()))?;
        Ok(changed == 1)
    }

    pub async fn end_sessions(&self, user_id: i64) -> Result<u64, StoreError> {
        Ok(on!(&self.db, pool => sqlx::query("DELETE FROM sessions WHERE user_id = $1")
            .bind(user_id)
            .execute(pool)
            .await
            .map(|done| done.rows_affected()))?)
    }

    /// The account and everything it owns (its conversations go with it).
    pub async fn delete_user(&self, user_id: i64) -> Result<bool, StoreError> {
        let deleted = on!(&self.db, pool => sqlx::query("DELETE FROM users WHERE id = $1")
            .bind(user_id)
            .execute(pool)
            .await
            .map(|done| done.rows_affected()))?;
        Ok(deleted == 1)
    }

    /// The account stays with its conversations, but no password opens it any more.
    pub async fn lock_user(&self, user_id: i64) -> Result<bool, StoreError> {
        self.set_password(user_id, LOCKED).await
    }

    /// A consistent copy of the SQLite database while others read and write it (`VACUUM INTO`).
    pub async fn backup_into(&self, file: &std::path::Path) -> Result<(), StoreError> {
        let db::Db::Sqlite(db::Sqlite { write: pool, .. }) = &self.db else {
            return Err(StoreError::Corrupt("a backup copies a SQLite database".into()));
        };
        sqlx::query("VACUUM INTO $1").bind(file.display().to_string()).execute(pool).await?;
        Ok(())
    }
}

const HANDLE_CHARS: usize = 16;

/// Device cookies kept per user: the browsers they sign in from, with room for a few cleared
/// cookie jars.
const MAX_DEVICES: i64 = 20;

/// How a session is named to its user: the start of its token's hash.
pub fn session_handle(token_hash: &str) -> &str {
    token_hash.get(..HANDLE_CHARS).unwrap_or(token_hash)
}

/// A session as its user sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRow {
    pub handle: String,
    pub created_at: i64,
    pub expires_at: i64,
    pub user_agent: Option<String>,
}

/// Not an argon2 hash: no password verifies against it.
const LOCKED: &str = "!locked";

/// An account as the operator and the admin page list it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserSummary {
    pub id: i64,
    pub username: String,
    pub role: Role,
    pub may_approve_own: bool,
    /// Sessions that have not expired.
    pub sessions: i64,
}
