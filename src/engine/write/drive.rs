//! The one loop every write runs (a node's update and delete, batches of them, creates with
//! what they nest, edges, and `migrate`'s pages of nodes and unique values): read what the
//! write rests on and plan it, commit the plan, and when a condition fails, learn from the
//! write that failed (its [`Purpose`]) what to do next:
//!
//! - another writer got there first (`Node`, `Edge`): read and plan again, at most
//!   [`WRITE_ATTEMPTS`] times, then give up with `ConflictUnhandled` (a write of independent
//!   parts, a migration's page, reads again only the part that lost, and each part may lose
//!   that often: [`Driver::each_part`]);
//! - a former parent is gone, and its count with it (`Count`): plan again without it;
//! - a unique value is held at the key of its earlier form (`FreeUnique`): free it there;
//! - anything else is the client's answer (a taken unique value, a missing reference), told
//!   about the part of the write (the member of a batch) that failed.
//!
//! There is no pause after a lost race: it has just been decided, and the next consistent read
//! sees its winner. Reads of a global secondary index are not consistent, though: an attempt
//! that finds them behind the table ([`Attempt::Again`]) pauses before it reads again.

use std::collections::{BTreeSet, HashMap};

use super::plan::{Plan, Purpose, commit_at, refused};
use crate::engine::error::EngineError;
use crate::engine::read::read_node_consistent;
use crate::engine::scope::RequestScope;
use crate::keys;
use crate::model::TypeDef;
use crate::store::{AttrValue, Item, Key};

/// How often a write reads again after losing a race to another writer.
pub const WRITE_ATTEMPTS: usize = 5;
/// The pause before reading again what did not agree with itself, times the attempts lost: a
/// global secondary index follows its table within a fraction of a second.
const LAG_PAUSE: std::time::Duration = std::time::Duration::from_millis(50);

/// What one attempt of a write found to do.
pub enum Attempt<T> {
    /// Commit the plan, then answer `T`.
    Write(Plan, T),
    /// Commit the plan, a step towards the write (a part of a node's edges removed before
    /// it is deleted), then attempt again.
    Step(Plan),
    /// Nothing to write: answer `T`.
    Answer(T),
    /// What was read does not agree with itself (a node's edge counts and the edges read of
    /// it, as an index read that lags behind the table can leave them): a lost race, tried
    /// again after a pause. (The last attempt is told, [`Learned::last_attempt`].)
    Again,
}

/// What earlier attempts learned, for the next one to plan with.
#[derive(Clone, Default)]
pub struct Learned {
    /// Nodes found gone: a count taken from one of them is left out.
    pub absent: BTreeSet<String>,
    /// Attempts that found what they read disagreeing with itself ([`Attempt::Again`]).
    pub disagreed: usize,
    /// The part whose write lost the last race, for a write of independent parts (a
    /// migration's page of nodes) to read again only that one.
    pub lost_part: Option<usize>,
}

impl Learned {
    /// Whether the next attempt is the last: one that still finds its reads disagreeing acts
    /// on what it read rather than give up.
    pub fn last_attempt(&self) -> bool {
        self.disagreed + 1 >= WRITE_ATTEMPTS
    }
}

/// Runs a write's attempts (see the module's doc).
pub struct Driver<'a> {
    scope: &'a RequestScope,
    /// What the write is, for the log line of one that gives up.
    what: &'static str,
    /// Whether its parts are members of a batch, which an error names.
    batch: bool,
    /// The type and id of each part, whose unique values may be held at an earlier key; a
    /// write that frees none of its own has none.
    holders: Option<(&'a TypeDef, &'a [String])>,
    /// Whether each part may lose [`WRITE_ATTEMPTS`] races of its own (its parts are
    /// independent nodes, each read again alone), rather than the write as a whole.
    each_part: bool,
}

impl<'a> Driver<'a> {
    pub fn new(scope: &'a RequestScope, what: &'static str) -> Self {
        Driver {
            scope,
            what,
            batch: false,
            holders: None,
            each_part: false,
        }
    }

    /// Each part may lose [`WRITE_ATTEMPTS`] races: the parts are independent nodes, and the
    /// attempt reads again only the one that lost ([`Learned::lost_part`]).
    pub fn each_part(mut self) -> Self {
        self.each_part = true;
        self
    }

    /// Errors name the member of the batch that failed.
    pub fn batch(mut self, batch: bool) -> Self {
        self.batch = batch;
        self
    }

    /// The write frees unique values of the nodes `ids` (one per part) of `type_def`.
    pub fn freeing(mut self, type_def: &'a TypeDef, ids: &'a [String]) -> Self {
        self.holders = Some((type_def, ids));
        self
    }

    /// An error of part `part`, as the client is told it.
    fn of_part(&self, part: usize, error: EngineError) -> EngineError {
        if self.batch {
            error.in_batch(part)
        } else {
            error
        }
    }

    /// Runs `attempt` (read and plan, with what earlier attempts learned) and commits what it
    /// planned, until a write commits or fails for good. (`attempt` is a closure returning a
    /// future rather than an async closure: the future of an async closure that borrows its
    /// argument cannot be proven `Send` for every lifetime, which the server's handlers need.)
    pub async fn run<T, F, A>(self, attempt: F) -> Result<T, EngineError>
    where
        F: FnMut(Learned) -> A,
        A: Future<Output = Result<Attempt<T>, EngineError>>,
    {
        self.run_as(attempt).await
    }

    /// [`run`](Self::run) for a caller with errors of its own (a migration's), which the
    /// engine's convert into.
    pub async fn run_as<T, E, F, A>(self, mut attempt: F) -> Result<T, E>
    where
        E: From<EngineError>,
        F: FnMut(Learned) -> A,
        A: Future<Output = Result<Attempt<T>, E>>,
    {
        let mut learned = Learned::default();
        let mut held_at = HashMap::new();
        let mut lost = 0;
        let mut lost_by_part: HashMap<usize, usize> = HashMap::new();
        while lost < WRITE_ATTEMPTS {
            let (mut plan, answer) = match attempt(learned.clone()).await? {
                Attempt::Write(plan, answer) => (plan, Some(answer)),
                Attempt::Step(plan) => (plan, None),
                Attempt::Answer(answer) => return Ok(answer),
                Attempt::Again => {
                    lost += 1;
                    learned.disagreed += 1;
                    tokio::time::sleep(LAG_PAUSE * u32::try_from(lost).unwrap_or(1)).await;
                    continue;
                }
            };
            plan.free_at(&held_at);
            learned.lost_part = None;
            match commit_at(self.scope, plan).await? {
                Ok(()) => match answer {
                    Some(answer) => return Ok(answer),
                    None => continue,
                },
                Err((part, Purpose::Node | Purpose::Edge)) => {
                    learned.lost_part = Some(part);
                    if !self.each_part {
                        lost += 1;
                        continue;
                    }
                    let lost_here = lost_by_part.entry(part).or_default();
                    *lost_here += 1;
                    if *lost_here >= WRITE_ATTEMPTS {
                        break;
                    }
                }
                Err((_, Purpose::Count { id })) => {
                    learned.absent.insert(id);
                }
                Err((part, Purpose::FreeUnique)) => {
                    let Some((type_def, ids)) = self.holders else {
                        tracing::error!(part, "a write freed a unique value it did not hold");
                        return Err(EngineError::Internal.into());
                    };
                    let id = ids.get(part).ok_or(EngineError::Internal)?;
                    if !hold_earlier_form(self.scope, type_def, id, &mut held_at).await? {
                        return Err(self
                            .of_part(part, unique_item_owned_elsewhere(type_def, id))
                            .into());
                    }
                }
                Err((part, purpose)) => return Err(self.of_part(part, refused(purpose)).into()),
            }
        }
        tracing::warn!(
            write = self.what,
            "gave up after losing every race to other writers"
        );
        Err(EngineError::ConflictUnhandled.into())
    }
}

/// Adds to `held_at` (today's key → the key the node holds) the unique values the node `id`
/// holds in the form written before values were compared by Unicode normalization, while
/// another node holds them as values are compared today (two values then distinct, such as
/// "Straße" and "STRASSE", that `migrate` found colliding). Freeing such a value frees the
/// earlier key, so the node can still change or drop it. Answers whether any was new, that is,
/// whether the write is worth trying again. Only called when a free was refused.
async fn hold_earlier_form(
    scope: &RequestScope,
    type_def: &TypeDef,
    id: &str,
    held_at: &mut HashMap<String, String>,
) -> Result<bool, EngineError> {
    let Some(current) = read_node_consistent(scope, &type_def.name, id).await? else {
        return Ok(false);
    };
    let owner = |item: Option<Item>| {
        item.and_then(|item| {
            item.get("id")
                .and_then(AttrValue::as_str)
                .map(str::to_owned)
        })
    };
    let holder = |key: String| async move {
        let item = scope.store.get_item_consistent(&Key::same(key)).await;
        item.map(owner).map_err(|e| EngineError::from_store(&e))
    };
    let mut found = false;
    for field in type_def.unique_fields() {
        let Some(value) = current.get(&field.name) else {
            continue;
        };
        let value = crate::engine::derive::unique_text(value);
        let today = keys::unique_key(&type_def.name, &field.name, &value);
        let earlier = keys::unique_key_v1(&type_def.name, &field.name, &value);
        if today == earlier || held_at.contains_key(&today) {
            continue;
        }
        if holder(today.clone())
            .await?
            .is_some_and(|holder| holder != id)
            && holder(earlier.clone()).await?.as_deref() == Some(id)
        {
            held_at.insert(today, earlier);
            found = true;
        }
    }
    Ok(found)
}

/// A unique value the node holds is reserved for another node: the table broke an invariant.
fn unique_item_owned_elsewhere(type_def: &TypeDef, id: &str) -> EngineError {
    tracing::error!(
        type_name = %type_def.name,
        %id,
        "integrity: a unique value of this node is reserved by another node"
    );
    EngineError::Internal
}
