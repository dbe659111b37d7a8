//! `LATENCY` LATEST, HISTORY, RESET, DOCTOR, HELP (<https://redis.io/commands/latency/>) over
//! the monitor in `crate::latency`; `latency-monitor-threshold` by `CONFIG GET`/`SET`; and
//! `HISTOGRAM` over the per-command histograms of `crate::latencystats`
//! (<https://redis.io/commands/latency-histogram/>). Server-wide: the admin's only. fridge
//! has no `GRAPH`.

use std::io::Write as _;

use fridge_proto::resp::{Command, write_array_header, write_bulk, write_integer};

use super::object::{help, sub_arity};
use super::{Spec, no_permission, unknown_subcommand};
use crate::session::{Ctx, Session};

const LATENCY_HELP: [&str; 13] = [
    "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return a human readable latency analysis report.",
    "HISTORY <event>",
    "    Return time-latency samples for the <event> class.",
    "LATEST",
    "    Return the latest latency samples for all events.",
    "RESET [<event> ...]",
    "    Reset latency data of one or more <event> classes.",
    "    (default: reset all data for all event classes)",
    "HISTOGRAM [COMMAND ...]",
    "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
    "    If no commands are specified then all histograms are replied.",
];

const DISABLED: &str = "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in \
    this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" \
    in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at \
    https://redis.io/topics/latency-monitor.\n";

const NO_SPIKES: &str = "Dave, no latency spike was observed during the lifetime of this Redis \
    instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a \
    stress pill, and think things over.\n";

pub(super) fn latency(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let sub = cmd.get(1).unwrap_or_default();
    let is = |w: &[u8]| sub.eq_ignore_ascii_case(w);
    let n = cmd.len();
    if is(b"help") {
        return if n == 2 { help(out, &LATENCY_HELP) } else { sub_arity(out, "latency", sub) };
    }
    if !(is(b"latest") || is(b"history") || is(b"reset") || is(b"doctor") || is(b"histogram")) {
        return unknown_subcommand(out, sub, b"LATENCY");
    }
    if ((is(b"latest") || is(b"doctor")) && n != 2) || (is(b"history") && n != 3) {
        return sub_arity(out, "latency", sub);
    }
    if !s.is_admin(ctx.tenants) {
        let mut full = b"latency|".to_vec();
        full.extend(sub.iter().map(u8::to_ascii_lowercase));
        return no_permission(out, &full);
    }
    if is(b"histogram") {
        return histogram(cmd, out, s, ctx);
    }
    let monitor = &ctx.shared.latency;
    if is(b"reset") {
        let names: Vec<&[u8]> = cmd.iter().skip(2).collect();
        return write_integer(out, monitor.reset(&names) as i64);
    }
    let events = monitor.events();
    if is(b"latest") {
        write_array_header(out, events.len());
        for (name, series) in &events {
            let (time, ms) = series.latest().unwrap_or_default();
            write_array_header(out, 4);
            write_bulk(out, name.as_bytes());
            write_integer(out, time as i64);
            write_integer(out, ms as i64);
            write_integer(out, series.max as i64);
        }
    } else if is(b"history") {
        let want = cmd.get(2).unwrap_or_default();
        let history = events
            .iter()
            .find(|(name, _)| want.eq_ignore_ascii_case(name.as_bytes()))
            .map(|(_, s)| s.history())
            .unwrap_or_default();
        write_array_header(out, history.len());
        for (time, ms) in history {
            write_array_header(out, 2);
            write_integer(out, time as i64);
            write_integer(out, ms as i64);
        }
    } else {
        ctx.scratch.clear();
        doctor(ctx.scratch, monitor.threshold(), &events);
        fridge_proto::resp::write_verbatim(out, s.version, b"txt", ctx.scratch);
    }
}

/// `LATENCY DOCTOR`'s report: Redis's words when monitoring is off or saw nothing; otherwise
/// each event's spikes, as the first part of Redis's report (no advice).
fn doctor(out: &mut Vec<u8>, threshold: u64, events: &[(&str, crate::latency::Series)]) {
    if threshold == 0 {
        return out.extend_from_slice(DISABLED.as_bytes());
    }
    if events.is_empty() {
        return out.extend_from_slice(NO_SPIKES.as_bytes());
    }
    out.extend_from_slice(
        b"Dave, I have observed latency spikes in this Redis instance. You don't mind talking \
          about it, do you Dave?\n\n",
    );
    for (i, (name, series)) in events.iter().enumerate() {
        let h = series.history();
        let avg = h.iter().map(|s| s.1).sum::<u64>() / h.len().max(1) as u64;
        let _ = writeln!(
            out,
            "{}. {name}: {} latency spikes (average {avg}ms). Worst all time event {}ms.\n",
            i + 1,
            h.len(),
            series.max,
        );
    }
}

/// `LATENCY HISTOGRAM [command …]`: per command (a container's name stands for its
/// subcommands; unknown names and commands not called are left out), its calls and its
/// cumulative latency distribution (`crate::latencystats::cdf`).
fn histogram(cmd: &Command<'_>, out: &mut Vec<u8>, s: &Session, ctx: &Ctx<'_>) {
    use crate::cmdstats::{COMMAND_ROWS, STAT_ROWS, SUBCOMMANDS, subcommand_row};
    use crate::latencystats::{cdf, row};
    let name = |r: usize| {
        if r < COMMAND_ROWS { super::COMMANDS[r].name } else { SUBCOMMANDS[r - COMMAND_ROWS] }
    };
    let rows: Vec<usize> = if cmd.len() == 2 {
        (0..STAT_ROWS).collect()
    } else {
        let mut rows = Vec::new();
        for a in cmd.iter().skip(2) {
            let lower = a.to_ascii_lowercase();
            if let Some(bar) = lower.iter().position(|&b| b == b'|') {
                let container = std::str::from_utf8(&lower[..bar]).unwrap_or_default();
                rows.extend(subcommand_row(container, &lower[bar + 1..]));
            } else if let Some(c) = super::find(&lower) {
                if super::CONTAINERS.contains(&c.name) {
                    let prefix = format!("{}|", c.name);
                    rows.extend(
                        (0..SUBCOMMANDS.len())
                            .filter(|&i| SUBCOMMANDS[i].starts_with(&prefix))
                            .map(|i| COMMAND_ROWS + i),
                    );
                } else {
                    rows.extend(super::COMMANDS.iter().position(|x| std::ptr::eq(x, c)));
                }
            }
        }
        rows
    };
    let workers = ctx.shared.workers.iter().map(|w| &w.latency_by_row);
    let sum = ctx.shared.latency_tracking.merged(workers);
    let called: Vec<(usize, u64)> = rows
        .into_iter()
        .map(|r| (r, row(&sum, r).iter().sum::<u64>()))
        .filter(|&(_, calls)| calls > 0)
        .collect();
    let v = s.version;
    fridge_proto::resp::write_map_header(out, v, called.len());
    for (r, calls) in called {
        write_bulk(out, name(r).as_bytes());
        fridge_proto::resp::write_map_header(out, v, 2);
        write_bulk(out, b"calls");
        write_integer(out, calls as i64);
        write_bulk(out, b"histogram_usec");
        let levels = cdf(row(&sum, r));
        fridge_proto::resp::write_map_header(out, v, levels.len());
        for (micros, count) in levels {
            write_integer(out, micros as i64);
            write_integer(out, count as i64);
        }
    }
}
