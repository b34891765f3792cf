/* Native functions for the pt.ffi and inbatch_parallel specs (built as spec/lib_native.so in the build tree). */
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* y[i] = a * x[i] + y[i] */
void saxpy(int n, float a, const float *x, float *y) {
  for (int i = 0; i < n; i++) y[i] = a * x[i] + y[i];
}

/* y[i] += a * x[i] in float64 */
void daxpy(int n, double a, const double *x, double *y) {
  for (int i = 0; i < n; i++) y[i] += a * x[i];
}

float sdot(int n, const float *x, const float *y) {
  float s = 0;
  for (int i = 0; i < n; i++) s += x[i] * y[i];
  return s;
}

/* fills out[0..n) with start, start+1, ... */
void iota_i64(int64_t *out, int64_t n, int64_t start) {
  for (int64_t i = 0; i < n; i++) out[i] = start + i;
}

int64_t add_i64(int64_t a, int64_t b) { return a + b; }
double scale(double x, double by) { return x * by; }
unsigned int bump_u32(unsigned int x) { return x + 1u; }
uint64_t twice_u64(uint64_t x) { return x * 2u; }
int count_true(int n, const _Bool *flags) {
  int c = 0;
  for (int i = 0; i < n; i++) c += flags[i] ? 1 : 0;
  return c;
}
_Bool is_positive(double x) { return x > 0; }

size_t string_length(const char *s) { return s ? strlen(s) : 0; }
const char *greeting(int polite) { return polite ? "good day" : "hi"; }
const char *nothing(void) { return NULL; }
int is_null(const void *p) { return p == NULL; }

/* sleeps ms milliseconds, then returns id (shows that native items run at the same time) */
int sleep_ms(int ms, int id) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
  return id;
}

/* Writes to an unmapped address when asked: a native function that crashes its process.
 * The default SIGSEGV action is restored first because sanitizer builds install a handler that
 * turns the fault into exit(1); the specs check for death by signal 11 in every build. */
static volatile uintptr_t bad_address = 8;
int crash_if(int crash) {
  if (crash) {
    signal(SIGSEGV, SIG_DFL);
    *(volatile int *)bad_address = 42;
    raise(SIGSEGV); /* should the write above not fault */
  }
  return 7;
}
