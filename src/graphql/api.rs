//! The executable API: the dynamic schema built from the model, the query limits checked before
//! it runs, and the SDL `tablegraph schema` prints.

use std::collections::HashSet;
use std::sync::Arc;

use async_graphql::dynamic::{Schema, SchemaError};
use async_graphql::parser::types::{ExecutableDocument, OperationType, Selection, SelectionSet};

use super::limits::{self, QueryLimits};
use super::{field_errors, mutation, null_items, query, schema};
use crate::model::Model;

/// Limits that protect the server from expensive queries.
#[derive(Debug, Clone)]
pub struct SchemaOptions {
    pub introspection: bool,
    pub limits: QueryLimits,
    /// Storage calls one request may make; past it, fields answer `BadUserInput`.
    pub max_storage_calls: usize,
    /// The declarative resolvers of `resolvers/`.
    pub resolvers: Arc<crate::resolvers::Resolvers>,
}

impl Default for SchemaOptions {
    fn default() -> Self {
        SchemaOptions {
            introspection: true,
            limits: QueryLimits::default(),
            max_storage_calls: 500,
            resolvers: Arc::default(),
        }
    }
}

/// The executable API: each request is checked against the [`QueryLimits`], then runs on the
/// dynamic schema.
///
/// # Why two copies of the schema
///
/// Once a schema has any async-graphql extension, every field of every request passes through
/// it, and that cost showed in the profile of the smallest queries (BENCHMARKS.md, "Profile").
/// Limits therefore run before the schema. Both copies carry
/// [`field_errors::FieldErrors`], which every request needs (a field's error is `null` at its
/// path, not the end of the answer); [`null_items::NullItems`] is needed only by
/// `nodes(ids:)`: a request whose query selects `nodes` runs on the copy with it, every other
/// request on the one without.
pub struct Api {
    schema: Schema,
    with_null_items: Schema,
    limits: limits::Limits,
}

impl Api {
    /// Builds the API clients query.
    pub fn build(model: Arc<Model>, options: &SchemaOptions) -> Result<Api, SchemaError> {
        Ok(Api {
            schema: build_schema(model.clone(), options, false)?,
            with_null_items: build_schema(model, options, true)?,
            limits: limits::Limits::new(options.limits),
        })
    }

    /// Runs `request`: a request error when it does not parse or is over a limit, before any
    /// resolver runs.
    pub async fn execute(&self, mut request: async_graphql::Request) -> async_graphql::Response {
        if let Err(error) = self.limits.check(self.schema.registry(), &mut request) {
            return async_graphql::Response::from_errors(vec![error]);
        }
        let schema = match request.parsed_query() {
            Ok(document) if selects_root_field(document, "nodes") => &self.with_null_items,
            _ => &self.schema,
        };
        schema.execute(request).await
    }
}

fn build_schema(
    model: Arc<Model>,
    options: &SchemaOptions,
    null_items: bool,
) -> Result<Schema, SchemaError> {
    let mut builder = Schema::build("Query", Some("Mutation"), None);
    // The first extension is the outermost: a list item NullItems makes null is no error.
    builder = builder.extension(field_errors::FieldErrors);
    if null_items {
        builder = builder.extension(null_items::NullItems);
    }
    if !options.introspection {
        builder = builder.disable_introspection().disable_suggestions();
    }
    builder = schema::register(builder, &model, &options.resolvers);
    builder = builder.register(query::root(&model));
    builder = builder.register(mutation::root(&model));
    builder.data(model).finish()
}

/// Whether a query operation of `document` selects the root field `name`, directly or through
/// fragments. Each fragment is looked into once and the walk keeps its own stack, so neither
/// fragments that spread each other nor a chain of thousands of them costs more than a pass
/// over the document.
fn selects_root_field(document: &ExecutableDocument, name: &str) -> bool {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut pending: Vec<&SelectionSet> = document
        .operations
        .iter()
        .filter(|(_, operation)| operation.node.ty == OperationType::Query)
        .map(|(_, operation)| &operation.node.selection_set.node)
        .collect();
    while let Some(selection_set) = pending.pop() {
        for item in &selection_set.items {
            match &item.node {
                Selection::Field(field) => {
                    if field.node.name.node == name {
                        return true;
                    }
                }
                Selection::InlineFragment(fragment) => {
                    pending.push(&fragment.node.selection_set.node);
                }
                Selection::FragmentSpread(spread) => {
                    let fragment = spread.node.fragment_name.node.as_str();
                    if seen.insert(fragment)
                        && let Some(definition) = document.fragments.get(fragment)
                    {
                        pending.push(&definition.node.selection_set.node);
                    }
                }
            }
        }
    }
    false
}

/// The client-facing SDL of `model`, as `tablegraph schema` prints it.
pub fn print_sdl(
    model: Arc<Model>,
    resolvers: Arc<crate::resolvers::Resolvers>,
) -> Result<String, SchemaError> {
    let options = SchemaOptions {
        resolvers,
        ..SchemaOptions::default()
    };
    Ok(build_schema(model, &options, false)?
        .sdl_with_options(async_graphql::SDLExportOptions::new().prefer_single_line_descriptions()))
}

#[cfg(test)]
mod tests {
    use super::selects_root_field;

    fn selects(query: &str) -> bool {
        let document = async_graphql::parser::parse_query(query).expect("a document");
        selects_root_field(&document, "nodes")
    }

    #[test]
    fn a_root_field_is_found_directly_or_through_fragments() {
        assert!(selects("{ nodes(ids: []) { id } }"));
        assert!(selects("{ ... on Query { nodes(ids: []) { id } } }"));
        assert!(selects(
            "{ ...A } fragment A on Query { ...B } fragment B on Query { nodes(ids: []) { id } }"
        ));
        assert!(!selects("{ farm(id: \"x\") { id } }"));
        // Not at the root, or not a query.
        assert!(!selects("{ team(id: \"x\") { members { nodes { id } } } }"));
        assert!(!selects("mutation { nodes }"));
    }

    #[test]
    fn a_long_chain_of_fragments_is_walked_without_recursion() {
        let mut query = String::from("{ ...F0 }");
        for n in 0..50_000 {
            query.push_str(&format!(" fragment F{n} on Query {{ ...F{} }}", n + 1));
        }
        query.push_str(" fragment F50000 on Query { nodes(ids: []) { id } }");
        assert!(selects(&query));
    }

    #[test]
    fn fragments_that_spread_each_other_end_the_walk() {
        assert!(!selects(
            "{ ...A } fragment A on Query { ...B ...A } fragment B on Query { ...A ...B }"
        ));
        assert!(!selects("{ ...Missing }"));
    }
}
