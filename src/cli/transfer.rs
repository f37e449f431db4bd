//! The bodies of `export` and `import` (a file, or an Amplify app's tables): the work, its
//! progress on stderr while it runs (see [`crate::progress`]), and what was done on stdout.

use std::io::Write as _;
use std::path::Path;

use anyhow::Context as _;

use crate::progress::{Told, Total};

use super::args::{SchemaArgs, StoreArgs, open_existing};

pub(super) async fn export(
    schema: &SchemaArgs,
    store: &StoreArgs,
    output: Option<&Path>,
) -> anyhow::Result<()> {
    store.require_a_store()?;
    let (_model, open) = open_existing(schema, store).await?;
    let told = super::args::walk_progress(&open, store).await?;
    let read = |count: u64| told.at(count);
    let count = match output {
        Some(path) => {
            let file = std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?;
            let mut out = std::io::BufWriter::new(file);
            crate::transfer::export(&open.store, &mut out, &read).await?
        }
        None => crate::transfer::export(&open.store, &mut std::io::stdout().lock(), &read).await?,
    };
    drop(told);
    writeln!(std::io::stderr().lock(), "exported {count} items")?;
    Ok(())
}

pub(super) async fn import_file(
    schema: &SchemaArgs,
    store: &StoreArgs,
    file: &Path,
) -> anyhow::Result<()> {
    // The file is read and checked whole before the store is opened (or made).
    let input =
        std::fs::File::open(file).with_context(|| format!("cannot read {}", file.display()))?;
    let import = crate::transfer::read_import(std::io::BufReader::new(input))
        .with_context(|| format!("{} was not imported; nothing was written", file.display()))?;
    let (model, open) = open_existing(schema, store).await?;
    let mut told = Told::on_stderr(
        "items written",
        Total::Exact(import.len() as u64),
        store.progress_every(),
    );
    let count = crate::transfer::import(&open.store, &import, |written| told.at(written)).await?;
    drop(told);
    // The items may be in earlier formats: the next `migrate` looks at every node again.
    crate::migrate::forget_builtins(&open.store, &model).await?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "imported {count} items")?;
    if import.migration_records > 0 {
        writeln!(
            out,
            "left out {} records of tablegraph's own format migrations: they describe the \
             table the file came from, and the next `migrate` applies them here",
            import.migration_records
        )?;
    }
    if import.stream_items > 0 {
        writeln!(
            out,
            "left out {} stream leases and relay items: they belong to the change stream \
             of the table the file came from",
            import.stream_items
        )?;
    }
    writeln!(
        out,
        "run `tablegraph migrate` to bring them to today's formats (their type index, \
         unique values, counts)"
    )?;
    Ok(())
}

pub(super) async fn import_amplify(
    schema: &SchemaArgs,
    store: &StoreArgs,
    suffix: &str,
) -> anyhow::Result<()> {
    let (model, open) = open_existing(schema, store).await?;
    let mut told: Option<(String, Told)> = None;
    let reports =
        crate::amplify_import::import_amplify_tables(&open.store, &model, suffix, |report| {
            if told
                .as_ref()
                .is_none_or(|(table, _)| *table != report.table)
            {
                let what = format!("items of {} read", report.table);
                told = Some((
                    report.table.clone(),
                    Told::on_stderr(&what, Total::Unknown, store.progress_every()),
                ));
            }
            if let Some((_, told)) = told.as_mut() {
                told.at(report.read as u64);
            }
        })
        .await?;
    drop(told);
    let mut out = std::io::stdout().lock();
    for report in &reports {
        writeln!(
            out,
            "{}: {} written, {} already there, {} deleted by DataStore left out",
            report.table, report.written, report.already_there, report.deleted
        )?;
        for why in &report.refused {
            writeln!(out, "  left out {why}")?;
        }
        for (id, keys) in &report.without_keys {
            writeln!(
                out,
                "  {id} written without {}: no such node (Amplify keeps keys of deleted \
                 parents)",
                keys.join(", ")
            )?;
        }
        for (attribute, count) in &report.undeclared {
            writeln!(
                out,
                "  {attribute}: not in the schema, left out of {count} items"
            )?;
        }
    }
    writeln!(
        out,
        "run `tablegraph check` to confirm the table is consistent"
    )?;
    Ok(())
}
