/* Numeric CSV files: float32 features, an optional label column (numbers or words). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data.h"

typedef struct field {
  const char *s;
  size_t n;
} field;

/* 1 GiB: a CSV bigger than this should be converted to a binary format first */
#define CSV_MAX_BYTES ((uint64_t)1 << 30)

static void trim(field *f) {
  while (f->n && isspace((unsigned char)f->s[0])) f->s++, f->n--;
  while (f->n && isspace((unsigned char)f->s[f->n - 1])) f->n--;
  if (f->n >= 2 && f->s[0] == '"' && f->s[f->n - 1] == '"') f->s++, f->n -= 2;
}

/* split line [p, end) at commas into at most max fields; returns the number of fields */
static int split(const char *p, const char *end, field *out, int max) {
  int n = 0;
  for (;;) {
    const char *c = memchr(p, ',', (size_t)(end - p));
    const char *fe = c ? c : end;
    if (n < max) {
      out[n].s = p;
      out[n].n = (size_t)(fe - p);
      trim(&out[n]);
    }
    n++;
    if (!c) break;
    p = c + 1;
  }
  return n;
}

static bool parse_number(field f, double *v) {
  char tmp[64];
  if (f.n == 0 || f.n >= sizeof tmp) return false;
  memcpy(tmp, f.s, f.n);
  tmp[f.n] = '\0';
  char *e;
  errno = 0;
  *v = strtod(tmp, &e);
  return e == tmp + f.n && *e == '\0';
}

static bool blank(const char *p, const char *end) {
  for (; p < end; p++)
    if (!isspace((unsigned char)*p)) return false;
  return true;
}

static char *dup_field(field f) {
  char *s = malloc(f.n + 1);
  if (s) {
    memcpy(s, f.s, f.n);
    s[f.n] = '\0';
  }
  return s;
}

void pt_csv_result_free(pt_csv_result *r) {
  pt_tensor_release(r->features);
  pt_tensor_release(r->labels);
  if (r->header)
    for (int i = 0; i < r->ncols; i++) free(r->header[i]);
  free(r->header);
  if (r->class_names)
    for (int i = 0; i < r->n_classes; i++) free(r->class_names[i]);
  free(r->class_names);
  memset(r, 0, sizeof *r);
}

/* word -> class index, open addressing over the label fields */
typedef struct word_map {
  field *keys;
  int64_t *vals;
  size_t cap, count;
} word_map;

static uint64_t hash_field(field f) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < f.n; i++) h = (h ^ (unsigned char)f.s[i]) * 1099511628211ULL;
  return h;
}

static int64_t word_index(word_map *m, field f) {
  size_t i = hash_field(f) & (m->cap - 1);
  while (m->keys[i].s) {
    if (m->keys[i].n == f.n && memcmp(m->keys[i].s, f.s, f.n) == 0) return m->vals[i];
    i = (i + 1) & (m->cap - 1);
  }
  m->keys[i] = f;
  m->vals[i] = (int64_t)++m->count;
  return m->vals[i];
}

static pt_status csv_parse(pt_ctx *ctx, const char *path, char *buf, size_t len, bool has_header,
                           const char *label_name, int label_col, int64_t label_offset,
                           pt_csv_result *out) {
  const char *end = buf + len;
  /* count lines with content and find the first one */
  int64_t nlines = 0;
  const char *first = NULL, *first_end = NULL;
  int first_lineno = 0, lineno = 0;
  for (const char *p = buf; p < end;) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl ? nl : end;
    lineno++;
    if (!blank(p, le)) {
      if (!first) first = p, first_end = le, first_lineno = lineno;
      nlines++;
    }
    p = nl ? nl + 1 : end;
  }
  if (!first) return pt_fail(ctx, PT_EFORMAT, "csv: '%s' is empty", path);
  int ncols = split(first, first_end, NULL, 0);
  if (ncols > 1000000) return pt_fail(ctx, PT_EFORMAT, "csv: '%s': too many columns (%d)", path, ncols);
  field *fields = calloc((size_t)ncols, sizeof *fields);
  if (!fields) return pt_fail(ctx, PT_ENOMEM, "csv: out of memory");
  pt_status st = PT_OK;
  int64_t nrows = nlines - (has_header ? 1 : 0);
  field *labf = NULL;
  word_map wm = {0};
  out->ncols = ncols;
  if (has_header) {
    split(first, first_end, fields, ncols);
    out->header = calloc((size_t)ncols, sizeof(char *));
    if (!out->header) {
      st = pt_fail(ctx, PT_ENOMEM, "csv: out of memory");
      goto done;
    }
    for (int i = 0; i < ncols; i++)
      if (!(out->header[i] = dup_field(fields[i]))) {
        st = pt_fail(ctx, PT_ENOMEM, "csv: out of memory");
        goto done;
      }
  }
  if (label_name) {
    if (!has_header) {
      st = pt_fail(ctx, PT_EARG, "csv: the label column is named ('%s'), which needs header = true",
                   label_name);
      goto done;
    }
    label_col = -1;
    for (int i = 0; i < ncols; i++)
      if (strcmp(out->header[i], label_name) == 0) label_col = i;
    if (label_col < 0) {
      st = pt_fail(ctx, PT_EARG, "csv: '%s': no column named '%s' in the header", path, label_name);
      goto done;
    }
  } else if (label_col == PT_CSV_NO_LABEL) {
    label_col = -1;
  } else if (label_col >= ncols || label_col < -ncols) {
    st = pt_fail(ctx, PT_EARG, "csv: '%s': label column %d out of range (the file has %d columns)",
                 path, label_col < 0 ? label_col : label_col + 1, ncols);
    goto done;
  } else if (label_col < 0) {
    label_col += ncols;
  }
  if (nrows < 1) {
    st = pt_fail(ctx, PT_EFORMAT, "csv: '%s' has a header but no rows", path);
    goto done;
  }
  int nfeat = ncols - (label_col >= 0 ? 1 : 0);
  int64_t shape[2] = {nrows, nfeat};
  if (pt_tensor_empty(ctx, PT_FLOAT32, 2, shape, &out->features)) {
    st = pt_fail_prefix(ctx, "csv");
    goto done;
  }
  if (label_col >= 0 && !(labf = malloc((size_t)nrows * sizeof *labf))) {
    st = pt_fail(ctx, PT_ENOMEM, "csv: out of memory");
    goto done;
  }
  float *feat = pt_tensor_data(out->features);
  int64_t row = 0;
  lineno = 0;
  for (const char *p = buf; p < end;) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl ? nl : end;
    lineno++;
    if (!blank(p, le) && !(has_header && lineno == first_lineno)) {
      int n = split(p, le, fields, ncols);
      if (n != ncols) {
        st = pt_fail(ctx, PT_EFORMAT, "csv: '%s':%d: expected %d fields, got %d", path, lineno, ncols, n);
        goto done;
      }
      int k = 0;
      for (int c = 0; c < ncols; c++) {
        if (c == label_col) {
          labf[row] = fields[c];
          continue;
        }
        double v;
        if (!parse_number(fields[c], &v)) {
          st = pt_fail(ctx, PT_EFORMAT, "csv: '%s':%d: field %d ('%.*s') is not a number", path,
                       lineno, c + 1, (int)(fields[c].n > 40 ? 40 : fields[c].n), fields[c].s);
          goto done;
        }
        feat[row * nfeat + k++] = (float)v;
      }
      row++;
    }
    p = nl ? nl + 1 : end;
  }
  if (label_col >= 0) {
    bool numbers = true, integers = true;
    for (int64_t i = 0; i < nrows && numbers; i++) {
      double v = 0;
      if (!parse_number(labf[i], &v)) numbers = false;
      else if (v != floor(v) || fabs(v) > 9007199254740992.0) integers = false;
    }
    int64_t lshape[1] = {nrows};
    pt_dtype dt = numbers && !integers ? PT_FLOAT32 : PT_INT64;
    if (pt_tensor_empty(ctx, dt, 1, lshape, &out->labels)) {
      st = pt_fail_prefix(ctx, "csv");
      goto done;
    }
    if (numbers) {
      for (int64_t i = 0; i < nrows; i++) {
        double v = 0;
        parse_number(labf[i], &v);
        if (integers)
          ((int64_t *)pt_tensor_data(out->labels))[i] = (int64_t)v + label_offset;
        else
          ((float *)pt_tensor_data(out->labels))[i] = (float)v;
      }
    } else {
      wm.cap = 16;
      while (wm.cap < (size_t)nrows * 2) wm.cap <<= 1;
      wm.keys = calloc(wm.cap, sizeof *wm.keys);
      wm.vals = calloc(wm.cap, sizeof *wm.vals);
      if (!wm.keys || !wm.vals) {
        st = pt_fail(ctx, PT_ENOMEM, "csv: out of memory");
        goto done;
      }
      int64_t *l = pt_tensor_data(out->labels);
      for (int64_t i = 0; i < nrows; i++) {
        if (labf[i].n == 0) {
          st = pt_fail(ctx, PT_EFORMAT, "csv: '%s': row %lld has an empty label", path, (long long)i + 1);
          goto done;
        }
        l[i] = word_index(&wm, labf[i]);
      }
      out->class_names = calloc(wm.count, sizeof(char *));
      if (!out->class_names) {
        st = pt_fail(ctx, PT_ENOMEM, "csv: out of memory");
        goto done;
      }
      out->n_classes = (int)wm.count;
      for (size_t i = 0; i < wm.cap; i++)
        if (wm.keys[i].s && !(out->class_names[wm.vals[i] - 1] = dup_field(wm.keys[i]))) {
          st = pt_fail(ctx, PT_ENOMEM, "csv: out of memory");
          goto done;
        }
    }
  }
done:
  free(fields);
  free(labf);
  free(wm.keys);
  free(wm.vals);
  if (st) pt_csv_result_free(out);
  return st;
}

pt_status pt_csv_read(pt_ctx *ctx, const char *path, bool has_header, const char *label_name,
                      int label_col, int64_t label_offset, pt_csv_result *out) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "rb");
  if (!f) return pt_fail(ctx, PT_EIO, "csv: cannot open '%s': %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
    fclose(f);
    return pt_fail(ctx, PT_EIO, "csv: '%s' is not a regular file", path);
  }
  if ((uint64_t)sb.st_size > CSV_MAX_BYTES) {
    fclose(f);
    return pt_fail(ctx, PT_EIO, "csv: '%s' is larger than 1 GiB", path);
  }
  size_t len = (size_t)sb.st_size;
  char *buf = malloc(len + 1);
  if (!buf) {
    fclose(f);
    return pt_fail(ctx, PT_ENOMEM, "csv: out of memory reading '%s'", path);
  }
  size_t got = fread(buf, 1, len, f);
  fclose(f);
  if (got != len) {
    free(buf);
    return pt_fail(ctx, PT_EIO, "csv: error reading '%s'", path);
  }
  buf[len] = '\0';
  if (memchr(buf, '\0', len)) {
    free(buf);
    return pt_fail(ctx, PT_EFORMAT, "csv: '%s' contains NUL bytes (not a text file)", path);
  }
  pt_status st = csv_parse(ctx, path, buf, len, has_header, label_name, label_col, label_offset, out);
  free(buf);
  return st;
}
