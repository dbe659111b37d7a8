//! libCacheSim's plain-text (`txt`) traces: one object id per line.
//!
//! As libCacheSim's `txt.c` reads them: empty lines are skipped; with numeric ids
//! (`obj-id-is-num=1`, [`KeyFormat::Integer`]) a line is an unsigned integer in C's
//! `strtoull(…, 0)` notation (decimal, `0x` hexadecimal, or octal with a leading `0`); with
//! text ids ([`KeyFormat::Hashed`]) the whole line, without its newline, is the id. Two
//! differences, both stated: libCacheSim numbers text ids in order of first appearance
//! (`g_quark_from_string`) where this reader hashes them (the same text always gives the
//! same id, and no cache result depends on the id's value), and this reader rejects a line
//! with anything after the number, which `strtoull` would silently drop.
//!
//! The format has no sizes, times or operations: every request is a `get` of tenant 0 at
//! time 0 whose object size is 1 byte (libCacheSim's default `obj_size` for such traces), or
//! comes from a [`SizeModel`] when one is given.

use std::io::BufRead;

use super::csv::{KeyFormat, hash_key};
use super::keyonly::SizeModel;
use crate::error::Error;
use crate::request::Request;

/// Streaming reader of one-id-per-line traces.
#[derive(Debug)]
pub struct TxtReader<R> {
    reader: R,
    key_format: KeyFormat,
    sizes: Option<SizeModel>,
    line: String,
    line_no: u64,
    done: bool,
}

impl<R: BufRead> TxtReader<R> {
    /// Reads ids from `reader`; sizes from `sizes`, or 1 byte each when `None`.
    pub fn new(reader: R, key_format: KeyFormat, sizes: Option<SizeModel>) -> Self {
        Self { reader, key_format, sizes, line: String::new(), line_no: 0, done: false }
    }

    fn read_one(&mut self) -> Result<Option<Request>, Error> {
        let text = loop {
            self.line.clear();
            if self.reader.read_line(&mut self.line)? == 0 {
                return Ok(None);
            }
            self.line_no += 1;
            let text = self.line.trim_end_matches(['\n', '\r']);
            if !text.is_empty() {
                break text;
            }
        };
        let key = match self.key_format {
            KeyFormat::Integer => parse_strtoull(text.trim()).ok_or_else(|| {
                Error::parse(
                    self.line_no,
                    format!("bad numeric object id {text:?} (text ids need hashed keys)"),
                )
            })?,
            KeyFormat::Hashed => hash_key(text.as_bytes()),
        };
        Ok(Some(match &self.sizes {
            None => Request::get(key, 1),
            Some(model) => {
                let (key_size, value_size) = model.sizes(key);
                Request { key_size, ..Request::get(key, value_size) }
            }
        }))
    }
}

/// An unsigned integer as C's `strtoull(s, _, 0)` reads a whole string: `0x`/`0X` then hex
/// digits, a leading `0` then octal digits, or decimal digits; `None` otherwise.
fn parse_strtoull(s: &str) -> Option<u64> {
    let s = s.strip_prefix('+').unwrap_or(s);
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()
    } else if s.len() > 1 && s.starts_with('0') {
        u64::from_str_radix(&s[1..], 8).ok()
    } else {
        s.parse().ok()
    }
}

impl<R: BufRead> Iterator for TxtReader<R> {
    type Item = Result<Request, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        // Requests until the end or the first error, then nothing.
        let item = if self.done { None } else { self.read_one().transpose() };
        self.done = !matches!(item, Some(Ok(_)));
        item
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(text: &str, format: KeyFormat) -> Result<Vec<u64>, Error> {
        TxtReader::new(text.as_bytes(), format, None).map(|r| r.map(|r| r.key)).collect()
    }

    #[test]
    fn numeric_ids_in_strtoull_notation() {
        // Decimal, hex, octal (leading 0), a lone 0, CRLF and blank lines skipped.
        let got = keys("1\n0x10\n\n010\r\n0\n 42 \n", KeyFormat::Integer).unwrap();
        assert_eq!(got, [1, 16, 8, 0, 42]);
        let r = TxtReader::new("7\n".as_bytes(), KeyFormat::Integer, None).next().unwrap().unwrap();
        assert_eq!((r.object_size(), r.tenant, r.time_ms), (1, 0, 0), "1-byte objects");
    }

    #[test]
    fn text_ids_hash_the_whole_line_and_numbers_reject_text() {
        let got = keys("a b\nc\na b\n", KeyFormat::Hashed).unwrap();
        assert_eq!(got[0], got[2]);
        assert_ne!(got[0], got[1]);
        let err = keys("1\nabc\n", KeyFormat::Integer).unwrap_err();
        assert!(matches!(err, Error::Parse { record: 2, .. }), "{err}");
        assert!(keys("12x\n", KeyFormat::Integer).is_err(), "trailing text is rejected");
    }

    #[test]
    fn a_size_model_gives_sizes_per_key() {
        let model = SizeModel::fixed(16, 100);
        let r = TxtReader::new("5\n".as_bytes(), KeyFormat::Integer, Some(model)).next();
        assert_eq!(r.unwrap().unwrap().object_size(), 116);
    }
}
