//! IANA time zones from the database bundled into the binary (jiff's `tzdb-bundle-always`):
//! Lambda's image has no `/usr/share/zoneinfo` to rely on, and a schedule must mean the same
//! on every machine.

use jiff::tz::TimeZone;

/// Longer than any name in the database (the longest is 32 characters).
const MAX_LEN: usize = 64;

/// A time zone a schedule names: an IANA name found in the bundled database.
#[derive(Clone, Debug)]
pub struct Zone {
    name: String,
    tz: TimeZone,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ZoneError(String);

impl Zone {
    /// The zone called `name` in the IANA database ("Europe/Berlin", "UTC", "Etc/GMT+2").
    ///
    /// Lookup is case-insensitive, as jiff's is, and the zone keeps the database's spelling.
    /// Offsets ("+02:00"), abbreviations that are not zone names ("CEST") and POSIX rules are
    /// refused: they do not follow a place's daylight-saving changes, as a person's hours do.
    pub fn named(name: &str) -> Result<Zone, ZoneError> {
        // Checked first, so paths, whitespace and control characters stay out of lookup and error.
        let plausible = !name.is_empty()
            && name.len() <= MAX_LEN
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '_' | '-' | '+'))
            && name.starts_with(|c: char| c.is_ascii_alphabetic());
        let not_found = || {
            // Quote at most what a zone name could be: the message goes back in a 422.
            let shown: String = name.chars().take(MAX_LEN).collect();
            let more = if shown.len() < name.len() { "…" } else { "" };
            ZoneError(format!(
                "{shown:?}{more} is not an IANA time zone (e.g. \"Europe/Berlin\", \"America/New_York\", \"UTC\")"
            ))
        };
        if !plausible {
            return Err(not_found());
        }
        let tz = TimeZone::get(name).map_err(|_| not_found())?;
        let name = tz.iana_name().unwrap_or(name).to_string();
        Ok(Zone { name, tz })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn date_at(&self, at: jiff::Timestamp) -> jiff::civil::Date {
        self.tz.to_datetime(at).date()
    }

    pub(super) fn tz(&self) -> &TimeZone {
        &self.tz
    }
}
