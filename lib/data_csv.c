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

/* Not '\n': a record ends there. */
static bool inline_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

/* One record (RFC 4180) from *pp: fields are separated by commas, a field whose first
 * non-blank character is '"' is quoted (it may hold commas, newlines and "" for a quote), blanks
 * around fields are dropped. Stores up to max fields in out (with unquote, quoted fields are
 * unquoted in place in the buffer, so every record must be read with unquote at most once) and
 * returns the number of fields in *nf; *blank tells a record holding nothing but blanks. Advances
 * *pp past the record and *lineno over the newlines read. line: the record's first line, for
 * messages. */
static pt_status read_record(pt_ctx *ctx, const char *path, char **pp, char *end, int *lineno,
                             bool unquote, field *out, int max, int *nf, bool *blank) {
  char *p = *pp;
  int line = *lineno, n = 0;
  bool quoted_any = false;
  size_t first_len = 0;
  for (;;) {
    while (p < end && inline_space(*p)) p++;
    const char *s;
    size_t len;
    if (p < end && *p == '"') {
      quoted_any = true;
      char *w = p + 1, *q = p + 1;
      s = w;
      for (;;) {
        if (q >= end)
          return pt_fail(ctx, PT_EFORMAT, "csv: '%s':%d: field %d: unterminated quoted field", path,
                         line, n + 1);
        if (*q == '"') {
          if (q + 1 < end && q[1] == '"') {
            if (unquote) *w = '"';
            w++;
            q += 2;
            continue;
          }
          q++;
          break;
        }
        if (*q == '\n') (*lineno)++;
        if (unquote) *w = *q;
        w++;
        q++;
      }
      len = (size_t)(w - s);
      p = q;
      while (p < end && inline_space(*p)) p++;
      if (p < end && *p != ',' && *p != '\n')
        return pt_fail(ctx, PT_EFORMAT, "csv: '%s':%d: field %d: unexpected '%c' after the closing quote",
                       path, line, n + 1, *p);
    } else {
      s = p;
      while (p < end && *p != ',' && *p != '\n') p++;
      len = (size_t)(p - s);
      while (len && inline_space(s[len - 1])) len--;
    }
    if (n == 0) first_len = len;
    if (n < max) {
      out[n].s = s;
      out[n].n = len;
    }
    n++;
    if (p < end && *p == ',') {
      p++;
      continue;
    }
    if (p < end) { /* '\n' */
      p++;
      (*lineno)++;
    }
    break;
  }
  *pp = p;
  *nf = n;
  *blank = n == 1 && !quoted_any && first_len == 0;
  return PT_OK;
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

static pt_status csv_parse(pt_ctx *ctx, const char *path, char *buf, size_t len,
                           const pt_csv_opts *o, pt_csv_result *out) {
  char *end = buf + len;
  /* a UTF-8 byte order mark is not part of the first header name */
  if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0) buf += 3;
  /* count the records with content and find the first one (quote-aware, nothing written) */
  int64_t nrecords = 0;
  char *first = NULL;
  int first_lineno = 0, lineno = 1, ncols = 0;
  for (char *p = buf; p < end;) {
    char *rec = p;
    int rec_line = lineno, nf;
    bool is_blank;
    if (read_record(ctx, path, &p, end, &lineno, false, NULL, 0, &nf, &is_blank)) return PT_EFORMAT;
    if (is_blank) continue;
    if (!first) first = rec, first_lineno = rec_line, ncols = nf;
    nrecords++;
  }
  if (!first) return pt_fail(ctx, PT_EFORMAT, "csv: '%s' is empty", path);
  if (ncols > 1000000) return pt_fail(ctx, PT_EFORMAT, "csv: '%s': too many columns (%d)", path, ncols);
  field *fields = calloc((size_t)ncols, sizeof *fields);
  if (!fields) return pt_fail(ctx, PT_ENOMEM, "csv: out of memory");
  pt_status st = PT_OK;
  int64_t nrows = nrecords - (o->has_header ? 1 : 0);
  field *labf = NULL;
  word_map wm = {0};
  int label_col = -1;
  char *p = first; /* the records left to read (each is unquoted in place, once) */
  lineno = first_lineno;
  out->ncols = ncols;
  if (o->has_header) {
    int nf;
    bool is_blank;
    if ((st = read_record(ctx, path, &p, end, &lineno, true, fields, ncols, &nf, &is_blank))) goto done;
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
  if (o->label_name) {
    if (!o->has_header) {
      st = pt_fail(ctx, PT_EARG, "csv: the label column is named ('%s'), which needs header = true",
                   o->label_name);
      goto done;
    }
    for (int i = 0; i < ncols; i++) {
      if (strcmp(out->header[i], o->label_name) != 0) continue;
      if (label_col >= 0) { /* which one was meant cannot be told */
        st = pt_fail(ctx, PT_EARG,
                     "csv: '%s': the header names columns %d and %d '%s': give the label column by index",
                     path, label_col + 1, i + 1, o->label_name);
        goto done;
      }
      label_col = i;
    }
    if (label_col < 0) {
      st = pt_fail(ctx, PT_EARG, "csv: '%s': no column named '%s' in the header", path, o->label_name);
      goto done;
    }
  } else if (o->has_label) {
    int64_t c = o->label_index;
    if (c == 0 || c > ncols || c < -(int64_t)ncols) {
      st = pt_fail(ctx, PT_EARG, "csv: '%s': label column %lld out of range (the file has %d columns)",
                   path, (long long)c, ncols);
      goto done;
    }
    label_col = (int)(c > 0 ? c - 1 : c + ncols);
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
  while (p < end) {
    int rec_line = lineno, n;
    bool is_blank;
    if ((st = read_record(ctx, path, &p, end, &lineno, true, fields, ncols, &n, &is_blank))) goto done;
    if (is_blank) continue;
    if (n != ncols) {
      st = pt_fail(ctx, PT_EFORMAT, "csv: '%s':%d: expected %d fields, got %d", path, rec_line, ncols, n);
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
        st = pt_fail(ctx, PT_EFORMAT, "csv: '%s':%d: field %d ('%.*s') is not a number", path, rec_line,
                     c + 1, (int)(fields[c].n > 40 ? 40 : fields[c].n), fields[c].s);
        goto done;
      }
      feat[row * nfeat + k++] = (float)v;
    }
    row++;
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
          ((int64_t *)pt_tensor_data(out->labels))[i] = (int64_t)v + o->label_offset;
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

pt_status pt_csv_read_opts(pt_ctx *ctx, const char *path, const pt_csv_opts *opts, pt_csv_result *out) {
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
  pt_status st = csv_parse(ctx, path, buf, len, opts, out);
  free(buf);
  return st;
}

pt_status pt_csv_read(pt_ctx *ctx, const char *path, bool has_header, const char *label_name,
                      int label_col, int64_t label_offset, pt_csv_result *out) {
  pt_csv_opts o = {.has_header = has_header, .label_name = label_name,
                   .has_label = label_name != NULL || label_col != PT_CSV_NO_LABEL,
                   .label_index = label_col >= 0 ? (int64_t)label_col + 1 : label_col,
                   .label_offset = label_offset};
  return pt_csv_read_opts(ctx, path, &o, out);
}
