//! The tool catalogue below the surfaces (layer 2½: it uses the gateway's `ToolCall`
//! vocabulary; MCP, the browser-shell profile and a task loop use it): each tool's
//! name, description, hints, wire parameters (`params`), lean JSON schema (`schema`)
//! and argument parsing, with the `invalid_argument` words every surface shows.

mod catalogue;
// Each wire struct is documented by its fields' docs, which are the schema a model
// reads; a doc on the struct itself would become part of that schema.
#[allow(missing_docs)]
pub mod params;
pub mod schema;

pub use catalogue::{Family, Listed, Tool, check_arguments, find, input_schema, misfit, tools};
pub use params::BadArgument;
