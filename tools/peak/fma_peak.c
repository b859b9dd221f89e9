/* One core's peak f32 FMA rate: 12 independent FMA chains per vector width, long enough that
 * the loop is throughput-bound. Build and run on one core:
 *   gcc -O2 -mavx512f -mfma tools/peak/fma_peak.c -o /tmp/fma_peak && taskset -c 0 /tmp/fma_peak
 * (drop -mavx512f and the AVX-512 half on a CPU without it). Used in BENCHMARKS.md to say
 * which GEMM targets a core of this machine can reach at all. */
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
    const long n = 200000000;
    __m512 a[12], b = _mm512_set1_ps(1.0000001f), c = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < 12; i++) a[i] = _mm512_set1_ps((float)i);
    double t0 = now();
    for (long k = 0; k < n; k++) {
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++) a[i] = _mm512_fmadd_ps(a[i], b, c);
    }
    double t = now() - t0;
    float s = 0, o[16];
    for (int i = 0; i < 12; i++) { _mm512_storeu_ps(o, a[i]); s += o[0]; }
    printf("AVX-512 FMA: %.1f GFLOP/s (checksum %g)\n", n * 12.0 * 32 / t / 1e9, s);

    __m256 a2[12], b2 = _mm256_set1_ps(1.0000001f), c2 = _mm256_set1_ps(1e-7f);
    for (int i = 0; i < 12; i++) a2[i] = _mm256_set1_ps((float)i);
    t0 = now();
    for (long k = 0; k < n; k++) {
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++) a2[i] = _mm256_fmadd_ps(a2[i], b2, c2);
    }
    t = now() - t0;
    s = 0;
    float o2[8];
    for (int i = 0; i < 12; i++) { _mm256_storeu_ps(o2, a2[i]); s += o2[0]; }
    printf("AVX2 FMA:    %.1f GFLOP/s (checksum %g)\n", n * 12.0 * 16 / t / 1e9, s);
    return 0;
}
