//! Tenants: the applications that share the cache (Memshare §3–4), as the server knows them.
//!
//! The configuration file lists tenants by name, each with a hashed password and a policy
//! (reservation, credit, rank function, idle tax, hard cap). This module turns that list into
//!
//! - stable engine ids: `default` is always [`TenantId`]`(0)`, configured tenants get 1, 2, …
//!   in the order first seen, and a name keeps its id for the life of the process, across
//!   reloads (a tenant that is removed and added back gets its old id and finds its data);
//! - the policies pushed into the engine with `Engine::set_tenant_policy` (a removed tenant's
//!   reservation drops to zero, so the arbiter can hand its memory to others);
//! - an immutable `Tenants` snapshot that workers read without locks: credentials, names,
//!   the key-prefix routes of unauthenticated clients, whether those clients are the admin,
//!   the limit on failed logins, and each tenant's limits on connections and requests per
//!   second (enforced by `crate::limits`). A reload builds a new snapshot with a higher
//!   generation; each worker picks it up at its next turn.
//!
//! A reload fails closed: besides everything a start checks (among it, that somebody can log
//! in at all), `check_reload` refuses a file that would let clients in without a password
//! while the running configuration makes them log in, unless the file says
//! `allow_unauthenticated = true` itself — an empty or truncated file must not turn
//! authentication off.
//!
//! Passwords are stored as `<salt hex>$<sha256(salt ‖ password) hex>` (`fridge hash-password`
//! prints the line) and compared in constant time. An unknown user name costs the same hash
//! as a known one, so timing does not reveal which names exist.

use std::collections::HashMap;
use std::sync::Arc;

use fridge_engine::item::MAX_TENANTS;
use fridge_engine::{Engine, TenantId, TenantPolicy};

use crate::config::Config;
pub use crate::config::{DEFAULT_TENANT, IdleTaxConfig, RankName, TenantConfig};
use crate::limits::Rate;
pub use crate::password::PasswordHash;

/// How many failed logins an address, or a user name, is allowed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct FailureLimit {
    /// Tokens regained per second (positive, finite).
    pub rate: f64,
    /// Tokens when full (at least 1).
    pub burst: u32,
}

impl FailureLimit {
    /// Microseconds to regain one token.
    pub(crate) fn interval_us(self) -> u64 {
        // `as` saturates: a vanishingly small rate means a token every u64::MAX µs.
        ((1e6 / self.rate) as u64).max(1)
    }

    /// How far ahead of now a bucket's `full_at_us` may be while a token is left.
    pub(crate) fn slack_us(self) -> u64 {
        self.interval_us().saturating_mul(u64::from(self.burst.saturating_sub(1)))
    }
}

/// Refuses a reload that would let clients in without a password while the running
/// configuration makes them log in — what an empty or truncated file would do, since
/// `allow_unauthenticated` defaults to true in a file that asks for no password — unless the
/// file says `allow_unauthenticated = true` itself. (A file that leaves nobody able to log
/// in is refused by [`validate`], as at start.)
pub(crate) fn check_reload(running: &Tenants, new: &Config) -> Result<(), String> {
    if !running.requires_login()
        || !new.unauthenticated_allowed()
        || new.allow_unauthenticated == Some(true)
    {
        return Ok(());
    }
    let what = if new.tenants.is_empty() {
        "configures no tenant"
    } else {
        "configures no tenant besides a default without a password"
    };
    Err(format!(
        "the file {what}, so allow_unauthenticated would default to true and clients could use \
         the cache without logging in, which the running configuration does not allow; the \
         running configuration stays (write allow_unauthenticated = true if this is meant)"
    ))
}

/// One live tenant in a snapshot.
#[derive(Debug)]
pub(crate) struct Entry {
    pub name: String,
    pub password: Option<PasswordHash>,
    pub policy: TenantPolicy,
    /// Connections logged in as it at once (`crate::limits`); `None`: no limit.
    pub max_connections: Option<u32>,
    /// Its requests per second (`crate::limits`); `None`: no limit.
    pub rate: Option<Rate>,
}

/// What a login attempt found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Login {
    /// The credentials name this tenant.
    Ok(TenantId),
    /// Wrong password, unknown or disabled user.
    Denied,
    /// `AUTH <password>` while the default user has no password (Redis's own error).
    NoDefaultPassword,
}

/// Key prefixes of one length and the tenants they route to.
type Prefixes = HashMap<Box<[u8]>, TenantId>;

/// An immutable view of the tenants, shared by every worker. Replaced whole on reload.
#[derive(Debug)]
pub(crate) struct Tenants {
    /// Increases with every reload; sessions compare it to notice removed tenants.
    pub generation: u64,
    /// Whether clients that have not authenticated may use the cache (as `default`, or the
    /// tenant whose key prefix matches).
    pub allow_unauthenticated: bool,
    /// Whether clients that have not authenticated are the admin: only on a plain
    /// single-user server (no tenant besides `default`, and `default` without a password),
    /// like Redis without `requirepass`.
    pub anonymous_admin: bool,
    /// Failed logins allowed per client address and per user name.
    pub failure_limit: FailureLimit,
    /// Indexed by tenant id.
    entries: Box<[Option<Entry>]>,
    /// Live tenants by name (a login finds its tenant without a pass over every id).
    by_name: HashMap<Box<[u8]>, TenantId>,
    /// Key prefixes by length, longest first, each length's prefixes in a map: routing a key
    /// costs one lookup per distinct length, however many tenants have prefixes.
    prefixes: Vec<(usize, Prefixes)>,
    /// Hashed when the user is unknown, so a miss costs what a hit costs.
    decoy: PasswordHash,
}

impl Tenants {
    /// The tenant's name, if it is live.
    pub fn name(&self, id: TenantId) -> Option<&str> {
        self.entry(id).map(|e| e.name.as_str())
    }

    pub fn entry(&self, id: TenantId) -> Option<&Entry> {
        self.entries.get(usize::from(id.0)).and_then(Option::as_ref)
    }

    /// The request rate of the live tenant `id`, if it has one (`crate::limits`).
    #[inline]
    pub fn rate(&self, id: TenantId) -> Option<Rate> {
        self.entry(id).and_then(|e| e.rate)
    }

    /// Whether `id` names a configured (not removed) tenant.
    pub fn is_live(&self, id: TenantId) -> bool {
        self.entry(id).is_some()
    }

    /// Live tenants, by id.
    pub fn iter(&self) -> impl Iterator<Item = (TenantId, &Entry)> {
        self.entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| Some((TenantId(u16::try_from(i).ok()?), e.as_ref()?)))
    }

    /// The tenant an unauthenticated client's key belongs to: the one with the longest
    /// matching prefix, else `default`.
    #[inline]
    pub fn route(&self, key: &[u8]) -> TenantId {
        if self.prefixes.is_empty() {
            return TenantId(0);
        }
        self.prefixes
            .iter()
            .find_map(|(len, map)| map.get(key.get(..*len)?).copied())
            .unwrap_or(TenantId(0))
    }

    /// Whether unauthenticated clients are routed by key prefix.
    pub fn has_prefixes(&self) -> bool {
        !self.prefixes.is_empty()
    }

    /// The live tenant called `user`.
    pub fn find(&self, user: &[u8]) -> Option<TenantId> {
        self.by_name.get(user).copied()
    }

    /// Whether some client must log in for something: unauthenticated clients are refused,
    /// or `default` (the admin) has a password.
    pub fn requires_login(&self) -> bool {
        !self.allow_unauthenticated || self.entry(TenantId(0)).is_some_and(|e| e.password.is_some())
    }

    /// Checks `user`/`password`. The default user without a password accepts any password
    /// while unauthenticated clients are allowed (Redis's `nopass`), and none otherwise.
    pub fn login(&self, user: &[u8], password: &[u8]) -> Login {
        let found = self.find(user).and_then(|id| Some((id, self.entry(id)?)));
        match found {
            Some((id, e)) => match &e.password {
                Some(hash) if hash.verify(password) => Login::Ok(id),
                Some(_) => Login::Denied,
                None if id == TenantId(0) && self.allow_unauthenticated => Login::Ok(id),
                None => {
                    self.decoy.verify(password);
                    Login::Denied
                }
            },
            None => {
                self.decoy.verify(password);
                Login::Denied
            }
        }
    }

    /// `AUTH <password>`: the default user's password.
    pub fn login_default(&self, password: &[u8]) -> Login {
        match self.entry(TenantId(0)).and_then(|e| e.password.as_ref()) {
            Some(hash) if hash.verify(password) => Login::Ok(TenantId(0)),
            Some(_) => Login::Denied,
            None if self.allow_unauthenticated => Login::NoDefaultPassword,
            None => {
                self.decoy.verify(password);
                Login::Denied
            }
        }
    }
}

/// Names and ids ever assigned, and the current snapshot. Lives behind a mutex in the server;
/// touched at start and on reload only.
#[derive(Debug)]
pub(crate) struct Registry {
    ids: HashMap<String, u16>,
    generation: u64,
}

impl Registry {
    pub fn new() -> Registry {
        let mut ids = HashMap::new();
        ids.insert(DEFAULT_TENANT.to_string(), 0);
        Registry { ids, generation: 0 }
    }

    /// Assigns ids to `config`'s tenants (keeping every id already given), pushes their
    /// policies into `engine`, and returns the new snapshot. On error nothing changes.
    pub fn apply(&mut self, config: &Config, engine: &Engine) -> Result<Arc<Tenants>, String> {
        crate::config::validate_tenants(config)?;
        let mut ids = self.ids.clone();
        let mut next = ids.values().copied().max().map_or(1, |m| usize::from(m) + 1);
        let mut entries: Vec<Option<Entry>> = (0..MAX_TENANTS).map(|_| None).collect();
        let mut prefixes: Vec<(usize, Prefixes)> = Vec::new();
        let mut default_seen = false;
        for t in &config.tenants {
            let id = match ids.get(&t.name) {
                Some(&id) => id,
                None => {
                    let id = u16::try_from(next).ok().filter(|_| next < MAX_TENANTS).ok_or_else(
                        || {
                            format!(
                                "no tenant id left for {:?}: {MAX_TENANTS} names were used since \
                                 the server started; restart to renumber",
                                t.name
                            )
                        },
                    )?;
                    next += 1;
                    ids.insert(t.name.clone(), id);
                    id
                }
            };
            default_seen |= id == 0;
            for p in &t.key_prefixes {
                let at = match prefixes.iter().position(|(len, _)| *len == p.len()) {
                    Some(at) => at,
                    None => {
                        prefixes.push((p.len(), HashMap::new()));
                        prefixes.len() - 1
                    }
                };
                prefixes[at].1.insert(p.as_bytes().into(), TenantId(id));
            }
            entries[usize::from(id)] = Some(Entry {
                name: t.name.clone(),
                password: t.password_sha256.clone(),
                policy: t.policy(),
                max_connections: t.max_connections,
                rate: t.max_requests_per_second.map(|per_second| Rate { per_second }),
            });
        }
        if !default_seen {
            entries[0] = Some(Entry {
                name: DEFAULT_TENANT.into(),
                password: None,
                policy: TenantPolicy::default(),
                max_connections: None,
                rate: None,
            });
        }
        prefixes.sort_by_key(|(len, _)| std::cmp::Reverse(*len));
        let allow_unauthenticated = config.unauthenticated_allowed();
        let single_user = entries.iter().skip(1).all(Option::is_none)
            && entries[0].as_ref().is_some_and(|e| e.password.is_none());
        // Committed: push policies. Removed tenants keep their id and data but lose their
        // reservation, so the arbiter can give their memory to others.
        self.ids = ids;
        self.generation += 1;
        for &id in self.ids.values() {
            let policy = entries[usize::from(id)]
                .as_ref()
                .map(|e| e.policy)
                .unwrap_or(TenantPolicy { reserved: 0, ..TenantPolicy::default() });
            engine.set_tenant_policy(TenantId(id), policy);
        }
        Ok(Arc::new(Tenants {
            generation: self.generation,
            allow_unauthenticated,
            anonymous_admin: allow_unauthenticated && single_user,
            failure_limit: FailureLimit {
                rate: config.auth_failure_rate,
                burst: config.auth_failure_burst,
            },
            by_name: entries
                .iter()
                .enumerate()
                .filter_map(|(i, e)| Some((e.as_ref()?.name.as_bytes().into(), TenantId(i as u16))))
                .collect(),
            entries: entries.into_boxed_slice(),
            prefixes,
            decoy: PasswordHash::new(b"decoy", b""),
        }))
    }
}

#[cfg(test)]
mod tests {
    use fridge_engine::RankKind;

    use super::*;
    use crate::config::{Millis, Size};

    fn tenant(name: &str, password: Option<&str>) -> TenantConfig {
        TenantConfig {
            name: name.into(),
            password_sha256: password.map(|p| PasswordHash::new(b"s", p.as_bytes())),
            ..TenantConfig::default()
        }
    }

    fn engine() -> Engine {
        let config = fridge_engine::EngineConfig {
            max_memory: 64 << 20,
            cleaner: fridge_engine::CleanerMode::Inline,
            ..fridge_engine::EngineConfig::default()
        };
        Engine::with_clock(config, Arc::new(fridge_engine::ManualClock::new(1))).unwrap()
    }

    #[test]
    fn ids_are_stable_across_reloads() {
        let engine = engine();
        let mut reg = Registry::new();
        let mut c = Config {
            tenants: vec![tenant("a", Some("pa")), tenant("b", Some("pb"))],
            ..Config::default()
        };
        let t1 = reg.apply(&c, &engine).unwrap();
        assert_eq!(t1.login(b"a", b"pa"), Login::Ok(TenantId(1)));
        assert_eq!(t1.login(b"b", b"pb"), Login::Ok(TenantId(2)));
        assert_eq!(t1.login(b"b", b"pa"), Login::Denied);
        assert_eq!(t1.login(b"nobody", b"pa"), Login::Denied);
        // Tenants exist, so unauthenticated clients are refused and default cannot log in.
        assert!(!t1.allow_unauthenticated);
        assert_eq!(t1.login(b"default", b"x"), Login::Denied);
        assert_eq!(t1.login_default(b"x"), Login::Denied);
        // Reload: a removed, b kept, c new; c gets a fresh id, not a's.
        c.tenants = vec![tenant("c", Some("pc")), tenant("b", Some("pb2"))];
        let t2 = reg.apply(&c, &engine).unwrap();
        assert!(t2.generation > t1.generation);
        assert_eq!(t2.login(b"a", b"pa"), Login::Denied);
        assert!(!t2.is_live(TenantId(1)));
        assert_eq!(t2.login(b"b", b"pb2"), Login::Ok(TenantId(2)));
        assert_eq!(t2.login(b"c", b"pc"), Login::Ok(TenantId(3)));
        // a comes back with its old id.
        c.tenants.push(tenant("a", Some("pa")));
        let t3 = reg.apply(&c, &engine).unwrap();
        assert_eq!(t3.login(b"a", b"pa"), Login::Ok(TenantId(1)));
    }

    #[test]
    fn policies_reach_the_engine_and_removed_tenants_lose_their_reservation() {
        let engine = engine();
        let mut reg = Registry::new();
        let mut a = tenant("a", Some("pa"));
        a.reserved = Size(1 << 20);
        a.rank = RankName(RankKind::Lru);
        a.idle_tax = Some(IdleTaxConfig { rate: 0.25, idle_time: Millis(30_000) });
        a.hard_cap = Some(Size(2 << 20));
        a.max_keys = Some(10);
        a.max_connections = Some(3);
        a.max_requests_per_second = Some(40);
        let c = Config { tenants: vec![a.clone()], ..Config::default() };
        let t = reg.apply(&c, &engine).unwrap();
        assert_eq!(engine.tenant_policy(TenantId(1)), a.policy());
        let e = t.entry(TenantId(1)).unwrap();
        assert_eq!(
            (e.max_connections, t.rate(TenantId(1))),
            (Some(3), Some(Rate { per_second: 40 }))
        );
        assert_eq!(t.rate(TenantId(0)), None, "the admin has none");
        // A reload changes the key cap in place, both ways.
        for max_keys in [Some(4), Some(40), None] {
            let changed = TenantConfig { max_keys, ..a.clone() };
            reg.apply(&Config { tenants: vec![changed], ..Config::default() }, &engine).unwrap();
            assert_eq!(engine.tenant_policy(TenantId(1)).max_keys, max_keys);
        }
        reg.apply(&Config::default(), &engine).unwrap();
        assert_eq!(engine.tenant_policy(TenantId(1)).reserved, 0);
    }

    #[test]
    fn bad_configurations_are_refused_whole() {
        let engine = engine();
        let mut reg = Registry::new();
        let bad = |tenants: Vec<TenantConfig>| Config { tenants, ..Config::default() };
        assert!(reg.apply(&bad(vec![tenant("a b", None)]), &engine).is_err());
        assert!(reg.apply(&bad(vec![tenant("a", None), tenant("a", None)]), &engine).is_err());
        let mut big = tenant("big", None);
        big.reserved = Size(1 << 40);
        assert!(reg.apply(&bad(vec![big]), &engine).is_err());
        let mut routed = tenant("r", None);
        routed.key_prefixes = vec!["r:".into()];
        assert!(reg.apply(&bad(vec![routed.clone()]), &engine).is_err(), "needs unauth");
        let ok = Config {
            tenants: vec![routed],
            allow_unauthenticated: Some(true),
            ..Config::default()
        };
        let t = reg.apply(&ok, &engine).unwrap();
        assert_eq!(t.route(b"r:1"), TenantId(1));
        assert_eq!(t.route(b"x:1"), TenantId(0));
        assert_eq!(t.login(b"default", b"anything"), Login::Ok(TenantId(0)));
        assert_eq!(t.login_default(b"anything"), Login::NoDefaultPassword);
    }

    #[test]
    fn the_longest_matching_prefix_routes_a_key() {
        let engine = engine();
        let mut reg = Registry::new();
        let routed = |name: &str, prefixes: &[&str]| TenantConfig {
            key_prefixes: prefixes.iter().map(|p| p.to_string()).collect(),
            ..tenant(name, None)
        };
        let config = Config {
            tenants: vec![
                routed("a", &["a:"]),
                routed("ab", &["a:b:", "zz"]),
                routed("c", &["c"]),
                routed("d", &["d:"]),
            ],
            allow_unauthenticated: Some(true),
            ..Config::default()
        };
        let t = reg.apply(&config, &engine).unwrap();
        let ids = |name: &str| t.find(name.as_bytes()).unwrap();
        assert_eq!(t.route(b"a:b:1"), ids("ab"), "the longer prefix wins");
        assert_eq!(t.route(b"a:x"), ids("a"));
        assert_eq!(t.route(b"a:"), ids("a"), "a key may be its prefix");
        assert_eq!(t.route(b"a"), TenantId(0), "shorter than every prefix it starts");
        assert_eq!(t.route(b"c"), ids("c"));
        assert_eq!(t.route(b"zz9"), ids("ab"));
        assert_eq!(t.route(b"d:e"), ids("d"));
        assert_eq!(t.route(b"x"), TenantId(0));
        assert_eq!(t.route(b""), TenantId(0));
    }

    #[test]
    fn a_configuration_nobody_can_log_in_to_is_refused() {
        let engine = engine();
        let mut reg = Registry::new();
        let nopass = Config { tenants: vec![tenant("a", None)], ..Config::default() };
        let err = reg.apply(&nopass, &engine).unwrap_err();
        assert!(err.starts_with("nobody could log in: tenants are configured"), "{err}");
        let closed = Config { allow_unauthenticated: Some(false), ..Config::default() };
        let err = reg.apply(&closed, &engine).unwrap_err();
        assert!(err.starts_with("nobody could log in: allow_unauthenticated = false"), "{err}");
        let routed_only = Config { allow_unauthenticated: Some(true), ..nopass };
        assert!(reg.apply(&routed_only, &engine).is_ok(), "served without logging in");
    }

    #[test]
    fn a_password_anywhere_turns_unauthenticated_access_off_by_default() {
        let only_default =
            Config { tenants: vec![tenant("default", Some("r"))], ..Config::default() };
        assert!(!only_default.unauthenticated_allowed(), "a password on default is requirepass");
        let plain = Config { tenants: vec![tenant("default", None)], ..Config::default() };
        assert!(plain.unauthenticated_allowed());
        assert!(Config::default().unauthenticated_allowed());
    }

    #[test]
    fn anonymous_clients_are_admin_only_on_a_plain_server() {
        let engine = engine();
        let mut reg = Registry::new();
        let admin = |c: &Config, reg: &mut Registry| reg.apply(c, &engine).unwrap().anonymous_admin;
        assert!(admin(&Config::default(), &mut reg), "no tenants, no password");
        let open_default = Config {
            tenants: vec![tenant("default", Some("r"))],
            allow_unauthenticated: Some(true),
            ..Config::default()
        };
        assert!(!admin(&open_default, &mut reg), "default has a password");
        let mut routed = tenant("r", Some("pr"));
        routed.key_prefixes = vec!["r:".into()];
        let with_tenants = Config {
            tenants: vec![routed],
            allow_unauthenticated: Some(true),
            ..Config::default()
        };
        assert!(!admin(&with_tenants, &mut reg), "other tenants exist");
    }

    #[test]
    fn reloads_that_would_let_clients_in_without_a_password_are_refused() {
        let engine = engine();
        let mut reg = Registry::new();
        let locked = Config {
            tenants: vec![tenant("default", Some("r")), tenant("a", Some("pa"))],
            ..Config::default()
        };
        let running = reg.apply(&locked, &engine).unwrap();
        assert!(running.requires_login());
        // An empty file, or one cut after a password-less default.
        let empty = Config::default();
        let err = check_reload(&running, &empty).unwrap_err();
        assert!(
            err.starts_with("the file configures no tenant, so allow_unauthenticated"),
            "{err}"
        );
        let cut = Config { tenants: vec![tenant("default", None)], ..Config::default() };
        assert!(check_reload(&running, &cut).is_err());
        // Saying so explicitly is allowed; so is anything that still asks for a login.
        let meant = Config { allow_unauthenticated: Some(true), ..Config::default() };
        assert_eq!(check_reload(&running, &meant), Ok(()));
        let fewer = Config { tenants: vec![tenant("default", Some("r"))], ..Config::default() };
        assert_eq!(check_reload(&running, &fewer), Ok(()));
        // A running server that asks for no login may reload to the same.
        let plain = reg.apply(&Config::default(), &engine).unwrap();
        assert!(!plain.requires_login());
        assert_eq!(check_reload(&plain, &empty), Ok(()));
        // A default with a password requires a login even with unauthenticated access on.
        let open = Config { allow_unauthenticated: Some(true), ..fewer };
        let open = reg.apply(&open, &engine).unwrap();
        assert!(open.requires_login());
        assert!(check_reload(&open, &empty).is_err());
    }
}
