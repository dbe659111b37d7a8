//! Commands on part of a string: GETRANGE (SUBSTR), SETRANGE and LCS.

use fridge_engine::{EngineError, Kind, Update};
use fridge_proto::resp::{
    Command, write_array_header, write_bulk, write_error, write_integer, write_map_header,
};

use super::{NOT_INTEGER, SYNTAX, Spec, engine_error, int_arg};
use crate::session::{Ctx, Session};

/// The most cells (`(len(a) + 1) * (len(b) + 1)`) an LCS table may have: 16 Mi cells, 64 MiB
/// of `u32`s and about 70 ms of one worker's time in a release build. Redis builds a table of
/// any size (O(N*M) time and memory, stalling its one thread); fridge refuses larger inputs
/// with [`LCS_TOO_LARGE`] rather than stall a worker's other connections.
pub(crate) const LCS_MAX_CELLS: u64 = 1 << 24;
const LCS_TOO_LARGE: &[u8] = b"ERR LCS inputs too large: (len(a)+1)*(len(b)+1) exceeds \
    fridge's limit of 16777216 table cells";

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.get(i).unwrap_or_default()
}

/// `GETRANGE` and `SUBSTR`: Redis's clamping of negative and out-of-range indexes.
pub(super) fn getrange(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let (Some(start), Some(end)) = (int_arg(arg(cmd, 2)), int_arg(arg(cmd, 3))) else {
        return write_error(out, NOT_INTEGER);
    };
    let found =
        ctx.engine.get_kind(s.tenant, arg(cmd, 1), Kind::STRING, |item| {
            match clamp_range(start, end, item.value.len() as i64) {
                Some((a, b)) => write_bulk(out, &item.value[a..=b]),
                None => write_bulk(out, b""),
            }
        });
    let found = match found {
        Ok(found) => found,
        Err(e) => return engine_error(out, e),
    };
    if found.is_none() {
        write_bulk(out, b"");
    }
}

/// Redis's `getrangeCommand` index arithmetic: the inclusive byte range, or `None` for an
/// empty reply.
fn clamp_range(mut start: i64, mut end: i64, len: i64) -> Option<(usize, usize)> {
    if start < 0 && end < 0 && start > end {
        return None;
    }
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= len {
        end = len - 1;
    }
    if start > end || len == 0 {
        return None;
    }
    Some((start as usize, end as usize))
}

pub(super) fn setrange(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let Some(offset) = int_arg(arg(cmd, 2)) else { return write_error(out, NOT_INTEGER) };
    if offset < 0 {
        return write_error(out, b"ERR offset is out of range");
    }
    let value = arg(cmd, 3);
    let max = ctx.shared.config.max_item_size.bytes();
    let offset = usize::try_from(offset).unwrap_or(usize::MAX);
    let r = ctx.engine.update(s.tenant, arg(cmd, 1), |cur, buf| {
        let old = cur.map_or(&[][..], |c| c.value);
        if value.is_empty() {
            return Ok(Update::Done(old.len()));
        }
        if offset.saturating_add(value.len()) > max {
            return Err(EngineError::TooLarge);
        }
        buf.extend_from_slice(old);
        let end = offset + value.len();
        if buf.len() < end {
            buf.resize(end, 0);
        }
        buf[offset..end].copy_from_slice(value);
        let len = buf.len();
        Ok(Update::Write {
            flags: cur.map_or(0, |c| c.flags),
            expires_at_ms: cur.and_then(|c| c.expires_at_ms),
            result: len,
        })
    });
    match r {
        Ok(n) => write_integer(out, n as i64),
        Err(e) => engine_error(out, e),
    }
}

/// `LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN]`, as Redis 7.0 computes it
/// (the same table, the same walk back, so the same ranges), within [`LCS_MAX_CELLS`].
pub(super) fn lcs(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let t = s.tenant;
    let mut read = |key| ctx.engine.get_kind(t, key, Kind::STRING, |i| i.value.to_vec());
    let (a, b) = match (read(arg(cmd, 1)), read(arg(cmd, 2))) {
        (Ok(a), Ok(b)) => (a.unwrap_or_default(), b.unwrap_or_default()),
        (Err(EngineError::WrongKind), _) | (_, Err(EngineError::WrongKind)) => {
            return write_error(out, b"ERR The specified keys must contain string values");
        }
        (Err(e), _) | (_, Err(e)) => return engine_error(out, e),
    };
    let (mut getlen, mut getidx, mut withmatchlen, mut minmatchlen) = (false, false, false, 0i64);
    let mut j = 3;
    while j < cmd.len() {
        let o = arg(cmd, j);
        let more = cmd.len() - 1 - j;
        if o.eq_ignore_ascii_case(b"idx") {
            getidx = true;
        } else if o.eq_ignore_ascii_case(b"len") {
            getlen = true;
        } else if o.eq_ignore_ascii_case(b"withmatchlen") {
            withmatchlen = true;
        } else if o.eq_ignore_ascii_case(b"minmatchlen") && more > 0 {
            let Some(n) = int_arg(arg(cmd, j + 1)) else { return write_error(out, NOT_INTEGER) };
            minmatchlen = n.max(0);
            j += 1;
        } else {
            return write_error(out, SYNTAX);
        }
        j += 1;
    }
    if getidx && getlen {
        return write_error(
            out,
            b"ERR If you want both the length and indexes, please just use IDX.",
        );
    }
    let (alen, blen) = (a.len(), b.len());
    if (alen as u64 + 1).saturating_mul(blen as u64 + 1) > LCS_MAX_CELLS {
        return write_error(out, LCS_TOO_LARGE);
    }
    let w = blen + 1;
    let mut table = vec![0u32; (alen + 1) * w];
    for (i, &ai) in a.iter().enumerate() {
        // Row i + 1 from row i.
        let (before, rest) = table.split_at_mut((i + 1) * w);
        let prev = &before[i * w..];
        let cur = &mut rest[..w];
        for (j, &bj) in b.iter().enumerate() {
            cur[j + 1] = if ai == bj { prev[j] + 1 } else { prev[j + 1].max(cur[j]) };
        }
    }
    let total = table[alen * w + blen];
    if getlen && !getidx {
        return write_integer(out, i64::from(total));
    }
    let mut result = vec![0u8; total as usize];
    let mut ranges: Vec<[usize; 4]> = Vec::new();
    let (mut i, mut j, mut idx) = (alen, blen, total as usize);
    // (a_start, a_end, b_start, b_end); a_start == alen: no range open.
    let (mut as_, mut ae, mut bs, mut be) = (alen, 0usize, 0usize, 0usize);
    while i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            result[idx - 1] = a[i - 1];
            if as_ == alen {
                (as_, ae, bs, be) = (i - 1, i - 1, j - 1, j - 1);
            } else if as_ == i && bs == j {
                as_ -= 1;
                bs -= 1;
            } else {
                emit = true;
            }
            if as_ == 0 || bs == 0 {
                emit = true;
            }
            idx -= 1;
            i -= 1;
            j -= 1;
        } else {
            if table[(i - 1) * w + j] > table[i * w + j - 1] {
                i -= 1;
            } else {
                j -= 1;
            }
            if as_ != alen {
                emit = true;
            }
        }
        let match_len = ae.wrapping_sub(as_).wrapping_add(1);
        if emit {
            if minmatchlen == 0 || match_len as i64 >= minmatchlen {
                ranges.push([as_, ae, bs, be]);
            }
            as_ = alen;
        }
    }
    if !getidx {
        return write_bulk(out, &result);
    }
    write_map_header(out, s.version, 2);
    write_bulk(out, b"matches");
    write_array_header(out, ranges.len());
    for [as_, ae, bs, be] in ranges {
        write_array_header(out, 2 + usize::from(withmatchlen));
        write_array_header(out, 2);
        write_integer(out, as_ as i64);
        write_integer(out, ae as i64);
        write_array_header(out, 2);
        write_integer(out, bs as i64);
        write_integer(out, be as i64);
        if withmatchlen {
            write_integer(out, (ae - as_ + 1) as i64);
        }
    }
    write_bulk(out, b"len");
    write_integer(out, i64::from(total));
}

#[cfg(test)]
mod tests {
    use super::clamp_range;

    #[test]
    fn getrange_clamps_as_redis() {
        assert_eq!(clamp_range(0, 3, 13), Some((0, 3)));
        assert_eq!(clamp_range(-3, -1, 13), Some((10, 12)));
        assert_eq!(clamp_range(0, -1, 13), Some((0, 12)));
        assert_eq!(clamp_range(10, 100, 13), Some((10, 12)));
        assert_eq!(clamp_range(-1, -5, 13), None);
        assert_eq!(clamp_range(5, 3, 13), None);
        assert_eq!(clamp_range(0, 0, 0), None);
        assert_eq!(clamp_range(-100, 2, 13), Some((0, 2)));
    }
}
