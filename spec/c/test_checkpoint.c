/* lib/checkpoint.c: safetensors round trip, atomic write, and hostile files. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint.h"
#include "testing.h"

/* a file image: 8-byte length, header, data */
static size_t make_file(unsigned char *buf, const char *header, const void *data, size_t dlen) {
  size_t hl = strlen(header);
  for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)hl >> (8 * i));
  memcpy(buf + 8, header, hl);
  if (dlen) memcpy(buf + 8 + hl, data, dlen);
  return 8 + hl + dlen;
}

static void expect_error(pt_ctx *ctx, const char *header, size_t dlen, const char *needle) {
  unsigned char buf[4096];
  unsigned char data[256] = {0};
  size_t n = make_file(buf, header, data, dlen);
  pt_safetensors st;
  pt_status s = pt_st_decode(ctx, buf, n, &st);
  CHECK(s == PT_EFORMAT);
  CHECK(st.n == 0 && st.entries == NULL);
  if (!strstr(pt_errmsg(ctx), needle))
    fprintf(stderr, "  header %s: got '%s', wanted '%s'\n", header, pt_errmsg(ctx), needle);
  CHECK(strstr(pt_errmsg(ctx), needle) != NULL);
}

static void test_decode_valid(pt_ctx *ctx) {
  unsigned char buf[512];
  float w[2] = {1.5f, -2.0f};
  unsigned char data[8 + 3];
  memcpy(data, w, 8);
  data[8] = 7, data[9] = 8, data[10] = 9;
  size_t n = make_file(buf,
                       "{\"b\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[8,11]},"
                       "\"a\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8]},"
                       "\"__metadata__\":{\"k\":\"v\"}}  ",
                       data, sizeof data);
  pt_safetensors st;
  CHECK(pt_st_decode(ctx, buf, n, &st) == PT_OK);
  CHECK(st.n == 2);
  CHECK(strcmp(st.entries[0].name, "a") == 0); /* sorted by offset */
  CHECK(st.entries[0].tensor->dtype == PT_FLOAT32 && st.entries[0].tensor->ndim == 2);
  CHECK(pt_tensor_get_flat(st.entries[0].tensor, 1) == -2.0);
  CHECK(st.entries[1].tensor->dtype == PT_UINT8 && pt_tensor_get_flat(st.entries[1].tensor, 2) == 9);
  CHECK(st.n_meta == 1 && strcmp(st.meta_keys[0], "k") == 0 && strcmp(st.meta_values[0], "v") == 0);
  pt_st_free(&st);
}

static void test_hostile(pt_ctx *ctx) {
  unsigned char buf[64] = {0};
  pt_safetensors st;
  /* truncated: fewer than 8 bytes */
  CHECK(pt_st_decode(ctx, buf, 5, &st) == PT_EFORMAT);
  CHECK(strstr(pt_errmsg(ctx), "truncated") != NULL);
  /* header length absurd, then larger than the file */
  memset(buf, 0, sizeof buf);
  buf[4] = 0x10; /* 2^36 */
  CHECK(pt_st_decode(ctx, buf, 16, &st) == PT_EFORMAT);
  CHECK(strstr(pt_errmsg(ctx), "absurd") != NULL);
  memset(buf, 0, sizeof buf);
  buf[0] = 200;
  CHECK(pt_st_decode(ctx, buf, 16, &st) == PT_EFORMAT);
  CHECK(strstr(pt_errmsg(ctx), "larger than the file") != NULL);

  expect_error(ctx, "{\"a\":", 0, "invalid JSON");
  expect_error(ctx, "[1,2]", 0, "not a JSON object");
  expect_error(ctx, "{} x", 0, "unexpected bytes after the JSON header");
  expect_error(ctx, "{\"a\":{\"dtype\":\"Q7\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "unknown dtype 'Q7'");
  expect_error(ctx, "{\"a\":{\"dtype\":\"F8_E4M3\",\"shape\":[4],\"data_offsets\":[0,4]}}", 4, "unsupported dtype 'F8_E4M3'");
  expect_error(ctx, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
               "shape {2} of F32 needs 8 bytes but data_offsets [0, 4] hold 4");
  expect_error(ctx, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 2, "out of range");
  expect_error(ctx, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", 4, "end before they begin");
  expect_error(ctx, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                    "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[2,6]}}", 6, "overlap");
  expect_error(ctx, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "belong to no tensor (before 'a')");
  expect_error(ctx, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 6, "after the last one");
  expect_error(ctx, "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, "shape entry 1");
  expect_error(ctx, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4, "shape entry 1");
  expect_error(ctx, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4, "data_offsets must be two");
  expect_error(ctx, "{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "missing or non-string dtype");
  expect_error(ctx, "{\"a\":3}", 0, "expected an object");
  expect_error(ctx, "{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}", 1, "9 dimensions");
  expect_error(ctx, "{\"a\":{\"dtype\":\"U8\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,1]}}", 1, "too large");
  expect_error(ctx, "{\"__metadata__\":{\"k\":1}}", 0, "value of 'k' is not a string");
  expect_error(ctx, "{\"__metadata__\":[]}", 0, "__metadata__ is not an object");
  expect_error(ctx, "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                    "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}", 2, "duplicate tensor name 'a'");
}

static void test_write_read(pt_ctx *ctx) {
  char path[] = "/tmp/pt_test_ckpt_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  close(fd);
  int64_t s1[2] = {2, 3}, s2[1] = {4};
  pt_tensor *a, *b, *at;
  pt_tensor_empty(ctx, PT_FLOAT64, 2, s1, &a);
  pt_tensor_empty(ctx, PT_INT64, 1, s2, &b);
  for (int i = 0; i < 6; i++) pt_tensor_set_flat(a, i, i * 0.25);
  for (int i = 0; i < 4; i++) pt_tensor_set_flat(b, i, -i);
  CHECK(pt_transpose_raw(ctx, a, 0, 1, &at) == PT_OK); /* non-contiguous: saved as {3,2} */
  const char *names[2] = {"w.t", "idx"};
  pt_tensor *ts[2] = {at, b};
  const char *keys[1] = {"epoch"}, *vals[1] = {"3"};
  CHECK(pt_st_write(ctx, path, 2, names, ts, 1, keys, vals) == PT_OK);
  char tmp[64];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  CHECK(access(tmp, F_OK) != 0); /* renamed away */
  pt_safetensors st;
  CHECK(pt_st_read(ctx, path, &st) == PT_OK);
  CHECK(st.n == 2);
  pt_tensor *rw = strcmp(st.entries[0].name, "w.t") == 0 ? st.entries[0].tensor : st.entries[1].tensor;
  CHECK(rw->shape[0] == 3 && rw->shape[1] == 2);
  for (int i = 0; i < 6; i++) CHECK(pt_tensor_get_flat(rw, i) == pt_tensor_get_flat(at, i));
  CHECK(st.n_meta == 1 && strcmp(st.meta_values[0], "3") == 0);
  pt_st_free(&st);
  /* a name clash fails before anything is written, and the old file stays */
  const char *dup[2] = {"x", "x"};
  CHECK(pt_st_write(ctx, path, 2, dup, ts, 0, NULL, NULL) == PT_EARG);
  CHECK(strstr(pt_errmsg(ctx), "duplicate tensor name 'x'") != NULL);
  CHECK(pt_st_read(ctx, path, &st) == PT_OK && st.n == 2);
  pt_st_free(&st);
  /* a file truncated in its data section */
  FILE *f = fopen(path, "r+b");
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fclose(f);
  CHECK(truncate(path, size - 3) == 0);
  CHECK(pt_st_read(ctx, path, &st) == PT_EFORMAT);
  CHECK(strstr(pt_errmsg(ctx), "out of range") != NULL);
  CHECK(strstr(pt_errmsg(ctx), path) != NULL);
  /* a directory that does not exist */
  CHECK(pt_st_write(ctx, "/nonexistent-dir/x.safetensors", 2, names, ts, 0, NULL, NULL) == PT_EIO);
  CHECK(strstr(pt_errmsg(ctx), "cannot create") != NULL);
  CHECK(pt_st_read(ctx, "/nonexistent-dir/x.safetensors", &st) == PT_EIO);
  remove(path);
  pt_tensor_release(at);
  pt_tensor_release(a);
  pt_tensor_release(b);
}

/* header strings: valid UTF-8 only, and no \u0000 (names and values are C strings) */
static void test_strings(pt_ctx *ctx) {
  CHECK(pt_st_utf8_invalid_at("") == 0);
  CHECK(pt_st_utf8_invalid_at("plain") == 0);
  CHECK(pt_st_utf8_invalid_at("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") == 0);
  CHECK(pt_st_utf8_invalid_at("a\xff") == 2);
  CHECK(pt_st_utf8_invalid_at("ab\xc3") == 3);          /* truncated sequence */
  CHECK(pt_st_utf8_invalid_at("\xc0\xaf") == 1);        /* overlong '/' */
  CHECK(pt_st_utf8_invalid_at("\xe0\x80\xaf") == 1);    /* overlong, 3 bytes */
  CHECK(pt_st_utf8_invalid_at("x\xed\xa0\x80") == 2);   /* a surrogate */
  CHECK(pt_st_utf8_invalid_at("\xf4\x90\x80\x80") == 1); /* above U+10FFFF */
  CHECK(pt_st_utf8_invalid_at("\x80") == 1);            /* a lone continuation byte */

  const char *ok = "\"x\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}";
  char h[512];
  snprintf(h, sizeof h, "{\"a\xff\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}");
  expect_error(ctx, h, 1, "load: tensor name 'a\\xff' is not valid UTF-8");
  snprintf(h, sizeof h, "{\"__metadata__\":{\"k\":\"\xfe\"},%s}", ok);
  expect_error(ctx, h, 1, "load: __metadata__ value of 'k' is not valid UTF-8");
  snprintf(h, sizeof h, "{\"__metadata__\":{\"k\xed\xa0\x80\":\"v\"},%s}", ok);
  expect_error(ctx, h, 1, "load: __metadata__ key 'k\\xed\\xa0\\x80' is not valid UTF-8");
  snprintf(h, sizeof h, "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"note\":\"\xc0\xaf\"}}");
  expect_error(ctx, h, 1, "load: tensor 'a': a string in its header entry is not valid UTF-8");
  snprintf(h, sizeof h, "{\"a\\u0000b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}");
  expect_error(ctx, h, 1, "load: tensor name 'a\\u0000...' holds a NUL character (\\u0000), which partrain does not accept");
  snprintf(h, sizeof h, "{%s,\"__metadata__\":{\"k\":\"v\",\"k2\":\"a\\u0000\"}}", ok);
  expect_error(ctx, h, 1, "load: __metadata__ value of 'k2' holds a NUL character");
  snprintf(h, sizeof h, "{%s,\"__metadata__\":{\"k\\u0000\":\"v\"}}", ok);
  expect_error(ctx, h, 1, "load: __metadata__ key 'k\\u0000...' holds a NUL character");

  /* escapes that are fine: an escaped backslash before u0000, \u00e9, a surrogate pair */
  unsigned char buf[512], one = 5;
  snprintf(h, sizeof h, "{\"a\\\\u0000\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                        "\"__metadata__\":{\"k\":\"caf\\u00e9 \\ud83d\\ude00\"}}");
  size_t n = make_file(buf, h, &one, 1);
  pt_safetensors st;
  CHECK(pt_st_decode(ctx, buf, n, &st) == PT_OK);
  CHECK(st.n == 1 && strcmp(st.entries[0].name, "a\\u0000") == 0);
  CHECK(st.n_meta == 1 && strcmp(st.meta_values[0], "caf\xc3\xa9 \xf0\x9f\x98\x80") == 0);
  pt_st_free(&st);

  /* writing refuses what reading would */
  char path[] = "/tmp/pt_test_ckpt_utf8_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  close(fd);
  int64_t s1[1] = {1};
  pt_tensor *t;
  pt_tensor_empty(ctx, PT_UINT8, 1, s1, &t);
  const char *bad_name[1] = {"w\xff"}, *good_name[1] = {"w"};
  const char *key[1] = {"k"}, *bad_val[1] = {"v\xc3"}, *bad_key[1] = {"\xfek"};
  CHECK(pt_st_write(ctx, path, 1, bad_name, &t, 0, NULL, NULL) == PT_EARG);
  CHECK(strcmp(pt_errmsg(ctx), "save: tensor name 'w\\xff' is not valid UTF-8 (byte 2)") == 0);
  CHECK(pt_st_write(ctx, path, 1, good_name, &t, 1, key, bad_val) == PT_EARG);
  CHECK(strcmp(pt_errmsg(ctx), "save: metadata 'k': value is not valid UTF-8 (byte 2)") == 0);
  CHECK(pt_st_write(ctx, path, 1, good_name, &t, 1, bad_key, key) == PT_EARG);
  CHECK(strcmp(pt_errmsg(ctx), "save: metadata key '\\xfek' is not valid UTF-8 (byte 1)") == 0);
  remove(path);
  pt_tensor_release(t);
}

int main(void) {
  pt_ctx ctx;
  pt_ctx_init(&ctx, 1);
  test_decode_valid(&ctx);
  test_hostile(&ctx);
  test_write_read(&ctx);
  test_strings(&ctx);
  return TEST_SUMMARY();
}
