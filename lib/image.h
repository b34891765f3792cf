/* Image files: PNG (libpng) and JPEG (libjpeg-turbo) decoding into uint8 {C, H, W} tensors
 * (torchvision.io.read_image's layout), and PNG writing. Plain C17, no Lua.
 *
 * Decoding rules:
 * - The format comes from the data's signature, never from a file name.
 * - PNG: palettes are expanded to RGB, a tRNS chunk becomes an alpha channel, gray below 8 bits
 *   is scaled to 8 bits; 16-bit samples keep their high byte (v >> 8): PIL's 8-bit modes read
 *   16-bit RGB(A) that way, and torchvision (>= 0.21, whose read_image returns uint16 for them)
 *   gives the same with v2.functional.to_dtype(img, torch.uint8, scale=True). No gamma
 *   correction, no EXIF orientation (read_image's defaults).
 * - JPEG: 8-bit baseline/progressive, grayscale or YCbCr/RGB; CMYK/YCCK files are refused. A
 *   truncated file is an error (libjpeg would pad it with gray and warn); other libjpeg
 *   warnings (extraneous bytes before a marker) are not.
 * - Modes: UNCHANGED keeps the decoded channels (PNG: 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA;
 *   JPEG: 1 or 3), GRAY gives 1 (RGB -> gray with torchvision's weights: libpng's
 *   rgb_to_gray with 0.2989, 0.587 for PNG, libjpeg's Y for JPEG; alpha dropped), RGB gives 3
 *   (alpha dropped), RGBA gives 4 (alpha 255 where the image has none).
 * - Images above PT_IMAGE_MAX_PIXELS pixels are refused before anything that size is
 *   allocated; corrupt or truncated data is an error naming the file (or "data" for in-memory
 *   bytes) and what libpng/libjpeg reported. */
#ifndef PT_IMAGE_H
#define PT_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "tensor.h"

typedef enum pt_image_mode {
  PT_IMAGE_UNCHANGED,
  PT_IMAGE_GRAY,
  PT_IMAGE_RGB,
  PT_IMAGE_RGBA,
} pt_image_mode;

#define PT_IMAGE_MAX_PIXELS ((int64_t)1 << 28)

/* Decode PNG or JPEG bytes into a new uint8 {C, H, W}. fname starts messages ("image.decode");
 * name, when not NULL, is the file the bytes came from (messages quote it). */
pt_status pt_image_decode(pt_ctx *ctx, const char *fname, const char *name, const uint8_t *data,
                          size_t len, pt_image_mode mode, pt_tensor **out);

/* Read and decode the file at path (messages start with "image.read: 'path': "). */
pt_status pt_image_read(pt_ctx *ctx, const char *path, pt_image_mode mode, pt_tensor **out);

/* Write t (uint8 {C, H, W}, C = 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA, any strides, on the CPU)
 * as an 8-bit non-interlaced PNG. A failed write removes the partial file. */
pt_status pt_image_write_png(pt_ctx *ctx, const pt_tensor *t, const char *path);

/* CIFAR-10/100 binary batches (data_batch_*.bin / test_batch.bin, train.bin / test.bin): records
 * of label_bytes (1: CIFAR-10, 2: CIFAR-100's coarse then fine label) label bytes followed by
 * the 3072 bytes of a 32x32 image as R, G and B planes. The npaths files are read in order into
 * images (uint8 {N, 3, 32, 32}), labels (int64 {N}: the last label byte + 1, 1-based) and, when
 * label_bytes == 2, coarse (int64 {N}: the first byte + 1; else NULL). nclasses[k] bounds label
 * byte k (a value >= it is an error). A file that is empty or not a whole number of records is
 * an error naming it. */
pt_status pt_cifar_read(pt_ctx *ctx, const char *const *paths, int npaths, int label_bytes,
                        const int *nclasses, pt_tensor **images, pt_tensor **labels, pt_tensor **coarse);

#endif
