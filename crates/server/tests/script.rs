//! Redis scripting (EVAL, EVALSHA, SCRIPT, FUNCTION, FCALL), byte for byte (replies checked
//! against redis-server 7.0.15, fridge's documented differences aside).

mod common;

use common::{Conn, cmd, config, start, start_with};

fn req(args: &[&str]) -> Vec<u8> {
    let parts: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    cmd(&parts)
}

#[test]
fn eval_converts_both_ways_and_reports_errors_as_redis() {
    let server = start();
    let mut c = Conn::open(server.local_addr());
    let cases: &[(&[&str], &[u8])] = &[
        (&["EVAL", "return {1,2,3.7,'x',nil,4}", "0"], b"*4\r\n:1\r\n:2\r\n:3\r\n$1\r\nx\r\n"),
        (&["EVAL", "return {ok='fine'}", "0"], b"+fine\r\n"),
        (&["EVAL", "return {err='my'}", "0"], b"-my\r\n"),
        (&["EVAL", "return true", "0"], b":1\r\n"),
        (&["EVAL", "return false", "0"], b"$-1\r\n"),
        (&["EVAL", "return redis.call('set', KEYS[1], ARGV[1])", "1", "k", "v"], b"+OK\r\n"),
        (&["EVAL", "return redis.call('get', KEYS[1])", "1", "k"], b"$1\r\nv\r\n"),
        (&["EVAL", "return redis.call('get', KEYS[1])", "1", "none"], b"$-1\r\n"),
        (
            &["EVAL", "return 1", "2", "a"],
            b"-ERR Number of keys can't be greater than number of args\r\n",
        ),
        (&["EVAL", "return 1", "-1"], b"-ERR Number of keys can't be negative\r\n"),
        (&["EVALSHA", "abc", "0"], b"-NOSCRIPT No matching script. Please use EVAL.\r\n"),
        (
            &["EVAL", "return redis.call('incr', KEYS[1])", "1", "k"],
            b"-ERR value is not an integer or out of range script: \
              2bab3b661081db58bd2341920e0ba7cf5dc77b25, on @user_script:1.\r\n",
        ),
        (
            &["EVAL", "return redis.pcall('incr', KEYS[1])", "1", "k"],
            b"-ERR value is not an integer or out of range\r\n",
        ),
        (
            &["EVAL", "x = 1", "0"],
            b"-ERR user_script:1: Attempt to modify a readonly table script: \
              34bce5f775de97f557a34088509c8bfe1ea17e52, on @user_script:1.\r\n",
        ),
        (
            &["EVAL", "return os", "0"],
            b"-ERR user_script:1: Script attempted to access nonexistent global variable 'os' \
              script: f03b5ad6e7d58786b6a5e879efbea4a4408f5c2f, on @user_script:1.\r\n",
        ),
        (
            &["EVAL", "syntax error here", "0"],
            b"-ERR Error compiling script (new function): user_script:1: '=' expected near \
              'error'\r\n",
        ),
        (
            &["EVAL", "return redis.pcall('multi')", "0"],
            b"-ERR This Redis command is not allowed from script\r\n",
        ),
        (
            &["EVAL_RO", "return redis.pcall('set', KEYS[1], 'x')", "1", "k"],
            b"-ERR Write commands are not allowed from read-only scripts.\r\n",
        ),
        (
            &["EVAL", "return redis.pcall('get', 'other')", "1", "k"],
            b"-ERR script tried accessing undeclared key: other\r\n",
        ),
        // Keys found by Redis's key specifications, not only the legacy positions.
        (
            &["EVAL", "return redis.pcall('sort', KEYS[1], 'STORE', 'dst')", "1", "k"],
            b"-ERR script tried accessing undeclared key: dst\r\n",
        ),
        (
            &["EVAL", "return redis.pcall('object', 'encoding', 'other')", "1", "k"],
            b"-ERR script tried accessing undeclared key: other\r\n",
        ),
        (
            &["EVAL", "return redis.pcall('sort', KEYS[1], 'STORE', KEYS[2])", "2", "s1", "d1"],
            b":0\r\n",
        ),
        (
            &["EVAL", "return redis.sha1hex('')", "0"],
            b"$40\r\nda39a3ee5e6b4b0d3255bfef95601890afd80709\r\n",
        ),
        (&["SCRIPT", "LOAD", "return 1"], b"$40\r\ne0e1f9fabfc9d4800c877a703b823ac0578ff8db\r\n"),
        (&["EVALSHA", "E0E1F9FABFC9D4800C877A703B823AC0578FF8DB", "0"], b":1\r\n"),
        (
            &["SCRIPT", "EXISTS", "a", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"],
            b"*2\r\n:0\r\n:1\r\n",
        ),
        (&["SCRIPT", "FLUSH"], b"+OK\r\n"),
        (&["SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"], b"*1\r\n:0\r\n"),
        (&["SCRIPT", "KILL"], b"-NOTBUSY No scripts in execution right now.\r\n"),
    ];
    for (args, reply) in cases {
        c.send(&req(args));
        let got = c.read_n(reply.len());
        assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(reply), "{args:?}");
    }
}

#[test]
fn functions_load_list_and_call() {
    let server = start();
    let mut c = Conn::open(server.local_addr());
    let lib = "#!lua name=lib1\nredis.register_function('f1', function(keys, args) return keys[1] end)\n\
               redis.register_function{function_name='f2', callback=function() return 2 end, flags={'no-writes'}}";
    let cases: &[(&[&str], &[u8])] = &[
        (&["FUNCTION", "LOAD", "return 1"], b"-ERR Missing library metadata\r\n"),
        (&["FUNCTION", "LOAD", lib], b"$4\r\nlib1\r\n"),
        (&["FUNCTION", "LOAD", lib], b"-ERR Library 'lib1' already exists\r\n"),
        (&["FUNCTION", "LOAD", "REPLACE", lib], b"$4\r\nlib1\r\n"),
        (&["FCALL", "f1", "1", "kk"], b"$2\r\nkk\r\n"),
        (&["FCALL_RO", "f2", "0"], b":2\r\n"),
        (
            &["FCALL_RO", "f1", "0"],
            b"-ERR Can not execute a script with write flag using *_ro command.\r\n",
        ),
        (&["FCALL", "nosuch", "0"], b"-ERR Function not found\r\n"),
        (
            &["FUNCTION", "LIST"],
            b"*1\r\n*6\r\n$12\r\nlibrary_name\r\n$4\r\nlib1\r\n$6\r\nengine\r\n$3\r\nLUA\r\n\
              $9\r\nfunctions\r\n*2\r\n*6\r\n$4\r\nname\r\n$2\r\nf1\r\n$11\r\ndescription\r\n\
              $-1\r\n$5\r\nflags\r\n*0\r\n*6\r\n$4\r\nname\r\n$2\r\nf2\r\n$11\r\ndescription\r\n\
              $-1\r\n$5\r\nflags\r\n*1\r\n+no-writes\r\n",
        ),
        (&["FUNCTION", "DELETE", "lib1"], b"+OK\r\n"),
        (&["FUNCTION", "DELETE", "lib1"], b"-ERR Library not found\r\n"),
        (&["FUNCTION", "LIST"], b"*0\r\n"),
    ];
    for (args, reply) in cases {
        c.send(&req(args));
        let got = c.read_n(reply.len());
        assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(reply), "{args:?}");
    }
}

#[test]
fn an_endless_script_is_answered_busy_and_killed() {
    let mut cfg = config();
    cfg.workers = 2;
    let server = start_with(cfg);
    let addr = server.local_addr();
    let mut admin = Conn::open(addr);
    admin.roundtrip(&req(&["CONFIG", "SET", "busy-reply-threshold", "50"]), b"+OK\r\n");
    let mut runner = Conn::open(addr);
    runner.send(&req(&["EVAL", "while true do end", "0"]));
    // Connections are spread over the workers: a connection on the script's worker is not
    // served until the script ends (kept open, answered later); one on another worker gets
    // NOTBUSY until the script has started, then kills it.
    let mut waiting = Vec::new();
    let mut killed = false;
    for _ in 0..200 {
        let mut other = Conn::open(addr);
        other.stream.set_read_timeout(Some(std::time::Duration::from_millis(300))).unwrap();
        other.send(&req(&["SCRIPT", "KILL"]));
        let mut byte = [0u8; 1];
        match std::io::Read::read(&mut other.stream, &mut byte) {
            Ok(1) if byte[0] == b'+' => {
                other.stream.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
                assert_eq!(other.line(), "OK");
                killed = true;
                break;
            }
            Ok(1) => {
                other.stream.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
                let line = other.line();
                assert!(line.starts_with("NOTBUSY"), "{line}");
            }
            _ => waiting.push(other),
        }
    }
    assert!(killed, "SCRIPT KILL reached the script");
    let line = runner.line();
    assert!(line.starts_with("-ERR Script killed by user with SCRIPT KILL..."), "{line}");
    runner.roundtrip(&req(&["PING"]), b"+PONG\r\n");
    for mut w in waiting {
        w.stream.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
        let line = w.line();
        assert!(line.starts_with("-NOTBUSY"), "{line}");
    }
}

#[test]
fn huge_tables_and_deep_recursion_fail_without_harm() {
    let server = start();
    let mut c = Conn::open(server.local_addr());
    // Filling 64 MiB is quick, but a loaded test machine may be slow: more than the default.
    c.stream.set_read_timeout(Some(std::time::Duration::from_secs(60))).unwrap();
    c.send(&req(&["EVAL", "local t = {} for i = 1, 1e9 do t[i] = i end", "0"]));
    let line = c.line();
    assert!(line.starts_with("-ERR"), "{line}");
    c.send(&req(&["EVAL", "local function f(n) return 1 + f(n + 1) end return f(1)", "0"]));
    let line = c.line();
    assert!(line.starts_with("-ERR") && line.contains("stack overflow"), "{line}");
    c.roundtrip(&req(&["EVAL", "return 7", "0"]), b":7\r\n");
}

#[test]
fn a_script_queued_in_a_transaction_runs_inside_exec() {
    let server = start();
    let mut c = Conn::open(server.local_addr());
    c.roundtrip(&req(&["MULTI"]), b"+OK\r\n");
    c.roundtrip(&req(&["SET", "k", "1"]), b"+QUEUED\r\n");
    c.roundtrip(&req(&["EVAL", "return redis.call('incr', KEYS[1])", "1", "k"]), b"+QUEUED\r\n");
    c.roundtrip(&req(&["EXEC"]), b"*2\r\n+OK\r\n:2\r\n");
    c.roundtrip(&req(&["EVAL", "return redis.call('get', KEYS[1])", "1", "k"]), b"$1\r\n2\r\n");
}

#[test]
fn the_script_cache_is_bounded_per_tenant() {
    let server = start();
    let mut c = Conn::open(server.local_addr());
    // 1 MiB of comment each: the 17th goes past the 16 MiB a tenant's cache may hold.
    let mut refused = None;
    for i in 0..20 {
        let body = format!("return {i} --{}", "x".repeat(1 << 20));
        c.send(&req(&["SCRIPT", "LOAD", &body]));
        let line = c.line();
        if line.starts_with('-') {
            refused = Some((i, line));
            break;
        }
        assert_eq!(line, "$40");
        c.line();
    }
    let (i, line) = refused.expect("the cache refuses at its bound");
    assert_eq!(i, 15, "16 MiB hold 15 scripts of 1 MiB and a little");
    assert!(line.starts_with("-ERR script cache full"), "{line}");
    c.roundtrip(&req(&["SCRIPT", "FLUSH"]), b"+OK\r\n");
    c.roundtrip(&req(&["EVAL", "return 1", "0"]), b":1\r\n");
}
