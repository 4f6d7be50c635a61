/* vb-load: the antagonists of seed 001 §6.3.
 *
 *   cpu: an endless loop of arithmetic on a 4 KiB table that stays in the L1 cache
 *        ("CPU-Load VM": small enough to fit in the core's cache with its data);
 *   mem: an endless memcpy() of --mb MiB (default 9, larger than the caches) back and forth
 *        ("Memory-Load VM": flushes the caches it shares with the target).
 *
 * Runs until SIGTERM/SIGINT or --max-seconds (so a forgotten antagonist dies on its own),
 * then prints {"load":..., "iterations":..., "seconds":..., "rate_per_s":..., ...}.
 *
 * usage: vb-load cpu|mem [--mb M] [--max-seconds S] [--policy fifo|rr|other] [--priority P]
 */
#include "vb_probe.h" /* first: it defines _GNU_SOURCE */

#include <signal.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig) {
    (void)sig;
    stop = 1;
}

int main(int argc, char **argv) {
    if (argc < 2 || (strcmp(argv[1], "cpu") && strcmp(argv[1], "mem")))
        vb_die(VB_EXIT_USAGE, "usage: vb-load cpu|mem [--mb M] [--max-seconds S] "
                              "[--policy fifo|rr|other] [--priority P]");
    int mem = strcmp(argv[1], "mem") == 0;
    double mb = 9, max_s = 0;
    long priority = -1;
    const char *policy = NULL;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) vb_die(VB_EXIT_USAGE, "%s: missing value", a);
        i++;
        if (strcmp(a, "--mb") == 0)
            mb = vb_arg_num(a, v, 0.001, 65536);
        else if (strcmp(a, "--max-seconds") == 0)
            max_s = vb_arg_num(a, v, 0, 1e7);
        else if (strcmp(a, "--policy") == 0)
            policy = v;
        else if (strcmp(a, "--priority") == 0)
            priority = (long)vb_arg_num(a, v, 0, 99);
        else
            vb_die(VB_EXIT_USAGE, "unknown option %s", a);
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGALRM, &sa, NULL);
    if (max_s > 0) alarm((unsigned)(max_s + 0.999));
    vb_sched s = {.policy = SCHED_OTHER, .name = "other"};
    if (policy) { /* e.g. SCHED_RR at the target's priority for the rr_timeslice quantum */
        struct sched_param sp = {.sched_priority = 0};
        s.policy = vb_policy(policy);
        s.name = policy;
        sp.sched_priority = s.policy == SCHED_OTHER ? 0
                            : priority < 0           ? sched_get_priority_max(s.policy)
                                                     : (int)priority;
        if (sched_setscheduler(0, s.policy, &sp) != 0)
            vb_die(VB_EXIT_NOPERM, "cannot set %s priority %d: %s", policy, sp.sched_priority,
                   strerror(errno));
        s.priority = sp.sched_priority;
    }

    size_t bytes = (size_t)(mb * 1024 * 1024);
    char *a = NULL, *b = NULL;
    if (mem) {
        a = malloc(bytes);
        b = malloc(bytes);
        if (!a || !b) vb_die(VB_EXIT_USAGE, "cannot allocate 2 x %.1f MiB", mb);
        memset(a, 1, bytes);
        memset(b, 2, bytes);
    }
    uint32_t table[1024];
    for (int i = 0; i < 1024; i++) table[i] = (uint32_t)i * 2654435761u;

    uint64_t t0 = vb_mono(), iterations = 0, acc = 0;
    while (!stop) {
        if (mem) {
            memcpy(iterations & 1 ? a : b, iterations & 1 ? b : a, bytes);
            __asm__ volatile("" ::: "memory");
        } else {
            for (int r = 0; r < 64; r++)
                for (int i = 0; i < 1024; i++) {
                    table[i] = table[i] * 1664525u + 1013904223u + (uint32_t)acc;
                    acc += table[i] >> 7;
                }
            __asm__ volatile("" : "+r"(acc));
        }
        iterations++;
    }
    double secs = (double)(vb_mono() - t0) / 1e9;
    printf("{\"load\":\"%s\",\"iterations\":%llu,\"seconds\":%.6f,\"rate_per_s\":%.3f,"
           "\"bytes_per_iteration\":%zu,\"policy\":\"%s\",\"priority\":%d,\"checksum\":%llu}\n",
           mem ? "mem" : "cpu", (unsigned long long)iterations, secs,
           secs > 0 ? iterations / secs : 0.0, mem ? bytes : (size_t)0, s.name, s.priority,
           (unsigned long long)(acc & 0xffff));
    return 0;
}
