/* Device backends: where a storage's bytes live on a device other than the CPU and how they are
 * allocated, freed and copied. The CPU needs no backend (storages are host memory, see
 * tensor.c); a GPU backend (kernels/, the PARTRAIN_CUDA build) registers itself for PT_CUDA
 * when its library finds a device. Without one, every request for that device type is a clear
 * error. Ops read tensor data on the host: they accept CPU tensors only (pt_check_cpu), so a
 * device tensor reaches no kernel that cannot handle it. */
#ifndef PT_BACKEND_H
#define PT_BACKEND_H

#include "tensor.h"

typedef struct pt_backend {
  const char *name;       /* "cuda" */
  int (*device_count)(void);
  void *(*alloc)(int index, size_t nbytes); /* NULL when out of memory */
  void (*free)(int index, void *p);
  /* n bytes from src to dst, one of them on device `index` of this backend and the other on
   * the host (to_device: host -> device) */
  bool (*copy)(int index, void *dst, const void *src, size_t n, bool to_device);
} pt_backend;

/* b must outlive the process (a static table); NULL unregisters. */
void pt_backend_register(pt_device_type type, const pt_backend *b);
const pt_backend *pt_backend_of(pt_device_type type); /* NULL: none registered */

/* PT_OK when dev can hold tensors: the CPU, or a registered backend with that device index. */
pt_status pt_device_check(pt_ctx *ctx, const char *fname, pt_device dev);
/* PT_OK for a CPU tensor; otherwise "<fname>: tensor on cuda:0 (the CPU kernels need cpu
 * tensors; use t:to(\"cpu\"))". */
pt_status pt_check_cpu(pt_ctx *ctx, const char *fname, const pt_tensor *t);

/* t on device dev: t itself (retained) when it is there already, else a contiguous copy. */
pt_status pt_tensor_to_device(pt_ctx *ctx, pt_tensor *t, pt_device dev, pt_tensor **out);

#endif
