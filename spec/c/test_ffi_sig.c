/* Unit tests of the pt.ffi signature parser (lib/ffi_sig.c). */
#include <string.h>

#include "../../lib/ffi_sig.h"
#include "testing.h"

static pt_ctx ctx;

static bool parses(const char *text, pt_ffi_sig *sig) {
  return pt_ffi_sig_parse(&ctx, text, sig) == PT_OK;
}

static bool fails_with(const char *text, const char *expected) {
  pt_ffi_sig sig;
  pt_status st = pt_ffi_sig_parse(&ctx, text, &sig);
  if (st != PT_EARG) return false;
  if (strcmp(ctx.err, expected) != 0) {
    fprintf(stderr, "  got:      %s\n  expected: %s\n", ctx.err, expected);
    return false;
  }
  return true;
}

static const char *canonical(const char *text) {
  static char buf[256];
  pt_ffi_sig sig;
  if (!parses(text, &sig)) return ctx.err;
  return pt_ffi_sig_format(&sig, buf, sizeof buf);
}

static void test_saxpy(void) {
  pt_ffi_sig sig;
  CHECK(parses("void(int, float, float*, float*)", &sig));
  CHECK(sig.ret.kind == PT_FFI_VOID);
  CHECK(sig.nargs == 4);
  CHECK(sig.args[0].kind == PT_FFI_INT32);
  CHECK(sig.args[1].kind == PT_FFI_FLOAT);
  CHECK(sig.args[2].kind == PT_FFI_PTR && sig.args[2].elem == PT_FLOAT32);
  CHECK(sig.args[3].kind == PT_FFI_PTR && sig.args[3].elem == PT_FLOAT32);
}

static void test_spellings(void) {
  CHECK(strcmp(canonical("void()"), "void()") == 0);
  CHECK(strcmp(canonical("int(void)"), "int()") == 0);
  CHECK(strcmp(canonical("  double ( double x , const double * const y )  "),
                "double(double, double*)") == 0);
  CHECK(strcmp(canonical("int64_t(long, long long, size_t, unsigned long, ssize_t)"),
                "int64_t(int64_t, int64_t, uint64_t, uint64_t, int64_t)") == 0);
  CHECK(strcmp(canonical("unsigned(unsigned int n, uint32_t, int32_t, bool)"),
                "unsigned(unsigned, unsigned, int, bool)") == 0);
  CHECK(strcmp(canonical("const char*(const char *name, char*)"),
                "const char*(const char*, const char*)") == 0);
  CHECK(strcmp(canonical("void(int64_t*, long*, int*, uint8_t*, unsigned char*, bool*, void*)"),
                "void(int64_t*, int64_t*, int32_t*, uint8_t*, uint8_t*, bool*, void*)") == 0);
  pt_ffi_sig sig;
  CHECK(parses("float(double*, void*)", &sig));
  CHECK(sig.ret.kind == PT_FFI_FLOAT);
  CHECK(sig.args[0].elem == PT_FLOAT64);
  CHECK(sig.args[1].kind == PT_FFI_PTR && sig.args[1].elem == PT_DTYPE_COUNT);
}

static void test_errors(void) {
  CHECK(fails_with("void(int,", "ffi: bad signature \"void(int,\": expected a type at position 10"));
  CHECK(fails_with("", "ffi: bad signature \"\": expected a type at position 1"));
  CHECK(fails_with("void", "ffi: bad signature \"void\": expected '(' at position 5"));
  CHECK(fails_with("void(flaot)", "ffi: bad signature \"void(flaot)\": unknown type 'flaot' at position 6"));
  CHECK(fails_with("void(int float)",
                   "ffi: bad signature \"void(int float)\": unknown type 'int float' at position 6"));
  CHECK(fails_with("void(int x y)", "ffi: bad signature \"void(int x y)\": unknown type 'int x y' at position 6"));
  CHECK(fails_with("void(int; float)",
                   "ffi: bad signature \"void(int; float)\": expected ',' or ')' at position 9"));
  CHECK(fails_with("void(int) x", "ffi: bad signature \"void(int) x\": unexpected text after ')' at position 11"));
  CHECK(fails_with("void(char**)",
                   "ffi: bad signature \"void(char**)\": unsupported pointer type 'char**' at position 10"));
  CHECK(fails_with("void(size_t*)",
                   "ffi: bad signature \"void(size_t*)\": unsupported pointer type 'size_t*' at position 6"));
  CHECK(fails_with("float*(int)",
                   "ffi: bad signature \"float*(int)\": return type 'float*' is not supported (use "
                   "void, a number type or const char*) at position 1"));
  CHECK(fails_with("void(int, void)",
                   "ffi: bad signature \"void(int, void)\": void is only allowed alone in the "
                   "parameter list at position 11"));
  CHECK(fails_with("void(void, int)",
                   "ffi: bad signature \"void(void, int)\": void is only allowed alone in the "
                   "parameter list at position 6"));
  CHECK(fails_with("void(,int)", "ffi: bad signature \"void(,int)\": expected a type at position 6"));
  CHECK(fails_with("void(int a,int b,int c,int d,int e,int f,int g,int h,int i,int j,int k,int l,"
                   "int m,int n,int o,int p,int q)",
                   "ffi: bad signature \"void(int a,int b,int c,int d,int e,int f,int g,int h,int "
                   "i,int j,int k,int l,int m,int n,int o,int p,int q)\": too many parameters (at "
                   "most 16) at position 102"));
  CHECK(fails_with("void(float *double)", "ffi: bad signature \"void(float *double)\": unexpected "
                   "type word 'double' after the pointer at position 13"));
  CHECK(fails_with(NULL, "ffi: bad signature \"\": expected a type at position 1"));
}

int main(void) {
  pt_ctx_init(&ctx, 1);
  test_saxpy();
  test_spellings();
  test_errors();
  return TEST_SUMMARY();
}
