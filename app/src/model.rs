//! View models: what the components render. They cross the server-function boundary, so they are
//! plain serialisable data with no database or runtime types in them. One module per surface;
//! everything is re-exported here, so a view model is `crate::model::Name` wherever it lives.

mod account;
mod address;
mod audit;
mod cards;
mod content;
mod conversation;
mod inbox;
mod questions;
mod tools;
mod webhooks;

pub use account::*;
pub use address::*;
pub use audit::*;
pub use cards::*;
pub use content::*;
pub use conversation::*;
pub use inbox::*;
pub use questions::*;
pub use tools::*;
pub use webhooks::*;
