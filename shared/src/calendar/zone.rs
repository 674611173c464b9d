//! IANA time zones from the database bundled into the binary (jiff's `tzdb-bundle-always`):
//! Lambda's image has no `/usr/share/zoneinfo` to rely on, and a schedule must mean the same
//! on every machine.

use jiff::tz::TimeZone;

/// A time zone a schedule names.
#[derive(Clone, Debug)]
pub struct Zone {
    name: String,
    tz: TimeZone,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ZoneError(String);

impl Zone {
    /// The zone called `name` in the IANA database ("Europe/Berlin", "UTC"). Lookup is
    /// case-insensitive, as jiff's; the zone keeps its canonical spelling. Offsets ("+02:00"),
    /// abbreviations ("CEST") and POSIX rules are refused: they do not follow a place's
    /// daylight-saving changes, which is what a person's working hours do.
    pub fn named(name: &str) -> Result<Zone, ZoneError> {
        let trimmed = name.trim();
        let plausible = !trimmed.is_empty()
            && trimmed.len() <= 64
            && trimmed
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '_' | '-' | '+'))
            && trimmed
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic());
        let not_found = || {
            ZoneError(format!(
                "{name:?} is not an IANA time zone (e.g. \"Europe/Berlin\", \"America/New_York\", \"UTC\")"
            ))
        };
        if !plausible {
            return Err(not_found());
        }
        let tz = TimeZone::get(trimmed).map_err(|_| not_found())?;
        let name = tz.iana_name().unwrap_or(trimmed).to_string();
        Ok(Zone { name, tz })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub(super) fn tz(&self) -> &TimeZone {
        &self.tz
    }
}
