//! Questions an MCP server asks over a live connection (`elicitation/create` during a call). The
//! call stays open while the question waits, here, in memory: that is all the older form of the
//! protocol allows. A watcher ends the wait when the time limit passes or the call ends on its own
//! (the server gave up or went away); the question is then withdrawn and the run told so.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolResponse, ElicitResult, ElicitationAction};
use rmcp::service::ServiceError;
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::task::JoinHandle;

use crate::result_text::text_of_response;
use crate::server::Server;
use crate::session::{LiveAsk, Session};

pub(crate) type CallResult = Result<CallToolResponse, ServiceError>;

/// A call whose question waits for the user.
pub(crate) struct LiveCall {
    pub call: JoinHandle<CallResult>,
    /// Fired when the call ends, answered or not.
    pub done: Arc<Notify>,
    pub asks: mpsc::UnboundedReceiver<LiveAsk>,
    /// Where the answer to the waiting question goes.
    pub reply: oneshot::Sender<ElicitResult>,
    pub session: Session,
    pub server: Arc<Server>,
    /// A link to open (URL mode): set once the server says the step there is done, which
    /// answers the question as the reader's "Done" would.
    pub link: Option<Arc<AtomicBool>>,
}

impl LiveCall {
    /// Ends the call without an answer: the server hears `action`, and the call finishes in the
    /// background (its connection goes back to the pool if it survives).
    pub fn let_go(self, action: ElicitationAction) {
        let _ = self.reply.send(ElicitResult::new(action));
        let LiveCall { call, session, server, .. } = self;
        tokio::spawn(async move {
            if let Ok(Ok(_)) = call.await {
                server.give_back(session);
            }
        });
    }
}

/// Why a link's question ends without the reader: the runtime withdraws it with this, and the
/// call goes on as after "Done".
pub const LINK_COMPLETED: &str = "the MCP server says the step at its link is done";

/// Why a live question ended without an answer.
enum Ended {
    TimedOut,
    /// The call came back without the answer; its result, as the model would read it.
    Finished(String),
}

pub(crate) struct LiveCalls {
    /// This process's calls carry this; a question of another process is not ours to answer.
    pub instance: String,
    /// On SQLite one worker runs per database: the questions of processes before this one are
    /// gone with them.
    pub others_gone: AtomicBool,
    /// The worker processes that beat lately (every worker's own sweep says so); `None` until
    /// told. A question held by a process not among them can no longer be answered.
    alive: Mutex<Option<HashSet<String>>>,
    /// Workers known to have stopped (the queue handed this process a job one of them held),
    /// whether or not this process has read the heartbeats yet. A worker never comes back under
    /// its name: each start takes a new one.
    stopped: Mutex<HashSet<String>>,
    timeout: Duration,
    calls: Mutex<HashMap<String, LiveCall>>,
    ended: Mutex<HashMap<String, Ended>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl LiveCalls {
    pub fn new(timeout: Duration) -> LiveCalls {
        LiveCalls {
            instance: uuid::Uuid::new_v4().to_string(),
            others_gone: AtomicBool::new(false),
            alive: Mutex::default(),
            stopped: Mutex::default(),
            timeout,
            calls: Mutex::default(),
            ended: Mutex::default(),
        }
    }

    /// Keeps the call open while its question waits; returns the question's id and the Unix
    /// second after which it is no longer answered.
    pub fn park(self: &Arc<Self>, call: LiveCall) -> (String, i64) {
        let id = uuid::Uuid::new_v4().to_string();
        let done = call.done.clone();
        lock(&self.calls).insert(id.clone(), call);
        let until = unix_now().saturating_add(i64::try_from(self.timeout.as_secs()).unwrap_or(i64::MAX));
        let calls = self.clone();
        let watched = id.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = tokio::time::sleep(calls.timeout) => {
                    if let Some(call) = calls.take(&watched) {
                        tracing::info!(question = %watched, "an MCP question was not answered in time; cancelled");
                        lock(&calls.ended).insert(watched, Ended::TimedOut);
                        call.let_go(ElicitationAction::Cancel);
                    }
                }
                () = done.notified() => {
                    if let Some(call) = calls.take(&watched) {
                        let LiveCall { call: joined, session, server, .. } = call;
                        let text = match joined.await {
                            Ok(Ok(response)) => {
                                server.give_back(session);
                                text_of_response(&response)
                            }
                            Ok(Err(error)) => format!("the call failed: {error}"),
                            Err(error) => format!("the call failed: {error}"),
                        };
                        lock(&calls.ended).insert(watched, Ended::Finished(text));
                    }
                }
            }
        });
        (id, until)
    }

    /// The waiting call of question `id`, taken out to carry it on.
    pub fn take(&self, id: &str) -> Option<LiveCall> {
        lock(&self.calls).remove(id)
    }

    /// What became of a question no call waits on any more: the sentence for the model.
    pub fn ending(&self, id: &str) -> String {
        match lock(&self.ended).remove(id) {
            Some(Ended::TimedOut) => "The MCP server's question was not answered in time, so its call was \
                                      cancelled and nothing was sent back."
                .to_string(),
            Some(Ended::Finished(text)) => {
                format!("The MCP server stopped waiting for the answer; its call ended without it: {text}")
            }
            None => "The MCP server's question can no longer be answered (Tourguide restarted or the server went \
                     away), so its call ended without the answer."
                .to_string(),
        }
    }

    /// The worker processes alive now, as the database's heartbeats say.
    pub fn workers_alive(&self, instances: HashSet<String>) {
        *lock(&self.alive) = Some(instances);
    }

    /// Worker `instance` stopped, whatever the last heartbeats said.
    pub fn worker_stopped(&self, instance: &str) {
        if let Some(alive) = lock(&self.alive).as_mut() {
            alive.remove(instance);
        }
        lock(&self.stopped).insert(instance.to_string());
    }

    /// Whether question `id` (asked in process `instance`, answerable until `until`) can no
    /// longer be answered, and why.
    pub fn expired(&self, id: &str, instance: &str, until: i64) -> Option<String> {
        if instance != self.instance {
            let gone = self.others_gone.load(Ordering::SeqCst) || unix_now() > until;
            if gone {
                return Some("Tourguide restarted while the MCP server waited for the answer".to_string());
            }
            let stopped = lock(&self.stopped).contains(instance)
                || lock(&self.alive).as_ref().is_some_and(|alive| !alive.contains(instance));
            return stopped.then(|| {
                "the Tourguide worker that held the MCP server's call stopped while the server waited for the answer"
                    .to_string()
            });
        }
        if let Some(call) = lock(&self.calls).get(id) {
            let done = call.link.as_ref().is_some_and(|completed| completed.load(Ordering::SeqCst));
            return done.then(|| LINK_COMPLETED.to_string());
        }
        Some(match lock(&self.ended).get(id) {
            Some(Ended::TimedOut) => "the question was not answered in time".to_string(),
            Some(Ended::Finished(_)) | None => "the MCP server stopped waiting for the answer".to_string(),
        })
    }
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
