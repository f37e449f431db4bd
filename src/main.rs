//! The `tablegraph` binary: parse the command line, start logging, run the command.

use clap::Parser as _;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = tablegraph::cli::Cli::parse();
    tablegraph::telemetry::init();
    match tablegraph::cli::run(cli).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!("{error:#}");
            eprintln!("tablegraph: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
