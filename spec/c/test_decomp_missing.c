/* lib/ops_decomp.c when LAPACKE cannot be opened (it is opened on first use): a message naming
 * why, from every kind of call, and nothing else breaks. */
#include <stdlib.h>
#include <string.h>

#include "ops_decomp.h"
#include "tensor.h"
#include "testing.h"

int main(void) {
  setenv("PARTRAIN_LAPACKE", "/nonexistent/liblapacke.so.3", 1);
  pt_ctx ctx;
  pt_ctx_init(&ctx, 1);
  int64_t shape[2] = {2, 2};
  pt_tensor *a = NULL, *out = NULL;
  CHECK(pt_tensor_zeros(&ctx, PT_FLOAT64, 2, shape, &a) == PT_OK);
  pt_tensor_set_flat(a, 0, 2.0);
  pt_tensor_set_flat(a, 3, 3.0);
  CHECK(pt_linalg_inv(&ctx, "linalg.inv", a, &out) == PT_EDEVICE);
  CHECK(strstr(ctx.err, "linalg.inv: LAPACK is not available (") == ctx.err);
  CHECK(strstr(ctx.err, "/nonexistent/liblapacke.so.3") != NULL);
  CHECK(out == NULL);
  CHECK(pt_linalg_solve(&ctx, a, a, true, &out) == PT_EDEVICE); /* the second call: the same reason */
  CHECK(strstr(ctx.err, "LAPACK is not available") != NULL);
  pt_tensor_release(out);
  pt_tensor_release(a);
  return TEST_SUMMARY();
}
