/* lib/image.c: PNG round trips through the writer, JPEG data encoded here with libjpeg, every
 * truncation and every single-byte corruption of both formats (an error or an image, never a
 * crash; run under ASan with detect_leaks=1 for the longjmp paths), oversized headers. */
#include <stdio.h> /* before jpeglib.h, which uses FILE */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jpeglib.h>
#include <png.h>

#include "image.h"
#include "testing.h"

static char path[64];

static uint8_t *slurp(const char *p, size_t *n) {
  FILE *f = fopen(p, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc((size_t)len);
  *n = fread(b, 1, (size_t)len, f);
  fclose(f);
  return b;
}

/* {c, h, w} uint8 with a known pattern */
static pt_tensor *pattern(pt_ctx *ctx, int64_t c, int64_t h, int64_t w) {
  int64_t shape[3] = {c, h, w};
  pt_tensor *t = NULL;
  pt_tensor_empty(ctx, PT_UINT8, 3, shape, &t);
  uint8_t *d = pt_tensor_data(t);
  for (int64_t i = 0; i < c * h * w; i++) d[i] = (uint8_t)(i * 37 + 11);
  return t;
}

static void test_png_round_trip(pt_ctx *ctx) {
  for (int c = 1; c <= 4; c++) {
    pt_tensor *t = pattern(ctx, c, 5, 7), *r = NULL;
    CHECK(pt_image_write_png(ctx, t, path) == PT_OK);
    CHECK(pt_image_read(ctx, path, PT_IMAGE_UNCHANGED, &r) == PT_OK);
    CHECK(r && r->dtype == PT_UINT8 && r->ndim == 3 && r->shape[0] == c && r->shape[1] == 5 && r->shape[2] == 7);
    CHECK(r && memcmp(pt_tensor_data(r), pt_tensor_data(t), (size_t)(c * 35)) == 0);
    pt_tensor_release(r);
    /* RGBA of a gray image: the gray value three times, alpha 255 (or the file's alpha) */
    CHECK(pt_image_read(ctx, path, PT_IMAGE_RGBA, &r) == PT_OK);
    const uint8_t *a = pt_tensor_data(t), *b = r ? pt_tensor_data(r) : NULL;
    CHECK(b && r->shape[0] == 4);
    if (b && c == 1) CHECK(b[0] == a[0] && b[35] == a[0] && b[70] == a[0] && b[105] == 255);
    if (b && c == 4) CHECK(memcmp(a, b, 140) == 0);
    pt_tensor_release(r);
    pt_tensor_release(t);
  }
  /* bad tensors */
  int64_t s2[2] = {4, 4};
  pt_tensor *t2 = NULL;
  pt_tensor_empty(ctx, PT_UINT8, 2, s2, &t2);
  CHECK(pt_image_write_png(ctx, t2, path) == PT_EARG);
  CHECK(strstr(ctx->err, "image.write_png: expected a uint8 tensor of shape {C,H,W}") != NULL);
  pt_tensor_release(t2);
  pt_tensor *t5 = pattern(ctx, 5, 2, 2);
  CHECK(pt_image_write_png(ctx, t5, path) == PT_EARG);
  pt_tensor_release(t5);
  pt_tensor *t = pattern(ctx, 3, 2, 2);
  CHECK(pt_image_write_png(ctx, t, "/nonexistent-dir/x.png") == PT_EIO);
  CHECK(strstr(ctx->err, "cannot open '/nonexistent-dir/x.png'") != NULL);
  pt_tensor_release(t);
}

/* every prefix and every single-byte change of data: an error or an image, no crash or leak */
static void mangle(pt_ctx *ctx, const uint8_t *data, size_t n, const char *truncated_msg) {
  uint8_t *b = malloc(n);
  int truncated_named = 0, failed = 0;
  for (size_t k = 0; k < n; k++) {
    pt_tensor *r = NULL;
    pt_status st = pt_image_decode(ctx, "image.decode", NULL, data, k, PT_IMAGE_UNCHANGED, &r);
    if (st == PT_OK) failed++; /* every proper prefix must fail */
    if (st && strstr(ctx->err, truncated_msg)) truncated_named++;
    pt_tensor_release(r);
  }
  CHECK(failed == 0);
  CHECK(truncated_named >= (int)n - 8); /* the few shortest are "not an image" */
  for (size_t k = 0; k < n; k++) {
    for (int bit = 0; bit < 8; bit += 3) {
      memcpy(b, data, n);
      b[k] ^= (uint8_t)(1u << bit);
      pt_tensor *r = NULL;
      pt_status st = pt_image_decode(ctx, "image.decode", "x", b, n, PT_IMAGE_RGB, &r);
      CHECK((st == PT_OK) == (r != NULL));
      if (st) CHECK(strncmp(ctx->err, "image.decode: 'x': ", 19) == 0);
      pt_tensor_release(r);
    }
  }
  free(b);
}

static void test_png_damage(pt_ctx *ctx) {
  pt_tensor *t = pattern(ctx, 3, 9, 11);
  CHECK(pt_image_write_png(ctx, t, path) == PT_OK);
  pt_tensor_release(t);
  size_t n = 0;
  uint8_t *data = slurp(path, &n);
  CHECK(data && n > 40);
  if (data) mangle(ctx, data, n, "image.decode: truncated PNG data");
  /* a header declaring 20000x20000 pixels (above 2^28) is refused before any allocation */
  static const uint8_t big[] = {0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 'I', 'H', 'D', 'R',
                                0, 0, 0x4e, 0x20, 0, 0, 0x4e, 0x20, 8, 2, 0, 0, 0, 0x6c, 0x12, 0xd1, 0x6e,
                                0, 0, 0, 12, 'I', 'D', 'A', 'T'}; /* libpng stops at IDAT's header */
  pt_tensor *r = NULL;
  CHECK(pt_image_decode(ctx, "image.decode", NULL, big, sizeof big, PT_IMAGE_UNCHANGED, &r) == PT_EFORMAT);
  CHECK(strstr(ctx->err, "PNG image of 20000x20000 pixels is larger than the limit of 268435456 pixels") != NULL);
  free(data);
}

/* an Adam7-interlaced 13x11 RGB PNG written with libpng: the decoder must assemble the passes */
static void test_png_interlaced(pt_ctx *ctx) {
  enum { W = 13, H = 11 };
  uint8_t px[H][W * 3];
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W * 3; x++) px[y][x] = (uint8_t)(y * 19 + x * 7);
  FILE *f = fopen(path, "wb");
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    CHECK(0);
    png_destroy_write_struct(&png, &info);
    fclose(f);
    return;
  }
  png_init_io(png, f);
  png_set_IHDR(png, info, W, H, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_ADAM7, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_bytep rows[H];
  for (int y = 0; y < H; y++) rows[y] = px[y];
  png_set_rows(png, info, rows);
  png_write_png(png, info, PNG_TRANSFORM_IDENTITY, NULL);
  png_destroy_write_struct(&png, &info);
  fclose(f);
  pt_tensor *r = NULL;
  CHECK(pt_image_read(ctx, path, PT_IMAGE_UNCHANGED, &r) == PT_OK);
  CHECK(r && r->shape[0] == 3 && r->shape[1] == H && r->shape[2] == W);
  int bad = 0;
  if (r) {
    const uint8_t *d = pt_tensor_data(r);
    for (int k = 0; k < 3; k++)
      for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) bad += d[(k * H + y) * W + x] != px[y][x * 3 + k];
  }
  CHECK(bad == 0);
  pt_tensor_release(r);
}

/* a 24x16 RGB JPEG of solid 8x8 blocks, quality 100, 4:4:4, in memory */
static uint8_t *jpeg_encode(uint8_t *px, unsigned long *n) {
  struct jpeg_compress_struct c;
  struct jpeg_error_mgr err;
  unsigned char *out = NULL;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  jpeg_mem_dest(&c, &out, n);
  c.image_width = 24;
  c.image_height = 16;
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 100, TRUE);
  c.comp_info[0].h_samp_factor = c.comp_info[0].v_samp_factor = 1;
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = px + (size_t)c.next_scanline * 24 * 3;
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  return out;
}

static void test_jpeg(pt_ctx *ctx) {
  uint8_t px[16 * 24 * 3];
  for (int y = 0; y < 16; y++)
    for (int x = 0; x < 24; x++)
      for (int k = 0; k < 3; k++) px[(y * 24 + x) * 3 + k] = (uint8_t)(40 + 60 * (x / 8) + 20 * (y / 8) + 50 * k);
  unsigned long n = 0;
  uint8_t *data = jpeg_encode(px, &n);
  pt_tensor *r = NULL;
  CHECK(pt_image_decode(ctx, "image.decode", NULL, data, n, PT_IMAGE_UNCHANGED, &r) == PT_OK);
  CHECK(r && r->shape[0] == 3 && r->shape[1] == 16 && r->shape[2] == 24);
  int worst = 0;
  if (r) {
    const uint8_t *d = pt_tensor_data(r);
    for (int k = 0; k < 3; k++)
      for (int i = 0; i < 16 * 24; i++) {
        int e = abs((int)d[k * 384 + i] - (int)px[i * 3 + k]);
        if (e > worst) worst = e;
      }
  }
  CHECK(worst <= 2); /* quality 100, no subsampling, flat blocks: within 2 of the original */
  pt_tensor_release(r);
  CHECK(pt_image_decode(ctx, "image.decode", NULL, data, n, PT_IMAGE_GRAY, &r) == PT_OK);
  CHECK(r && r->shape[0] == 1);
  pt_tensor_release(r);
  CHECK(pt_image_decode(ctx, "image.decode", NULL, data, n, PT_IMAGE_RGBA, &r) == PT_OK);
  CHECK(r && r->shape[0] == 4 && ((const uint8_t *)pt_tensor_data(r))[3 * 384] == 255);
  pt_tensor_release(r);
  mangle(ctx, data, n, "image.decode: truncated JPEG data");
  /* SOF0 declaring 65000x65000 */
  uint8_t *big = malloc(n);
  memcpy(big, data, n);
  for (unsigned long i = 0; i + 9 < n; i++)
    if (big[i] == 0xff && big[i + 1] == 0xc0) {
      big[i + 5] = big[i + 7] = 0xfd;
      big[i + 6] = big[i + 8] = 0xe8;
      break;
    }
  CHECK(pt_image_decode(ctx, "image.decode", NULL, big, n, PT_IMAGE_UNCHANGED, &r) == PT_EFORMAT);
  CHECK(strstr(ctx->err, "JPEG image of 65000x65000 pixels is larger than the limit") != NULL);
  free(big);
  free(data);
}

int main(void) {
  pt_ctx ctx;
  pt_ctx_init(&ctx, 1);
  snprintf(path, sizeof path, "/tmp/pt_test_image_%d.png", (int)getpid());
  test_png_round_trip(&ctx);
  test_png_damage(&ctx);
  test_png_interlaced(&ctx);
  test_jpeg(&ctx);
  unlink(path);
  return TEST_SUMMARY();
}
