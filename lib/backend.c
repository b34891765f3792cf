/* See backend.h. */
#include "backend.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static _Atomic(const pt_backend *) backends[2]; /* by pt_device_type; [PT_CPU] stays NULL */

void pt_backend_register(pt_device_type type, const pt_backend *b) {
  if (type == PT_CUDA) atomic_store(&backends[type], b);
}

const pt_backend *pt_backend_of(pt_device_type type) {
  return type == PT_CUDA ? atomic_load(&backends[type]) : NULL;
}

pt_status pt_device_check(pt_ctx *ctx, const char *fname, pt_device dev) {
  if (dev.type == PT_CPU) return PT_OK;
  const pt_backend *b = pt_backend_of(dev.type);
  if (!b)
    return pt_fail(ctx, PT_EARG,
                   "%s: CUDA is not available (partrain was built without a GPU backend or no GPU "
                   "was found)", fname);
  int n = b->device_count();
  char name[32];
  pt_device_format(dev, name, sizeof name);
  if (dev.index >= n)
    return pt_fail(ctx, PT_EARG, "%s: no device %s (%d %s device%s found)", fname, name, n, b->name,
                   n == 1 ? "" : "s");
  return PT_OK;
}

pt_status pt_check_cpu(pt_ctx *ctx, const char *fname, const pt_tensor *t) {
  if (t->storage->device.type == PT_CPU) return PT_OK;
  char name[32];
  pt_device_format(t->storage->device, name, sizeof name);
  return pt_fail(ctx, PT_EARG, "%s: tensor on %s (the CPU kernels need cpu tensors; use t:to(\"cpu\"))",
                 fname, name);
}

/* a storage whose data lives on a backend's device: the header is host memory */
static void device_storage_release(pt_storage *s) {
  const pt_backend *b = s->owner;
  b->free(s->device.index, s->data);
}

static pt_status device_storage_new(pt_ctx *ctx, const pt_backend *b, pt_device dev, size_t nbytes,
                                    pt_storage **out) {
  pt_storage *s = pt_alloc(ctx, sizeof *s);
  if (!s) return PT_ENOMEM;
  void *data = b->alloc(dev.index, nbytes ? nbytes : 1);
  if (!data) {
    pt_free(s);
    return pt_fail(ctx, PT_ENOMEM, "out of %s memory allocating %zu bytes", b->name, nbytes);
  }
  pt_storage_init_external(s, data, nbytes, dev, device_storage_release, (void *)b);
  *out = s;
  return PT_OK;
}

pt_status pt_tensor_to_device(pt_ctx *ctx, pt_tensor *t, pt_device dev, pt_tensor **out) {
  pt_device from = t->storage->device;
  if (from.type == dev.type && (dev.type == PT_CPU || from.index == dev.index)) {
    *out = pt_tensor_retain(t);
    return PT_OK;
  }
  pt_status st = pt_device_check(ctx, "to", dev);
  if (st) return st;
  if (from.type != PT_CPU && dev.type != PT_CPU) { /* device to device: through the host */
    pt_tensor *host;
    if ((st = pt_tensor_to_device(ctx, t, (pt_device){PT_CPU, 0}, &host))) return st;
    st = pt_tensor_to_device(ctx, host, dev, out);
    pt_tensor_release(host);
    return st;
  }
  size_t nbytes = (size_t)pt_tensor_numel(t) * pt_dtype_size(t->dtype);
  if (dev.type == PT_CPU) { /* device -> host: the device tensor is contiguous (made here) */
    if (!pt_tensor_is_contiguous(t))
      return pt_fail(ctx, PT_EARG, "to: a non-contiguous device tensor cannot be copied yet");
    pt_tensor *h;
    if ((st = pt_tensor_empty(ctx, t->dtype, t->ndim, t->shape, &h))) return st;
    const pt_backend *b = pt_backend_of(from.type);
    if (!b || !b->copy(from.index, h->storage->data, pt_tensor_data(t), nbytes, false)) {
      pt_tensor_release(h);
      return pt_fail(ctx, PT_EARG, "to: copying from the device failed");
    }
    *out = h;
    return PT_OK;
  }
  /* host -> device */
  const pt_backend *b = pt_backend_of(dev.type);
  pt_tensor *c;
  if ((st = pt_tensor_contiguous_raw(ctx, t, &c))) return st;
  pt_storage *s = NULL;
  if ((st = device_storage_new(ctx, b, dev, nbytes, &s))) {
    pt_tensor_release(c);
    return st;
  }
  bool ok = b->copy(dev.index, s->data, pt_tensor_data(c), nbytes, true);
  pt_tensor_release(c);
  int64_t stride[PT_MAX_DIMS];
  pt_contiguous_strides(t->ndim, t->shape, stride);
  pt_tensor *r = NULL;
  if (ok) st = pt_tensor_from_storage(ctx, s, t->dtype, 0, t->ndim, t->shape, stride, &r);
  pt_storage_release(s);
  if (!ok) return pt_fail(ctx, PT_EARG, "to: copying to the device failed");
  if (st) return st;
  *out = r;
  return PT_OK;
}
