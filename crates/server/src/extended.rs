//! memcached's `-o` extended options (`memcached -h`, and the sub-option table of `main` in
//! memcached 1.6's `memcached.c`): which of them fridge honours, and a clear refusal for the
//! rest, so that a deployment never starts believing it got a setting it did not.
//!
//! An option list is split at commas, each entry `name` or `name=value`, as memcached's
//! `getsubopt` does. Three outcomes per entry:
//! - honoured: a fridge setting ([`Effect`]), or a request for what fridge always does
//!   (`maxconns_fast`, `modern`, `slab_reassign`, `slab_automove[=1|2]`, `lru_crawler`,
//!   `lru_maintainer`: over-limit connections are refused at once, memory moves freely between
//!   item sizes, and the cleaner reclaims expired items in the background);
//! - known to memcached but not to fridge (its slab, LRU, hash-table, extstore and some TLS
//!   tuning):
//!   `Unsupported suboption "…"` with the reason;
//! - unknown to memcached too: memcached's own `Illegal suboption "…"`.
//!
//! `docs/deployment.md` lists every option and its status.

use std::path::PathBuf;

use crate::config::TlsAuthClients;

/// A fridge setting an `-o` option asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Effect {
    /// `idle_timeout=N`: close connections idle N seconds (0: never).
    IdleTimeout(u64),
    /// `read_buf_mem_limit=N`: all connections' buffers together, in megabytes (0: no limit).
    ReadBufMemLimitMb(u64),
    /// `ssl_chain_cert=FILE`: the certificate chain (`tls_cert_file`).
    SslChainCert(PathBuf),
    /// `ssl_key=FILE`: its key (`tls_key_file`).
    SslKey(PathBuf),
    /// `ssl_ca_cert=FILE`: the CA of client certificates (`tls_ca_cert_file`).
    SslCaCert(PathBuf),
    /// `ssl_verify_mode=0..3`: whether clients show certificates (`tls_auth_clients`).
    SslVerifyMode(TlsAuthClients),
    /// Asks for what fridge always does.
    Nothing,
}

/// Options memcached 1.6.18 knows that fridge cannot honour, with the reason.
const UNSUPPORTED: &[(&str, &str)] = &[
    ("no_maxconns_fast", "fridge always answers connections over -c with an error at once"),
    ("no_modern", "fridge has no 1.4-era defaults to return to"),
    ("no_slab_reassign", "fridge has no slab classes: memory always moves between item sizes"),
    ("no_slab_automove", "fridge has no slab classes: memory always moves between item sizes"),
    ("no_lru_crawler", "fridge's cleaner always reclaims expired items in the background"),
    ("no_lru_maintainer", "fridge's cleaner always runs"),
    ("hashpower", "fridge's index is sized from -m, not from a hash power"),
    ("no_hashexpand", "fridge's index is sized from -m, not from a hash power"),
    ("hash_algorithm", "fridge's index has one hash function"),
    ("tail_repair_time", "fridge has no LRU tail to repair"),
    ("lru_crawler_sleep", "fridge's cleaner paces itself"),
    ("lru_crawler_tocrawl", "fridge's cleaner paces itself"),
    ("hot_lru_pct", "fridge ranks items by its hitmap, not segmented LRUs"),
    ("warm_lru_pct", "fridge ranks items by its hitmap, not segmented LRUs"),
    ("hot_max_factor", "fridge ranks items by its hitmap, not segmented LRUs"),
    ("warm_max_factor", "fridge ranks items by its hitmap, not segmented LRUs"),
    ("temporary_ttl", "fridge has no separate LRU for short TTLs"),
    ("slab_sizes", "fridge has no slab classes"),
    ("slab_chunk_max", "fridge has no slab classes"),
    ("slab_automove_ratio", "fridge has no slab classes"),
    ("slab_automove_window", "fridge has no slab classes"),
    ("slab_automove_freeratio", "fridge has no slab classes"),
    ("watcher_logbuf_size", "fridge has no watch log buffers to size"),
    ("worker_logbuf_size", "fridge has no watch log buffers to size"),
    ("track_sizes", "fridge has no `stats sizes` tracking to enable"),
    ("inline_ascii_resp", "fridge's replies are always built the same way"),
    ("no_inline_ascii_resp", "fridge's replies are always built the same way"),
    ("sock_cookie_id", "fridge does not set SO_MARK"),
    ("ssl_ciphers", "fridge uses rustls's cipher suites, which are not configurable"),
    ("ssl_wbuf_size", "rustls sizes its own buffers"),
    ("ssl_kernel_tls", "fridge does not offload TLS to the kernel"),
];

/// Prefixes of memcached's extstore options, which fridge does not implement.
const UNSUPPORTED_FAMILIES: &[(&str, &str)] =
    &[("ext_", "fridge has no external storage (extstore)")];

/// Parses one `-o` argument into the settings it asks for, or the first refusal.
pub(crate) fn parse(list: &str) -> Result<Vec<Effect>, String> {
    let mut effects = Vec::new();
    // memcached's getsubopt stops at the end of the string; an empty entry inside is illegal.
    let entries: Vec<&str> = if list.is_empty() { Vec::new() } else { list.split(',').collect() };
    for entry in entries {
        let (name, value) = match entry.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (entry, None),
        };
        effects.push(option(entry, name, value)?);
    }
    Ok(effects)
}

fn option(entry: &str, name: &str, value: Option<&str>) -> Result<Effect, String> {
    let number = |missing: &str, bad: &str| -> Result<u64, String> {
        let v = value.ok_or_else(|| missing.to_string())?;
        v.parse::<u64>().map_err(|_| bad.to_string())
    };
    Ok(match name {
        "maxconns_fast" | "modern" | "slab_reassign" | "lru_crawler" | "lru_maintainer" => {
            Effect::Nothing
        }
        "slab_automove" => match value {
            None | Some("1" | "2") => Effect::Nothing,
            Some("0") => {
                return Err(unsupported(entry, "fridge always moves memory between item sizes"));
            }
            Some(_) => return Err("slab_automove must be between 0 and 2".into()),
        },
        "idle_timeout" => Effect::IdleTimeout(number(
            "Missing numeric argument for idle_timeout",
            "idle_timeout must be a whole number of seconds",
        )?),
        "read_buf_mem_limit" => Effect::ReadBufMemLimitMb(number(
            "Missing read_buf_mem_limit argument",
            "could not parse argument to read_buf_mem_limit",
        )?),
        "ssl_chain_cert" | "ssl_key" | "ssl_ca_cert" => {
            let path = PathBuf::from(value.ok_or_else(|| format!("Missing {name} argument"))?);
            match name {
                "ssl_chain_cert" => Effect::SslChainCert(path),
                "ssl_key" => Effect::SslKey(path),
                _ => Effect::SslCaCert(path),
            }
        }
        // OpenSSL's SSL_VERIFY_NONE; _PEER (a certificate is asked for, checked if shown);
        // _PEER | _FAIL_IF_NO_PEER_CERT (required); and that with _CLIENT_ONCE, which only
        // matters to renegotiation, which TLS 1.3 and rustls do not do.
        "ssl_verify_mode" => match value {
            Some("0") => Effect::SslVerifyMode(TlsAuthClients::No),
            Some("1") => Effect::SslVerifyMode(TlsAuthClients::Optional),
            Some("2" | "3") => Effect::SslVerifyMode(TlsAuthClients::Yes),
            None => return Err("Missing ssl_verify_mode argument".into()),
            Some(_) => return Err("ssl_verify_mode must be 0, 1, 2 or 3".into()),
        },
        // SSL_FILETYPE_PEM; ASN.1 keys are not read.
        "ssl_keyformat" => match value {
            Some("1") => Effect::Nothing,
            _ => return Err(unsupported(entry, "fridge reads PEM keys only (ssl_keyformat=1)")),
        },
        // rustls keeps a cache of 256 sessions for resumption, always.
        "ssl_session_cache" => Effect::Nothing,
        "ssl_min_version" => match value {
            Some("tlsv1.2") => Effect::Nothing, // rustls's own minimum
            _ => {
                return Err(unsupported(
                    entry,
                    "fridge speaks TLS 1.2 and 1.3 (rustls), and its minimum is 1.2",
                ));
            }
        },
        _ => {
            let reason = UNSUPPORTED
                .iter()
                .find(|(n, _)| *n == name)
                .or_else(|| UNSUPPORTED_FAMILIES.iter().find(|(p, _)| name.starts_with(p)))
                .map(|(_, why)| *why);
            return Err(match reason {
                Some(why) => unsupported(entry, why),
                None => format!("Illegal suboption \"{entry}\""),
            });
        }
    })
}

fn unsupported(entry: &str, why: &str) -> String {
    format!("Unsupported suboption \"{entry}\": {why} (see docs/deployment.md)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn honoured_options_and_their_settings() {
        assert_eq!(
            parse("modern,idle_timeout=30,read_buf_mem_limit=64,maxconns_fast").unwrap(),
            [
                Effect::Nothing,
                Effect::IdleTimeout(30),
                Effect::ReadBufMemLimitMb(64),
                Effect::Nothing
            ]
        );
        assert_eq!(parse("slab_reassign,slab_automove=2").unwrap().len(), 2);
        assert!(parse("").unwrap().is_empty(), "memcached accepts an empty list");
        assert_eq!(
            parse("ssl_chain_cert=/c.pem,ssl_key=k.pem,ssl_ca_cert=ca.pem,ssl_verify_mode=1")
                .unwrap(),
            [
                Effect::SslChainCert("/c.pem".into()),
                Effect::SslKey("k.pem".into()),
                Effect::SslCaCert("ca.pem".into()),
                Effect::SslVerifyMode(TlsAuthClients::Optional),
            ]
        );
        for mode in ["2", "3"] {
            let yes = Effect::SslVerifyMode(TlsAuthClients::Yes);
            assert_eq!(parse(&format!("ssl_verify_mode={mode}")).unwrap(), [yes]);
        }
        let nothing = parse("ssl_session_cache,ssl_keyformat=1,ssl_min_version=tlsv1.2").unwrap();
        assert_eq!(nothing, [Effect::Nothing, Effect::Nothing, Effect::Nothing]);
    }

    #[test]
    fn refusals_read_like_memcached() {
        assert_eq!(parse("bogus").unwrap_err(), "Illegal suboption \"bogus\"");
        assert_eq!(parse("modern,,").unwrap_err(), "Illegal suboption \"\"", "as memcached");
        assert_eq!(parse("idle_timeout").unwrap_err(), "Missing numeric argument for idle_timeout");
        assert_eq!(
            parse("read_buf_mem_limit=x").unwrap_err(),
            "could not parse argument to read_buf_mem_limit"
        );
        assert_eq!(parse("slab_automove=3").unwrap_err(), "slab_automove must be between 0 and 2");
        assert_eq!(parse("ssl_verify_mode=4").unwrap_err(), "ssl_verify_mode must be 0, 1, 2 or 3");
        assert_eq!(parse("ssl_key").unwrap_err(), "Missing ssl_key argument");
        assert_eq!(parse("ssl_bogus=1").unwrap_err(), "Illegal suboption \"ssl_bogus=1\"");
        for known in [
            "hashpower=20",
            "no_lru_crawler",
            "ext_path=/x:1G",
            "ssl_ciphers=HIGH",
            "ssl_kernel_tls",
            "ssl_min_version=tlsv1.1",
            "ssl_keyformat=2",
            "slab_automove=0",
        ] {
            let e = parse(known).unwrap_err();
            assert!(e.starts_with(&format!("Unsupported suboption \"{known}\": ")), "{e}");
        }
    }
}
