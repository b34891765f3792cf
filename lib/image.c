/* PNG and JPEG decoding, PNG writing (see image.h for the rules).
 *
 * libpng and libjpeg report errors by longjmp. Each decoder keeps everything it allocates in a
 * job struct owned by the caller's frame, and the setjmp sits in a small function whose locals
 * never change afterwards (guarded_*), so nothing is clobbered and the caller frees whatever
 * the job holds on every path. */
#include "image.h"

#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jpeglib.h>
#include <jerror.h>
#include <png.h>

/* --- shared --- */

/* "fname: 'name': " or "fname: " (in-memory data) */
static const char *where(char *buf, size_t n, const char *fname, const char *name) {
  if (name) snprintf(buf, n, "%s: '%s': ", fname, name);
  else snprintf(buf, n, "%s: ", fname);
  return buf;
}

static pt_status check_size(pt_ctx *ctx, const char *at, const char *fmt, uint64_t w, uint64_t h) {
  if (w == 0 || h == 0)
    return pt_fail(ctx, PT_EFORMAT, "%s%s image has size %llux%llu", at, fmt, (unsigned long long)w,
                   (unsigned long long)h);
  if (w * h > (uint64_t)PT_IMAGE_MAX_PIXELS)
    return pt_fail(ctx, PT_EFORMAT, "%s%s image of %llux%llu pixels is larger than the limit of %lld pixels",
                   at, fmt, (unsigned long long)w, (unsigned long long)h, (long long)PT_IMAGE_MAX_PIXELS);
  return PT_OK;
}

/* interleaved rows {H, W, C} -> the tensor's {C, H, W} */
static void hwc_to_chw(const uint8_t *src, uint8_t *dst, int64_t hw, int c) {
  for (int k = 0; k < c; k++)
    for (int64_t i = 0; i < hw; i++) dst[k * hw + i] = src[i * c + k];
}

static pt_status new_image(pt_ctx *ctx, const char *at, int64_t c, int64_t h, int64_t w, pt_tensor **out) {
  int64_t shape[3] = {c, h, w};
  if (pt_tensor_empty(ctx, PT_UINT8, 3, shape, out)) {
    char msg[PT_ERRMSG_MAX];
    snprintf(msg, sizeof msg, "%s", ctx->err);
    return pt_fail(ctx, PT_ENOMEM, "%s%s", at, msg);
  }
  return PT_OK;
}

/* --- PNG reading --- */

typedef struct png_job {
  pt_ctx *ctx;
  const char *at; /* message prefix */
  const uint8_t *p;
  size_t left;
  bool truncated;
  char msg[200];  /* libpng's error message */
  png_structp png;
  png_infop info;
  pt_image_mode mode;
  uint8_t *buf;   /* interleaved rows */
  png_bytep *rows;
  pt_tensor *t;
} png_job;

static void png_on_error(png_structp png, png_const_charp msg) {
  png_job *j = png_get_error_ptr(png);
  snprintf(j->msg, sizeof j->msg, "%s", msg);
  png_longjmp(png, 1);
}

/* warnings (a bad ancillary chunk, an sRGB profile libpng dislikes) do not stop the decode */
static void png_on_warning(png_structp png, png_const_charp msg) { (void)png, (void)msg; }

static void png_read_mem(png_structp png, png_bytep out, size_t n) {
  png_job *j = png_get_io_ptr(png);
  if (n > j->left) {
    j->truncated = true;
    png_error(png, "unexpected end of data");
  }
  memcpy(out, j->p, n);
  j->p += n;
  j->left -= n;
}

static pt_status png_work(png_job *j) {
  png_structp png = j->png;
  png_infop info = j->info;
  png_set_read_fn(png, j, png_read_mem);
  png_set_sig_bytes(png, 0);
  png_read_info(png, info);
  png_uint_32 w, h;
  int depth, color, interlace;
  png_get_IHDR(png, info, &w, &h, &depth, &color, &interlace, NULL, NULL);
  if (check_size(j->ctx, j->at, "PNG", w, h)) return PT_EFORMAT;
  /* palette -> RGB, gray 1/2/4 bits -> 8, tRNS -> alpha; 16 bits -> the high byte */
  if (color == PNG_COLOR_TYPE_PALETTE || (color == PNG_COLOR_TYPE_GRAY && depth < 8) ||
      png_get_valid(png, info, PNG_INFO_tRNS))
    png_set_expand(png);
  if (depth == 16) png_set_strip_16(png);
  bool has_color = (color & PNG_COLOR_MASK_COLOR) || color == PNG_COLOR_TYPE_PALETTE;
  bool has_alpha = (color & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS);
  switch (j->mode) {
  case PT_IMAGE_GRAY:
    if (has_alpha) png_set_strip_alpha(png);
    if (has_color) png_set_rgb_to_gray(png, PNG_ERROR_ACTION_NONE, 0.2989, 0.587);
    break;
  case PT_IMAGE_RGB:
    if (has_alpha) png_set_strip_alpha(png);
    if (!has_color) png_set_gray_to_rgb(png);
    break;
  case PT_IMAGE_RGBA:
    if (!has_color) png_set_gray_to_rgb(png);
    if (!has_alpha) png_set_add_alpha(png, 0xffff, PNG_FILLER_AFTER); /* the sample's maximum at any depth */
    break;
  case PT_IMAGE_UNCHANGED: break;
  }
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  int c = png_get_channels(png, info);
  size_t rowbytes = png_get_rowbytes(png, info);
  if (png_get_bit_depth(png, info) != 8 || c < 1 || c > 4 || rowbytes != (size_t)w * (size_t)c)
    return pt_fail(j->ctx, PT_EFORMAT, "%sunsupported PNG layout (bit depth %d, color type %d)", j->at,
                   depth, color);
  if (new_image(j->ctx, j->at, c, h, w, &j->t)) return PT_ENOMEM;
  uint8_t *dst = pt_tensor_data(j->t);
  if (c > 1) {
    j->buf = malloc((size_t)h * rowbytes);
    if (!j->buf) return pt_fail(j->ctx, PT_ENOMEM, "%sout of memory", j->at);
  }
  j->rows = malloc((size_t)h * sizeof *j->rows);
  if (!j->rows) return pt_fail(j->ctx, PT_ENOMEM, "%sout of memory", j->at);
  uint8_t *base = c > 1 ? j->buf : dst;
  for (png_uint_32 y = 0; y < h; y++) j->rows[y] = base + (size_t)y * rowbytes;
  png_read_image(png, j->rows);
  png_read_end(png, NULL); /* the rest of the file, so that a file cut after its pixels fails too */
  if (c > 1) hwc_to_chw(j->buf, dst, (int64_t)w * h, c);
  return PT_OK;
}

static int png_guarded(png_job *j, pt_status *st) {
  if (setjmp(png_jmpbuf(j->png))) return 1;
  *st = png_work(j);
  return 0;
}

static pt_status png_decode(pt_ctx *ctx, const char *at, const uint8_t *data, size_t len,
                            pt_image_mode mode, pt_tensor **out) {
  png_job j = {.ctx = ctx, .at = at, .p = data, .left = len, .mode = mode};
  j.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &j, png_on_error, png_on_warning);
  if (!j.png) return pt_fail(ctx, PT_ENOMEM, "%sout of memory (libpng)", at);
  j.info = png_create_info_struct(j.png);
  pt_status st = PT_OK;
  if (!j.info) st = pt_fail(ctx, PT_ENOMEM, "%sout of memory (libpng)", at);
  else if (png_guarded(&j, &st))
    st = j.truncated ? pt_fail(ctx, PT_EFORMAT, "%struncated PNG data", at)
                     : pt_fail(ctx, PT_EFORMAT, "%scorrupt PNG data (libpng: %s)", at, j.msg);
  png_destroy_read_struct(&j.png, j.info ? &j.info : NULL, NULL);
  free(j.buf);
  free(j.rows);
  if (st) {
    pt_tensor_release(j.t);
    return st;
  }
  *out = j.t;
  return PT_OK;
}

/* --- JPEG reading --- */

typedef struct jpeg_job {
  struct jpeg_error_mgr err; /* first: libjpeg hands back a pointer to it */
  jmp_buf jb;
  bool truncated;
  char msg[JMSG_LENGTH_MAX];
  pt_ctx *ctx;
  const char *at;
  struct jpeg_decompress_struct cinfo;
  pt_image_mode mode;
  uint8_t *buf;
  pt_tensor *t;
} jpeg_job;

static void jpeg_on_error(j_common_ptr c) {
  jpeg_job *j = (jpeg_job *)c->err;
  c->err->format_message(c, j->msg);
  longjmp(j->jb, 1);
}

/* libjpeg pads a file that ends early with gray and only warns; that is an error here. Other
 * warnings (extraneous bytes before a marker, ...) are not: many cameras' files have them. */
static void jpeg_on_message(j_common_ptr c, int level) {
  jpeg_job *j = (jpeg_job *)c->err;
  if (level == -1 && c->err->msg_code == JWRN_JPEG_EOF) {
    j->truncated = true;
    longjmp(j->jb, 1);
  }
}

static pt_status jpeg_work(jpeg_job *j, const uint8_t *data, size_t len) {
  j_decompress_ptr ci = &j->cinfo;
  jpeg_create_decompress(ci); /* can fail (out of memory): under the setjmp too */
  jpeg_mem_src(ci, data, (unsigned long)len);
  jpeg_read_header(ci, TRUE);
  if (check_size(j->ctx, j->at, "JPEG", ci->image_width, ci->image_height)) return PT_EFORMAT;
  if (ci->jpeg_color_space == JCS_CMYK || ci->jpeg_color_space == JCS_YCCK)
    return pt_fail(j->ctx, PT_EFORMAT, "%sCMYK JPEG images are not supported", j->at);
  int c;
  switch (j->mode) {
  case PT_IMAGE_GRAY: c = 1; break;
  case PT_IMAGE_RGB: c = 3; break;
  case PT_IMAGE_RGBA: c = 4; break;
  default: c = ci->jpeg_color_space == JCS_GRAYSCALE ? 1 : 3; break;
  }
  ci->out_color_space = c == 1 ? JCS_GRAYSCALE : c == 3 ? JCS_RGB : JCS_EXT_RGBA;
  jpeg_start_decompress(ci);
  int64_t w = ci->output_width, h = ci->output_height;
  if (ci->output_components != c)
    return pt_fail(j->ctx, PT_EFORMAT, "%sJPEG decoder gave %d channels, expected %d", j->at,
                   ci->output_components, c);
  if (new_image(j->ctx, j->at, c, h, w, &j->t)) return PT_ENOMEM;
  uint8_t *dst = pt_tensor_data(j->t);
  if (c > 1) {
    j->buf = malloc((size_t)(h * w * c));
    if (!j->buf) return pt_fail(j->ctx, PT_ENOMEM, "%sout of memory", j->at);
  }
  uint8_t *base = c > 1 ? j->buf : dst;
  while (ci->output_scanline < ci->output_height) {
    JSAMPROW row = base + (size_t)ci->output_scanline * (size_t)(w * c);
    jpeg_read_scanlines(ci, &row, 1);
  }
  jpeg_finish_decompress(ci);
  if (c > 1) hwc_to_chw(j->buf, dst, w * h, c);
  return PT_OK;
}

static int jpeg_guarded(jpeg_job *j, const uint8_t *data, size_t len, pt_status *st) {
  if (setjmp(j->jb)) return 1;
  *st = jpeg_work(j, data, len);
  return 0;
}

static pt_status jpeg_decode(pt_ctx *ctx, const char *at, const uint8_t *data, size_t len,
                             pt_image_mode mode, pt_tensor **out) {
  jpeg_job *j = calloc(1, sizeof *j); /* ~1 KB of messages and state: not on the stack */
  if (!j) return pt_fail(ctx, PT_ENOMEM, "%sout of memory", at);
  j->ctx = ctx;
  j->at = at;
  j->mode = mode;
  j->cinfo.err = jpeg_std_error(&j->err);
  j->err.error_exit = jpeg_on_error;
  j->err.emit_message = jpeg_on_message;
  pt_status st = PT_OK;
  if (jpeg_guarded(j, data, len, &st)) {
    st = j->truncated ? pt_fail(ctx, PT_EFORMAT, "%struncated JPEG data", at)
                      : pt_fail(ctx, PT_EFORMAT, "%scorrupt JPEG data (libjpeg: %s)", at, j->msg);
  }
  jpeg_destroy_decompress(&j->cinfo); /* a no-op on the zeroed struct if create failed */
  free(j->buf);
  pt_tensor *t = j->t;
  free(j);
  if (st) {
    pt_tensor_release(t);
    return st;
  }
  *out = t;
  return PT_OK;
}

/* --- entry points --- */

pt_status pt_image_decode(pt_ctx *ctx, const char *fname, const char *name, const uint8_t *data,
                          size_t len, pt_image_mode mode, pt_tensor **out) {
  *out = NULL;
  char at[PT_ERRMSG_MAX / 2];
  where(at, sizeof at, fname, name);
  if (len >= 8 && !png_sig_cmp(data, 0, 8)) return png_decode(ctx, at, data, len, mode, out);
  if (len >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff)
    return jpeg_decode(ctx, at, data, len, mode, out);
  if (len == 0) return pt_fail(ctx, PT_EFORMAT, "%sempty data, not an image", at);
  return pt_fail(ctx, PT_EFORMAT, "%snot a PNG or JPEG image (unknown signature)", at);
}

pt_status pt_image_read(pt_ctx *ctx, const char *path, pt_image_mode mode, pt_tensor **out) {
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) return pt_fail(ctx, PT_EIO, "image.read: cannot open '%s': %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
    fclose(f);
    return pt_fail(ctx, PT_EIO, "image.read: '%s' is not a regular file", path);
  }
  size_t n = (size_t)sb.st_size;
  uint8_t *data = malloc(n ? n : 1);
  if (!data) {
    fclose(f);
    return pt_fail(ctx, PT_ENOMEM, "image.read: '%s': out of memory (%zu bytes)", path, n);
  }
  size_t got = fread(data, 1, n, f);
  int rerr = ferror(f);
  fclose(f);
  if (got != n || rerr) {
    free(data);
    return pt_fail(ctx, PT_EIO, "image.read: cannot read '%s'", path);
  }
  pt_status st = pt_image_decode(ctx, "image.read", path, data, n, mode, out);
  free(data);
  return st;
}

/* --- PNG writing --- */

typedef struct png_wjob {
  char msg[200];
  png_structp png;
  png_infop info;
  FILE *f;
  const uint8_t *hwc;
  int c;
  uint32_t w, h;
} png_wjob;

static void png_wjob_error(png_structp png, png_const_charp msg) {
  png_wjob *j = png_get_error_ptr(png);
  snprintf(j->msg, sizeof j->msg, "%s", msg);
  png_longjmp(png, 1);
}

static int png_write_guarded(png_wjob *j) {
  if (setjmp(png_jmpbuf(j->png))) return 1;
  static const int types[5] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                               PNG_COLOR_TYPE_RGB_ALPHA};
  png_init_io(j->png, j->f);
  png_set_IHDR(j->png, j->info, j->w, j->h, 8, types[j->c], PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(j->png, j->info);
  for (uint32_t y = 0; y < j->h; y++)
    png_write_row(j->png, j->hwc + (size_t)y * j->w * (size_t)j->c);
  png_write_end(j->png, NULL);
  return 0;
}

pt_status pt_image_write_png(pt_ctx *ctx, const pt_tensor *t, const char *path) {
  if (t->dtype != PT_UINT8 || t->ndim != 3 || t->shape[0] < 1 || t->shape[0] > 4) {
    char s[PT_SHAPE_STR_MAX];
    return pt_fail(ctx, PT_EARG,
                   "image.write_png: expected a uint8 tensor of shape {C,H,W} with C = 1, 2, 3 or 4, "
                   "got %s of shape %s", pt_dtype_name(t->dtype), pt_shape_format(t->ndim, t->shape, s, sizeof s));
  }
  if (t->storage->device.type != PT_CPU)
    return pt_fail(ctx, PT_EDEVICE, "image.write_png: the tensor must be on the CPU");
  int c = (int)t->shape[0];
  int64_t h = t->shape[1], w = t->shape[2];
  if (h < 1 || w < 1 || h > PNG_UINT_31_MAX || w > PNG_UINT_31_MAX || h * w > PT_IMAGE_MAX_PIXELS)
    return pt_fail(ctx, PT_EARG, "image.write_png: cannot write an image of %lldx%lld pixels",
                   (long long)w, (long long)h);
  uint8_t *hwc = malloc((size_t)(c * h * w));
  if (!hwc) return pt_fail(ctx, PT_ENOMEM, "image.write_png: out of memory");
  const uint8_t *src = pt_tensor_data(t);
  for (int k = 0; k < c; k++)
    for (int64_t y = 0; y < h; y++)
      for (int64_t x = 0; x < w; x++)
        hwc[(y * w + x) * c + k] = src[k * t->stride[0] + y * t->stride[1] + x * t->stride[2]];
  png_wjob j = {.hwc = hwc, .c = c, .w = (uint32_t)w, .h = (uint32_t)h};
  j.f = fopen(path, "wb");
  if (!j.f) {
    free(hwc);
    return pt_fail(ctx, PT_EIO, "image.write_png: cannot open '%s': %s", path, strerror(errno));
  }
  pt_status st = PT_OK;
  j.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &j, png_wjob_error, png_on_warning);
  j.info = j.png ? png_create_info_struct(j.png) : NULL;
  if (!j.info) st = pt_fail(ctx, PT_ENOMEM, "image.write_png: out of memory (libpng)");
  else if (png_write_guarded(&j)) st = pt_fail(ctx, PT_EIO, "image.write_png: '%s': %s", path, j.msg);
  if (j.png) png_destroy_write_struct(&j.png, j.info ? &j.info : NULL);
  free(hwc);
  int werr = ferror(j.f);
  if (fclose(j.f) != 0 || werr) {
    if (!st) st = pt_fail(ctx, PT_EIO, "image.write_png: cannot write '%s': %s", path, strerror(errno));
  }
  if (st) remove(path);
  return st;
}

/* --- CIFAR binary batches --- */

#define CIFAR_PIXELS 3072

pt_status pt_cifar_read(pt_ctx *ctx, const char *const *paths, int npaths, int label_bytes,
                        const int *nclasses, pt_tensor **images, pt_tensor **labels, pt_tensor **coarse) {
  *images = *labels = *coarse = NULL;
  if (label_bytes < 1 || label_bytes > 2) return pt_fail(ctx, PT_EARG, "cifar: label_bytes must be 1 or 2");
  const int64_t rec = CIFAR_PIXELS + label_bytes;
  int64_t n = 0;
  for (int k = 0; k < npaths; k++) { /* sizes first: every file is checked before anything is allocated */
    struct stat sb;
    if (stat(paths[k], &sb) != 0) return pt_fail(ctx, PT_EIO, "cifar: cannot open '%s': %s", paths[k], strerror(errno));
    if (!S_ISREG(sb.st_mode)) return pt_fail(ctx, PT_EIO, "cifar: '%s' is not a regular file", paths[k]);
    if (sb.st_size == 0 || sb.st_size % rec != 0)
      return pt_fail(ctx, PT_EFORMAT,
                     "cifar: '%s': %lld bytes is not a whole number of %lld-byte records (truncated or not a "
                     "CIFAR-%d binary file)", paths[k], (long long)sb.st_size, (long long)rec, label_bytes == 1 ? 10 : 100);
    n += sb.st_size / rec;
  }
  int64_t ishape[4] = {n, 3, 32, 32};
  pt_status st = pt_tensor_empty(ctx, PT_UINT8, 4, ishape, images);
  if (!st) st = pt_tensor_empty(ctx, PT_INT64, 1, &n, labels);
  if (!st && label_bytes == 2) st = pt_tensor_empty(ctx, PT_INT64, 1, &n, coarse);
  if (st) {
    pt_fail_prefix(ctx, "cifar");
    goto fail;
  }
  uint8_t *img = pt_tensor_data(*images);
  int64_t *lab = pt_tensor_data(*labels), *co = *coarse ? pt_tensor_data(*coarse) : NULL;
  int64_t i = 0;
  for (int k = 0; k < npaths && !st; k++) {
    FILE *f = fopen(paths[k], "rb");
    if (!f) {
      st = pt_fail(ctx, PT_EIO, "cifar: cannot open '%s': %s", paths[k], strerror(errno));
      break;
    }
    for (int64_t r = 0;; r++, i++) {
      uint8_t lb[2];
      size_t got = fread(lb, 1, (size_t)label_bytes, f);
      if (got == 0 && feof(f)) break;
      if (i >= n || got != (size_t)label_bytes || fread(img + i * CIFAR_PIXELS, 1, CIFAR_PIXELS, f) != CIFAR_PIXELS) {
        st = pt_fail(ctx, PT_EIO, "cifar: '%s' changed size while it was read", paths[k]);
        break;
      }
      for (int b = 0; b < label_bytes; b++)
        if (lb[b] >= nclasses[b]) {
          st = pt_fail(ctx, PT_EFORMAT, "cifar: '%s': record %lld has %slabel %d, expected 0..%d (not a CIFAR-%d file?)",
                       paths[k], (long long)r + 1, label_bytes == 2 ? (b ? "fine " : "coarse ") : "", lb[b],
                       nclasses[b] - 1, label_bytes == 1 ? 10 : 100);
          break;
        }
      if (st) break;
      lab[i] = lb[label_bytes - 1] + 1;
      if (co) co[i] = lb[0] + 1;
    }
    fclose(f);
  }
  if (!st && i != n) st = pt_fail(ctx, PT_EIO, "cifar: the files changed size while they were read");
  if (!st) return PT_OK;
fail:
  pt_tensor_release(*images);
  pt_tensor_release(*labels);
  pt_tensor_release(*coarse);
  *images = *labels = *coarse = NULL;
  return st;
}
