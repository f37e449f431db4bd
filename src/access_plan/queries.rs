//! The plans of a `@model` type's root queries: its read by key, its reads by each unique
//! value, its index queries and its list, each named as the schema names the query.

use crate::keys;
use crate::model::{ListDef, Model, TypeDef, lower_first, upper_first};

use super::access::{FieldPlan, INDEX_PAGE, LIST_PAGE, PER_LEVEL, access, node_read};

/// The root queries of `type_def`, in the order the plan prints them.
pub(super) fn query_plans(model: &Model, type_def: &TypeDef) -> Vec<FieldPlan> {
    let mut plans = Vec::new();
    plans.extend(get_plan(type_def));
    plans.extend(unique_plans(type_def));
    plans.extend(index_plans(type_def));
    plans.extend(list_plan(model, type_def));
    plans.extend(search_plan(type_def));
    plans
}

/// `@searchable`'s query: every node of the type from its type index, then filtered, sorted,
/// paged and aggregated in the server (`engine::read::search`).
fn search_plan(type_def: &TypeDef) -> Option<FieldPlan> {
    let (Some(list), Some(search)) = (type_def.list, &type_def.search) else {
        return None;
    };
    Some(FieldPlan {
        field: format!("Query.{search}"),
        accesses: vec![access(
            "Query",
            keys::gsi_name(list.slot),
            format!("{}, every node of the type", list_shards(type_def, list)),
            "one per shard, paged to the end, at most --max-filter-read-items nodes; then \
             filtered, sorted and aggregated here",
        )],
    })
}

/// The partitions of `type_def`'s type index: `PKnn = <Type>#LIST#00 … <Type>#LIST#<last>`.
fn list_shards(type_def: &TypeDef, list: ListDef) -> String {
    format!(
        "{} = {} … {}",
        keys::slot_partition_attribute(list.slot),
        keys::list_partition(&type_def.name, 0),
        keys::list_partition(&type_def.name, list.shards - 1),
    )
}

fn get_plan(type_def: &TypeDef) -> Option<FieldPlan> {
    let get = type_def.roots.get.as_ref()?;
    // A type keyed by fields of its own (`@primaryKey`) is read by their values.
    let key: Vec<&str> = type_def.key_fields().map(|(f, _)| f.as_str()).collect();
    let (key, id) = match key.is_empty() {
        true => ("id".to_owned(), "id".to_owned()),
        false => (key.join(", "), format!("{} as an id", key.join(", "))),
    };
    Some(FieldPlan {
        field: format!("Query.{get}({key})"),
        accesses: vec![node_read(&id)],
    })
}

fn unique_plans(type_def: &TypeDef) -> Vec<FieldPlan> {
    let name = &type_def.name;
    type_def
        .unique_fields()
        .map(|field| FieldPlan {
            field: format!(
                "Query.{}By{}({})",
                lower_first(name),
                upper_first(&field.name),
                field.name
            ),
            accesses: vec![
                access(
                    "BatchGetItem",
                    "table",
                    format!(
                        "PK = SK = {}",
                        keys::unique_key(name, &field.name, "<value>")
                    ),
                    PER_LEVEL,
                ),
                node_read("its id"),
            ],
        })
        .collect()
}

fn index_plans(type_def: &TypeDef) -> Vec<FieldPlan> {
    let name = &type_def.name;
    let mut plans = Vec::new();
    for index in &type_def.indexes {
        // A composite primary key's index is read by the list given the key's first field.
        let query_field = match (&index.query_field, type_def.primary_index()) {
            (Some(query_field), _) => query_field.clone(),
            (None, Some(primary)) if primary.name == index.name => {
                let Some(list) = &type_def.roots.list else {
                    continue;
                };
                list.clone()
            }
            (None, _) => continue,
        };
        plans.push(FieldPlan {
            field: format!("Query.{query_field}({})", index.field),
            accesses: vec![access(
                "Query",
                keys::gsi_name(index.slot),
                format!(
                    "{} = {}, {} by {}",
                    keys::slot_partition_attribute(index.slot),
                    keys::index_partition(name, &index.name, &format!("<{}>", index.field)),
                    keys::slot_sort_attribute(index.slot),
                    index.sort_by()
                ),
                INDEX_PAGE,
            )],
        });
    }
    plans
}

fn list_plan(model: &Model, type_def: &TypeDef) -> Option<FieldPlan> {
    let name = &type_def.name;
    let (Some(list), Some(list_name)) = (type_def.list, &type_def.roots.list) else {
        return None;
    };
    let mut accesses = vec![access(
        "Query",
        keys::gsi_name(list.slot),
        format!(
            "{}, {} by {}",
            list_shards(type_def, list),
            keys::slot_sort_attribute(list.slot),
            type_def
                .list_sort
                .as_ref()
                .map_or("id", |(f, _)| f.as_str())
        ),
        LIST_PAGE,
    )];
    // Amplify's connections have no totalCount.
    if !model.dialect.amplify_shape() {
        accesses.push(access(
            "BatchGetItem",
            "table",
            format!(
                "PK = SK = {} … {} (totalCount only)",
                keys::list_count_key(name, 0),
                keys::list_count_key(name, list.shards - 1)
            ),
            "with the page's Queries, in the same level",
        ));
    }
    Some(FieldPlan {
        field: format!("Query.{list_name}"),
        accesses,
    })
}

/// `node` and `nodes`, which read any type by id.
pub(super) fn node_plan() -> FieldPlan {
    FieldPlan {
        field: "Query.node(id) / Query.nodes(ids)".to_owned(),
        accesses: vec![node_read("id")],
    }
}
