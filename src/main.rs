//! The `tablegraph` binary: parse the command line, start logging, run the command.

use clap::Parser as _;

/// jemalloc: a request allocates and frees thousands of small values (items, JSON, GraphQL values),
/// and glibc's allocator spent a quarter of a Koan page's CPU time on them (bench/PROFILE.md, the
/// first round). mimalloc replaced it first; jemalloc replaced mimalloc when, alternated with it in
/// two rounds on a 16-core machine, it took W2's CPU per request 7–11 % lower and W0's at 64
/// connections 9 % lower, at the same peak RSS (bench/PROFILE.md, "jemalloc instead of mimalloc").
/// B2 uses the same allocator, so the two compare code, not allocators.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

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
