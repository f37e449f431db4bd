//! What a level of the query asks, read once from async-graphql's look-ahead and handed to the
//! engine with that level's read: a [`Selection`] of the fields selected on the level's nodes,
//! a [`PageSelection`] for a connection (its nodes, whether its total and more pages are
//! asked, in the API's shape).

use async_graphql::Lookahead;

use crate::engine::read::{PageSelection, Selection};
use crate::model::ApiShape;

/// The fields `look_ahead` (a field that answers nodes) selects on its nodes, each with whether
/// it asks its own nodes for no more than their identity.
pub(super) fn selection<'q>(look_ahead: &Lookahead<'q>) -> Selection<'q> {
    let mut selection = Selection::default();
    for field in look_ahead.selection_fields() {
        for child in field.selection_set() {
            let only_identity = child
                .selection_set()
                .all(|grandchild| Selection::is_identity(grandchild.name()));
            selection.select(child.name(), only_identity);
        }
    }
    selection
}

/// What `connection` (a connection field in `shape`) asks of its page.
pub(super) fn page_selection<'q>(shape: ApiShape, connection: &Lookahead<'q>) -> PageSelection<'q> {
    let (nodes, more) = match shape {
        ApiShape::Relay => (connection.field("edges").field("node"), "pageInfo"),
        ApiShape::Amplify => (connection.field("items"), "nextToken"),
    };
    PageSelection {
        nodes: nodes.exists().then(|| selection(&nodes)),
        counted: connection.field("totalCount").exists(),
        asks_more: connection.field(more).exists(),
    }
}
