/* C function signatures written as strings, e.g. "void(int, float, float*, float*)", parsed
 * for pt.ffi (host/l_ffi.c builds the libffi call interface from the result).
 *
 * Grammar: ret '(' [param {',' param}] ')' where each type is one of
 *   void (return only, or alone as the parameter list: "int(void)")
 *   int int32_t unsigned uint32_t long int64_t long long ssize_t size_t uint64_t
 *   unsigned long float double bool
 *   const char* / char*                    (a Lua string)
 *   float* double* int64_t* long* int* int32_t* uint8_t* unsigned char* bool*  (tensor data)
 *   void*                                  (tensor data of any dtype, or nil)
 * "const" is ignored; a parameter may carry a name ("float *x"). Positions in messages are
 * 1-based character positions in the signature string. */
#ifndef PT_FFI_SIG_H
#define PT_FFI_SIG_H

#include "pt_core.h"

#define PT_FFI_MAX_ARGS 16

typedef enum pt_ffi_kind {
  PT_FFI_VOID = 0,
  PT_FFI_BOOL,
  PT_FFI_INT32,
  PT_FFI_UINT32,
  PT_FFI_INT64,
  PT_FFI_UINT64,
  PT_FFI_FLOAT,
  PT_FFI_DOUBLE,
  PT_FFI_STRING, /* const char* */
  PT_FFI_PTR,    /* pointer to tensor data; elem says the dtype, PT_DTYPE_COUNT = void* */
} pt_ffi_kind;

typedef struct pt_ffi_type {
  pt_ffi_kind kind;
  pt_dtype elem; /* for PT_FFI_PTR */
} pt_ffi_type;

typedef struct pt_ffi_sig {
  pt_ffi_type ret;
  int nargs;
  pt_ffi_type args[PT_FFI_MAX_ARGS];
} pt_ffi_sig;

/* Parse `text`. On failure the message reads
 *   ffi: bad signature "void(int,": expected a type at position 10 */
pt_status pt_ffi_sig_parse(pt_ctx *ctx, const char *text, pt_ffi_sig *out);

/* The canonical spelling of a type ("float*", "const char*", "int64_t") */
const char *pt_ffi_type_name(pt_ffi_type t);
/* "void(int, float, float*, float*)" into buf; returns buf */
const char *pt_ffi_sig_format(const pt_ffi_sig *sig, char *buf, size_t n);

#endif
