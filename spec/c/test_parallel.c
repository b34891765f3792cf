/* lib/parallel.c: pt_parallel_for_segments visits every element of every item exactly once, in
 * item-local indices, whatever the split (empty items included). */
#include "../../lib/parallel.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "testing.h"

enum { NITEMS = 8 };
static const int64_t counts[NITEMS] = {0, 5, 0, 100000, 1, 0, 70000, 0};

typedef struct visits {
  atomic_int *seen[NITEMS];
  atomic_int bad;
} visits;

static void mark(void *arg, int item, int64_t b, int64_t e) {
  visits *v = arg;
  if (item < 0 || item >= NITEMS || b < 0 || e > counts[item] || b >= e) {
    atomic_fetch_add(&v->bad, 1);
    return;
  }
  for (int64_t i = b; i < e; i++) atomic_fetch_add(&v->seen[item][i], 1);
}

static void test_segments(pt_ctx *ctx, int64_t grain) {
  visits v = {.bad = 0};
  for (int i = 0; i < NITEMS; i++) v.seen[i] = calloc((size_t)counts[i] + 1, sizeof(atomic_int));
  CHECK(pt_parallel_for_segments(ctx, NITEMS, counts, grain, mark, &v) == PT_OK);
  CHECK(atomic_load(&v.bad) == 0);
  int wrong = 0;
  for (int i = 0; i < NITEMS; i++)
    for (int64_t k = 0; k < counts[i]; k++) wrong += atomic_load(&v.seen[i][k]) != 1;
  CHECK(wrong == 0);
  for (int i = 0; i < NITEMS; i++) free(v.seen[i]);
}

int main(void) {
  pt_ctx ctx;
  pt_ctx_init(&ctx, 1);
  test_segments(&ctx, 1);       /* split over every thread */
  test_segments(&ctx, 32768);   /* optim's grain */
  test_segments(&ctx, 1 << 30); /* one chunk */
  ctx.intra_threads = 1;
  test_segments(&ctx, 1);
  CHECK(pt_parallel_for_segments(&ctx, 0, counts, 1, mark, NULL) == PT_OK); /* nothing to do */
  return TEST_SUMMARY();
}
