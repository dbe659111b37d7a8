//! Command-line spellings of `fridge-workload`'s distributions.
//!
//! | option | spellings |
//! |---|---|
//! | popularity | `uniform`, `zipf:<theta>` (scrambled), `zipf-ranked:<theta>`, `hotspot:<hot keys>:<hot ops>`, `latest:<theta>` |
//! | sizes | `<bytes>`, `uniform:<min>:<max>`, `etc` (Facebook ETC values), `etc-key`, `thesis` (10 B/300 B/1 MB at 50/45/5%), `sizes:<bytes>=<weight>,…` |
//! | ops | `<get fraction>` such as `0.9`, or `get=<w>,set=<w>,delete=<w>` |
//! | ttl | `none`, `<seconds>`, `ttl:<seconds or none>=<weight>,…` |

use fridge_workload::{Op, OpMix, Popularity, SizeDist, TtlDist};

fn number<T: std::str::FromStr>(s: &str, what: &str) -> Result<T, String> {
    s.trim().parse().map_err(|_| format!("{what}: {s:?} is not a number"))
}

fn pairs(list: &str) -> impl Iterator<Item = Result<(&str, f64), String>> {
    list.split(',').map(|pair| {
        let (name, weight) =
            pair.split_once('=').ok_or_else(|| format!("{pair:?}: expected name=weight"))?;
        Ok((name.trim(), number(weight, "weight")?))
    })
}

/// Parses a popularity spelling.
///
/// # Errors
/// A message naming the bad part.
pub fn popularity(s: &str) -> Result<Popularity, String> {
    let mut parts = s.split(':');
    let kind = parts.next().unwrap_or_default();
    let mut arg = |name: &str| -> Result<f64, String> {
        number(parts.next().ok_or_else(|| format!("{s}: missing {name}"))?, name)
    };
    Ok(match kind {
        "uniform" => Popularity::Uniform,
        "zipf" => Popularity::Zipf { theta: arg("theta")?, scrambled: true },
        "zipf-ranked" => Popularity::Zipf { theta: arg("theta")?, scrambled: false },
        "hotspot" => Popularity::Hotspot { hot_keys: arg("hot keys")?, hot_ops: arg("hot ops")? },
        "latest" => Popularity::Latest { theta: arg("theta")? },
        _ => return Err(format!("unknown popularity {s:?}")),
    })
}

/// Parses a size spelling.
///
/// # Errors
/// A message naming the bad part.
pub fn size(s: &str) -> Result<SizeDist, String> {
    if let Ok(bytes) = s.parse::<u32>() {
        return Ok(SizeDist::Fixed(bytes));
    }
    let (kind, rest) = s.split_once(':').unwrap_or((s, ""));
    match kind {
        "etc" => Ok(SizeDist::facebook_etc_value()),
        "etc-key" => Ok(SizeDist::facebook_etc_key()),
        "thesis" => Ok(SizeDist::thesis_mix()),
        "uniform" => {
            let (min, max) = rest.split_once(':').ok_or("uniform:<min>:<max>")?;
            SizeDist::uniform(number(min, "min")?, number(max, "max")?).map_err(|e| e.to_string())
        }
        "sizes" => {
            let sizes = pairs(rest)
                .map(|p| p.and_then(|(size, w)| Ok((number::<u32>(size, "size")?, w))))
                .collect::<Result<Vec<_>, _>>()?;
            SizeDist::empirical(sizes).map_err(|e| e.to_string())
        }
        _ => Err(format!("unknown size distribution {s:?}")),
    }
}

/// Parses an operation mix.
///
/// # Errors
/// A message naming the bad part.
pub fn ops(s: &str) -> Result<OpMix, String> {
    if let Ok(get) = s.parse::<f64>() {
        return OpMix::get_set(get).map_err(|e| e.to_string());
    }
    let ops = pairs(s)
        .map(|p| {
            p.and_then(|(name, w)| {
                let op =
                    Op::from_name(name).ok_or_else(|| format!("unknown operation {name:?}"))?;
                Ok((op, w))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    OpMix::new(ops).map_err(|e| e.to_string())
}

/// Parses a TTL distribution.
///
/// # Errors
/// A message naming the bad part.
pub fn ttl(s: &str) -> Result<TtlDist, String> {
    if s == "none" {
        return Ok(TtlDist::None);
    }
    if let Ok(secs) = s.parse::<u32>() {
        return Ok(TtlDist::Fixed(secs));
    }
    let rest = s.strip_prefix("ttl:").ok_or_else(|| format!("unknown ttl {s:?}"))?;
    let ttls = pairs(rest)
        .map(|p| {
            p.and_then(|(t, w)| {
                let ttl = if t == "none" { None } else { Some(number::<u32>(t, "ttl")?) };
                Ok((ttl, w))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    TtlDist::mix(ttls).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_parse() {
        assert_eq!(popularity("zipf:0.99"), Ok(Popularity::Zipf { theta: 0.99, scrambled: true }));
        assert_eq!(popularity("uniform"), Ok(Popularity::Uniform));
        assert!(popularity("zipf").is_err() && popularity("pareto:1").is_err());
        assert_eq!(size("32"), Ok(SizeDist::Fixed(32)));
        assert_eq!(size("thesis"), Ok(SizeDist::thesis_mix()));
        assert_eq!(size("etc"), Ok(SizeDist::facebook_etc_value()));
        assert!(size("sizes:10=0.5,300=0.45").is_ok() && size("sizes:10").is_err());
        assert_eq!(ops("0.9"), OpMix::get_set(0.9).map_err(|e| e.to_string()));
        assert!(ops("get=9,set=1,delete=0.1").is_ok() && ops("frob=1").is_err());
        assert_eq!(ttl("none"), Ok(TtlDist::None));
        assert_eq!(ttl("60"), Ok(TtlDist::Fixed(60)));
        assert!(ttl("ttl:60=3,none=1").is_ok() && ttl("x").is_err());
    }
}
