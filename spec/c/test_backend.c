/* lib/backend: the device backend table, exercised with a stand-in backend whose "device"
 * memory is host memory tagged per device, so that copies in both directions, device checks,
 * the CPU-only guard and the release of device storages can be checked without a GPU. */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "testing.h"

static int live_blocks, copies_in, copies_out;

static int fake_count(void) { return 2; }
static void *fake_alloc(int index, size_t n) {
  (void)index;
  live_blocks++;
  return malloc(n);
}
static void fake_free(int index, void *p) {
  (void)index;
  live_blocks--;
  free(p);
}
static bool fake_copy(int index, void *dst, const void *src, size_t n, bool to_device) {
  (void)index;
  if (to_device) copies_in++;
  else copies_out++;
  memcpy(dst, src, n);
  return true;
}
static const pt_backend fake = {"fake", fake_count, fake_alloc, fake_free, fake_copy};

int main(void) {
  pt_ctx ctx;
  pt_ctx_init(&ctx, 1);
  pt_device cpu = {PT_CPU, 0}, dev0 = {PT_CUDA, 0}, dev1 = {PT_CUDA, 1}, dev5 = {PT_CUDA, 5};

  /* without a backend: a clear error, and the CPU is always fine */
  CHECK(pt_device_check(&ctx, "to", cpu) == PT_OK);
  CHECK(pt_device_check(&ctx, "to", dev0) != PT_OK);
  CHECK(strstr(ctx.err, "to: CUDA is not available") != NULL);

  pt_backend_register(PT_CUDA, &fake);
  CHECK(pt_backend_of(PT_CUDA) == &fake);
  CHECK(pt_device_check(&ctx, "to", dev1) == PT_OK);
  CHECK(pt_device_check(&ctx, "to", dev5) != PT_OK);
  CHECK(strcmp(ctx.err, "to: no device cuda:5 (2 fake devices found)") == 0);

  /* host -> device -> host keeps values, from a non-contiguous view too */
  int64_t shape[2] = {2, 3};
  pt_tensor *a = NULL, *at = NULL, *d = NULL, *back = NULL;
  CHECK(pt_tensor_empty(&ctx, PT_FLOAT32, 2, shape, &a) == PT_OK);
  float *ap = pt_tensor_data(a);
  for (int i = 0; i < 6; i++) ap[i] = (float)i;
  CHECK(pt_transpose_raw(&ctx, a, 0, 1, &at) == PT_OK); /* 3x2, strided */
  CHECK(pt_tensor_to_device(&ctx, at, dev1, &d) == PT_OK);
  CHECK(d->storage->device.type == PT_CUDA && d->storage->device.index == 1);
  CHECK(d->shape[0] == 3 && d->shape[1] == 2 && pt_tensor_is_contiguous(d));
  CHECK(live_blocks == 1 && copies_in == 1);
  /* ops refuse device tensors instead of reading device memory on the host */
  CHECK(pt_check_cpu(&ctx, "add", d) != PT_OK);
  CHECK(strcmp(ctx.err, "add: tensor on cuda:1 (the CPU kernels need cpu tensors; use t:to(\"cpu\"))") == 0);
  CHECK(pt_check_cpu(&ctx, "add", a) == PT_OK);
  /* shared memory is for host tensors */
  CHECK(pt_storage_share(&ctx, d->storage) == PT_EARG);
  CHECK(strcmp(ctx.err, "share_memory_: tensor on cuda:1 (only CPU tensors can be shared)") == 0);
  CHECK(!pt_storage_is_shared(d->storage));
  /* already there: the same tensor */
  pt_tensor *same = NULL;
  CHECK(pt_tensor_to_device(&ctx, d, dev1, &same) == PT_OK && same == d);
  pt_tensor_release(same);
  /* device to device goes through the host */
  pt_tensor *d0 = NULL;
  CHECK(pt_tensor_to_device(&ctx, d, dev0, &d0) == PT_OK);
  CHECK(d0->storage->device.index == 0 && live_blocks == 2);
  CHECK(pt_tensor_to_device(&ctx, d0, cpu, &back) == PT_OK);
  CHECK(back->storage->device.type == PT_CPU && copies_out == 2);
  const float *bp = pt_tensor_data(back);
  float want[6] = {0, 3, 1, 4, 2, 5};
  for (int i = 0; i < 6; i++) CHECK(bp[i] == want[i]);
  /* device storages are freed with their last tensor */
  pt_tensor_release(d);
  pt_tensor_release(d0);
  CHECK(live_blocks == 0);

  pt_backend_register(PT_CUDA, NULL);
  CHECK(pt_backend_of(PT_CUDA) == NULL);
  pt_tensor_release(back);
  pt_tensor_release(at);
  pt_tensor_release(a);
  return TEST_SUMMARY();
}
