//! One level of a query, read as the engine plans it. A front end hands each read the level's
//! [`Selection`] (what the query asks of the nodes read there); the engine runs the read (a
//! node by id or by a unique value, nodes by ids, the targets of an edge set, a page of a list,
//! an index or a connection field, with its count) and then reads ahead, in one batch, the
//! nodes the next level's selected relations will need (see `ahead`).
//!
//! Invariant: a front end crosses into the engine once per level, here; what it gets back are
//! [`Node`]s and [`Page`]s to shape, never a plan to finish.

use super::ahead::read_ahead;
use super::connections::{
    Connection, Page, empty_page, read_field_page, read_page, total_count, whole_connection,
};
use super::deltas::{DeltaStart, read_delta_page};
use super::lists::{empty_list_page, list_total_count, read_list_page};
use super::nodes::{
    Node, load_node, load_node_by_unique, load_node_or_null, load_nodes, load_nodes_each,
};
use super::page_request::{PageRequest, Prefetch};
use super::selection::{PageSelection, Selection};
use crate::engine::rules::Access;
use crate::engine::{EngineError, RequestScope, derive};
use crate::model::{Model, TypeDef};
use crate::store::Filter;

/// The reads of one request's levels: its scope and model.
#[derive(Clone, Copy)]
pub struct Level<'a> {
    scope: &'a RequestScope,
    model: &'a Model,
}

/// The page a query asks of one of a node's edge connections, read before the node itself
/// (see [`Level::node_with_page`]).
pub struct AskedPage<'a> {
    pub connection: &'a Connection,
    /// The field's response key (its alias, or its name), which the page goes down to.
    pub response_key: &'a str,
    pub request: PageRequest,
}

/// A `@targets` field: the nodes its parent's edge set lists for one edge type (and role).
#[derive(Debug, Clone)]
pub struct Targets {
    edge: String,
    role_sort: Option<String>,
    element: String,
    /// The types a target may be: the element type, or the members of its union.
    allowed: Vec<String>,
    /// Whether every target of the edge is of the element type, checked when the edge was
    /// added: a query that wants only the targets' ids needs no read at all.
    identity_known: bool,
}

impl Targets {
    /// The targets of `edge` (of `role`, when given) as nodes of `element`.
    pub fn of(model: &Model, edge: &str, element: &str, role: Option<&str>) -> Targets {
        let edge_def = model
            .edge_def(edge)
            .expect("the model checked that @targets names an edge type");
        let is_union = model.union_def(element).is_some();
        Targets {
            edge: edge.to_owned(),
            role_sort: derive::role_sort_value(model, edge_def, role),
            element: element.to_owned(),
            allowed: model
                .possible_types(element)
                .into_iter()
                .map(str::to_owned)
                .collect(),
            identity_known: !is_union && model.possible_types(&edge_def.to) == [element],
        }
    }
}

impl<'a> Level<'a> {
    pub fn new(scope: &'a RequestScope, model: &'a Model) -> Level<'a> {
        Level { scope, model }
    }

    /// The node `id` of one of `allowed`; with `missing_is_null` (Amplify's `get<Type>`, as
    /// AppSync answers it) a node that is not there is `None` whoever asks.
    pub async fn node(
        &self,
        id: &str,
        allowed: &[&str],
        missing_is_null: bool,
        selection: &Selection<'_>,
    ) -> Result<Option<Node>, EngineError> {
        let node = match missing_is_null {
            true => load_node_or_null(self.scope, id, allowed).await?,
            false => load_node(self.scope, id, allowed).await?,
        };
        if let Some(node) = &node {
            read_ahead(self.scope, self.model, &[node], selection).await?;
        }
        Ok(node)
    }

    /// The node `id` of `type_name`, with the page `asked` (of one of its edge connections, when
    /// the query selects nothing of the node but its id and such connections) read first and
    /// handed down with it. An edge of that page proves the node exists with its type, so the
    /// node itself is then not read. `asked` is called only when the caller may read every
    /// node of the type: an edge proves the node exists, not that the caller may read it.
    pub async fn node_with_page<'p>(
        &self,
        (type_name, id): (&str, &str),
        asked: impl FnOnce() -> Result<Option<AskedPage<'p>>, EngineError>,
        missing_is_null: bool,
        selection: &Selection<'_>,
    ) -> Result<Option<Node>, EngineError> {
        let ahead = match self.scope.read_access(&[type_name]) {
            Access::All => self.page_ahead((id, type_name), asked()?).await?,
            _ => None,
        };
        // The page read ahead goes down with the node, to the field it was read for.
        Ok(match ahead {
            Some(ahead) if ahead.proves_parent() => {
                Some(Node::identity(type_name, id).with_prefetch(ahead))
            }
            ahead => self
                .node(id, &[type_name], missing_is_null, selection)
                .await?
                .map(|node| match ahead {
                    Some(ahead) => node.with_prefetch(ahead),
                    None => node,
                }),
        })
    }

    async fn page_ahead(
        &self,
        (parent_id, parent_type): (&str, &str),
        asked: Option<AskedPage<'_>>,
    ) -> Result<Option<Prefetch>, EngineError> {
        let Some(asked) = asked else {
            return Ok(None);
        };
        super::connections::read_ahead(
            self.scope,
            self.model,
            asked.connection,
            (parent_id, parent_type),
            asked.response_key,
            &asked.request,
        )
        .await
    }

    /// The nodes `ids`, each of one of `allowed`, in order: each a node, `None`, or the error
    /// of its own id.
    pub async fn nodes_each(
        &self,
        ids: &[String],
        allowed: &[&str],
        selection: &Selection<'_>,
    ) -> Result<Vec<Result<Option<Node>, EngineError>>, EngineError> {
        let nodes = load_nodes_each(self.scope, ids, allowed).await?;
        let found: Vec<&Node> = nodes.iter().flatten().flatten().collect();
        read_ahead(self.scope, self.model, &found, selection).await?;
        Ok(nodes)
    }

    /// The node of `type_name` whose unique `field` is `value`.
    pub async fn node_by_unique(
        &self,
        (type_name, field): (&str, &str),
        value: &str,
        selection: &Selection<'_>,
    ) -> Result<Option<Node>, EngineError> {
        let node = load_node_by_unique(self.scope, type_name, field, value).await?;
        if let Some(node) = &node {
            read_ahead(self.scope, self.model, &[node], selection).await?;
        }
        Ok(node)
    }

    /// The targets of `parent` that `targets` lists, in its edge set's order, those the caller
    /// may not read left out. When the query asks them for nothing but their identity and
    /// every target is known to be of the element type, nothing is read.
    pub async fn targets(
        &self,
        parent: &Node,
        targets: &Targets,
        selection: &Selection<'_>,
    ) -> Result<Vec<Node>, EngineError> {
        let ids: Vec<&str> =
            derive::targets(&parent.item, &targets.edge, targets.role_sort.as_deref()).collect();
        // Targets the caller may not read are left out, so each is read.
        let readable = self.scope.read_access(&[targets.element.as_str()]) == Access::All;
        if targets.identity_known && readable && selection.only_identity() {
            return Ok(ids
                .into_iter()
                .map(|id| Node::identity(&targets.element, id))
                .collect());
        }
        let allowed: Vec<&str> = targets.allowed.iter().map(String::as_str).collect();
        let nodes: Vec<Node> = load_nodes(self.scope, &ids, &allowed)
            .await?
            .into_iter()
            .flatten()
            .collect();
        self.read_ahead(&nodes, selection).await?;
        Ok(nodes)
    }

    /// Reads ahead for nodes found another way (a resolver file's steps).
    pub async fn read_ahead(
        &self,
        nodes: &[Node],
        selection: &Selection<'_>,
    ) -> Result<(), EngineError> {
        let found: Vec<&Node> = nodes.iter().collect();
        read_ahead(self.scope, self.model, &found, selection).await
    }

    /// The page `request` of `type_def`'s list (`listFarms`), with its total when selected.
    pub async fn list_page(
        &self,
        type_def: &TypeDef,
        request: &PageRequest,
        selection: &PageSelection<'_>,
    ) -> Result<Page, EngineError> {
        if selection.counted {
            whole_connection(request, &type_def.roots.list_name(&type_def.name))?;
        }
        let read = async {
            match reads_nothing(request, selection) {
                true => empty_list_page(self.scope, type_def, request),
                false => read_list_page(self.scope, type_def, request).await,
            }
        };
        let (page, count) = futures::join!(read, async {
            match selection.counted {
                true => list_total_count(self.scope, type_def).await.map(Some),
                false => Ok(None),
            }
        });
        let mut page = page?;
        page.total_count = count?;
        self.page_nodes_ahead(&page, selection).await?;
        Ok(page)
    }

    /// A delta sync's page of `type_def`: the writes from `start`, at most `limit` of them
    /// read, their nodes where the caller may read them and `filter` holds.
    pub async fn delta_page(
        &self,
        type_def: &TypeDef,
        (start, limit): (&DeltaStart, usize),
        filter: Option<&Filter>,
        selection: &PageSelection<'_>,
    ) -> Result<Page, EngineError> {
        let page =
            read_delta_page((self.scope, self.model), type_def, start, limit, filter).await?;
        self.page_nodes_ahead(&page, selection).await?;
        Ok(page)
    }

    /// The page `request` of an index's `connection` under the index value `value`.
    pub async fn index_page(
        &self,
        connection: &Connection,
        value: &str,
        request: &PageRequest,
        selection: &PageSelection<'_>,
    ) -> Result<Page, EngineError> {
        let page = match reads_nothing(request, selection) {
            true => empty_page(self.scope, self.model, connection, value, request)?,
            false => read_page(self.scope, self.model, connection, value, request, true).await?,
        };
        self.page_nodes_ahead(&page, selection).await?;
        Ok(page)
    }

    /// The page `request` of `parent`'s connection field (answered under `response_key`), with
    /// its total when selected; a page read ahead with the parent is taken, not read again.
    pub async fn field_page(
        &self,
        connection: &Connection,
        (parent, response_key): (&Node, &str),
        request: &PageRequest,
        selection: &PageSelection<'_>,
    ) -> Result<Page, EngineError> {
        if selection.counted {
            whole_connection(request, &connection.field)?;
        }
        let mut page = match reads_nothing(request, selection) {
            true => empty_page(self.scope, self.model, connection, parent.id(), request)?,
            false => {
                let with_nodes = selection.nodes.is_some();
                let field = (parent, response_key);
                read_field_page(
                    self.scope, self.model, connection, field, request, with_nodes,
                )
                .await?
            }
        };
        if selection.counted {
            page.total_count = Some(total_count(self.scope, connection, parent).await?);
        }
        self.page_nodes_ahead(&page, selection).await?;
        Ok(page)
    }

    async fn page_nodes_ahead(
        &self,
        page: &Page,
        selection: &PageSelection<'_>,
    ) -> Result<(), EngineError> {
        let Some(nodes_selection) = &selection.nodes else {
            return Ok(());
        };
        let nodes: Vec<&Node> = page.edges.iter().filter_map(|e| e.node.as_ref()).collect();
        read_ahead(self.scope, self.model, &nodes, nodes_selection).await
    }
}

/// Whether the page asked for needs no read: a page of nothing (`first: 0`) whose reader does
/// not ask whether more pages follow (`pageInfo`, `nextToken`), as for a count alone.
fn reads_nothing(request: &PageRequest, selection: &PageSelection<'_>) -> bool {
    request.size == 0 && !selection.asks_more
}
