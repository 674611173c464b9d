//! The error every subcommand returns, and the exit code it maps to.

/// A subcommand failure, printed as `snapwake: <message>` on stderr.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The arguments parse but are not acceptable (exit code 2, like clap's own usage errors).
    #[error("{0}")]
    Usage(String),
    /// Writing the output failed.
    #[error("cannot write output: {0}")]
    Io(#[from] std::io::Error),
    /// Serialising the output failed.
    #[error("cannot serialise output: {0}")]
    Json(#[from] serde_json::Error),
    /// A snapwake operation (deploy) failed.
    #[error("{0}")]
    Snapwake(#[from] snapwake::Error),
    /// A request to the deployed API failed (`snapwake agents`). Boxed: a problem's text
    /// makes it the largest error here, and every subcommand's `Result` would carry that.
    #[error("{0}")]
    Api(Box<crate::api::ApiError>),
}

impl From<crate::api::ApiError> for CliError {
    fn from(err: crate::api::ApiError) -> Self {
        match err {
            crate::api::ApiError::Usage(why) => CliError::Usage(why),
            other => CliError::Api(Box::new(other)),
        }
    }
}

impl CliError {
    /// 2 for bad input (the convention clap follows); the API's own codes for "sign in again"
    /// and "try later" (`crate::api::answer`); 1 for everything else.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => 2,
            CliError::Api(err) => err.exit_code(),
            CliError::Io(_) | CliError::Json(_) | CliError::Snapwake(_) => 1,
        }
    }
}
