//! Five-field cron expressions: `minute hour day-of-month month day-of-week`. Each field is `*`,
//! a value, a range `a-b`, a step `*/n`, `a-b/n` or `a/n` (from `a` to the field's end), or a
//! comma list of those; months and weekdays also take English three-letter names, and weekday 7
//! is Sunday too. As in Vixie cron, when both day fields are restricted a day matches if *either*
//! does (`0 0 13 * FRI`: every 13th and every Friday); otherwise both must.

use std::fmt;
use std::str::FromStr;

use jiff::civil::{Date, DateTime};

/// A parsed expression. Each field is a bit set of the values it allows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cron {
    text: String,
    minutes: u64,
    hours: u32,
    days: u32,
    months: u16,
    weekdays: u8,
    /// Whether each day field was given as `*` (unrestricted), for Vixie's rule.
    days_any: bool,
    weekdays_any: bool,
}

/// Why an expression is not one, naming the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CronError(String);

struct Field {
    name: &'static str,
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const MINUTE: Field = Field {
    name: "minute",
    min: 0,
    max: 59,
    names: &[],
};
const HOUR: Field = Field {
    name: "hour",
    min: 0,
    max: 23,
    names: &[],
};
const DAY: Field = Field {
    name: "day-of-month",
    min: 1,
    max: 31,
    names: &[],
};
const MONTH: Field = Field {
    name: "month",
    min: 1,
    max: 12,
    names: &[
        "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
    ],
};
const WEEKDAY: Field = Field {
    name: "day-of-week",
    min: 0,
    max: 7,
    names: &["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"],
};

impl Field {
    fn err(&self, what: impl fmt::Display) -> CronError {
        CronError(format!("{}: {what}", self.name))
    }

    fn value(&self, text: &str) -> Result<u32, CronError> {
        if text.is_empty() {
            return Err(self.err("a value is missing"));
        }
        let upper = text.to_ascii_uppercase();
        if let Some(i) = self.names.iter().position(|n| *n == upper) {
            // Months are 1-based, weekdays 0-based.
            return Ok(i as u32 + self.min);
        }
        // Digits only: `str::parse` would also take "+5".
        if !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(
                if text.bytes().all(|b| b.is_ascii_alphabetic()) && !self.names.is_empty() {
                    self.err(format!("unknown name {text:?}"))
                } else {
                    self.err(format!("{text:?} is not a number"))
                },
            );
        }
        // Too many digits for a u32 is out of range too, and is said so in the person's digits.
        match text.parse::<u32>() {
            Ok(v) if (self.min..=self.max).contains(&v) => Ok(v),
            _ => Err(self.err(format!("{text} is out of range {}-{}", self.min, self.max))),
        }
    }

    fn parse(&self, text: &str) -> Result<u64, CronError> {
        let mut bits = 0u64;
        for item in text.split(',') {
            if item.is_empty() {
                return Err(self.err("an empty item in a list"));
            }
            let (range, step) = match item.split_once('/') {
                Some((r, s)) => {
                    let step = s
                        .bytes()
                        .all(|b| b.is_ascii_digit())
                        .then(|| s.parse::<u32>().ok())
                        .flatten()
                        .ok_or_else(|| self.err(format!("step {s:?} is not a number")))?;
                    if step == 0 {
                        return Err(self.err("a step of 0"));
                    }
                    (r, Some(step))
                }
                None => (item, None),
            };
            let (from, to) = if range == "*" {
                (self.min, self.max)
            } else if let Some((a, b)) = range.split_once('-') {
                let (a, b) = (self.value(a)?, self.value(b)?);
                if a > b {
                    return Err(self.err(format!("range {range} runs backwards")));
                }
                (a, b)
            } else {
                let a = self.value(range)?;
                (a, if step.is_some() { self.max } else { a })
            };
            // `step_by` cannot overflow where `v += step` would on "*/4294967295".
            let step = usize::try_from(step.unwrap_or(1)).unwrap_or(usize::MAX);
            for v in (from..=to).step_by(step) {
                bits |= 1 << v;
            }
        }
        Ok(bits)
    }
}

impl FromStr for Cron {
    type Err = CronError;

    fn from_str(text: &str) -> Result<Cron, CronError> {
        let fields: Vec<&str> = text.split_whitespace().collect();
        if fields.first().is_some_and(|f| f.starts_with('@')) {
            return Err(CronError(format!(
                "{:?}: only five-field expressions (minute hour day-of-month month day-of-week), \
                 e.g. \"0 9 * * *\" for @daily at 09:00",
                fields[0]
            )));
        }
        if fields.len() != 5 {
            return Err(CronError(format!(
                "expected 5 fields (minute hour day-of-month month day-of-week), got {}",
                fields.len()
            )));
        }
        let mut weekdays = WEEKDAY.parse(fields[4])?;
        if weekdays & (1 << 7) != 0 {
            weekdays = (weekdays | 1) & 0x7f;
        }
        Ok(Cron {
            text: fields.join(" "),
            minutes: MINUTE.parse(fields[0])?,
            hours: HOUR.parse(fields[1])? as u32,
            days: DAY.parse(fields[2])? as u32,
            months: MONTH.parse(fields[3])? as u16,
            weekdays: weekdays as u8,
            days_any: fields[2].starts_with('*'),
            weekdays_any: fields[4].starts_with('*'),
        })
    }
}

impl fmt::Display for Cron {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Cron {
    /// Whether the expression fires at this local time (seconds ignored).
    pub fn matches(&self, dt: DateTime) -> bool {
        self.matches_date(dt.date())
            && self.hours & (1 << dt.hour()) != 0
            && self.minutes & (1 << dt.minute()) != 0
    }

    pub fn matches_date(&self, date: Date) -> bool {
        if self.months & (1 << date.month()) == 0 {
            return false;
        }
        let day = self.days & (1 << date.day()) != 0;
        let weekday = self.weekdays & (1 << date.weekday().to_sunday_zero_offset()) != 0;
        match (self.days_any, self.weekdays_any) {
            (false, false) => day || weekday,
            _ => day && weekday,
        }
    }

    pub fn hours(&self) -> impl Iterator<Item = i8> + '_ {
        (0..24i8).filter(move |h| self.hours & (1 << h) != 0)
    }

    pub fn minutes(&self) -> impl Iterator<Item = i8> + '_ {
        (0..60i8).filter(move |m| self.minutes & (1 << m) != 0)
    }
}
