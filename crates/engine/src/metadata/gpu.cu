// The hitmap's kernels (Catalyst §3–4), compiled at startup by NVRTC (`gpu.rs`).
//
// One device buffer holds every level and then the set counter, as 64-bit words: level m
// (0 = level 1) has `base_bits << m` bits and starts at word `base_words * (2^m − 1)`; the set
// counter has `base_bits` bits and starts at word `base_words * (2^levels − 1)`. Every kernel
// computes what `hitmap.rs` computes, bit for bit:
//
//   zones    a digest's zone (levels marked from level 1 up), for a query or a pool's snapshot
//   mark     a pool's marks from its snapshot: a key's i-th occurrence in the pool marks level
//            zone + i (its occurrence number comes from a hash table of the pool's keys, so
//            which occurrence gets which number depends on timing, but the set of levels
//            marked does not); a SET of a key of zone 0 marks the set counter; level 1's newly
//            set bits are counted with the old values the atomic ORs return
//   check    whether level 1 is saturated (an integer threshold computed on the host)
//   fold     one level moved down by OR-ing its halves (level 1 also takes the set counter)
//   clear    the top level and the set counter emptied after a compaction
//   count    level 1's set bits counted anew after a compaction
//
// The last four walk whole levels with grid-stride loops over a bounded grid, and return at
// once unless `check` decided on a compaction.
//
// counters[0] = level 1's set bits, counters[1] = compactions, counters[2] = 1 while the
// compaction decided by the last `check` is being applied (the later kernels test it).

typedef unsigned long long u64;
typedef unsigned int u32;

struct Shape {
    u64 base_bits;  // level 1's bits, a power of two, at least 512
    u32 levels;     // 2..=64
};

__device__ __forceinline__ u64 level_start(Shape s, u32 m) {
    return (s.base_bits / 64) * ((1ull << m) - 1);
}

// hitmap.rs `positions`: three bits of one 512-bit block, from the digest without bit 0.
__device__ __forceinline__ void positions(u32 digest, u64 p[3]) {
    u64 d = (u64)(digest >> 1);
    u64 h = (d ^ 0xD6E8FEB86659FD93ull) * 0x9E3779B97F4A7C15ull;
    h = (h ^ (h >> 29)) * 0xBF58476D1CE4E5B9ull;
    h = h ^ (h >> 32);
    u64 block = (h >> 27) << 9;
    p[0] = block | (h & 511);
    p[1] = block | ((h >> 9) & 511);
    p[2] = block | ((h >> 18) & 511);
}

__device__ __forceinline__ bool marked(const u64* bits, u64 start, u64 mask, const u64 p[3]) {
    for (int j = 0; j < 3; j++) {
        u64 i = p[j] & mask;
        if (!(bits[start + i / 64] & (1ull << (i % 64)))) return false;
    }
    return true;
}

__device__ __forceinline__ u32 zone_of(const u64* bits, Shape s, u32 digest) {
    u64 p[3];
    positions(digest, p);
    u32 z = 0;
    while (z < s.levels && marked(bits, level_start(s, z), (s.base_bits << z) - 1, p)) z++;
    return z;
}

extern "C" __global__ void zones(const u64* bits, u64 base_bits, u32 levels, const u32* digests, u32 n,
                                 unsigned char* out) {
    Shape s = {base_bits, levels};
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (unsigned char)zone_of(bits, s, digests[i]);
}

// Sets the three bits; returns how many were newly set.
__device__ __forceinline__ u32 mark_bits(u64* bits, u64 start, u64 mask, const u64 p[3]) {
    u32 fresh = 0;
    for (int j = 0; j < 3; j++) {
        u64 i = p[j] & mask;
        u64 bit = 1ull << (i % 64);
        u64 old = atomicOr(&bits[start + i / 64], bit);
        fresh += (old & bit) ? 0 : 1;
    }
    return fresh;
}

// `table` has `table_mask + 1` zeroed slots: (key + 1) << 32 | occurrences so far.
extern "C" __global__ void mark(u64* bits, u64 base_bits, u32 levels, const u32* digests, const unsigned char* snap,
                                u32 n, u64* table, u32 table_mask, u64* counters) {
    Shape s = {base_bits, levels};
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    u32 d = digests[i];
    u32 key = d >> 1;
    u32 z = snap[i];
    // The occurrence number: linear probing on a multiplicative hash of the key.
    u32 slot = (key * 0x9E3779B1u) & table_mask;
    u32 occurrence;
    for (;;) {
        u64 cur = table[slot];
        if (cur == 0) {
            u64 old = atomicCAS(&table[slot], 0ull, ((u64)(key + 1) << 32) | 1);
            if (old == 0) { occurrence = 0; break; }
            cur = old;
        }
        if ((u32)(cur >> 32) == key + 1) {
            occurrence = (u32)atomicAdd(&table[slot], 1ull);
            break;
        }
        slot = (slot + 1) & table_mask;
    }
    u64 p[3];
    positions(d, p);
    u32 level = z + occurrence;
    if (level < s.levels) {
        u32 fresh = mark_bits(bits, level_start(s, level), (s.base_bits << level) - 1, p);
        if (level == 0 && fresh) atomicAdd(&counters[0], (u64)fresh);
    }
    if ((d & 1) && z == 0) {
        mark_bits(bits, level_start(s, s.levels), s.base_bits - 1, p);
    }
}

extern "C" __global__ void check(u64* counters, u64 saturate_at) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        u32 due = counters[0] >= saturate_at;
        counters[2] = due;
        if (due) {
            counters[1] += 1;
            counters[0] = 0;  // recounted by `count`
        }
    }
}

// Level `target` (0-based) becomes level target + 1 folded; level 1 also takes the set counter.
extern "C" __global__ void fold(u64* bits, u64 base_bits, u32 levels, u32 target, const u64* counters) {
    Shape s = {base_bits, levels};
    if (!counters[2]) return;
    u64 words = (s.base_bits / 64) << target;
    u64 above = level_start(s, target + 1), here = level_start(s, target);
    u64 set_counter = level_start(s, s.levels);
    for (u64 w = (u64)blockIdx.x * blockDim.x + threadIdx.x; w < words;
         w += (u64)gridDim.x * blockDim.x) {
        u64 v = bits[above + w] | bits[above + w + words];
        if (target == 0) v |= bits[set_counter + w];
        bits[here + w] = v;
    }
}

extern "C" __global__ void clear(u64* bits, u64 base_bits, u32 levels, const u64* counters) {
    Shape s = {base_bits, levels};
    if (!counters[2]) return;
    u64 top = (s.base_bits / 64) << (s.levels - 1);
    u64 top_start = level_start(s, s.levels - 1), set_counter = level_start(s, s.levels);
    for (u64 w = (u64)blockIdx.x * blockDim.x + threadIdx.x; w < top;
         w += (u64)gridDim.x * blockDim.x) {
        bits[top_start + w] = 0;
        if (w < s.base_bits / 64) bits[set_counter + w] = 0;
    }
}

extern "C" __global__ void count(const u64* bits, u64 base_bits, u32 levels, u64* counters) {
    Shape s = {base_bits, levels};
    if (!counters[2]) return;
    u64 words = s.base_bits / 64;
    u64 ones = 0;
    for (u64 w = (u64)blockIdx.x * blockDim.x + threadIdx.x; w < words;
         w += (u64)gridDim.x * blockDim.x) {
        ones += __popcll(bits[w]);
    }
    for (int off = 16; off > 0; off /= 2) ones += __shfl_down_sync(0xffffffffu, ones, off);
    if ((threadIdx.x & 31) == 0 && ones) atomicAdd(&counters[0], ones);
}
