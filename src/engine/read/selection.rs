//! What one level of a query asks of the nodes read there, as the engine needs to know it to
//! plan that level's reads: the fields selected on those nodes, each with whether it asks its
//! own nodes for nothing but their identity; and, for a page, whether its total and whether
//! more pages are asked. A front end builds it once per level (the GraphQL adapter from
//! async-graphql's look-ahead) and hands it down with the read; the engine reads ahead from it.
//!
//! Invariant: it holds names only, borrowed from the query's document, never values: what a
//! field's arguments ask is a typed request of its own ([`PageRequest`](super::PageRequest)).

use crate::keys::TYPENAME;

/// The fields a level selects on its nodes (merged over aliases and fragments).
#[derive(Debug, Default, Clone)]
pub struct Selection<'q> {
    fields: Vec<Selected<'q>>,
}

#[derive(Debug, Clone)]
struct Selected<'q> {
    name: &'q str,
    /// Whether every selection of this field asks its nodes for no more than `id` and
    /// `__typename`.
    only_identity: bool,
}

/// The fields a node's identity answers without reading it.
const IDENTITY: [&str; 2] = ["id", TYPENAME];

impl<'q> Selection<'q> {
    /// Notes that the level selects `name`, whose own selection asks for nothing but identity
    /// when `only_identity`; a field selected twice (aliases) asks for the most of either.
    pub fn select(&mut self, name: &'q str, only_identity: bool) {
        match self.fields.iter_mut().find(|field| field.name == name) {
            Some(field) => field.only_identity &= only_identity,
            None => self.fields.push(Selected {
                name,
                only_identity,
            }),
        }
    }

    /// Whether the level selects `name`.
    pub fn asks(&self, name: &str) -> bool {
        self.fields.iter().any(|field| field.name == name)
    }

    /// Whether the level selects `name` and asks its nodes for more than their identity.
    pub fn asks_beyond_identity(&self, name: &str) -> bool {
        self.fields
            .iter()
            .any(|field| field.name == name && !field.only_identity)
    }

    /// Whether the level asks its nodes for nothing but their identity: nodes whose ids and
    /// types are known another way need not be read.
    pub fn only_identity(&self) -> bool {
        self.fields
            .iter()
            .all(|field| IDENTITY.contains(&field.name))
    }

    /// Whether `name` is one of the fields a node's identity answers.
    pub fn is_identity(name: &str) -> bool {
        IDENTITY.contains(&name)
    }
}

/// What a page of a connection is asked for.
#[derive(Debug, Default, Clone)]
pub struct PageSelection<'q> {
    /// The level of the page's nodes; `None` when no node of the page is selected (a count,
    /// cursors alone).
    pub nodes: Option<Selection<'q>>,
    /// Whether its `totalCount` is selected.
    pub counted: bool,
    /// Whether the reader asks if more pages follow (`pageInfo`, `nextToken`).
    pub asks_more: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_selected_twice_asks_for_the_most_of_either() {
        let mut selection = Selection::default();
        selection.select("leads", true);
        selection.select("leads", false);
        assert!(selection.asks("leads"));
        assert!(selection.asks_beyond_identity("leads"));
        assert!(!selection.asks("teams"));
    }

    #[test]
    fn identity_alone_is_known_without_a_read() {
        let mut selection = Selection::default();
        selection.select("id", true);
        selection.select(TYPENAME, true);
        assert!(selection.only_identity());
        selection.select("name", true);
        assert!(!selection.only_identity());
    }
}
