//! `snapwake table create [--table NAME]`: make snapwake's table on a *local* DynamoDB engine
//! (DynamoDB Local), so the README's steps for a local stack run in order (`table create`,
//! `deploy --apply`, `serve`, `sweep`, `offboard`). It refuses without `AWS_ENDPOINT_URL`:
//! production's table comes from `infra/`, with point-in-time recovery and deletion
//! protection, never from a laptop.

use clap::{Args, Subcommand};
use snapwake::store::dynamo::DynamoStore;
use snapwake::store::table::create_table;

use crate::error::CliError;

#[derive(Debug, Args)]
pub struct TableArgs {
    #[command(subcommand)]
    command: TableCommand,
}

#[derive(Debug, Subcommand)]
enum TableCommand {
    /// Create the table (and its owner index and TTL) on the local engine; an existing table
    /// is left as it is.
    Create {
        /// The table's name (default: `SNAPWAKE_TABLE`).
        #[arg(long)]
        table: Option<String>,
    },
}

pub fn run(args: TableArgs) -> Result<(), CliError> {
    match args.command {
        TableCommand::Create { table } => create(table),
    }
}

fn create(table: Option<String>) -> Result<(), CliError> {
    let Some(endpoint) = std::env::var("AWS_ENDPOINT_URL")
        .ok()
        .filter(|e| !e.trim().is_empty())
    else {
        return Err(CliError::Usage(
            "AWS_ENDPOINT_URL is not set: `table create` only makes tables on a local engine \
             (DynamoDB Local); production's table comes from infra/"
                .into(),
        ));
    };
    let table = table
        .or_else(|| std::env::var("SNAPWAKE_TABLE").ok())
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| CliError::Usage("name the table: --table NAME or SNAPWAKE_TABLE".into()))?;
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let store = DynamoStore::from_env(&table).await;
        create_table(store.client(), &table)
            .await
            .map_err(|e| CliError::Usage(format!("cannot create table {table}: {e}")))?;
        println!("table {table} is ready on {endpoint}");
        Ok(())
    })
}
