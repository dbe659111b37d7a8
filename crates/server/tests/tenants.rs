//! Tenants: logging in with each protocol (every failure path, byte for byte), the limit on
//! failed logins, isolation of keys, counts, flushes, clients and stats between tenants,
//! what clients that have not logged in may do, key-prefix routing, and reloading (a bad file
//! changes nothing).

mod common;

use common::{Conn, cmd, config, start_with};
use fridge_server::{Config, PasswordHash, Server, Size, TenantConfig};

fn c(args: &str) -> Vec<u8> {
    let parts: Vec<&[u8]> = args.split(' ').map(str::as_bytes).collect();
    cmd(&parts)
}

fn tenant(name: &str, password: &str) -> TenantConfig {
    TenantConfig {
        name: name.into(),
        password_sha256: Some(PasswordHash::new(name.as_bytes(), password.as_bytes())),
        ..TenantConfig::default()
    }
}

/// Two tenants, `alpha` and `beta`, and an admin password for `default`; room for many
/// failed logins unless a test asks for a tight limit.
fn tenants_config() -> Config {
    Config {
        tenants: vec![tenant("default", "root"), tenant("alpha", "apw"), tenant("beta", "bpw")],
        auth_failure_burst: 1000,
        ..config()
    }
}

const WRONGPASS: &[u8] = b"-WRONGPASS invalid username-password pair or user is disabled.\r\n";
const NOAUTH: &[u8] = b"-NOAUTH Authentication required.\r\n";
const REFUSED: &[u8] = b"-ERR too many failed login attempts; try again later\r\n";
const MC_REFUSED: &[u8] = b"CLIENT_ERROR too many failed login attempts\r\n";
const NOPERM_RELOAD: &[u8] =
    b"-NOPERM this user has no permissions to run the 'config|reload' command\r\n";

/// Reads a RESP bulk string reply.
fn bulk(k: &mut Conn) -> String {
    let header = k.line();
    let len: usize = header[1..].parse().unwrap_or_else(|_| panic!("not a bulk: {header}"));
    let body = k.read_n(len + 2);
    String::from_utf8(body[..len].to_vec()).unwrap()
}

fn resp_login(addr: std::net::SocketAddr, user: &str, password: &str) -> Conn {
    let mut k = Conn::open(addr);
    k.roundtrip(&c(&format!("AUTH {user} {password}")), b"+OK\r\n");
    k
}

fn mc_login(addr: std::net::SocketAddr, user: &str, password: &str) -> Conn {
    let mut k = Conn::open(addr);
    let data = format!("{user} {password}");
    k.roundtrip(format!("set auth 0 0 {}\r\n{data}\r\n", data.len()).as_bytes(), b"STORED\r\n");
    k
}

#[test]
fn resp_login_failures_reply_like_redis() {
    let server = start_with(tenants_config());
    let addr = server.local_addr();
    let mut k = Conn::open(addr);
    let cases: &[(&str, &[u8])] = &[
        ("GET k", NOAUTH),
        ("PING", NOAUTH),
        ("DBSIZE", NOAUTH),
        ("CLIENT SETNAME x", NOAUTH),
        // Unknown commands and wrong arities are reported before authentication, as Redis does.
        ("NOSUCH a", b"-ERR unknown command 'NOSUCH', with args beginning with: 'a' \r\n"),
        ("GET", b"-ERR wrong number of arguments for 'get' command\r\n"),
        (
            "HELLO 3",
            b"-NOAUTH HELLO must be called with the client already authenticated, otherwise the \
              HELLO AUTH <user> <pass> option can be used to authenticate the client and select \
              the RESP protocol version at the same time\r\n",
        ),
        ("AUTH alpha wrong", WRONGPASS),
        ("AUTH nobody apw", WRONGPASS),
        ("AUTH alpha bpw", WRONGPASS),
        ("AUTH wrong", WRONGPASS),
        ("AUTH default wrong", WRONGPASS),
        ("AUTH a b c", b"-ERR syntax error\r\n"),
        ("HELLO 3 AUTH alpha wrong", WRONGPASS),
        ("HELLO 2 AUTH alpha", b"-ERR Syntax error in HELLO option 'AUTH'\r\n"),
        ("GET k", NOAUTH),
        ("RESET", b"+RESET\r\n"),
    ];
    for (req, reply) in cases {
        k.send(&c(req));
        let got = k.read_n(reply.len());
        assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(reply), "{req}");
    }
    k.roundtrip(&c("AUTH"), b"-ERR wrong number of arguments for 'auth' command\r\n");
    // A failed login on a logged-in connection leaves it logged in.
    k.roundtrip(&c("AUTH alpha apw"), b"+OK\r\n")
        .roundtrip(&c("AUTH alpha nope"), WRONGPASS)
        .roundtrip(&c("ACL WHOAMI"), b"$5\r\nalpha\r\n")
        .roundtrip(&c("SET k v"), b"+OK\r\n");
    // RESET logs out.
    k.roundtrip(&c("RESET"), b"+RESET\r\n").roundtrip(&c("GET k"), NOAUTH);
    // AUTH <password> is the default user's; HELLO AUTH logs in and switches protocol at once.
    k.roundtrip(&c("AUTH root"), b"+OK\r\n").roundtrip(&c("ACL WHOAMI"), b"$7\r\ndefault\r\n");
    let mut h = Conn::open(addr);
    h.send(&c("HELLO 3 AUTH beta bpw"));
    assert_eq!(h.line(), "%7");
    for _ in 0..24 {
        h.line();
    }
    assert_eq!(h.line(), "*0");
    h.roundtrip(&c("GET k"), b"_\r\n");
    // QUIT needs no login.
    let mut q = Conn::open(addr);
    q.roundtrip(&c("QUIT"), b"+OK\r\n");
    assert!(q.is_closed());
    // Failures are counted.
    let mut admin = resp_login(addr, "default", "root");
    admin.send(&c("INFO stats"));
    let info = bulk(&mut admin);
    let denied: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("acl_access_denied_auth:"))
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(denied >= 7, "{info}");
}

#[test]
fn memcache_login_failures_reply_like_memcached() {
    let server = start_with(tenants_config());
    let addr = server.local_addr();
    let mut m = Conn::open(addr);
    m.roundtrip(b"get k\r\n", b"CLIENT_ERROR unauthenticated\r\n")
        .roundtrip(b"version\r\n", b"CLIENT_ERROR unauthenticated\r\n")
        .roundtrip(b"stats\r\n", b"CLIENT_ERROR unauthenticated\r\n")
        .roundtrip(b"mn\r\n", b"CLIENT_ERROR unauthenticated\r\n")
        .roundtrip(b"add auth 0 0 9\r\n", b"CLIENT_ERROR unauthenticated\r\n")
        .roundtrip(b"set auth 0 0 abc\r\n", b"CLIENT_ERROR unauthenticated\r\n")
        .roundtrip(b"set k 0 0 1\r\nx\r\n", b"CLIENT_ERROR bad authentication token format\r\n")
        .roundtrip(b"set auth 0 0 9\r\nalpha bad\r\n", b"CLIENT_ERROR authentication failure\r\n")
        .roundtrip(b"set auth 0 0 9\r\nnobod apw\r\n", b"CLIENT_ERROR authentication failure\r\n")
        .roundtrip(
            b"set auth 0 0 9\r\nalpha apwXX",
            b"CLIENT_ERROR bad command line termination\r\n",
        )
        .roundtrip(b"set auth 0 0 5000\r\n", b"CLIENT_ERROR bad authentication token format\r\n");
    // The refused 5000-byte block is skipped, not read as commands.
    m.send(&vec![b'x'; 5000]).send(b"\r\n");
    m.roundtrip(b"get k\r\n", b"CLIENT_ERROR unauthenticated\r\n")
        // noreply does not silence the login's reply (as in memcached).
        .roundtrip(b"set auth 0 0 9 noreply\r\nalpha apw\r\n", b"STORED\r\n")
        // Logged in: a `set` is a `set` again.
        .roundtrip(b"set auth 0 0 9\r\nbeta  bpw\r\n", b"STORED\r\n")
        .roundtrip(b"get auth\r\n", b"VALUE auth 0 9\r\nbeta  bpw\r\nEND\r\n");
    let mut q = Conn::open(addr);
    q.send(b"quit\r\n");
    assert!(q.is_closed());
    // Counted: 5 failed logins and one success so far.
    let mut admin = mc_login(addr, "default", "root");
    admin.send(b"stats\r\n");
    let mut stats = Vec::new();
    loop {
        let line = admin.line();
        if line == "END" {
            break;
        }
        stats.push(line);
    }
    assert!(stats.contains(&"STAT auth_errors 4".to_string()), "{stats:?}");
    assert!(stats.contains(&"STAT auth_cmds 6".to_string()), "{stats:?}");
}

/// `INFO <section>` as (field, value) pairs.
fn info(k: &mut Conn, section: &str) -> Vec<(String, String)> {
    k.send(&c(&format!("INFO {section}")));
    let text = bulk(k);
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(f, v)| (f.to_string(), v.to_string()))
        .collect()
}

fn field(info: &[(String, String)], name: &str) -> String {
    info.iter()
        .find(|(f, _)| f == name)
        .unwrap_or_else(|| panic!("no {name} in {info:?}"))
        .1
        .clone()
}

#[test]
fn failed_logins_are_answered_at_once_then_refused_unchecked() {
    let server = start_with(Config {
        workers: 1,
        auth_failure_burst: 3,
        auth_failure_rate: 0.001,
        ..tenants_config()
    });
    let addr = server.local_addr();
    let mut admin = resp_login(addr, "default", "root");
    let mut madmin = mc_login(addr, "default", "root");
    let mut good = resp_login(addr, "alpha", "apw");
    // Each failure is answered at once and the connection goes on (no pause): a request sent
    // after it is answered too. Three failures spend the address's bucket.
    let mut bad = Conn::open(addr);
    bad.roundtrip(&c("AUTH alpha wrong"), WRONGPASS)
        .roundtrip(&c("PING"), NOAUTH)
        .roundtrip(&c("AUTH nobody wrong"), WRONGPASS)
        .roundtrip(&c("HELLO 3 AUTH beta wrong"), WRONGPASS);
    // Refused unchecked from now on, right password or not, in every form.
    bad.roundtrip(&c("AUTH alpha apw"), REFUSED)
        .roundtrip(&c("AUTH alpha wrong"), REFUSED)
        .roundtrip(&c("AUTH root"), REFUSED)
        .roundtrip(&c("HELLO 3 AUTH beta bpw"), REFUSED)
        .roundtrip(&c("GET k"), NOAUTH);
    let mut m = Conn::open(addr);
    m.roundtrip(b"set a 0 0 9\r\nalpha apw\r\n", MC_REFUSED)
        .roundtrip(b"set a 0 0 1\r\nx\r\n", MC_REFUSED)
        .roundtrip(b"get k\r\n", b"CLIENT_ERROR unauthenticated\r\n");
    // Connections logged in before are untouched, and the worker serves them.
    good.roundtrip(&c("SET x 1"), b"+OK\r\n").roundtrip(&c("GET x"), b"$1\r\n1\r\n");
    // Counted: three checked failures, six refusals (which are not failures).
    let stats = info(&mut admin, "stats");
    assert_eq!(field(&stats, "acl_access_denied_auth"), "3");
    assert_eq!(field(&stats, "auth_refused"), "6");
    let s = stat_lines(&mut madmin, b"stats\r\n");
    assert_eq!(stat(&s, "auth_errors"), "3");
    assert_eq!(stat(&s, "auth_refused"), "6");
    assert_eq!(stat(&s, "auth_cmds"), "12", "3 logins, 3 failures, 6 refusals");
}

#[test]
fn tenants_never_see_each_others_keys() {
    let server = start_with(tenants_config());
    let addr = server.local_addr();
    let mut a = resp_login(addr, "alpha", "apw");
    let mut b = resp_login(addr, "beta", "bpw");
    a.roundtrip(&c("MSET k1 a1 k2 a2 only-a x"), b"+OK\r\n");
    b.roundtrip(&c("SET k1 b1"), b"+OK\r\n");
    a.roundtrip(&c("GET k1"), b"$2\r\na1\r\n")
        .roundtrip(&c("MGET k1 k2 only-a"), b"*3\r\n$2\r\na1\r\n$2\r\na2\r\n$1\r\nx\r\n")
        .roundtrip(&c("DBSIZE"), b":3\r\n");
    b.roundtrip(&c("GET k1"), b"$2\r\nb1\r\n")
        .roundtrip(&c("GET only-a"), b"$-1\r\n")
        .roundtrip(&c("MGET k2 only-a"), b"*2\r\n$-1\r\n$-1\r\n")
        .roundtrip(&c("EXISTS k2 only-a"), b":0\r\n")
        .roundtrip(&c("DEL only-a"), b":0\r\n")
        .roundtrip(&c("DBSIZE"), b":1\r\n")
        .roundtrip(&c("KEYS *"), b"*1\r\n$2\r\nk1\r\n")
        .roundtrip(&c("SCAN 0 COUNT 1000"), b"*2\r\n$1\r\n0\r\n*1\r\n$2\r\nk1\r\n");
    a.send(&c("KEYS *"));
    assert_eq!(a.line(), "*3");
    let mut keys: Vec<String> = (0..3).map(|_| bulk(&mut a)).collect();
    keys.sort();
    assert_eq!(keys, ["k1", "k2", "only-a"]);
    // memcached connections of the same tenants see the same split.
    let mut ma = mc_login(addr, "alpha", "apw");
    let mut mb = mc_login(addr, "beta", "bpw");
    ma.roundtrip(b"get k1 only-a\r\n", b"VALUE k1 0 2\r\na1\r\nVALUE only-a 0 1\r\nx\r\nEND\r\n");
    mb.roundtrip(b"get k1 only-a\r\n", b"VALUE k1 0 2\r\nb1\r\nEND\r\n")
        .roundtrip(b"mg only-a v\r\n", b"EN\r\n")
        .roundtrip(b"delete only-a\r\n", b"NOT_FOUND\r\n");
    // Flushes empty the flusher's tenant only.
    b.roundtrip(&c("FLUSHALL"), b"+OK\r\n").roundtrip(&c("DBSIZE"), b":0\r\n");
    a.roundtrip(&c("DBSIZE"), b":3\r\n").roundtrip(&c("GET k1"), b"$2\r\na1\r\n");
    mb.roundtrip(b"set m 0 0 1\r\n1\r\n", b"STORED\r\n");
    ma.roundtrip(b"flush_all\r\n", b"OK\r\n").roundtrip(b"get k1\r\n", b"END\r\n");
    mb.roundtrip(b"get m\r\n", b"VALUE m 0 1\r\n1\r\nEND\r\n");
    // CLIENT LIST shows a tenant its own connections only; the admin sees all.
    a.send(&c("CLIENT LIST"));
    let list = bulk(&mut a);
    assert!(list.lines().all(|l| l.contains("user=alpha")), "{list}");
    let mut admin = resp_login(addr, "default", "root");
    admin.send(&c("CLIENT LIST"));
    let list = bulk(&mut admin);
    assert!(list.contains("user=beta") && list.contains("user=alpha"), "{list}");
}

fn stat_lines(k: &mut Conn, req: &[u8]) -> Vec<String> {
    k.send(req);
    let mut lines = Vec::new();
    loop {
        let line = k.line();
        if line == "END" {
            return lines;
        }
        lines.push(line);
    }
}

fn stat(lines: &[String], name: &str) -> String {
    let prefix = format!("STAT {name} ");
    lines
        .iter()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {name} in {lines:?}"))
        .to_string()
}

#[test]
fn stats_are_per_tenant_with_an_admin_view() {
    let mut config = tenants_config();
    config.tenants[1].reserved = Size(4 << 20);
    let server = start_with(config);
    let addr = server.local_addr();
    let mut a = mc_login(addr, "alpha", "apw");
    let mut b = mc_login(addr, "beta", "bpw");
    a.roundtrip(b"set x 0 0 1\r\n1\r\n", b"STORED\r\n")
        .roundtrip(b"set y 0 0 1\r\n1\r\n", b"STORED\r\n")
        .roundtrip(b"get x y nope\r\n", b"VALUE x 0 1\r\n1\r\nVALUE y 0 1\r\n1\r\nEND\r\n");
    b.roundtrip(b"get x\r\n", b"END\r\n");
    let s = stat_lines(&mut a, b"stats\r\n");
    assert_eq!(stat(&s, "tenant"), "alpha");
    assert_eq!(stat(&s, "tenant_id"), "1");
    assert_eq!(stat(&s, "curr_items"), "2");
    assert_eq!(stat(&s, "tenant_items"), "2");
    assert_eq!(stat(&s, "tenant_hits"), "2");
    assert_eq!(stat(&s, "tenant_misses"), "1");
    assert_eq!(stat(&s, "get_hits"), "2");
    assert_eq!(stat(&s, "tenant_reserved"), (4 << 20).to_string());
    for field in ["tenant_target", "tenant_bytes", "tenant_shadow_hits", "tenant_evictions"] {
        stat(&s, field);
    }
    for field in ["tenant_credits_gained", "tenant_credits_lost", "hitmap_digests_applied"] {
        stat(&s, field);
    }
    for field in ["hitmap_pools_dropped", "hitmap_compactions", "hitmap_bytes"] {
        stat(&s, field);
    }
    stat(&s, "hitmap_bits_per_item");
    // The field is there; it is server-wide memory, so a tenant reads 0.
    assert_eq!(stat(&s, "shadow_queue_bytes"), "0");
    assert_eq!(stat(&s, "ghost_bytes"), "0");
    let s = stat_lines(&mut b, b"stats\r\n");
    assert_eq!(stat(&s, "curr_items"), "0");
    assert_eq!(stat(&s, "tenant_misses"), "1");
    // `stats tenants`: own row for a tenant, every row for the admin.
    let rows = stat_lines(&mut b, b"stats tenants\r\n");
    assert!(rows.iter().all(|l| l.starts_with("STAT beta:")), "{rows:?}");
    assert_eq!(stat(&rows, "beta:id"), "2");
    let mut admin = mc_login(addr, "default", "root");
    let rows = stat_lines(&mut admin, b"stats tenants\r\n");
    assert_eq!(stat(&rows, "alpha:items"), "2");
    assert_eq!(stat(&rows, "alpha:hits"), "2");
    assert_eq!(stat(&rows, "beta:misses"), "1");
    assert_eq!(stat(&rows, "default:id"), "0");
    let s = stat_lines(&mut admin, b"stats\r\n");
    assert_eq!(stat(&s, "curr_items"), "2", "the admin sees the whole cache");
    // INFO: the same figures, in a `tenants` section and a `hitmap` section.
    let mut ra = resp_login(addr, "alpha", "apw");
    ra.send(&c("INFO tenants"));
    let info = bulk(&mut ra);
    assert!(info.contains("tenant:alpha\r\n"), "{info}");
    assert!(info.contains("tenant_alpha:id=1,rank=hitmap,reserved=4194304,"), "{info}");
    assert!(info.contains(",items=2,hits=2,misses=1,shadow_hits="), "{info}");
    assert!(!info.contains("tenant_beta"), "{info}");
    ra.send(&c("INFO hitmap"));
    let info = bulk(&mut ra);
    for field in ["hitmap_digests_applied:", "hitmap_zone_0:", "hitmap_zombies:", "hitmap_bytes:"] {
        assert!(info.contains(field), "{info}");
    }
    ra.send(&c("INFO keyspace"));
    assert_eq!(bulk(&mut ra), "# Keyspace\r\ndb0:keys=2,expires=0,avg_ttl=0\r\n");
    let mut rroot = resp_login(addr, "default", "root");
    rroot.send(&c("INFO tenants"));
    let info = bulk(&mut rroot);
    assert!(info.contains("tenant_alpha:") && info.contains("tenant_beta:"), "{info}");
}

#[test]
fn key_prefixes_route_unauthenticated_clients() {
    let mut alpha = tenant("alpha", "apw");
    alpha.key_prefixes = vec!["a:".into(), "alpha:".into()];
    let server =
        start_with(Config { tenants: vec![alpha], allow_unauthenticated: Some(true), ..config() });
    let addr = server.local_addr();
    let mut anon = Conn::open(addr);
    anon.roundtrip(&c("SET a:1 x"), b"+OK\r\n")
        .roundtrip(&c("SET plain y"), b"+OK\r\n")
        .roundtrip(&c("DBSIZE"), b":1\r\n");
    let mut m = Conn::open(addr);
    m.roundtrip(b"set alpha:2 0 0 1\r\nz\r\n", b"STORED\r\n")
        .roundtrip(b"get a:1\r\n", b"VALUE a:1 0 1\r\nx\r\nEND\r\n");
    let mut a = resp_login(addr, "alpha", "apw");
    a.roundtrip(&c("DBSIZE"), b":2\r\n")
        .roundtrip(&c("GET a:1"), b"$1\r\nx\r\n")
        .roundtrip(&c("GET plain"), b"$-1\r\n");
}

#[test]
fn unauthenticated_clients_are_default_without_tenants() {
    let server = start_with(config());
    let mut k = Conn::open(server.local_addr());
    k.roundtrip(&c("SET k v"), b"+OK\r\n")
        .roundtrip(&c("ACL WHOAMI"), b"$7\r\ndefault\r\n")
        .roundtrip(&c("AUTH default anything"), b"+OK\r\n")
        .roundtrip(
            &c("AUTH pw"),
            b"-ERR AUTH <password> called without any password configured for the default \
              user. Are you sure your configuration is correct?\r\n",
        )
        .roundtrip(&c("AUTH bob pw"), WRONGPASS)
        .roundtrip(&c("CONFIG RELOAD"), b"-ERR CONFIG RELOAD failed: tenants unchanged: the server was started without --config: there is no file to reload\r\n");
}

fn write_config(path: &std::path::Path, tenants: &[(&str, &str)]) {
    let mut text = String::from("auth_failure_burst = 1000\n");
    for (name, password) in tenants {
        let hash = PasswordHash::new(b"pepper", password.as_bytes());
        text.push_str(&format!("[[tenants]]\nname = \"{name}\"\npassword_sha256 = \"{hash}\"\n"));
    }
    std::fs::write(path, text).unwrap();
}

#[test]
fn reload_keeps_data_and_ids() {
    let path = std::env::temp_dir().join(format!("fridge-reload-{}.toml", std::process::id()));
    write_config(&path, &[("default", "root"), ("alpha", "apw")]);
    let mut config = Config::from_file(&path).unwrap();
    config.port = 0;
    config.memory = Size(64 << 20);
    config.workers = 2;
    config.config_file = Some(path.clone());
    let server = start_with(config);
    let addr = server.local_addr();
    let mut a = resp_login(addr, "alpha", "apw");
    a.roundtrip(&c("SET kept 1"), b"+OK\r\n");
    // A tenant may not reload.
    a.roundtrip(&c("CONFIG RELOAD"), NOPERM_RELOAD);
    // New password for alpha, a new tenant gamma.
    write_config(&path, &[("default", "root"), ("gamma", "gpw"), ("alpha", "apw2")]);
    let mut admin = resp_login(addr, "default", "root");
    admin.roundtrip(&c("CONFIG RELOAD"), b"+OK\r\n");
    let mut k = Conn::open(addr);
    k.roundtrip(&c("AUTH alpha apw"), WRONGPASS).roundtrip(&c("AUTH alpha apw2"), b"+OK\r\n");
    k.roundtrip(&c("GET kept"), b"$1\r\n1\r\n");
    // The open connection keeps working.
    a.roundtrip(&c("GET kept"), b"$1\r\n1\r\n");
    let mut g = resp_login(addr, "gamma", "gpw");
    g.roundtrip(&c("GET kept"), b"$-1\r\n").roundtrip(&c("SET g 1"), b"+OK\r\n");
    let mut m = mc_login(addr, "default", "root");
    let rows = stat_lines(&mut m, b"stats tenants\r\n");
    assert_eq!(stat(&rows, "alpha:id"), "1", "alpha keeps its id");
    assert_eq!(stat(&rows, "gamma:id"), "2", "gamma gets the next one");
    // Removed: alpha can no longer log in, its connections are closed; a broken file changes
    // nothing (through the in-process handle, as SIGHUP does).
    write_config(&path, &[("default", "root"), ("gamma", "gpw")]);
    server.reload().unwrap();
    a.send(&c("GET kept"));
    assert!(a.is_closed());
    let mut k = Conn::open(addr);
    k.roundtrip(&c("AUTH alpha apw2"), WRONGPASS);
    std::fs::write(&path, "[[tenants]]\nname = \"bad name\"\n").unwrap();
    assert!(server.reload().is_err());
    admin.send(&c("CONFIG RELOAD"));
    assert!(
        admin
            .line()
            .starts_with("-ERR CONFIG RELOAD failed: tenants unchanged: tenant name \"bad name\"")
    );
    g.roundtrip(&c("GET g"), b"$1\r\n1\r\n");
    // alpha comes back with its id, and finds its data.
    write_config(&path, &[("default", "root"), ("gamma", "gpw"), ("alpha", "apw3")]);
    server.reload().unwrap();
    let mut a = resp_login(addr, "alpha", "apw3");
    a.roundtrip(&c("GET kept"), b"$1\r\n1\r\n");
    let _ = std::fs::remove_file(&path);
}

/// The tenants of [`bad_reloads_keep_the_running_configuration`]'s file, `alpha` first.
fn alpha_then_default() -> String {
    let hash = |p: &str| PasswordHash::new(b"pepper", p.as_bytes());
    format!(
        "auth_failure_burst = 1000\n[[tenants]]\nname = \"alpha\"\npassword_sha256 = \"{}\"\n\
         [[tenants]]\nname = \"default\"\npassword_sha256 = \"{}\"\n",
        hash("apw"),
        hash("root")
    )
}

#[test]
fn bad_reloads_keep_the_running_configuration() {
    let path = std::env::temp_dir().join(format!("fridge-badreload-{}.toml", std::process::id()));
    let good = alpha_then_default();
    std::fs::write(&path, &good).unwrap();
    let server = start_with(Config { config_file: Some(path.clone()), ..tenants_config() });
    server.reload().unwrap();
    let addr = server.local_addr();
    let mut admin = resp_login(addr, "default", "root");
    let cut_in_hash = good.find("password_sha256").unwrap() + 30;
    let cut_before_password = good.find("password_sha256").unwrap();
    let cases: [(&str, &[u8], &str); 5] = [
        ("empty", b"", "the file configures no tenant, so allow_unauthenticated would default"),
        ("cut in a hash", &good.as_bytes()[..cut_in_hash], "bad config"),
        ("cut before a password", &good.as_bytes()[..cut_before_password], "nobody could log in"),
        ("binary garbage", b"\x00\xff\xfe garbage", "cannot read"),
        ("text garbage", b"[[[ not toml", "bad config"),
    ];
    for (what, text, why) in cases {
        std::fs::write(&path, text).unwrap();
        let err = server.reload().unwrap_err();
        assert!(err.starts_with(&format!("tenants unchanged: {why}")), "{what}: {err}");
        admin.send(&c("CONFIG RELOAD"));
        let line = admin.line();
        assert!(
            line.starts_with(&format!("-ERR CONFIG RELOAD failed: tenants unchanged: {why}")),
            "{what}: {line}"
        );
        // A login is still required, and the old passwords still work.
        let mut anon = Conn::open(addr);
        anon.roundtrip(&c("GET k"), NOAUTH).roundtrip(&c("CLIENT LIST"), NOAUTH);
        let mut m = Conn::open(addr);
        m.roundtrip(b"get k\r\n", b"CLIENT_ERROR unauthenticated\r\n");
        resp_login(addr, "alpha", "apw").roundtrip(&c("ACL WHOAMI"), b"$5\r\nalpha\r\n");
        mc_login(addr, "default", "root");
    }
    assert_eq!(field(&info(&mut admin, "stats"), "reload_failures"), "10");
    // Saying so explicitly is a reload like any other.
    std::fs::write(&path, "allow_unauthenticated = true\n").unwrap();
    server.reload().unwrap();
    Conn::open(addr).roundtrip(&c("SET k v"), b"+OK\r\n");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_configuration_nobody_can_log_in_to_does_not_start() {
    let nopass = TenantConfig { name: "alpha".into(), ..TenantConfig::default() };
    let err = Server::start(Config { tenants: vec![nopass], ..config() }).unwrap_err();
    assert!(err.to_string().starts_with("nobody could log in"), "{err}");
    let closed = Config { allow_unauthenticated: Some(false), ..config() };
    assert!(Server::start(closed).is_err());
}

/// Reads a RESP integer reply.
fn integer(k: &mut Conn) -> i64 {
    let line = k.line();
    line.strip_prefix(':').and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{line}"))
}

#[test]
fn anonymous_clients_are_not_admin_where_a_password_is_set() {
    let mut alpha = tenant("alpha", "apw");
    alpha.key_prefixes = vec!["a:".into()];
    let config = Config {
        tenants: vec![tenant("default", "root"), alpha],
        allow_unauthenticated: Some(true),
        ..tenants_config()
    };
    let server = start_with(config);
    let addr = server.local_addr();
    let mut a = resp_login(addr, "alpha", "apw");
    a.roundtrip(&c("SET a:1 x"), b"+OK\r\n").roundtrip(&c("GET a:1"), b"$1\r\nx\r\n");
    a.send(&c("CLIENT ID"));
    let a_id = integer(&mut a);
    let a_addr = a.stream.local_addr().unwrap().to_string();
    let mut anon = Conn::open(addr);
    anon.roundtrip(&c("SET plain 1"), b"+OK\r\n").roundtrip(&c("GET nope"), b"$-1\r\n");
    anon.send(&c("CLIENT ID"));
    let anon_id = integer(&mut anon);
    // Another tenant's connection does not exist for it: it can neither list nor kill it.
    anon.roundtrip(&c(&format!("CLIENT KILL ID {a_id}")), b":0\r\n")
        .roundtrip(&c(&format!("CLIENT KILL {a_addr}")), b"-ERR No such client\r\n");
    a.roundtrip(&c("PING"), b"+PONG\r\n");
    anon.send(&c("CLIENT LIST"));
    let list = bulk(&mut anon);
    assert_eq!(list.lines().count(), 1, "{list}");
    assert!(list.starts_with(&format!("id={anon_id} ")), "{list}");
    anon.roundtrip(&c("CONFIG RELOAD"), NOPERM_RELOAD).roundtrip(
        &c("CONFIG SET save x"),
        b"-NOPERM this user has no permissions to run the 'config|set' command\r\n",
    );
    // Its figures are those of the tenant its request routes to (`default`), and only those.
    let tenants = info(&mut anon, "tenants");
    assert_eq!(field(&tenants, "tenant"), "default");
    assert!(tenants.iter().all(|(f, _)| f != "tenant_alpha"), "{tenants:?}");
    let stats = info(&mut anon, "stats");
    assert_eq!(field(&stats, "keyspace_hits"), "0");
    assert_eq!(field(&stats, "keyspace_misses"), "1");
    assert_eq!(field(&stats, "acl_access_denied_auth"), "0");
    assert_eq!(field(&info(&mut anon, "clients"), "connected_clients"), "1");
    let mut m = Conn::open(addr);
    let s = stat_lines(&mut m, b"stats\r\n");
    assert_eq!(stat(&s, "tenant"), "default");
    assert_eq!(stat(&s, "curr_items"), "1", "default's item only");
    assert_eq!(stat(&s, "curr_connections"), "1");
    let rows = stat_lines(&mut m, b"stats tenants\r\n");
    assert!(rows.iter().all(|l| l.starts_with("STAT default:")), "{rows:?}");
    // The admin logs in, and sees and may kill everyone.
    let mut admin = resp_login(addr, "default", "root");
    admin.send(&c("CLIENT LIST"));
    let list = bulk(&mut admin);
    assert!(list.contains(&format!("id={a_id} ")) && list.contains(&format!("id={anon_id} ")));
    admin.roundtrip(&c(&format!("CLIENT KILL ID {a_id}")), b":1\r\n");
    assert!(a.is_closed());
}

#[test]
fn anonymous_clients_are_admin_on_a_plain_server() {
    let server = start_with(config());
    let addr = server.local_addr();
    let mut other = Conn::open(addr);
    other.send(&c("CLIENT ID"));
    let other_id = integer(&mut other);
    let mut anon = Conn::open(addr);
    anon.send(&c("CLIENT LIST"));
    assert!(bulk(&mut anon).contains(&format!("id={other_id} ")));
    anon.roundtrip(&c(&format!("CLIENT KILL ID {other_id}")), b":1\r\n");
    assert!(other.is_closed());
}

#[test]
fn tenants_see_only_their_own_counters() {
    let server = start_with(tenants_config());
    let addr = server.local_addr();
    let mut admin = resp_login(addr, "default", "root");
    let mut b = resp_login(addr, "beta", "bpw");
    let before = info(&mut b, "stats");
    // alpha works, and someone fails to log in as alpha.
    let mut a = resp_login(addr, "alpha", "apw");
    for _ in 0..5 {
        a.roundtrip(&c("SET x 1"), b"+OK\r\n").roundtrip(&c("INCR n"), b":1\r\n");
        a.roundtrip(&c("DEL n"), b":1\r\n").roundtrip(&c("GET x"), b"$1\r\n1\r\n");
    }
    Conn::open(addr).roundtrip(&c("AUTH alpha wrong"), WRONGPASS);
    Conn::open(addr)
        .roundtrip(b"set a 0 0 11\r\nalpha wrong\r\n", b"CLIENT_ERROR authentication failure\r\n");
    let mut ma = mc_login(addr, "alpha", "apw");
    ma.roundtrip(b"set y 0 0 1\r\n1\r\n", b"STORED\r\n")
        .roundtrip(b"touch y 10\r\n", b"TOUCHED\r\n");
    // beta sees none of it: its own figures and the server's settings, the rest zero.
    let after = info(&mut b, "stats");
    assert_eq!(after, before, "beta's INFO stats moved with alpha's work");
    for (name, value) in [
        ("total_commands_processed", "0"),
        ("total_connections_received", "0"),
        ("total_net_input_bytes", "0"),
        ("acl_access_denied_auth", "0"),
        ("keyspace_hits", "0"),
        ("reload_failures", "0"),
    ] {
        assert_eq!(field(&after, name), value, "{name}");
    }
    assert_eq!(field(&info(&mut b, "clients"), "connected_clients"), "1");
    let mut mb = mc_login(addr, "beta", "bpw");
    let s = stat_lines(&mut mb, b"stats\r\n");
    for (name, value) in [
        ("cmd_set", "0"),
        ("cmd_touch", "0"),
        ("incr_hits", "0"),
        ("delete_hits", "0"),
        ("auth_errors", "0"),
        ("auth_cmds", "2"), // beta's own two logins
        ("bytes_read", "0"),
        ("curr_connections", "2"),
        ("total_connections", "0"),
        ("curr_items", "0"),
        ("rusage_user", "0.000000"),
        ("hitmap_digests_applied", "0"),
    ] {
        assert_eq!(stat(&s, name), value, "{name}");
    }
    assert_eq!(stat(&s, "max_connections"), "1024", "settings are public");
    // alpha sees the failed logins naming it; the admin sees everything.
    let s = stat_lines(&mut ma, b"stats\r\n");
    assert_eq!(stat(&s, "auth_errors"), "2");
    assert_eq!(stat(&s, "auth_cmds"), "4");
    assert_eq!(stat(&s, "curr_items"), "2");
    let all = info(&mut admin, "stats");
    assert_eq!(field(&all, "acl_access_denied_auth"), "2");
    let commands: u64 = field(&all, "total_commands_processed").parse().unwrap();
    assert!(commands > 20, "{commands}");
}
