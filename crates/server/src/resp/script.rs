//! Scripting's commands: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, FCALL, FCALL_RO, SCRIPT and
//! FUNCTION (Redis 7.0's `src/eval.c`, `src/functions.c`, `src/script.c`;
//! <https://redis.io/docs/interact/programmability/>). The Lua states, the sandbox and the
//! conversions are in `crate::script`.
//!
//! A script runs like a transaction (`crate::transaction`): its row is `NO_GATE`, and it
//! takes every worker's gate, then the Lua states' mutex, for its whole run. `redis.call`
//! runs a command through the same table and handlers as a client's, into a scratch buffer,
//! then parses the reply back into Lua values. What it refuses, as Redis does: commands
//! flagged `noscript` ([`NOT_IN_SCRIPTS`]), writes from a read-only script. What fridge adds:
//! a command's keys (the table's key positions) must be among the script's `KEYS`, as Redis
//! Cluster and Dragonfly require — a script's keys are known before it runs.
//!
//! A script runs as the caller's tenant, against that tenant's Lua state and caches.

use std::cell::RefCell;
use std::sync::atomic::Ordering;

use fridge_proto::resp::{self as r, Command, write_array_header, write_bulk, write_error};
use mlua::{Function, MultiValue, Value};

use super::{Spec, WRITE, find, run_spec};
use crate::script::{
    FunctionInfo, Library, LuaFunction, RunningFunction, TenantLua, function_flag, library_name,
    lua_message, reply_to_lua, sha1_hex, valid_function_name, write_lua,
};
use crate::session::{Ctx, Session};
use crate::shared::Shared;

const NOSCRIPT: &[u8] = b"NOSCRIPT No matching script. Please use EVAL.";
const TOO_MANY_KEYS: &[u8] = b"ERR Number of keys can't be greater than number of args";
const NEGATIVE_KEYS: &[u8] = b"ERR Number of keys can't be negative";
const BUSY_EVAL: &[u8] =
    b"BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
const BUSY_FUNCTION: &[u8] =
    b"BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";
const NOTBUSY: &[u8] = b"NOTBUSY No scripts in execution right now.";
const UNKILLABLE: &[u8] = b"UNKILLABLE Sorry the script already executed write commands \
against the dataset. You can either wait the script termination or kill the server in a hard \
way using the SHUTDOWN NOSAVE command.";

/// Commands Redis flags `noscript`, of those fridge has.
const NOT_IN_SCRIPTS: [&str; 37] = [
    "blpop",
    "brpop",
    "blmove",
    "brpoplpush",
    "blmpop",
    "bzpopmin",
    "bzpopmax",
    "bzmpop",
    "auth",
    "hello",
    "quit",
    "reset",
    "multi",
    "exec",
    "discard",
    "watch",
    "unwatch",
    "subscribe",
    "psubscribe",
    "ssubscribe",
    "unsubscribe",
    "punsubscribe",
    "sunsubscribe",
    "eval",
    "evalsha",
    "eval_ro",
    "evalsha_ro",
    "fcall",
    "fcall_ro",
    "script",
    "function",
    "client",
    "config",
    "latency",
    "acl",
    "debug",
    "wait",
];

const SCRIPT_HELP: [&str; 17] = [
    "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DEBUG (YES|SYNC|NO)",
    "    Set the debug mode for subsequent scripts executed.",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache. Very dangerous on replicas.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the scripts cache.",
    "    * SYNC: Synchronously flush the scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
    "HELP",
    "    Prints this help.",
];

const FUNCTION_HELP: [&str; 40] = [
    "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Library description",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
    "      libraries with the new libraries (notice that even on this option there is a chance of failure",
    "      in case of functions name collision with another library).",
    "HELP",
    "    Prints this help.",
];

/// Answers `BUSY` (the running script is past `busy-reply-threshold`).
pub(super) fn write_busy(out: &mut Vec<u8>, shared: &Shared) {
    let function = shared.scripting.busy.function.load(Ordering::Relaxed);
    write_error(out, if function { BUSY_FUNCTION } else { BUSY_EVAL });
}

/// Whether `c` runs while a script is past its threshold (Redis's `allow-busy` commands).
pub(super) fn allowed_while_busy(c: &Spec, cmd: &Command<'_>) -> bool {
    let sub = cmd.get(1).unwrap_or_default();
    match c.name {
        "auth" | "hello" | "quit" | "reset" => true,
        "script" => sub.eq_ignore_ascii_case(b"kill"),
        "function" => sub.eq_ignore_ascii_case(b"kill") || sub.eq_ignore_ascii_case(b"stats"),
        _ => false,
    }
}

/// Writes an error reply, its CR and LF made spaces.
fn error_reply(out: &mut Vec<u8>, msg: &[u8]) {
    let clean: Vec<u8> =
        msg.iter().map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }).collect();
    write_error(out, &clean);
}

/// A script's keys and arguments.
type KeysArgs<'a> = (Vec<&'a [u8]>, Vec<&'a [u8]>);

/// `numkeys` and the keys and arguments after it; or the error written.
fn keys_and_args<'a>(
    cmd: &Command<'a>,
    out: &mut Vec<u8>,
    bad_number: &[u8],
) -> Option<KeysArgs<'a>> {
    let Some(n) = super::int_arg(cmd.get(2).unwrap_or_default()) else {
        write_error(out, bad_number);
        return None;
    };
    if n < 0 {
        write_error(out, NEGATIVE_KEYS);
        return None;
    }
    let n = n as usize;
    if n > cmd.len() - 3 {
        write_error(out, TOO_MANY_KEYS);
        return None;
    }
    let all: Vec<&[u8]> = cmd.iter().skip(3).collect();
    let (keys, args) = all.split_at(n);
    Some((keys.to_vec(), args.to_vec()))
}

/// Routes an unauthenticated client by its first key's prefix (as `super::tenant_for` does
/// for a command), and refuses keys that route to different tenants.
fn route(keys: &[&[u8]], s: &mut Session, ctx: &Ctx<'_>, out: &mut Vec<u8>) -> bool {
    if s.user.is_some() || !ctx.tenants.has_prefixes() || keys.is_empty() {
        return true;
    }
    let tenant = ctx.tenants.route(keys[0]);
    if keys.iter().any(|k| ctx.tenants.route(k) != tenant) {
        write_error(out, b"ERR a script's keys must all belong to one tenant");
        return false;
    }
    s.tenant = tenant;
    true
}

pub(super) fn eval(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    spec: &Spec,
) {
    let read_only = spec.name.ends_with("_ro");
    let by_sha = spec.name.starts_with("evalsha");
    let Some((keys, args)) = keys_and_args(cmd, out, super::NOT_INTEGER) else { return };
    let body = cmd.get(1).unwrap_or_default();
    let sha = if by_sha {
        if body.len() != 40 {
            return write_error(out, NOSCRIPT);
        }
        String::from_utf8_lossy(body).to_ascii_lowercase()
    } else {
        sha1_hex(body)
    };
    if !route(&keys, s, ctx, out) {
        return;
    }
    let shared = ctx.shared;
    let scripting = &shared.scripting;
    let Ok(_gates) = shared.gates.enter_all_unless(|| scripting.too_long()) else {
        return write_busy(out, shared);
    };
    let Ok(mut states) = crate::transaction::poll_lock(&scripting.states, || scripting.too_long())
    else {
        return write_busy(out, shared);
    };
    let tl = match scripting.state(&mut states, s.tenant) {
        Ok(tl) => tl,
        Err(e) => return error_reply(out, e.as_bytes()),
    };
    if !by_sha && let Err(e) = tl.compile_script(&sha, body) {
        return error_reply(out, e.as_bytes());
    }
    let tl: &TenantLua = tl;
    let Some(script) = tl.scripts.get(&sha) else {
        return write_error(out, NOSCRIPT);
    };
    if let Err(e) = tl.set_keys_args(&keys, &args) {
        return error_reply(out, format!("ERR {}", lua_message(&e)).as_bytes());
    }
    let read_only = read_only || script.no_writes;
    let call = Call { name: &sha, keys: &keys, read_only, function: false };
    execute(tl, &script.func, (Value::Nil, Value::Nil), &call, out, s, ctx);
}

pub(super) fn fcall(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    spec: &Spec,
) {
    let read_only = spec.name == "fcall_ro";
    let Some((keys, args)) = keys_and_args(cmd, out, b"ERR Bad number of keys provided") else {
        return;
    };
    if !route(&keys, s, ctx, out) {
        return;
    }
    let name = String::from_utf8_lossy(cmd.get(1).unwrap_or_default()).into_owned();
    let shared = ctx.shared;
    let scripting = &shared.scripting;
    let Ok(_gates) = shared.gates.enter_all_unless(|| scripting.too_long()) else {
        return write_busy(out, shared);
    };
    let Ok(mut states) = crate::transaction::poll_lock(&scripting.states, || scripting.too_long())
    else {
        return write_busy(out, shared);
    };
    let tl: &TenantLua = match scripting.state(&mut states, s.tenant) {
        Ok(tl) => tl,
        Err(e) => return error_reply(out, e.as_bytes()),
    };
    let Some(f) = tl.functions.get(&name) else {
        return write_error(out, b"ERR Function not found");
    };
    if read_only && !f.no_writes {
        return write_error(
            out,
            b"ERR Can not execute a script with write flag using *_ro command.",
        );
    }
    let tables = tl.byte_table(&keys).and_then(|k| Ok((k, tl.byte_table(&args)?)));
    let (k, a) = match tables {
        Ok(t) => t,
        Err(e) => return error_reply(out, format!("ERR {}", lua_message(&e)).as_bytes()),
    };
    let read_only = read_only || f.no_writes;
    let call = Call { name: &name, keys: &keys, read_only, function: true };
    let running = RunningFunction {
        tenant: s.tenant,
        name: name.clone(),
        command: cmd.iter().map(<[u8]>::to_vec).collect(),
        since: scripting.now(),
    };
    *scripting.running.lock().unwrap_or_else(|e| e.into_inner()) = Some(running);
    execute(tl, &f.func, (Value::Table(k), Value::Table(a)), &call, out, s, ctx);
    *scripting.running.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

/// What a script run is: its name in errors, its declared keys, whether it may write.
struct Call<'a> {
    name: &'a str,
    keys: &'a [&'a [u8]],
    read_only: bool,
    function: bool,
}

/// Runs a script or function (the gates and the states held) and writes its reply.
fn execute(
    tl: &TenantLua,
    f: &Function,
    (a, b): (Value, Value),
    call: &Call<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
) {
    let shared = ctx.shared;
    let (version, tenant, db) = (s.version, s.tenant, s.db);
    shared.scripting.start(call.function);
    let caller = RefCell::new((s, ctx));
    let redis: Option<mlua::Table> = tl.slot.raw_get("redis").ok();
    let run_command = |lua: &mlua::Lua, args: MultiValue| {
        let Ok(mut guard) = caller.try_borrow_mut() else {
            return Err(mlua::Error::runtime("redis.call is not reentrant"));
        };
        let (s, ctx) = &mut *guard;
        let resp = tl.slot.raw_get::<i64>("resp").unwrap_or(2);
        script_call(lua, args, call, resp, s, ctx)
    };
    let result = tl.lua.scope(|scope| {
        // `redis.call` raises a command's error (Redis's error handler makes it
        // `{err=...}` with the script's line); `redis.pcall` returns it as `{err=...}`.
        let raising = scope.create_function(|lua, args: MultiValue| {
            let (v, failed) = run_command(lua, args)?;
            if failed && let Value::Table(t) = &v {
                let msg: String = t.raw_get::<Option<String>>("err")?.unwrap_or_default();
                return Err(mlua::Error::external(crate::script::ReplyError(msg)));
            }
            Ok(v)
        })?;
        let returning =
            scope.create_function(|lua, args: MultiValue| Ok(run_command(lua, args)?.0))?;
        // Every user may run every command it can name (tenants have no ACL rules).
        let acl_check = scope.create_function(|_, args: MultiValue| match args.front() {
            Some(Value::String(name)) if find(&name.as_bytes()).is_some() => Ok(true),
            None => Err(mlua::Error::runtime(
                "ERR Please specify at least one argument for this redis lib call",
            )),
            _ => Err(mlua::Error::runtime("ERR Invalid command passed to redis.acl_check_cmd()")),
        })?;
        if let Some(redis) = &redis {
            redis.raw_set("call", raising)?;
            redis.raw_set("pcall", returning)?;
            redis.raw_set("acl_check_cmd", acl_check)?;
        }
        Ok(tl.run(f, a, b, call.name))
    });
    if let Some(redis) = &redis {
        redis.raw_set("call", Value::Nil).ok();
        redis.raw_set("pcall", Value::Nil).ok();
        redis.raw_set("acl_check_cmd", Value::Nil).ok();
    }
    shared.scripting.end();
    // A SELECT in the script was the script's own (Redis 7): the caller keeps its database.
    caller.borrow_mut().0.db = db;
    // A script that failed may leave its garbage (a huge table) past what the next script
    // could allocate: collect it now rather than at Lua's own pace.
    if !matches!(result, Ok(Ok(_))) || tl.lua.used_memory() > crate::script::LUA_MEMORY_LIMIT / 2 {
        tl.collect();
    }
    shared.scripting.publish(tenant, tl);
    match result {
        Ok(Ok(v)) => {
            let resp = tl.slot.raw_get::<i64>("resp").unwrap_or(2);
            write_lua(out, &v, version, resp);
        }
        Ok(Err(e)) => error_reply(out, e.reply().as_bytes()),
        Err(e) => error_reply(
            out,
            format!("ERR Error running script {}, {}", call.name, lua_message(&e)).as_bytes(),
        ),
    }
}

/// `redis.call`/`redis.pcall`: runs one command for a script; returns the reply as a Lua
/// value and whether it is an error.
fn script_call(
    lua: &mlua::Lua,
    args: MultiValue,
    call: &Call<'_>,
    resp: i64,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
) -> mlua::Result<(Value, bool)> {
    let fail = |msg: &[u8]| -> mlua::Result<(Value, bool)> {
        let t = lua.create_table()?;
        t.raw_set("err", lua.create_string(msg)?)?;
        Ok((Value::Table(t), true))
    };
    if args.is_empty() {
        return fail(b"ERR Please specify at least one argument for this redis lib call");
    }
    let mut parts: Vec<Vec<u8>> = Vec::with_capacity(args.len());
    for v in args {
        match v {
            Value::String(s) => parts.push(s.as_bytes().to_vec()),
            v @ (Value::Number(_) | Value::Integer(_)) => {
                let text = lua.coerce_string(v)?.map(|s| s.as_bytes().to_vec());
                parts.push(text.unwrap_or_default());
            }
            _ => return fail(b"ERR Lua redis lib command arguments must be strings or integers"),
        }
    }
    let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    let mut buf = Vec::new();
    r::encode_command(&mut buf, &refs);
    let limits = ctx.shared.config.resp_limits();
    let mut parsed = r::Args::new();
    if r::parse_command(&buf, &limits, &mut parsed).is_err() {
        return fail(b"ERR Lua redis lib command arguments are over the protocol's limits");
    }
    let cmd = parsed.command(&buf);
    let Some(c) = find(cmd.name()) else {
        return fail(b"ERR Unknown Redis command called from script");
    };
    if !c.arity_ok(cmd.len()) {
        return fail(b"ERR Wrong number of args calling Redis command from script");
    }
    if NOT_IN_SCRIPTS.contains(&c.name) {
        return fail(b"ERR This Redis command is not allowed from script");
    }
    if c.flags & WRITE != 0 && call.read_only {
        return fail(b"ERR Write commands are not allowed from read-only scripts.");
    }
    if let Some(key) = undeclared_key(c, &cmd, call.keys) {
        let mut msg = b"ERR script tried accessing undeclared key: ".to_vec();
        msg.extend(key.iter().take(128));
        return fail(&msg);
    }
    if c.flags & WRITE != 0 {
        ctx.shared.scripting.busy.wrote.store(true, Ordering::Relaxed);
    }
    let version = s.version;
    s.version = if resp == 3 { r::Version::Resp3 } else { r::Version::Resp2 };
    let mut reply = Vec::new();
    let deny = std::mem::replace(&mut s.deny_blocking, true);
    loop {
        run_spec(c, &cmd, &mut reply, s, ctx);
        if !s.keep_for_later() {
            break;
        }
    }
    s.deny_blocking = deny;
    s.version = version;
    reply_to_lua(lua, &reply)
}

/// A key of `cmd` that is not among `declared`: its keys as `COMMAND GETKEYS` finds them (by
/// Redis's key specifications, so SORT's `STORE` key and OBJECT's key count too).
fn undeclared_key<'a>(c: &Spec, cmd: &Command<'a>, declared: &[&[u8]]) -> Option<&'a [u8]> {
    let args: Vec<&'a [u8]> = cmd.iter().collect();
    let keys = super::command::command_keys(c, &args).unwrap_or_default();
    keys.into_iter().map(|(i, _)| args[i]).find(|key| !declared.contains(key))
}

/// SCRIPT LOAD, EXISTS, FLUSH, KILL, HELP (DEBUG: an error, see `docs/protocol.md`).
pub(super) fn script(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let sub = cmd.get(1).unwrap_or_default();
    let lower = sub.to_ascii_lowercase();
    let n = cmd.len();
    let arity_ok = match &lower[..] {
        b"load" => n == 3,
        b"exists" => n >= 3,
        b"flush" => n <= 3,
        b"kill" | b"help" => n == 2,
        b"debug" => n == 3,
        _ => return super::unknown_subcommand(out, sub, b"SCRIPT"),
    };
    if !arity_ok {
        return super::object::sub_arity(out, "script", sub);
    }
    let shared = ctx.shared;
    let scripting = &shared.scripting;
    match &lower[..] {
        b"help" => super::object::help(out, &SCRIPT_HELP),
        b"kill" => kill(out, shared, false),
        b"debug" => write_error(out, b"ERR SCRIPT DEBUG is not supported"),
        b"flush" => {
            if let Some(mode) = cmd.get(2)
                && !mode.eq_ignore_ascii_case(b"sync")
                && !mode.eq_ignore_ascii_case(b"async")
            {
                return write_error(out, b"ERR SCRIPT FLUSH only support SYNC|ASYNC option");
            }
            let Ok(mut states) =
                crate::transaction::poll_lock(&scripting.states, || scripting.too_long())
            else {
                return write_busy(out, shared);
            };
            if let Some(tl) = states.get_mut(&s.tenant) {
                tl.flush_scripts();
                scripting.publish(s.tenant, tl);
            }
            out.extend_from_slice(b"+OK\r\n");
        }
        _ => {
            let Ok(mut states) =
                crate::transaction::poll_lock(&scripting.states, || scripting.too_long())
            else {
                return write_busy(out, shared);
            };
            if lower == b"exists" {
                let tl = states.get(&s.tenant);
                write_array_header(out, n - 2);
                for sha in cmd.iter().skip(2) {
                    let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
                    r::write_integer(
                        out,
                        i64::from(tl.is_some_and(|t| t.scripts.contains_key(&sha))),
                    );
                }
                return;
            }
            let body = cmd.get(2).unwrap_or_default();
            let sha = sha1_hex(body);
            let tl = match scripting.state(&mut states, s.tenant) {
                Ok(tl) => tl,
                Err(e) => return error_reply(out, e.as_bytes()),
            };
            match tl.compile_script(&sha, body) {
                Ok(()) => write_bulk(out, sha.as_bytes()),
                Err(e) => error_reply(out, e.as_bytes()),
            }
            scripting.publish(s.tenant, tl);
        }
    }
}

/// SCRIPT KILL and FUNCTION KILL: asks the running script to stop (its count hook raises an
/// error at its next look).
fn kill(out: &mut Vec<u8>, shared: &Shared, function: bool) {
    let busy = &shared.scripting.busy;
    // Redis reads a SCRIPT KILL only once the script is past `busy-reply-threshold` (until
    // then its one thread runs the script): wait as long, so a script that writes early is
    // never killed by a KILL sent before it could write.
    while shared.scripting.running() && !shared.scripting.too_long() {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    if busy.since.load(Ordering::Acquire) == 0 {
        return write_error(out, NOTBUSY);
    }
    if busy.wrote.load(Ordering::Relaxed) {
        return write_error(out, UNKILLABLE);
    }
    if busy.function.load(Ordering::Relaxed) != function {
        return write_busy(out, shared);
    }
    busy.kill.store(true, Ordering::Relaxed);
    out.extend_from_slice(b"+OK\r\n");
}

/// FUNCTION LOAD, LIST, DELETE, FLUSH, KILL, STATS, HELP (DUMP and RESTORE: an error, see
/// `docs/protocol.md`).
pub(super) fn function(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let sub = cmd.get(1).unwrap_or_default();
    let lower = sub.to_ascii_lowercase();
    let n = cmd.len();
    let arity_ok = match &lower[..] {
        b"load" => n == 3 || n == 4,
        b"delete" => n == 3,
        b"list" => n >= 2,
        b"flush" => n <= 3,
        b"kill" | b"help" | b"stats" | b"dump" => n == 2,
        b"restore" => n >= 3,
        _ => return super::unknown_subcommand(out, sub, b"FUNCTION"),
    };
    if !arity_ok {
        return super::object::sub_arity(out, "function", sub);
    }
    let shared = ctx.shared;
    let scripting = &shared.scripting;
    match &lower[..] {
        b"help" => return super::object::help(out, &FUNCTION_HELP),
        b"kill" => return kill(out, shared, true),
        b"dump" | b"restore" => {
            return write_error(out, b"ERR FUNCTION DUMP and RESTORE are not supported");
        }
        b"stats" => return stats(out, s, shared),
        _ => {}
    }
    if lower == b"flush"
        && let Some(mode) = cmd.get(2)
        && !mode.eq_ignore_ascii_case(b"sync")
        && !mode.eq_ignore_ascii_case(b"async")
    {
        return write_error(out, b"ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
    }
    let Ok(mut states) = crate::transaction::poll_lock(&scripting.states, || scripting.too_long())
    else {
        return write_busy(out, shared);
    };
    let tl = match scripting.state(&mut states, s.tenant) {
        Ok(tl) => tl,
        Err(e) => return error_reply(out, e.as_bytes()),
    };
    match &lower[..] {
        b"load" => load(cmd, out, tl, scripting),
        b"delete" => {
            let name = String::from_utf8_lossy(cmd.get(2).unwrap_or_default()).into_owned();
            if tl.libraries.remove(&name).is_none() {
                return write_error(out, b"ERR Library not found");
            }
            tl.functions.retain(|_, f| f.library != name);
            out.extend_from_slice(b"+OK\r\n");
        }
        b"flush" => {
            tl.libraries.clear();
            tl.functions.clear();
            out.extend_from_slice(b"+OK\r\n");
        }
        _ => return list(cmd, out, s, tl),
    }
    scripting.publish(s.tenant, tl);
}

/// FUNCTION LOAD [REPLACE] code: runs the library's code with `redis.register_function`
/// (and only the load-time API) in reach, then registers what it registered.
fn load(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    tl: &mut TenantLua,
    scripting: &crate::script::Scripting,
) {
    let replace = cmd.len() == 4;
    if replace && !cmd.get(2).unwrap_or_default().eq_ignore_ascii_case(b"replace") {
        let mut msg = b"ERR Unknown option given: ".to_vec();
        msg.extend_from_slice(cmd.get(2).unwrap_or_default());
        return error_reply(out, &msg);
    }
    let code = cmd.get(cmd.len() - 1).unwrap_or_default();
    let name = match library_name(code) {
        Ok(name) => name,
        Err(e) => return error_reply(out, e.as_bytes()),
    };
    if tl.libraries.contains_key(&name) && !replace {
        return error_reply(out, format!("ERR Library '{name}' already exists").as_bytes());
    }
    let mut source = b"--".to_vec();
    source.extend_from_slice(code);
    let chunk = tl
        .lua
        .load(&source[..])
        .set_name("@user_function")
        .set_mode(mlua::ChunkMode::Text)
        .set_environment(tl.env.clone())
        .into_function();
    let chunk = match chunk {
        Ok(f) => f,
        Err(e) => {
            let msg = format!("ERR Error compiling function: {}", lua_message(&e));
            return error_reply(out, msg.as_bytes());
        }
    };
    let registered: RefCell<Vec<(FunctionInfo, Function, bool)>> = RefCell::new(Vec::new());
    let busy = &scripting.busy;
    let result = tl.lua.scope(|scope| {
        let register = scope.create_function(|_, args: MultiValue| {
            let entry = register_args(args)?;
            let mut list = registered.borrow_mut();
            if list.iter().any(|(i, _, _)| i.name == entry.0.name) {
                return Err(mlua::Error::runtime("Function already exists in the library"));
            }
            list.push(entry);
            Ok(())
        })?;
        tl.slot.raw_set("register_function", register)?;
        tl.slot.raw_set("api", tl.load_api.clone())?;
        busy.load_deadline
            .store(scripting.now() + crate::script::LOAD_TIMEOUT_MS, Ordering::Relaxed);
        let r = tl.run(&chunk, Value::Nil, Value::Nil, &name);
        busy.load_deadline.store(0, Ordering::Relaxed);
        Ok(r)
    });
    tl.slot.raw_set("api", tl.run_api.clone()).ok();
    tl.slot.raw_set("register_function", Value::Nil).ok();
    match result {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => {
            let msg = format!("ERR Error registering functions: {}", e.msg);
            return error_reply(out, msg.as_bytes());
        }
        Err(e) => {
            let msg = format!("ERR Error registering functions: {}", lua_message(&e));
            return error_reply(out, msg.as_bytes());
        }
    }
    let registered = registered.into_inner();
    if registered.is_empty() {
        return write_error(out, b"ERR No functions registered");
    }
    for (info, _, _) in &registered {
        if tl.functions.get(&info.name).is_some_and(|f| !replace || f.library != name) {
            let msg = format!("ERR Function {} already exists", info.name);
            return error_reply(out, msg.as_bytes());
        }
    }
    tl.functions.retain(|_, f| f.library != name);
    let mut infos = Vec::with_capacity(registered.len());
    for (info, func, no_writes) in registered {
        tl.functions
            .insert(info.name.clone(), LuaFunction { library: name.clone(), func, no_writes });
        infos.push(info);
    }
    tl.libraries.insert(name.clone(), Library { code: code.to_vec(), functions: infos });
    write_bulk(out, name.as_bytes());
}

/// `redis.register_function(name, callback)` or `redis.register_function{function_name=,
/// callback=, flags=, description=}`.
fn register_args(args: MultiValue) -> mlua::Result<(FunctionInfo, Function, bool)> {
    let bad = |m: &str| mlua::Error::runtime(m.to_owned());
    let mut it = args.into_iter();
    let (name, callback, flags, description) = match (it.next(), it.next(), it.next()) {
        (Some(Value::String(name)), Some(callback), None) => {
            (name.as_bytes().to_vec(), callback, None, None)
        }
        (Some(Value::Table(t)), None, None) => {
            let mut name = None;
            let (mut callback, mut flags, mut description) = (Value::Nil, None, None);
            for pair in t.pairs::<String, Value>() {
                let (k, v) = pair?;
                match (k.as_str(), v) {
                    ("function_name", Value::String(s)) => name = Some(s.as_bytes().to_vec()),
                    ("callback", v) => callback = v,
                    ("flags", Value::Table(f)) => flags = Some(f),
                    ("description", Value::String(s)) => description = Some(s.as_bytes().to_vec()),
                    (other, _) => {
                        return Err(bad(&format!(
                            "unknown argument given to redis.register_function: {other}"
                        )));
                    }
                }
            }
            let name = name
                .ok_or_else(|| bad("redis.register_function must get a function name argument"))?;
            (name, callback, flags, description)
        }
        _ => return Err(bad("wrong number of arguments to redis.register_function")),
    };
    if !valid_function_name(&name) {
        return Err(bad(
            "Function names can only contain letters, numbers, or underscores(_) and must be at \
             least one character long",
        ));
    }
    let Value::Function(callback) = callback else {
        return Err(bad("callback argument given to redis.register_function must be a function"));
    };
    let mut names = Vec::new();
    if let Some(f) = flags {
        for v in f.sequence_values::<Value>() {
            let Value::String(s) = v? else { return Err(bad("unknown flag given")) };
            let flag = function_flag(&s.as_bytes()).ok_or_else(|| bad("unknown flag given"))?;
            names.push(flag);
        }
    }
    let no_writes = names.contains(&"no-writes");
    let info = FunctionInfo {
        name: String::from_utf8_lossy(&name).into_owned(),
        description,
        flags: names,
    };
    Ok((info, callback, no_writes))
}

/// FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE].
fn list(cmd: &Command<'_>, out: &mut Vec<u8>, s: &Session, tl: &TenantLua) {
    let (mut with_code, mut pattern) = (false, None);
    let mut i = 2;
    while let Some(a) = cmd.get(i) {
        if a.eq_ignore_ascii_case(b"withcode") && !with_code {
            with_code = true;
        } else if a.eq_ignore_ascii_case(b"libraryname") && pattern.is_none() {
            let Some(p) = cmd.get(i + 1) else {
                return write_error(out, b"ERR library name argument was not given");
            };
            pattern = Some(p);
            i += 1;
        } else {
            let mut msg = b"ERR Unknown argument ".to_vec();
            msg.extend_from_slice(a);
            return error_reply(out, &msg);
        }
        i += 1;
    }
    let libs: Vec<(&String, &Library)> = tl
        .libraries
        .iter()
        .filter(|(name, _)| pattern.is_none_or(|p| super::glob::glob_match(p, name.as_bytes())))
        .collect();
    let v = s.version;
    write_array_header(out, libs.len());
    for (name, lib) in libs {
        r::write_map_header(out, v, if with_code { 4 } else { 3 });
        write_bulk(out, b"library_name");
        write_bulk(out, name.as_bytes());
        write_bulk(out, b"engine");
        write_bulk(out, b"LUA");
        write_bulk(out, b"functions");
        write_array_header(out, lib.functions.len());
        for f in &lib.functions {
            r::write_map_header(out, v, 3);
            write_bulk(out, b"name");
            write_bulk(out, f.name.as_bytes());
            write_bulk(out, b"description");
            match &f.description {
                Some(d) => write_bulk(out, d),
                None => r::write_null(out, v),
            }
            write_bulk(out, b"flags");
            r::write_set_header(out, v, f.flags.len());
            for flag in &f.flags {
                r::write_simple(out, flag.as_bytes());
            }
        }
        if with_code {
            write_bulk(out, b"library_code");
            write_bulk(out, &lib.code);
        }
    }
}

/// FUNCTION STATS: the running function (none: null) and the tenant's counts. It runs while
/// a script is busy and takes no lock a script holds: the counts are kept apart
/// (`Scripting::counts`). While an `EVAL` runs, Redis answers `BUSY`; so does this.
/// A tenant sees only its own running function.
fn stats(out: &mut Vec<u8>, s: &Session, shared: &Shared) {
    let scripting = &shared.scripting;
    let busy = &scripting.busy;
    if busy.since.load(Ordering::Acquire) != 0 && !busy.function.load(Ordering::Relaxed) {
        return write_busy(out, shared);
    }
    let counts = scripting.counts(s.tenant);
    let (libraries, functions) = (counts.libraries, counts.functions);
    let v = s.version;
    r::write_map_header(out, v, 2);
    write_bulk(out, b"running_script");
    match &*scripting.running.lock().unwrap_or_else(|e| e.into_inner()) {
        Some(f) if f.tenant == s.tenant => {
            r::write_map_header(out, v, 3);
            write_bulk(out, b"name");
            write_bulk(out, f.name.as_bytes());
            write_bulk(out, b"command");
            write_array_header(out, f.command.len());
            for a in &f.command {
                write_bulk(out, a);
            }
            write_bulk(out, b"duration_ms");
            r::write_integer(out, scripting.now().saturating_sub(f.since) as i64);
        }
        _ => r::write_null(out, v),
    }
    write_bulk(out, b"engines");
    r::write_map_header(out, v, 1);
    write_bulk(out, b"LUA");
    r::write_map_header(out, v, 2);
    write_bulk(out, b"libraries_count");
    r::write_integer(out, libraries as i64);
    write_bulk(out, b"functions_count");
    r::write_integer(out, functions as i64);
}

#[cfg(test)]
mod tests {
    #[test]
    fn lua_reports_the_servers_version() {
        assert_eq!(crate::script::REDIS_VERSION, crate::shared::REDIS_VERSION);
    }
}
