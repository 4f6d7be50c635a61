/* SciMark 2.0's five kernels (FFT, SOR, Monte Carlo, sparse matmult, LU) in C, after NIST's
 * public-domain ANSI C version, built from this one source both as a native static binary and
 * as a WASI module, so native, container, VM and Wasm run the same code.
 *
 * usage: vb-scimark ITERATIONS [-large] MIN_TIME (as SciMark's own [-large] [MIN_TIME])
 * Each iteration prints SciMark's own report lines (Mflops; "Composite Score" is their mean),
 * framed by "vb-iteration N start_ms=... end_ms=..." lines timed from main(): the first
 * iteration and the later ones can be told apart, as for the JVM harness.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PI 3.1415926535897932
#define RANDOM_SEED 101010
#define MONTE_CARLO_SEED 113

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* --- SciMark's random number generator (a subtractive lagged Fibonacci generator) ------- */

#define M1 2147483647 /* 2^31 - 1 */
#define M2 65536

typedef struct {
    int m[17];
    int i, j;
} Random;

static void random_init(Random *r, int seed) {
    int jseed, k0, k1, j0, j1, n;
    if (seed < 0) seed = -seed;
    jseed = seed < M1 ? seed : M1;
    if (jseed % 2 == 0) --jseed;
    k0 = 9069 % M2;
    k1 = 9069 / M2;
    j0 = jseed % M2;
    j1 = jseed / M2;
    for (n = 0; n < 17; ++n) {
        jseed = j0 * k0;
        j1 = (jseed / M2 + j0 * k1 + j1 * k0) % (M2 / 2);
        j0 = jseed % M2;
        r->m[n] = j0 + M2 * j1;
    }
    r->i = 4;
    r->j = 16;
}

static double random_next(Random *r) {
    int k = r->m[r->i] - r->m[r->j];
    if (k < 0) k += M1;
    r->m[r->j] = k;
    r->i = r->i == 0 ? 16 : r->i - 1;
    r->j = r->j == 0 ? 16 : r->j - 1;
    return (1.0 / (double)M1) * (double)k;
}

static double *random_vector(int n, Random *r) {
    double *x = malloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < n; i++) x[i] = random_next(r);
    return x;
}

static double **new_matrix(int m, int n) {
    double **a = malloc(sizeof(double *) * (size_t)m);
    for (int i = 0; i < m; i++) a[i] = malloc(sizeof(double) * (size_t)n);
    return a;
}

static void free_matrix(double **a, int m) {
    for (int i = 0; i < m; i++) free(a[i]);
    free(a);
}

static double **random_matrix(int m, int n, Random *r) {
    double **a = new_matrix(m, n);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) a[i][j] = random_next(r);
    return a;
}

/* --- FFT ---------------------------------------------------------------------------------- */

static int int_log2(int n) {
    int k = 1, log = 0;
    for (; k < n; k *= 2, log++) {
    }
    return log;
}

static void fft_bitreverse(int N, double *data) {
    int n = N / 2, nm1 = n - 1, j = 0;
    for (int i = 0; i < nm1; i++) {
        int ii = i << 1, jj = j << 1, k = n >> 1;
        if (i < j) {
            double tr = data[ii], ti = data[ii + 1];
            data[ii] = data[jj];
            data[ii + 1] = data[jj + 1];
            data[jj] = tr;
            data[jj + 1] = ti;
        }
        while (k <= j) {
            j -= k;
            k >>= 1;
        }
        j += k;
    }
}

static void fft_transform_internal(int N, double *data, int direction) {
    int n = N / 2, dual = 1;
    if (n == 1) return;
    int logn = int_log2(n);
    fft_bitreverse(N, data);
    for (int bit = 0; bit < logn; bit++, dual *= 2) {
        double w_real = 1.0, w_imag = 0.0;
        double theta = 2.0 * direction * PI / (2.0 * (double)dual);
        double s = sin(theta), t = sin(theta / 2.0), s2 = 2.0 * t * t;
        for (int b = 0; b < n; b += 2 * dual) {
            int i = 2 * b, j = 2 * (b + dual);
            double wd_real = data[j], wd_imag = data[j + 1];
            data[j] = data[i] - wd_real;
            data[j + 1] = data[i + 1] - wd_imag;
            data[i] += wd_real;
            data[i + 1] += wd_imag;
        }
        for (int a = 1; a < dual; a++) {
            double tmp_real = w_real - s * w_imag - s2 * w_real;
            double tmp_imag = w_imag + s * w_real - s2 * w_imag;
            w_real = tmp_real;
            w_imag = tmp_imag;
            for (int b = 0; b < n; b += 2 * dual) {
                int i = 2 * (b + a), j = 2 * (b + a + dual);
                double z1_real = data[j], z1_imag = data[j + 1];
                double wd_real = w_real * z1_real - w_imag * z1_imag;
                double wd_imag = w_real * z1_imag + w_imag * z1_real;
                data[j] = data[i] - wd_real;
                data[j + 1] = data[i + 1] - wd_imag;
                data[i] += wd_real;
                data[i + 1] += wd_imag;
            }
        }
    }
}

static void fft_inverse(int N, double *data) {
    fft_transform_internal(N, data, +1);
    double norm = 1.0 / (double)(N / 2);
    for (int i = 0; i < N; i++) data[i] *= norm;
}

static double measure_fft(int N, double min_time, Random *r) {
    double *x = random_vector(2 * N, r), t = 0;
    long cycles = 1;
    for (;;) {
        double t0 = now_s();
        for (long c = 0; c < cycles; c++) {
            fft_transform_internal(2 * N, x, -1);
            fft_inverse(2 * N, x);
        }
        t = now_s() - t0;
        if (t >= min_time) break;
        cycles *= 2;
    }
    free(x);
    double logn = int_log2(N);
    return ((5.0 * N - 2) * logn + 2 * (N + 1)) * (double)cycles / t * 1e-6;
}

/* --- SOR ---------------------------------------------------------------------------------- */

static void sor_execute(int M, int N, double omega, double **G, long iterations) {
    double omega_over_four = omega * 0.25, one_minus_omega = 1.0 - omega;
    for (long p = 0; p < iterations; p++)
        for (int i = 1; i < M - 1; i++) {
            double *Gi = G[i], *Gim1 = G[i - 1], *Gip1 = G[i + 1];
            for (int j = 1; j < N - 1; j++)
                Gi[j] = omega_over_four * (Gim1[j] + Gip1[j] + Gi[j - 1] + Gi[j + 1]) +
                        one_minus_omega * Gi[j];
        }
}

static double measure_sor(int N, double min_time, Random *r) {
    double **G = random_matrix(N, N, r), t = 0;
    long cycles = 1;
    for (;;) {
        double t0 = now_s();
        sor_execute(N, N, 1.25, G, cycles);
        t = now_s() - t0;
        if (t >= min_time) break;
        cycles *= 2;
    }
    free_matrix(G, N);
    return (double)(N - 1) * (N - 1) * (double)cycles * 6.0 / t * 1e-6;
}

/* --- Monte Carlo -------------------------------------------------------------------------- */

static double monte_carlo_integrate(long samples) {
    Random r;
    random_init(&r, MONTE_CARLO_SEED);
    long under_curve = 0;
    for (long c = 0; c < samples; c++) {
        double x = random_next(&r), y = random_next(&r);
        if (x * x + y * y <= 1.0) under_curve++;
    }
    return ((double)under_curve / (double)samples) * 4.0;
}

static volatile double sink; /* keeps results alive so no kernel is optimized away */

static double measure_monte_carlo(double min_time) {
    double t = 0;
    long cycles = 1;
    for (;;) {
        double t0 = now_s();
        sink = monte_carlo_integrate(cycles);
        t = now_s() - t0;
        if (t >= min_time) break;
        cycles *= 2;
    }
    return (double)cycles * 4.0 / t * 1e-6;
}

/* --- sparse matrix multiply (compressed row) ---------------------------------------------- */

static void sparse_matmult(int M, double *y, const double *val, const int *row, const int *col,
                           const double *x, long iterations) {
    for (long reps = 0; reps < iterations; reps++)
        for (int r = 0; r < M; r++) {
            double sum = 0.0;
            for (int i = row[r]; i < row[r + 1]; i++) sum += x[col[i]] * val[i];
            y[r] = sum;
        }
}

static double measure_sparse(int N, int nz, double min_time, Random *r) {
    double *x = random_vector(N, r), *y = calloc((size_t)N, sizeof(double)), t = 0;
    int nr = nz / N, anz = nr * N;
    double *val = random_vector(anz, r);
    int *col = malloc(sizeof(int) * (size_t)nz), *row = malloc(sizeof(int) * (size_t)(N + 1));
    row[0] = 0;
    for (int rr = 0; rr < N; rr++) {
        int rowr = row[rr], step = rr / nr;
        row[rr + 1] = rowr + nr;
        if (step < 1) step = 1;
        for (int i = 0; i < nr; i++) col[rowr + i] = i * step;
    }
    long cycles = 1;
    for (;;) {
        double t0 = now_s();
        sparse_matmult(N, y, val, row, col, x, cycles);
        t = now_s() - t0;
        if (t >= min_time) break;
        cycles *= 2;
    }
    sink = y[0];
    free(x), free(y), free(val), free(col), free(row);
    return (double)anz * 2.0 * (double)cycles / t * 1e-6;
}

/* --- LU factorization with partial pivoting ----------------------------------------------- */

static int lu_factor(int M, int N, double **A, int *pivot) {
    int min_mn = M < N ? M : N;
    for (int j = 0; j < min_mn; j++) {
        int jp = j;
        double t = fabs(A[j][j]);
        for (int i = j + 1; i < M; i++) {
            double ab = fabs(A[i][j]);
            if (ab > t) {
                jp = i;
                t = ab;
            }
        }
        pivot[j] = jp;
        if (A[jp][j] == 0) return 1;
        if (jp != j) {
            double *tA = A[j];
            A[j] = A[jp];
            A[jp] = tA;
        }
        if (j < M - 1) {
            double recp = 1.0 / A[j][j];
            for (int k = j + 1; k < M; k++) A[k][j] *= recp;
        }
        if (j < min_mn - 1)
            for (int ii = j + 1; ii < M; ii++) {
                double *Aii = A[ii], *Aj = A[j], AiiJ = Aii[j];
                for (int jj = j + 1; jj < N; jj++) Aii[jj] -= AiiJ * Aj[jj];
            }
    }
    return 0;
}

static double measure_lu(int N, double min_time, Random *r) {
    double **A = random_matrix(N, N, r), **lu = new_matrix(N, N), t = 0;
    int *pivot = malloc(sizeof(int) * (size_t)N);
    long cycles = 1;
    for (;;) {
        double t0 = now_s();
        for (long c = 0; c < cycles; c++) {
            for (int i = 0; i < N; i++) memcpy(lu[i], A[i], sizeof(double) * (size_t)N);
            if (lu_factor(N, N, lu, pivot)) {
                fprintf(stderr, "vb-scimark: LU: singular matrix\n");
                exit(2);
            }
        }
        t = now_s() - t0;
        if (t >= min_time) break;
        cycles *= 2;
    }
    sink = lu[0][0];
    free_matrix(A, N), free_matrix(lu, N), free(pivot);
    return 2.0 * (double)N * N * N / 3.0 * (double)cycles / t * 1e-6;
}

/* --- driver ------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
    double start = now_s();
    int large = argc == 4 && strcmp(argv[2], "-large") == 0;
    if (argc != 3 && !large) {
        fprintf(stderr, "usage: %s ITERATIONS [-large] MIN_TIME\n", argv[0]);
        return 2;
    }
    int iterations = atoi(argv[1]);
    double min_time = atof(argv[argc - 1]);
    /* SciMark 2.0's sizes: the default fits in cache, -large does not */
    int fft_n = large ? 1048576 : 1024, sor_n = large ? 1000 : 100;
    int sparse_n = large ? 100000 : 1000, sparse_nz = large ? 1000000 : 5000;
    int lu_n = large ? 1000 : 100;
    if (iterations < 1 || min_time <= 0) {
        fprintf(stderr, "vb-scimark: ITERATIONS >= 1 and MIN_TIME > 0 expected\n");
        return 2;
    }
    printf("vb-scimark: SciMark 2.0 kernels in C, min_time=%g\n", min_time);
    for (int it = 1; it <= iterations; it++) {
        Random r;
        random_init(&r, RANDOM_SEED);
        printf("vb-iteration %d start_ms=%.1f\n", it, (now_s() - start) * 1e3);
        double fft = measure_fft(fft_n, min_time, &r);
        double sor = measure_sor(sor_n, min_time, &r);
        double mc = measure_monte_carlo(min_time);
        double sparse = measure_sparse(sparse_n, sparse_nz, min_time, &r);
        double lu = measure_lu(lu_n, min_time, &r);
        printf("Composite Score: %.6f\n", (fft + sor + mc + sparse + lu) / 5.0);
        printf("FFT (%d): %.6f\n", fft_n, fft);
        printf("SOR (%dx%d):   %.6f\n", sor_n, sor_n, sor);
        printf("Monte Carlo : %.6f\n", mc);
        printf("Sparse matmult (N=%d, nz=%d): %.6f\n", sparse_n, sparse_nz, sparse);
        printf("LU (%dx%d): %.6f\n", lu_n, lu_n, lu);
        printf("vb-iteration %d end_ms=%.1f\n", it, (now_s() - start) * 1e3);
        fflush(stdout);
    }
    return 0;
}
