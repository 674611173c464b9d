//! The delete function as it is built once per container (its ports and settings), the name
//! its AWS calls are checked under, and the progress a Lambda reports (none: it logs its report
//! at the end).

use snapwake::identity::IdentityConfig;
use snapwake::locate::RegistryCache;

use crate::offboard::OffboardProgress;
use crate::settings::DeleteSettings;
use crate::sweep::SweepProgress;

/// Progress that reports nothing (a Lambda logs its report at the end instead).
pub struct Quiet;
impl SweepProgress for Quiet {}
impl OffboardProgress for Quiet {}

/// The function's logical id in `infra/template.yaml`: its AWS calls are checked against that
/// function's policy (`snapwake::aws_calls`).
pub const FUNCTION: &str = "DeleteFunction";

/// The delete function's context: ports and settings built once per container.
pub struct Delete<S, K> {
    pub store: S,
    pub agentkit: K,
    pub registry: RegistryCache,
    pub identity: IdentityConfig,
    /// The delete's lock timings and request budget.
    pub settings: DeleteSettings,
}
