//! Redis scripting's Lua side: the Lua 5.1 states, their sandbox, the script and function
//! caches, and the conversions between Lua values and RESP replies (Redis 7.0's
//! `src/script_lua.c`, `src/eval.c`, `src/function_lua.c`;
//! <https://redis.io/docs/interact/programmability/eval-intro/>,
//! <https://redis.io/docs/interact/programmability/lua-api/>). The commands are in
//! `crate::resp::script`.
//!
//! **One Lua state per tenant**, created at the tenant's first script, all behind one mutex
//! ([`Scripting::states`]). A script runs holding every worker's transaction gate
//! (`crate::transaction`), so two scripts never run at once anyway: one mutex costs nothing
//! and keeps a single place to look. A state per tenant (rather than per worker, or one for
//! all) keeps one tenant's scripts, functions and any Lua state they leave behind out of
//! another tenant's reach, and makes `SCRIPT FLUSH`/`FUNCTION FLUSH` per tenant; a state's
//! memory is bounded by [`LUA_MEMORY_LIMIT`] (Lua's allocator refuses past it, and the
//! script fails with an error), its script cache by [`SCRIPT_CACHE_LIMIT`].
//!
//! The sandbox is Redis 7.0.15's: the base library (less `print`, `loadfile`, `dofile`,
//! `getfenv`, `setfenv`, `newproxy`; `load` and `loadstring` refuse precompiled code),
//! `string`, `table`, `math`, `bit`, `redis`;
//! globals and the library tables are read-only (`Attempt to modify a readonly table`), and
//! reading a missing global is an error. Scripts see that through a proxy environment whose
//! `__index` reads the real table ([`PRELUDE`]). `bit` (LuaBitOp) is there, written in Rust;
//! `cjson`, `cmsgpack` and `struct` are not (see `docs/protocol.md`).
//!
//! `SCRIPT KILL`: a count hook runs every [`HOOK_EVERY`] Lua instructions and raises an error
//! once [`Busy::kill`] is set. How other workers notice a running script: `docs/threads.md`.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use fridge_engine::TenantId;
use fridge_proto::resp::{self as r, Frame, Version};
use mlua::{Function, HookTriggers, Lua, LuaOptions, MultiValue, StdLib, Table, Value, VmState};

/// Memory one tenant's Lua state may take (its compiled scripts and functions included).
pub(crate) const LUA_MEMORY_LIMIT: usize = 64 << 20;
/// Bytes of script source one tenant's script cache may hold.
pub(crate) const SCRIPT_CACHE_LIMIT: usize = 16 << 20;
/// `redis.REDIS_VERSION` (what `INFO` reports as `redis_version`).
pub(crate) const REDIS_VERSION: &str = "7.0.0";
/// Lua instructions between two looks at the kill flag.
const HOOK_EVERY: u32 = 10_000;
/// How long `FUNCTION LOAD` may run a library's code (Redis's 500 ms load timeout).
pub(crate) const LOAD_TIMEOUT_MS: u64 = 500;
/// Nesting past which a reply or a Lua table is not converted (Redis: `reached lua stack
/// limit`).
const MAX_DEPTH: usize = 500;

pub(crate) const KILLED: &str = "ERR Script killed by user with SCRIPT KILL...";
const LOAD_TIMEOUT: &str = "ERR FUNCTION LOAD timeout";

/// The running script, as other workers see it (without any lock).
#[derive(Debug, Default)]
pub(crate) struct Busy {
    /// When the running script started, in ms since [`Scripting::epoch`] plus one; 0: none.
    pub since: AtomicU64,
    /// `SCRIPT KILL`/`FUNCTION KILL` asked the running script to stop.
    pub kill: AtomicBool,
    /// The running script has run a write command (it cannot be killed).
    pub wrote: AtomicBool,
    /// The running script is a function (`FCALL`), not an `EVAL`.
    pub function: AtomicBool,
    /// `FUNCTION LOAD`'s deadline, in the same unit as `since`; 0: none.
    pub load_deadline: AtomicU64,
}

/// Every tenant's scripting state, and the running script's.
#[derive(Debug)]
pub(crate) struct Scripting {
    pub states: Mutex<HashMap<TenantId, Box<TenantLua>>>,
    pub busy: Arc<Busy>,
    /// `busy-reply-threshold` (`lua-time-limit`), ms.
    pub threshold_ms: AtomicU64,
    /// The running function, for `FUNCTION STATS` (which does not wait for `states`).
    pub running: Mutex<Option<RunningFunction>>,
    /// Each tenant's figures, for `FUNCTION STATS` and `INFO` (which do not wait for
    /// `states`), published by [`Scripting::publish`].
    pub counts: Mutex<HashMap<TenantId, Counts>>,
    epoch: Instant,
}

/// A tenant's scripting figures.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Counts {
    pub libraries: usize,
    pub functions: usize,
    pub scripts: usize,
    /// Bytes of cached scripts' source, and of libraries' code.
    pub script_bytes: usize,
    pub library_bytes: usize,
    /// Bytes the tenant's Lua state takes.
    pub lua_bytes: usize,
}

/// What `FUNCTION STATS` tells of the running function.
#[derive(Debug)]
pub(crate) struct RunningFunction {
    pub tenant: TenantId,
    pub name: String,
    pub command: Vec<Vec<u8>>,
    /// In [`Busy::since`]'s unit.
    pub since: u64,
}

impl Default for Scripting {
    fn default() -> Self {
        Self {
            states: Mutex::default(),
            busy: Arc::default(),
            threshold_ms: AtomicU64::new(5000),
            running: Mutex::default(),
            counts: Mutex::default(),
            epoch: Instant::now(),
        }
    }
}

impl Scripting {
    /// Now, in [`Busy::since`]'s unit.
    pub fn now(&self) -> u64 {
        now_since(self.epoch)
    }

    /// Whether a script is running (one relaxed load).
    #[inline]
    pub fn running(&self) -> bool {
        self.busy.since.load(Ordering::Relaxed) != 0
    }

    /// Whether a script has run past `busy-reply-threshold`: other clients are answered
    /// `BUSY` from then on.
    pub fn too_long(&self) -> bool {
        let since = self.busy.since.load(Ordering::Acquire);
        since != 0 && self.now().saturating_sub(since) >= self.threshold_ms.load(Ordering::Relaxed)
    }

    /// Marks a script as started (the caller holds every gate and the states).
    pub fn start(&self, function: bool) {
        self.busy.kill.store(false, Ordering::Relaxed);
        self.busy.wrote.store(false, Ordering::Relaxed);
        self.busy.function.store(function, Ordering::Relaxed);
        self.busy.since.store(self.now(), Ordering::Release);
    }

    /// Marks the script as ended.
    pub fn end(&self) {
        self.busy.since.store(0, Ordering::Release);
        self.busy.kill.store(false, Ordering::Relaxed);
    }

    /// Publishes `tl`'s figures as `tenant`'s (the caller holds `states`).
    pub fn publish(&self, tenant: TenantId, tl: &TenantLua) {
        let counts = Counts {
            libraries: tl.libraries.len(),
            functions: tl.functions.len(),
            scripts: tl.scripts.len(),
            script_bytes: tl.script_bytes,
            library_bytes: tl.libraries.values().map(|l| l.code.len()).sum(),
            lua_bytes: tl.lua.used_memory(),
        };
        self.counts.lock().unwrap_or_else(|e| e.into_inner()).insert(tenant, counts);
    }

    /// A tenant's published figures.
    pub fn counts(&self, tenant: TenantId) -> Counts {
        let counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        counts.get(&tenant).copied().unwrap_or_default()
    }

    /// The tenant's state, created at its first use.
    pub fn state<'a>(
        &self,
        states: &'a mut HashMap<TenantId, Box<TenantLua>>,
        tenant: TenantId,
    ) -> Result<&'a mut TenantLua, String> {
        if let std::collections::hash_map::Entry::Vacant(e) = states.entry(tenant) {
            let state = TenantLua::new(Arc::clone(&self.busy), self.epoch)
                .map_err(|e| format!("ERR cannot create the Lua state: {e}"))?;
            e.insert(Box::new(state));
        }
        states.get_mut(&tenant).map(|b| &mut **b).ok_or_else(String::new)
    }
}

fn now_since(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX).saturating_add(1)
}

/// A function of a library (`FUNCTION LOAD`).
#[derive(Debug)]
pub(crate) struct LuaFunction {
    pub library: String,
    pub func: Function,
    pub no_writes: bool,
}

/// A library: its code and its functions' names, flags and descriptions.
#[derive(Debug)]
pub(crate) struct Library {
    pub code: Vec<u8>,
    pub functions: Vec<FunctionInfo>,
}

/// What `FUNCTION LIST` tells of a function.
#[derive(Debug, Clone)]
pub(crate) struct FunctionInfo {
    pub name: String,
    pub description: Option<Vec<u8>>,
    pub flags: Vec<&'static str>,
}

/// A cached script: its compiled function and its flags.
#[derive(Debug)]
pub(crate) struct Script {
    pub func: Function,
    pub no_writes: bool,
}

/// One tenant's Lua state and caches.
#[derive(Debug)]
pub(crate) struct TenantLua {
    pub lua: Lua,
    /// The prelude's `slot`: `redis` (the real table), `resp`, `api`, `register_function`.
    pub slot: Table,
    /// The real globals (where KEYS and ARGV are set).
    pub globals: Table,
    /// What scripts see as their globals.
    pub env: Table,
    /// What code sees while `FUNCTION LOAD` runs it, and what it sees after.
    pub load_api: Table,
    pub run_api: Table,
    /// `xpcall` of a function with two arguments and the error handler.
    pub runner: Function,
    pub handler: Function,
    pub scripts: HashMap<String, Script>,
    pub script_bytes: usize,
    pub libraries: BTreeMap<String, Library>,
    pub functions: HashMap<String, LuaFunction>,
}

/// Builds the sandbox. Called with `slot` (a table the server fills per run), the real
/// globals and the strict-table maker's error texts. Returns the scripts' environment, the
/// load-time and run-time APIs and the runner.
const PRELUDE: &str = r#"
local slot, G = ...
local error, type, tostring, setmetatable, rawget, xpcall = error, type, tostring, setmetatable, rawget, xpcall
local function readonly_error() error('Attempt to modify a readonly table', 2) end
local function readonly(t)
  return setmetatable({}, {__index = t, __newindex = readonly_error, __metatable = false})
end
local function strict(t)
  return setmetatable({}, {__index = function(_, k)
    local v = t[k]
    if v == nil then
      error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
    end
    return v
  end, __newindex = readonly_error, __metatable = false})
end
-- A killed script's error must reach the top: `pcall`, `xpcall` and coroutines would catch
-- it, so they raise it again on their way out (Redis makes its hook fire on every line).
local check_kill, select, unpack = slot.check_kill, select, unpack
local function pack(...) return {n = select('#', ...), ...} end
local plain = slot.plain_error
local function passed(r)
  check_kill()
  if r[1] == false then r[2] = plain(r[2]) end
  return unpack(r, 1, r.n)
end
local pcall_, xpcall_ = pcall, xpcall
G.pcall = function(...) return passed(pack(pcall_(...))) end
G.xpcall = function(...) return passed(pack(xpcall_(...))) end
local co = G.coroutine
local resume, wrap = co.resume, co.wrap
co.resume = function(...) return passed(pack(resume(...))) end
co.wrap = function(f)
  local w = wrap(f)
  return function(...) return passed(pack(w(...))) end
end
local loadstring = loadstring
G.loadstring = function(s, name)
  if type(s) == 'string' and s:byte(1) == 27 then return nil, 'binary code not allowed' end
  return loadstring(s, name)
end
local load = load
G.load = function(f, name)
  local first = true
  return load(function()
    local piece = f()
    if first and type(piece) == 'string' and #piece > 0 then
      first = false
      if piece:byte(1) == 27 then error('binary code not allowed', 2) end
    end
    return piece
  end, name)
end
G.print, G.loadfile, G.dofile, G.module, G.require = nil, nil, nil, nil, nil
G.getfenv, G.setfenv, G.newproxy = nil, nil, nil
local redis = slot.redis
local run_api, load_api = {}, {}
for k, v in pairs(G) do
  if type(v) == 'table' and k ~= '_G' then v = readonly(v) end
  run_api[k] = v
  load_api[k] = v
end
run_api.redis = readonly(redis)
setmetatable(run_api, {__index = G})
local load_redis = {register_function = function(...) return slot.register_function(...) end, log = redis.log,
  setresp = redis.setresp, LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  REDIS_VERSION = redis.REDIS_VERSION, REDIS_VERSION_NUM = redis.REDIS_VERSION_NUM}
load_api.redis = strict(load_redis)
slot.api = run_api
local env = setmetatable({}, {__index = function(_, k)
  local v = slot.api[k]
  if v == nil then
    error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
  end
  return v
end, __newindex = readonly_error, __metatable = false})
-- Method calls on strings (`s:upper()`) read the library through its read-only face.
getmetatable('').__index = run_api.string
run_api._G = env
load_api._G = env
local runner = function(f, h, a, b) return xpcall(function() return f(a, b) end, h) end
return env, load_api, run_api, runner
"#;

impl TenantLua {
    fn new(busy: Arc<Busy>, epoch: Instant) -> mlua::Result<Self> {
        let lua = Lua::new_with(StdLib::TABLE | StdLib::STRING | StdLib::MATH, LuaOptions::new())?;
        lua.set_memory_limit(LUA_MEMORY_LIMIT)?;
        // A global hook: the coroutines a script creates inherit it (a thread hook would not
        // follow them, and a loop inside one could not be killed).
        let hook_busy = Arc::clone(&busy);
        lua.set_global_hook(HookTriggers::new().every_nth_instruction(HOOK_EVERY), move |_, _| {
            let busy = &hook_busy;
            if busy.kill.load(Ordering::Relaxed) {
                return Err(mlua::Error::runtime(KILLED));
            }
            let deadline = busy.load_deadline.load(Ordering::Relaxed);
            if deadline != 0 && now_since(epoch) > deadline {
                return Err(mlua::Error::runtime(LOAD_TIMEOUT));
            }
            Ok(VmState::Continue)
        })?;
        let globals = lua.globals();
        globals.raw_set("bit", bit_table(&lua)?)?;
        let slot = lua.create_table()?;
        slot.set(
            "check_kill",
            lua.create_function(move |_, ()| {
                if busy.kill.load(Ordering::Relaxed) {
                    return Err(mlua::Error::runtime(KILLED));
                }
                Ok(())
            })?,
        )?;
        slot.set("resp", 2)?;
        // An error raised by Rust code (`redis.call`'s included) as a script sees it once
        // caught: its message, as Redis's scripts see a string.
        slot.set(
            "plain_error",
            lua.create_function(|lua, v: Value| match v {
                Value::Error(e) => {
                    let msg = match reply_error(&e) {
                        Some(r) => r.0.clone(),
                        None => lua_message(&e),
                    };
                    Ok(Value::String(lua.create_string(msg)?))
                }
                v => Ok(v),
            })?,
        )?;
        let redis = redis_table(&lua, &slot)?;
        slot.set("redis", redis)?;
        // Replaced while FUNCTION LOAD runs a library.
        slot.set(
            "register_function",
            lua.create_function(|_, _: MultiValue| -> mlua::Result<()> {
                Err(mlua::Error::runtime(
                    "redis.register_function can only be called on FUNCTION LOAD command",
                ))
            })?,
        )?;
        let prelude = lua.load(PRELUDE).set_name("=fridge").into_function()?;
        let (env, load_api, run_api, runner): (Table, Table, Table, Function) =
            prelude.call((slot.clone(), globals.clone()))?;
        let handler = lua.create_function(error_handler)?;
        Ok(Self {
            lua,
            slot,
            globals,
            env,
            load_api,
            run_api,
            runner,
            handler,
            scripts: HashMap::new(),
            script_bytes: 0,
            libraries: BTreeMap::new(),
            functions: HashMap::new(),
        })
    }

    /// Compiles `body` as the script `sha` and caches it. The error is Redis's reply text.
    pub fn compile_script(&mut self, sha: &str, body: &[u8]) -> Result<(), String> {
        if self.scripts.contains_key(sha) {
            return Ok(());
        }
        if self.script_bytes + body.len() > SCRIPT_CACHE_LIMIT {
            return Err(
                "ERR script cache full: SCRIPT FLUSH frees it (fridge bounds each tenant's \
                 script cache)"
                    .into(),
            );
        }
        let (flags, source) = eval_shebang(body)?;
        let compile = || {
            self.lua
                .load(&source[..])
                .set_name("@user_script")
                .set_mode(mlua::ChunkMode::Text)
                .set_environment(self.env.clone())
                .into_function()
        };
        let func = match compile() {
            Err(mlua::Error::MemoryError(_)) => {
                self.collect();
                compile()
            }
            other => other,
        };
        let func = func.map_err(|e| {
            format!("ERR Error compiling script (new function): {}", lua_message(&e))
        })?;
        self.script_bytes += body.len();
        self.scripts.insert(sha.to_owned(), Script { func, no_writes: flags });
        Ok(())
    }

    /// A full garbage collection, with the memory limit lifted while it runs (a state at its
    /// limit may need a little memory to collect).
    pub fn collect(&self) {
        let _ = self.lua.set_memory_limit(0);
        let _ = self.lua.gc_collect();
        let _ = self.lua.set_memory_limit(LUA_MEMORY_LIMIT);
    }

    /// Drops every cached script.
    pub fn flush_scripts(&mut self) {
        self.scripts.clear();
        self.script_bytes = 0;
        self.collect();
    }

    /// Sets `KEYS` and `ARGV` (for `EVAL`).
    pub fn set_keys_args(&self, keys: &[&[u8]], args: &[&[u8]]) -> mlua::Result<()> {
        self.globals.raw_set("KEYS", self.byte_table(keys)?)?;
        self.globals.raw_set("ARGV", self.byte_table(args)?)?;
        Ok(())
    }

    pub fn byte_table(&self, items: &[&[u8]]) -> mlua::Result<Table> {
        let t = self.lua.create_table_with_capacity(items.len(), 0)?;
        for (i, a) in items.iter().enumerate() {
            t.raw_seti(i + 1, self.lua.create_string(a)?)?;
        }
        Ok(t)
    }

    /// Runs `f(a, b)` under the error handler. `Ok` is the script's result; `Err` the error
    /// reply's text (no `-`, no CRLF), and where it happened: Redis adds
    /// ` script: NAME, on SOURCE:LINE.` ([`RunError::reply`]).
    pub fn run(&self, f: &Function, a: Value, b: Value, name: &str) -> Result<Value, RunError> {
        self.slot.raw_set("resp", 2).ok();
        let result: mlua::Result<MultiValue> =
            self.runner.call((f.clone(), self.handler.clone(), a, b));
        let mut values = match result {
            Ok(v) => v.into_iter(),
            Err(e) => {
                let msg = format!("ERR Error running script {name}, {}", lua_message(&e));
                return Err(RunError { msg, at: None });
            }
        };
        let ok = matches!(values.next(), Some(Value::Boolean(true)));
        let value = values.next().unwrap_or(Value::Nil);
        if ok {
            return Ok(value);
        }
        match value {
            Value::Table(t) => {
                // A table raised without a string `err` (`error({})`; Redis 7.0.15 crashes).
                let msg: String = t
                    .raw_get::<Option<String>>("err")
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| "ERR unknown error".to_owned());
                let source: Option<String> = t.raw_get("source").ok().flatten();
                let line: Option<i64> = t.raw_get("line").ok().flatten();
                let at = source.zip(line).map(|(s, l)| format!(" script: {name}, on {s}:{l}."));
                Err(RunError { msg, at })
            }
            other => Err(RunError {
                msg: format!("ERR Error running script {name}, {}", value_text(&other)),
                at: None,
            }),
        }
    }
}

/// A script's error: its message and, where known, Redis's suffix naming where it was.
#[derive(Debug)]
pub(crate) struct RunError {
    pub msg: String,
    pub at: Option<String>,
}

impl RunError {
    /// The error reply's text.
    pub fn reply(&self) -> String {
        match &self.at {
            Some(at) => format!("{}{at}", self.msg),
            None => self.msg.clone(),
        }
    }
}

/// An `EVAL` body's `#!lua` line (Redis 7): its `flags=` (`no-writes` is the one that
/// matters here), and the body with that line made a comment so line numbers stay.
fn eval_shebang(body: &[u8]) -> Result<(bool, Vec<u8>), String> {
    if !body.starts_with(b"#!") {
        return Ok((false, body.to_vec()));
    }
    let end = body.iter().position(|&c| c == b'\n').unwrap_or(body.len());
    let line = String::from_utf8_lossy(&body[2..end]).into_owned();
    let mut parts = line.split(' ').filter(|p| !p.is_empty());
    let engine = parts.next().unwrap_or_default();
    if engine != "lua" {
        return Err(format!("ERR Could not find engine '{engine}'"));
    }
    let mut no_writes = false;
    for p in parts {
        let Some(flags) = p.strip_prefix("flags=") else {
            return Err(format!("ERR Unknown lua shebang option: {p}"));
        };
        for f in flags.split(',').filter(|f| !f.is_empty()) {
            match f {
                "no-writes" => no_writes = true,
                "allow-oom" | "allow-stale" | "no-cluster" | "allow-cross-slot-keys" => {}
                _ => return Err(format!("ERR Unexpected flag in script shebang: {f}")),
            }
        }
    }
    let mut source = b"--".to_vec();
    source.extend_from_slice(body);
    Ok((no_writes, source))
}

/// A Lua error's text (a syntax error's message is Lua's own).
pub(crate) fn lua_message(e: &mlua::Error) -> String {
    match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::RuntimeError(m) => m.clone(),
        mlua::Error::MemoryError(_) => "not enough memory".into(),
        mlua::Error::CallbackError { cause, .. } => lua_message(cause),
        other => other.to_string(),
    }
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
        Value::Error(e) => lua_message(e),
        other => format!("{other:?}"),
    }
}

/// The error `redis.call` raises: a command's error reply (its text, no `-`).
#[derive(Debug)]
pub(crate) struct ReplyError(pub String);

impl std::fmt::Display for ReplyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ReplyError {}

/// The [`ReplyError`] inside a Lua error, if that is what it is.
fn reply_error(e: &mlua::Error) -> Option<&ReplyError> {
    match e {
        mlua::Error::CallbackError { cause, .. } => reply_error(cause),
        mlua::Error::ExternalError(x) => x.downcast_ref::<ReplyError>(),
        _ => None,
    }
}

/// The error handler scripts run under (Redis's `__redis__err__handler`): makes any error a
/// table `{err=, source=, line=}`, a string error prefixed `ERR `; the source and line are
/// the innermost script or function frame's.
fn error_handler(lua: &Lua, err: Value) -> mlua::Result<Table> {
    let t = match err {
        Value::Table(t) => t,
        other => {
            let t = lua.create_table()?;
            let msg = match &other {
                Value::Error(e) if reply_error(e).is_some() => {
                    reply_error(e).map(|r| r.0.clone()).unwrap_or_default()
                }
                Value::Error(e) => {
                    let m = lua_message(e);
                    if m.starts_with("ERR ") { m } else { format!("ERR {m}") }
                }
                Value::Nil => "ERR nil".to_owned(),
                Value::Boolean(b) => format!("ERR {b}"),
                v @ (Value::Number(_) | Value::Integer(_)) => {
                    let text = lua.coerce_string(v.clone())?.map(|s| s.to_string_lossy());
                    format!("ERR {}", text.unwrap_or_default())
                }
                v => format!("ERR {}", value_text(v)),
            };
            t.raw_set("err", msg)?;
            t
        }
    };
    for level in 0..64 {
        let Some(found) = lua.inspect_stack(level, |d| {
            let s = d.source();
            let src = s.source.as_deref().unwrap_or_default().to_owned();
            src.starts_with("@user_").then(|| (src, d.current_line()))
        }) else {
            break;
        };
        if let Some((src, line)) = found {
            t.raw_set("source", src)?;
            if let Some(line) = line {
                t.raw_set("line", line as i64)?;
            }
            break;
        }
    }
    Ok(t)
}

/// Redis's error text from a message: `-CODE msg` keeps its code, anything else gets `ERR`
/// (`luaPushErrorBuff`).
pub(crate) fn error_text(msg: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(msg.len() + 4);
    match msg.strip_prefix(b"-") {
        Some(rest) => match rest.iter().position(|&c| c == b' ') {
            Some(sp) => {
                out.extend_from_slice(&rest[..sp]);
                out.push(b' ');
                out.extend_from_slice(&rest[sp + 1..]);
            }
            None => {
                out.extend_from_slice(b"ERR ");
                out.extend_from_slice(rest);
            }
        },
        None => {
            out.extend_from_slice(b"ERR ");
            out.extend_from_slice(msg);
        }
    }
    while out.last().is_some_and(|&c| c == b'\r' || c == b'\n') {
        out.pop();
    }
    out
}

/// The `redis` table, less `call`/`pcall` (set for each run: `crate::resp::script`).
fn redis_table(lua: &Lua, slot: &Table) -> mlua::Result<Table> {
    let redis = lua.create_table()?;
    redis.set(
        "error_reply",
        lua.create_function(|lua, msg: Value| {
            let Value::String(s) = msg else {
                return Err(mlua::Error::runtime("wrong number or type of arguments"));
            };
            let mut with_dash = s.as_bytes().to_vec();
            if with_dash.first() != Some(&b'-') {
                with_dash.insert(0, b'-');
            }
            let t = lua.create_table()?;
            t.raw_set("err", lua.create_string(error_text(&with_dash))?)?;
            Ok(t)
        })?,
    )?;
    redis.set(
        "status_reply",
        lua.create_function(|lua, msg: Value| {
            let Value::String(s) = msg else {
                return Err(mlua::Error::runtime("wrong number or type of arguments"));
            };
            let t = lua.create_table()?;
            t.raw_set("ok", s)?;
            Ok(t)
        })?,
    )?;
    redis.set(
        "sha1hex",
        lua.create_function(|lua, args: MultiValue| {
            if args.len() != 1 {
                return Err(mlua::Error::runtime("wrong number of arguments"));
            }
            let bytes = match args.into_iter().next() {
                Some(v @ (Value::String(_) | Value::Number(_) | Value::Integer(_))) => {
                    lua.coerce_string(v)?.map(|s| s.as_bytes().to_vec()).unwrap_or_default()
                }
                _ => Vec::new(),
            };
            Ok(sha1_hex(&bytes))
        })?,
    )?;
    redis.set(
        "log",
        lua.create_function(|lua, args: MultiValue| {
            let mut it = args.into_iter();
            let level = match it.next() {
                Some(Value::Integer(n)) => n as f64,
                Some(Value::Number(n)) => n,
                None => {
                    return Err(mlua::Error::runtime(
                        "redis.log() requires two arguments or more.",
                    ));
                }
                _ => {
                    return Err(mlua::Error::runtime(
                        "First argument must be a number (log level).",
                    ));
                }
            };
            if !(0.0..=3.0).contains(&level) {
                return Err(mlua::Error::runtime("Invalid debug level."));
            }
            let mut line = String::new();
            for (i, v) in it.enumerate() {
                if i > 0 {
                    line.push(' ');
                }
                if let Some(s) = lua.coerce_string(v)? {
                    line.push_str(&String::from_utf8_lossy(&s.as_bytes()));
                }
            }
            // Redis's default log level, notice, shows notices and warnings.
            if level >= 2.0 {
                eprintln!("{line}");
            }
            Ok(())
        })?,
    )?;
    let slot_for_resp = slot.clone();
    redis.set(
        "setresp",
        lua.create_function(move |_, v: Value| {
            let n = match v {
                Value::Integer(n) => n,
                Value::Number(n) => n as i64,
                _ => 0,
            };
            if n != 2 && n != 3 {
                return Err(mlua::Error::runtime("RESP version must be 2 or 3."));
            }
            slot_for_resp.raw_set("resp", n)
        })?,
    )?;
    redis.set("replicate_commands", lua.create_function(|_, ()| Ok(true))?)?;
    // Outside a debugging session (fridge has no script debugger), Redis's `breakpoint`
    // answers false and `debug` does nothing.
    redis.set("breakpoint", lua.create_function(|_, _: MultiValue| Ok(false))?)?;
    redis.set("debug", lua.create_function(|_, _: MultiValue| Ok(()))?)?;
    redis.set("set_repl", lua.create_function(|_, _: MultiValue| Ok(()))?)?;
    for (name, n) in [
        ("LOG_DEBUG", 0),
        ("LOG_VERBOSE", 1),
        ("LOG_NOTICE", 2),
        ("LOG_WARNING", 3),
        ("REPL_NONE", 0),
        ("REPL_AOF", 1),
        ("REPL_SLAVE", 2),
        ("REPL_REPLICA", 2),
        ("REPL_ALL", 3),
    ] {
        redis.set(name, n)?;
    }
    redis.set("REDIS_VERSION", REDIS_VERSION)?;
    redis.set("REDIS_VERSION_NUM", 0x0007_0000)?;
    Ok(redis)
}

/// LuaBitOp's `bit` library (<https://bitop.luajit.org/api.html>), which Redis loads: 32-bit
/// operations on numbers, results as signed 32-bit numbers.
fn bit_table(lua: &Lua) -> mlua::Result<Table> {
    let bit = lua.create_table()?;
    // LuaBitOp's conversion: the low 32 bits of the number rounded to an integer (its
    // 2^52 + 2^51 bias trick).
    fn tobit(lua: &Lua, v: Value, i: usize, name: &str) -> mlua::Result<u32> {
        let type_name = v.type_name();
        match lua.coerce_number(v)? {
            Some(n) => Ok((n + 6_755_399_441_055_744.0).to_bits() as u32),
            None => Err(mlua::Error::runtime(format!(
                "bad argument #{i} to '{name}' (number expected, got {})",
                if type_name == "nil" { "no value" } else { type_name }
            ))),
        }
    }
    fn arg(lua: &Lua, args: &MultiValue, i: usize, name: &str) -> mlua::Result<u32> {
        tobit(lua, args.get(i).cloned().unwrap_or(Value::Nil), i + 1, name)
    }
    type Op = fn(u32, u32) -> u32;
    type Unary = fn(u32) -> u32;
    let unary: [(&str, Unary); 3] =
        [("tobit", |x| x), ("bnot", |x| !x), ("bswap", u32::swap_bytes)];
    for (name, op) in unary {
        bit.raw_set(
            name,
            lua.create_function(move |lua, args: MultiValue| {
                Ok(f64::from(op(arg(lua, &args, 0, name)?) as i32))
            })?,
        )?;
    }
    let folds: [(&str, Op); 3] =
        [("band", |a, b| a & b), ("bor", |a, b| a | b), ("bxor", |a, b| a ^ b)];
    for (name, op) in folds {
        bit.raw_set(
            name,
            lua.create_function(move |lua, args: MultiValue| {
                let mut acc = arg(lua, &args, 0, name)?;
                for i in 1..args.len() {
                    acc = op(acc, arg(lua, &args, i, name)?);
                }
                Ok(f64::from(acc as i32))
            })?,
        )?;
    }
    let shifts: [(&str, Op); 5] = [
        ("lshift", |x, n| x << (n & 31)),
        ("rshift", |x, n| x >> (n & 31)),
        ("arshift", |x, n| ((x as i32) >> (n & 31)) as u32),
        ("rol", |x, n| x.rotate_left(n & 31)),
        ("ror", |x, n| x.rotate_right(n & 31)),
    ];
    for (name, op) in shifts {
        bit.raw_set(
            name,
            lua.create_function(move |lua, args: MultiValue| {
                let (x, n) = (arg(lua, &args, 0, name)?, arg(lua, &args, 1, name)?);
                Ok(f64::from(op(x, n) as i32))
            })?,
        )?;
    }
    bit.raw_set(
        "tohex",
        lua.create_function(|lua, args: MultiValue| {
            let mut b = arg(lua, &args, 0, "tohex")?;
            let n = if args.len() > 1 { arg(lua, &args, 1, "tohex")? as i32 } else { 8 };
            let digits: &[u8; 16] = if n < 0 { b"0123456789ABCDEF" } else { b"0123456789abcdef" };
            let n = n.unsigned_abs().min(8) as usize;
            let mut buf = [0u8; 8];
            for i in (0..n).rev() {
                buf[i] = digits[(b & 15) as usize];
                b >>= 4;
            }
            lua.create_string(&buf[..n])
        })?,
    )?;
    Ok(bit)
}

/// SHA-1 of `data` in lowercase hex (a script's name).
pub(crate) fn sha1_hex(data: &[u8]) -> String {
    use sha1::Digest as _;
    let digest = sha1::Sha1::digest(data);
    let mut hex = String::with_capacity(40);
    for b in digest {
        hex.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        hex.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
    }
    hex
}

/// Converts a RESP reply (as a command wrote it) into a Lua value (Redis's
/// `redisProtocolToLuaType`): integer → number, bulk → string, null → `false` (RESP3's null
/// → `nil`), array → table, status → `{ok=}`, error → `{err=}`, and RESP3's map → `{map=}`,
/// set → `{set=}`, double → `{double=}`, boolean, big number → `{big_number=}`, verbatim →
/// `{verbatim_string={format=, string=}}`. Returns the value and whether the reply was an
/// error.
pub(crate) fn reply_to_lua(lua: &Lua, reply: &[u8]) -> mlua::Result<(Value, bool)> {
    let mut pos = 0;
    let v = frame_to_lua(lua, reply, &mut pos, 0)?;
    let failed = reply.first() == Some(&b'-') || reply.first() == Some(&b'!');
    Ok((v, failed))
}

fn frame_to_lua(lua: &Lua, buf: &[u8], pos: &mut usize, depth: usize) -> mlua::Result<Value> {
    if depth > MAX_DEPTH {
        return Err(mlua::Error::runtime("reached lua stack limit"));
    }
    let (frame, used) = r::parse_frame(buf.get(*pos..).unwrap_or_default())
        .map_err(|_| mlua::Error::runtime("unreadable reply"))?;
    *pos += used;
    let single = |key: &str, v: Value| -> mlua::Result<Value> {
        let t = lua.create_table()?;
        t.raw_set(key, v)?;
        Ok(Value::Table(t))
    };
    Ok(match frame {
        Frame::Simple(s) => single("ok", Value::String(lua.create_string(s)?))?,
        Frame::Error(e) | Frame::BlobError(e) => {
            single("err", Value::String(lua.create_string(e)?))?
        }
        Frame::Integer(n) => Value::Number(n as f64),
        Frame::Bulk(b) => Value::String(lua.create_string(b)?),
        Frame::NullBulk | Frame::NullArray => Value::Boolean(false),
        Frame::Null => Value::Nil,
        Frame::Double(d) => {
            let n: f64 = std::str::from_utf8(d).ok().and_then(|s| s.parse().ok()).unwrap_or(0.0);
            single("double", Value::Number(n))?
        }
        Frame::Boolean(b) => Value::Boolean(b),
        Frame::BigNumber(d) => single("big_number", Value::String(lua.create_string(d)?))?,
        Frame::Verbatim { format, text } => {
            let t = lua.create_table()?;
            t.raw_set("format", lua.create_string(format)?)?;
            t.raw_set("string", lua.create_string(text)?)?;
            single("verbatim_string", Value::Table(t))?
        }
        Frame::Array(n) | Frame::Push(n) => {
            let t = lua.create_table_with_capacity(n.min(1024), 0)?;
            for i in 0..n {
                t.raw_seti(i + 1, frame_to_lua(lua, buf, pos, depth + 1)?)?;
            }
            Value::Table(t)
        }
        Frame::Set(n) => {
            let t = lua.create_table()?;
            for _ in 0..n {
                let k = frame_to_lua(lua, buf, pos, depth + 1)?;
                t.raw_set(k, true)?;
            }
            single("set", Value::Table(t))?
        }
        Frame::Map(n) | Frame::Attribute(n) => {
            let t = lua.create_table()?;
            for _ in 0..n {
                let k = frame_to_lua(lua, buf, pos, depth + 1)?;
                let v = frame_to_lua(lua, buf, pos, depth + 1)?;
                t.raw_set(k, v)?;
            }
            if matches!(frame, Frame::Attribute(_)) {
                return frame_to_lua(lua, buf, pos, depth + 1);
            }
            single("map", Value::Table(t))?
        }
    })
}

/// Writes a script's result as a reply (Redis's `luaReplyToRedisReply`): number → integer
/// (truncated), string → bulk, `true` → 1 (RESP3 scripts: a boolean), `false`/`nil` → null,
/// table with `err` → error, with `ok` → status, `double`/`map`/`set`/`big_number`/
/// `verbatim_string` → RESP3's types, else an array of the table's items up to the first nil.
pub(crate) fn write_lua(out: &mut Vec<u8>, v: &Value, version: Version, script_resp: i64) {
    write_value(out, v, version, script_resp, 0);
}

fn write_value(out: &mut Vec<u8>, v: &Value, version: Version, resp: i64, depth: usize) {
    if depth > MAX_DEPTH {
        return r::write_error(out, b"ERR reached lua stack limit");
    }
    match v {
        Value::String(s) => r::write_bulk(out, &s.as_bytes()),
        Value::Integer(n) => r::write_integer(out, *n),
        Value::Number(n) => r::write_integer(out, *n as i64),
        Value::Boolean(b) if resp == 3 => r::write_boolean(out, version, *b),
        Value::Boolean(true) => r::write_integer(out, 1),
        Value::Table(t) => write_table(out, t, version, resp, depth),
        _ => r::write_null(out, version),
    }
}

fn write_table(out: &mut Vec<u8>, t: &Table, version: Version, resp: i64, depth: usize) {
    let field = |k: &str| t.raw_get::<Value>(k).unwrap_or(Value::Nil);
    if let Value::String(e) = field("err") {
        out.push(b'-');
        out.extend(e.as_bytes().iter().map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }));
        out.extend_from_slice(b"\r\n");
        return;
    }
    if let Value::String(s) = field("ok") {
        let text: Vec<u8> =
            s.as_bytes().iter().map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }).collect();
        return r::write_simple(out, &text);
    }
    if let Value::Number(_) | Value::Integer(_) = field("double") {
        let n = match field("double") {
            Value::Number(n) => n,
            Value::Integer(n) => n as f64,
            _ => 0.0,
        };
        return r::write_double(out, version, n);
    }
    if let Value::String(s) = field("big_number") {
        return r::write_big_number(out, version, &s.as_bytes());
    }
    if let Value::Table(v) = field("verbatim_string") {
        let format: Vec<u8> = v
            .raw_get::<Option<mlua::String>>("format")
            .ok()
            .flatten()
            .map(|s| s.as_bytes().to_vec())
            .unwrap_or_default();
        let text: Vec<u8> = v
            .raw_get::<Option<mlua::String>>("string")
            .ok()
            .flatten()
            .map(|s| s.as_bytes().to_vec())
            .unwrap_or_default();
        let mut f = *b"txt";
        if format.len() == 3 {
            f.copy_from_slice(&format);
        }
        return r::write_verbatim(out, version, &f, &text);
    }
    if let Value::Table(m) = field("map") {
        let pairs: Vec<(Value, Value)> = m.pairs::<Value, Value>().filter_map(Result::ok).collect();
        r::write_map_header(out, version, pairs.len());
        for (k, v) in &pairs {
            write_value(out, k, version, resp, depth + 1);
            write_value(out, v, version, resp, depth + 1);
        }
        return;
    }
    if let Value::Table(m) = field("set") {
        let keys: Vec<Value> =
            m.pairs::<Value, Value>().filter_map(Result::ok).map(|(k, _)| k).collect();
        r::write_set_header(out, version, keys.len());
        for k in &keys {
            write_value(out, k, version, resp, depth + 1);
        }
        return;
    }
    let mut items = Vec::new();
    for i in 1.. {
        match t.raw_get::<Value>(i) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(v) => items.push(v),
        }
    }
    r::write_array_header(out, items.len());
    for v in &items {
        write_value(out, v, version, resp, depth + 1);
    }
}

/// A library's `#!lua name=<lib>` line: the library's name, or Redis's error.
pub(crate) fn library_name(code: &[u8]) -> Result<String, String> {
    if !code.starts_with(b"#!") {
        return Err("ERR Missing library metadata".into());
    }
    let end = code.iter().position(|&c| c == b'\n').unwrap_or(code.len());
    let line = String::from_utf8_lossy(&code[2..end]).into_owned();
    let mut parts = line.split(' ').filter(|p| !p.is_empty());
    let engine = parts.next().unwrap_or_default();
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(format!("ERR Engine '{engine}' not found"));
    }
    let mut name = None;
    for p in parts {
        match p.strip_prefix("name=") {
            Some(n) => name = Some(n.to_owned()),
            None => return Err(format!("ERR Invalid metadata value given: {p}")),
        }
    }
    let name = name.ok_or_else(|| "ERR Library name was not given".to_owned())?;
    if name.is_empty() || !name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') {
        return Err("ERR Library names can only contain letters, numbers, or underscores(_) \
                    and must be at least one character long"
            .into());
    }
    Ok(name)
}

/// Whether `name` is a valid function name.
pub(crate) fn valid_function_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

/// A registered function's flags, Redis's names.
pub(crate) fn function_flag(name: &[u8]) -> Option<&'static str> {
    ["no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys"]
        .into_iter()
        .find(|f| f.as_bytes() == name)
}

#[cfg(test)]
mod tests {
    use super::{error_text, sha1_hex};

    #[test]
    fn sha1_of_the_empty_string() {
        assert_eq!(sha1_hex(b""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    }

    #[test]
    fn error_codes_are_kept_or_added() {
        assert_eq!(error_text(b"-x"), b"ERR x");
        assert_eq!(error_text(b"-MY err"), b"MY err");
        assert_eq!(error_text(b"plain"), b"ERR plain");
    }
}
