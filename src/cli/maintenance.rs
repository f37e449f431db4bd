//! The bodies of `migrate` and `check`: running them against the store and printing what they
//! did (a line per migration, progress on a terminal or in plain lines, the violations found).

use std::io::{IsTerminal as _, Write as _};
use std::time::Duration;

use crate::app;

use super::args::{SchemaArgs, StoreArgs, open_existing};

pub(super) async fn migrate(
    schema: &SchemaArgs,
    store: &StoreArgs,
    migrations_dir: &std::path::Path,
    dry_run: bool,
) -> anyhow::Result<()> {
    let (model, _) = schema.load()?;
    let migrations = crate::migrate::load_migrations(migrations_dir, &model)?;
    if dry_run {
        store.require_a_store()?;
    }
    let open = app::open_store(&store.config()).await?;
    let table = open.store.table_name().to_owned();
    let mut out = std::io::stdout().lock();
    if dry_run {
        let status = open.store.describe_table().await?;
        let (create, missing, _) = crate::migrate::plan_indexes(status.as_ref(), &model);
        if create {
            writeln!(out, "would create table {table}")?;
        }
        if status
            .as_ref()
            .is_some_and(|status| status.stream.is_none())
        {
            writeln!(out, "would turn on the table's change stream")?;
        }
        for slot in &missing {
            writeln!(out, "would create index {}", crate::keys::gsi_name(*slot))?;
        }
        for pin in crate::slot_lock::unpinned(&schema.schema_path(), &model) {
            writeln!(out, "would pin {pin} in {}", crate::slot_lock::FILE_NAME)?;
        }
        if create {
            writeln!(out, "would then apply {} data migrations", migrations.len())?;
            return Ok(());
        }
    } else {
        let report = crate::migrate::ensure_table(&open.store, &model).await?;
        if report.created_table {
            writeln!(out, "created table {table}")?;
        }
        if report.enabled_stream {
            writeln!(
                out,
                "turned on the table's change stream (new and old images)"
            )?;
        }
        for slot in &report.created_indexes {
            writeln!(out, "created index {}", crate::keys::gsi_name(*slot))?;
        }
        for slot in &report.unused_indexes {
            writeln!(
                out,
                "index {} is not used by the schema (kept)",
                crate::keys::gsi_name(*slot)
            )?;
        }
        writeln!(out, "table {table} is up to date")?;
        if crate::slot_lock::write(&schema.schema_path(), &model)? {
            writeln!(
                out,
                "pinned the index slots in {}",
                crate::slot_lock::path_of(&schema.schema_path()).display()
            )?;
        }
    }
    drop(out);
    let shown = MigrationProgress::new(std::io::stderr().is_terminal(), store.progress_every());
    let progress = |step: crate::migrate::Step<'_>| shown.step(step);
    let runs =
        crate::migrate::apply_migrations(&open.store, &model, &migrations, dry_run, &progress)
            .await?;
    let mut out = std::io::stdout().lock();
    for (run, migration) in runs.iter().zip(&migrations) {
        let verb = if dry_run { "would change" } else { "changed" };
        if run.skipped {
            writeln!(out, "migration {}: already applied", run.name)?;
        } else {
            writeln!(
                out,
                "migration {}: {} ({}scanned {} items, {verb} {})",
                run.name,
                migration.description,
                if run.resumed {
                    "resumed from its checkpoint; "
                } else {
                    ""
                },
                run.scanned,
                run.changed
            )?;
            for collision in &run.collisions {
                writeln!(
                    out,
                    "  would stay, now the same value as another: {collision}"
                )?;
            }
        }
    }
    if migrations.iter().all(crate::migrate::Migration::is_builtin) {
        writeln!(out, "no data migrations in {}", migrations_dir.display())?;
    }
    Ok(())
}

/// How `migrate` shows a run on stderr: a bar that redraws itself on a terminal (indicatif),
/// plain lines at most every [`crate::migrate::PACE`] otherwise (see [`crate::progress`]);
/// either way one line when each migration ends, with its counts and time.
struct MigrationProgress {
    pace: crate::migrate::Pace,
    terminal: bool,
    shown: std::sync::Mutex<Option<crate::progress::Shown>>,
}

impl MigrationProgress {
    fn new(terminal: bool, every: Duration) -> MigrationProgress {
        MigrationProgress {
            pace: crate::migrate::Pace::new(every),
            terminal,
            shown: std::sync::Mutex::default(),
        }
    }

    fn step(&self, step: crate::migrate::Step<'_>) {
        use crate::migrate::Step;
        if !self.terminal {
            if let Some(line) = self.pace.line(step) {
                let _ = writeln!(std::io::stderr().lock(), "{line}");
            }
            return;
        }
        let mut shown = self
            .shown
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match step {
            Step::Started { about, .. } => {
                self.pace.line(step);
                let total = crate::progress::Total::about(about);
                *shown = Some(crate::progress::Shown::new(true, Duration::ZERO, total));
            }
            Step::Page { name, run } => {
                let status = self.pace.status(run);
                if let Some(bar) = shown.as_mut() {
                    bar.show(&mut self.pace.meter(), |_| format!("{name}: {status}"));
                }
            }
            Step::Finished { .. } => {
                if let Some(mut bar) = shown.take() {
                    bar.finish();
                }
                if let Some(line) = self.pace.line(step) {
                    let _ = writeln!(std::io::stderr().lock(), "{line}");
                }
            }
        }
    }
}

pub(super) async fn check(
    schema: &SchemaArgs,
    store: &StoreArgs,
    repair: bool,
) -> anyhow::Result<()> {
    store.require_a_store()?;
    let (model, open) = open_existing(schema, store).await?;
    let told = super::args::walk_progress(&open, store).await?;
    let read = |count: u64| told.at(count);
    // A repair's first check, its fixes, and the last check.
    let (before, fixed, report) = if repair {
        let outcome = crate::check::repair_telling(&open.store, &model, &read).await?;
        (Some(outcome.before), outcome.fixed, outcome.after)
    } else {
        let report = crate::check::check_telling(&open.store, &model, &read).await?;
        (None, 0, report)
    };
    // The bar goes before the report is printed.
    drop(told);
    let mut out = std::io::stdout().lock();
    match &before {
        Some(before) => {
            print_report(&mut out, "before repair", before)?;
            writeln!(out, "wrote {fixed} fixes")?;
            print_report(&mut out, "after repair", &report)?;
        }
        None => print_report(&mut out, "check", &report)?,
    }
    anyhow::ensure!(
        report.is_clean(),
        "{} violations{}",
        report.violations.len(),
        if repair {
            " left"
        } else {
            "; run tablegraph check --repair to fix them"
        }
    );
    Ok(())
}

fn print_report(
    out: &mut impl std::io::Write,
    title: &str,
    report: &crate::check::Report,
) -> std::io::Result<()> {
    writeln!(
        out,
        "{title}: {} items: {} nodes, {} unique values, {} edges, {} migration records{}{}{}",
        report.items,
        report.nodes,
        report.unique_values,
        report.edges,
        report.migrations,
        match report.counters {
            0 => String::new(),
            n => format!(", {n} list counters"),
        },
        match report.stream_items {
            0 => String::new(),
            n => format!(", {n} stream leases and relay items"),
        },
        match report.delta_records {
            0 => String::new(),
            n => format!(", {n} writes recorded for delta syncs"),
        }
    )?;
    for violation in &report.violations {
        writeln!(
            out,
            "  {:?} {} / {}: {}",
            violation.kind, violation.pk, violation.sk, violation.detail
        )?;
    }
    for (kind, count) in report.counts() {
        writeln!(out, "  {count} {}", kind.describe())?;
    }
    if report.is_clean() {
        writeln!(out, "  no violations")?;
    }
    Ok(())
}
