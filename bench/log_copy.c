/* What one write of a large collection pays for its copy into the log, on this machine.
 *
 * A write of a hash, list, set or sorted set copies the whole value into a new item at the
 * worker's head segment (docs/design.md, "Hashes, lists, sets and sorted sets"): the source is
 * the value's previous version, written by the previous write, and the destination is log
 * memory the head has not touched since the log last went round. This program repeats that
 * copy in regions of 1, 8, 128 and 1,024 MiB (anonymous mappings advised for huge pages, as
 * the engine's arena is), each copy going SIZE bytes further down (values fill a segment from
 * its top) and reading the previous copy, with 20 system calls (getppid) between copies in place
 * of a request's receive, send and poll, and reports the median over three rounds of the time of
 * one copy:
 *
 *   memcpy     glibc's memcpy (what the engine's copy_from_slice calls)
 *   stream     16-byte non-temporal stores (SSE2; no read of the destination lines)
 *   prefetch   memcpy, the next destination prefetched for writing right after each copy (the
 *              time the prefetches take to issue is reported beside it)
 *
 * Usage: bench/log_copy [size-bytes, default 25600] (run pinned: taskset -c 1 bench/log_copy);
 * NOHUGE=1 advises the mapping against huge pages instead.
 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { MEMCPY, STREAM, PREFETCH };
static const char *names[] = {"memcpy", "stream", "prefetch"};

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static void stream_copy(char *d, const char *s, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) _mm_stream_si128((__m128i *)(d + i), _mm_loadu_si128((const __m128i *)(s + i)));
  memcpy(d + i, s + i, n - i);
  _mm_sfence();
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* One round: `copies` chained copies of `n` bytes going down `region`; ns per copy and per
 * prefetch issue. */
static void round_of(char *base, size_t region, size_t n, int how, double *copy_ns, double *issue_ns) {
  size_t copies = 20000, prev = (region - n) & ~(size_t)63, off;
  double copy = 0, issue = 0;
  for (size_t i = 0; i < copies; i++) {
    off = prev >= n ? prev - n : (region - n) & ~(size_t)63;
    double a = now_ns();
    if (how == STREAM)
      stream_copy(base + off, base + prev, n);
    else
      memcpy(base + off, base + prev, n);
    double b = now_ns();
    copy += b - a;
    prev = off;
    if (how == PREFETCH) {
      size_t next = prev >= n ? prev - n : (region - n) & ~(size_t)63;
      for (size_t j = 0; j < n; j += 64) __builtin_prefetch(base + next + j, 1, 3);
      issue += now_ns() - b;
    }
    for (int k = 0; k < 20; k++) syscall(SYS_getppid);
  }
  *copy_ns = copy / copies;
  *issue_ns = issue / copies;
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 25600;
  size_t regions[] = {1, 8, 128, 1024};
  printf("| region MiB | method | ns per %zu-byte copy | GB/s | prefetch issue ns |\n", n);
  printf("|---:|---|---:|---:|---:|\n");
  for (size_t r = 0; r < sizeof regions / sizeof *regions; r++) {
    size_t region = regions[r] << 20;
    if (region < 2 * n) continue;
    char *base = mmap(NULL, region, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) { perror("mmap"); return 1; }
    madvise(base, region, getenv("NOHUGE") ? MADV_NOHUGEPAGE : MADV_HUGEPAGE);
    memset(base, 1, region); /* every page touched once, as a long-running cache's are */
    for (int how = MEMCPY; how <= PREFETCH; how++) {
      double copies[3], issues[3];
      for (int k = 0; k < 3; k++) round_of(base, region, n, how, &copies[k], &issues[k]);
      qsort(copies, 3, sizeof *copies, cmp);
      qsort(issues, 3, sizeof *issues, cmp);
      printf("| %zu | %s | %.0f | %.1f | %s", regions[r], names[how], copies[1], n / copies[1],
             how == PREFETCH ? "" : "|\n");
      if (how == PREFETCH) printf("%.0f |\n", issues[1]);
    }
    munmap(base, region);
  }
  return 0;
}
