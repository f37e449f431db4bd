//! B2, the hand-written peer: what a Rust team writes instead of tablegraph for W1 (a node by
//! id) and the Koan page (W2), on the same table and the same data.
//!
//! A static async-graphql schema (derive macros), async-graphql's own `DataLoader` (one per
//! request, batching the request's reads by key into BatchGetItem calls of up to 100 keys, as
//! tablegraph's loader does; see "One loader per request" below), `aws-sdk-dynamodb`, and the
//! embedded store reached the way tablegraph reaches it: dynoxide in this process on a runtime of
//! its own (threads named `embedded-store`, as tablegraph's, so the benchmark counts their CPU
//! alike), the SDK's requests handed to it, unsigned, by tablegraph's own in-process HTTP
//! client, reads on readers beside dynoxide's connection (the same source file), so the two
//! servers differ above the SDK only. It holds a copy of a seeded tablegraph table
//! (`--snapshot FILE`: the `tablegraph.db` of a `tablegraph serve --data-dir`). The items are read in tablegraph's layout: nodes at
//! `NODE#<id>`, a team's goal memberships from `GSI01` (`PK01` = `GoalMembership#<team id>`),
//! a goal's leads and teams from its edge set (`GoalMembership#<to id>#<rank>-<ROLE>`).
//!
//! The page costs four storage calls here: the team, its memberships, their goals, and the
//! goals' leads and teams (tablegraph reads the team with the last level: three).
//!
//! # One loader per request
//!
//! A loader shared by the whole process (as async-graphql's book sets one up) batches the
//! reads of concurrent requests together, and every client of this benchmark asks for the same
//! page, so at 32 connections one BatchGetItem would serve many requests' goals at once: it
//! would measure how alike the requests are, not what a page costs. A loader per request
//! (the usual advice for data loaders, and tablegraph's design: its storage calls are counted
//! and budgeted per request) makes the same calls for every request, alone or under load.
//! `bench/PROFILE.md` gives the figures of both.

use std::collections::HashMap;
use std::sync::Arc;

use async_graphql::dataloader::{DataLoader, Loader};
use async_graphql::{Context, EmptyMutation, EmptySubscription, ID, Interface, Object, Schema};
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};

const TABLE: &str = "tablegraph";
const MEMBERSHIP: &str = "GoalMembership";

/// tablegraph's allocator (its `src/main.rs`), so that the two compare code, not allocators.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

type Item = HashMap<String, AttributeValue>;

fn text<'a>(item: &'a Item, name: &str) -> &'a str {
    item.get(name)
        .and_then(|value| value.as_s().ok())
        .map_or("", String::as_str)
}

fn node_key(id: &str) -> Item {
    let key = AttributeValue::S(format!("NODE#{id}"));
    HashMap::from([("PK".to_owned(), key.clone()), ("SK".to_owned(), key)])
}

/// Nodes by id, in BatchGetItem calls of up to 100 keys.
struct NodeLoader {
    client: Client,
}

impl Loader<String> for NodeLoader {
    type Value = Arc<Item>;
    type Error = Arc<aws_sdk_dynamodb::Error>;

    async fn load(&self, ids: &[String]) -> Result<HashMap<String, Arc<Item>>, Self::Error> {
        let mut nodes = HashMap::with_capacity(ids.len());
        for chunk in ids.chunks(100) {
            let keys = KeysAndAttributes::builder()
                .set_keys(Some(chunk.iter().map(|id| node_key(id)).collect()))
                .build()
                .map_err(|e| Arc::new(aws_sdk_dynamodb::Error::from(e)))?;
            let mut pending = Some(keys);
            while let Some(keys) = pending.take() {
                let output = self
                    .client
                    .batch_get_item()
                    .request_items(TABLE, keys)
                    .send()
                    .await
                    .map_err(|e| Arc::new(e.into()))?;
                let items = output
                    .responses
                    .and_then(|mut tables| tables.remove(TABLE))
                    .unwrap_or_default();
                for item in items {
                    let id = text(&item, "PK").trim_start_matches("NODE#").to_owned();
                    nodes.insert(id, Arc::new(item));
                }
                pending = output
                    .unprocessed_keys
                    .and_then(|mut tables| tables.remove(TABLE))
                    .filter(|keys| !keys.keys().is_empty());
            }
        }
        Ok(nodes)
    }
}

type Nodes = Arc<DataLoader<NodeLoader>>;

/// A loader of nodes; one per request unless `B2_SHARED_LOADER` is set (one for the process,
/// for the comparison in `bench/PROFILE.md`).
fn new_loader(client: &Client) -> Nodes {
    let loader = NodeLoader {
        client: client.clone(),
    };
    Arc::new(DataLoader::new(loader, tokio::spawn).max_batch_size(100))
}

/// The node `id` if it is a `typename`.
async fn load(
    ctx: &Context<'_>,
    id: &str,
    typename: &str,
) -> async_graphql::Result<Option<Arc<Item>>> {
    let item = ctx
        .data_unchecked::<Nodes>()
        .load_one(id.to_owned())
        .await?;
    Ok(item.filter(|item| text(item, "__typename") == typename))
}

/// Every node of `typename` among `ids`, in their order.
async fn load_all(
    ctx: &Context<'_>,
    ids: Vec<String>,
    typename: &str,
) -> async_graphql::Result<Vec<Arc<Item>>> {
    let nodes = ctx
        .data_unchecked::<Nodes>()
        .load_many(ids.iter().cloned())
        .await?;
    Ok(ids
        .iter()
        .filter_map(|id| nodes.get(id))
        .filter(|item| text(item, "__typename") == typename)
        .cloned()
        .collect())
}

fn node_id(item: &Item) -> ID {
    ID(text(item, "PK").trim_start_matches("NODE#").to_owned())
}

struct Farm(Arc<Item>);

#[Object]
impl Farm {
    async fn id(&self) -> ID {
        node_id(&self.0)
    }
    async fn name(&self) -> &str {
        text(&self.0, "name")
    }
}

struct User(Arc<Item>);

#[Object]
impl User {
    async fn id(&self) -> ID {
        node_id(&self.0)
    }
    async fn name(&self) -> &str {
        text(&self.0, "name")
    }
}

struct Team(Arc<Item>);

#[Object]
impl Team {
    async fn id(&self) -> ID {
        node_id(&self.0)
    }
    async fn name(&self) -> &str {
        text(&self.0, "name")
    }
    /// The goals this team is a member of, in the order of the memberships' sort keys.
    async fn goals(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
    ) -> async_graphql::Result<GoalConnection> {
        let first = first.unwrap_or(20).clamp(0, 100);
        let client = &ctx.data_unchecked::<Nodes>().loader().client;
        let output = client
            .query()
            .table_name(TABLE)
            .index_name("GSI01")
            .key_condition_expression("PK01 = :pk")
            .expression_attribute_values(
                ":pk",
                AttributeValue::S(format!("{MEMBERSHIP}#{}", node_id(&self.0).0)),
            )
            .limit(first)
            .send()
            .await
            .map_err(|e| async_graphql::Error::new(aws_sdk_dynamodb::Error::from(e).to_string()))?;
        let edges = output
            .items
            .unwrap_or_default()
            .into_iter()
            .map(|item| GoalEdge {
                role: text(&item, "role").to_owned(),
                goal: text(&item, "PK").trim_start_matches("NODE#").to_owned(),
            })
            .collect();
        Ok(GoalConnection { edges })
    }
}

struct GoalConnection {
    edges: Vec<GoalEdge>,
}

#[Object]
impl GoalConnection {
    async fn edges(&self) -> &[GoalEdge] {
        &self.edges
    }
}

struct GoalEdge {
    role: String,
    goal: String,
}

#[Object]
impl GoalEdge {
    async fn role(&self) -> &str {
        &self.role
    }
    async fn node(&self, ctx: &Context<'_>) -> async_graphql::Result<Option<Goal>> {
        Ok(load(ctx, &self.goal, "Goal").await?.map(Goal))
    }
}

struct Goal(Arc<Item>);

impl Goal {
    /// The ids of the goal's memberships with `role`, from its edge set.
    fn members(&self, role: &str) -> Vec<String> {
        let Some(Ok(entries)) = self.0.get("edges").map(AttributeValue::as_ss) else {
            return Vec::new();
        };
        entries
            .iter()
            .filter_map(|entry| {
                let mut parts = entry.splitn(3, '#');
                let (edge, to, rank) = (parts.next()?, parts.next()?, parts.next()?);
                let is_role = rank.split_once('-').is_some_and(|(_, name)| name == role);
                (edge == MEMBERSHIP && is_role).then(|| to.to_owned())
            })
            .collect()
    }
}

#[Object]
impl Goal {
    async fn id(&self) -> ID {
        node_id(&self.0)
    }
    async fn title(&self) -> &str {
        text(&self.0, "title")
    }
    async fn leads(&self, ctx: &Context<'_>) -> async_graphql::Result<Vec<User>> {
        let users = load_all(ctx, self.members("LEAD"), "User").await?;
        Ok(users.into_iter().map(User).collect())
    }
    async fn teams(&self, ctx: &Context<'_>) -> async_graphql::Result<Vec<Team>> {
        let teams = load_all(ctx, self.members("TEAM"), "Team").await?;
        Ok(teams.into_iter().map(Team).collect())
    }
}

#[derive(Interface)]
#[graphql(field(name = "id", ty = "ID"))]
enum Node {
    Farm(Farm),
    Goal(Goal),
    Team(Team),
    User(User),
}

struct Query;

#[Object]
impl Query {
    async fn node(&self, ctx: &Context<'_>, id: ID) -> async_graphql::Result<Option<Node>> {
        let item = ctx.data_unchecked::<Nodes>().load_one(id.0).await?;
        Ok(item.and_then(|item| match text(&item, "__typename") {
            "Farm" => Some(Node::Farm(Farm(item))),
            "Goal" => Some(Node::Goal(Goal(item))),
            "Team" => Some(Node::Team(Team(item))),
            "User" => Some(Node::User(User(item))),
            _ => None,
        }))
    }
    async fn team(&self, ctx: &Context<'_>, id: ID) -> async_graphql::Result<Option<Team>> {
        Ok(load(ctx, &id, "Team").await?.map(Team))
    }
}

/// tablegraph's SDK HTTP client for its embedded store, the same file: each request the SDK
/// builds is handed to dynoxide's operations in this process, on the store's runtime.
#[path = "../../../../src/store/in_process.rs"]
#[allow(dead_code)] // B2 keeps its store in memory; the file's other uses are tablegraph's.
mod in_process;

/// Starts the embedded store holding a copy of `snapshot`, on a runtime of its own (one worker
/// per core, threads named `embedded-store`, as tablegraph's), and returns the SDK HTTP client
/// that reaches it.
fn start_store(snapshot: &str) -> aws_smithy_runtime_api::client::http::SharedHttpClient {
    let connections = in_process::Connections::memory().expect("an in-memory database");
    connections
        .writer()
        .restore_from(snapshot)
        .unwrap_or_else(|e| panic!("cannot read the snapshot {snapshot}: {e}"));
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("embedded-store")
        .enable_all()
        .build()
        .expect("the store's runtime");
    let client = in_process::client(
        Arc::new(std::sync::RwLock::new(Some(Arc::new(connections)))),
        runtime.handle().clone(),
    );
    // The runtime lives as long as the process.
    std::mem::forget(runtime);
    client
}

#[tokio::main]
async fn main() {
    let args = tablegraph_bench_baselines::args();
    let Some(snapshot) = args.snapshot else {
        eprintln!(
            "b2 needs --snapshot FILE (the tablegraph.db of a seeded `tablegraph serve --data-dir`)"
        );
        std::process::exit(2);
    };
    let http = start_store(&snapshot);
    let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "b2", "local", None, None, "b2",
        ))
        .endpoint_url("http://embedded-store.invalid")
        .http_client(http)
        .load()
        .await;
    // Not signed, as tablegraph's client of its embedded store (`in_process::UNSIGNED`).
    let config = aws_sdk_dynamodb::config::Builder::from(&config)
        .allow_no_auth()
        .auth_scheme_preference([in_process::UNSIGNED])
        .build();
    let client = Client::from_conf(config);
    let schema = Schema::build(Query, EmptyMutation, EmptySubscription).finish();
    let shared = std::env::var_os("B2_SHARED_LOADER")
        .is_some()
        .then(|| new_loader(&client));
    let prepare = Arc::new(move |request: async_graphql::Request| match &shared {
        Some(loader) => request.data(loader.clone()),
        None => request.data(new_loader(&client)),
    });
    tablegraph_bench_baselines::serve_graphql(schema, prepare, args.listen).await;
}
