/* SPDX-License-Identifier: MIT */
/* The benchmarks' statistics and CSV output (common.h): plain C, the same
 * on every platform. */
#include "common.h"

#include <math.h>
#include <stdlib.h>

/* ---- Statistics ------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double bench_percentile(double *v, int n, double p) {
  if (n <= 0)
    return NAN;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  /* Nearest rank: an observed value, never an interpolation between two. */
  int k = (int)ceil(p * n) - 1;
  if (k < 0)
    k = 0;
  if (k >= n)
    k = n - 1;
  return v[k];
}

double bench_median(double *v, int n) {
  if (n <= 0)
    return NAN;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- CSV ---------------------------------------------------------------------- */

static FILE *csv;

void bench_csv_open(const char *path) {
  if (path == NULL)
    return;
  csv = fopen(path, "a");
  if (csv == NULL)
    bench_die("fopen csv");
}

void bench_csv_row(const char *scenario, const char *strategy, long param,
                   const char *metric, double value, double ratio, int reps) {
  if (csv == NULL)
    return;
  fprintf(csv, "%s,%s,%s,%ld,%s,", BENCH_PLATFORM, scenario, strategy, param,
          metric);
  if (isnan(value))
    fprintf(csv, ",");
  else
    fprintf(csv, "%.6g,", value);
  if (isnan(ratio))
    fprintf(csv, ",");
  else
    fprintf(csv, "%.4f,", ratio);
  fprintf(csv, "%d\n", reps);
  fflush(csv);
}

void bench_csv_close(void) {
  if (csv != NULL)
    fclose(csv);
  csv = NULL;
}
