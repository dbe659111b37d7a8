//! [`GpuHitmap`]: the hitmap in a GPU's memory (Catalyst §3–4), with the same answers as the
//! CPU's, bit for bit.
//!
//! ```text
//!  metadata worker: pools ─► pinned staging (2 × 256 pools) ─ async copy ─► device
//!                    one stream, in order: snapshot zones ─► marks ─► saturated? ─►
//!                    fold levels ─► clear top ─► recount level 1   (compaction steps no-op
//!                                                                   unless `check` set it)
//!  cleaner: temperatures(digests) ─► copy ─► zones ─► copy back (one round trip)
//! ```
//!
//! The CUDA driver and NVRTC are loaded at run time (cudarc's dynamic loading), and the
//! kernels (`gpu.cu`) are compiled when the backend starts: building needs no CUDA toolkit,
//! and a machine without a GPU, driver or NVRTC gets an error naming what is missing, so that
//! `--metadata auto` falls back to the CPU.
//!
//! # Identical results
//!
//! A batch is applied as [`Hitmap::record_pool`] applies a pool: every zone is read before any
//! mark (the `zones` kernel runs to completion before `mark` starts), a key's `k` occurrences
//! mark levels `z + 1 ..= z + k` (each thread takes a distinct occurrence number from a hash
//! table of the batch's keys; which thread gets which number varies, the set of levels marked
//! does not), and marks are atomic ORs, which commute. Level 1's newly set bits are counted
//! from the old words the ORs return: a bit counts exactly once whichever thread sets it. The
//! compaction trigger compares that count with an integer threshold computed on the host
//! ([`saturation_ones`]). So the state after a batch depends only on the state before it and
//! the batch's multiset of digests, as the CPU's does (the tests below compare every word
//! after every pool; `examples/gpu_hitmap.rs` does so at scale).
//!
//! Inline (the simulator), each pool is one batch, as on the CPU. The metadata worker batches
//! up to [`BATCH_POOLS`] pools, so a server's GPU hitmap equals a CPU hitmap fed the same batches.
//!
//! The hitmap's bytes are reported as the CPU's would be, so the engine reserves the same
//! memory either way and its results stay comparable; the host keeps only the staging buffers.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaSlice, CudaStream, DevicePtrMut, LaunchConfig,
    PinnedHostSlice, PushKernelArg,
};
use cudarc::nvrtc::{CompileOptions, compile_ptx_with_opts};

use super::pooled::{Pooled, Structure};
use super::{POOL_LEN, Temperature, UNKNOWN};
use crate::hitmap::{DEFAULT_LEVELS, level1_bits, round_level1, saturation_ones};

/// The kernels, compiled by NVRTC at startup.
const SOURCE: &str = include_str!("gpu.cu");
/// Threads per block.
const THREADS: u32 = 256;
/// Most blocks of a grid-stride kernel (the compaction steps, which walk whole levels).
const STRIDE_BLOCKS: u32 = 2048;
/// Most pools the metadata worker gathers into one batch (1 MiB of digests): on an H100, 256
/// applied 1.3–1.6G digests per second end to end, 64 0.8G, 16 0.3G (`examples/gpu_hitmap.rs`;
/// `docs/benchmarks.md`). The worker also applies a smaller batch whenever its queue runs
/// empty, so a lightly loaded server's pools wait for no others.
const BATCH_POOLS: usize = 256;

/// The hitmap on a GPU, fed with reference pools.
pub type GpuHitmap = Pooled<GpuMemory>;

impl GpuHitmap {
    /// A GPU hitmap sized as `CpuHitmap::inline(items, bits_per_item)`, each pool applied as
    /// it is submitted (deterministic: equal to the CPU's after every pool).
    pub fn inline(items: usize, bits_per_item: usize) -> Result<GpuHitmap, String> {
        Ok(Pooled::inline_with(GpuMemory::new(items, bits_per_item, POOL_LEN)?))
    }

    /// The same, applied by a metadata worker in batches of up to `BATCH_POOLS` (256) pools.
    pub fn threaded(items: usize, bits_per_item: usize) -> Result<GpuHitmap, String> {
        let memory = GpuMemory::new(items, bits_per_item, BATCH_POOLS * POOL_LEN)?;
        Pooled::threaded_with(memory).map_err(|e| format!("cannot start metadata worker: {e}"))
    }
}

/// The hitmap's words and the buffers that feed it, in one GPU's memory.
#[derive(Debug)]
pub struct GpuMemory {
    stream: Arc<CudaStream>,
    kernels: Kernels,
    /// Level 1's bits (a power of two); level `m` has `base_bits << m`.
    base_bits: u64,
    levels: u32,
    saturate_at: u64,
    /// Every level, then the set counter (`gpu.cu`).
    bits: CudaSlice<u64>,
    /// Level 1's set bits, compactions, and the compaction flag.
    counters: CudaSlice<u64>,
    /// Two pinned buffers: one fills while the other's copy runs.
    staging: [Staging; 2],
    current: usize,
    /// The batch on the device, its snapshot zones, and its keys' occurrence table.
    batch: CudaSlice<u32>,
    snapshot: CudaSlice<u8>,
    table: CudaSlice<u64>,
    /// A temperature query's digests and zones (grown to the largest query, once).
    query: CudaSlice<u32>,
    query_zones: CudaSlice<u8>,
    host_zones: Vec<u8>,
    name: String,
    /// Set by the first CUDA error: from then on pools are dropped and queries answer
    /// "unknown" (zone 1), and the device string says why.
    failed: Option<String>,
}

#[derive(Debug)]
struct Kernels {
    zones: CudaFunction,
    mark: CudaFunction,
    check: CudaFunction,
    fold: CudaFunction,
    clear: CudaFunction,
    count: CudaFunction,
}

#[derive(Debug)]
struct Staging {
    host: PinnedHostSlice<u32>,
    /// `host`'s memory, taken once: `PinnedHostSlice::as_mut_slice` is a driver call (an
    /// event synchronization), which per pool capped a batch's filling at about 500M digests
    /// per second.
    ptr: *mut u32,
    len: usize,
    /// Recorded after this buffer's last copy was queued (`pending` until waited for); the
    /// buffer is refilled only once it has completed.
    copied: CudaEvent,
    pending: bool,
}

// SAFETY: `ptr` aliases `host`'s pinned memory, which is `Send` and lives as long as this
// value; it is written only through `&mut Staging` (`GpuMemory::append`), so by one thread at a
// time, as `host` itself would be.
unsafe impl Send for Staging {}

fn err(what: &str) -> impl Fn(cudarc::driver::DriverError) -> String + '_ {
    move |e| format!("{what}: {e:?}")
}

/// A launch of `n` threads, one per element.
fn per_element(n: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((n as u32).div_ceil(THREADS).max(1), 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// A grid-stride launch over `n` elements (at most [`STRIDE_BLOCKS`] blocks).
fn striding(n: u64) -> LaunchConfig {
    let blocks = n.div_ceil(u64::from(THREADS)).clamp(1, u64::from(STRIDE_BLOCKS)) as u32;
    LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 }
}

impl GpuMemory {
    /// A hitmap of `CpuHitmap`'s shape for `items` items at `bits_per_item` bits, on GPU 0,
    /// taking batches of up to `batch` digests. Fails, naming what is missing, without a
    /// CUDA driver, NVRTC or a GPU, or where the kernels do not compile or the memory does not
    /// fit.
    pub fn new(items: usize, bits_per_item: usize, batch: usize) -> Result<GpuMemory, String> {
        // SAFETY: `is_culib_present` only tries to open the libraries by name (dlopen); it
        // calls nothing in them.
        let (driver, nvrtc) = unsafe {
            (cudarc::driver::sys::is_culib_present(), cudarc::nvrtc::sys::is_culib_present())
        };
        if !driver {
            return Err("no CUDA driver (libcuda.so) found".into());
        }
        if !nvrtc {
            return Err("no NVRTC (libnvrtc.so) found: install the CUDA runtime compiler or \
                        add its directory to LD_LIBRARY_PATH"
                .into());
        }
        let count = CudaContext::device_count().map_err(err("CUDA init"))?;
        if count == 0 {
            return Err("no GPU found".into());
        }
        let ctx = CudaContext::new(0).map_err(err("CUDA context"))?;
        // SAFETY: every buffer of this context is used on `stream` alone, so the stream's
        // order already orders each access; cudarc's per-buffer events would add nothing.
        unsafe { ctx.disable_event_tracking() };
        let name = ctx.name().map_err(err("device name"))?;
        let ptx = compile_ptx_with_opts(
            SOURCE,
            CompileOptions { name: Some("hitmap.cu".into()), ..Default::default() },
        )
        .map_err(|e| format!("compiling the hitmap kernels: {e}"))?;
        let module = ctx.load_module(ptx).map_err(err("loading the hitmap kernels"))?;
        let function = |name: &str| module.load_function(name).map_err(err("kernel"));
        let kernels = Kernels {
            zones: function("zones")?,
            mark: function("mark")?,
            check: function("check")?,
            fold: function("fold")?,
            clear: function("clear")?,
            count: function("count")?,
        };
        let stream = ctx.new_stream().map_err(err("CUDA stream"))?;
        let levels = DEFAULT_LEVELS;
        let base_bits = round_level1(level1_bits(items, bits_per_item, levels)) as u64;
        // Levels and set counter: 2^levels times level 1.
        let words = (base_bits / 64) as usize * (1 << levels);
        let batch = batch.max(1);
        let mut staging = Vec::new();
        for _ in 0..2 {
            // SAFETY: the buffer's contents are unset; only the first `len` digests, which
            // `append` writes before anything reads them, are ever read.
            let mut host = unsafe { ctx.alloc_pinned::<u32>(batch) }.map_err(err("pinned"))?;
            let ptr = host.as_mut_ptr().map_err(err("pinned"))?;
            let copied = ctx.new_event(None).map_err(err("event"))?;
            staging.push(Staging { host, ptr, len: 0, copied, pending: false });
        }
        let staging: [Staging; 2] = staging.try_into().expect("two buffers");
        let table_slots = (2 * batch).next_power_of_two().max(1024);
        Ok(GpuMemory {
            kernels,
            base_bits,
            levels: levels as u32,
            saturate_at: saturation_ones(base_bits),
            bits: stream.alloc_zeros::<u64>(words).map_err(err("hitmap memory"))?,
            counters: stream.alloc_zeros::<u64>(3).map_err(err("counters"))?,
            staging,
            current: 0,
            batch: stream.alloc_zeros::<u32>(batch).map_err(err("batch"))?,
            snapshot: stream.alloc_zeros::<u8>(batch).map_err(err("snapshot"))?,
            table: stream.alloc_zeros::<u64>(table_slots).map_err(err("table"))?,
            query: stream.alloc_zeros::<u32>(1).map_err(err("query"))?,
            query_zones: stream.alloc_zeros::<u8>(1).map_err(err("query"))?,
            host_zones: Vec::new(),
            name,
            failed: None,
            stream,
        })
    }

    /// Bytes of all levels and the set counter.
    fn hitmap_bytes(&self) -> usize {
        self.bits.len() * 8
    }

    /// Every level's words (level 1 first), then the set counter's; level 1's set bits as
    /// counted; compactions (tests: compared with the CPU's hitmap word for word).
    pub fn download(&mut self) -> Result<(Vec<Vec<u64>>, u64, u64), String> {
        let words = self.stream.clone_dtoh(&self.bits).map_err(err("download"))?;
        let counters = self.stream.clone_dtoh(&self.counters).map_err(err("download"))?;
        let base = (self.base_bits / 64) as usize;
        let mut levels = Vec::new();
        let mut start = 0;
        for m in 0..self.levels as usize {
            levels.push(words[start..start + (base << m)].to_vec());
            start += base << m;
        }
        levels.push(words[start..start + base].to_vec());
        Ok((levels, counters[0], counters[1]))
    }

    /// Copies the staged batch to the device and queues its application and the compaction
    /// steps (each a no-op unless `check` finds level 1 saturated). Returns at once.
    fn launch(&mut self) -> Result<(), String> {
        // The metadata worker's first call may be this one: make the context current here.
        self.stream.context().bind_to_thread().map_err(err("context"))?;
        let st = &mut self.staging[self.current];
        let n = st.len;
        if n == 0 {
            return Ok(());
        }
        st.len = 0;
        let host = st.host.as_slice().map_err(err("staging"))?;
        {
            let (dst, _guard) = self.batch.device_ptr_mut(&self.stream);
            // SAFETY: `dst` holds `batch` ≥ n digests; the pinned source is not written again
            // until `copied`, recorded just below, has completed (`append` waits for it).
            unsafe {
                cudarc::driver::result::memcpy_htod_async(dst, &host[..n], self.stream.cu_stream())
            }
            .map_err(err("copy"))?;
        }
        st.copied.record(&self.stream).map_err(err("event"))?;
        st.pending = true;
        self.current ^= 1;

        let (n32, base, levels) = (n as u32, self.base_bits, self.levels);
        let slots = (2 * n).next_power_of_two().max(1024).min(self.table.len());
        let mask = (slots - 1) as u32;
        let stream = &self.stream;
        let k = &self.kernels;
        stream.memset_zeros(&mut self.table.slice_mut(..slots)).map_err(err("memset"))?;
        // SAFETY: for every launch below, the arguments match the kernel's parameters in
        // `gpu.cu` in number, order and type; each buffer is at least as long as the indices
        // the kernel derives from them (`n` ≤ the batch's length, `mask` < the table's, the
        // levels' offsets within `bits` by construction); all run on `stream`, in order.
        unsafe {
            let mut b = stream.launch_builder(&k.zones);
            b.arg(&self.bits).arg(&base).arg(&levels).arg(&self.batch).arg(&n32);
            b.arg(&mut self.snapshot).launch(per_element(n)).map_err(err("zones"))?;
            let mut b = stream.launch_builder(&k.mark);
            b.arg(&mut self.bits).arg(&base).arg(&levels).arg(&self.batch).arg(&self.snapshot);
            b.arg(&n32).arg(&mut self.table).arg(&mask).arg(&mut self.counters);
            b.launch(per_element(n)).map_err(err("mark"))?;
            let mut b = stream.launch_builder(&k.check);
            b.arg(&mut self.counters).arg(&self.saturate_at);
            b.launch(per_element(1)).map_err(err("check"))?;
            for target in 0..levels - 1 {
                let words = (base / 64) << target;
                let mut b = stream.launch_builder(&k.fold);
                b.arg(&mut self.bits).arg(&base).arg(&levels).arg(&target).arg(&self.counters);
                b.launch(striding(words)).map_err(err("fold"))?;
            }
            let top = (base / 64) << (levels - 1);
            let mut b = stream.launch_builder(&k.clear);
            b.arg(&mut self.bits).arg(&base).arg(&levels).arg(&self.counters);
            b.launch(striding(top)).map_err(err("clear"))?;
            let mut b = stream.launch_builder(&k.count);
            b.arg(&self.bits).arg(&base).arg(&levels).arg(&mut self.counters);
            b.launch(striding(base / 64)).map_err(err("count"))?;
        }
        Ok(())
    }

    fn fail(&mut self, why: String) {
        if self.failed.is_none() {
            eprintln!("fridge: GPU hitmap stopped: {why}");
            self.failed = Some(why);
        }
    }

    fn query(&mut self, digests: &[u32]) -> Result<(), String> {
        self.stream.context().bind_to_thread().map_err(err("context"))?;
        let n = digests.len();
        if self.query.len() < n {
            self.query = self.stream.alloc_zeros::<u32>(n).map_err(err("query"))?;
            self.query_zones = self.stream.alloc_zeros::<u8>(n).map_err(err("query"))?;
            self.host_zones.resize(n, 0);
        }
        // Pageable memory: the copy returns once the driver has taken the digests.
        self.stream.memcpy_htod(digests, &mut self.query).map_err(err("copy"))?;
        let (n32, base, levels) = (n as u32, self.base_bits, self.levels);
        // SAFETY: as in `launch`; `query` and `query_zones` hold at least `n` elements.
        unsafe {
            let mut b = self.stream.launch_builder(&self.kernels.zones);
            b.arg(&self.bits).arg(&base).arg(&levels).arg(&self.query).arg(&n32);
            b.arg(&mut self.query_zones).launch(per_element(n)).map_err(err("zones"))?;
        }
        // Into pageable memory: returns once the copy (and all work before it) is done.
        let zones = self.query_zones.slice(..n);
        self.stream.memcpy_dtoh(&zones, &mut self.host_zones[..n]).map_err(err("copy back"))
    }
}

impl Structure for GpuMemory {
    fn append(&mut self, digests: &[u32], _compacting: &AtomicBool) {
        if self.failed.is_some() {
            return;
        }
        let mut rest = digests;
        while !rest.is_empty() {
            let st = &mut self.staging[self.current];
            // Once per batch: wait for this buffer's last copy before writing it again.
            if st.pending {
                st.pending = false;
                if let Err(e) = self.stream.context().bind_to_thread().and(st.copied.synchronize())
                {
                    return self.fail(format!("staging: {e:?}"));
                }
            }
            let take = (st.host.len() - st.len).min(rest.len());
            // SAFETY: `ptr` points to `host.len()` digests of pinned memory that `st` owns
            // (see `Staging`), and `st.len + take ≤ host.len()`; no copy of this buffer is
            // pending (its `copied` event was waited for, just above, since `launch` last
            // recorded it), so the device reads none of it until `launch` queues the next copy.
            unsafe { std::ptr::copy_nonoverlapping(rest.as_ptr(), st.ptr.add(st.len), take) };
            st.len += take;
            rest = &rest[take..];
            if st.len == st.host.len()
                && let Err(e) = self.launch()
            {
                return self.fail(e);
            }
        }
    }

    fn flush(&mut self) {
        if self.failed.is_none()
            && let Err(e) = self.launch()
        {
            self.fail(e);
        }
    }

    fn zones(&mut self, digests: &[u32], out: &mut Vec<Temperature>) {
        out.clear();
        if digests.is_empty() {
            return;
        }
        if self.failed.is_none()
            && let Err(e) = self.query(digests)
        {
            self.fail(e);
        }
        if self.failed.is_some() {
            out.resize(digests.len(), UNKNOWN);
        } else {
            let zones = &self.host_zones[..digests.len()];
            out.extend(zones.iter().map(|&zone| Temperature { zone }));
        }
    }

    fn shape(&mut self) -> (usize, usize, u64) {
        let compactions = match self.stream.clone_dtoh(&self.counters) {
            Ok(c) => c[1],
            Err(e) => {
                self.fail(format!("counters: {e:?}"));
                0
            }
        };
        (self.hitmap_bytes(), self.levels as usize, compactions)
    }

    fn device(&self) -> String {
        match &self.failed {
            None => format!("gpu: {}", self.name),
            Some(why) => format!("gpu: {} (stopped: {why})", self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    //! Equality with the CPU hitmap, word for word after every pool, where a GPU is usable;
    //! elsewhere each test says why it was skipped. The kernels' compilation is checked
    //! wherever NVRTC loads, GPU or not.

    use super::*;
    use crate::hash::{digest_of, key_hash};
    use crate::hitmap::Hitmap;
    use crate::metadata::{CpuHitmap, MetadataBackend};

    fn digest(i: u64, set: bool) -> u32 {
        digest_of(key_hash(crate::tenant::TenantId(0), &i.to_le_bytes())) & !1 | u32::from(set)
    }

    /// A GPU hitmap, or `None` with the reason printed (no GPU here).
    fn gpu(items: usize, bits: usize, batch: usize) -> Option<GpuMemory> {
        match GpuMemory::new(items, bits, batch) {
            Ok(g) => Some(g),
            Err(e) => {
                eprintln!("skipped: no usable GPU ({e})");
                None
            }
        }
    }

    /// Applies `pools` to both, one batch each, and compares every word, the counts and the
    /// zones of `probe` after each.
    fn agree(items: usize, bits: usize, pools: &[Vec<u32>], probe: &[u32]) {
        let batch = pools.iter().map(Vec::len).max().unwrap_or(1);
        let Some(mut g) = gpu(items, bits, batch) else { return };
        let mut c = Hitmap::for_items(items, bits, DEFAULT_LEVELS).unwrap();
        let never = AtomicBool::new(false);
        let (mut zg, mut zc) = (Vec::new(), Vec::new());
        for (i, pool) in pools.iter().enumerate() {
            c.append(pool, &never);
            g.append(pool, &never);
            g.flush();
            assert_eq!(g.download().unwrap(), c.state(), "pool {i} of {}", pools.len());
            g.zones(probe, &mut zg);
            c.zones(probe, &mut zc);
            assert_eq!(zg, zc, "zones after pool {i}");
        }
        eprintln!("{} pools, {} compactions: equal", pools.len(), c.shape().1);
    }

    #[test]
    fn the_kernels_compile_wherever_nvrtc_loads() {
        // SAFETY: only tries to open the library by name.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            eprintln!("skipped: no NVRTC (libnvrtc.so) here");
            return;
        }
        let ptx = compile_ptx_with_opts(SOURCE, CompileOptions::default());
        let ptx = ptx.unwrap_or_else(|e| panic!("gpu.cu does not compile: {e}"));
        for kernel in ["zones", "mark", "check", "fold", "clear", "count"] {
            assert!(ptx.to_src().contains(&format!(".entry {kernel}(")), "{kernel}");
        }
    }

    #[test]
    fn equals_the_cpu_on_a_random_stream_through_compactions() {
        // 2,000 items at 16 bits: level 1 has 2,048 bits, compacted every few pools.
        let mut rng = fridge_workload::Rng::new(5);
        let pools: Vec<Vec<u32>> = (0..60)
            .map(|_| {
                (0..POOL_LEN)
                    .map(|_| digest(rng.next_u64() % 5_000, rng.next_u64() % 8 == 0))
                    .collect()
            })
            .collect();
        let probe: Vec<u32> = (0..6_000).map(|i| digest(i, false)).collect();
        agree(2_000, 16, &pools, &probe);
    }

    #[test]
    fn equals_the_cpu_on_adversarial_pools() {
        // One key a whole pool; keys of one 512-bit block; an empty pool, a pool of one, odd
        // lengths; every key a SET; then the same pools again from a warm hitmap.
        let block = |d: u32| crate::hitmap::positions(d)[0] >> 9;
        let target = block(digest(0, false)) % 4;
        let same_block: Vec<u32> =
            (0..200_000).map(|i| digest(i, false)).filter(|&d| block(d) % 4 == target).collect();
        let mut pools = vec![
            vec![digest(7, false); POOL_LEN],
            vec![digest(7, true); POOL_LEN],
            same_block.iter().copied().cycle().take(POOL_LEN).collect(),
            Vec::new(),
            vec![digest(9, true)],
            (0..1023).map(|i| digest(i % 3, i % 2 == 0)).collect(),
            (0..POOL_LEN as u64).map(|i| digest(i, true)).collect(),
        ];
        pools.extend(pools.clone());
        let probe: Vec<u32> =
            (0..2_000).map(|i| digest(i, false)).chain(same_block.iter().copied()).collect();
        // A small hitmap (four blocks in level 1) so that these pools saturate it.
        agree(128, 16, &pools, &probe);
    }

    #[test]
    fn a_batch_of_pools_equals_the_cpu_given_the_same_batch() {
        let Some(mut g) = gpu(50_000, 32, 4 * POOL_LEN) else { return };
        let mut c = Hitmap::for_items(50_000, 32, DEFAULT_LEVELS).unwrap();
        let never = AtomicBool::new(false);
        let stream: Vec<u32> =
            (0..40 * POOL_LEN as u64).map(|i| digest(i * 31 % 30_000, i % 9 == 0)).collect();
        // The GPU stages four pools per batch; the CPU is given the same four as one pool.
        for pool in stream.chunks(POOL_LEN) {
            g.append(pool, &never);
        }
        g.flush();
        for batch in stream.chunks(4 * POOL_LEN) {
            c.append(batch, &never);
        }
        assert_eq!(g.download().unwrap(), c.state());
    }

    #[test]
    fn the_backend_answers_temperatures_as_the_cpu_backend() {
        let gpu = match GpuHitmap::inline(20_000, 32) {
            Ok(g) => g,
            Err(e) => return eprintln!("skipped: no usable GPU ({e})"),
        };
        let cpu = CpuHitmap::inline(20_000, 32).unwrap();
        for round in 0..20u64 {
            let pool: Vec<u32> =
                (0..POOL_LEN as u64).map(|i| digest((i * round) % 3_000, i % 5 == 0)).collect();
            gpu.submit(&pool, &[]);
            cpu.submit(&pool, &[]);
        }
        let probe: Vec<u32> = (0..4_000).map(|i| digest(i, false)).collect();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        gpu.temperatures(&probe, &mut a);
        cpu.temperatures(&probe, &mut b);
        assert_eq!(a, b);
        let (g, c) = (gpu.stats(), cpu.stats());
        assert_eq!(
            (g.applied, g.compactions, g.bytes, g.zones),
            (c.applied, c.compactions, c.bytes, c.zones)
        );
        assert!(g.device.starts_with("gpu: "), "{}", g.device);
    }
}
