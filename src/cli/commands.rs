//! The bodies of the commands that need no module of their own: `serve`, `demo`, `schema`,
//! `plan`, `token`, `healthcheck` and `store`. Each takes its command's flags and prints what it
//! did on stdout (a server logs instead).

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;

use crate::app::{self, Application};
use crate::store::EmbeddedLocation;

use super::args::{SchemaArgs, StoreArgs, open_existing};
use super::serve::ServeArgs;

pub(super) async fn serve(args: &ServeArgs) -> anyhow::Result<()> {
    args.credentials.check_issuers()?;
    let mut config = args.config();
    (config.schema_path, config.dialect) = args.schema.resolved()?;
    let application = Application::build(&config).await?;
    application
        .run_until_stopped(app::shutdown_signal())
        .await?;
    Ok(())
}

pub(super) async fn demo(schema: &SchemaArgs, store: &StoreArgs) -> anyhow::Result<()> {
    let (model, open) = open_existing(schema, store).await?;
    let outcome = crate::demo::load(&open.store, Arc::new(model)).await?;
    let mut out = std::io::stdout().lock();
    match outcome {
        crate::demo::DemoOutcome::Loaded { writes } => {
            writeln!(out, "loaded the demo data set ({writes} mutations)")?;
        }
        crate::demo::DemoOutcome::AlreadyLoaded => {
            writeln!(out, "the demo data set is already loaded")?;
        }
    }
    Ok(())
}

pub(super) fn schema(schema: &SchemaArgs) -> anyhow::Result<()> {
    let (model, resolvers) = schema.load()?;
    let sdl = crate::graphql::print_sdl(Arc::new(model), Arc::new(resolvers))
        .map_err(|e| anyhow::anyhow!("cannot build the GraphQL schema: {e}"))?;
    std::io::stdout().lock().write_all(sdl.as_bytes())?;
    Ok(())
}

pub(super) fn plan(schema: &SchemaArgs) -> anyhow::Result<()> {
    let (model, resolvers) = schema.load()?;
    let plans = crate::access_plan::plan(&model, &resolvers);
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", model.dialect)?;
    if model.dialect.language == crate::model::SchemaLanguage::Amplify {
        writeln!(
            out,
            "Amplify's feature flags: {}",
            model.dialect.flags.describe().join(", ")
        )?;
    }
    writeln!(out)?;
    out.write_all(crate::access_plan::render(&plans).as_bytes())?;
    // The index slots, and which `tablegraph migrate` has yet to pin.
    let unpinned = crate::slot_lock::unpinned(&schema.schema_path(), &model);
    writeln!(out, "Index slots ({})", crate::slot_lock::FILE_NAME)?;
    for (key, slot) in &model.slot_pins {
        let pinned = !unpinned.contains(&format!("{key} = GSI{slot:02}"));
        let note = if pinned {
            "pinned"
        } else {
            "not pinned yet: tablegraph migrate pins it"
        };
        writeln!(out, "  {key:<40} GSI{slot:02}  {note}")?;
    }
    Ok(())
}

pub(super) fn token(secret: &str, claims: &crate::auth::TokenClaims) -> anyhow::Result<()> {
    let token = crate::auth::hs256_token(secret, claims)?;
    writeln!(std::io::stdout().lock(), "{token}")?;
    Ok(())
}

pub(super) async fn healthcheck(
    listen: SocketAddr,
    store: bool,
    ready: bool,
    tls_cert: Option<&Path>,
) -> anyhow::Result<()> {
    let mut address = listen;
    if address.ip().is_unspecified() {
        address.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    let path = match (store, ready) {
        (true, _) => "",
        (false, true) => "readyz",
        (false, false) => "healthz",
    };
    let mut client = reqwest::Client::builder().timeout(Duration::from_secs(3));
    let scheme = match tls_cert {
        None => "http",
        Some(_) => {
            // The server on this machine, by its address, whatever host or issuer its
            // certificate names.
            client = client.danger_accept_invalid_certs(true);
            "https"
        }
    };
    let url = format!("{scheme}://{address}/{path}");
    let response = client
        .build()?
        .get(&url)
        .send()
        .await
        .with_context(|| format!("no answer from {url}"))?;
    anyhow::ensure!(
        response.status().is_success(),
        "{url} answered {}",
        response.status()
    );
    Ok(())
}

/// Serves the embedded store until a shutdown signal.
pub(super) async fn store(
    listen: SocketAddr,
    data_dir: PathBuf,
    memory: bool,
) -> anyhow::Result<()> {
    let location = if memory {
        EmbeddedLocation::Memory
    } else {
        EmbeddedLocation::Directory(data_dir)
    };
    let store = crate::store::EmbeddedStore::start_on(&location, listen)?;
    tracing::info!(
        "store listening on {}",
        store.endpoint().unwrap_or_default()
    );
    app::shutdown_signal().await;
    drop(store);
    tracing::info!("stopped");
    Ok(())
}
