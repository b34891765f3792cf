/* Datasets in C: IDX files (MNIST/Fashion-MNIST, gzip or raw), numeric CSV files, and the
 * batch kernels the DataHandler uses (row gather with fused dtype conversion, stacking,
 * shuffles, per-batch image transforms, accuracy counting). Plain C17, no Lua.
 * Indices passed to these functions are 0-based; the Lua side converts from 1-based. */
#ifndef PT_DATA_H
#define PT_DATA_H

#include "tensor.h"

/* Read an IDX file (gzip-compressed or raw; detected from the gzip magic). The result has the
 * file's dtype: 0x08 ubyte -> uint8, 0x09 sbyte/0x0B short/0x0C int -> int32, 0x0D float ->
 * float32, 0x0E double -> float64 (converted from big-endian). Checks the magic, the number of
 * dimensions, the sizes against the file length (truncated files and trailing bytes fail). */
pt_status pt_idx_read(pt_ctx *ctx, const char *path, pt_tensor **out);

/* Class indices: a new int64 tensor holding t + offset (t any integer dtype, any strides).
 * Used to turn IDX's 0-based labels into partrain's 1-based class indices (offset 1). */
pt_status pt_data_class_index(pt_ctx *ctx, const pt_tensor *t, int64_t offset, pt_tensor **out);

/* A numeric CSV file (RFC 4180: a quoted field may hold commas, newlines and "" for a quote;
 * blanks around fields, blank lines and a leading UTF-8 byte order mark are ignored). Every
 * column except the label column becomes a float32 feature. Label values that are all integers
 * become int64 (+ label_offset); any non-integer number makes them float32; a label column
 * holding words becomes int64 class indices 1.. in order of first appearance, and class_names
 * receives a malloc'ed array of n_classes malloc'ed strings. */
typedef struct pt_csv_result {
  pt_tensor *features;   /* float32 {N, F} */
  pt_tensor *labels;     /* {N} or NULL */
  char **header;         /* ncols names when has_header (malloc'ed), else NULL */
  int ncols;
  char **class_names;    /* for word labels, else NULL */
  int n_classes;
} pt_csv_result;
typedef struct pt_csv_opts {
  bool has_header;
  const char *label_name; /* when not NULL, the label column is looked up in the header by name */
  bool has_label;         /* else: false = no label column (labels stays NULL) */
  int64_t label_index;    /* 1-BASED column, negative from the end (-1 = the last column); 0 and
                             indices beyond the columns fail with "label column k out of range" */
  int64_t label_offset;
} pt_csv_opts;
pt_status pt_csv_read_opts(pt_ctx *ctx, const char *path, const pt_csv_opts *opts, pt_csv_result *out);
/* The same with a 0-BASED label_col (negative from the end, -1 = the last column) or
 * PT_CSV_NO_LABEL for none; label_name, when not NULL, names the column instead. */
#define PT_CSV_NO_LABEL (-1000000000)
pt_status pt_csv_read(pt_ctx *ctx, const char *path, bool has_header, const char *label_name,
                      int label_col, int64_t label_offset, pt_csv_result *out);
void pt_csv_result_free(pt_csv_result *r);

/* Gather rows: out[b] = src[index[b]] for b < n, converted to dtype dt and multiplied by scale
 * (scale 1 leaves values as they are; uint8 -> float32 with scale 1/255 is the fused image path).
 * out has shape {n, out_shape...} where out_shape (out_ndim dims) must hold as many elements as
 * one row of src; out_ndim < 0 keeps src's row shape. Fails on an index out of range. */
pt_status pt_data_gather(pt_ctx *ctx, pt_tensor *src, const int64_t *index, int64_t n,
                         pt_dtype dt, double scale, int out_ndim, const int64_t *out_shape,
                         pt_tensor **out);

/* Stack n tensors of one shape and dtype into {n, shape...}. */
pt_status pt_data_stack(pt_ctx *ctx, pt_tensor *const *items, int64_t n, pt_tensor **out);

/* A permutation of 0..n-1 into perm (Fisher-Yates) from a generator seeded with (seed, epoch):
 * the same pair always gives the same order. */
void pt_data_permutation(int64_t *perm, int64_t n, uint64_t seed, uint64_t epoch);

/* Per-batch transforms on float tensors laid out as {B, C, H, W} (contiguous). They modify x in
 * place except random_crop, which returns a new tensor {B, C, size, size}. */
pt_status pt_data_normalize_(pt_ctx *ctx, pt_tensor *x, int64_t channels, const double *mean,
                             const double *std, int nstats);
pt_status pt_data_random_flip_(pt_ctx *ctx, pt_tensor *x, int64_t C, int64_t H, int64_t W, double p);
pt_status pt_data_random_crop(pt_ctx *ctx, const pt_tensor *x, int64_t C, int64_t H, int64_t W,
                              int64_t size, int64_t padding, pt_tensor **out);
/* labels (integer dtype, 1-based) -> float32 {B, num_classes} */
pt_status pt_data_one_hot(pt_ctx *ctx, const pt_tensor *labels, int64_t num_classes, pt_tensor **out);

/* Classification counts: logits {B, C} (or {C} for one sample), labels {B} 1-based class indices.
 * argmax over the last dimension (first maximum wins). */
pt_status pt_data_count_correct(pt_ctx *ctx, const pt_tensor *logits, const pt_tensor *labels,
                                int64_t *correct, int64_t *total);
/* cm (int64 {C, C}, rows = true class, columns = predicted) += the batch's counts */
pt_status pt_data_confusion_add(pt_ctx *ctx, pt_tensor *cm, const pt_tensor *logits,
                                const pt_tensor *labels);

#endif
