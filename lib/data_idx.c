/* IDX files (gzip or raw) and the batch kernels of the DataHandler: row gather with fused
 * conversion, stacking, seeded permutations, image transforms, accuracy counts. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "data.h"

/* --- IDX --- */

/* deflate cannot expand data by more than about 1032:1 */
#define GZIP_MAX_RATIO 1032u

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* read exactly n bytes unless the stream ends; returns bytes read, -1 on a gzip error */
static int64_t gz_read_all(gzFile f, void *buf, uint64_t n) {
  uint64_t got = 0;
  while (got < n) {
    uint64_t chunk = n - got;
    if (chunk > (1u << 30)) chunk = 1u << 30;
    int r = gzread(f, (char *)buf + got, (unsigned)chunk);
    if (r < 0) return -1;
    if (r == 0) break;
    got += (uint64_t)r;
  }
  return (int64_t)got;
}

static pt_status gz_fail(pt_ctx *ctx, gzFile f, const char *path) {
  int errnum = 0;
  const char *msg = gzerror(f, &errnum);
  return pt_fail(ctx, PT_EFORMAT, "read_idx: '%s': corrupt gzip data (%s)", path,
                 errnum == Z_ERRNO ? strerror(errno) : msg);
}

static pt_status idx_read_stream(pt_ctx *ctx, gzFile f, const char *path, bool gz, uint64_t fsize,
                                 pt_tensor **out) {
  unsigned char head[4];
  int64_t r = gz_read_all(f, head, 4);
  if (r < 0) return gz_fail(ctx, f, path);
  if (r < 4)
    return pt_fail(ctx, PT_EFORMAT, "read_idx: '%s': file too short for an IDX header (%lld bytes)",
                   path, (long long)r);
  if (head[0] != 0 || head[1] != 0)
    return pt_fail(ctx, PT_EFORMAT,
                   "read_idx: '%s': bad magic 0x%02x%02x%02x%02x (an IDX file starts with two zero "
                   "bytes, a type code and the number of dimensions)",
                   path, head[0], head[1], head[2], head[3]);
  pt_dtype dt;
  int fsz; /* element size in the file */
  switch (head[2]) {
  case 0x08: dt = PT_UINT8; fsz = 1; break;
  case 0x09: dt = PT_INT32; fsz = 1; break;
  case 0x0B: dt = PT_INT32; fsz = 2; break;
  case 0x0C: dt = PT_INT32; fsz = 4; break;
  case 0x0D: dt = PT_FLOAT32; fsz = 4; break;
  case 0x0E: dt = PT_FLOAT64; fsz = 8; break;
  default:
    return pt_fail(ctx, PT_EFORMAT,
                   "read_idx: '%s': unknown IDX type code 0x%02x (expected 0x08, 0x09, 0x0B, 0x0C, "
                   "0x0D or 0x0E)",
                   path, head[2]);
  }
  int ndim = head[3];
  if (ndim < 1 || ndim > PT_MAX_DIMS)
    return pt_fail(ctx, PT_EFORMAT, "read_idx: '%s': %d dimensions (partrain reads 1 to %d)", path,
                   ndim, PT_MAX_DIMS);
  unsigned char dims[4 * PT_MAX_DIMS];
  r = gz_read_all(f, dims, (uint64_t)ndim * 4);
  if (r < 0) return gz_fail(ctx, f, path);
  if (r < ndim * 4)
    return pt_fail(ctx, PT_EFORMAT, "read_idx: '%s': truncated header (%d dimensions need %d bytes)",
                   path, ndim, 4 + ndim * 4);
  int64_t shape[PT_MAX_DIMS];
  uint64_t count = 1;
  bool overflow = false;
  for (int i = 0; i < ndim; i++) {
    shape[i] = be32(dims + 4 * i);
    if (shape[i] && count > (UINT64_MAX >> 8) / (uint64_t)shape[i]) overflow = true;
    else count *= (uint64_t)shape[i];
  }
  char sbuf[PT_SHAPE_STR_MAX];
  uint64_t hdr = 4 + (uint64_t)ndim * 4;
  uint64_t need = count * (uint64_t)fsz;
  if (overflow)
    return pt_fail(ctx, PT_EFORMAT, "read_idx: '%s': shape %s is too large", path,
                   pt_shape_format(ndim, shape, sbuf, sizeof sbuf));
  if (!gz) {
    uint64_t have = fsize - hdr;
    if (have < need)
      return pt_fail(ctx, PT_EFORMAT,
                     "read_idx: '%s': truncated: shape %s needs %llu data bytes, the file has %llu",
                     path, pt_shape_format(ndim, shape, sbuf, sizeof sbuf),
                     (unsigned long long)need, (unsigned long long)have);
    if (have > need)
      return pt_fail(ctx, PT_EFORMAT,
                     "read_idx: '%s': %llu trailing bytes after the data of shape %s", path,
                     (unsigned long long)(have - need),
                     pt_shape_format(ndim, shape, sbuf, sizeof sbuf));
  } else if (need / GZIP_MAX_RATIO > fsize) {
    return pt_fail(ctx, PT_EFORMAT,
                   "read_idx: '%s': shape %s needs %llu bytes, more than a %llu-byte gzip file can "
                   "hold (truncated or corrupt header)",
                   path, pt_shape_format(ndim, shape, sbuf, sizeof sbuf), (unsigned long long)need,
                   (unsigned long long)fsize);
  }
  pt_tensor *t;
  pt_status st = pt_tensor_empty(ctx, dt, ndim, shape, &t);
  if (st) return pt_fail_prefix(ctx, "read_idx");
  unsigned char *dst = pt_tensor_data(t);
  if (fsz == (int)pt_dtype_size(dt)) {
    r = gz_read_all(f, dst, need);
  } else {
    /* narrower file type (sbyte, short): read into the tail, widen front to back */
    unsigned char *tmp = malloc(need ? need : 1);
    if (!tmp) {
      pt_tensor_release(t);
      return pt_fail(ctx, PT_ENOMEM, "read_idx: out of memory (%llu bytes)", (unsigned long long)need);
    }
    r = gz_read_all(f, tmp, need);
    int32_t *o = (int32_t *)dst;
    if (r == (int64_t)need) {
      for (uint64_t i = 0; i < count; i++)
        o[i] = fsz == 1 ? (int32_t)(int8_t)tmp[i]
                        : (int32_t)(int16_t)(uint16_t)(tmp[2 * i] << 8 | tmp[2 * i + 1]);
    }
    free(tmp);
  }
  if (r < 0) {
    pt_tensor_release(t);
    return gz_fail(ctx, f, path);
  }
  if ((uint64_t)r < need) {
    pt_tensor_release(t);
    return pt_fail(ctx, PT_EFORMAT,
                   "read_idx: '%s': truncated: shape %s needs %llu data bytes, the file has %llu",
                   path, pt_shape_format(ndim, shape, sbuf, sizeof sbuf), (unsigned long long)need,
                   (unsigned long long)r);
  }
  if (gz) {
    unsigned char extra[64];
    int64_t more = gz_read_all(f, extra, sizeof extra);
    if (more != 0) {
      pt_tensor_release(t);
      if (more < 0) return gz_fail(ctx, f, path);
      return pt_fail(ctx, PT_EFORMAT, "read_idx: '%s': trailing bytes after the data of shape %s",
                     path, pt_shape_format(ndim, shape, sbuf, sizeof sbuf));
    }
  }
  /* big-endian -> native */
  if (fsz == 4 || fsz == 8) {
    for (uint64_t i = 0; i < count; i++) {
      unsigned char *p = dst + i * (uint64_t)fsz;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
      for (int a = 0, b = fsz - 1; a < b; a++, b--) {
        unsigned char c = p[a];
        p[a] = p[b];
        p[b] = c;
      }
#else
      (void)p;
#endif
    }
  }
  *out = t;
  return PT_OK;
}

pt_status pt_idx_read(pt_ctx *ctx, const char *path, pt_tensor **out) {
  *out = NULL;
  FILE *fp = fopen(path, "rb");
  if (!fp) return pt_fail(ctx, PT_EIO, "read_idx: cannot open '%s': %s", path, strerror(errno));
  struct stat sb;
  unsigned char magic[2] = {0, 0};
  size_t nm = fread(magic, 1, 2, fp);
  if (fstat(fileno(fp), &sb) != 0 || !S_ISREG(sb.st_mode)) {
    fclose(fp);
    return pt_fail(ctx, PT_EIO, "read_idx: '%s' is not a regular file", path);
  }
  fclose(fp);
  bool gz = nm == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  gzFile f = gzopen(path, "rb");
  if (!f) return pt_fail(ctx, PT_EIO, "read_idx: cannot open '%s': %s", path, strerror(errno));
  gzbuffer(f, 1 << 18);
  pt_status st = idx_read_stream(ctx, f, path, gz, (uint64_t)sb.st_size, out);
  gzclose(f);
  return st;
}

pt_status pt_data_class_index(pt_ctx *ctx, const pt_tensor *t, int64_t offset, pt_tensor **out) {
  if (pt_dtype_is_floating(t->dtype) || t->dtype == PT_BOOL)
    return pt_fail(ctx, PT_EARG, "class_index: labels must have an integer dtype, got %s",
                   pt_dtype_name(t->dtype));
  pt_tensor *o;
  if (pt_tensor_empty(ctx, PT_INT64, t->ndim, t->shape, &o)) return pt_fail_prefix(ctx, "class_index");
  int64_t n = pt_tensor_numel(t), *d = pt_tensor_data(o);
  if (t->dtype == PT_UINT8 && pt_tensor_is_contiguous(t)) {
    const uint8_t *s = pt_tensor_data(t);
    for (int64_t i = 0; i < n; i++) d[i] = (int64_t)s[i] + offset;
  } else {
    for (int64_t i = 0; i < n; i++) d[i] = (int64_t)pt_tensor_get_flat(t, i) + offset;
  }
  *out = o;
  return PT_OK;
}

/* --- batches --- */

pt_status pt_data_gather(pt_ctx *ctx, pt_tensor *src, const int64_t *index, int64_t n, pt_dtype dt,
                         double scale, int out_ndim, const int64_t *out_shape, pt_tensor **out) {
  *out = NULL;
  if (src->ndim < 1) return pt_fail(ctx, PT_ESHAPE, "gather: source must have at least 1 dimension");
  if (src->storage->device.type != PT_CPU)
    return pt_fail(ctx, PT_EDEVICE, "gather: the dataset tensor must be on the CPU");
  int64_t rows = src->shape[0], row = pt_shape_numel(src->ndim - 1, src->shape + 1);
  int64_t shape[PT_MAX_DIMS];
  int ndim;
  if (out_ndim < 0) {
    ndim = src->ndim;
    memcpy(shape + 1, src->shape + 1, (size_t)(ndim - 1) * sizeof(int64_t));
  } else {
    if (out_ndim + 1 > PT_MAX_DIMS)
      return pt_fail(ctx, PT_ESHAPE, "gather: too many dimensions in the sample shape");
    ndim = out_ndim + 1;
    memcpy(shape + 1, out_shape, (size_t)out_ndim * sizeof(int64_t));
    if (pt_shape_numel(out_ndim, out_shape) != row) {
      char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX];
      return pt_fail(ctx, PT_ESHAPE, "gather: sample shape %s does not hold the %lld elements of a row %s",
                     pt_shape_format(out_ndim, out_shape, a, sizeof a), (long long)row,
                     pt_shape_format(src->ndim - 1, src->shape + 1, b, sizeof b));
    }
  }
  shape[0] = n;
  for (int64_t b = 0; b < n; b++)
    if (index[b] < 0 || index[b] >= rows)
      return pt_fail(ctx, PT_EARG, "gather: index %lld out of range 1..%lld", (long long)index[b] + 1,
                     (long long)rows);
  pt_tensor *c;
  if (pt_tensor_contiguous_raw(ctx, src, &c)) return pt_fail_prefix(ctx, "gather");
  pt_tensor *o;
  if (pt_tensor_empty(ctx, dt, ndim, shape, &o)) {
    pt_tensor_release(c);
    return pt_fail_prefix(ctx, "gather");
  }
  const char *s = pt_tensor_data(c);
  char *d = pt_tensor_data(o);
  size_t ss = pt_dtype_size(c->dtype), ds = pt_dtype_size(dt);
  if (c->dtype == dt && scale == 1.0) {
    for (int64_t b = 0; b < n; b++)
      memcpy(d + (size_t)(b * row) * ds, s + (size_t)(index[b] * row) * ss, (size_t)row * ds);
  } else if (c->dtype == PT_UINT8 && dt == PT_FLOAT32) {
    const float f = (float)scale;
    for (int64_t b = 0; b < n; b++) {
      const uint8_t *sr = (const uint8_t *)s + index[b] * row;
      float *dr = (float *)d + b * row;
      for (int64_t k = 0; k < row; k++) dr[k] = (float)sr[k] * f;
    }
  } else {
    for (int64_t b = 0; b < n; b++)
      for (int64_t k = 0; k < row; k++)
        pt_write_from_double(d + (size_t)(b * row + k) * ds, dt,
                             pt_read_as_double(s + (size_t)(index[b] * row + k) * ss, c->dtype) * scale);
  }
  pt_tensor_release(c);
  *out = o;
  return PT_OK;
}

pt_status pt_data_stack(pt_ctx *ctx, pt_tensor *const *items, int64_t n, pt_tensor **out) {
  *out = NULL;
  if (n < 1) return pt_fail(ctx, PT_EARG, "stack: no tensors to stack");
  const pt_tensor *f = items[0];
  if (f->ndim + 1 > PT_MAX_DIMS) return pt_fail(ctx, PT_ESHAPE, "stack: too many dimensions");
  for (int64_t i = 1; i < n; i++) {
    const pt_tensor *t = items[i];
    if (t->ndim != f->ndim || memcmp(t->shape, f->shape, (size_t)f->ndim * sizeof(int64_t))) {
      char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX];
      return pt_fail(ctx, PT_ESHAPE, "stack: sample %lld has shape %s, sample 1 has %s", (long long)i + 1,
                     pt_shape_format(t->ndim, t->shape, a, sizeof a),
                     pt_shape_format(f->ndim, f->shape, b, sizeof b));
    }
    if (t->dtype != f->dtype)
      return pt_fail(ctx, PT_EARG, "stack: sample %lld has dtype %s, sample 1 has %s", (long long)i + 1,
                     pt_dtype_name(t->dtype), pt_dtype_name(f->dtype));
  }
  int64_t shape[PT_MAX_DIMS];
  shape[0] = n;
  memcpy(shape + 1, f->shape, (size_t)f->ndim * sizeof(int64_t));
  pt_tensor *o;
  if (pt_tensor_empty(ctx, f->dtype, f->ndim + 1, shape, &o)) return pt_fail_prefix(ctx, "stack");
  int64_t row = pt_tensor_numel(f);
  size_t es = pt_dtype_size(f->dtype);
  char *d = pt_tensor_data(o);
  for (int64_t i = 0; i < n; i++) {
    const pt_tensor *t = items[i];
    if (t->storage->device.type != PT_CPU) {
      pt_tensor_release(o);
      return pt_fail(ctx, PT_EDEVICE, "stack: sample %lld is not on the CPU", (long long)i + 1);
    }
    if (pt_tensor_is_contiguous(t))
      memcpy(d + (size_t)(i * row) * es, pt_tensor_data(t), (size_t)row * es);
    else
      for (int64_t k = 0; k < row; k++)
        pt_write_from_double(d + (size_t)(i * row + k) * es, f->dtype, pt_tensor_get_flat(t, k));
  }
  *out = o;
  return PT_OK;
}

void pt_data_permutation(int64_t *perm, int64_t n, uint64_t seed, uint64_t epoch) {
  pt_rng rng;
  pt_rng_seed(&rng, seed ^ (epoch * 0x9E3779B97F4A7C15ULL));
  for (int64_t i = 0; i < n; i++) perm[i] = i;
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)pt_rng_below(&rng, (uint64_t)i + 1);
    int64_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
}

/* --- transforms --- */

static pt_status check_image_batch(pt_ctx *ctx, const char *fname, const pt_tensor *x, int64_t C,
                                   int64_t H, int64_t W) {
  if (!pt_dtype_is_floating(x->dtype))
    return pt_fail(ctx, PT_EARG, "%s: expected a float32 or float64 batch, got %s", fname,
                   pt_dtype_name(x->dtype));
  if (!pt_tensor_is_contiguous(x) || x->storage->device.type != PT_CPU)
    return pt_fail(ctx, PT_EARG, "%s: the batch must be a contiguous CPU tensor", fname);
  if (x->ndim < 1 || C < 1 || H < 1 || W < 1 || pt_shape_numel(x->ndim - 1, x->shape + 1) != C * H * W) {
    char a[PT_SHAPE_STR_MAX];
    return pt_fail(ctx, PT_ESHAPE, "%s: batch of shape %s does not hold images {%lld,%lld,%lld}", fname,
                   pt_shape_format(x->ndim, x->shape, a, sizeof a), (long long)C, (long long)H,
                   (long long)W);
  }
  return PT_OK;
}

pt_status pt_data_normalize_(pt_ctx *ctx, pt_tensor *x, int64_t channels, const double *mean,
                             const double *std, int nstats) {
  if (!pt_dtype_is_floating(x->dtype))
    return pt_fail(ctx, PT_EARG, "normalize: expected a float32 or float64 batch, got %s",
                   pt_dtype_name(x->dtype));
  if (!pt_tensor_is_contiguous(x) || x->ndim < 1)
    return pt_fail(ctx, PT_EARG, "normalize: the batch must be a contiguous tensor {B, ...}");
  if (nstats != 1 && nstats != channels)
    return pt_fail(ctx, PT_EARG, "normalize: %d mean/std values for %lld channels", nstats,
                   (long long)channels);
  for (int i = 0; i < nstats; i++)
    if (!(std[i] != 0.0))
      return pt_fail(ctx, PT_EARG, "normalize: std must not be zero (entry %d)", i + 1);
  int64_t B = x->shape[0], per = pt_shape_numel(x->ndim - 1, x->shape + 1);
  if (channels < 1 || per % channels)
    return pt_fail(ctx, PT_ESHAPE, "normalize: %lld values per sample cannot be split into %lld channels",
                   (long long)per, (long long)channels);
  int64_t plane = per / channels;
  for (int64_t b = 0; b < B; b++)
    for (int64_t c = 0; c < channels; c++) {
      double m = mean[nstats == 1 ? 0 : c], s = 1.0 / std[nstats == 1 ? 0 : c];
      int64_t base = (b * channels + c) * plane;
      if (x->dtype == PT_FLOAT32) {
        float *p = (float *)pt_tensor_data(x) + base, fm = (float)m, fs = (float)s;
        for (int64_t k = 0; k < plane; k++) p[k] = (p[k] - fm) * fs;
      } else {
        double *p = (double *)pt_tensor_data(x) + base;
        for (int64_t k = 0; k < plane; k++) p[k] = (p[k] - m) * s;
      }
    }
  atomic_fetch_add(&x->storage->version, 1);
  return PT_OK;
}

pt_status pt_data_random_flip_(pt_ctx *ctx, pt_tensor *x, int64_t C, int64_t H, int64_t W, double p) {
  pt_status st = check_image_batch(ctx, "random_flip", x, C, H, W);
  if (st) return st;
  size_t es = pt_dtype_size(x->dtype);
  char *d = pt_tensor_data(x);
  for (int64_t b = 0; b < x->shape[0]; b++) {
    if (!(pt_rng_uniform(&ctx->rng) < p)) continue;
    for (int64_t r = 0; r < C * H; r++) {
      char *row = d + (size_t)((b * C * H + r) * W) * es;
      for (int64_t i = 0, j = W - 1; i < j; i++, j--) {
        char tmp[8];
        memcpy(tmp, row + i * es, es);
        memcpy(row + i * es, row + j * es, es);
        memcpy(row + j * es, tmp, es);
      }
    }
  }
  atomic_fetch_add(&x->storage->version, 1);
  return PT_OK;
}

pt_status pt_data_random_crop(pt_ctx *ctx, const pt_tensor *x, int64_t C, int64_t H, int64_t W,
                              int64_t size, int64_t padding, pt_tensor **out) {
  *out = NULL;
  pt_status st = check_image_batch(ctx, "random_crop", x, C, H, W);
  if (st) return st;
  if (size < 1 || padding < 0 || size > H + 2 * padding || size > W + 2 * padding)
    return pt_fail(ctx, PT_EARG, "random_crop: crop size %lld does not fit images %lldx%lld with padding %lld",
                   (long long)size, (long long)H, (long long)W, (long long)padding);
  int64_t B = x->shape[0];
  int64_t shape[4] = {B, C, size, size};
  pt_tensor *o;
  if (pt_tensor_zeros(ctx, x->dtype, 4, shape, &o)) return pt_fail_prefix(ctx, "random_crop");
  size_t es = pt_dtype_size(x->dtype);
  const char *s = pt_tensor_data(x);
  char *d = pt_tensor_data(o);
  for (int64_t b = 0; b < B; b++) {
    /* top-left corner of the window in padded coordinates */
    int64_t top = (int64_t)pt_rng_below(&ctx->rng, (uint64_t)(H + 2 * padding - size + 1));
    int64_t left = (int64_t)pt_rng_below(&ctx->rng, (uint64_t)(W + 2 * padding - size + 1));
    for (int64_t c = 0; c < C; c++)
      for (int64_t i = 0; i < size; i++) {
        int64_t sy = top + i - padding;
        if (sy < 0 || sy >= H) continue;
        int64_t x0 = left - padding, lo = x0 < 0 ? -x0 : 0, hi = size;
        if (x0 + hi > W) hi = W - x0;
        if (hi <= lo) continue;
        memcpy(d + (size_t)(((b * C + c) * size + i) * size + lo) * es,
               s + (size_t)(((b * C + c) * H + sy) * W + x0 + lo) * es, (size_t)(hi - lo) * es);
      }
  }
  *out = o;
  return PT_OK;
}

pt_status pt_data_one_hot(pt_ctx *ctx, const pt_tensor *labels, int64_t num_classes, pt_tensor **out) {
  *out = NULL;
  if (pt_dtype_is_floating(labels->dtype) || labels->dtype == PT_BOOL)
    return pt_fail(ctx, PT_EARG, "one_hot: labels must be integer class indices, got %s",
                   pt_dtype_name(labels->dtype));
  if (num_classes < 1) return pt_fail(ctx, PT_EARG, "one_hot: num_classes must be positive");
  int64_t n = pt_tensor_numel(labels);
  for (int64_t i = 0; i < n; i++) {
    double v = pt_tensor_get_flat(labels, i);
    if (v < 1 || v > (double)num_classes)
      return pt_fail(ctx, PT_EARG, "one_hot: label %lld out of range 1..%lld", (long long)v,
                     (long long)num_classes);
  }
  int64_t shape[2] = {n, num_classes};
  pt_tensor *o;
  if (pt_tensor_zeros(ctx, PT_FLOAT32, 2, shape, &o)) return pt_fail_prefix(ctx, "one_hot");
  float *d = pt_tensor_data(o);
  for (int64_t i = 0; i < n; i++) d[i * num_classes + (int64_t)pt_tensor_get_flat(labels, i) - 1] = 1.0f;
  *out = o;
  return PT_OK;
}

/* --- metrics --- */

static pt_status check_logits(pt_ctx *ctx, const char *fname, const pt_tensor *logits,
                              const pt_tensor *labels, int64_t *B, int64_t *C) {
  if (logits->ndim < 1 || logits->ndim > 2) {
    char a[PT_SHAPE_STR_MAX];
    return pt_fail(ctx, PT_ESHAPE, "%s: expected scores {B, C}, got %s", fname,
                   pt_shape_format(logits->ndim, logits->shape, a, sizeof a));
  }
  *C = logits->shape[logits->ndim - 1];
  *B = logits->ndim == 2 ? logits->shape[0] : 1;
  if (pt_tensor_numel(labels) != *B)
    return pt_fail(ctx, PT_ESHAPE, "%s: %lld score rows but %lld labels", fname, (long long)*B,
                   (long long)pt_tensor_numel(labels));
  if (*C < 1) return pt_fail(ctx, PT_ESHAPE, "%s: scores have no classes", fname);
  return PT_OK;
}

static int64_t argmax_row(const pt_tensor *logits, int64_t b, int64_t C) {
  int64_t best = 0;
  double bv = pt_tensor_get_flat(logits, b * C);
  for (int64_t k = 1; k < C; k++) {
    double v = pt_tensor_get_flat(logits, b * C + k);
    if (v > bv || (isnan(v) && !isnan(bv))) {
      bv = v;
      best = k;
    }
  }
  return best;
}

static int64_t argmax_row_f32(const float *row, int64_t C) {
  int64_t best = 0;
  for (int64_t k = 1; k < C; k++)
    if (row[k] > row[best]) best = k;
  return best;
}

pt_status pt_data_count_correct(pt_ctx *ctx, const pt_tensor *logits, const pt_tensor *labels,
                                int64_t *correct, int64_t *total) {
  int64_t B = 0, C = 0;
  pt_status st = check_logits(ctx, "count_correct", logits, labels, &B, &C);
  if (st) return st;
  bool fast = logits->dtype == PT_FLOAT32 && pt_tensor_is_contiguous(logits);
  int64_t ok = 0;
  for (int64_t b = 0; b < B; b++) {
    int64_t pred = fast ? argmax_row_f32((const float *)pt_tensor_data(logits) + b * C, C)
                        : argmax_row(logits, b, C);
    if ((double)(pred + 1) == pt_tensor_get_flat(labels, b)) ok++;
  }
  *correct = ok;
  *total = B;
  return PT_OK;
}

pt_status pt_data_confusion_add(pt_ctx *ctx, pt_tensor *cm, const pt_tensor *logits,
                                const pt_tensor *labels) {
  int64_t B = 0, C = 0;
  pt_status st = check_logits(ctx, "confusion_matrix", logits, labels, &B, &C);
  if (st) return st;
  if (cm->dtype != PT_INT64 || cm->ndim != 2 || cm->shape[0] != cm->shape[1] || !pt_tensor_is_contiguous(cm))
    return pt_fail(ctx, PT_EARG, "confusion_matrix: the matrix must be a contiguous int64 {C, C} tensor");
  int64_t K = cm->shape[0];
  if (C > K)
    return pt_fail(ctx, PT_ESHAPE, "confusion_matrix: scores have %lld classes, the matrix %lld",
                   (long long)C, (long long)K);
  bool fast = logits->dtype == PT_FLOAT32 && pt_tensor_is_contiguous(logits);
  int64_t *m = pt_tensor_data(cm);
  for (int64_t b = 0; b < B; b++) {
    double lv = pt_tensor_get_flat(labels, b);
    if (!(lv >= 1 && lv <= (double)K) || lv != floor(lv))
      return pt_fail(ctx, PT_EARG, "confusion_matrix: label %g out of range 1..%lld", lv, (long long)K);
  }
  for (int64_t b = 0; b < B; b++) {
    double lv = pt_tensor_get_flat(labels, b);
    int64_t pred = fast ? argmax_row_f32((const float *)pt_tensor_data(logits) + b * C, C)
                        : argmax_row(logits, b, C);
    m[((int64_t)lv - 1) * K + pred]++;
  }
  return PT_OK;
}
