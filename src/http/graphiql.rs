//! GraphiQL, served from the binary: the page at `/graphql` (for a browser's GET without a
//! query), and pinned production builds of GraphiQL 4.0.3 and React 18.3.1 under `/graphiql/`,
//! so the page works with no internet (behind a firewall, in an air-gapped cluster). The files
//! are npm's own builds, fetched with their licences by `assets/graphiql/fetch.sh`, which checks
//! them against `assets/graphiql/SHA256SUMS`. Their names carry their versions, so browsers may
//! keep them for a year. `/` redirects to `/graphql`.
//!
//! The page has GraphiQL's documentation explorer and headers editor, and runs subscriptions
//! over `graphql-transport-ws` on `/graphql`. When the API needs an API key, the headers editor
//! opens with an empty `x-api-key` to fill in, kept in the browser's storage between visits, and
//! a subscription's socket sends the headers in its `connection_init`.

use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};

/// Where the assets are served.
pub(super) const ASSETS_ROUTE: &str = "/graphiql/{file}";

/// Each asset: its name under `/graphiql/`, its media type and its bytes.
const ASSETS: [(&str, &str, &[u8]); 4] = [
    (
        "graphiql-4.0.3.min.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../assets/graphiql/graphiql-4.0.3.min.js"),
    ),
    (
        "graphiql-4.0.3.min.css",
        "text/css; charset=utf-8",
        include_bytes!("../../assets/graphiql/graphiql-4.0.3.min.css"),
    ),
    (
        "react-18.3.1.min.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../assets/graphiql/react-18.3.1.min.js"),
    ),
    (
        "react-dom-18.3.1.min.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../assets/graphiql/react-dom-18.3.1.min.js"),
    ),
];

/// One of the page's assets, or 404.
pub(super) async fn asset(Path(file): Path<String>) -> Response {
    match ASSETS.iter().find(|(name, _, _)| *name == file) {
        Some((_, media_type, bytes)) => (
            [
                (header::CONTENT_TYPE, *media_type),
                (header::CACHE_CONTROL, "public, max-age=31536000, immutable"),
            ],
            *bytes,
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// `/`: the API and its GraphiQL page are at `/graphql`.
pub(super) async fn root() -> Redirect {
    Redirect::temporary("/graphql")
}

/// The page. With `needs_api_key`, its headers editor opens with `x-api-key` to fill in, and the
/// schema is fetched once the key is there, with it (and again whenever the headers change):
/// never before, which would only show `UnauthorizedException`. Its editor opens on `example`
/// (GraphiQL's `defaultQuery`: until the browser keeps a query of its own).
pub(super) fn page(needs_api_key: bool, example: Option<&str>) -> String {
    let mut options = if needs_api_key {
        r#"defaultEditorToolsVisibility: "headers",
        defaultHeaders: '{ "x-api-key": "" }',
        shouldPersistHeaders: true,"#
            .to_owned()
    } else {
        "defaultEditorToolsVisibility: true,".to_owned()
    };
    if let Some(example) = example {
        // A JSON string is a JavaScript string; `</` is written so that no `</script>` ends
        // the page's script early.
        let text = serde_json::to_string(example)
            .unwrap_or_default()
            .replace("</", "<\\/");
        options.push_str(&format!("\n        defaultQuery: {text},"));
    }
    PAGE.replace("{options}", &options).replace(
        "{needs_api_key}",
        if needs_api_key { "true" } else { "false" },
    )
}

const PAGE: &str = r#"<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="robots" content="noindex">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>tablegraph</title>
    <style>
      body { height: 100%; margin: 0; width: 100%; overflow: hidden; }
      #graphiql { height: 100vh; }
    </style>
    <link rel="icon" href="data:,">
    <link rel="stylesheet" href="/graphiql/graphiql-4.0.3.min.css">
    <script src="/graphiql/react-18.3.1.min.js"></script>
    <script src="/graphiql/react-dom-18.3.1.min.js"></script>
  </head>
  <body>
    <div id="graphiql">Loading…</div>
    <script src="/graphiql/graphiql-4.0.3.min.js"></script>
    <script>
      const url = new URL("/graphql", window.location.origin);
      const socket = new URL(url);
      socket.protocol = url.protocol === "https:" ? "wss:" : "ws:";
      // A subscription's socket carries the headers of the headers editor in connection_init.
      const headers = () => {
        try {
          return JSON.parse(localStorage.getItem("graphiql:headers") || "{}");
        } catch {
          return {};
        }
      };
      const needsApiKey = {needs_api_key};
      const canonical = (text) => {
        try {
          const parsed = JSON.parse(text || "{}");
          return parsed && typeof parsed === "object" ? JSON.stringify(parsed) : null;
        } catch {
          return null;
        }
      };
      // The headers the schema is fetched with: a new fetcher (and so a new fetch of the
      // schema) each time they settle on another valid value. Without a key, no schema yet.
      function Page() {
        const [settled, setSettled] = React.useState(
          () => canonical(localStorage.getItem("graphiql:headers")) ?? "{}",
        );
        const timer = React.useRef(null);
        const fetcher = React.useMemo(
          () =>
            GraphiQL.createFetcher({
              url: url.toString(),
              subscriptionUrl: socket.toString(),
              headers: JSON.parse(settled),
              wsConnectionParams: headers,
            }),
          [settled],
        );
        const onEditHeaders = (text) => {
          clearTimeout(timer.current);
          timer.current = setTimeout(() => {
            const next = canonical(text);
            if (next !== null) setSettled(next);
          }, 400);
        };
        const keyMissing = needsApiKey && !JSON.parse(settled)["x-api-key"];
        return React.createElement(GraphiQL, {
          fetcher,
          onEditHeaders,
          ...(keyMissing ? { schema: null } : {}),
        {options}
        });
      }
      ReactDOM.createRoot(document.getElementById("graphiql")).render(
        React.createElement(Page),
      );
    </script>
  </body>
</html>
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_names_only_assets_the_binary_serves() {
        for needs_api_key in [false, true] {
            let page = page(needs_api_key, Some("{ a }"));
            assert!(!page.contains("https://"), "nothing from the internet");
            let named: Vec<&str> = page
                .split("\"/graphiql/")
                .skip(1)
                .filter_map(|rest| rest.split('"').next())
                .collect();
            assert_eq!(named.len(), ASSETS.len(), "{named:?}");
            for name in named {
                assert!(ASSETS.iter().any(|(file, _, _)| *file == name), "{name}");
            }
        }
        assert!(page(true, None).contains(r#"defaultHeaders: '{ "x-api-key": "" }'"#));
    }
}
