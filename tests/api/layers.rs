//! The code's structure, read from `src/`: no import circles between files (a `mod.rs` that
//! re-exports its children counts as importing them), and dependencies that point one way,
//! `http → graphql → engine → loaders → changes → store → keys`, with `model` usable by all;
//! `graphql` imports neither `store`, `keys` nor `loaders`: it goes through the engine. Heavy crates
//! each have one home.
//!
//! The same check runs with `cargo test --test api layers`; it reads the sources as text, so a
//! path in a string or a doc comment is not an import.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module path (`["graphql", "query"]`) → its file's text, without comments.
type Sources = BTreeMap<Vec<String>, String>;

fn sources() -> Sources {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    collect(&root, &mut files);
    files
        .into_iter()
        .map(|path| {
            let relative = path.strip_prefix(&root).expect("a file under src/");
            let mut module: Vec<String> = relative
                .with_extension("")
                .iter()
                .map(|part| part.to_string_lossy().into_owned())
                .collect();
            if module.last().is_some_and(|last| last == "mod") {
                module.pop();
            }
            if module == ["lib"] || module == ["main"] {
                module.clear();
            }
            let text = std::fs::read_to_string(&path).expect("a readable source file");
            let text = without_visibility_paths(&without_comments(&text));
            (module, inline_modules_as_file(&text))
        })
        .collect()
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a readable directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            collect(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

fn without_comments(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text without the paths of visibilities (`pub(in crate::graphql)`): a module that may be
/// seen from another does not import it.
fn without_visibility_paths(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("pub(in ") {
        out.push_str(&rest[..at]);
        let end = rest[at..]
            .find(')')
            .map_or(rest.len(), |close| at + close + 1);
        out.push_str("pub(crate)");
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The text with `super::` inside an inline module (`mod tests { … }`) written as the file's
/// own `self::`, so that a test module's `use super::*` is not read as importing the parent.
fn inline_modules_as_file(text: &str) -> String {
    let inline = text.match_indices("mod ").find(|(at, _)| {
        let rest = &text[at + 4..];
        let name_end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        name_end > 0 && rest[name_end..].trim_start().starts_with('{')
    });
    match inline {
        Some((at, _)) => format!("{}{}", &text[..at], text[at..].replace("super::", "self::")),
        None => text.to_owned(),
    }
}

/// Every path the file of `module` names, from the crate root: `crate::…`, `super::…`,
/// `self::…`, the paths of `use` trees, and `use child::…` of the file's own child modules.
fn paths(module: &[String], text: &str) -> Vec<Vec<String>> {
    let children: BTreeSet<String> = text
        .split(';')
        .filter_map(|statement| {
            let statement = statement.trim();
            let rest = statement
                .strip_prefix("pub mod ")
                .or_else(|| statement.strip_prefix("mod "))?;
            Some(rest.trim().to_owned())
        })
        .collect();
    let base = |first: &str| -> Option<Vec<String>> {
        match first {
            "crate" => Some(Vec::new()),
            "self" => Some(module.to_vec()),
            "super" => Some(module[..module.len().saturating_sub(1)].to_vec()),
            child if children.contains(child) => {
                let mut path = module.to_vec();
                path.push(child.to_owned());
                Some(path)
            }
            _ => None,
        }
    };
    let mut found = Vec::new();
    let mut add = |segments: &[&str]| {
        let Some((first, rest)) = segments.split_first() else {
            return;
        };
        if let Some(mut path) = base(first) {
            let mut rest = rest;
            // `super::super::…`
            while rest.first() == Some(&"super") {
                path.pop();
                rest = &rest[1..];
            }
            path.extend(rest.iter().map(|s| (*s).to_owned()));
            found.push(path);
        }
    };
    for statement in text.split(';') {
        let statement = statement.trim();
        let tree = statement
            .strip_prefix("pub use ")
            .or_else(|| statement.strip_prefix("pub(crate) use "))
            .or_else(|| statement.strip_prefix("pub(super) use "))
            .or_else(|| statement.strip_prefix("use "));
        if let Some(tree) = tree {
            for path in expand(tree) {
                let segments: Vec<&str> = path.iter().map(String::as_str).collect();
                add(&segments);
            }
        }
    }
    let words: Vec<&str> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
        .collect();
    for word in words {
        // A word ending in `::` opens a `use` group, read above with its members.
        let named = ["crate::", "super::", "self::"]
            .iter()
            .any(|prefix| word.starts_with(prefix));
        if named && !word.ends_with("::") {
            let segments: Vec<&str> = word.split("::").filter(|s| !s.is_empty()).collect();
            add(&segments);
        }
    }
    found
}

/// The paths of a `use` tree: `a::{b, c::{d, e}}` → `a::b`, `a::c::d`, `a::c::e`.
fn expand(tree: &str) -> Vec<Vec<String>> {
    // `Name as Other` keeps the name: mark the rename, then drop the spaces.
    let tree = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let tree: String = tree
        .replace(" as ", "@")
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let mut out = Vec::new();
    expand_into(&tree, &mut Vec::new(), &mut out);
    out
}

fn expand_into(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree.find('{') {
        None => {
            let mut path = prefix.clone();
            let plain = tree.split('@').next().unwrap_or(tree);
            path.extend(
                plain
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned),
            );
            out.push(path);
        }
        Some(open) => {
            let head: Vec<String> = tree[..open]
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
            let depth = prefix.len();
            prefix.extend(head);
            for part in split_top_level(inner) {
                if part == "self" {
                    out.push(prefix.clone());
                } else if !part.is_empty() {
                    expand_into(part, prefix, out);
                }
            }
            prefix.truncate(depth);
        }
    }
}

fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (at, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// File → the files it imports from, each path resolved to the longest module that is a file.
fn imports(sources: &Sources) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    sources
        .iter()
        .map(|(module, text)| {
            let targets = paths(module, text)
                .into_iter()
                .filter_map(|path| {
                    (0..=path.len())
                        .rev()
                        .map(|n| path[..n].to_vec())
                        .find(|prefix| sources.contains_key(prefix))
                })
                .filter(|target| target != module && !target.is_empty())
                .collect();
            (module.clone(), targets)
        })
        .collect()
}

fn reachable(
    graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
    from: &[String],
) -> BTreeSet<Vec<String>> {
    let mut seen = BTreeSet::new();
    let mut pending = vec![from.to_vec()];
    while let Some(module) = pending.pop() {
        for next in graph.get(&module).into_iter().flatten() {
            if seen.insert(next.clone()) {
                pending.push(next.clone());
            }
        }
    }
    seen
}

fn name(module: &[String]) -> String {
    if module.is_empty() {
        "crate".to_owned()
    } else {
        module.join("::")
    }
}

#[test]
fn no_file_imports_a_file_that_imports_it_back() {
    let graph = imports(&sources());
    let mut circles = Vec::new();
    for module in graph.keys() {
        let reach = reachable(&graph, module);
        for other in &reach {
            if other > module && reachable(&graph, other).contains(module) {
                circles.push(format!("{} <-> {}", name(module), name(other)));
            }
        }
    }
    assert!(circles.is_empty(), "import circles: {circles:#?}");
}

#[test]
fn dependencies_point_one_way_between_layers() {
    let graph = imports(&sources());
    // Layer → the top-level modules it must never import.
    let forbidden: &[(&str, &[&str])] = &[
        (
            "model",
            &[
                "keys",
                "store",
                "changes",
                "loaders",
                "engine",
                "graphql",
                "http",
                "resolvers",
            ],
        ),
        (
            "keys",
            &[
                "store",
                "changes",
                "loaders",
                "engine",
                "graphql",
                "http",
                "resolvers",
            ],
        ),
        (
            "store",
            &[
                "changes",
                "loaders",
                "engine",
                "graphql",
                "http",
                "resolvers",
            ],
        ),
        (
            "changes",
            &["loaders", "engine", "graphql", "http", "resolvers"],
        ),
        ("loaders", &["engine", "graphql", "http"]),
        (
            "functions",
            &[
                "store",
                "changes",
                "loaders",
                "engine",
                "graphql",
                "http",
                "resolvers",
            ],
        ),
        (
            "resolvers",
            &["store", "changes", "loaders", "engine", "graphql", "http"],
        ),
        ("engine", &["graphql", "http"]),
        // The adapter hands the engine a selection per level and shapes what comes back: it
        // never reads the table or its keys itself.
        ("graphql", &["http", "store", "keys", "loaders"]),
        ("check", &["graphql", "http"]),
        ("migrate", &["graphql", "http"]),
        ("demo", &["graphql", "http"]),
        ("transfer", &["graphql", "http"]),
        ("amplify_import", &["graphql", "http"]),
    ];
    let mut wrong = Vec::new();
    for (module, targets) in &graph {
        let Some(layer) = module.first() else {
            continue;
        };
        let Some((_, never)) = forbidden.iter().find(|(name, _)| name == layer) else {
            continue;
        };
        for target in targets {
            if never.contains(&target[0].as_str()) {
                wrong.push(format!("{} -> {}", name(module), name(target)));
            }
        }
    }
    assert!(wrong.is_empty(), "imports against the layers: {wrong:#?}");
}

#[test]
fn the_engines_reads_never_import_its_writes() {
    // Writes read (a write plans from what it read); reads never write, and what both share
    // (the request's scope, the rules, the derivations) imports neither part.
    let graph = imports(&sources());
    let part = |module: &[String]| -> Option<&'static str> {
        match module {
            [engine, part, ..] if engine == "engine" && part == "read" => Some("read"),
            [engine, part, ..] if engine == "engine" && part == "write" => Some("write"),
            [engine, _] if engine == "engine" => Some("shared"),
            _ => None,
        }
    };
    let mut wrong = Vec::new();
    for (module, targets) in &graph {
        for target in targets {
            let against = matches!(
                (part(module), part(target)),
                (Some("read"), Some("write")) | (Some("shared"), Some("read" | "write"))
            );
            if against {
                wrong.push(format!("{} -> {}", name(module), name(target)));
            }
        }
    }
    assert!(
        graph.contains_key(&vec!["engine".to_owned(), "read".to_owned()])
            && graph.contains_key(&vec!["engine".to_owned(), "write".to_owned()]),
        "the engine has a read part and a write part"
    );
    assert!(
        wrong.is_empty(),
        "imports against the engine's parts: {wrong:#?}"
    );
}

#[test]
fn each_heavy_crate_stays_in_its_home() {
    // Crate → the top-level modules that may name it.
    let homes: &[(&str, &[&str])] = &[
        ("aws_sdk_dynamodb", &["store"]),
        ("aws_sdk_dynamodbstreams", &["store"]),
        ("aws_sdk_lambda", &["functions"]),
        ("async_graphql_axum", &["http"]),
        ("async_graphql", &["graphql", "http"]),
        ("axum", &["http", "app"]),
    ];
    let mut wrong = Vec::new();
    for (module, text) in sources() {
        let top = module.first().cloned().unwrap_or_default();
        for (krate, allowed) in homes {
            let named = text.match_indices(krate).any(|(at, _)| {
                let before = text[..at].chars().next_back();
                let after = text[at + krate.len()..].chars().next();
                !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                    && matches!(after, Some(':' | ';'))
            });
            if named && !allowed.contains(&top.as_str()) {
                wrong.push(format!("{} names {krate}", name(&module)));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "heavy crates out of their homes: {wrong:#?}"
    );
}

/// The text of a file before its test module (`#[cfg(test)]`).
fn before_tests(text: &str) -> &str {
    text.split("#[cfg(test)]").next().unwrap_or(text)
}

#[test]
fn requests_are_parsed_in_one_place_and_run_only_once_admitted() {
    // The parser is called once, after the text limits; a request's document is read only
    // where the admission set it; only the API and the transport run the schema.
    let allowed: &[(&str, &str)] = &[
        ("parse_query(", "graphql::admission::limits"),
        (".parsed_query(", "graphql::admission"),
        ("execute_stream_with_session_data(", "graphql::api"),
    ];
    let mut wrong = Vec::new();
    for (module, text) in sources() {
        let file = name(&module);
        for (call, home) in allowed {
            // An extension's own `parse_query` hook is a method it declares, not a call.
            let calls = before_tests(&text)
                .match_indices(call)
                .filter(|(at, _)| !text[..*at].ends_with("fn "))
                .count();
            if calls > 0 && file != *home {
                wrong.push(format!("{file} calls {call}"));
            }
        }
    }
    assert!(wrong.is_empty(), "outside the admission: {wrong:#?}");
}

#[test]
fn a_front_door_that_re_exports_a_child_is_a_circle_when_the_child_imports_it() {
    // The reader itself: a parent that re-exports a child and a child that uses the parent's
    // items import each other.
    let parent = vec!["a".to_owned()];
    let child = vec!["a".to_owned(), "b".to_owned()];
    let sources: Sources = BTreeMap::from([
        (
            parent.clone(),
            "mod b;\npub use b::Thing;\npub struct Shared;".to_owned(),
        ),
        (
            child.clone(),
            "use super::Shared;\npub struct Thing;".to_owned(),
        ),
    ]);
    let seen_by = without_visibility_paths("pub(in crate::a) fn f() {}\npub(crate) fn g() {}");
    assert_eq!(seen_by, "pub(crate) fn f() {}\npub(crate) fn g() {}");
    assert!(
        paths(&child, &seen_by).is_empty(),
        "a visibility is no import"
    );
    let found_parent = paths(&parent, &sources[&parent]);
    let found_child = paths(&child, &sources[&child]);
    assert!(found_parent.contains(&vec!["a".into(), "b".into(), "Thing".into()]));
    assert!(found_child.contains(&vec!["a".into(), "Shared".into()]));
    let graph = imports(&sources);
    assert!(reachable(&graph, &parent).contains(&child));
    assert!(
        reachable(&graph, &child).contains(&parent),
        "the child's `super::Shared` is an import of the parent: a circle"
    );
    assert_eq!(
        expand("super::{connection, custom::{field, missing as absent}, self}"),
        vec![
            vec!["super".to_owned(), "connection".to_owned()],
            vec!["super".to_owned(), "custom".to_owned(), "field".to_owned()],
            vec![
                "super".to_owned(),
                "custom".to_owned(),
                "missing".to_owned()
            ],
            vec!["super".to_owned()],
        ]
    );
}
