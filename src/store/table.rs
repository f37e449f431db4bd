//! Table lifecycle calls: describe, create (with its change stream on), add one generic index. The decisions (which indexes,
//! when to wait) belong to `migrate`; this file only speaks DynamoDB.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, CreateGlobalSecondaryIndexAction, GlobalSecondaryIndex,
    GlobalSecondaryIndexUpdate, IndexStatus, KeySchemaElement, KeyType, Projection, ProjectionType,
    ScalarAttributeType, StreamViewType, TableStatus as SdkTableStatus,
};

use super::calls::CallRecord;
use super::client::Store;
use super::error::{StoreError, classify};
use crate::keys;

/// What exists of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableStatus {
    pub active: bool,
    /// Generic index slot → whether the index is ACTIVE. Indexes not named `GSInn` are left out.
    pub indexes: BTreeMap<u8, bool>,
    /// The ARN of the table's change stream, when it is on with both images (what
    /// subscriptions read).
    pub stream: Option<String>,
    /// How many items the table holds, as the store tells it: exact on the embedded store,
    /// updated about every six hours by DynamoDB. For estimates only.
    pub item_count: Option<u64>,
}

fn attribute(name: &str) -> Result<AttributeDefinition, StoreError> {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(ScalarAttributeType::S)
        .build()
        .map_err(|e| StoreError::Other(e.to_string()))
}

fn key(name: &str, key_type: KeyType) -> Result<KeySchemaElement, StoreError> {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(key_type)
        .build()
        .map_err(|e| StoreError::Other(e.to_string()))
}

fn index_definition(slot: u8) -> Result<GlobalSecondaryIndex, StoreError> {
    GlobalSecondaryIndex::builder()
        .index_name(keys::gsi_name(slot))
        .key_schema(key(&keys::slot_partition_attribute(slot), KeyType::Hash)?)
        .key_schema(key(&keys::slot_sort_attribute(slot), KeyType::Range)?)
        .projection(
            Projection::builder()
                .projection_type(ProjectionType::All)
                .build(),
        )
        .build()
        .map_err(|e| StoreError::Other(e.to_string()))
}

fn slot_of(index_name: &str) -> Option<u8> {
    let digits = index_name.strip_prefix("GSI")?;
    (digits.len() == 2).then(|| digits.parse().ok()).flatten()
}

impl Store {
    /// The table's status, or `None` when it does not exist.
    pub async fn describe_table(&self) -> Result<Option<TableStatus>, StoreError> {
        let output = self
            .observed("DescribeTable", None, None, || async {
                self.client
                    .describe_table()
                    .table_name(self.table.as_ref())
                    .send()
                    .await
                    .map_err(classify)
            })
            .await;
        self.record(CallRecord {
            operation: "DescribeTable",
            index: None,
            keys: None,
            items: None,
            consumed_capacity: None,
        });
        let table = match output {
            Ok(output) => match output.table {
                Some(table) => table,
                None => return Ok(None),
            },
            Err(StoreError::TableMissing(_)) => return Ok(None),
            Err(e) => return Err(e),
        };
        let indexes = table
            .global_secondary_indexes()
            .iter()
            .filter_map(|index| {
                let slot = slot_of(index.index_name()?)?;
                Some((slot, index.index_status() == Some(&IndexStatus::Active)))
            })
            .collect();
        let stream = table
            .stream_specification()
            .filter(|spec| {
                spec.stream_enabled()
                    && spec.stream_view_type() == Some(&StreamViewType::NewAndOldImages)
            })
            .and(table.latest_stream_arn())
            .map(str::to_owned);
        Ok(Some(TableStatus {
            active: table.table_status() == Some(&SdkTableStatus::Active),
            indexes,
            stream,
            item_count: table.item_count().and_then(|n| u64::try_from(n).ok()),
        }))
    }

    /// Creates the table, on-demand billing, with the generic indexes of `slots`.
    pub async fn create_table(&self, slots: &[u8]) -> Result<(), StoreError> {
        let mut request = self
            .client
            .create_table()
            .table_name(self.table.as_ref())
            .billing_mode(BillingMode::PayPerRequest)
            .attribute_definitions(attribute("PK")?)
            .attribute_definitions(attribute("SK")?)
            .key_schema(key("PK", KeyType::Hash)?)
            .key_schema(key("SK", KeyType::Range)?)
            .stream_specification(super::stream::stream_specification()?);
        for slot in slots {
            request = request
                .attribute_definitions(attribute(&keys::slot_partition_attribute(*slot))?)
                .attribute_definitions(attribute(&keys::slot_sort_attribute(*slot))?)
                .global_secondary_indexes(index_definition(*slot)?);
        }
        request.send().await.map(drop).map_err(classify)
    }

    /// Adds one generic index to the table. DynamoDB takes one index change per UpdateTable.
    pub async fn create_index(&self, slot: u8) -> Result<(), StoreError> {
        let index = index_definition(slot)?;
        let action = CreateGlobalSecondaryIndexAction::builder()
            .index_name(index.index_name())
            .set_key_schema(Some(index.key_schema))
            .set_projection(index.projection)
            .build()
            .map_err(|e| StoreError::Other(e.to_string()))?;
        self.client
            .update_table()
            .table_name(self.table.as_ref())
            .attribute_definitions(attribute(&keys::slot_partition_attribute(slot))?)
            .attribute_definitions(attribute(&keys::slot_sort_attribute(slot))?)
            .global_secondary_index_updates(
                GlobalSecondaryIndexUpdate::builder().create(action).build(),
            )
            .send()
            .await
            .map(drop)
            .map_err(classify)
    }
}
