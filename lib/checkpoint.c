/* safetensors reading (validated against the file size) and atomic writing. */
#include "checkpoint.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The stored types: partrain's own (ST_NATIVE: the bytes are the tensor's), and the ones it reads
 * into a wider type of its own: 16-bit floats (as float32, exactly), smaller or unsigned integers
 * (as int32, or int64 for U32 and U64). */
static const struct {
  const char *name;
  pt_dtype dt;
  pt_st_format fmt;
} st_dtypes[] = {
    {"F32", PT_FLOAT32, PT_ST_NATIVE}, {"F64", PT_FLOAT64, PT_ST_NATIVE}, {"I64", PT_INT64, PT_ST_NATIVE},
    {"I32", PT_INT32, PT_ST_NATIVE},   {"U8", PT_UINT8, PT_ST_NATIVE},    {"BOOL", PT_BOOL, PT_ST_NATIVE},
    {"F16", PT_FLOAT32, PT_ST_F16},    {"BF16", PT_FLOAT32, PT_ST_BF16},  {"I8", PT_INT32, PT_ST_I8},
    {"I16", PT_INT32, PT_ST_I16},      {"U16", PT_INT32, PT_ST_U16},      {"U32", PT_INT64, PT_ST_U32},
    {"U64", PT_INT64, PT_ST_U64},
};
/* valid safetensors dtypes partrain does not read */
static const char *const st_unsupported[] = {"F8_E4M3", "F8_E5M2", NULL};

static size_t format_size(pt_st_format f, pt_dtype dt) {
  switch (f) {
  case PT_ST_NATIVE: return pt_dtype_size(dt);
  case PT_ST_I8: return 1;
  case PT_ST_F16: case PT_ST_BF16: case PT_ST_I16: case PT_ST_U16: return 2;
  case PT_ST_U32: return 4;
  case PT_ST_U64: return 8;
  }
  return 0;
}

const char *pt_st_dtype_name(pt_dtype dt) {
  for (size_t i = 0; i < sizeof st_dtypes / sizeof st_dtypes[0]; i++)
    if (st_dtypes[i].dt == dt && st_dtypes[i].fmt == PT_ST_NATIVE) return st_dtypes[i].name;
  return NULL;
}

/* --- 16-bit floats (IEEE binary16 "F16": 5 exponent and 10 fraction bits; bfloat16 "BF16": 8
 * and 7), decoded exactly and encoded with round-to-nearest-even from the value itself (a
 * float64 goes to 16 bits in one rounding, never through float32) --- */
static double half_decode(uint16_t h, int ebits, int mbits) {
  int bias = (1 << (ebits - 1)) - 1;
  unsigned e = (h >> mbits) & ((1u << ebits) - 1), m = h & ((1u << mbits) - 1);
  double v;
  if (e == (1u << ebits) - 1) v = m ? NAN : INFINITY;
  else if (e == 0) v = ldexp((double)m, 1 - bias - mbits);
  else v = ldexp((double)(m | (1u << mbits)), (int)e - bias - mbits);
  return (h >> 15) ? -v : v;
}

static uint16_t half_encode(double x, int ebits, int mbits) {
  int bias = (1 << (ebits - 1)) - 1, emin = 1 - bias, emax = bias;
  uint16_t sign = signbit(x) ? 0x8000 : 0, inf = (uint16_t)(((1u << ebits) - 1) << mbits);
  if (isnan(x)) return (uint16_t)(sign | inf | (1u << (mbits - 1)));
  double a = fabs(x);
  if (isinf(a)) return sign | inf;
  if (a == 0) return sign;
  int e;
  frexp(a, &e);
  e -= 1; /* a = s * 2^e, s in [1, 2) */
  if (e < emin) /* subnormal: multiples of 2^(emin - mbits); rounding up to 2^mbits is the smallest normal */
    return (uint16_t)(sign | (uint16_t)nearbyint(ldexp(a, mbits - emin)));
  double q = nearbyint(ldexp(a, mbits - e)); /* in [2^mbits, 2^(mbits+1)] */
  if (q >= ldexp(1, mbits + 1)) {
    q = ldexp(1, mbits);
    e++;
  }
  if (e > emax) return sign | inf;
  return (uint16_t)(sign | (unsigned)(e + bias) << mbits | ((unsigned)q - (1u << mbits)));
}

/* bfloat16 from a float32: the upper half of its bits, rounded to nearest even */
static uint16_t bf16_from_f32(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffff) > 0x7f800000) return (uint16_t)((u >> 16) | 0x40); /* NaN stays quiet NaN */
  u += 0x7fff + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

/* element i of a stored format (little-endian bytes) into t's element i */
static bool convert_element(pt_st_format fmt, const unsigned char *p, pt_tensor *t, int64_t i) {
  uint64_t u = 0;
  size_t sz = format_size(fmt, t->dtype);
  for (size_t b = 0; b < sz; b++) u |= (uint64_t)p[b] << (8 * b);
  switch (fmt) {
  case PT_ST_F16: ((float *)pt_tensor_data(t))[i] = (float)half_decode((uint16_t)u, 5, 10); break;
  case PT_ST_BF16: {
    uint32_t w = (uint32_t)u << 16;
    memcpy((float *)pt_tensor_data(t) + i, &w, 4);
    break;
  }
  case PT_ST_I8: ((int32_t *)pt_tensor_data(t))[i] = (int8_t)(uint8_t)u; break;
  case PT_ST_I16: ((int32_t *)pt_tensor_data(t))[i] = (int16_t)(uint16_t)u; break;
  case PT_ST_U16: ((int32_t *)pt_tensor_data(t))[i] = (int32_t)u; break;
  case PT_ST_U32: ((int64_t *)pt_tensor_data(t))[i] = (int64_t)u; break;
  case PT_ST_U64:
    if (u > (uint64_t)INT64_MAX) return false;
    ((int64_t *)pt_tensor_data(t))[i] = (int64_t)u;
    break;
  case PT_ST_NATIVE: break;
  }
  return true;
}

/* An entry stored in another format than its tensor's: its bytes converted into the tensor. */
static pt_status convert_entry(pt_ctx *ctx, pt_st_entry *e, const unsigned char *raw) {
  size_t sz = format_size(e->format, e->dtype);
  int64_t n = pt_tensor_numel(e->tensor);
  for (int64_t i = 0; i < n; i++)
    if (!convert_element(e->format, raw + (size_t)i * sz, e->tensor, i))
      return pt_fail(ctx, PT_EFORMAT, "load: tensor '%s': U64 element %lld does not fit in int64", e->name,
                     (long long)i + 1);
  return PT_OK;
}

void pt_st_free(pt_safetensors *st) {
  for (int i = 0; i < st->n; i++) {
    free(st->entries[i].name);
    pt_tensor_release(st->entries[i].tensor);
  }
  free(st->entries);
  for (int i = 0; i < st->n_meta; i++) {
    free(st->meta_keys[i]);
    free(st->meta_values[i]);
  }
  free(st->meta_keys);
  free(st->meta_values);
  memset(st, 0, sizeof *st);
}

/* a JSON number that is a non-negative integer below 2^53 */
static bool json_uint(const cJSON *v, uint64_t *out) {
  if (!cJSON_IsNumber(v)) return false;
  double d = v->valuedouble;
  if (!(d >= 0 && d <= 9007199254740992.0) || d != floor(d)) return false;
  *out = (uint64_t)d;
  return true;
}

static int cmp_entry(const void *a, const void *b) {
  const pt_st_entry *x = a, *y = b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return 0;
}

static int cmp_name(const void *a, const void *b) {
  return strcmp(((const pt_st_entry *)a)->name, ((const pt_st_entry *)b)->name);
}

/* --- header strings: valid UTF-8, no NUL --- */

/* 0 when s is valid UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF), else the
 * 1-based offset of the first byte that is not */
size_t pt_st_utf8_invalid_at(const char *str) {
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0;
  while (s[i]) {
    unsigned c = s[i];
    int n;
    uint32_t cp, min;
    if (c < 0x80) {
      i++;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = 1, cp = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2, cp = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3, cp = c & 0x07, min = 0x10000;
    } else {
      return i + 1;
    }
    for (int k = 1; k <= n; k++) {
      if ((s[i + k] & 0xC0) != 0x80) return i + 1; /* also stops at the terminating NUL */
      cp = cp << 6 | (s[i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i + 1;
    i += (size_t)n + 1;
  }
  return 0;
}

/* s for an error message: control bytes, and with high also bytes >= 0x80, as \xNN */
static const char *shown(const char *str, bool high, char *buf, size_t size) {
  const unsigned char *s = (const unsigned char *)str;
  size_t o = 0;
  for (; *s && o + 8 < size; s++) {
    if (*s < 0x20 || *s == 0x7F || (high && *s >= 0x80))
      o += (size_t)snprintf(buf + o, size - o, "\\x%02x", *s);
    else buf[o++] = (char)*s;
  }
  if (*s) {
    memcpy(buf + o, "...", 3);
    o += 3;
  }
  buf[o] = '\0';
  return buf;
}

#define SHOWN_MAX 160

/* The ordinal (0-based, in document order) of the first string literal of a parsed JSON text
 * that holds the escape \u0000, or -1. cJSON would cut such a string short at the NUL. */
static long first_nul_string(const char *json, size_t len) {
  long ord = -1;
  bool in = false;
  for (size_t i = 0; i < len; i++) {
    char c = json[i];
    if (!in) {
      if (c == '"') in = true, ord++;
    } else if (c == '"') {
      in = false;
    } else if (c == '\\' && i + 1 < len) {
      if (json[i + 1] == 'u' && i + 5 < len && memcmp(json + i + 2, "0000", 4) == 0) return ord;
      i++;
    }
  }
  return -1;
}

enum { STR_OK, STR_UTF8, STR_NUL };

/* Checks the strings of j in document order (its key first when it is an object member),
 * counting them in *ord to match first_nul_string. */
static int check_strings(const cJSON *j, bool member, long *ord, long nul) {
  if (member) {
    if ((*ord)++ == nul) return STR_NUL;
    if (pt_st_utf8_invalid_at(j->string)) return STR_UTF8;
  }
  if (cJSON_IsString(j)) {
    if ((*ord)++ == nul) return STR_NUL;
    if (pt_st_utf8_invalid_at(j->valuestring)) return STR_UTF8;
  } else if (cJSON_IsArray(j) || cJSON_IsObject(j)) {
    const cJSON *c;
    cJSON_ArrayForEach(c, j) {
      int r = check_strings(c, cJSON_IsObject(j), ord, nul);
      if (r) return r;
    }
  }
  return STR_OK;
}

static pt_status header_strings(pt_ctx *ctx, const char *json, size_t len, const cJSON *root) {
  static const char *const why[] = {"", "is not valid UTF-8",
                                    "holds a NUL character (\\u0000), which partrain does not accept"};
  long nul = first_nul_string(json, len), ord = 0;
  char b[SHOWN_MAX];
  const cJSON *item;
  cJSON_ArrayForEach(item, root) {
    const char *name = item->string;
    if (ord++ == nul)
      return pt_fail(ctx, PT_EFORMAT, "load: tensor name '%s\\u0000...' %s", shown(name, true, b, sizeof b),
                     why[STR_NUL]);
    if (pt_st_utf8_invalid_at(name))
      return pt_fail(ctx, PT_EFORMAT, "load: tensor name '%s' %s", shown(name, true, b, sizeof b), why[STR_UTF8]);
    if (strcmp(name, "__metadata__") == 0 && cJSON_IsObject(item)) {
      const cJSON *kv;
      cJSON_ArrayForEach(kv, item) {
        const char *key = kv->string;
        if (ord++ == nul)
          return pt_fail(ctx, PT_EFORMAT, "load: __metadata__ key '%s\\u0000...' %s", shown(key, true, b, sizeof b),
                         why[STR_NUL]);
        if (pt_st_utf8_invalid_at(key))
          return pt_fail(ctx, PT_EFORMAT, "load: __metadata__ key '%s' %s", shown(key, true, b, sizeof b),
                         why[STR_UTF8]);
        int r = check_strings(kv, false, &ord, nul);
        if (r)
          return pt_fail(ctx, PT_EFORMAT, "load: __metadata__ value of '%s' %s", shown(key, false, b, sizeof b),
                         why[r]);
      }
      continue;
    }
    int r = check_strings(item, false, &ord, nul);
    if (r)
      return pt_fail(ctx, PT_EFORMAT, "load: tensor '%s': a string in its header entry %s",
                     shown(name, false, b, sizeof b), why[r]);
  }
  return PT_OK;
}

static pt_status parse_entry(pt_ctx *ctx, const cJSON *item, pt_st_entry *e) {
  const char *name = item->string;
  if (!cJSON_IsObject(item))
    return pt_fail(ctx, PT_EFORMAT, "load: tensor '%s': expected an object with dtype, shape and data_offsets", name);
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(item, "dtype");
  const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
  const cJSON *offs = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
  if (!cJSON_IsString(dt)) return pt_fail(ctx, PT_EFORMAT, "load: tensor '%s': missing or non-string dtype", name);
  if (!cJSON_IsArray(shape)) return pt_fail(ctx, PT_EFORMAT, "load: tensor '%s': missing or non-array shape", name);
  if (!cJSON_IsArray(offs)) return pt_fail(ctx, PT_EFORMAT, "load: tensor '%s': missing or non-array data_offsets", name);
  bool found = false;
  for (size_t i = 0; i < sizeof st_dtypes / sizeof st_dtypes[0]; i++)
    if (strcmp(dt->valuestring, st_dtypes[i].name) == 0) {
      e->dtype = st_dtypes[i].dt;
      e->format = st_dtypes[i].fmt;
      found = true;
    }
  if (!found) {
    for (int i = 0; st_unsupported[i]; i++)
      if (strcmp(dt->valuestring, st_unsupported[i]) == 0)
        return pt_fail(ctx, PT_EFORMAT,
                       "load: tensor '%s': unsupported dtype '%s' (partrain reads F32, F64, F16, BF16, I64, I32, "
                       "I16, I8, U64, U32, U16, U8 and BOOL)", name, dt->valuestring);
    return pt_fail(ctx, PT_EFORMAT, "load: tensor '%s': unknown dtype '%.32s'", name, dt->valuestring);
  }
  int nd = cJSON_GetArraySize(shape);
  if (nd > PT_MAX_DIMS)
    return pt_fail(ctx, PT_EFORMAT, "load: tensor '%s': %d dimensions (at most %d)", name, nd, PT_MAX_DIMS);
  e->ndim = nd;
  uint64_t numel = 1;
  int k = 0;
  const cJSON *v;
  cJSON_ArrayForEach(v, shape) {
    uint64_t d;
    if (!json_uint(v, &d))
      return pt_fail(ctx, PT_EFORMAT, "load: tensor '%s': shape entry %d is not a non-negative integer", name, k + 1);
    if (d && numel > ((uint64_t)1 << 53) / d)
      return pt_fail(ctx, PT_EFORMAT, "load: tensor '%s': shape is too large", name);
    numel *= d;
    e->shape[k++] = (int64_t)d;
  }
  if (cJSON_GetArraySize(offs) != 2 || !json_uint(cJSON_GetArrayItem(offs, 0), &e->begin) ||
      !json_uint(cJSON_GetArrayItem(offs, 1), &e->end))
    return pt_fail(ctx, PT_EFORMAT, "load: tensor '%s': data_offsets must be two non-negative integers [begin, end]", name);
  if (e->end < e->begin)
    return pt_fail(ctx, PT_EFORMAT, "load: tensor '%s': data_offsets [%llu, %llu] end before they begin", name,
                   (unsigned long long)e->begin, (unsigned long long)e->end);
  uint64_t need = numel * format_size(e->format, e->dtype);
  if (need != e->end - e->begin) {
    char s[PT_SHAPE_STR_MAX];
    return pt_fail(ctx, PT_EFORMAT,
                   "load: tensor '%s': shape %s of %s needs %llu bytes but data_offsets [%llu, %llu] hold %llu",
                   name, pt_shape_format(e->ndim, e->shape, s, sizeof s), dt->valuestring,
                   (unsigned long long)need, (unsigned long long)e->begin, (unsigned long long)e->end,
                   (unsigned long long)(e->end - e->begin));
  }
  return PT_OK;
}

pt_status pt_st_parse_header(pt_ctx *ctx, const char *json, size_t len, uint64_t data_len,
                             pt_safetensors *out) {
  memset(out, 0, sizeof *out);
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
  if (!root) {
    size_t pos = end && end >= json && end <= json + len ? (size_t)(end - json) : 0;
    return pt_fail(ctx, PT_EFORMAT, "load: invalid JSON in the header (near byte %zu)", pos);
  }
  for (const char *p = end; p && p < json + len; p++)
    if (*p != ' ' && *p != '\n' && *p != '\t' && *p != '\r' && *p != '\0') {
      cJSON_Delete(root);
      return pt_fail(ctx, PT_EFORMAT, "load: unexpected bytes after the JSON header (at byte %zu)",
                     (size_t)(p - json));
    }
  pt_status st = PT_OK;
  if (!cJSON_IsObject(root)) {
    st = pt_fail(ctx, PT_EFORMAT, "load: the header is not a JSON object");
    goto done;
  }
  if ((st = header_strings(ctx, json, (size_t)(end - json), root))) goto done;
  int count = cJSON_GetArraySize(root);
  out->entries = calloc((size_t)count + 1, sizeof *out->entries);
  if (!out->entries) {
    st = pt_fail(ctx, PT_ENOMEM, "load: out of memory");
    goto done;
  }
  const cJSON *item;
  cJSON_ArrayForEach(item, root) {
    if (strcmp(item->string, "__metadata__") == 0) {
      if (out->meta_keys) {
        st = pt_fail(ctx, PT_EFORMAT, "load: duplicate __metadata__");
        goto done;
      }
      if (!cJSON_IsObject(item)) {
        st = pt_fail(ctx, PT_EFORMAT, "load: __metadata__ is not an object");
        goto done;
      }
      int m = cJSON_GetArraySize(item);
      out->meta_keys = calloc((size_t)m + 1, sizeof(char *));
      out->meta_values = calloc((size_t)m + 1, sizeof(char *));
      if (!out->meta_keys || !out->meta_values) {
        st = pt_fail(ctx, PT_ENOMEM, "load: out of memory");
        goto done;
      }
      const cJSON *kv;
      cJSON_ArrayForEach(kv, item) {
        if (!cJSON_IsString(kv)) {
          st = pt_fail(ctx, PT_EFORMAT, "load: __metadata__ value of '%s' is not a string", kv->string);
          goto done;
        }
        int i = out->n_meta++;
        out->meta_keys[i] = strdup(kv->string);
        out->meta_values[i] = strdup(kv->valuestring);
        if (!out->meta_keys[i] || !out->meta_values[i]) {
          st = pt_fail(ctx, PT_ENOMEM, "load: out of memory");
          goto done;
        }
      }
      continue;
    }
    pt_st_entry *e = &out->entries[out->n];
    if (!(e->name = strdup(item->string))) {
      st = pt_fail(ctx, PT_ENOMEM, "load: out of memory");
      goto done;
    }
    out->n++;
    if ((st = parse_entry(ctx, item, e))) goto done;
    if (e->end > data_len) {
      st = pt_fail(ctx, PT_EFORMAT,
                   "load: tensor '%s': data_offsets [%llu, %llu] out of range (the data section has %llu bytes)",
                   e->name, (unsigned long long)e->begin, (unsigned long long)e->end,
                   (unsigned long long)data_len);
      goto done;
    }
  }
  /* names are unique */
  qsort(out->entries, (size_t)out->n, sizeof *out->entries, cmp_name);
  for (int i = 1; i < out->n; i++)
    if (strcmp(out->entries[i - 1].name, out->entries[i].name) == 0) {
      st = pt_fail(ctx, PT_EFORMAT, "load: duplicate tensor name '%s'", out->entries[i].name);
      goto done;
    }
  /* the tensors tile the data section exactly */
  qsort(out->entries, (size_t)out->n, sizeof *out->entries, cmp_entry);
  uint64_t pos = 0;
  for (int i = 0; i < out->n; i++) {
    pt_st_entry *e = &out->entries[i];
    if (e->begin < pos) {
      st = pt_fail(ctx, PT_EFORMAT, "load: tensor '%s': data_offsets [%llu, %llu] overlap tensor '%s'",
                   e->name, (unsigned long long)e->begin, (unsigned long long)e->end,
                   out->entries[i - 1].name);
      goto done;
    }
    if (e->begin > pos) {
      st = pt_fail(ctx, PT_EFORMAT,
                   "load: bytes %llu to %llu of the data section belong to no tensor (before '%s')",
                   (unsigned long long)pos, (unsigned long long)e->begin, e->name);
      goto done;
    }
    pos = e->end;
  }
  if (pos != data_len) {
    st = pt_fail(ctx, PT_EFORMAT,
                 "load: bytes %llu to %llu of the data section belong to no tensor (after the last one)",
                 (unsigned long long)pos, (unsigned long long)data_len);
    goto done;
  }
done:
  cJSON_Delete(root);
  if (st) pt_st_free(out);
  return st;
}

static pt_status header_length(pt_ctx *ctx, const unsigned char *b8, uint64_t file_size, uint64_t *n) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | b8[i];
  if (v > PT_ST_MAX_HEADER)
    return pt_fail(ctx, PT_EFORMAT, "load: header length %llu is absurd (more than 100 MB)",
                   (unsigned long long)v);
  if (v > file_size - 8)
    return pt_fail(ctx, PT_EFORMAT, "load: header length %llu is larger than the file (%llu bytes)",
                   (unsigned long long)v, (unsigned long long)file_size);
  if (v < 2) return pt_fail(ctx, PT_EFORMAT, "load: header length %llu is too small", (unsigned long long)v);
  *n = v;
  return PT_OK;
}

static void swap_to_native(pt_tensor *t) {
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
  size_t es = pt_dtype_size(t->dtype);
  unsigned char *p = pt_tensor_data(t);
  int64_t n = pt_tensor_numel(t);
  for (int64_t i = 0; i < n; i++, p += es)
    for (size_t a = 0, b = es - 1; a < b; a++, b--) {
      unsigned char c = p[a];
      p[a] = p[b];
      p[b] = c;
    }
#else
  (void)t;
#endif
}

static pt_status alloc_entries(pt_ctx *ctx, pt_safetensors *st) {
  for (int i = 0; i < st->n; i++) {
    pt_st_entry *e = &st->entries[i];
    if (pt_tensor_empty(ctx, e->dtype, e->ndim, e->shape, &e->tensor)) return pt_fail_prefix(ctx, "load");
  }
  return PT_OK;
}

pt_status pt_st_decode(pt_ctx *ctx, const unsigned char *buf, size_t len, pt_safetensors *out) {
  memset(out, 0, sizeof *out);
  if (len < 8) return pt_fail(ctx, PT_EFORMAT, "load: truncated file (%zu bytes, the header length alone takes 8)", len);
  uint64_t n = 0;
  pt_status st = header_length(ctx, buf, len, &n);
  if (st) return st;
  if ((st = pt_st_parse_header(ctx, (const char *)buf + 8, (size_t)n, len - 8 - n, out))) return st;
  if ((st = alloc_entries(ctx, out))) {
    pt_st_free(out);
    return st;
  }
  for (int i = 0; i < out->n; i++) {
    pt_st_entry *e = &out->entries[i];
    if (e->format != PT_ST_NATIVE) {
      if ((st = convert_entry(ctx, e, buf + 8 + n + e->begin))) {
        pt_st_free(out);
        return st;
      }
      continue;
    }
    memcpy(pt_tensor_data(e->tensor), buf + 8 + n + e->begin, (size_t)(e->end - e->begin));
    swap_to_native(e->tensor);
  }
  return PT_OK;
}

pt_status pt_st_read(pt_ctx *ctx, const char *path, pt_safetensors *out) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "rb");
  if (!f) return pt_fail(ctx, PT_EIO, "load: cannot open '%s': %s", path, strerror(errno));
  struct stat sb;
  pt_status st = PT_OK;
  char *header = NULL;
  if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
    st = pt_fail(ctx, PT_EIO, "load: '%s' is not a regular file", path);
    goto done;
  }
  uint64_t size = (uint64_t)sb.st_size;
  unsigned char b8[8];
  if (size < 8 || fread(b8, 1, 8, f) != 8) {
    st = pt_fail(ctx, PT_EFORMAT, "load: '%s': truncated file (%llu bytes, the header length alone takes 8)",
                 path, (unsigned long long)size);
    goto done;
  }
  uint64_t n = 0;
  if ((st = header_length(ctx, b8, size, &n))) goto prefix;
  header = malloc((size_t)n);
  if (!header) {
    st = pt_fail(ctx, PT_ENOMEM, "load: out of memory for a %llu-byte header", (unsigned long long)n);
    goto done;
  }
  if (fread(header, 1, (size_t)n, f) != n) {
    st = pt_fail(ctx, PT_EIO, "load: '%s': read error", path);
    goto done;
  }
  if ((st = pt_st_parse_header(ctx, header, (size_t)n, size - 8 - n, out))) goto prefix;
  if ((st = alloc_entries(ctx, out))) goto done;
  /* entries are sorted by offset and tile the data section: read it front to back */
  for (int i = 0; i < out->n; i++) {
    pt_st_entry *e = &out->entries[i];
    size_t nb = (size_t)(e->end - e->begin);
    unsigned char *raw = e->format == PT_ST_NATIVE ? pt_tensor_data(e->tensor) : malloc(nb ? nb : 1);
    if (!raw) {
      st = pt_fail(ctx, PT_ENOMEM, "load: out of memory reading tensor '%s'", e->name);
      goto done;
    }
    if (nb && fread(raw, 1, nb, f) != nb) {
      if (e->format != PT_ST_NATIVE) free(raw);
      st = pt_fail(ctx, PT_EIO, "load: '%s': read error in tensor '%s' (file changed while reading?)",
                   path, e->name);
      goto done;
    }
    if (e->format != PT_ST_NATIVE) {
      st = convert_entry(ctx, e, raw);
      free(raw);
      if (st) goto prefix;
      continue;
    }
    swap_to_native(e->tensor);
  }
  goto done;
prefix: {
  /* "load: msg" -> "load: 'path': msg" */
  char tmp[PT_ERRMSG_MAX];
  const char *msg = ctx->err + (strncmp(ctx->err, "load: ", 6) == 0 ? 6 : 0);
  int w = snprintf(tmp, sizeof tmp, "load: '%.200s': ", path);
  if (w < 0 || w >= (int)sizeof tmp) w = 0;
  size_t rest = strnlen(msg, sizeof tmp - (size_t)w - 1);
  memmove(tmp + w, msg, rest);
  tmp[(size_t)w + rest] = '\0';
  memcpy(ctx->err, tmp, sizeof tmp);
}
done:
  free(header);
  fclose(f);
  if (st) pt_st_free(out);
  return st;
}

/* --- writing --- */

static cJSON *raw_uint(uint64_t v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
  return cJSON_CreateRaw(buf);
}

pt_status pt_st_write(pt_ctx *ctx, const char *path, int n, const char *const *names,
                      pt_tensor *const *tensors, int n_meta, const char *const *keys,
                      const char *const *values) {
  return pt_st_write_as(ctx, path, n, names, tensors, n_meta, keys, values, PT_ST_NATIVE, 0);
}

/* A floating tensor's elements as 16-bit floats, little-endian, in chunks. */
static bool write_half(FILE *f, const pt_tensor *c, pt_st_format fmt) {
  unsigned char buf[8192];
  int64_t n = pt_tensor_numel(c), i = 0;
  while (i < n) {
    size_t k = 0;
    for (; i < n && k < sizeof buf; i++, k += 2) {
      uint16_t h;
      if (c->dtype == PT_FLOAT32) {
        float v = ((const float *)pt_tensor_data(c))[i];
        h = fmt == PT_ST_BF16 ? bf16_from_f32(v) : half_encode(v, 5, 10);
      } else {
        double v = ((const double *)pt_tensor_data(c))[i];
        h = fmt == PT_ST_BF16 ? half_encode(v, 8, 7) : half_encode(v, 5, 10);
      }
      buf[k] = (unsigned char)(h & 0xff);
      buf[k + 1] = (unsigned char)(h >> 8);
    }
    if (fwrite(buf, 1, k, f) != k) return false;
  }
  return true;
}

pt_status pt_st_write_as(pt_ctx *ctx, const char *path, int n, const char *const *names,
                         pt_tensor *const *tensors, int n_meta, const char *const *keys,
                         const char *const *values, pt_st_format floats, int n_floats) {
  pt_status st = PT_OK;
  if (floats != PT_ST_NATIVE && floats != PT_ST_F16 && floats != PT_ST_BF16)
    return pt_fail(ctx, PT_EARG, "save: floating point tensors can be stored as F16 or BF16 only");
  cJSON *root = cJSON_CreateObject();
  char *json = NULL, *tmp_path = NULL;
  pt_tensor **conts = calloc((size_t)n + 1, sizeof *conts);
  FILE *f = NULL;
  if (!root || !conts) {
    st = pt_fail(ctx, PT_ENOMEM, "save: out of memory");
    goto done;
  }
  if (n_meta > 0) {
    cJSON *meta = cJSON_AddObjectToObject(root, "__metadata__");
    if (!meta) {
      st = pt_fail(ctx, PT_ENOMEM, "save: out of memory");
      goto done;
    }
    for (int i = 0; i < n_meta; i++) {
      char b[SHOWN_MAX];
      size_t bad;
      if ((bad = pt_st_utf8_invalid_at(keys[i]))) {
        st = pt_fail(ctx, PT_EARG, "save: metadata key '%s' is not valid UTF-8 (byte %zu)",
                     shown(keys[i], true, b, sizeof b), bad);
        goto done;
      }
      if ((bad = pt_st_utf8_invalid_at(values[i]))) {
        st = pt_fail(ctx, PT_EARG, "save: metadata '%s': value is not valid UTF-8 (byte %zu)",
                     shown(keys[i], false, b, sizeof b), bad);
        goto done;
      }
      if (cJSON_GetObjectItemCaseSensitive(meta, keys[i])) {
        st = pt_fail(ctx, PT_EARG, "save: duplicate metadata key '%s'", keys[i]);
        goto done;
      }
      if (!cJSON_AddStringToObject(meta, keys[i], values[i])) {
        st = pt_fail(ctx, PT_ENOMEM, "save: out of memory");
        goto done;
      }
    }
  }
  uint64_t pos = 0;
  for (int i = 0; i < n; i++) {
    pt_tensor *t = tensors[i];
    const char *dn = pt_st_dtype_name(t->dtype);
    bool half = floats != PT_ST_NATIVE && i < n_floats && pt_dtype_is_floating(t->dtype);
    if (half) dn = floats == PT_ST_F16 ? "F16" : "BF16";
    size_t bad = pt_st_utf8_invalid_at(names[i]);
    if (bad) {
      char b[SHOWN_MAX];
      st = pt_fail(ctx, PT_EARG, "save: tensor name '%s' is not valid UTF-8 (byte %zu)",
                   shown(names[i], true, b, sizeof b), bad);
      goto done;
    }
    if (strcmp(names[i], "__metadata__") == 0) {
      st = pt_fail(ctx, PT_EARG, "save: '__metadata__' cannot be a tensor name");
      goto done;
    }
    if (cJSON_GetObjectItemCaseSensitive(root, names[i])) {
      st = pt_fail(ctx, PT_EARG, "save: duplicate tensor name '%s'", names[i]);
      goto done;
    }
    if (!dn) {
      st = pt_fail(ctx, PT_EARG, "save: tensor '%s' has dtype %s, which safetensors cannot hold", names[i],
                   pt_dtype_name(t->dtype));
      goto done;
    }
    if (t->storage->device.type != PT_CPU) {
      st = pt_fail(ctx, PT_EDEVICE, "save: tensor '%s' is not on the CPU (move it with :to(\"cpu\"))", names[i]);
      goto done;
    }
    if (pt_tensor_contiguous_raw(ctx, t, &conts[i])) {
      st = pt_fail_prefix(ctx, "save");
      goto done;
    }
    uint64_t nb = (uint64_t)pt_tensor_numel(t) * (half ? 2 : pt_dtype_size(t->dtype));
    cJSON *e = cJSON_AddObjectToObject(root, names[i]);
    cJSON *shape = cJSON_CreateArray(), *offs = cJSON_CreateArray();
    if (!e || !shape || !offs) {
      cJSON_Delete(shape);
      cJSON_Delete(offs);
      st = pt_fail(ctx, PT_ENOMEM, "save: out of memory");
      goto done;
    }
    cJSON_AddStringToObject(e, "dtype", dn);
    cJSON_AddItemToObject(e, "shape", shape);
    cJSON_AddItemToObject(e, "data_offsets", offs);
    for (int d = 0; d < t->ndim; d++) cJSON_AddItemToArray(shape, raw_uint((uint64_t)t->shape[d]));
    cJSON_AddItemToArray(offs, raw_uint(pos));
    cJSON_AddItemToArray(offs, raw_uint(pos + nb));
    pos += nb;
  }
  json = cJSON_PrintUnformatted(root);
  if (!json) {
    st = pt_fail(ctx, PT_ENOMEM, "save: out of memory");
    goto done;
  }
  size_t jl = strlen(json);
  size_t padded = (jl + 7) & ~(size_t)7; /* the data section starts 8-byte aligned */
  size_t pl = strlen(path);
  tmp_path = malloc(pl + 5);
  if (!tmp_path) {
    st = pt_fail(ctx, PT_ENOMEM, "save: out of memory");
    goto done;
  }
  memcpy(tmp_path, path, pl);
  memcpy(tmp_path + pl, ".tmp", 5);
  f = fopen(tmp_path, "wb");
  if (!f) {
    st = pt_fail(ctx, PT_EIO, "save: cannot create '%s': %s", tmp_path, strerror(errno));
    goto done;
  }
  unsigned char b8[8];
  for (int i = 0; i < 8; i++) b8[i] = (unsigned char)((uint64_t)padded >> (8 * i));
  bool ok = fwrite(b8, 1, 8, f) == 8 && fwrite(json, 1, jl, f) == jl;
  for (size_t i = jl; ok && i < padded; i++) ok = fputc(' ', f) != EOF;
  for (int i = 0; ok && i < n; i++) {
    pt_tensor *c = conts[i];
    if (floats != PT_ST_NATIVE && i < n_floats && pt_dtype_is_floating(c->dtype)) {
      ok = write_half(f, c, floats);
      continue;
    }
    size_t nb = (size_t)pt_tensor_numel(c) * pt_dtype_size(c->dtype);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    ok = nb == 0 || fwrite(pt_tensor_data(c), 1, nb, f) == nb;
#else
    size_t es = pt_dtype_size(c->dtype);
    const unsigned char *p = pt_tensor_data(c);
    for (size_t k = 0; ok && k < nb; k += es)
      for (size_t b = es; ok && b-- > 0;) ok = fputc(p[k + b], f) != EOF;
#endif
  }
  if (ok) ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
  int cerr = fclose(f);
  f = NULL;
  if (!ok || cerr != 0) {
    st = pt_fail(ctx, PT_EIO, "save: error writing '%s': %s", tmp_path, strerror(errno));
    remove(tmp_path);
    goto done;
  }
  if (rename(tmp_path, path) != 0) {
    st = pt_fail(ctx, PT_EIO, "save: cannot rename '%s' to '%s': %s", tmp_path, path, strerror(errno));
    remove(tmp_path);
    goto done;
  }
done:
  if (f) fclose(f);
  for (int i = 0; conts && i < n; i++) pt_tensor_release(conts[i]);
  free(conts);
  free(tmp_path);
  free(json);
  cJSON_Delete(root);
  return st;
}
