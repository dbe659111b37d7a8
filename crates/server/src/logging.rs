//! The server's log: the `log` crate's macros everywhere, one logger here that writes one line
//! per record to standard error, as text or as JSON lines (`--log-format json`).
//!
//! Levels (`--log-level`, or memcached's `-v`/`-vv`/`-vvv` and `verbosity N`, or Redis's
//! `CONFIG SET loglevel`), each showing those above it:
//!
//! | level | what | memcached | Redis |
//! |---|---|---|---|
//! | `error` | a listener or a poll that failed, a pid file not written | | |
//! | `warn` | a reload that failed | | `warning` |
//! | `info` (default) | startup with the effective configuration, reloads, shutdown with a summary, failed logins | `-v`, `verbosity 1` | `notice` |
//! | `debug` | every connection opened, closed or refused; logins refused unchecked | `-vv`, `verbosity 2` | `verbose` |
//! | `trace` | (nothing yet) | `-vvv` | `debug` |
//!
//! Nothing on the request path logs above `debug`, and a level that is off costs one relaxed
//! load (`log::max_level`). A text line is the message as the call site wrote it (call sites
//! start theirs with `fridge: `, memcached's own messages keep memcached's words); a JSON line
//! is `{"time":…,"level":…,"thread":…,"message":…}` with the time in RFC 3339 UTC to the
//! millisecond and the message without its `fridge: ` prefix.

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};

use log::{Level, LevelFilter, Log, Metadata, Record};

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// The message as written.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

struct Logger {
    json: AtomicBool,
}

static LOGGER: Logger = Logger { json: AtomicBool::new(false) };

impl Log for Logger {
    /// This server's records only: libraries' own (mio's registrations at `trace`) are not
    /// the operator's business.
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= log::max_level() && metadata.target().starts_with("fridge")
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let message = record.args().to_string();
        let line = if self.json.load(Ordering::Relaxed) {
            json_line(record.level(), &message)
        } else {
            message
        };
        // One write of the whole line, so lines of several threads never interleave.
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(format!("{line}\n").as_bytes());
    }

    fn flush(&self) {
        let _ = std::io::stderr().flush();
    }
}

/// Installs the logger (once per process; later calls change the format and level only).
pub fn init(format: LogFormat, level: LevelFilter) {
    LOGGER.json.store(format == LogFormat::Json, Ordering::Relaxed);
    let _ = log::set_logger(&LOGGER);
    log::set_max_level(level);
}

/// The level memcached's verbosity `v` stands for (`-v` 1, `-vv` 2, `-vvv` 3).
pub fn level_of_verbosity(v: u8) -> LevelFilter {
    match v {
        0 | 1 => LevelFilter::Info,
        2 => LevelFilter::Debug,
        _ => LevelFilter::Trace,
    }
}

/// A level by its name (`--log-level`): `off`, `error`, `warn`, `info`, `debug`, `trace`, or
/// Redis's `warning`, `notice` and `verbose`, any case. (Redis's own `debug`, its most
/// verbose level, is `trace` here: [`redis_level`].)
pub fn parse_level(name: &str) -> Option<LevelFilter> {
    Some(match name.to_ascii_lowercase().as_str() {
        "off" => LevelFilter::Off,
        "error" => LevelFilter::Error,
        "warn" | "warning" => LevelFilter::Warn,
        "info" | "notice" => LevelFilter::Info,
        "debug" | "verbose" => LevelFilter::Debug,
        "trace" => LevelFilter::Trace,
        _ => return None,
    })
}

/// The level one of Redis's `loglevel` names stands for (`CONFIG SET loglevel`), any case.
pub fn redis_level(name: &str) -> Option<LevelFilter> {
    Some(match name.to_ascii_lowercase().as_str() {
        "warning" => LevelFilter::Warn,
        "notice" => LevelFilter::Info,
        "verbose" => LevelFilter::Debug,
        "debug" => LevelFilter::Trace,
        _ => return None,
    })
}

/// Redis's `loglevel` name for the level in force (`CONFIG GET loglevel`).
pub fn redis_level_name() -> &'static str {
    match log::max_level() {
        LevelFilter::Off | LevelFilter::Error | LevelFilter::Warn => "warning",
        LevelFilter::Info => "notice",
        LevelFilter::Debug => "verbose",
        LevelFilter::Trace => "debug",
    }
}

/// A client's bytes fit for a log line: at most 64 characters, anything not printable ASCII
/// as `\xNN`.
pub fn printable(bytes: &[u8]) -> String {
    let mut s = String::new();
    for &b in bytes.iter().take(64) {
        if b.is_ascii_graphic() || b == b' ' {
            s.push(b as char);
        } else {
            s.push_str(&format!("\\x{b:02x}"));
        }
    }
    if bytes.len() > 64 {
        s.push('…');
    }
    s
}

/// A JSON line for a record.
fn json_line(level: Level, message: &str) -> String {
    let message = message.strip_prefix("fridge: ").unwrap_or(message);
    let thread = std::thread::current();
    let mut line = String::with_capacity(message.len() + 96);
    line.push_str("{\"time\":\"");
    line.push_str(&rfc3339_now());
    line.push_str("\",\"level\":\"");
    line.push_str(&level.as_str().to_ascii_lowercase());
    line.push_str("\",\"thread\":");
    push_json_string(&mut line, thread.name().unwrap_or("main"));
    line.push_str(",\"message\":");
    push_json_string(&mut line, message);
    line.push('}');
    line
}

/// `s` as a JSON string literal.
pub(crate) fn push_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Now in RFC 3339, UTC, to the millisecond: `2026-11-26T11:04:25.123Z`.
fn rfc3339_now() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    rfc3339(ms)
}

fn rfc3339(ms: u64) -> String {
    let (secs, millis) = (ms / 1000, ms % 1000);
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Days since 1970-01-01 to a civil date (Howard Hinnant's `civil_from_days`).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::{json_line, parse_level, rfc3339};
    use log::{Level, LevelFilter};

    #[test]
    fn times_and_json_lines() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_795_000_000_123), "2026-11-18T11:06:40.123Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
        let line = json_line(Level::Warn, "fridge: a \"quoted\"\nline\u{1}");
        assert!(
            line.ends_with(
                r#""level":"warn","thread":"main","message":"a \"quoted\"\nline\u0001"}"#
            ) || line.contains(r#""message":"a \"quoted\"\nline\u0001"}"#),
            "{line}"
        );
    }

    #[test]
    fn level_names() {
        assert_eq!(parse_level("NOTICE"), Some(LevelFilter::Info));
        assert_eq!(parse_level("verbose"), Some(LevelFilter::Debug));
        assert_eq!(parse_level("debug"), Some(LevelFilter::Debug));
        assert_eq!(super::redis_level("debug"), Some(LevelFilter::Trace));
        assert_eq!(super::redis_level("info"), None);
        assert_eq!(parse_level("warning"), Some(LevelFilter::Warn));
        assert_eq!(parse_level("loud"), None);
    }
}
