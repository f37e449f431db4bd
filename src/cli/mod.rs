//! The command line: `serve`, `migrate`, `schema`, `healthcheck`. Every flag also reads a
//! `TABLEGRAPH_*` environment variable, for containers. The arguments several commands share
//! are in `args`; the bodies of `migrate` and `check` in `maintenance`, of `export` and
//! `import` in `transfer`, and of the others in `commands`: [`run`] only dispatches.

mod args;
mod commands;
mod maintenance;
mod serve;
mod transfer;
pub mod usage;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Parser, Subcommand};

pub use args::{SchemaArgs, StoreArgs};
pub use serve::ServeArgs;

#[derive(Debug, Parser)]
#[command(
    name = "tablegraph",
    version,
    about = "An AppSync-style GraphQL API on one DynamoDB table"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the GraphQL API (GraphiQL at /graphql in a browser). Creates the data directory
    /// and its store when they do not exist.
    Serve(Box<ServeArgs>),
    /// Create the table and the indexes the schema needs, then apply the pending data
    /// migrations of `migrations/` in name order; safe to run again. Creates the data
    /// directory and its store when they do not exist (with --dry-run, refuses a directory
    /// that holds no store).
    Migrate {
        #[command(flatten)]
        schema: SchemaArgs,
        #[command(flatten)]
        store: StoreArgs,
        /// The directory of data migrations (`*.toml`).
        #[arg(long, env = "TABLEGRAPH_MIGRATIONS", default_value = "migrations")]
        migrations: PathBuf,
        /// Print what would change; change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Load the demo data set (farms, goals, users, teams) into the default schema's table.
    /// Creates the data directory and its store when they do not exist.
    Demo {
        #[command(flatten)]
        schema: SchemaArgs,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Verify every invariant of the table (unique values, relation slots, edges, edge sets);
    /// exit 1 when one is broken. Refuses a data directory that holds no store.
    Check {
        #[command(flatten)]
        schema: SchemaArgs,
        #[command(flatten)]
        store: StoreArgs,
        /// Fix what is broken, then check again.
        #[arg(long)]
        repair: bool,
    },
    /// Write every item of the table as JSON lines (DynamoDB's JSON form). Refuses a data
    /// directory that holds no store.
    Export {
        #[command(flatten)]
        schema: SchemaArgs,
        #[command(flatten)]
        store: StoreArgs,
        /// The file to write; standard output when left out.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Write the items of a JSON-lines file (as `export` writes them) into the table. The file
    /// is read and checked whole first: a malformed one writes (and creates) nothing. Creates
    /// the data directory and its store when they do not exist.
    ///
    /// With `--amplify-tables <apiId>-<env>`, reads instead each `@model` type's table of an
    /// Amplify app (`<Type>-<apiId>-<env>`, on the same endpoint) and writes its items as
    /// nodes, with their unique values, relations and counts; a node already there is left as
    /// it is, so an import that stopped can run again.
    Import {
        #[command(flatten)]
        schema: SchemaArgs,
        #[command(flatten)]
        store: StoreArgs,
        /// The file to read.
        #[arg(required_unless_present = "amplify_tables")]
        file: Option<PathBuf>,
        /// Read an Amplify app's tables, named `<Type>-<this>` (its API id and environment).
        #[arg(long, value_name = "APIID-ENV", conflicts_with = "file")]
        amplify_tables: Option<String>,
    },
    /// Print, for every field, the storage access it makes: operation, table or index, key
    /// template, how it batches.
    Plan {
        #[command(flatten)]
        schema: SchemaArgs,
    },
    /// Print the client-facing SDL of the schema.
    Schema {
        #[command(flatten)]
        schema: SchemaArgs,
    },
    /// Print a JWT signed with an HS256 secret, for trying per-user rules locally with a server
    /// started with the same `--jwt-hs256-secret` and `--jwt-issuer`. Not for production:
    /// there, tokens come from your identity provider.
    Token {
        /// The secret `serve --jwt-hs256-secret` verifies with (at least 32 bytes).
        #[arg(long, env = "TABLEGRAPH_JWT_HS256_SECRET", hide_env_values = true)]
        jwt_hs256_secret: String,
        /// The `iss` claim.
        #[arg(long, env = "TABLEGRAPH_JWT_ISSUER")]
        jwt_issuer: String,
        /// The `aud` claim, when the server wants one.
        #[arg(long, env = "TABLEGRAPH_JWT_AUDIENCE")]
        jwt_audience: Option<String>,
        /// The `sub` claim: who the caller is.
        #[arg(long)]
        sub: String,
        /// A group of the caller, in `cognito:groups` (repeat for several).
        #[arg(long = "group")]
        groups: Vec<String>,
        /// Seconds until the token expires.
        #[arg(long, default_value_t = 3600)]
        expires_in: u64,
    },
    /// Exit 0 when a server answers /healthz (for container health checks).
    Healthcheck {
        /// The address the server listens on.
        #[arg(long, env = "TABLEGRAPH_LISTEN", default_value = "127.0.0.1:8080")]
        listen: SocketAddr,
        /// Check a `tablegraph store` at that address instead (it answers `GET /`).
        #[arg(long, conflicts_with = "ready")]
        store: bool,
        /// Ask /readyz instead: exit 0 only once the API serves and the store answers (for a
        /// load balancer's or a dependent service's check; /healthz answers during start-up).
        #[arg(long)]
        ready: bool,
        /// Given when the server serves TLS (`serve --tls-cert`, the same variable): ask over
        /// https://. The certificate is not checked: this probes the server on this machine,
        /// sending no credentials.
        #[arg(
            long,
            env = "TABLEGRAPH_TLS_CERT",
            value_name = "FILE",
            conflicts_with = "store"
        )]
        tls_cert: Option<std::path::PathBuf>,
    },
    /// Serve the embedded store alone, as a DynamoDB-compatible endpoint for several `serve
    /// --dynamodb-endpoint` replicas (see compose.yaml). It checks no credentials: keep it on a
    /// private network.
    Store {
        /// The address to listen on.
        #[arg(long, default_value = "127.0.0.1:8000")]
        listen: SocketAddr,
        /// The directory of its SQLite file; one process at a time.
        #[arg(long, env = "TABLEGRAPH_DATA_DIR", default_value = "./data")]
        data_dir: PathBuf,
        /// Keep everything in memory (for tests and demos).
        #[arg(long, env = "TABLEGRAPH_MEMORY")]
        memory: bool,
    },
}

impl Cli {
    /// Where spans go: only `serve` exports them (see [`crate::telemetry::TraceExport`]).
    pub fn traces(&self) -> Option<crate::telemetry::TraceExport> {
        match &self.command {
            Command::Serve(args) => crate::telemetry::TraceExport::from_flag_and_env(
                args.telemetry.otlp_endpoint.clone(),
            ),
            _ => None,
        }
    }
}

/// Runs a command; the process exit code follows its result.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => commands::serve(&args).await?,
        Command::Migrate {
            schema,
            store,
            migrations,
            dry_run,
        } => maintenance::migrate(&schema, &store, &migrations, dry_run).await?,
        Command::Demo { schema, store } => commands::demo(&schema, &store).await?,
        Command::Schema { schema } => commands::schema(&schema)?,
        Command::Check {
            schema,
            store,
            repair,
        } => maintenance::check(&schema, &store, repair).await?,
        Command::Export {
            schema,
            store,
            output,
        } => transfer::export(&schema, &store, output.as_deref()).await?,
        Command::Import {
            schema,
            store,
            amplify_tables: Some(suffix),
            ..
        } => transfer::import_amplify(&schema, &store, &suffix).await?,
        Command::Import {
            schema,
            store,
            file,
            amplify_tables: None,
        } => {
            let file = file.context("give the file to import, or --amplify-tables")?;
            transfer::import_file(&schema, &store, &file).await?;
        }
        Command::Plan { schema } => commands::plan(&schema)?,
        Command::Token {
            jwt_hs256_secret,
            jwt_issuer,
            jwt_audience,
            sub,
            groups,
            expires_in,
        } => commands::token(
            &jwt_hs256_secret,
            &crate::auth::TokenClaims {
                issuer: jwt_issuer,
                audience: jwt_audience,
                subject: sub,
                groups,
                expires_in: Duration::from_secs(expires_in),
            },
        )?,
        Command::Healthcheck {
            listen,
            store,
            ready,
            tls_cert,
        } => commands::healthcheck(listen, store, ready, tls_cert.as_deref()).await?,
        Command::Store {
            listen,
            data_dir,
            memory,
        } => commands::store(listen, data_dir, memory).await?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::JwtKeys;
    use crate::config::ServeConfig;
    use serve::duration_arg;

    fn serve(args: &[&str]) -> Result<ServeConfig, clap::Error> {
        let argv = ["tablegraph", "serve"].iter().chain(args);
        match Cli::try_parse_from(argv)?.command {
            Command::Serve(serve) => Ok(serve.config()),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn a_token_lifetime_is_seconds_or_a_number_with_its_unit() {
        for (given, secs) in [
            ("3600", 3600),
            ("90m", 5400),
            ("24h", 86_400),
            ("7d", 604_800),
        ] {
            assert_eq!(
                duration_arg(given),
                Ok(Duration::from_secs(secs)),
                "{given}"
            );
        }
        for refused in [
            "",
            "0",
            "h",
            "1.5h",
            "-1",
            "3w",
            "99999999999999999999d",
            "0ms",
        ] {
            assert!(duration_arg(refused).is_err(), "{refused}");
        }
    }

    #[test]
    fn the_read_cache_is_on_by_default_and_its_lag_is_a_duration() {
        let config = serve(&[]).expect("valid");
        assert!(config.cache.bytes >= 16 << 20, "{:?}", config.cache);
        assert_eq!(config.cache.max_lag, Duration::from_secs(1));
        let config = serve(&["--cache-bytes", "0", "--cache-max-lag", "250ms"]).expect("valid");
        assert_eq!(config.cache.bytes, 0);
        assert_eq!(config.cache.max_lag, Duration::from_millis(250));
        assert!(serve(&["--cache-max-lag", "0s"]).is_err());
    }

    #[test]
    fn a_certificate_goes_with_its_key() {
        let config = serve(&["--tls-cert", "cert.pem", "--tls-key", "key.pem"]).expect("valid");
        assert_eq!(
            config.http.tls,
            Some(crate::config::TlsFiles {
                cert: "cert.pem".into(),
                key: "key.pem".into(),
            })
        );
        assert_eq!(serve(&[]).expect("valid").http.tls, None);
        for alone in [["--tls-cert", "cert.pem"], ["--tls-key", "key.pem"]] {
            let error = serve(&alone).expect_err("one without the other");
            assert_eq!(
                error.kind(),
                clap::error::ErrorKind::MissingRequiredArgument
            );
        }
    }

    #[test]
    fn api_keys_and_a_token_verifier_come_from_flags() {
        let config = serve(&[
            "--api-key",
            "one",
            "--api-key",
            "two",
            "--jwt-hs256-secret",
            "s3cret",
            "--jwt-issuer",
            "https://issuer.example",
        ])
        .expect("valid flags");
        assert_eq!(config.http.auth.api_keys, ["one", "two"]);
        let jwt = config
            .http
            .auth
            .jwt
            .first()
            .cloned()
            .expect("tokens are on");
        assert_eq!(jwt.issuer, "https://issuer.example");
        assert!(matches!(jwt.keys, JwtKeys::Hs256Secret(ref s) if s == "s3cret"));
    }

    #[test]
    fn issuers_alone_are_discovered_and_named_keys_belong_to_one_issuer() {
        let config = serve(&[
            "--jwt-issuer",
            "https://one.example",
            "--jwt-issuer",
            "https://two.example",
        ])
        .expect("valid flags");
        let issuers: Vec<&str> = config
            .http
            .auth
            .jwt
            .iter()
            .map(|j| j.issuer.as_str())
            .collect();
        assert_eq!(issuers, ["https://one.example", "https://two.example"]);
        assert!(
            config
                .http
                .auth
                .jwt
                .iter()
                .all(|j| matches!(j.keys, JwtKeys::Discovered))
        );
        let url = serve(&[
            "--jwt-jwks-url",
            "https://one.example/keys",
            "--jwt-issuer",
            "https://one.example",
        ])
        .expect("valid flags");
        assert!(
            matches!(&url.http.auth.jwt[0].keys, JwtKeys::JwksUrl(u) if u == "https://one.example/keys")
        );
        let argv = [
            "tablegraph",
            "serve",
            "--jwt-jwks-url",
            "https://one.example/keys",
            "--jwt-issuer",
            "https://one.example",
            "--jwt-issuer",
            "https://two.example",
        ];
        let Command::Serve(args) = Cli::try_parse_from(argv).expect("parses").command else {
            panic!("serve");
        };
        assert!(args.credentials.check_issuers().is_err());
    }

    #[test]
    fn an_audience_is_for_every_issuer_or_for_the_one_it_names() {
        let parse = |audiences: &[&str]| {
            let mut argv = vec![
                "tablegraph",
                "serve",
                "--jwt-issuer",
                "https://one.example",
                "--jwt-issuer",
                "https://two.example",
            ];
            for audience in audiences {
                argv.extend(["--jwt-audience", audience]);
            }
            let Command::Serve(args) = Cli::try_parse_from(argv).expect("parses").command else {
                panic!("serve");
            };
            args
        };
        let audiences = |args: &ServeArgs| {
            args.config()
                .http
                .auth
                .jwt
                .iter()
                .map(|issuer| issuer.audience.clone())
                .collect::<Vec<_>>()
        };
        let args = parse(&["https://one.example=client-one", "every-api"]);
        assert!(args.credentials.check_issuers().is_ok());
        assert_eq!(
            audiences(&args),
            [Some("client-one".to_owned()), Some("every-api".to_owned())]
        );
        let args = parse(&["https://two.example=client-two"]);
        assert_eq!(audiences(&args), [None, Some("client-two".to_owned())]);
        assert!(parse(&["a", "b"]).credentials.check_issuers().is_err());
        assert!(
            parse(&["https://one.example=a", "https://one.example=b"])
                .credentials
                .check_issuers()
                .is_err()
        );
    }

    #[test]
    fn a_token_verifier_needs_an_issuer_and_one_kind_of_key() {
        assert!(serve(&["--jwt-hs256-secret", "s3cret"]).is_err());
        assert!(serve(&["--jwt-jwks-url", "https://one.example/keys"]).is_err());
        assert!(
            serve(&[
                "--jwt-hs256-secret",
                "s3cret",
                "--jwt-jwks-file",
                "keys.json",
                "--jwt-issuer",
                "https://issuer.example",
            ])
            .is_err()
        );
    }
}
