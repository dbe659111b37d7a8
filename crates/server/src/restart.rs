//! Warm restart (`--restart-file PATH`, memcached's `-e`/`--memory-file`): a graceful stop
//! writes every live item to a snapshot file, and the next start loads it, so a restart keeps
//! the cache.
//!
//! memcached's restartable cache (its wiki, "WarmRestart"; `-e /tmpfs/memory_file`) keeps item
//! memory in a file-backed mapping on tmpfs and, at a graceful stop, writes a metadata file
//! beside it; the next start maps the same memory back and rebuilds its hash table from the
//! items. fridge writes a snapshot instead: its items live in anonymous huge-page segments
//! whose records hold segment-relative times and whose index holds raw locations, so a
//! restored mapping would need its index, hitmap, queues and tenant accounts rebuilt anyway,
//! and would tie the file to the segment size and memory size of the run that wrote it. A
//! snapshot is a walk of the index and large sequential writes; the load is the engine's
//! normal store path, which rebuilds the index, the eviction queues and every tenant's
//! accounting by itself. `docs/design.md` ("Warm restart") has the measured rates.
//!
//! What survives: every live item of every tenant (by name) and database (by its logical
//! number, so a `SWAPDB` is kept), its value and kind (strings and every Redis type), client
//! flags, absolute expiry (an item's TTL shrinks by the downtime; one that expired meanwhile
//! is not loaded), CAS (the engine's counter resumes above every restored CAS) and meta
//! protocol state bits. Hashes with field deadlines are registered with the active field
//! expiry again (`crate::field_expiry`).
//!
//! Safety of the data: the file is written to `PATH.tmp` and renamed into place only once
//! complete, and removed at start as soon as it is opened, so a later crash (SIGKILL, OOM
//! kill) starts empty rather than from a stale snapshot. The header and every block carry an
//! xxh3 checksum and the trailer chains all of them: a damaged, truncated or foreign file, or
//! one written under settings that change what an item may be (`max_item_size`, the number of
//! databases), starts the server empty with one log line saying why. Nothing is fsynced: the
//! file is for a process restart (the page cache outlives the process); after a machine crash
//! a half-written file fails its checksums.
//!
//! The format (integers little-endian):
//!
//! ```text
//!  file:    │ header │ block │ block │ … │ trailer │
//!
//!  header:  │ magic "FRIDGERS" │ version u32 │ body len u32 │ body │ xxh3(magic…body) u64 │
//!  body:    │ saved at ms u64 │ CAS high u64 │ max_item_size u64 │ databases u8 │
//!           │ tenants u16 │ { id u16 │ name len u8 │ name } × tenants │
//!
//!  block:   │ "BLK1" │ payload len u32 │ records u32 │ xxh3(payload) u64 │ payload │
//!  payload: │ record │ record │ … │            (about BLOCK_BYTES, at least one record)
//!
//!  record:  0        2    3      4       5       9              17      25        29         33
//!           ├ tenant ┼ db ┼ kind ┼ state ┼ flags ┼─ expires at ─┼─ cas ─┼ key len ┼ value len ┼ key │ value
//!           │  u16   │ u8 │ u8   │ u8    │ u32   │ u64, 0 never │ u64   │ u32     │ u32       │
//!
//!  trailer: │ "END1" │ 0 u32 │ records u64 │ chain u64 │
//!           chain = xxh3 of the block checksums in order, seeded by the header's
//! ```
//!
//! `tenant` is the id the tenant had when the file was written; the header's table names it,
//! and the load finds the tenant of that name now (items of a tenant no longer configured are
//! dropped). `db` is the logical database.
//!
//! Version 1 (written before tenant ids were wider than a byte) is version 2 with every tenant
//! id one byte: in the header's table and in each record (whose header is then 32 bytes). A
//! build reads both and writes version 2.
//!
//! The load runs before any worker: the calling thread reads blocks and checks them, and one
//! loader thread per worker (at most [`MAX_LOADERS`]) stores their records through its own
//! engine handle. A load that meets damage after it has stored items (a bad block further on)
//! flushes what it stored: the server starts empty, never with part of a damaged file.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use fridge_engine::item::MAX_TENANTS;
use fridge_engine::{Condition, Expiry, Kind, Store, TenantId};
use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};

use crate::shared::Shared;

const MAGIC: &[u8; 8] = b"FRIDGERS";
const VERSION: u32 = 2;
/// The format whose tenant ids are one byte; still read.
const VERSION_NARROW_IDS: u32 = 1;
const BLOCK_TAG: &[u8; 4] = b"BLK1";
const END_TAG: &[u8; 4] = b"END1";
/// Payload bytes after which a block is closed (a block holds at least one record, so one
/// with a large value may be longer).
const BLOCK_BYTES: usize = 1 << 20;
/// Bytes of a record before its key (one less in version 1).
const RECORD_HEADER: usize = 33;
/// Bytes of a block's header and of the trailer.
const BLOCK_HEADER: usize = 20;
const TRAILER: usize = 24;
/// The longest payload or header body a reader accepts (a damaged length must not make it
/// allocate without bound).
const MAX_CHUNK: usize = 1 << 30;
/// Index positions a save walks per step.
const WALK_STEP: usize = 4096;

/// The settings a snapshot must share with the start that loads it, and its tenant table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Header {
    /// When the snapshot was written (ms since the Unix epoch).
    pub saved_at_ms: u64,
    /// The engine's highest CAS value then.
    pub cas_high: u64,
    /// `max_item_size` of the run that wrote it.
    pub max_item_size: u64,
    /// Databases per tenant of that run.
    pub databases: u8,
    /// Tenant ids and names of that run.
    pub tenants: Vec<(u16, String)>,
}

/// One item as the file holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Record<'a> {
    pub tenant: u16,
    pub db: u8,
    pub kind: Kind,
    pub state: u8,
    pub flags: u32,
    /// Absolute expiry (ms), `None` for never.
    pub expires_at_ms: Option<u64>,
    pub cas: u64,
    pub key: &'a [u8],
    pub value: &'a [u8],
}

/// Why a file cannot be loaded (each becomes the start's one log line).
#[derive(Debug)]
pub(crate) enum LoadError {
    Io(io::Error),
    /// Not a snapshot of this format, or damaged (the reason).
    Damaged(String),
    /// Written under settings that differ in what matters (the difference).
    Mismatch(String),
}

impl From<io::Error> for LoadError {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            LoadError::Damaged("truncated".into())
        } else {
            LoadError::Io(e)
        }
    }
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Io(e) => write!(f, "cannot read or remove it: {e}"),
            LoadError::Damaged(why) => write!(f, "it is damaged ({why})"),
            LoadError::Mismatch(why) => write!(f, "it was written with other settings ({why})"),
        }
    }
}

/// Writes a snapshot: [`Writer::new`] (the header), [`Writer::record`] for each item, then
/// [`Writer::finish`].
pub(crate) struct Writer<W: Write> {
    out: W,
    payload: Vec<u8>,
    in_block: u32,
    chain: u64,
    records: u64,
    bytes: u64,
}

impl<W: Write> Writer<W> {
    /// Starts a snapshot with `header`.
    pub fn new(mut out: W, header: &Header) -> io::Result<Self> {
        let mut bytes = Vec::with_capacity(128);
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&VERSION.to_le_bytes());
        let mut body = Vec::new();
        body.extend_from_slice(&header.saved_at_ms.to_le_bytes());
        body.extend_from_slice(&header.cas_high.to_le_bytes());
        body.extend_from_slice(&header.max_item_size.to_le_bytes());
        body.push(header.databases);
        body.extend_from_slice(&(header.tenants.len() as u16).to_le_bytes());
        for (id, name) in &header.tenants {
            let name = &name.as_bytes()[..name.len().min(255)];
            body.extend_from_slice(&id.to_le_bytes());
            body.push(name.len() as u8);
            body.extend_from_slice(name);
        }
        bytes.extend_from_slice(&(body.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&body);
        let sum = xxh3_64(&bytes);
        bytes.extend_from_slice(&sum.to_le_bytes());
        out.write_all(&bytes)?;
        Ok(Writer {
            out,
            payload: Vec::with_capacity(BLOCK_BYTES + RECORD_HEADER + 256),
            in_block: 0,
            chain: sum,
            records: 0,
            bytes: bytes.len() as u64,
        })
    }

    /// Appends one item.
    pub fn record(&mut self, r: &Record<'_>) -> io::Result<()> {
        let p = &mut self.payload;
        p.extend_from_slice(&r.tenant.to_le_bytes());
        p.extend_from_slice(&[r.db, r.kind.0, r.state]);
        p.extend_from_slice(&r.flags.to_le_bytes());
        p.extend_from_slice(&r.expires_at_ms.unwrap_or(0).to_le_bytes());
        p.extend_from_slice(&r.cas.to_le_bytes());
        p.extend_from_slice(&(r.key.len() as u32).to_le_bytes());
        p.extend_from_slice(&(r.value.len() as u32).to_le_bytes());
        p.extend_from_slice(r.key);
        p.extend_from_slice(r.value);
        self.in_block += 1;
        self.records += 1;
        if self.payload.len() >= BLOCK_BYTES {
            self.flush_block()?;
        }
        Ok(())
    }

    fn flush_block(&mut self) -> io::Result<()> {
        if self.in_block == 0 {
            return Ok(());
        }
        let sum = xxh3_64(&self.payload);
        let mut head = [0u8; BLOCK_HEADER];
        head[..4].copy_from_slice(BLOCK_TAG);
        head[4..8].copy_from_slice(&(self.payload.len() as u32).to_le_bytes());
        head[8..12].copy_from_slice(&self.in_block.to_le_bytes());
        head[12..20].copy_from_slice(&sum.to_le_bytes());
        self.out.write_all(&head)?;
        self.out.write_all(&self.payload)?;
        self.bytes += (BLOCK_HEADER + self.payload.len()) as u64;
        self.chain = xxh3_64_with_seed(&sum.to_le_bytes(), self.chain);
        self.payload.clear();
        self.in_block = 0;
        Ok(())
    }

    /// Writes the last block and the trailer; returns the writer, the records and the bytes
    /// written.
    pub fn finish(mut self) -> io::Result<(W, u64, u64)> {
        self.flush_block()?;
        let mut t = [0u8; TRAILER];
        t[..4].copy_from_slice(END_TAG);
        t[8..16].copy_from_slice(&self.records.to_le_bytes());
        t[16..24].copy_from_slice(&self.chain.to_le_bytes());
        self.out.write_all(&t)?;
        self.out.flush()?;
        Ok((self.out, self.records, self.bytes + TRAILER as u64))
    }
}

/// Reads a snapshot: [`Reader::new`] checks the header, [`Reader::next_block`] hands out each
/// block once its checksum holds, and reports the trailer's verdict at the end.
pub(crate) struct Reader<R: Read> {
    input: R,
    header: Header,
    ids: Ids,
    chain: u64,
    records: u64,
}

/// How wide a file's tenant ids are: one byte in version 1, two since.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ids {
    Narrow,
    Wide,
}

impl Ids {
    fn of(version: u32) -> Option<Ids> {
        match version {
            VERSION => Some(Ids::Wide),
            VERSION_NARROW_IDS => Some(Ids::Narrow),
            _ => None,
        }
    }

    /// Bytes of a tenant id.
    fn len(self) -> usize {
        match self {
            Ids::Narrow => 1,
            Ids::Wide => 2,
        }
    }

    /// The id at the start of `b` (which holds at least [`Ids::len`] bytes).
    fn read(self, b: &[u8]) -> u16 {
        match self {
            Ids::Narrow => u16::from(b[0]),
            Ids::Wide => u16::from_le_bytes([b[0], b[1]]),
        }
    }
}

/// One block whose checksum and record bounds held: [`Block::records`] reads it.
#[derive(Debug)]
pub(crate) struct Block(Vec<u8>, Ids);

impl Block {
    /// The block's records.
    pub fn records(&self) -> Records<'_> {
        Records { payload: &self.0, ids: self.1, at: 0 }
    }
}

fn damaged(why: impl Into<String>) -> LoadError {
    LoadError::Damaged(why.into())
}

fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes(b[..4].try_into().expect("four bytes"))
}

fn le_u64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b[..8].try_into().expect("eight bytes"))
}

impl<R: Read> Reader<R> {
    /// Reads and checks the header.
    pub fn new(mut input: R) -> Result<Self, LoadError> {
        let mut start = [0u8; 16];
        input.read_exact(&mut start)?;
        if &start[..8] != MAGIC {
            return Err(damaged("not a fridge restart file"));
        }
        let version = le_u32(&start[8..]);
        let Some(ids) = Ids::of(version) else {
            return Err(LoadError::Mismatch(format!(
                "format version {version}, this build reads {VERSION_NARROW_IDS} and {VERSION}"
            )));
        };
        let len = le_u32(&start[12..]) as usize;
        if len > MAX_CHUNK {
            return Err(damaged("header length"));
        }
        let mut rest = vec![0u8; len + 8];
        input.read_exact(&mut rest)?;
        let (body, sum) = rest.split_at(len);
        let mut all = start.to_vec();
        all.extend_from_slice(body);
        let chain = xxh3_64(&all);
        if chain != le_u64(sum) {
            return Err(damaged("header checksum"));
        }
        let header = parse_header(body, ids).ok_or_else(|| damaged("header fields"))?;
        Ok(Reader { input, header, ids, chain, records: 0 })
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The next block, checked against its checksum; `Ok(None)` at a trailer that agrees
    /// with everything read.
    pub fn next_block(&mut self) -> Result<Option<Block>, LoadError> {
        let mut head = [0u8; BLOCK_HEADER];
        self.input.read_exact(&mut head[..4])?;
        if &head[..4] == END_TAG {
            let mut t = [0u8; TRAILER - 4];
            self.input.read_exact(&mut t)?;
            if le_u32(&t) != 0 || le_u64(&t[4..]) != self.records || le_u64(&t[12..]) != self.chain
            {
                return Err(damaged("the trailer disagrees with the blocks"));
            }
            let mut extra = [0u8; 1];
            if self.input.read(&mut extra)? != 0 {
                return Err(damaged("bytes after the trailer"));
            }
            return Ok(None);
        }
        if &head[..4] != BLOCK_TAG {
            return Err(damaged(format!("no block at record {}", self.records)));
        }
        self.input.read_exact(&mut head[4..])?;
        let len = le_u32(&head[4..]) as usize;
        let count = le_u32(&head[8..]);
        if len > MAX_CHUNK {
            return Err(damaged("block length"));
        }
        let mut payload = vec![0u8; len];
        self.input.read_exact(&mut payload)?;
        let sum = le_u64(&head[12..]);
        if xxh3_64(&payload) != sum {
            return Err(damaged(format!("block checksum, after {} records", self.records)));
        }
        // The records must fill the payload exactly, `count` of them.
        let mut n = 0u32;
        let mut at = 0;
        while at < len {
            at = next_record(&payload, self.ids, at).ok_or_else(|| damaged("record bounds"))?.1;
            n += 1;
        }
        if n != count {
            return Err(damaged("record count of a block"));
        }
        self.chain = xxh3_64_with_seed(&sum.to_le_bytes(), self.chain);
        self.records += u64::from(count);
        Ok(Some(Block(payload, self.ids)))
    }
}

/// The records of one checked block.
pub(crate) struct Records<'a> {
    payload: &'a [u8],
    ids: Ids,
    at: usize,
}

impl<'a> Iterator for Records<'a> {
    type Item = Record<'a>;

    fn next(&mut self) -> Option<Record<'a>> {
        let (r, next) = next_record(self.payload, self.ids, self.at)?;
        self.at = next;
        Some(r)
    }
}

/// The record at `at` of `payload` and where the next begins; `None` past the end or for a
/// record that does not fit.
fn next_record(payload: &[u8], ids: Ids, at: usize) -> Option<(Record<'_>, usize)> {
    let header_len = RECORD_HEADER - 2 + ids.len();
    let whole = payload.get(at..at.checked_add(header_len)?)?;
    let tenant = ids.read(whole);
    // The rest is laid out alike in both versions.
    let h = &whole[ids.len()..];
    let key_len = le_u32(&h[23..]) as usize;
    let value_len = le_u32(&h[27..]) as usize;
    let key_at = at + header_len;
    let value_at = key_at.checked_add(key_len)?;
    let end = value_at.checked_add(value_len)?;
    let expires = le_u64(&h[7..]);
    let r = Record {
        tenant,
        db: h[0],
        kind: Kind(h[1]),
        state: h[2],
        flags: le_u32(&h[3..]),
        expires_at_ms: (expires != 0).then_some(expires),
        cas: le_u64(&h[15..]),
        key: payload.get(key_at..value_at)?,
        value: payload.get(value_at..end)?,
    };
    Some((r, end))
}

fn parse_header(body: &[u8], ids: Ids) -> Option<Header> {
    let fixed = body.get(..27)?;
    let count = u16::from_le_bytes([fixed[25], fixed[26]]) as usize;
    let mut tenants = Vec::with_capacity(count);
    let mut at = 27;
    for _ in 0..count {
        let id = ids.read(body.get(at..at + ids.len())?);
        at += ids.len();
        let len = usize::from(*body.get(at)?);
        let name = body.get(at + 1..at + 1 + len)?;
        tenants.push((id, String::from_utf8(name.to_vec()).ok()?));
        at += 1 + len;
    }
    (at == body.len()).then_some(Header {
        saved_at_ms: le_u64(fixed),
        cas_high: le_u64(&fixed[8..]),
        max_item_size: le_u64(&fixed[16..]),
        databases: fixed[24],
        tenants,
    })
}

/// `PATH.tmp`, where a snapshot is written before it is renamed to `PATH`.
fn temporary(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".tmp");
    PathBuf::from(s)
}

/// What a save wrote.
#[derive(Debug)]
pub(crate) struct Saved {
    pub records: u64,
    pub bytes: u64,
}

/// Writes every live item of the server to `path` (through `PATH.tmp`). Called once the
/// workers have stopped, so nothing writes meanwhile (the cleaner may still move items: one
/// moved during the walk may be written twice, and loads as one).
pub(crate) fn save(shared: &Shared, path: &Path) -> io::Result<Saved> {
    let engine = &shared.engine;
    let tenants = shared.tenants();
    let header = Header {
        saved_at_ms: shared.clock.now_ms(),
        cas_high: engine.cas_high(),
        max_item_size: shared.config.max_item_size.0,
        databases: shared.config.databases,
        tenants: tenants.iter().map(|(id, e)| (id.0, e.name.clone())).collect(),
    };
    let tmp = temporary(path);
    let file = File::create(&tmp)?;
    // Unbuffered: the writer hands over whole blocks.
    let mut writer = Writer::new(file, &header)?;
    let mut worker = engine.worker().map_err(|e| io::Error::other(e.to_string()))?;
    let mut failed: Option<io::Error> = None;
    let mut cursor = 0;
    loop {
        cursor = worker.walk_bounded(None, cursor, WALK_STEP, |m| {
            if failed.is_some() || !tenants.is_live(m.tenant) {
                return;
            }
            let record = Record {
                tenant: m.tenant.0,
                db: shared.databases.logical(m.tenant, m.db),
                kind: m.kind,
                state: m.state,
                flags: m.flags,
                expires_at_ms: m.expires_at_ms,
                cas: m.cas,
                key: m.key,
                value: m.value,
            };
            if let Err(e) = writer.record(&record) {
                failed = Some(e);
            }
        });
        if cursor == 0 || failed.is_some() {
            break;
        }
    }
    if let Some(e) = failed {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    let (_, records, bytes) = writer.finish()?;
    std::fs::rename(&tmp, path)?;
    Ok(Saved { records, bytes })
}

/// What a load did.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    /// Records in the file.
    pub records: u64,
    /// Items in the cache after the load.
    pub restored: u64,
    /// Records that expired during the downtime.
    pub expired: u64,
    /// Records of a tenant no longer configured, a database beyond `databases`, or (in
    /// cluster mode) a slot this node does not serve.
    pub unplaced: u64,
    /// Seconds between the save and this start.
    pub downtime_s: u64,
}

/// Loads the snapshot at `path` into the server's (empty) engine, removing the file first.
/// `Ok(None)` when there is none. On an error the engine is left empty.
pub(crate) fn load(shared: &Shared, path: &Path) -> Result<Option<Loaded>, LoadError> {
    let _ = std::fs::remove_file(temporary(path)); // a save cut short
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(LoadError::Io(e)),
    };
    // Gone from now on: a crash during or after this start must not find it again.
    std::fs::remove_file(path)?;
    // Unbuffered: blocks are read whole into their own buffers.
    let mut reader = Reader::new(file)?;
    let header = reader.header().clone();
    let config = &shared.config;
    if header.max_item_size != config.max_item_size.0 || header.databases != config.databases {
        return Err(LoadError::Mismatch(format!(
            "max_item_size={} databases={}, now max_item_size={} databases={}",
            header.max_item_size, header.databases, config.max_item_size.0, config.databases
        )));
    }
    let tenants = shared.tenants();
    // By the file's tenant id: the id of the tenant of that name now.
    let len = header.tenants.iter().map(|(id, _)| usize::from(*id) + 1).max().unwrap_or(0);
    let mut ids: Vec<Option<TenantId>> = vec![None; len];
    for (id, name) in &header.tenants {
        ids[usize::from(*id)] = tenants.find(name.as_bytes());
    }
    let engine = &shared.engine;
    let now = shared.clock.now_ms();
    // The reader checks blocks here and hands them to a loader per worker (the stores are
    // most of the time: the fresh arena's pages are faulted in and zeroed by them).
    let loaders = config.worker_count().clamp(1, MAX_LOADERS);
    let (tx, rx) = std::sync::mpsc::sync_channel::<Block>(2 * loaders);
    let rx = std::sync::Mutex::new(rx);
    let (read, tallies) = std::thread::scope(|scope| {
        let handles: Vec<_> =
            (0..loaders).map(|_| scope.spawn(|| load_blocks(shared, &ids, &rx, now))).collect();
        let read = (|| -> Result<(), LoadError> {
            while let Some(block) = reader.next_block()? {
                if tx.send(block).is_err() {
                    break; // every loader failed: their error says why
                }
            }
            Ok(())
        })();
        drop(tx);
        let tallies: Vec<_> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(io::Error::other("a loader panicked"))))
            .collect();
        (read, tallies)
    });
    let mut total = Tally::default();
    let mut failed = read.err();
    for t in tallies {
        match t {
            Ok(t) => total.add(&t),
            Err(e) => failed = failed.or(Some(LoadError::Io(e))),
        }
    }
    engine.raise_cas_floor(total.cas_high.max(header.cas_high));
    if let Some(e) = failed {
        // Part of a damaged file: drop what was stored of it.
        if let Ok(mut worker) = engine.worker() {
            for (t, _) in total.touched.iter().enumerate().filter(|(_, t)| **t) {
                worker.flush(TenantId(t as u16), 0);
            }
        }
        return Err(e);
    }
    Ok(Some(Loaded {
        records: total.records,
        restored: engine.stats().items,
        expired: total.expired,
        unplaced: total.unplaced,
        downtime_s: now.saturating_sub(header.saved_at_ms) / 1000,
    }))
}

/// Threads that store a snapshot's records at start, at most.
const MAX_LOADERS: usize = 8;

/// What one loader did.
#[derive(Debug)]
struct Tally {
    records: u64,
    expired: u64,
    unplaced: u64,
    cas_high: u64,
    /// The tenants it stored items of (by id now).
    touched: Vec<bool>,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            records: 0,
            expired: 0,
            unplaced: 0,
            cas_high: 0,
            touched: vec![false; MAX_TENANTS],
        }
    }
}

impl Tally {
    fn add(&mut self, other: &Tally) {
        self.records += other.records;
        self.expired += other.expired;
        self.unplaced += other.unplaced;
        self.cas_high = self.cas_high.max(other.cas_high);
        for (t, o) in self.touched.iter_mut().zip(&other.touched) {
            *t |= o;
        }
    }
}

/// A loader: stores the records of the blocks it takes from `blocks` until there are none,
/// skipping those that expired during the downtime and those of tenants (`ids`: the file's
/// tenant id → the id of the tenant of that name now), databases or cluster slots no longer
/// configured here.
fn load_blocks(
    shared: &Shared,
    ids: &[Option<TenantId>],
    blocks: &std::sync::Mutex<std::sync::mpsc::Receiver<Block>>,
    now: u64,
) -> io::Result<Tally> {
    let mut worker = shared.engine.worker().map_err(|e| io::Error::other(e.to_string()))?;
    let mut tally = Tally::default();
    // In cluster mode, keys of slots this node no longer serves stay behind.
    let slots = shared.cluster.as_ref().map(crate::cluster::Cluster::map);
    let served =
        |key: &[u8]| slots.as_ref().is_none_or(|map| map.serves(crate::cluster::key_slot(key)));
    loop {
        let next = blocks.lock().unwrap_or_else(|e| e.into_inner()).recv();
        let Ok(block) = next else { return Ok(tally) };
        for r in block.records() {
            tally.records += 1;
            let Some(tenant) = ids.get(usize::from(r.tenant)).copied().flatten() else {
                tally.unplaced += 1;
                continue;
            };
            if r.db >= shared.config.databases || !served(r.key) {
                tally.unplaced += 1;
                continue;
            }
            if r.expires_at_ms.is_some_and(|at| at <= now) {
                tally.expired += 1;
                continue;
            }
            tally.cas_high = tally.cas_high.max(r.cas);
            tally.touched[usize::from(tenant.0)] = true;
            worker.select(r.db);
            let stored = worker.store(Store {
                tenant,
                key: r.key,
                value: r.value,
                flags: r.flags,
                expiry: r.expires_at_ms.map_or(Expiry::Never, Expiry::At),
                condition: Condition::Always,
                cas: Some(r.cas),
                state: r.state,
                kind: r.kind,
            });
            if stored.is_ok() {
                register_field_deadline(shared, tenant, r.db, &r, now);
            }
        }
    }
}

/// A restored hash with field deadlines goes back into the active field expiry's index.
fn register_field_deadline(shared: &Shared, tenant: TenantId, db: u8, r: &Record<'_>, now: u64) {
    use crate::types::{HASH, hash::Hash};
    if r.kind != HASH || !Hash::new(r.value).timed() {
        return;
    }
    let next = Hash::new(r.value).live(now).map(|e| e.deadline).filter(|&d| d != 0).min();
    if let Some(at) = next {
        shared.field_deadlines.register(tenant, db, r.key, at);
    }
}

/// Loads the restart file at start, logging the outcome in one line.
pub(crate) fn restore(shared: &Shared, path: &Path) {
    let started = Instant::now();
    let shown = path.display();
    match load(shared, path) {
        Ok(None) => log::info!(
            "fridge: warm restart: no restart file at {shown} (the last stop was not graceful, \
             or this is the first start): starting empty"
        ),
        Ok(Some(l)) => {
            let dropped =
                l.records.saturating_sub(l.expired + l.unplaced).saturating_sub(l.restored);
            log::info!(
                "fridge: warm restart: restored {} items from {shown} in {} ms ({} in the file, \
                 saved {} s ago; {} expired meanwhile, {} of tenants, databases or cluster slots no \
                 longer configured here, {} dropped for lack of memory)",
                l.restored,
                started.elapsed().as_millis(),
                l.records,
                l.downtime_s,
                l.expired,
                l.unplaced,
                dropped,
            );
        }
        Err(e @ LoadError::Io(_)) => {
            log::warn!("fridge: warm restart: not restoring {shown}: {e}; the cache starts empty")
        }
        Err(e) => log::warn!(
            "fridge: warm restart: not restoring {shown}: {e}; the file is removed and the \
             cache starts empty"
        ),
    }
}

/// Writes the restart file at a graceful stop, logging the outcome in one line.
pub(crate) fn store(shared: &Shared, path: &Path) {
    let started = Instant::now();
    match save(shared, path) {
        Ok(s) => log::info!(
            "fridge: warm restart: saved {} items ({} bytes) to {} in {} ms",
            s.records,
            s.bytes,
            path.display(),
            started.elapsed().as_millis()
        ),
        Err(e) => log::error!(
            "fridge: warm restart: cannot write {}: {e}; the next start will be empty",
            path.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
            saved_at_ms: 1_700_000_000_000,
            cas_high: 99,
            max_item_size: 1 << 20,
            databases: 16,
            tenants: vec![(0, "default".into()), (0x203, "acme".into())],
        }
    }

    fn sample(i: u32) -> (Vec<u8>, Vec<u8>) {
        let key = format!("key:{i}").into_bytes();
        let value = (0..(i as usize * 37) % 3000).map(|j| (j as u32 ^ i) as u8).collect();
        (key, value)
    }

    /// A snapshot of `n` records, and with `big` one value over a block long.
    fn file(n: u32, big: bool) -> Vec<u8> {
        let mut w = Writer::new(Vec::new(), &header()).unwrap();
        for i in 0..n {
            let (key, value) = sample(i);
            w.record(&Record {
                tenant: if i % 2 == 0 { 0 } else { 0x203 },
                db: (i % 16) as u8,
                kind: Kind((i % 5) as u8),
                state: (i % 16) as u8,
                flags: i.wrapping_mul(2_654_435_761),
                expires_at_ms: (i % 3 == 0).then_some(u64::from(i) + 5),
                cas: u64::from(i) * 7 + 1,
                key: &key,
                value: &value,
            })
            .unwrap();
        }
        let large = vec![0xAB; BLOCK_BYTES + 10];
        let r = Record {
            tenant: 0,
            db: 0,
            kind: Kind::STRING,
            state: 0,
            flags: 0,
            expires_at_ms: None,
            cas: 1,
            key: b"big",
            value: &large,
        };
        if big {
            w.record(&r).unwrap();
        }
        let (out, records, bytes) = w.finish().unwrap();
        assert_eq!(records, u64::from(n) + u64::from(big));
        assert_eq!(bytes, out.len() as u64);
        out
    }

    /// Key, value and CAS of a record read back.
    type Got = (Vec<u8>, Vec<u8>, u64);

    fn read_all(bytes: &[u8]) -> Result<(Header, Vec<Got>), LoadError> {
        let mut r = Reader::new(bytes)?;
        let mut got = Vec::new();
        while let Some(block) = r.next_block()? {
            got.extend(block.records().map(|r| (r.key.to_vec(), r.value.to_vec(), r.cas)));
        }
        Ok((r.header().clone(), got))
    }

    #[test]
    fn a_snapshot_reads_back_as_written() {
        let bytes = file(5000, true);
        let (h, got) = read_all(&bytes).unwrap();
        assert_eq!(h, header());
        assert_eq!(got.len(), 5001);
        for (i, (key, value, cas)) in got.iter().take(5000).enumerate() {
            let (k, v) = sample(i as u32);
            assert_eq!((key, value, *cas), (&k, &v, i as u64 * 7 + 1));
        }
        assert_eq!(got[5000].1.len(), BLOCK_BYTES + 10);
        // Every field of a record survives.
        let mut r = Reader::new(&bytes[..]).unwrap();
        let block = r.next_block().unwrap().unwrap();
        let third = block.records().nth(3).unwrap();
        assert_eq!(
            (third.tenant, third.db, third.kind, third.state, third.expires_at_ms),
            (0x203, 3, Kind(3), 3, Some(8))
        );
        assert_eq!(third.flags, 3u32.wrapping_mul(2_654_435_761));
    }

    #[test]
    fn an_empty_snapshot_reads_back_empty() {
        let (out, records, _) = Writer::new(Vec::new(), &header()).unwrap().finish().unwrap();
        assert_eq!(records, 0);
        assert!(read_all(&out).unwrap().1.is_empty());
    }

    #[test]
    fn any_flipped_byte_is_found() {
        let bytes = file(1000, false);
        // Every byte of the header, block headers and trailer, and a spread of payload bytes.
        let step = (bytes.len() / 300).max(1);
        let positions = (0..200)
            .chain((200..bytes.len()).step_by(step))
            .chain(bytes.len() - TRAILER..bytes.len());
        for at in positions {
            let mut bad = bytes.clone();
            bad[at] ^= 0x20;
            assert!(read_all(&bad).is_err(), "a flip at byte {at} went unnoticed");
        }
    }

    #[test]
    fn a_truncated_or_extended_snapshot_is_refused() {
        let bytes = file(300, true);
        for len in [0, 7, 16, 100, bytes.len() / 2, bytes.len() - TRAILER, bytes.len() - 1] {
            assert!(read_all(&bytes[..len]).is_err(), "truncated to {len} bytes went unnoticed");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(read_all(&longer).is_err());
    }

    #[test]
    fn a_missing_block_is_found_by_the_trailer() {
        let bytes = file(3000, false);
        // Cut the first block out: the rest checks block by block, the chain does not.
        let header_len = 16 + le_u32(&bytes[12..]) as usize + 8;
        let block_len = BLOCK_HEADER + le_u32(&bytes[header_len + 4..]) as usize;
        let mut cut = bytes[..header_len].to_vec();
        cut.extend_from_slice(&bytes[header_len + block_len..]);
        match read_all(&cut) {
            Err(LoadError::Damaged(why)) => assert!(why.contains("trailer"), "{why}"),
            other => panic!("a missing block went unnoticed: {:?}", other.map(|r| r.1.len())),
        }
    }

    /// A version 1 file (one-byte tenant ids), written field by field as that format's
    /// writer wrote it: tenants 0 and 3, one record of each.
    fn narrow_file() -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&1_700_000_000_000u64.to_le_bytes());
        body.extend_from_slice(&99u64.to_le_bytes());
        body.extend_from_slice(&(1u64 << 20).to_le_bytes());
        body.push(16);
        body.extend_from_slice(&2u16.to_le_bytes());
        body.extend_from_slice(b"\x00\x07default\x03\x04acme");
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&VERSION_NARROW_IDS.to_le_bytes());
        out.extend_from_slice(&(body.len() as u32).to_le_bytes());
        out.extend_from_slice(&body);
        let sum = xxh3_64(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        let mut payload = Vec::new();
        for (tenant, db, cas, key, value) in
            [(0u8, 1u8, 5u64, &b"a"[..], &b"one"[..]), (3, 2, 6, b"bb", b"")]
        {
            payload.extend_from_slice(&[tenant, db, 0, 0]);
            payload.extend_from_slice(&7u32.to_le_bytes());
            payload.extend_from_slice(&0u64.to_le_bytes());
            payload.extend_from_slice(&cas.to_le_bytes());
            payload.extend_from_slice(&(key.len() as u32).to_le_bytes());
            payload.extend_from_slice(&(value.len() as u32).to_le_bytes());
            payload.extend_from_slice(key);
            payload.extend_from_slice(value);
        }
        let block_sum = xxh3_64(&payload);
        out.extend_from_slice(BLOCK_TAG);
        out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        out.extend_from_slice(&2u32.to_le_bytes());
        out.extend_from_slice(&block_sum.to_le_bytes());
        out.extend_from_slice(&payload);
        out.extend_from_slice(END_TAG);
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&2u64.to_le_bytes());
        out.extend_from_slice(&xxh3_64_with_seed(&block_sum.to_le_bytes(), sum).to_le_bytes());
        out
    }

    #[test]
    fn a_version_1_snapshot_with_one_byte_ids_still_reads() {
        let bytes = narrow_file();
        let mut r = Reader::new(&bytes[..]).unwrap();
        assert_eq!(r.header().tenants, [(0, "default".to_string()), (3, "acme".to_string())]);
        let block = r.next_block().unwrap().unwrap();
        let got: Vec<_> =
            block.records().map(|r| (r.tenant, r.db, r.flags, r.cas, r.key, r.value)).collect();
        assert_eq!(got, [(0, 1, 7, 5, &b"a"[..], &b"one"[..]), (3, 2, 7, 6, &b"bb"[..], &b""[..])]);
        assert!(r.next_block().unwrap().is_none(), "the trailer agrees");
    }

    #[test]
    fn another_version_is_a_mismatch() {
        let mut bytes = file(10, false);
        bytes[8] = 9;
        assert!(matches!(read_all(&bytes), Err(LoadError::Mismatch(_))));
    }
}
