//! Skills a conversation can be started with, and which of them make it a process run.

use crate::store::ConversationRow;

/// A skill: instructions for the model, and whether it guides the reader through a process (then
/// a write's card offers "Andere Variante" and "Überspringen", and a new message cancels the
/// waiting run).
#[derive(Debug, Clone)]
pub struct Skill {
    pub id: &'static str,
    pub process: bool,
    pub instructions: &'static str,
}

/// Whether a conversation is a guided process run. One trait so the chat asks one question in one
/// place, wherever the answer comes from.
pub trait ProcessRunDetector: Send + Sync {
    fn is_process_run(&self, conversation: &ConversationRow) -> bool;
}

#[derive(Debug, Clone)]
pub struct SkillCatalogue {
    skills: Vec<Skill>,
}

pub const PAGE_TOUR: &str = "page-tour";

impl Default for SkillCatalogue {
    fn default() -> Self {
        SkillCatalogue {
            skills: vec![Skill {
                id: PAGE_TOUR,
                process: true,
                instructions: "You guide the user through improving one page of their website, one point at a \
                     time. Analyse the page, ask which point to start with (ask_choice), propose one change at a \
                     time with a write tool (the user approves, asks for another variant, or skips it), and at \
                     the end ask whether they want a summary or the next page.",
            }],
        }
    }
}

impl SkillCatalogue {
    pub fn find(&self, id: &str) -> Option<&Skill> {
        self.skills.iter().find(|skill| skill.id == id)
    }
}

impl ProcessRunDetector for SkillCatalogue {
    fn is_process_run(&self, conversation: &ConversationRow) -> bool {
        conversation.skill.as_deref().and_then(|id| self.find(id)).is_some_and(|skill| skill.process)
    }
}
