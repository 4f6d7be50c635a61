/* Shared helpers of virtbench's latency probes (seed 001 §6): clock, scheduling, statistics.
 *
 * Header-only so every probe stays one static binary built from one .c file. The probes
 * print one JSON object on stdout; problems the user can fix go to stderr with exit code 2
 * (bad argument) or 3 (no real-time permission).
 */
#ifndef VB_PROBE_H
#define VB_PROBE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>
#define VB_HAVE_TSC 1
#else
#define VB_HAVE_TSC 0
#endif

/* every helper is used by some probe, not all by each */
#define VB_FN static __attribute__((unused))

#define VB_EXIT_USAGE 2
#define VB_EXIT_NOPERM 3

/* ---- warnings collected for the JSON output ------------------------------------------ */
#define VB_MAX_WARN 8
static char vb_warn[VB_MAX_WARN][256];
static int vb_nwarn;

VB_FN void vb_warning(const char *fmt, ...) {
    if (vb_nwarn >= VB_MAX_WARN) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(vb_warn[vb_nwarn++], sizeof vb_warn[0], fmt, ap);
    va_end(ap);
}

VB_FN void vb_die(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(code);
}

/* ---- clock: TSC when invariant, else CLOCK_MONOTONIC_RAW ------------------------------ */
typedef struct {
    int use_tsc;
    int cpuid_invariant;    /* CPUID 0x80000007 EDX bit 8 */
    int cpuinfo_invariant;  /* /proc/cpuinfo has constant_tsc and nonstop_tsc */
    double ns_per_tick;     /* 1.0 for CLOCK_MONOTONIC_RAW */
    uint64_t cal_tick0, cal_ns0;
    char fallback[200];
} vb_clock;

static inline uint64_t vb_mono_raw(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t vb_mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Start and end reads: lfence keeps the busy loop's instructions inside the window. */
static inline uint64_t vb_read_start(const vb_clock *c) {
#if VB_HAVE_TSC
    if (c->use_tsc) {
        _mm_lfence();
        uint64_t t = __rdtsc();
        _mm_lfence();
        return t;
    }
#endif
    (void)c;
    return vb_mono_raw();
}

static inline uint64_t vb_read_end(const vb_clock *c, unsigned *cpu) {
#if VB_HAVE_TSC
    if (c->use_tsc) {
        uint64_t t = __rdtscp(cpu); /* TSC_AUX holds the CPU number on Linux */
        _mm_lfence();
        return t;
    }
#endif
    (void)c;
    *cpu = 0;
    return vb_mono_raw();
}

VB_FN int vb_cpuinfo_invariant(void) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return 0;
    char line[8192];
    int ok = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) == 0) {
            ok = strstr(line, " constant_tsc") && strstr(line, " nonstop_tsc");
            break;
        }
    }
    fclose(f);
    return ok;
}

/* One (tsc, monotonic ns) pair, taken where the two reads were closest together. */
VB_FN void vb_pair(uint64_t *tick, uint64_t *ns) {
#if VB_HAVE_TSC
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 7; i++) {
        uint64_t a = vb_mono();
        _mm_lfence();
        uint64_t t = __rdtsc();
        _mm_lfence();
        uint64_t b = vb_mono();
        if (b - a < best) {
            best = b - a;
            *tick = t;
            *ns = a + (b - a) / 2;
        }
    }
#else
    *tick = *ns = vb_mono();
#endif
}

/* mode: "auto", "tsc" or "monotonic_raw". */
VB_FN void vb_clock_init(vb_clock *c, const char *mode) {
    memset(c, 0, sizeof *c);
    c->ns_per_tick = 1.0;
#if VB_HAVE_TSC
    unsigned a, b, cc, d;
    if (__get_cpuid(0x80000000, &a, &b, &cc, &d) && a >= 0x80000007) {
        __get_cpuid(0x80000007, &a, &b, &cc, &d);
        c->cpuid_invariant = (d >> 8) & 1;
    }
#endif
    c->cpuinfo_invariant = vb_cpuinfo_invariant();
    int invariant = c->cpuid_invariant || c->cpuinfo_invariant;
    if (strcmp(mode, "monotonic_raw") == 0) {
        snprintf(c->fallback, sizeof c->fallback, "CLOCK_MONOTONIC_RAW requested");
    } else if (!VB_HAVE_TSC) {
        snprintf(c->fallback, sizeof c->fallback, "no TSC on this architecture");
    } else if (!invariant && strcmp(mode, "tsc") != 0) {
        snprintf(c->fallback, sizeof c->fallback,
                 "TSC not invariant (CPUID 0x80000007 EDX[8]=0 and no constant_tsc+nonstop_tsc"
                 " in /proc/cpuinfo): using CLOCK_MONOTONIC_RAW");
    } else {
        c->use_tsc = 1;
        if (!invariant)
            vb_warning("TSC forced although not invariant: durations may be wrong");
    }
    if (c->use_tsc) {
        /* first estimate over ~50 ms; refined by vb_clock_finish over the whole run */
        uint64_t t0, n0, t1, n1;
        vb_pair(&t0, &n0);
        while (vb_mono() - n0 < 50000000ull) {
        }
        vb_pair(&t1, &n1);
        c->ns_per_tick = (double)(n1 - n0) / (double)(t1 - t0);
        vb_pair(&c->cal_tick0, &c->cal_ns0);
    }
}

VB_FN void vb_clock_finish(vb_clock *c) {
    if (!c->use_tsc) return;
    uint64_t t1, n1;
    vb_pair(&t1, &n1);
    if (n1 - c->cal_ns0 > 100000000ull) /* over 100 ms: better than the first estimate */
        c->ns_per_tick = (double)(n1 - c->cal_ns0) / (double)(t1 - c->cal_tick0);
}

/* ---- scheduling: SCHED_FIFO/RR at a priority, mlockall ------------------------------- */
typedef struct {
    int policy;
    int priority;
    int rt;     /* the requested real-time policy is in effect */
    int locked; /* mlockall succeeded */
    const char *name;
} vb_sched;

VB_FN int vb_policy(const char *name) {
    if (strcmp(name, "fifo") == 0) return SCHED_FIFO;
    if (strcmp(name, "rr") == 0) return SCHED_RR;
    if (strcmp(name, "other") == 0) return SCHED_OTHER;
    vb_die(VB_EXIT_USAGE, "unknown policy '%s' (allowed: fifo, rr, other)", name);
    return -1;
}

/* priority < 0 means the policy's highest priority. */
VB_FN void vb_sched_init(vb_sched *s, const char *policy, int priority, int allow_unpriv) {
    s->name = policy;
    s->policy = vb_policy(policy);
    int max = sched_get_priority_max(s->policy);
    s->priority = priority < 0 ? max : priority;
    if (s->policy == SCHED_OTHER) s->priority = 0;
    if (s->priority > max || s->priority < sched_get_priority_min(s->policy))
        vb_die(VB_EXIT_USAGE, "priority %d out of range for policy %s (allowed: %d..%d)",
               s->priority, policy, sched_get_priority_min(s->policy), max);
    struct sched_param sp = {.sched_priority = s->priority};
    if (sched_setscheduler(0, s->policy, &sp) != 0) {
        int e = errno;
        if (!allow_unpriv)
            vb_die(VB_EXIT_NOPERM,
                   "cannot set %s priority %d: %s (run as root or with CAP_SYS_NICE and an "
                   "RLIMIT_RTPRIO; inside a cgroup with RT group scheduling give it "
                   "cpu.rt_runtime_us; or allow an unprivileged run)",
                   policy, s->priority, strerror(e));
        vb_warning("%s priority %d refused (%s): ran as SCHED_OTHER, not real-time", policy,
                   s->priority, strerror(e));
        s->policy = SCHED_OTHER;
        s->priority = 0;
        s->name = "other";
    }
    s->rt = s->policy != SCHED_OTHER;
    if (mlockall(MCL_CURRENT | MCL_FUTURE) == 0)
        s->locked = 1;
    else
        vb_warning("mlockall failed (%s): page faults may show as latency", strerror(errno));
}

/* ---- JSON output helpers -------------------------------------------------------------- */
VB_FN void vb_json_str(const char *s) {
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') putchar('\\');
        if ((unsigned char)*s < 0x20)
            printf("\\u%04x", *s);
        else
            putchar(*s);
    }
    putchar('"');
}

VB_FN void vb_json_common(const vb_clock *c, const vb_sched *s) {
    printf("\"clock\":{\"source\":\"%s\",\"cpuid_invariant\":%s,\"cpuinfo_invariant\":%s,"
           "\"ns_per_tick\":%.9f,\"fallback\":",
           c->use_tsc ? "tsc" : "monotonic_raw", c->cpuid_invariant ? "true" : "false",
           c->cpuinfo_invariant ? "true" : "false", c->ns_per_tick);
    if (c->fallback[0])
        vb_json_str(c->fallback);
    else
        printf("null");
    printf("},\"sched\":{\"policy\":\"%s\",\"priority\":%d,\"rt\":%s,\"mlocked\":%s},",
           s->name, s->priority, s->rt ? "true" : "false", s->locked ? "true" : "false");
    printf("\"warnings\":[");
    for (int i = 0; i < vb_nwarn; i++) {
        if (i) putchar(',');
        vb_json_str(vb_warn[i]);
    }
    printf("],");
}

VB_FN int vb_cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of a sorted array. */
VB_FN uint32_t vb_pct(const uint32_t *v, size_t n, double p) {
    if (n == 0) return 0;
    size_t k = (size_t)(p / 100.0 * (double)n + 0.999999);
    if (k < 1) k = 1;
    if (k > n) k = n;
    return v[k - 1];
}

/* Sorts v in place and prints "stats_ns" and "histogram". max_ticks is the exact maximum
 * (values in v saturate at UINT32_MAX ticks). Linear bins of bin_ns from the minimum over
 * 2000 bins, then doubling bins: fine where the modes are, bounded for the long tail. */
VB_FN void vb_json_stats(uint32_t *v, size_t n, uint64_t max_ticks, double ns_per_tick,
                          double bin_ns) {
    qsort(v, n, sizeof *v, vb_cmp_u32);
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += v[i];
    double k = ns_per_tick;
    printf("\"stats_ns\":{\"min\":%.1f,\"median\":%.1f,\"mean\":%.1f,\"p99\":%.1f,"
           "\"p999\":%.1f,\"p9999\":%.1f,\"max\":%.1f},",
           n ? v[0] * k : 0.0, vb_pct(v, n, 50) * k, n ? sum / n * k : 0.0,
           vb_pct(v, n, 99) * k, vb_pct(v, n, 99.9) * k, vb_pct(v, n, 99.99) * k,
           (double)max_ticks * k);
    printf("\"histogram\":{\"bin_ns\":%.1f,\"bins\":[", bin_ns);
    if (n) {
        double base = (double)(uint64_t)(v[0] * k / bin_ns) * bin_ns;
        double linear_end = base + 2000 * bin_ns;
        double lo = -1, hi = -1;
        size_t count = 0;
        int first = 1;
        for (size_t i = 0; i <= n; i++) {
            double x = i < n ? v[i] * k : -1;
            if (i < n && x < hi) {
                count++;
                continue;
            }
            if (count) {
                printf("%s[%.1f,%.1f,%zu]", first ? "" : ",", lo, hi, count);
                first = 0;
            }
            if (i == n) break;
            if (x < linear_end) {
                lo = base + (double)(uint64_t)((x - base) / bin_ns) * bin_ns;
                hi = lo + bin_ns;
            } else {
                double w = bin_ns;
                lo = linear_end;
                while (x >= lo + w) {
                    lo += w;
                    w *= 2;
                }
                hi = lo + w;
            }
            count = 1;
        }
    }
    printf("]}");
}

/* ---- long samples: start and exact duration of every sample above a threshold ----------
 * The histogram is coarse above its linear part and the time series keeps per-block maxima
 * only; these events let the analysis tell RT throttling windows (recurring at the
 * throttling period) from other delays and recompute the statistics without them. */
#define VB_ANCHOR_SHIFT 6 /* the start time of every 64th sample is kept for time series */

typedef struct {
    uint64_t *t, *d;
    size_t cap;
    volatile size_t n;
    volatile uint64_t dropped;
    uint64_t threshold; /* in clock ticks */
} vb_events;

VB_FN void vb_events_init(vb_events *e, size_t cap, uint64_t threshold_ticks) {
    e->cap = cap;
    e->n = 0;
    e->dropped = 0;
    e->threshold = threshold_ticks;
    e->t = malloc((cap + 1) * sizeof *e->t);
    e->d = malloc((cap + 1) * sizeof *e->d);
    if (!e->t || !e->d) vb_die(VB_EXIT_USAGE, "cannot allocate %zu events", cap);
    memset(e->t, 0, (cap + 1) * sizeof *e->t);
    memset(e->d, 0, (cap + 1) * sizeof *e->d);
}

static inline void vb_event(vb_events *e, uint64_t t0, uint64_t d) {
    if (d <= e->threshold) return;
    size_t i = __atomic_fetch_add(&e->n, 1, __ATOMIC_RELAXED);
    if (i < e->cap) {
        e->t[i] = t0;
        e->d[i] = d;
    } else {
        e->dropped++;
    }
}

VB_FN void vb_json_events(const vb_events *e, uint64_t start, double k) {
    size_t n = e->n < e->cap ? e->n : e->cap;
    printf("\"events\":{\"threshold_ns\":%.1f,\"dropped\":%llu,\"columns\":[\"t_s\","
           "\"duration_ns\"],\"points\":[",
           e->threshold * k, (unsigned long long)e->dropped);
    for (size_t i = 0; i < n; i++)
        printf("%s[%.9f,%.1f]", i ? "," : "", (double)(e->t[i] - start) * k / 1e9, e->d[i] * k);
    printf("]},");
}

/* Per block of samples: the block's start time, min, max and second largest duration (a
 * block's maximum may be a throttling stall; the second largest is what remains without it).
 * anchor[i] holds the start time of sample i << VB_ANCHOR_SHIFT. */
VB_FN void vb_json_series(const uint32_t *dur, const uint64_t *anchor, size_t n, long points,
                          uint64_t start, double k) {
    size_t block = ((n / (size_t)points) >> VB_ANCHOR_SHIFT) + 1;
    block <<= VB_ANCHOR_SHIFT;
    printf("\"series\":{\"block_samples\":%zu,\"columns\":[\"t_s\",\"min_ns\",\"max_ns\","
           "\"max2_ns\"],\"points\":[",
           block);
    for (size_t b = 0; b < n; b += block) {
        uint32_t lo = UINT32_MAX, hi = 0, hi2 = 0;
        size_t end = b + block < n ? b + block : n;
        for (size_t i = b; i < end; i++) {
            if (dur[i] < lo) lo = dur[i];
            if (dur[i] > hi) {
                hi2 = hi;
                hi = dur[i];
            } else if (dur[i] > hi2) {
                hi2 = dur[i];
            }
        }
        double t = anchor[b >> VB_ANCHOR_SHIFT] >= start
                       ? (double)(anchor[b >> VB_ANCHOR_SHIFT] - start) * k / 1e9
                       : 0.0;
        printf("%s[%.6f,%.1f,%.1f,%.1f]", b ? "," : "", t, lo * k, hi * k, hi2 * k);
    }
    printf("]},");
}

/* ---- argument parsing ----------------------------------------------------------------- */
VB_FN double vb_arg_num(const char *name, const char *val, double lo, double hi) {
    char *end;
    errno = 0;
    double x = strtod(val, &end);
    if (errno || end == val || *end || x < lo || x > hi)
        vb_die(VB_EXIT_USAGE, "%s: '%s' is not a number in [%g, %g]", name, val, lo, hi);
    return x;
}

/* The options vb-tick and vb-switch share; the probe fills in its defaults first. */
typedef struct {
    double duration_s, bin_ns, event_us;
    long priority, cpu;
    int allow_unpriv;
    const char *policy, *clock_mode;
} vb_opts;

/* Parses argv into o. An option not shared here goes, with its value (never NULL), to the
 * probe's own(), which returns 0 if it does not know it either. Dies on any usage error. */
VB_FN void vb_parse_opts(int argc, char **argv, vb_opts *o,
                         int (*own)(const char *a, const char *v)) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--allow-unprivileged") == 0) {
            o->allow_unpriv = 1;
            continue;
        }
        if (!v) vb_die(VB_EXIT_USAGE, "%s: missing value", a);
        i++;
        if (strcmp(a, "--duration") == 0)
            o->duration_s = vb_arg_num(a, v, 0.001, 1e6);
        else if (strcmp(a, "--policy") == 0)
            o->policy = v;
        else if (strcmp(a, "--priority") == 0)
            o->priority = (long)vb_arg_num(a, v, 0, 99);
        else if (strcmp(a, "--clock") == 0)
            o->clock_mode = v;
        else if (strcmp(a, "--cpu") == 0)
            o->cpu = (long)vb_arg_num(a, v, 0, CPU_SETSIZE - 1);
        else if (strcmp(a, "--hist-bin-ns") == 0)
            o->bin_ns = vb_arg_num(a, v, 1, 1e9);
        else if (strcmp(a, "--event-us") == 0)
            o->event_us = vb_arg_num(a, v, 0, 1e9);
        else if (!own(a, v))
            vb_die(VB_EXIT_USAGE, "unknown option %s", a);
    }
    if (strcmp(o->clock_mode, "auto") && strcmp(o->clock_mode, "tsc") &&
        strcmp(o->clock_mode, "monotonic_raw"))
        vb_die(VB_EXIT_USAGE, "--clock: '%s' (allowed: auto, tsc, monotonic_raw)", o->clock_mode);
}

/* Pins the calling thread to cpu, or dies naming the CPUs it may use. */
VB_FN void vb_pin(int cpu) {
    cpu_set_t allowed, one;
    sched_getaffinity(0, sizeof allowed, &allowed);
    if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed)) {
        char list[512] = "";
        for (int i = 0; i < CPU_SETSIZE && strlen(list) < sizeof list - 8; i++)
            if (CPU_ISSET(i, &allowed))
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d",
                         list[0] ? "," : "", i);
        vb_die(VB_EXIT_USAGE, "CPU %d is not available here (allowed: %s)", cpu, list);
    }
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0)
        vb_die(VB_EXIT_USAGE, "cannot pin to CPU %d: %s", cpu, strerror(errno));
}

#endif
