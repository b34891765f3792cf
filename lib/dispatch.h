/* Writing one kernel body for several element types: the body is expanded once per type with
 * T bound to it (the way Torch7's generic files did it, without a second file). */
#ifndef PT_DISPATCH_H
#define PT_DISPATCH_H

#include "pt_core.h"

/* float32 or float64 */
#define PT_DISPATCH_FLOAT(dt, ...) \
  do {                             \
    if ((dt) == PT_FLOAT32) {      \
      typedef float T;             \
      __VA_ARGS__                  \
    } else {                       \
      typedef double T;            \
      __VA_ARGS__                  \
    }                              \
  } while (0)

/* float32, float64, or int64 for every other dtype (convert integer inputs to int64 first) */
#define PT_DISPATCH_FLOAT_INT64(dt, ...) \
  do {                                   \
    if ((dt) == PT_FLOAT32) {            \
      typedef float T;                   \
      __VA_ARGS__                        \
    } else if ((dt) == PT_FLOAT64) {     \
      typedef double T;                  \
      __VA_ARGS__                        \
    } else {                             \
      typedef int64_t T;                 \
      __VA_ARGS__                        \
    }                                    \
  } while (0)

#endif
