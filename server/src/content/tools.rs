//! The tour's tools over the content store: reads that analyse, writes that go through approval.

use runtime::ToolRegistry;

use crate::content::store::ContentStore;

/// Registers the content tools. Called once at start-up with the server's pool.
pub fn register(registry: &mut ToolRegistry, store: ContentStore) {
    let _ = (registry, store);
}
