//! The answers of the schema's own mutations that declared subscriptions follow (AppSync's
//! pub/sub through local resolvers): each answer is written over its mutation's published item
//! (`keys::published_key`), and the table's change stream carries that write to the
//! subscribers of every replica (`changes`), as it carries every node's. One item per mutation,
//! overwritten: the table keeps the last answer only, and an answer is never lost to a replica
//! that did not make it.

use crate::changes::PUBLISHED_ANSWER;
use crate::engine::{EngineError, RequestScope};
use crate::keys;
use crate::store::{AttrValue, Item, Write, item_size};

/// The largest answer published: its item, and the relay item that carries it to other
/// replicas, stay within DynamoDB's 400 KB. An event's own limit (`--max-event-bytes`, 240 KB
/// as AppSync's) is then applied at delivery, as to every event.
pub const MAX_PUBLISHED_BYTES: usize = 300 * 1024;

/// Publishes `answer`, an answer of the schema's own mutation `mutation`, to the subscriptions
/// that follow it. An answer over [`MAX_PUBLISHED_BYTES`] is refused, and reaches nobody.
pub async fn publish(
    scope: &RequestScope,
    mutation: &str,
    answer: Item,
) -> Result<(), EngineError> {
    if item_size(&answer) > MAX_PUBLISHED_BYTES {
        return Err(EngineError::LimitExceeded(format!(
            "the answer of {mutation} is larger than a published answer may be (300 KB), so no \
             subscriber was told of it"
        )));
    }
    let key = keys::published_key(mutation);
    let item = Item::from_iter([
        (keys::PK.to_owned(), AttrValue::S(key.clone())),
        (keys::SK.to_owned(), AttrValue::S(key)),
        (PUBLISHED_ANSWER.to_owned(), AttrValue::M(answer)),
        // A write that changes nothing makes no stream record: each answer is its own event.
        ("event".to_owned(), AttrValue::S(keys::new_id())),
    ]);
    scope
        .store
        .transact_write(vec![Write::Put {
            item,
            condition: Vec::new(),
        }])
        .await
        .map_err(|error| EngineError::from_store(&error))
}
