/* vb-tick: clock tick processing duration (seed 001 §6.2.1).
 *
 * A thread at the highest SCHED_FIFO priority repeats "read clock, fixed busy loop of about
 * --loop-us, read clock" and stores every duration in a buffer allocated before the loop.
 * Undisturbed iterations form the lowest mode; iterations hit by the timer tick (or by a
 * hypervisor taking the CPU away) are longer by the time spent elsewhere.
 *
 * usage: vb-tick [--duration S] [--loop-us U] [--policy fifo|rr|other] [--priority P]
 *                [--allow-unprivileged] [--clock auto|tsc|monotonic_raw] [--cpu N]
 *                [--hist-bin-ns B] [--series-points K] [--head H] [--max-samples M]
 *                [--event-us E] [--max-events X]
 * Every iteration longer than the loop by more than E µs (default 100) is also kept as an
 * event (start, exact duration), at most X (default 20000).
 * prints one JSON object (see vb_probe.h for exit codes).
 */
#include "vb_probe.h"


/* The busy loop: a dependent multiply-add chain the compiler cannot remove or shorten. */
static uint64_t __attribute__((noinline)) busy(uint64_t iters) {
    uint64_t x = 1;
    for (uint64_t i = 0; i < iters; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        __asm__ volatile("" : "+r"(x));
    }
    return x;
}

/* Iterations of busy() that take loop_ns when undisturbed (minimum of several tries). */
static uint64_t calibrate_busy(const vb_clock *c, double loop_ns) {
    if (loop_ns <= 0) return 0; /* --loop-us 0: measure the probe's own cost per sample */
    const uint64_t probe_iters = 20000;
    double best = 1e300;
    unsigned cpu;
    for (int i = 0; i < 50; i++) {
        uint64_t t0 = vb_read_start(c);
        busy(probe_iters);
        uint64_t t1 = vb_read_end(c, &cpu);
        double ns = (double)(t1 - t0) * c->ns_per_tick;
        if (ns < best) best = ns;
    }
    return (uint64_t)(loop_ns / (best / probe_iters));
}

static double loop_us = 65;
static long series_points = 2000, head = 400, max_samples = 0, max_events = 20000;

static int own_option(const char *a, const char *v) {
    if (strcmp(a, "--loop-us") == 0)
        loop_us = vb_arg_num(a, v, 0, 1e6);
    else if (strcmp(a, "--series-points") == 0)
        series_points = (long)vb_arg_num(a, v, 1, 1e7);
    else if (strcmp(a, "--head") == 0)
        head = (long)vb_arg_num(a, v, 0, 1e6);
    else if (strcmp(a, "--max-samples") == 0)
        max_samples = (long)vb_arg_num(a, v, 1, 4e9);
    else if (strcmp(a, "--max-events") == 0)
        max_events = (long)vb_arg_num(a, v, 1, 1e7);
    else
        return 0;
    return 1;
}

int main(int argc, char **argv) {
    vb_opts o = {.duration_s = 10, .bin_ns = 100, .priority = -1, .cpu = -1, .policy = "fifo",
                 .clock_mode = "auto", .event_us = 100};
    vb_parse_opts(argc, argv, &o, own_option);
    if (o.cpu >= 0) vb_pin((int)o.cpu);

    vb_sched s;
    vb_sched_init(&s, o.policy, (int)o.priority, o.allow_unpriv);
    vb_clock c;
    vb_clock_init(&c, o.clock_mode);

    /* Buffers sized for the whole run, touched now so the loop never faults or allocates. */
    size_t cap = max_samples ? (size_t)max_samples
                             : (size_t)(o.duration_s * 1e6 / (loop_us > 0.02 ? loop_us : 0.02) * 1.25) + 4096;
    uint32_t *dur = malloc(cap * sizeof *dur);
    uint64_t *anchor = malloc(((cap >> VB_ANCHOR_SHIFT) + 1) * sizeof *anchor);
    size_t nhead = (size_t)head < cap ? (size_t)head : cap;
    uint64_t *head_t = malloc((nhead + 1) * sizeof *head_t);
    if (!dur || !anchor || !head_t)
        vb_die(VB_EXIT_USAGE, "cannot allocate %zu samples; lower --duration", cap);
    memset(dur, 0, cap * sizeof *dur);
    memset(anchor, 0, ((cap >> VB_ANCHOR_SHIFT) + 1) * sizeof *anchor);
    memset(head_t, 0, (nhead + 1) * sizeof *head_t);

    uint64_t iters = calibrate_busy(&c, loop_us * 1000.0);
    if (!iters && loop_us > 0) iters = 1;
    vb_events ev;
    vb_events_init(&ev, (size_t)max_events, (uint64_t)((loop_us + o.event_us) * 1000.0 / c.ns_per_tick));
    unsigned cpu0 = 0, cpu_now = 0, cpu_last = 0;
    (void)vb_read_end(&c, &cpu0);
    cpu_last = cpu0;
    uint64_t migrations = 0, max_ticks = 0;
    uint64_t start = vb_read_start(&c);
    uint64_t deadline = start + (uint64_t)(o.duration_s * 1e9 / c.ns_per_tick);
    uint64_t t1 = start, sink = 0;
    size_t n = 0;
    while (n < cap) {
        uint64_t t0 = vb_read_start(&c);
        sink += busy(iters);
        t1 = vb_read_end(&c, &cpu_now);
        uint64_t d = t1 - t0;
        dur[n] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
        if (d > max_ticks) max_ticks = d;
        vb_event(&ev, t0, d);
        if ((n & ((1u << VB_ANCHOR_SHIFT) - 1)) == 0) anchor[n >> VB_ANCHOR_SHIFT] = t0;
        if (n < nhead) head_t[n] = t0;
        if (cpu_now != cpu_last) {
            migrations++;
            cpu_last = cpu_now;
        }
        n++;
        if (t1 >= deadline) break;
    }
    int truncated = n == cap && t1 < deadline;
    if (truncated) vb_warning("sample buffer full after %zu samples: run ended early", n);
    vb_clock_finish(&c);
    double k = c.ns_per_tick;

    printf("{\"probe\":\"tick\",\"version\":2,");
    vb_json_common(&c, &s);
    printf("\"loop\":{\"target_us\":%.3f,\"iterations\":%llu,\"checksum\":%llu},", loop_us,
           (unsigned long long)iters, (unsigned long long)(sink & 0xffff));
    printf("\"duration_s\":%.6f,\"samples\":%zu,\"truncated\":%s,", (t1 - start) * k / 1e9, n,
           truncated ? "true" : "false");
    printf("\"cpu\":{\"first\":%u,\"last\":%u,\"migrations\":%llu},", cpu0 & 0xfff,
           cpu_now & 0xfff, (unsigned long long)migrations);

    vb_json_series(dur, anchor, n, series_points, start, k);
    vb_json_events(&ev, start, k);
    printf("\"head\":{\"columns\":[\"t_s\",\"duration_ns\"],\"points\":[");
    for (size_t i = 0; i < nhead && i < n; i++)
        printf("%s[%.9f,%.1f]", i ? "," : "", (head_t[i] - start) * k / 1e9, dur[i] * k);
    printf("]},");
    vb_json_stats(dur, n, max_ticks, k, o.bin_ns);
    printf("}\n");
    return 0;
}
