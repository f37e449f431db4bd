//! `tablegraph import --amplify-tables <apiId>-<env>`: an Amplify app's data, brought into the
//! one table. Amplify keeps each `@model` type in a table of its own, `<Type>-<apiId>-<env>`,
//! keyed by `id`; each is read through the SDK with a parallel Scan (four segments), and each
//! item is written as the node a create would write (its unique values, type index, relation
//! counts), keeping its id and times, in types' order so parents come before the children that
//! count them.
//!
//! Resumable: a node already in the table is left as it is, so an import that stopped runs
//! again to the end. Left out, and counted: DataStore's deleted items (`_deleted: true`) and
//! its bookkeeping (`_version`, `_lastChangedAt`), attributes the schema does not declare,
//! items whose `id` tablegraph cannot take (say why), and keys naming a parent that is not
//! there (the node is written without them; Amplify does not check its keys).

use std::collections::BTreeMap;

use crate::engine::write::{FieldValues, Imported, import_node};
use crate::engine::{EngineError, RequestScope};
use crate::model::{FieldKind, Model, ScalarType, TypeDef};
use crate::store::{AttrValue, Item, Store, StoreError};

/// Segments each table's Scan is read in, side by side.
const SEGMENTS: u16 = 4;

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
}

/// Imports every `@model` type's Amplify table named `<Type>-<suffix>` into `store`'s table,
/// telling `progress` of each table as it is done.
pub async fn import_amplify_tables(
    store: &Store,
    model: &Model,
    suffix: &str,
    mut progress: impl FnMut(&TableReport),
) -> Result<Vec<TableReport>, ImportError> {
    let scope = RequestScope::of_tool(store);
    let mut reports = Vec::new();
    for type_def in parents_first(model) {
        let table = format!("{}-{suffix}", type_def.name);
        let mut report = TableReport {
            table: table.clone(),
            ..TableReport::default()
        };
        let items = read_table(store, &table)
            .await
            .map_err(|source| match source {
                StoreError::TableMissing(_) => ImportError::NoTable {
                    table: table.clone(),
                    type_name: type_def.name.clone(),
                },
                source => ImportError::Store {
                    table: table.clone(),
                    source,
                },
            })?;
        report.read = items.len();
        for item in &items {
            import_item(&scope, model, type_def, item, &mut report).await?;
        }
        progress(&report);
        reports.push(report);
    }
    Ok(reports)
}

/// Every item of `table`, its segments read side by side.
async fn read_table(store: &Store, table: &str) -> Result<Vec<Item>, StoreError> {
    let segments = (0..SEGMENTS).map(|segment| async move {
        let mut items = Vec::new();
        let mut start = None;
        loop {
            let (page, next) = store
                .scan_other_table(table, segment, SEGMENTS, start.as_ref())
                .await?;
            items.extend(page);
            match next {
                Some(next) => start = Some(next),
                None => return Ok::<_, StoreError>(items),
            }
        }
    });
    let mut items = Vec::new();
    for part in futures::future::try_join_all(segments).await? {
        items.extend(part);
    }
    // The same order whatever the segments' timing, so reports repeat.
    items.sort_by(|a, b| text(a, "id").cmp(text(b, "id")));
    Ok(items)
}

async fn import_item(
    scope: &RequestScope,
    model: &Model,
    type_def: &TypeDef,
    item: &Item,
    report: &mut TableReport,
) -> Result<(), ImportError> {
    if matches!(item.get("_deleted"), Some(AttrValue::Bool(true))) {
        report.deleted += 1;
        return Ok(());
    }
    let id = text(item, "id").to_owned();
    if id.is_empty() {
        report.refused.push("an item without an id".to_owned());
        return Ok(());
    }
    let fields = match field_values(type_def, item, report) {
        Ok(fields) => fields,
        Err(why) => {
            report.refused.push(format!("{id}: {why}"));
            return Ok(());
        }
    };
    let time = |name: &str| {
        Some(text(item, name))
            .filter(|t| crate::engine::formats::valid_text(&ScalarType::AwsDateTime, t))
    };
    let times = (time("createdAt"), time("updatedAt"));
    match import_node(scope, model, type_def, &id, &fields, times).await {
        Ok(Imported::Written) => report.written += 1,
        Ok(Imported::AlreadyThere) => report.already_there += 1,
        Ok(Imported::WithoutKeys(keys)) => {
            report.written += 1;
            report.without_keys.push((id, keys));
        }
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
    Ok(())
}

/// The item's stored fields as the type declares them; an attribute of the wrong DynamoDB type
/// is why the item is left out.
fn field_values(
    type_def: &TypeDef,
    item: &Item,
    report: &mut TableReport,
) -> Result<FieldValues, String> {
    let mut fields = FieldValues::new();
    for (name, value) in item.iter() {
        let declared = type_def.field(name).map(|f| &f.kind);
        let fits = match (declared, value) {
            (_, AttrValue::Null) => {
                continue;
            }
            (Some(FieldKind::Scalar { scalar, .. }), value) => fits(scalar, value),
            (Some(FieldKind::ScalarList { scalar, .. }), AttrValue::L(values)) => values
                .iter()
                .all(|v| matches!(v, AttrValue::Null) || fits(scalar, v)),
            (Some(FieldKind::Embedded { list: None, .. }), AttrValue::M(_)) => true,
            (Some(FieldKind::Embedded { list: Some(_), .. }), AttrValue::L(_)) => true,
            (Some(FieldKind::ScalarList { .. } | FieldKind::Embedded { .. }), _) => false,
            _ => {
                // Kept by every node here, or DataStore's bookkeeping (not served here).
                let managed = matches!(
                    name.as_str(),
                    "id" | "createdAt"
                        | "updatedAt"
                        | "__typename"
                        | "_version"
                        | "_lastChangedAt"
                        | "_deleted"
                );
                if !managed {
                    *report.undeclared.entry(name.clone()).or_default() += 1;
                }
                continue;
            }
        };
        if !fits {
            return Err(format!(
                "{name} holds a value of another type than {}.{name} declares",
                type_def.name
            ));
        }
        fields.push((name.clone(), Some(value.clone())));
    }
    Ok(fields)
}

/// Whether `value` is stored as `scalar` is.
fn fits(scalar: &ScalarType, value: &AttrValue) -> bool {
    match (scalar, value) {
        (ScalarType::Int | ScalarType::Float | ScalarType::AwsTimestamp, AttrValue::N(_)) => true,
        (ScalarType::Boolean, AttrValue::Bool(_)) => true,
        (
            ScalarType::Int | ScalarType::Float | ScalarType::AwsTimestamp | ScalarType::Boolean,
            _,
        ) => false,
        (_, AttrValue::S(_)) => true,
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
