//! `tablegraph import --amplify-tables <apiId>-<env>`: an Amplify app's data, brought into the one
//! table. Amplify keeps each `@model` type in a table of its own, `<Type>-<apiId>-<env>`, keyed by
//! `id`; each is read through the SDK, a Scan of four segments (one on the embedded store,
//! `Store::scan_segments`) page by page (each page written before the next is read), and each item
//! is written as the node a create would write (its unique values, type index, relation counts),
//! keeping its id and times, in types' order so parents mostly come before the children that count
//! them; an item whose parent is not there yet waits until every table is read (a parent of its own
//! type, or in a cycle).
//!
//! Resumable: a node already in the table is left as it is, so an import that stopped runs
//! again to the end. Left out, and counted: DataStore's deleted items (`_deleted: true`) and
//! its bookkeeping (`_version`, `_lastChangedAt`), attributes the schema does not declare,
//! items whose `id` tablegraph cannot take or whose value is not of its field's type and
//! format (say why), and keys naming a parent that is not there (the node is written without
//! them; Amplify does not check its keys). Binary and number-set attributes, which no GraphQL
//! type reads, are read as nulls and not kept.

use std::collections::BTreeMap;

use crate::engine::write::{FieldValues, Imported, Missing, import_node};
use crate::engine::{EngineError, RequestScope};
use crate::keys::TYPENAME;
use crate::model::{FieldKind, Model, ScalarType, TypeDef};
use crate::store::{AttrValue, Item, Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error(
        "the Amplify table {table} of {type_name} does not exist: Amplify names each model's \
         table <Type>-<apiId>-<env>; give --amplify-tables <apiId>-<env> as the app's tables \
         are named"
    )]
    NoTable { table: String, type_name: String },
    #[error("{table}: {source}")]
    Store { table: String, source: StoreError },
    #[error("{table}: the item {id}: {message}")]
    Write {
        table: String,
        id: String,
        message: String,
    },
}

/// What one type's table gave.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TableReport {
    pub table: String,
    pub read: usize,
    pub written: usize,
    pub already_there: usize,
    /// DataStore's deleted items.
    pub deleted: usize,
    /// Items left out, each with why.
    pub refused: Vec<String>,
    /// Nodes written without a key whose parent is not there: (id, keys).
    pub without_keys: Vec<(String, Vec<String>)>,
    /// Attributes of the items that the schema does not declare, left out.
    pub undeclared: BTreeMap<String, usize>,
    /// The ids tried once already (an item waiting for its parent is tried again).
    tried: std::collections::HashSet<String>,
}

/// Imports every `@model` type's Amplify table named `<Type>-<suffix>` into `store`'s table,
/// telling `progress` after each page read.
pub async fn import_amplify_tables(
    store: &Store,
    model: &Model,
    suffix: &str,
    mut progress: impl FnMut(&TableReport),
) -> Result<Vec<TableReport>, ImportError> {
    let scope = RequestScope::of_tool(store);
    let mut reports: Vec<TableReport> = Vec::new();
    // Items whose parent was not there yet, with their type and report: tried again once
    // every table is read (a parent of the same type, or of a type in a cycle, may come later).
    let mut waiting: Vec<(&TypeDef, usize, Item)> = Vec::new();
    for type_def in parents_first(model) {
        let table = format!("{}-{suffix}", type_def.name);
        reports.push(TableReport {
            table: table.clone(),
            ..TableReport::default()
        });
        let at = reports.len() - 1;
        let failed = |source: StoreError| match source {
            StoreError::TableMissing(_) => ImportError::NoTable {
                table: table.clone(),
                type_name: type_def.name.clone(),
            },
            source => ImportError::Store {
                table: table.clone(),
                source,
            },
        };
        // Page by page, each page written before the next is read: memory holds one page.
        let segments = store.scan_segments();
        for segment in 0..segments {
            let mut start = None;
            loop {
                let (page, next) = store
                    .scan_other_table(&table, segment, segments, start.as_ref())
                    .await
                    .map_err(failed)?;
                reports[at].read += page.len();
                for item in page {
                    let report = &mut reports[at];
                    if import_item(&scope, model, type_def, &item, report, Missing::Wait).await? {
                        waiting.push((type_def, at, item));
                    }
                }
                progress(&reports[at]);
                match next {
                    Some(next) => start = Some(next),
                    None => break,
                }
            }
        }
    }
    // Again while some parent came; then without the keys whose parents never did.
    loop {
        let before = waiting.len();
        let mut still = Vec::new();
        for (type_def, at, item) in waiting {
            let report = &mut reports[at];
            if import_item(&scope, model, type_def, &item, report, Missing::Wait).await? {
                still.push((type_def, at, item));
            }
        }
        waiting = still;
        if waiting.is_empty() || waiting.len() == before {
            break;
        }
    }
    for (type_def, at, item) in waiting {
        import_item(
            &scope,
            model,
            type_def,
            &item,
            &mut reports[at],
            Missing::Drop,
        )
        .await?;
    }
    Ok(reports)
}

/// Imports one item into `report`; `true` when it waits for a parent not there yet.
async fn import_item(
    scope: &RequestScope,
    model: &Model,
    type_def: &TypeDef,
    item: &Item,
    report: &mut TableReport,
    missing: Missing,
) -> Result<bool, ImportError> {
    if matches!(item.get("_deleted"), Some(AttrValue::Bool(true))) {
        report.deleted += 1;
        return Ok(false);
    }
    // A type keyed by fields of its own (`@primaryKey`) is keyed so in its Amplify table too.
    let keys: Vec<&str> = match type_def.primary_key.is_some() {
        true => type_def.key_fields().map(|(key, _)| key.as_str()).collect(),
        false => vec!["id"],
    };
    let scalar = |key: &str| {
        type_def
            .key_fields()
            .find(|(name, _)| name == key)
            .map_or(ScalarType::Id, |(_, scalar)| scalar.clone())
    };
    let values: Vec<String> = keys
        .iter()
        .map(|key| key_text(item, key, &scalar(key)))
        .collect();
    if let Some(key) = keys
        .iter()
        .zip(&values)
        .find(|(_, v)| v.is_empty())
        .map(|(k, _)| k)
    {
        report
            .refused
            .push(format!("an item without its key {key}"));
        return Ok(false);
    }
    let id = match type_def.primary_key.is_some() {
        true => {
            crate::keys::primary_key_id_of(&values.iter().map(String::as_str).collect::<Vec<_>>())
        }
        false => values[0].clone(),
    };
    // Counted once, on the item's first try.
    let counting = report.tried.insert(id.clone());
    let fields = match field_values(model, type_def, item, report, counting) {
        Ok(fields) => fields,
        Err(why) => {
            report.refused.push(format!("{id}: {why}"));
            return Ok(false);
        }
    };
    // Amplify's table keeps the times under the names `@model(timestamps:)` gives, as here.
    let time = |name: &Option<String>| {
        name.as_deref()
            .map(|name| text(item, name))
            .filter(|t| crate::engine::formats::valid_text(&ScalarType::AwsDateTime, t))
    };
    let times = (
        time(&type_def.timestamps.created),
        time(&type_def.timestamps.updated),
    );
    match import_node(scope, model, type_def, &id, &fields, times, missing).await {
        Ok(Imported::Written) => report.written += 1,
        Ok(Imported::AlreadyThere) => report.already_there += 1,
        Ok(Imported::WithoutKeys(keys)) => {
            report.written += 1;
            report.without_keys.push((id, keys));
        }
        Ok(Imported::Waiting(_)) => return Ok(true),
        // What the item holds that tablegraph cannot take: said, and the rest goes on.
        Err(EngineError::BadUserInput(why)) => report.refused.push(format!("{id}: {why}")),
        Err(error) => {
            return Err(ImportError::Write {
                table: report.table.clone(),
                id,
                message: error.message(),
            });
        }
    }
    Ok(false)
}

/// The item's stored fields as the type declares them; an attribute of the wrong DynamoDB type
/// is why the item is left out.
fn field_values(
    model: &Model,
    type_def: &TypeDef,
    item: &Item,
    report: &mut TableReport,
    counting: bool,
) -> Result<FieldValues, String> {
    let mut fields = FieldValues::new();
    for (name, value) in item.iter() {
        let declared = type_def.field(name).map(|f| &f.kind);
        let fits = match (declared, value) {
            (_, AttrValue::Null) => {
                continue;
            }
            (Some(FieldKind::Scalar { scalar, .. }), value) => fits(model, scalar, value),
            (Some(FieldKind::ScalarList { scalar, .. }), AttrValue::L(values)) => values
                .iter()
                .all(|v| matches!(v, AttrValue::Null) || fits(model, scalar, v)),
            (Some(FieldKind::Embedded { list: None, .. }), AttrValue::M(_)) => true,
            (Some(FieldKind::Embedded { list: Some(_), .. }), AttrValue::L(_)) => true,
            (Some(FieldKind::ScalarList { .. } | FieldKind::Embedded { .. }), _) => false,
            _ => {
                // Kept by every node here, or DataStore's bookkeeping (not served here).
                let managed = matches!(
                    name.as_str(),
                    "id" | "createdAt"
                        | "updatedAt"
                        | TYPENAME
                        | "_version"
                        | "_lastChangedAt"
                        | "_deleted"
                ) || type_def.timestamps.is(name);
                if !managed && counting {
                    *report.undeclared.entry(name.clone()).or_default() += 1;
                }
                continue;
            }
        };
        if !fits {
            return Err(format!(
                "{name} holds a value that is no {}.{name}, as the schema declares it",
                type_def.name
            ));
        }
        fields.push((name.clone(), Some(value.clone())));
    }
    Ok(fields)
}

/// Whether `value` is stored as `scalar` is, in its format (an AppSync scalar's, one of an
/// enum's values).
fn fits(model: &Model, scalar: &ScalarType, value: &AttrValue) -> bool {
    match (scalar, value) {
        (ScalarType::Int | ScalarType::Float | ScalarType::AwsTimestamp, AttrValue::N(_)) => true,
        (ScalarType::Boolean, AttrValue::Bool(_)) => true,
        (ScalarType::Enum(name), AttrValue::S(text)) => model
            .enum_def(name)
            .is_some_and(|e| e.values.iter().any(|v| v.name == *text)),
        (ScalarType::String | ScalarType::Id, AttrValue::S(_)) => true,
        (scalar, AttrValue::S(text)) => crate::engine::formats::valid_text(scalar, text),
        _ => false,
    }
}

/// The model's types, each after the types whose nodes it names (its parents), so that a
/// parent's counts are there to take its children; a cycle keeps the schema's order.
fn parents_first(model: &Model) -> Vec<&TypeDef> {
    let parents = |type_def: &TypeDef| -> Vec<String> {
        let mut parents: Vec<String> = type_def
            .fields
            .iter()
            .filter_map(|field| match &field.kind {
                FieldKind::BelongsTo { target, .. } => Some(target.clone()),
                _ => None,
            })
            .collect();
        for owner in &model.types {
            for field in &owner.fields {
                if let FieldKind::HasMany(has_many) = &field.kind
                    && model
                        .possible_types(&has_many.element)
                        .contains(&type_def.name.as_str())
                {
                    parents.push(owner.name.clone());
                }
            }
        }
        parents.retain(|parent| *parent != type_def.name);
        parents
    };
    let mut ordered: Vec<&TypeDef> = Vec::new();
    let mut left: Vec<&TypeDef> = model.types.iter().collect();
    while !left.is_empty() {
        let ready = left.iter().position(|type_def| {
            parents(type_def).iter().all(|parent| {
                ordered.iter().any(|t| t.name == *parent) || model.type_def(parent).is_none()
            })
        });
        // A cycle: the first left, in the schema's order.
        ordered.push(left.remove(ready.unwrap_or(0)));
    }
    ordered
}

fn text<'i>(item: &'i Item, name: &str) -> &'i str {
    item.get(name)
        .and_then(AttrValue::as_str)
        .unwrap_or_default()
}

/// A key attribute of an Amplify item as text, as it is stored here (a time in the form a
/// create stores): a string, or a number in its decimal form (a sort key field of type `Int` is
/// a number in Amplify's table).
fn key_text(item: &Item, name: &str, scalar: &ScalarType) -> String {
    match item.get(name) {
        Some(AttrValue::S(text)) => crate::engine::formats::stored_text(scalar, text)
            .map_or_else(|_| text.clone(), |text| text.into_owned()),
        Some(AttrValue::N(number)) => number.clone(),
        _ => String::new(),
    }
}
