//! Redis's glob-style patterns (`KEYS`, `SCAN … MATCH`, `CONFIG GET`).

/// Case-insensitive [`glob_match`] (`CONFIG GET`'s parameter names).
pub(super) fn glob_match_nocase(pattern: &[u8], s: &[u8]) -> bool {
    glob(pattern, s, true)
}

/// Redis's glob-style matching (`stringmatchlen`): `*`, `?`, `[abc]`, `[^a-z]`, `\x`.
pub(crate) fn glob_match(pattern: &[u8], s: &[u8]) -> bool {
    glob(pattern, s, false)
}

fn glob(pattern: &[u8], s: &[u8], nocase: bool) -> bool {
    let eq = |a: u8, b: u8| if nocase { a.eq_ignore_ascii_case(&b) } else { a == b };
    let (mut p, mut i) = (0, 0);
    // Backtracking point: the last `*` seen and the input position it stood for.
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        let c = s[i];
        let step = match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, i));
                p += 1;
                continue;
            }
            Some(b'?') => Some(1),
            Some(b'[') => class(pattern, p, c, nocase).and_then(|(ok, len)| ok.then_some(len)),
            Some(b'\\') if p + 1 < pattern.len() => eq(pattern[p + 1], c).then_some(2),
            Some(&pc) => eq(pc, c).then_some(1),
            None => None,
        };
        match step {
            Some(len) => {
                p += len;
                i += 1;
            }
            None => match star {
                Some((sp, si)) => {
                    p = sp + 1;
                    i = si + 1;
                    star = Some((sp, si + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p.min(pattern.len())..].iter().all(|&c| c == b'*')
}

/// Matches `c` against the class starting at `pattern[p] == b'['`. Returns whether it
/// matched and the class's length in the pattern.
fn class(pattern: &[u8], p: usize, c: u8, nocase: bool) -> Option<(bool, usize)> {
    let mut j = p + 1;
    let negate = pattern.get(j) == Some(&b'^');
    if negate {
        j += 1;
    }
    let lower = |b: u8| if nocase { b.to_ascii_lowercase() } else { b };
    let c = lower(c);
    let mut matched = false;
    loop {
        let &pc = pattern.get(j)?;
        if pc == b']' {
            break;
        }
        if pc == b'\\' && j + 1 < pattern.len() {
            matched |= lower(pattern[j + 1]) == c;
            j += 2;
        } else if pattern.get(j + 1) == Some(&b'-')
            && j + 2 < pattern.len()
            && pattern[j + 2] != b']'
        {
            let (a, b) = (lower(pc), lower(pattern[j + 2]));
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            matched |= (lo..=hi).contains(&c);
            j += 3;
        } else {
            matched |= lower(pc) == c;
            j += 1;
        }
    }
    Some((matched != negate, j + 1 - p))
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn glob_patterns_match_like_redis() {
        assert!(glob_match(b"*", b"anything"));
        assert!(glob_match(b"h?llo", b"hello"));
        assert!(glob_match(b"h*llo", b"heeeello"));
        assert!(glob_match(b"h[ae]llo", b"hallo"));
        assert!(!glob_match(b"h[^e]llo", b"hello"));
        assert!(glob_match(b"h[a-b]llo", b"hbllo"));
        assert!(glob_match(b"user:*:name", b"user:42:name"));
        assert!(!glob_match(b"user:*:name", b"user:42:age"));
        assert!(glob_match(b"a\\*b", b"a*b"));
        assert!(!glob_match(b"a\\*b", b"axb"));
        assert!(!glob_match(b"[", b"a"), "an unclosed class matches nothing");
        assert!(glob_match(b"", b""));
    }
}
