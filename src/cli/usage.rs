//! The usage of `serve` and the list of environment variables, as README.md shows them, made
//! from the command line's own definition (clap's), so that the README cannot leave a flag out:
//! `tests/api/readme.rs` compares the README's generated blocks with these.

use clap::CommandFactory as _;

use super::Cli;

/// How wide the usage block's lines are at most.
const WIDTH: usize = 96;

/// `tablegraph serve [--listen 127.0.0.1:8080] [--schema schema.graphql] …`: every flag `serve`
/// shows in `--help`, with its default or the name of its value, wrapped.
pub fn serve_usage() -> String {
    let command = Cli::command();
    let serve = command
        .find_subcommand("serve")
        .expect("serve is a command");
    let words: Vec<String> = serve
        .get_arguments()
        .filter(|arg| !arg.is_hide_set() && arg.get_long().is_some())
        .filter(|arg| !matches!(arg.get_id().as_str(), "help" | "version"))
        .map(flag_usage)
        .collect();
    wrap("tablegraph serve ", &words)
}

/// `[--listen 127.0.0.1:8080]`, `[--api-key KEY]...`, `[--production]`.
fn flag_usage(arg: &clap::Arg) -> String {
    let long = arg.get_long().unwrap_or_default();
    let repeated = matches!(arg.get_action(), clap::ArgAction::Append);
    let value = if !arg.get_action().takes_values() {
        String::new()
    } else if let Some(default) = arg.get_default_values().first() {
        format!(" {}", default.to_string_lossy())
    } else {
        // Without a name of its own (clap's is the field's), the flag's last word
        // (`--jwt-jwks-file FILE`).
        let own = arg
            .get_value_names()
            .and_then(|names| names.first())
            .map(ToString::to_string)
            .filter(|name| *name != arg.get_id().as_str().to_uppercase());
        let name = own.unwrap_or_else(|| long.rsplit('-').next().unwrap_or(long).to_uppercase());
        format!(" {name}")
    };
    format!("[--{long}{value}]{}", if repeated { "..." } else { "" })
}

fn wrap(head: &str, words: &[String]) -> String {
    let indent = " ".repeat(head.len());
    let mut lines = Vec::new();
    let mut line = head.trim_end().to_owned();
    for (index, word) in words.iter().enumerate() {
        if index > 0 && line.len() + 1 + word.len() > WIDTH {
            lines.push(std::mem::replace(&mut line, format!("{indent}{word}")));
        } else {
            line.push(' ');
            line.push_str(word);
        }
    }
    lines.push(line);
    lines.join("\n")
}

/// [`environment_variables`] as README.md lists them: `` `TABLEGRAPH_LISTEN`, … `` wrapped.
pub fn environment_list() -> String {
    let names = environment_variables();
    let mut lines = Vec::new();
    let mut line = String::new();
    for (index, name) in names.iter().enumerate() {
        let word = match index + 1 == names.len() {
            true => format!("`{name}`."),
            false => format!("`{name}`,"),
        };
        if !line.is_empty() && line.len() + 1 + word.len() > WIDTH {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&word);
    }
    lines.push(line);
    lines.join("\n")
}

/// Every environment variable a shown flag of any command reads, once each, in the order the
/// commands and their flags come: `TABLEGRAPH_LISTEN`, `TABLEGRAPH_SCHEMA`, …
pub fn environment_variables() -> Vec<String> {
    let command = Cli::command();
    let mut names: Vec<String> = Vec::new();
    for subcommand in command.get_subcommands() {
        for arg in subcommand.get_arguments().filter(|arg| !arg.is_hide_set()) {
            if let Some(env) = arg.get_env() {
                let env = env.to_string_lossy().into_owned();
                if !names.contains(&env) {
                    names.push(env);
                }
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_usage_names_every_shown_flag_of_serve_and_no_hidden_one() {
        let usage = serve_usage();
        for flag in [
            "--listen 127.0.0.1:8080",
            "--api-key",
            "--cache-max-lag 1s",
            "--production]",
        ] {
            assert!(usage.contains(flag), "{flag} in\n{usage}");
        }
        assert!(!usage.contains("--simulated-latency-ms"), "{usage}");
        assert!(usage.lines().all(|line| line.len() <= WIDTH), "{usage}");
        let names = environment_variables();
        assert!(names.contains(&"TABLEGRAPH_LISTEN".to_owned()), "{names:?}");
        assert!(!names.contains(&"TABLEGRAPH_SIMULATED_LATENCY_MS".to_owned()));
    }
}
