/* lib/ops_special: the scalar functions against mpmath (40 digits), their edges, and the tensor
 * entry points' dtypes, errors and in-place rules, including the bitwise ops' shift rule. */
#include <string.h>

#include "ops_special.h"
#include "tensor.h"
#include "testing.h"

/* relative error of got against want (exact match for infinities and zeros) */
static double rel_err(double got, double want) {
  if (isinf(want) || want == 0) return got == want ? 0 : INFINITY;
  return fabs(got - want) / fabs(want);
}

static void test_scalar_values(void) {
  /* {partrain, mpmath} */
  const struct {
    double got, want, tol; /* tol 0: 2e-14 */
  } cases[] = {
    {pt_sf_digamma(1e-07), -10000000.5772155},
    {pt_sf_digamma(0.25), -4.2274535333762655},
    {pt_sf_digamma(3.0), 0.9227843350984671},
    {pt_sf_digamma(9.999), 2.2516474172057355},
    {pt_sf_digamma(10.001), 2.251857749877872},
    {pt_sf_digamma(123.456), 4.811829323828985},
    {pt_sf_digamma(1000000000000.0), 27.63102111592805},
    {pt_sf_digamma(-0.75), -2.894120200042932},
    {pt_sf_digamma(-7.3), 4.33730730551005},
    {pt_sf_digamma(-999999.5), 13.815510557964316},
    {pt_sf_lgamma(0.25), 1.2880225246980774},
    {pt_sf_lgamma(3.0), 0.6931471805599453},
    {pt_sf_lgamma(25.5), 56.389167643719944},
    {pt_sf_lgamma(-0.75), 1.5757045971498584},
    {pt_sf_lgamma(-7.3), -7.779101629826852},
    {pt_sf_i0(0.1), 1.0025015629340956},
    {pt_sf_i0(5.0), 27.239871823604446},
    {pt_sf_i0(29.99), 774024656436.818},
    {pt_sf_i0(30.01), 789395545278.1846},
    {pt_sf_i0(300.0), 4.475847367935052e+128},
    {pt_sf_i0(713.0), 6.705128263670996e+307},
    {pt_sf_i0(-12.0), 18948.925349296307},
    {pt_sf_i1(0.1), 0.050062526047092694},
    {pt_sf_i1(5.0), 24.335642142450528},
    {pt_sf_i1(29.99), 761008580669.2638},
    {pt_sf_i1(30.01), 776129916224.8453},
    {pt_sf_i1(300.0), 4.468381385036955e+128},
    {pt_sf_i1(713.0), 6.700424559186402e+307},
    {pt_sf_i1(-12.0), -18141.348781638833},
    {pt_sf_i0e(0.1), 0.9071009257823011},
    {pt_sf_i0e(29.99), 0.07315824574297991},
    {pt_sf_i0e(30.01), 0.07313365342356991},
    {pt_sf_i0e(10000.0), 0.003989472674604732},
    {pt_sf_i0e(1000000000000000.0), 1.2615662610100802e-08},
    {pt_sf_i0e(-50.0), 0.05656162664745419},
    {pt_sf_i1e(0.1), 0.045298446808809324},
    {pt_sf_i1e(29.99), 0.07192800939108444},
    {pt_sf_i1e(30.01), 0.07190465748682356},
    {pt_sf_i1e(10000.0), 0.003989273195983662},
    {pt_sf_i1e(1000000000000000.0), 1.2615662610100795e-08},
    {pt_sf_i1e(-50.0), -0.0559931238928954},
    {pt_sf_log_ndtr(-19.999), -203.89710611679703},
    {pt_sf_log_ndtr(-20.001), -203.93720562293421},
    {pt_sf_log_ndtr(-300.0), -45006.62273211866},
    {pt_sf_log_ndtr(-0.001), -0.6939453834669652},
    {pt_sf_log_ndtr(0.001), -0.6923496142726883},
    {pt_sf_log_ndtr(6.0), -9.865876455243758e-10},
    {pt_sf_ndtri(1e-100), -21.273453560965326},
    {pt_sf_ndtri(0.01), -2.326347874040841},
    {pt_sf_ndtri(0.2499), -0.67480447011061},
    {pt_sf_ndtri(0.2501), -0.674175097074659},
    {pt_sf_ndtri(0.499999999999), -2.5065728237018603e-12},
    {pt_sf_ndtri(0.9), 1.2815515655446006},
    {pt_sf_polygamma(1, 0.001), 1000001.6425331958},
    {pt_sf_polygamma(2, 0.5), -16.82879664423432},
    {pt_sf_polygamma(4, 13.25), -0.00022588903988983542},
    {pt_sf_polygamma(7, -0.3), 76905059.63376132},
    {pt_sf_polygamma(7, -3.7), 76905684.3055974},
    {pt_sf_polygamma(12, 2.0), -58779.88983145243},
    {pt_sf_polygamma(30, 40.5), -7.48677904637771e-18},
    {pt_sf_polygamma(171, 1000.0), 7.895703658426907e-207, 1e-13}, /* n! folded into the terms */
    {pt_sf_polygamma(250, 2.0), -INFINITY},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    double e = rel_err(cases[i].got, cases[i].want), tol = cases[i].tol ? cases[i].tol : 2e-14;
    if (e > tol) fprintf(stderr, "case %zu: got %.17g, want %.17g\n", i, cases[i].got, cases[i].want);
    CHECK(e <= tol);
  }
}

static void test_scalar_edges(void) {
  CHECK(pt_sf_digamma(0.0) == -INFINITY && pt_sf_digamma(-0.0) == INFINITY);
  CHECK(isnan(pt_sf_digamma(-3.0)) && isnan(pt_sf_digamma(-INFINITY)));
  CHECK(pt_sf_lgamma(-2.0) == INFINITY && pt_sf_lgamma(0.0) == INFINITY);
  CHECK(pt_sf_polygamma(1, -2.0) == INFINITY && pt_sf_polygamma(2, -2.0) == -INFINITY);
  CHECK(pt_sf_polygamma(3, 0.0) == INFINITY && pt_sf_polygamma(2, -INFINITY) == -INFINITY);
  CHECK(pt_sf_polygamma(1, INFINITY) == 0 && !signbit(pt_sf_polygamma(1, INFINITY)));
  CHECK(pt_sf_polygamma(2, INFINITY) == 0 && signbit(pt_sf_polygamma(2, INFINITY)));
  CHECK(isnan(pt_sf_polygamma(-1, 1.0)) && pt_sf_polygamma(0, 2.5) == pt_sf_digamma(2.5));
  /* beyond the reflection's order, negative x is nan (the values overflow long before) */
  CHECK(isnan(pt_sf_polygamma(1001, -0.5)));
  /* the half-integers: cot(pi x) is 0 there, so the reflection adds nothing (mpmath) */
  CHECK(rel_err(pt_sf_polygamma(6, -2.5), -0.1383581075500352) < 1e-14);
  CHECK(pt_sf_i0(INFINITY) == INFINITY && pt_sf_i1(-INFINITY) == -INFINITY);
  CHECK(pt_sf_i0e(-INFINITY) == 0 && pt_sf_i1e(-INFINITY) == 0 && signbit(pt_sf_i1e(-INFINITY)));
  CHECK(pt_sf_i1(-0.0) == 0 && !signbit(pt_sf_i1(-0.0))); /* +0, as PyTorch */
  CHECK(pt_sf_i0(714.0) == INFINITY && isfinite(pt_sf_i0(713.9)));
  CHECK(pt_sf_ndtri(0.0) == -INFINITY && pt_sf_ndtri(1.0) == INFINITY && pt_sf_ndtri(0.5) == 0);
  CHECK(isnan(pt_sf_ndtri(-0.1)) && isnan(pt_sf_ndtri(1.5)) && isnan(pt_sf_ndtri(NAN)));
  CHECK(pt_sf_log_ndtr(-INFINITY) == -INFINITY && pt_sf_log_ndtr(INFINITY) == 0);
  CHECK(pt_sf_entr(0.0) == 0 && pt_sf_entr(-1.0) == -INFINITY && isnan(pt_sf_entr(NAN)));
  CHECK(pt_sf_xlog1py(0.0, -1.0) == 0 && isnan(pt_sf_xlog1py(0.0, NAN)) && pt_sf_xlog1py(1.0, -1.0) == -INFINITY);
  /* ndtri inverts ndtr over the whole range, the lower tail through log ndtr */
  for (double p = 1e-300; p < 0.5; p *= 7.3) {
    double x = pt_sf_ndtri(p);
    CHECK(rel_err(pt_sf_log_ndtr(x), log(p)) < 1e-14);
  }
  for (double p = 0.01; p < 1; p += 0.0137) CHECK(fabs(pt_sf_ndtr(pt_sf_ndtri(p)) - p) < 2e-16 * (1 + p / (1 - p)));
  /* log_ndtr is continuous across its branches */
  CHECK(rel_err(pt_sf_log_ndtr(-20.0), pt_sf_log_ndtr(nextafter(-20.0, 0))) < 1e-13);
  CHECK(rel_err(pt_sf_log_ndtr(0.0), log(0.5)) < 1e-16);
}

static pt_tensor *make(pt_ctx *ctx, pt_dtype dt, int64_t n, const double *v) {
  pt_tensor *t = NULL;
  CHECK(pt_tensor_empty(ctx, dt, 1, &n, &t) == PT_OK);
  for (int64_t i = 0; i < n; i++) pt_tensor_set_flat(t, i, v[i]);
  return t;
}

static void test_tensor_special(pt_ctx *ctx) {
  pt_tensor *i = make(ctx, PT_INT64, 3, (double[]){1, 2, 5}), *r = NULL;
  CHECK(pt_special(ctx, PT_SP_LGAMMA, i, 0, &r) == PT_OK);
  CHECK(r->dtype == PT_FLOAT32 && pt_tensor_get_flat(r, 2) == (float)log(24.0));
  pt_tensor_release(r);
  r = NULL;
  CHECK(pt_special(ctx, PT_SP_POLYGAMMA, i, -1, &r) == PT_EARG && r == NULL);
  CHECK(strcmp(pt_errmsg(ctx), "polygamma: n must be a non-negative integer, got -1") == 0);
  CHECK(pt_special(ctx, PT_SP_MVLGAMMA, i, 0, &r) == PT_EARG);
  CHECK(strcmp(pt_errmsg(ctx), "mvlgamma: p has to be greater than or equal to 1, got 0") == 0);
  CHECK(pt_special_(ctx, PT_SP_DIGAMMA, i, 0) == PT_EARG);
  CHECK(strcmp(pt_errmsg(ctx), "digamma_: result type float32 can't be cast to the desired output type int64") == 0);
  pt_tensor *d = make(ctx, PT_FLOAT64, 2, (double[]){0.5, 3});
  CHECK(pt_special_(ctx, PT_SP_MVLGAMMA, d, 2) == PT_OK);
  CHECK(rel_err(pt_tensor_get_flat(d, 1), 0.25 * 2 * log(M_PI) + pt_sf_lgamma(3) + pt_sf_lgamma(2.5)) < 1e-15);
  pt_tensor_release(d);
  pt_tensor_release(i);
  /* xlog1py: broadcasting, a number on either side, float results */
  pt_tensor *a = make(ctx, PT_FLOAT64, 2, (double[]){0, 2}), *x = NULL;
  CHECK(pt_xlog1py_number(ctx, a, pt_number_int(3), true, &x) == PT_OK);
  CHECK(x->dtype == PT_FLOAT64 && pt_tensor_get_flat(x, 0) == 0);
  CHECK(rel_err(pt_tensor_get_flat(x, 1), 3.2958368660043291) < 1e-15); /* 3 log 3 */
  pt_tensor_release(x);
  pt_tensor_release(a);
}

static void test_bitwise(pt_ctx *ctx) {
  pt_tensor *a = make(ctx, PT_INT32, 4, (double[]){-8, 8, 1, -1}), *s = make(ctx, PT_INT32, 4, (double[]){1, 31, 32, -1});
  pt_tensor *l = NULL, *r = NULL;
  CHECK(pt_bitwise(ctx, PT_BIT_LSHIFT, a, s, &l) == PT_OK && pt_bitwise(ctx, PT_BIT_RSHIFT, a, s, &r) == PT_OK);
  CHECK(l->dtype == PT_INT32);
  CHECK(pt_tensor_get_flat(l, 0) == -16 && pt_tensor_get_flat(l, 1) == 0 && pt_tensor_get_flat(l, 2) == 0 &&
        pt_tensor_get_flat(l, 3) == 0);
  CHECK(pt_tensor_get_flat(r, 0) == -4 && pt_tensor_get_flat(r, 1) == 0 && pt_tensor_get_flat(r, 2) == 0 &&
        pt_tensor_get_flat(r, 3) == -1);
  pt_tensor_release(l);
  pt_tensor_release(r);
  /* an int64 number is taken exactly by an int64 tensor, by its low bits by an int32 one */
  int64_t big = ((int64_t)1 << 62) + 1;
  l = NULL;
  CHECK(pt_bitwise_number(ctx, PT_BIT_AND, a, pt_number_int(big), false, &l) == PT_OK);
  CHECK(l->dtype == PT_INT32 && pt_tensor_get_flat(l, 2) == 1 && pt_tensor_get_flat(l, 0) == 0);
  pt_tensor_release(l);
  pt_tensor *f = make(ctx, PT_FLOAT32, 1, (double[]){1});
  l = NULL;
  CHECK(pt_bitwise(ctx, PT_BIT_XOR, a, f, &l) == PT_EARG && l == NULL);
  CHECK(strcmp(pt_errmsg(ctx), "bitwise_xor: not supported for float32 tensors") == 0);
  CHECK(pt_bitwise_not(ctx, f, &l) == PT_EARG);
  CHECK(strcmp(pt_errmsg(ctx), "bitwise_not: not supported for float32 tensors") == 0);
  /* in place: the result in self's dtype; bool cannot take an integer result */
  pt_tensor *b = make(ctx, PT_BOOL, 1, (double[]){1});
  CHECK(pt_bitwise_number_(ctx, PT_BIT_OR, b, pt_number_int(2)) == PT_EARG);
  CHECK(strcmp(pt_errmsg(ctx), "bitwise_or_: result type int64 can't be cast to the desired output type bool") == 0);
  CHECK(pt_bitwise_number_(ctx, PT_BIT_LOGICAL_XOR, f, pt_number_int(0)) == PT_OK && pt_tensor_get_flat(f, 0) == 1);
  unsigned v = atomic_load(&a->storage->version);
  CHECK(pt_bitwise_not_(ctx, a) == PT_OK && pt_tensor_get_flat(a, 0) == 7);
  CHECK(atomic_load(&a->storage->version) != v);
  pt_tensor_release(b);
  pt_tensor_release(f);
  pt_tensor_release(a);
  pt_tensor_release(s);
}

int main(void) {
  pt_ctx ctx;
  pt_ctx_init(&ctx, 1);
  test_scalar_values();
  test_scalar_edges();
  test_tensor_special(&ctx);
  test_bitwise(&ctx);
  return TEST_SUMMARY();
}
