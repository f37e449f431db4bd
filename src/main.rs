//! The `tablegraph` binary: parse the command line, start logging, run the command.

use clap::Parser as _;

/// mimalloc: a request allocates and frees thousands of small values (items, JSON, GraphQL
/// values), and the system allocator spent a quarter of a Koan page's CPU time on them
/// (BENCHMARKS.md, "Profile"). Built without transparent huge pages (`no_thp`): with them its
/// arenas raised peak RSS under load from about 80 MB to 100 MB, for no measurable speed.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let cli = tablegraph::cli::Cli::parse();
    // Before the runtime: the trace exporter's blocking HTTP client must not be made, or
    // dropped, inside it.
    let telemetry = match tablegraph::telemetry::init(cli.traces()) {
        Ok(telemetry) => telemetry,
        Err(error) => return fail(&error),
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => return fail(&error.into()),
    };
    let result = runtime.block_on(tablegraph::cli::run(cli));
    drop(runtime);
    telemetry.shutdown();
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => fail(&error),
    }
}

/// Says why the process stops: once, with its chain of causes, whatever RUST_LOG says.
fn fail(error: &anyhow::Error) -> std::process::ExitCode {
    eprintln!("tablegraph: {error:#}");
    std::process::ExitCode::FAILURE
}
