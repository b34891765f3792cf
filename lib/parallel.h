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

/* fn(arg, item, begin, end): elements [begin, end) of item `item`, in the item's own indices. */
typedef void (*pt_segment_fn)(void *arg, int item, int64_t begin, int64_t end);

/* pt_parallel_for over the elements of nitems arrays laid end to end (counts[i] elements each):
 * a list of tensors gets one split and one wait, as PyTorch's foreach kernels, instead of one
 * per tensor (where each small tensor also ran on one thread while the others waited). fn sees
 * each item's part of a chunk in item order. Fails only when out of memory (ctx says so). */
pt_status pt_parallel_for_segments(pt_ctx *ctx, int nitems, const int64_t *counts, int64_t grain,
                                   pt_segment_fn fn, void *arg);

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
