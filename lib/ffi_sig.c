/* See ffi_sig.h: a small recursive-descent parser over a tokenised signature string. */
#include "ffi_sig.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define MAX_WORDS 4
#define WORD_MAX 32

typedef struct parser {
  pt_ctx *ctx;
  const char *text;
  size_t pos; /* 0-based index of the next unread character */
} parser;

static pt_status fail_at(parser *p, size_t pos, const char *fmt, const char *arg) {
  char what[300];
  snprintf(what, sizeof what, fmt, arg);
  return pt_fail(p->ctx, PT_EARG, "ffi: bad signature \"%.200s\": %s at position %zu", p->text, what,
                 pos + 1);
}

static void skip_space(parser *p) {
  while (p->text[p->pos] && isspace((unsigned char)p->text[p->pos])) p->pos++;
}

static bool is_ident_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static bool is_ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Reads an identifier at p->pos into buf (truncated to WORD_MAX-1); returns its length. */
static size_t read_ident(parser *p, char *buf) {
  size_t start = p->pos, n = 0;
  while (is_ident_char(p->text[p->pos])) {
    if (n < WORD_MAX - 1) buf[n++] = p->text[p->pos];
    p->pos++;
  }
  buf[n] = '\0';
  return p->pos - start;
}

typedef struct named_type {
  const char *name;
  pt_ffi_kind kind;
  pt_dtype elem;
} named_type;

static const named_type scalar_types[] = {
    {"void", PT_FFI_VOID, PT_DTYPE_COUNT},        {"bool", PT_FFI_BOOL, PT_DTYPE_COUNT},
    {"int", PT_FFI_INT32, PT_DTYPE_COUNT},        {"int32_t", PT_FFI_INT32, PT_DTYPE_COUNT},
    {"signed int", PT_FFI_INT32, PT_DTYPE_COUNT}, {"unsigned", PT_FFI_UINT32, PT_DTYPE_COUNT},
    {"unsigned int", PT_FFI_UINT32, PT_DTYPE_COUNT}, {"uint32_t", PT_FFI_UINT32, PT_DTYPE_COUNT},
    {"long", PT_FFI_INT64, PT_DTYPE_COUNT},       {"long int", PT_FFI_INT64, PT_DTYPE_COUNT},
    {"long long", PT_FFI_INT64, PT_DTYPE_COUNT},  {"int64_t", PT_FFI_INT64, PT_DTYPE_COUNT},
    {"ssize_t", PT_FFI_INT64, PT_DTYPE_COUNT},    {"size_t", PT_FFI_UINT64, PT_DTYPE_COUNT},
    {"uint64_t", PT_FFI_UINT64, PT_DTYPE_COUNT},  {"unsigned long", PT_FFI_UINT64, PT_DTYPE_COUNT},
    {"float", PT_FFI_FLOAT, PT_DTYPE_COUNT},      {"double", PT_FFI_DOUBLE, PT_DTYPE_COUNT},
};

static const named_type pointer_types[] = {
    {"char", PT_FFI_STRING, PT_DTYPE_COUNT}, {"void", PT_FFI_PTR, PT_DTYPE_COUNT},
    {"float", PT_FFI_PTR, PT_FLOAT32},       {"double", PT_FFI_PTR, PT_FLOAT64},
    {"int64_t", PT_FFI_PTR, PT_INT64},       {"long", PT_FFI_PTR, PT_INT64},
    {"long long", PT_FFI_PTR, PT_INT64},     {"int", PT_FFI_PTR, PT_INT32},
    {"int32_t", PT_FFI_PTR, PT_INT32},       {"uint8_t", PT_FFI_PTR, PT_UINT8},
    {"unsigned char", PT_FFI_PTR, PT_UINT8}, {"bool", PT_FFI_PTR, PT_BOOL},
};

static const named_type *lookup(const named_type *table, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(table[i].name, name) == 0) return &table[i];
  return NULL;
}

/* words that can only be part of a type, never a parameter's name */
static bool is_type_word(const char *w) {
  static const char *const kw[] = {"void", "bool", "char", "int", "long", "short", "signed",
                                   "unsigned", "float", "double", "const"};
  for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++)
    if (strcmp(kw[i], w) == 0) return true;
  return lookup(scalar_types, sizeof scalar_types / sizeof scalar_types[0], w) != NULL;
}

static void join_words(char words[][WORD_MAX], int n, char *buf, size_t size) {
  buf[0] = '\0';
  for (int i = 0; i < n; i++) {
    if (i) strncat(buf, " ", size - strlen(buf) - 1);
    strncat(buf, words[i], size - strlen(buf) - 1);
  }
}

/* type := {'const'} word {word|'const'} {'*'} [name]   (name only when allow_name) */
static pt_status parse_type(parser *p, bool allow_name, pt_ffi_type *out, size_t *type_pos) {
  char words[MAX_WORDS + 1][WORD_MAX];
  size_t word_pos[MAX_WORDS + 1];
  int nwords = 0;
  skip_space(p);
  *type_pos = p->pos;
  while (is_ident_start(p->text[p->pos])) {
    size_t at = p->pos;
    char w[WORD_MAX];
    read_ident(p, w);
    skip_space(p);
    if (strcmp(w, "const") == 0) continue;
    if (nwords == MAX_WORDS + 1) return fail_at(p, at, "unknown type '%s'", w);
    word_pos[nwords] = at;
    memcpy(words[nwords++], w, WORD_MAX);
  }
  if (nwords == 0) return fail_at(p, p->pos, "expected a type%s", "");
  int stars = 0;
  size_t star_pos = p->pos;
  while (p->text[p->pos] == '*' || (stars > 0 && is_ident_start(p->text[p->pos]))) {
    if (p->text[p->pos] == '*') {
      stars++;
      p->pos++;
    } else { /* "float * const x": qualifiers after the star */
      size_t save = p->pos;
      char w[WORD_MAX];
      read_ident(p, w);
      if (strcmp(w, "const") != 0) {
        p->pos = save;
        break;
      }
    }
    skip_space(p);
  }
  char base[MAX_WORDS * WORD_MAX + MAX_WORDS];
  join_words(words, nwords, base, sizeof base);
  const named_type *table = stars ? pointer_types : scalar_types;
  size_t tn = stars ? sizeof pointer_types / sizeof pointer_types[0]
                    : sizeof scalar_types / sizeof scalar_types[0];
  const named_type *t = lookup(table, tn, base);
  if (!t && stars == 0 && allow_name && nwords >= 2 && !is_type_word(words[nwords - 1])) {
    /* "unsigned n": the last word is the parameter's name */
    join_words(words, nwords - 1, base, sizeof base);
    t = lookup(table, tn, base);
    if (!t) join_words(words, nwords, base, sizeof base);
  } else if (t && allow_name && is_ident_start(p->text[p->pos])) {
    size_t at = p->pos;
    char w[WORD_MAX];
    read_ident(p, w); /* "float *x" */
    skip_space(p);
    if (is_type_word(w)) return fail_at(p, at, "unexpected type word '%s' after the pointer", w);
  }
  if (!t) {
    if (stars) {
      char spelled[200];
      snprintf(spelled, sizeof spelled, "%s%.*s", base, stars > 8 ? 8 : stars, "********");
      if (stars > 1 || lookup(scalar_types, sizeof scalar_types / sizeof scalar_types[0], base))
        return fail_at(p, word_pos[0], "unsupported pointer type '%s'", spelled);
    }
    join_words(words, nwords, base, sizeof base);
    return fail_at(p, word_pos[0], "unknown type '%s'", base);
  }
  if (stars > 1) {
    char spelled[200];
    snprintf(spelled, sizeof spelled, "%s%.*s", base, stars > 8 ? 8 : stars, "********");
    return fail_at(p, star_pos, "unsupported pointer type '%s'", spelled);
  }
  out->kind = t->kind;
  out->elem = t->elem;
  return PT_OK;
}

pt_status pt_ffi_sig_parse(pt_ctx *ctx, const char *text, pt_ffi_sig *out) {
  parser p = {ctx, text ? text : "", 0};
  memset(out, 0, sizeof *out);
  size_t at;
  pt_status st = parse_type(&p, false, &out->ret, &at);
  if (st) return st;
  if (out->ret.kind == PT_FFI_PTR)
    return fail_at(&p, at, "return type '%s' is not supported (use void, a number type or const char*)",
                   pt_ffi_type_name(out->ret));
  skip_space(&p);
  if (p.text[p.pos] != '(') return fail_at(&p, p.pos, "expected '('%s", "");
  p.pos++;
  skip_space(&p);
  if (p.text[p.pos] == ')') {
    p.pos++;
  } else {
    for (;;) {
      pt_ffi_type t;
      st = parse_type(&p, true, &t, &at);
      if (st) return st;
      if (t.kind == PT_FFI_VOID) {
        if (out->nargs == 0 && p.text[p.pos] == ')') {
          p.pos++;
          break;
        }
        return fail_at(&p, at, "void is only allowed alone in the parameter list%s", "");
      }
      if (out->nargs == PT_FFI_MAX_ARGS) {
        char lim[32];
        snprintf(lim, sizeof lim, "%d", PT_FFI_MAX_ARGS);
        return fail_at(&p, at, "too many parameters (at most %s)", lim);
      }
      out->args[out->nargs++] = t;
      if (p.text[p.pos] == ',') {
        p.pos++;
        continue;
      }
      if (p.text[p.pos] == ')') {
        p.pos++;
        break;
      }
      return fail_at(&p, p.pos, "expected ',' or ')'%s", "");
    }
  }
  skip_space(&p);
  if (p.text[p.pos] != '\0') return fail_at(&p, p.pos, "unexpected text after ')'%s", "");
  return PT_OK;
}

const char *pt_ffi_type_name(pt_ffi_type t) {
  switch (t.kind) {
  case PT_FFI_VOID: return "void";
  case PT_FFI_BOOL: return "bool";
  case PT_FFI_INT32: return "int";
  case PT_FFI_UINT32: return "unsigned";
  case PT_FFI_INT64: return "int64_t";
  case PT_FFI_UINT64: return "uint64_t";
  case PT_FFI_FLOAT: return "float";
  case PT_FFI_DOUBLE: return "double";
  case PT_FFI_STRING: return "const char*";
  case PT_FFI_PTR:
    switch (t.elem) {
    case PT_FLOAT32: return "float*";
    case PT_FLOAT64: return "double*";
    case PT_INT64: return "int64_t*";
    case PT_INT32: return "int32_t*";
    case PT_UINT8: return "uint8_t*";
    case PT_BOOL: return "bool*";
    default: return "void*";
    }
  }
  return "?";
}

const char *pt_ffi_sig_format(const pt_ffi_sig *sig, char *buf, size_t n) {
  if (n == 0) return buf;
  int w = snprintf(buf, n, "%s(", pt_ffi_type_name(sig->ret));
  for (int i = 0; i < sig->nargs && w >= 0 && (size_t)w < n; i++)
    w += snprintf(buf + w, n - (size_t)w, "%s%s", i ? ", " : "", pt_ffi_type_name(sig->args[i]));
  if (w >= 0 && (size_t)w < n) snprintf(buf + w, n - (size_t)w, ")");
  return buf;
}
