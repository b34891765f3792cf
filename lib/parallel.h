/* Intra-op parallelism: one process-wide set of compute threads that an op can split a loop
 * over. partrain owns one thread budget: while a parallel region runs, OpenBLAS is held at one
 * thread (each chunk calls BLAS single-threaded), so BLAS's own pool and ours never spin
 * against each other. Dispatcher workers set ctx->intra_threads = 1: their ops run serially. */
#ifndef PT_PARALLEL_H
#define PT_PARALLEL_H

#include "pt_core.h"

/* fn(arg, begin, end, tid): process items [begin, end) as thread tid (0 <= tid < nthreads). */
typedef void (*pt_parallel_fn)(void *arg, int64_t begin, int64_t end, int tid);

/* How many threads pt_parallel_for would use for this ctx (>= 1). */
int pt_parallel_threads(const pt_ctx *ctx);

/* Split [0, n) into contiguous chunks of at least `grain` items, one per thread, and wait for
 * all of them. Chunk t always covers the same range for the same n and thread count, so results
 * that depend on the split (per-thread partial sums) are deterministic. Runs serially when the
 * pool is busy (nested or concurrent use) or when n is small. Returns the thread count used. */
int pt_parallel_for(const pt_ctx *ctx, int64_t n, int64_t grain, pt_parallel_fn fn, void *arg);

/* memset of n elements split like pt_parallel_for(n, grain): with the grain of an element-wise
 * update over the same array (optim's SGD uses 32768), each thread zeroes the part it updated,
 * which is still in its cache. */
void pt_parallel_zero(const pt_ctx *ctx, void *p, int64_t n, size_t elsize, int64_t grain);

/* The process-wide budget: PARTRAIN_NUM_THREADS, else the number of online CPUs. */
int pt_parallel_budget(void);

/* A hint for spin-wait loops (the pool's, the intra-op pool's, the dispatcher's barriers). */
static inline void pt_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

#endif
