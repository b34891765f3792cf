/* A tiny test harness for lib/: CHECK records failures, each test file prints a summary. */
#ifndef PT_TESTING_H
#define PT_TESTING_H

#include <math.h>
#include <stdio.h>

static int tests_failed = 0, tests_run = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    tests_run++;                                                               \
    if (!(cond)) {                                                             \
      tests_failed++;                                                          \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

#define CHECK_NEAR(a, b, tol) CHECK(fabs((double)(a) - (double)(b)) <= (tol))

#define TEST_SUMMARY()                                                   \
  (printf("%d checks, %d failed\n", tests_run, tests_failed), tests_failed ? 1 : 0)

#endif
