/* Checkpoints in the safetensors format:
 *   8 bytes   little-endian u64 N, the length of the JSON header
 *   N bytes   JSON: {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
 *                    "__metadata__": {"key": "string value", ...}}   (padded with spaces)
 *   data      raw little-endian tensor bytes; offsets are relative to the start of this section,
 *             and the tensors cover it exactly (no gaps, no overlaps).
 * Reading validates everything against the file size before use: a hostile file fails with a
 * message naming the problem and never makes the reader allocate more than the file holds.
 * Header strings must be valid UTF-8 without NUL characters (the escape \u0000 is refused on
 * reading, since names and values here are C strings). */
#ifndef PT_CHECKPOINT_H
#define PT_CHECKPOINT_H

#include "tensor.h"

#define PT_ST_MAX_HEADER ((uint64_t)100 << 20) /* 100 MB, as the reference implementation */

/* How an entry's bytes are stored when they are not its tensor's own (read into a wider type). */
typedef enum pt_st_format {
  PT_ST_NATIVE, /* the tensor's dtype, little-endian */
  PT_ST_F16,    /* IEEE half -> float32 */
  PT_ST_BF16,   /* bfloat16 -> float32 */
  PT_ST_I8,     /* -> int32 */
  PT_ST_I16,    /* -> int32 */
  PT_ST_U16,    /* -> int32 */
  PT_ST_U32,    /* -> int64 */
  PT_ST_U64,    /* -> int64 (a value above INT64_MAX is an error) */
} pt_st_format;

typedef struct pt_st_entry {
  char *name;
  pt_dtype dtype;        /* the tensor's */
  pt_st_format format;   /* the file's */
  int ndim;
  int64_t shape[PT_MAX_DIMS];
  uint64_t begin, end; /* byte offsets in the data section */
  pt_tensor *tensor;   /* filled by pt_st_read / pt_st_decode; NULL after parse only */
} pt_st_entry;

typedef struct pt_safetensors {
  int n;
  pt_st_entry *entries; /* in the order of their offsets */
  int n_meta;
  char **meta_keys, **meta_values;
} pt_safetensors;

/* Validate a JSON header of len bytes against a data section of data_len bytes. */
pt_status pt_st_parse_header(pt_ctx *ctx, const char *json, size_t len, uint64_t data_len,
                             pt_safetensors *out);
/* A whole file held in memory. */
pt_status pt_st_decode(pt_ctx *ctx, const unsigned char *buf, size_t len, pt_safetensors *out);
/* A file on disk (tensors copied into their own storage). */
pt_status pt_st_read(pt_ctx *ctx, const char *path, pt_safetensors *out);
void pt_st_free(pt_safetensors *st);

/* The safetensors dtype name ("F32", ...) of a dtype. */
const char *pt_st_dtype_name(pt_dtype dt);

/* 0 when s is valid UTF-8 (strict: no overlong forms, surrogates or code points above U+10FFFF),
 * else the 1-based offset of the first byte that is not. Every string of a header must be:
 * reading rejects one that is not (naming its key), and so does writing. */
size_t pt_st_utf8_invalid_at(const char *s);

/* Write n named tensors (CPU, any strides) and n_meta string pairs to path.tmp, fsync, then rename
 * to path: an interrupted save leaves any previous file at path as it was. */
pt_status pt_st_write(pt_ctx *ctx, const char *path, int n, const char *const *names,
                      pt_tensor *const *tensors, int n_meta, const char *const *keys,
                      const char *const *values);
/* pt_st_write, with the floating point tensors among the first n_floats stored as `floats`:
 * PT_ST_NATIVE (their own dtype), PT_ST_F16 or PT_ST_BF16 (rounded to nearest even; other
 * formats are an error). */
pt_status pt_st_write_as(pt_ctx *ctx, const char *path, int n, const char *const *names,
                         pt_tensor *const *tensors, int n_meta, const char *const *keys,
                         const char *const *values, pt_st_format floats, int n_floats);

#endif
