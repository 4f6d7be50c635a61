/* vb-switch: thread switch latency between threads of the same priority (seed 001 §6.2.2).
 *
 * N threads at one SCHED_FIFO priority, all on one CPU, yield to each other in turn. Just
 * before sched_yield() a thread stores the clock; the thread that runs next reads the clock
 * as soon as its own sched_yield() returns: the difference is one thread switch (syscall,
 * scheduler, context switch, return). Every switch is stored in a buffer allocated before
 * the threads start. Each thread's first activation is not counted (cold start).
 *
 * usage: vb-switch [--threads N] [--switches M] [--duration S] [--policy fifo|rr|other]
 *                  [--priority P] [--allow-unprivileged] [--clock auto|tsc|monotonic_raw]
 *                  [--cpu N] [--hist-bin-ns B] [--event-us E] [--max-events X]
 *                  [--series-points K]
 * Every switch longer than E µs (default 50) is also kept as an event (start, exact duration).
 */
#include "vb_probe.h" /* first: it defines _GNU_SOURCE */

#include <pthread.h>

static vb_clock clk;
static uint32_t *buf;
static uint64_t *anchor; /* end time of every 64th switch, for the time series */
static vb_events ev;
static size_t cap;
static volatile size_t n;          /* one CPU: only one thread runs at a time */
static volatile uint64_t last;     /* clock just before the previous thread yielded */
static volatile long last_owner = -1;
static volatile uint64_t max_ticks, self_yields, preempted;
static volatile int go;
static uint64_t deadline;
static long rounds;
static long threads = 2, switches = 200000, max_events = 20000, series_points = 2000;

static void *worker(void *arg) {
    long id = (long)arg;
    unsigned cpu;
    while (!go) sched_yield();
    for (long r = 0; r < rounds; r++) {
        /* read `last` before the clock: if this thread is preempted in between (SCHED_RR
           quantum), another thread's later `last` must not make now - prev wrap around */
        uint64_t prev = last;
        long owner = last_owner;
        uint64_t now = vb_read_end(&clk, &cpu);
        if (prev && r > 0) {
            if (owner == id) {
                self_yields++; /* not a switch: only happens without SCHED_FIFO */
            } else if (now < prev || last != prev) {
                /* the pair was torn by a preemption between reading `last` and the clock:
                   other threads switched meanwhile (`last` moved on), so now - prev spans
                   their switches (seen: one 47-50 ms "switch" of 1000 threads beside an RR
                   competitor), not one switch */
                preempted++;
            } else {
                uint64_t d = now - prev;
                size_t i = __atomic_fetch_add(&n, 1, __ATOMIC_RELAXED);
                if (i < cap) {
                    buf[i] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
                    if ((i & ((1u << VB_ANCHOR_SHIFT) - 1)) == 0) anchor[i >> VB_ANCHOR_SHIFT] = prev;
                }
                if (d > max_ticks) max_ticks = d;
                vb_event(&ev, prev, d);
            }
        }
        if (now >= deadline) break;
        last_owner = id;
        last = vb_read_start(&clk);
        sched_yield();
    }
    last = 0; /* the next activation follows a thread exit, not a yield: don't count it */
    return NULL;
}

static int own_option(const char *a, const char *v) {
    if (strcmp(a, "--threads") == 0)
        threads = (long)vb_arg_num(a, v, 2, 10000);
    else if (strcmp(a, "--switches") == 0)
        switches = (long)vb_arg_num(a, v, 1, 1e9);
    else if (strcmp(a, "--max-events") == 0)
        max_events = (long)vb_arg_num(a, v, 1, 1e7);
    else if (strcmp(a, "--series-points") == 0)
        series_points = (long)vb_arg_num(a, v, 1, 1e7);
    else
        return 0;
    return 1;
}

int main(int argc, char **argv) {
    vb_opts o = {.duration_s = 10, .bin_ns = 50, .priority = -1, .cpu = -1, .policy = "fifo",
                 .clock_mode = "auto", .event_us = 50};
    vb_parse_opts(argc, argv, &o, own_option);
    /* all threads on one CPU: the given one, else the one we were started on */
    vb_pin(o.cpu >= 0 ? (int)o.cpu : sched_getcpu());
    vb_sched s;
    vb_sched_init(&s, o.policy, (int)o.priority, o.allow_unpriv);
    vb_clock_init(&clk, o.clock_mode);

    rounds = switches / threads + 2;
    cap = (size_t)rounds * (size_t)threads;
    buf = malloc(cap * sizeof *buf);
    anchor = malloc(((cap >> VB_ANCHOR_SHIFT) + 1) * sizeof *anchor);
    pthread_t *tid = malloc((size_t)threads * sizeof *tid);
    if (!buf || !anchor || !tid) vb_die(VB_EXIT_USAGE, "cannot allocate %zu samples", cap);
    memset(buf, 0, cap * sizeof *buf);
    memset(anchor, 0, ((cap >> VB_ANCHOR_SHIFT) + 1) * sizeof *anchor);
    vb_events_init(&ev, (size_t)max_events, (uint64_t)(o.event_us * 1000.0 / clk.ns_per_tick));

    /* Threads get the same policy and priority as main; small stacks, since mlockall locks
     * them all (1000 x 8 MiB would not fit). */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    pthread_attr_setinheritsched(&attr, PTHREAD_INHERIT_SCHED);
    for (long i = 0; i < threads; i++) {
        int e = pthread_create(&tid[i], &attr, worker, (void *)i);
        if (e) vb_die(VB_EXIT_USAGE, "cannot create thread %ld of %ld: %s", i + 1, threads,
                      strerror(e));
    }
    uint64_t t_start = vb_read_start(&clk);
    deadline = t_start + (uint64_t)(o.duration_s * 1e9 / clk.ns_per_tick);
    __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
    for (long i = 0; i < threads; i++) pthread_join(tid[i], NULL);
    unsigned c_end;
    uint64_t t_end = vb_read_end(&clk, &c_end);
    vb_clock_finish(&clk);
    size_t got = n < cap ? n : cap;
    if (t_end >= deadline) vb_warning("--duration reached before all rounds were done");

    printf("{\"probe\":\"switch\",\"version\":2,");
    vb_json_common(&clk, &s);
    printf("\"threads\":%ld,\"cpu\":%d,\"rounds\":%ld,\"duration_s\":%.6f,\"samples\":%zu,"
           "\"self_yields\":%llu,\"torn_samples\":%llu,",
           threads, sched_getcpu(), rounds, (t_end - t_start) * clk.ns_per_tick / 1e9, got,
           (unsigned long long)self_yields, (unsigned long long)preempted);
    vb_json_series(buf, anchor, got, series_points, t_start, clk.ns_per_tick);
    vb_json_events(&ev, t_start, clk.ns_per_tick);
    vb_json_stats(buf, got, max_ticks, clk.ns_per_tick, o.bin_ns);
    printf("}\n");
    return 0;
}
