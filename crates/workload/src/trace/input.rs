//! Opening a trace file's bytes: decompression chosen by the file name's extension.
//!
//! | extension | compression | decoder |
//! |---|---|---|
//! | `.gz` | gzip (concatenated members read in sequence) | `flate2` (pure Rust) |
//! | `.zst`, `.zstd` | Zstandard (concatenated frames read in sequence), as libCacheSim's `.oracleGeneral.bin.zst` | `zstd` (bundled C sources) |
//! | `.xz` | xz (concatenated streams read in sequence) | `liblzma` (bundled C sources) |
//! | anything else | none | — |
//!
//! Every format reads through [`open_input`], so any of them may be compressed: a
//! `.csv.gz`, a `.txt.zst`, a key-only `.trace.xz`. [`Compression::sniff`] tells the
//! compression from the first bytes instead, for input with no name (standard input).
//! [`inner_extension`] gives the extension under the compression one (`bin` for
//! `x.oracleGeneral.bin.zst`), from which callers guess the format.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use crate::error::Error;

/// A trace's bytes, decompressed and buffered.
pub type TraceInput = Box<dyn BufRead + Send>;

/// Read buffer size of trace files and decoders.
const BUF: usize = 1 << 16;

/// How a trace file is compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Plain bytes.
    None,
    /// gzip.
    Gzip,
    /// Zstandard.
    Zstd,
    /// xz.
    Xz,
}

impl Compression {
    /// The compression a file name's last extension says (`.gz`, `.zst`/`.zstd`, `.xz`;
    /// case-insensitive), [`Compression::None`] for any other.
    pub fn from_path(path: &Path) -> Self {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
        match ext.as_str() {
            "gz" => Self::Gzip,
            "zst" | "zstd" => Self::Zstd,
            "xz" => Self::Xz,
            _ => Self::None,
        }
    }

    /// The compression whose magic number `head` starts with (gzip `1f 8b`, Zstandard
    /// `28 b5 2f fd`, xz `fd 37 7a 58 5a 00`), [`Compression::None`] otherwise.
    pub fn sniff(head: &[u8]) -> Self {
        if head.starts_with(&[0x1f, 0x8b]) {
            Self::Gzip
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Self::Zstd
        } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
            Self::Xz
        } else {
            Self::None
        }
    }

    /// The file extension of this compression, with its dot (`""` for none).
    pub const fn extension(self) -> &'static str {
        match self {
            Self::None => "",
            Self::Gzip => ".gz",
            Self::Zstd => ".zst",
            Self::Xz => ".xz",
        }
    }

    /// Wraps `reader` in this compression's decoder.
    ///
    /// # Errors
    /// [`Error::Io`] if the decoder cannot start (Zstandard allocates its context here);
    /// corrupt data surfaces as an [`Error::Io`] item while reading.
    pub fn decode(self, reader: impl Read + Send + 'static) -> Result<TraceInput, Error> {
        let reader = BufReader::with_capacity(BUF, reader);
        Ok(match self {
            Self::None => Box::new(reader),
            Self::Gzip => Box::new(BufReader::with_capacity(
                BUF,
                flate2::bufread::MultiGzDecoder::new(reader),
            )),
            Self::Zstd => Box::new(BufReader::with_capacity(
                BUF,
                zstd::stream::read::Decoder::with_buffer(reader)?,
            )),
            Self::Xz => Box::new(BufReader::with_capacity(
                BUF,
                liblzma::bufread::XzDecoder::new_multi_decoder(reader),
            )),
        })
    }
}

/// Opens `path`, decompressing as its extension says ([`Compression::from_path`]).
///
/// # Errors
/// [`Error::Io`] if the file cannot be opened.
pub fn open_input(path: &Path) -> Result<TraceInput, Error> {
    Compression::from_path(path).decode(File::open(path)?)
}

/// The extension under the compression one, lower-case: `bin` for `a.oracleGeneral.bin.zst`,
/// `csv` for `a.csv`, `""` when there is none.
pub fn inner_extension(path: &Path) -> String {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let inner = match Compression::from_path(path) {
        Compression::None => Path::new(name),
        _ => Path::new(name).file_stem().map_or(Path::new(""), Path::new),
    };
    inner.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase()
}
