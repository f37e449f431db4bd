//! The `tablegraph` binary: parse the command line, start logging, run the command.

use clap::Parser as _;

/// mimalloc: a request allocates and frees thousands of small values (items, JSON, GraphQL
/// values), and the system allocator spent a quarter of a Koan page's CPU time on them
/// (BENCHMARKS.md, "Profile"). Built without transparent huge pages (`no_thp`): with them its
/// arenas raised peak RSS under load from about 80 MB to 100 MB, for no measurable speed.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = tablegraph::cli::Cli::parse();
    tablegraph::telemetry::init();
    match tablegraph::cli::run(cli).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            // Once, with its chain of causes, and whatever RUST_LOG says: it is why the
            // process stops.
            eprintln!("tablegraph: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
