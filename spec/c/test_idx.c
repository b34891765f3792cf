/* lib/data_idx.c and lib/data_csv.c: IDX files raw and gzipped, hostile headers, CSV parsing,
 * row gather with the fused uint8 -> float32 conversion, permutations, transforms, counts. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "data.h"
#include "testing.h"

static char path[64];

static void write_raw(const unsigned char *b, size_t n) {
  FILE *f = fopen(path, "wb");
  fwrite(b, 1, n, f);
  fclose(f);
}

static void write_gz(const unsigned char *b, size_t n) {
  gzFile f = gzopen(path, "wb");
  gzwrite(f, b, (unsigned)n);
  gzclose(f);
}

static void test_idx_images(pt_ctx *ctx) {
  /* 3 images of 2x2, uint8 */
  unsigned char b[4 + 12 + 12] = {0, 0, 0x08, 3, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 2};
  for (int i = 0; i < 12; i++) b[16 + i] = (unsigned char)(i * 20);
  for (int gz = 0; gz < 2; gz++) {
    (gz ? write_gz : write_raw)(b, 28);
    pt_tensor *t = NULL;
    CHECK(pt_idx_read(ctx, path, &t) == PT_OK);
    CHECK(t && t->dtype == PT_UINT8 && t->ndim == 3 && t->shape[0] == 3 && t->shape[2] == 2);
    CHECK(t && pt_tensor_get_flat(t, 11) == 220);
    /* gather rows 3 and 1 with the /255 conversion into {2, 4} */
    int64_t idx[2] = {2, 0}, shp[1] = {4};
    pt_tensor *g = NULL;
    CHECK(pt_data_gather(ctx, t, idx, 2, PT_FLOAT32, 1.0 / 255, 1, shp, &g) == PT_OK);
    CHECK(g && g->ndim == 2 && g->shape[1] == 4);
    CHECK_NEAR(pt_tensor_get_flat(g, 0), 160 / 255.0, 1e-6);
    CHECK_NEAR(pt_tensor_get_flat(g, 4), 0.0, 1e-9);
    pt_tensor_release(g);
    int64_t bad[1] = {3};
    CHECK(pt_data_gather(ctx, t, bad, 1, PT_FLOAT32, 1, -1, NULL, &g) == PT_EARG);
    CHECK(strstr(pt_errmsg(ctx), "index 4 out of range 1..3") != NULL);
    pt_tensor_release(t);
  }
}

static void test_idx_types(pt_ctx *ctx) {
  /* int32 big-endian labels */
  unsigned char b[8 + 8] = {0, 0, 0x0C, 1, 0, 0, 0, 2, 0xff, 0xff, 0xff, 0xfe, 0, 0, 1, 0};
  write_raw(b, sizeof b);
  pt_tensor *t = NULL;
  CHECK(pt_idx_read(ctx, path, &t) == PT_OK);
  CHECK(t && t->dtype == PT_INT32 && pt_tensor_get_flat(t, 0) == -2 && pt_tensor_get_flat(t, 1) == 256);
  pt_tensor *c = NULL;
  CHECK(pt_data_class_index(ctx, t, 1, &c) == PT_OK);
  CHECK(c && c->dtype == PT_INT64 && pt_tensor_get_flat(c, 1) == 257);
  pt_tensor_release(c);
  pt_tensor_release(t);
  /* int16 widened */
  unsigned char s[8 + 4] = {0, 0, 0x0B, 1, 0, 0, 0, 2, 0x80, 0x00, 0x00, 0x05};
  write_raw(s, sizeof s);
  CHECK(pt_idx_read(ctx, path, &t) == PT_OK);
  CHECK(t && pt_tensor_get_flat(t, 0) == -32768 && pt_tensor_get_flat(t, 1) == 5);
  pt_tensor_release(t);
}

static void expect(pt_ctx *ctx, const unsigned char *b, size_t n, int gz, const char *needle) {
  (gz ? write_gz : write_raw)(b, n);
  pt_tensor *t = NULL;
  CHECK(pt_idx_read(ctx, path, &t) != PT_OK);
  CHECK(t == NULL);
  if (!strstr(pt_errmsg(ctx), needle)) fprintf(stderr, "  got '%s', wanted '%s'\n", pt_errmsg(ctx), needle);
  CHECK(strstr(pt_errmsg(ctx), needle) != NULL);
}

static void test_idx_hostile(pt_ctx *ctx) {
  unsigned char b[32] = {0, 0, 0x08, 1, 0, 0, 0, 4, 1, 2, 3, 4, 5};
  expect(ctx, b, 2, 0, "too short");
  expect(ctx, b, 11, 0, "truncated: shape {4} needs 4 data bytes, the file has 3");
  expect(ctx, b, 11, 1, "truncated");
  expect(ctx, b, 13, 0, "1 trailing bytes");
  expect(ctx, b, 13, 1, "trailing bytes");
  expect(ctx, b, 6, 0, "truncated header");
  unsigned char m[8] = {1, 2, 0x08, 1, 0, 0, 0, 0};
  expect(ctx, m, 8, 0, "bad magic 0x01020801");
  unsigned char ty[8] = {0, 0, 0x07, 1, 0, 0, 0, 0};
  expect(ctx, ty, 8, 0, "unknown IDX type code 0x07");
  unsigned char nd[8] = {0, 0, 0x08, 0, 0, 0, 0, 0};
  expect(ctx, nd, 8, 0, "0 dimensions");
  /* a gzip file claiming 4 GiB x 4 GiB of data */
  unsigned char huge[12] = {0, 0, 0x08, 2, 0, 1, 0, 0, 0, 1, 0, 0}; /* 65536 x 65536 */
  expect(ctx, huge, 12, 1, "more than a");
  expect(ctx, huge, 12, 0, "truncated");
  unsigned char over[12] = {0, 0, 0x08, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  expect(ctx, over, 12, 0, "is too large");
  /* corrupt gzip stream */
  write_gz(b, 12);
  FILE *f = fopen(path, "r+b");
  fseek(f, 12, SEEK_SET);
  fputc(0xff, f);
  fputc(0xff, f);
  fclose(f);
  pt_tensor *t = NULL;
  CHECK(pt_idx_read(ctx, path, &t) != PT_OK);
  CHECK(t == NULL);
  CHECK(pt_idx_read(ctx, "/nonexistent/file", &t) == PT_EIO);
  CHECK(strstr(pt_errmsg(ctx), "cannot open '/nonexistent/file'") != NULL);
}

static void test_csv(pt_ctx *ctx) {
  const char *text = "a,b,label\n1,2.5,cat\n\n3,4,dog\r\n5,6,cat\n";
  write_raw((const unsigned char *)text, strlen(text));
  pt_csv_result r;
  CHECK(pt_csv_read(ctx, path, true, "label", 0, 0, &r) == PT_OK);
  CHECK(r.features->shape[0] == 3 && r.features->shape[1] == 2);
  CHECK(pt_tensor_get_flat(r.features, 1) == 2.5);
  CHECK(r.labels->dtype == PT_INT64 && pt_tensor_get_flat(r.labels, 1) == 2 && pt_tensor_get_flat(r.labels, 2) == 1);
  CHECK(r.n_classes == 2 && strcmp(r.class_names[1], "dog") == 0);
  CHECK(strcmp(r.header[2], "label") == 0);
  pt_csv_result_free(&r);
  CHECK(pt_csv_read(ctx, path, true, "nope", 0, 0, &r) == PT_EARG);
  CHECK(strstr(pt_errmsg(ctx), "no column named 'nope'") != NULL);
  CHECK(pt_csv_read(ctx, path, true, NULL, PT_CSV_NO_LABEL, 0, &r) == PT_EFORMAT);
  CHECK(strstr(pt_errmsg(ctx), ":2: field 3 ('cat') is not a number") != NULL);
  const char *ragged = "1,2,0\n3,4\n";
  write_raw((const unsigned char *)ragged, strlen(ragged));
  CHECK(pt_csv_read(ctx, path, false, NULL, -1, 1, &r) == PT_EFORMAT);
  CHECK(strstr(pt_errmsg(ctx), ":2: expected 3 fields, got 2") != NULL);
  const char *ints = "1,2,0\n3,4,9\n";
  write_raw((const unsigned char *)ints, strlen(ints));
  CHECK(pt_csv_read(ctx, path, false, NULL, -1, 1, &r) == PT_OK);
  CHECK(pt_tensor_get_flat(r.labels, 0) == 1 && pt_tensor_get_flat(r.labels, 1) == 10);
  pt_csv_result_free(&r);
  CHECK(pt_csv_read(ctx, path, false, NULL, 5, 0, &r) == PT_EARG);
  CHECK(strstr(pt_errmsg(ctx), "label column 6 out of range") != NULL);
  write_raw((const unsigned char *)"", 0);
  CHECK(pt_csv_read(ctx, path, false, NULL, -1, 0, &r) == PT_EFORMAT);
  CHECK(strstr(pt_errmsg(ctx), "is empty") != NULL);
}

static void test_batch_kernels(pt_ctx *ctx) {
  int64_t p1[10], p2[10], p3[10];
  pt_data_permutation(p1, 10, 42, 0);
  pt_data_permutation(p2, 10, 42, 0);
  pt_data_permutation(p3, 10, 42, 1);
  CHECK(memcmp(p1, p2, sizeof p1) == 0);
  CHECK(memcmp(p1, p3, sizeof p1) != 0);
  int seen[10] = {0};
  for (int i = 0; i < 10; i++) seen[p1[i]]++;
  for (int i = 0; i < 10; i++) CHECK(seen[i] == 1);
  /* logits {3, 2}: predictions 2, 1, 2 */
  int64_t ls[2] = {3, 2}, ys[1] = {3};
  pt_tensor *logits, *labels, *cm;
  pt_tensor_empty(ctx, PT_FLOAT32, 2, ls, &logits);
  float v[6] = {0, 1, 5, -1, 0.5f, 0.7f};
  memcpy(pt_tensor_data(logits), v, sizeof v);
  pt_tensor_empty(ctx, PT_INT64, 1, ys, &labels);
  int64_t y[3] = {2, 2, 2};
  memcpy(pt_tensor_data(labels), y, sizeof y);
  int64_t correct, total;
  CHECK(pt_data_count_correct(ctx, logits, labels, &correct, &total) == PT_OK);
  CHECK(correct == 2 && total == 3);
  int64_t cs[2] = {2, 2};
  pt_tensor_zeros(ctx, PT_INT64, 2, cs, &cm);
  CHECK(pt_data_confusion_add(ctx, cm, logits, labels) == PT_OK);
  CHECK(pt_tensor_get_flat(cm, 2) == 1 && pt_tensor_get_flat(cm, 3) == 2);
  ((int64_t *)pt_tensor_data(labels))[0] = 3;
  CHECK(pt_data_confusion_add(ctx, cm, logits, labels) == PT_EARG);
  CHECK(strstr(pt_errmsg(ctx), "label 3 out of range 1..2") != NULL);
  CHECK(pt_tensor_get_flat(cm, 3) == 2); /* unchanged on error */
  pt_tensor *oh;
  CHECK(pt_data_one_hot(ctx, labels, 2, &oh) == PT_EARG);
  CHECK(strstr(pt_errmsg(ctx), "one_hot: label 3 out of range 1..2") != NULL);
  pt_tensor_release(cm);
  pt_tensor_release(labels);
  pt_tensor_release(logits);
  /* crop with padding 1 of a 1x2x2 image to 2x2 keeps values from the image or zeros */
  int64_t is[4] = {1, 1, 2, 2};
  pt_tensor *img, *cr;
  pt_tensor_empty(ctx, PT_FLOAT32, 4, is, &img);
  for (int i = 0; i < 4; i++) pt_tensor_set_flat(img, i, i + 1);
  CHECK(pt_data_random_crop(ctx, img, 1, 2, 2, 2, 1, &cr) == PT_OK);
  double sum = 0;
  for (int i = 0; i < 4; i++) sum += pt_tensor_get_flat(cr, i);
  CHECK(sum > 0);
  pt_tensor_release(cr);
  CHECK(pt_data_random_crop(ctx, img, 1, 2, 2, 5, 1, &cr) == PT_EARG);
  CHECK(pt_data_random_flip_(ctx, img, 1, 2, 2, 1.0) == PT_OK);
  CHECK(pt_tensor_get_flat(img, 0) == 2 && pt_tensor_get_flat(img, 1) == 1);
  pt_tensor_release(img);
}

int main(void) {
  pt_ctx ctx;
  pt_ctx_init(&ctx, 1);
  snprintf(path, sizeof path, "/tmp/pt_test_idx_%d", (int)getpid());
  test_idx_images(&ctx);
  test_idx_types(&ctx);
  test_idx_hostile(&ctx);
  test_csv(&ctx);
  test_batch_kernels(&ctx);
  remove(path);
  return TEST_SUMMARY();
}
