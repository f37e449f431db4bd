//! Writing the table for a request: creates (single, batched, nested trees), updates and
//! deletes (with their cascades), edge adds and removes. Each is planned from what it read
//! (`plan`), folded into one transaction (`fold`), held to the caller's rules (`guard`) and
//! committed by the one write driver (`drive`), which reads again and retries when what it read
//! has changed.
//!
//! Invariant: every write here commits through [`drive`](drive::Driver) as one transaction
//! whose conditions hold it to what it read; nothing is written outside one.

mod batch_writes;
mod creates;
mod drive;
mod edge_writes;
mod fold;
mod guard;
mod imports;
mod node_writes;
mod plan;
mod publish;

pub use batch_writes::{UpdateMember, delete_nodes, update_nodes};
pub use creates::{NewEdge, NewNode, create_node, create_nodes, create_tree};
pub use drive::{Attempt, Driver, Learned, WRITE_ATTEMPTS};
pub use edge_writes::{add_edge, remove_edge};
pub use imports::{Imported, Missing, import_node};
pub use node_writes::{FieldValues, Guard, delete_node, purge_tombstone, update_node};
pub use plan::{Plan, Purpose, node_update};
pub use publish::{MAX_PUBLISHED_BYTES, publish};
