//! What an MCP tool does to the world, read from its annotations the strict way: only a tool that
//! says it reads is a read, only one that says it is neither destructive nor repeated is an
//! idempotent write, and everything else, a tool without annotations among them (the spec's
//! defaults), is a write that may do harm twice, so it goes through an approval card. The same
//! way, a tool reaches the open world unless it says `openWorldHint: false` (the spec's default
//! is true): its reads then wait for a card once the run holds outside content.

use rmcp::model::ToolAnnotations;
use runtime::ToolEffect;

pub fn effect_of(annotations: Option<&ToolAnnotations>) -> ToolEffect {
    let Some(annotations) = annotations else { return ToolEffect::NonIdempotentWrite };
    if annotations.read_only_hint == Some(true) {
        return ToolEffect::ReadOnly;
    }
    if annotations.destructive_hint == Some(false) && annotations.idempotent_hint == Some(true) {
        return ToolEffect::IdempotentWrite;
    }
    ToolEffect::NonIdempotentWrite
}

/// Whether the tool may reach beyond its server (the web, other services): true unless its
/// annotations say otherwise.
pub fn open_world_of(annotations: Option<&ToolAnnotations>) -> bool {
    annotations.and_then(|annotations| annotations.open_world_hint) != Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_is_open_world_unless_it_says_otherwise() {
        let open_world = |hint: Option<bool>| {
            let mut annotations = ToolAnnotations::default();
            annotations.open_world_hint = hint;
            open_world_of(Some(&annotations))
        };
        assert!(open_world_of(None));
        assert!(open_world(None));
        assert!(open_world(Some(true)));
        assert!(!open_world(Some(false)));
    }

    fn hints(read_only: Option<bool>, destructive: Option<bool>, idempotent: Option<bool>) -> ToolAnnotations {
        let mut annotations = ToolAnnotations::default();
        annotations.read_only_hint = read_only;
        annotations.destructive_hint = destructive;
        annotations.idempotent_hint = idempotent;
        annotations
    }

    #[test]
    fn only_what_a_tool_declares_makes_it_harmless() {
        assert_eq!(effect_of(None), ToolEffect::NonIdempotentWrite);
        assert_eq!(effect_of(Some(&hints(None, None, None))), ToolEffect::NonIdempotentWrite);
        assert_eq!(effect_of(Some(&hints(Some(true), None, None))), ToolEffect::ReadOnly);
        assert_eq!(effect_of(Some(&hints(Some(false), Some(false), Some(true)))), ToolEffect::IdempotentWrite);
        // Idempotent but possibly destructive (the default): still a write that needs care.
        assert_eq!(effect_of(Some(&hints(None, None, Some(true)))), ToolEffect::NonIdempotentWrite);
        assert_eq!(effect_of(Some(&hints(Some(false), Some(false), Some(false)))), ToolEffect::NonIdempotentWrite);
    }
}
