#define _GNU_SOURCE /* sincos */
/* Status messages, dtypes, devices, random numbers and aligned allocation. */
#include "pt_core.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pt_ctx_init(pt_ctx *ctx, uint64_t seed) {
  memset(ctx, 0, sizeof *ctx);
  pt_rng_seed(&ctx->rng, seed);
  ctx->grad_enabled = true;
  ctx->accumulate = NULL; /* NULL means pt_accumulate_default */
}

pt_status pt_failv(pt_ctx *ctx, pt_status code, const char *fmt, va_list ap) {
  vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
  ctx->status = code;
  return code;
}

pt_status pt_fail(pt_ctx *ctx, pt_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pt_failv(ctx, code, fmt, ap);
  va_end(ap);
  return code;
}

pt_status pt_fail_prefix(pt_ctx *ctx, const char *prefix) {
  char tmp[PT_ERRMSG_MAX];
  size_t n = strlen(prefix);
  if (n > 64) n = 64;
  memcpy(tmp, prefix, n);
  tmp[n] = ':';
  tmp[n + 1] = ' ';
  size_t rest = strnlen(ctx->err, PT_ERRMSG_MAX - 1);
  if (rest > PT_ERRMSG_MAX - n - 3) rest = PT_ERRMSG_MAX - n - 3;
  memcpy(tmp + n + 2, ctx->err, rest);
  tmp[n + 2 + rest] = '\0';
  memcpy(ctx->err, tmp, sizeof tmp);
  return ctx->status;
}

const char *pt_errmsg(const pt_ctx *ctx) { return ctx->err; }

/* --- random numbers: xoshiro256** seeded by splitmix64 --- */

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void pt_rng_seed(pt_rng *rng, uint64_t seed) {
  uint64_t x = seed;
  for (int i = 0; i < 4; i++) rng->s[i] = splitmix64(&x);
  rng->has_spare_normal = false;
}

static void put_le64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

void pt_rng_get_state(const pt_rng *rng, unsigned char out[PT_RNG_STATE_BYTES]) {
  out[0] = 1;
  for (int i = 0; i < 4; i++) put_le64(out + 1 + 8 * i, rng->s[i]);
  out[33] = rng->has_spare_normal ? 1 : 0;
  uint64_t bits;
  memcpy(&bits, &rng->spare_normal, sizeof bits);
  put_le64(out + 34, bits);
}

pt_status pt_rng_set_state(pt_ctx *ctx, pt_rng *rng, const unsigned char *b, size_t n) {
  if (n != PT_RNG_STATE_BYTES)
    return pt_fail(ctx, PT_EARG,
                   "set_rng_state: expected the %d bytes of get_rng_state(), got %zu",
                   PT_RNG_STATE_BYTES, n);
  if (b[0] != 1 || b[33] > 1)
    return pt_fail(ctx, PT_EARG, "set_rng_state: not a state from get_rng_state() (format byte %u)",
                   (unsigned)b[0]);
  pt_rng r;
  for (int i = 0; i < 4; i++) r.s[i] = get_le64(b + 1 + 8 * i);
  if (!(r.s[0] | r.s[1] | r.s[2] | r.s[3]))
    return pt_fail(ctx, PT_EARG, "set_rng_state: an all-zero state (the generator would be stuck)");
  r.has_spare_normal = b[33] != 0;
  uint64_t bits = get_le64(b + 34);
  memcpy(&r.spare_normal, &bits, sizeof bits);
  *rng = r;
  return PT_OK;
}

double pt_rng_normal(pt_rng *rng) {
  if (rng->has_spare_normal) {
    rng->has_spare_normal = false;
    return rng->spare_normal;
  }
  double u1, u2;
  do u1 = pt_rng_uniform(rng); while (u1 <= 0.0);
  u2 = pt_rng_uniform(rng);
  double r = sqrt(-2.0 * log(u1)), s, c;
  sincos(2.0 * M_PI * u2, &s, &c); /* glibc's: the values of sin and cos, in one call */
  rng->spare_normal = r * s;
  rng->has_spare_normal = true;
  return r * c;
}

uint64_t pt_rng_below(pt_rng *rng, uint64_t n) {
  if (n <= 1) return 0;
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do x = pt_rng_next(rng); while (x >= limit);
  return x % n;
}

/* --- dtypes --- */

const unsigned char pt_dtype_sizes[PT_DTYPE_COUNT] = {4, 8, 8, 4, 1, 1};
static const char *const dtype_names[PT_DTYPE_COUNT] = {"float32", "float64", "int64",
                                                        "int32",   "uint8",   "bool"};

const char *pt_dtype_name(pt_dtype dt) {
  return (unsigned)dt < PT_DTYPE_COUNT ? dtype_names[dt] : "unknown";
}

bool pt_dtype_from_name(const char *name, pt_dtype *out) {
  static const struct { const char *name; pt_dtype dt; } aliases[] = {
      {"float32", PT_FLOAT32}, {"float", PT_FLOAT32}, {"float64", PT_FLOAT64},
      {"double", PT_FLOAT64},  {"int64", PT_INT64},   {"long", PT_INT64},
      {"int32", PT_INT32},     {"int", PT_INT32},     {"uint8", PT_UINT8},
      {"byte", PT_UINT8},      {"bool", PT_BOOL},
  };
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (strcmp(name, aliases[i].name) == 0) {
      *out = aliases[i].dt;
      return true;
    }
  return false;
}

bool pt_dtype_is_floating(pt_dtype dt) { return dt == PT_FLOAT32 || dt == PT_FLOAT64; }

static atomic_int default_float = PT_FLOAT32;

pt_dtype pt_default_float(void) { return (pt_dtype)atomic_load_explicit(&default_float, memory_order_relaxed); }

pt_status pt_set_default_float(pt_ctx *ctx, pt_dtype dt) {
  if (!pt_dtype_is_floating(dt))
    return pt_fail(ctx, PT_EARG, "set_default_dtype: only floating-point types are supported as the default type "
                   "(float32, float64), got %s", pt_dtype_name(dt));
  atomic_store_explicit(&default_float, (int)dt, memory_order_relaxed);
  return PT_OK;
}

/* PyTorch's category order: bool < integer < floating; within a category the wider wins. */
static int dtype_rank(pt_dtype dt) {
  switch (dt) {
  case PT_BOOL: return 0;
  case PT_UINT8: return 1;
  case PT_INT32: return 2;
  case PT_INT64: return 3;
  case PT_FLOAT32: return 4;
  case PT_FLOAT64: return 5;
  default: return 0;
  }
}

pt_dtype pt_dtype_promote(pt_dtype a, pt_dtype b) { return dtype_rank(a) >= dtype_rank(b) ? a : b; }

/* --- devices --- */

pt_status pt_device_parse(pt_ctx *ctx, const char *name, pt_device *out) {
  if (strcmp(name, "cpu") == 0) {
    *out = (pt_device){PT_CPU, 0};
    return PT_OK;
  }
  if (strncmp(name, "cpu:", 4) == 0) {
    char *end;
    long idx = strtol(name + 4, &end, 10);
    if (*end == '\0' && idx >= 0) {
      *out = (pt_device){PT_CPU, (int)idx};
      return PT_OK;
    }
  }
  if (strcmp(name, "cuda") == 0 || strncmp(name, "cuda:", 5) == 0) {
    int idx = 0;
    if (name[4] == ':') {
      char *end;
      long v = strtol(name + 5, &end, 10);
      if (*end != '\0' || v < 0) return pt_fail(ctx, PT_EARG, "invalid device '%s'", name);
      idx = (int)v;
    }
    *out = (pt_device){PT_CUDA, idx};
    return PT_OK;
  }
  return pt_fail(ctx, PT_EARG, "invalid device '%s' (expected \"cpu\", \"cpu:N\" or \"cuda:N\")",
                 name);
}

void pt_device_format(pt_device d, char *buf, size_t n) {
  if (d.type == PT_CPU)
    snprintf(buf, n, d.index ? "cpu:%d" : "cpu", d.index);
  else
    snprintf(buf, n, "cuda:%d", d.index);
}

bool pt_device_equal(pt_device a, pt_device b) { return a.type == b.type && a.index == b.index; }

/* --- memory --- */

void *pt_alloc(pt_ctx *ctx, size_t nbytes) {
  size_t rounded = (nbytes + 63) & ~(size_t)63;
  if (rounded == 0) rounded = 64;
  /* malloc is markedly faster for the small blocks (tensor headers, 1-element storages) that
   * dominate op overhead; its 16-byte alignment is enough there. Big blocks get 64 for AVX-512. */
  void *p = rounded <= 4096 ? malloc(rounded) : aligned_alloc(64, rounded);
  if (!p) {
    if (ctx) pt_fail(ctx, PT_ENOMEM, "out of memory allocating %zu bytes", nbytes);
    return NULL;
  }
  if (ctx) ctx->bytes_allocated += rounded;
  return p;
}

void pt_free(void *p) { free(p); }
