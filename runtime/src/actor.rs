//! Who acts on a run: the session's user. Runs are owned by one, tools are called for one, and
//! every decision is authorised against one.

use serde::{Deserialize, Serialize};

/// Who acts: the session's user. The runtime authorises every decision against it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Actor {
    pub user_id: i64,
    pub admin: bool,
}

impl Actor {
    pub fn user(user_id: i64) -> Self {
        Actor { user_id, admin: false }
    }

    pub fn admin(user_id: i64) -> Self {
        Actor { user_id, admin: true }
    }
}
