/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfabric-wake: how soon a waiter learns that a round is done.  A waiter
 * waits (nfabric_round_wait) for round after round of one window while a
 * completer process, told that the waiter began, sleeps DELAY ms, notes
 * the time and completes the round (this head is the only one expected on
 * a device that is not shared).  The waiter's wake-up is the time from
 * that note to the wait's return.  key=value lines on stdout:
 *
 *   nfabric-wake [--rounds N] [--delay-ms D] [--label L] [--window W] [--pipe]
 *                [--cpus WAITER,COMPLETER]
 *
 * --cpus: pin the waiter and the completer to those CPUs (e.g. 1,0).
 *
 * --pipe: the baseline of the machine itself, no device: the completer
 * writes a byte into a pipe the waiter sleeps on (read(2)), the same
 * measurement otherwise (label pipe).
 *
 *   L_rounds, L_delay_ms, L_access (how libnfabric reached the device),
 *   L_wake_us_p50, L_wake_us_p90, L_wake_us_max, L_wait_cpu_pct (the
 *   waiter's CPU time, user and system, over the time it waited),
 *   L_complete_us_p50 (the completer's nfabric_round_complete alone: the
 *   wake-up counts from before it).
 *
 * L defaults to irq when libnfabric waits on the driver's interrupt (the
 * driver attached, register version 1.8) and poll when it polls (e.g.
 * NFABRIC_ACCESS=resource0).  Window W (default 15) is set up as a small
 * G-Binary window at 200 MiB of the device's memory and disabled after.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "libnfabric.h"

#define WAKE_DATA       (200ull << 20)
#define WAKE_COUNTERS   (201ull << 20)

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
           ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: nfabric-wake [--rounds N] [--delay-ms D] [--label L] "
               "[--window W]\n");
}

/* The completer: for each round, told to go, sleeps, notes, completes. */
static int completer(nfabric_dev *d, unsigned w, unsigned rounds,
                     unsigned delay_ms, int go, int told, int ring)
{
    for (unsigned k = 0; k < rounds; k++) {
        struct timespec ts = { delay_ms / 1000, (long)(delay_ms % 1000) * 1000000L };
        uint32_t seq;
        double t;

        if (read(go, &seq, sizeof(seq)) != sizeof(seq)) {
            return 1;
        }
        double took;

        nanosleep(&ts, NULL);
        t = now_s();
        if (ring >= 0 ? write(ring, &seq, 1) != 1 :
                        nfabric_round_complete(d, w, seq) != 0) {
            return 1;
        }
        took = now_s() - t;
        if (write(told, &t, sizeof(t)) != sizeof(t) ||
            write(told, &took, sizeof(took)) != sizeof(took)) {
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    unsigned rounds = 1000, delay_ms = 20, w = 15;
    const char *label = NULL;
    double *wake, *took, waited = 0, cpu = 0;
    int go[2], told[2], bell[2] = { -1, -1 }, st;
    bool pipe_only = false;
    int cpu_waiter = -1, cpu_completer = -1;
    nfabric_dev *d;
    pid_t pid;
    int rc = 0;

    for (int a = 1; a < argc; a++) {
        char *end = NULL;

        if (!strcmp(argv[a], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[a], "--rounds") && a + 1 < argc) {
            rounds = (unsigned)strtoul(argv[++a], &end, 0);
        } else if (!strcmp(argv[a], "--delay-ms") && a + 1 < argc) {
            delay_ms = (unsigned)strtoul(argv[++a], &end, 0);
        } else if (!strcmp(argv[a], "--window") && a + 1 < argc) {
            w = (unsigned)strtoul(argv[++a], &end, 0);
        } else if (!strcmp(argv[a], "--label") && a + 1 < argc) {
            label = argv[++a];
        } else if (!strcmp(argv[a], "--pipe")) {
            pipe_only = true;
        } else if (!strcmp(argv[a], "--cpus") && a + 1 < argc) {
            if (sscanf(argv[++a], "%d,%d", &cpu_waiter, &cpu_completer) != 2 ||
                cpu_waiter < 0 || cpu_completer < 0 || cpu_waiter >= CPU_SETSIZE ||
                cpu_completer >= CPU_SETSIZE) {
                fprintf(stderr, "nfabric-wake: --cpus W,C: two CPU numbers\n");
                return 2;
            }
        } else {
            fprintf(stderr, "nfabric-wake: bad argument \"%s\"\n", argv[a]);
            usage(stderr);
            return 2;
        }
        if (end && (*end || end == argv[a])) {
            fprintf(stderr, "nfabric-wake: bad number \"%s\"\n", argv[a]);
            return 2;
        }
    }
    if (!rounds || rounds > 100000 || delay_ms > 10000 || w >= NFABRIC_NUM_WINDOWS) {
        fprintf(stderr, "nfabric-wake: --rounds 1..100000, --delay-ms 0..10000, "
                "--window 0..15\n");
        return 2;
    }
    wake = calloc(rounds, sizeof(*wake));
    took = calloc(rounds, sizeof(*took));
    d = nfabric_new();
    if (!wake || !took || !d || nfabric_open(d, 0)) {
        fprintf(stderr, "nfabric-wake: %s\n", d ? nfabric_errmsg(d) : strerror(ENOMEM));
        return 1;
    }
    if (!label) {
        label = pipe_only ? "pipe" :
                strstr(nfabric_access_name(d), "interrupt") ? "irq" : "poll";
    }
    if (pipe_only && pipe(bell)) {
        perror("nfabric-wake: pipe");
        return 1;
    }
    {
        nfabric_win_cfg c = {
            .base = nfabric_map_dpa(d) + WAKE_DATA, .size = 64,
            .counters = nfabric_map_dpa(d) + WAKE_COUNTERS,
            .path = NFABRIC_PATH_GBINARY, .width = 8, .threshold = 1,
        };

        nfabric_window_disable(d, w);
        if (nfabric_window_set(d, w, &c)) {
            fprintf(stderr, "nfabric-wake: window %u: %s\n", w, nfabric_errmsg(d));
            return 1;
        }
    }
    if (pipe(go) || pipe(told)) {
        perror("nfabric-wake: pipe");
        return 1;
    }
    pid = fork();
    if (pid == 0 && cpu_completer >= 0) {
        cpu_set_t set;

        CPU_ZERO(&set);
        CPU_SET(cpu_completer, &set);
        if (sched_setaffinity(0, sizeof(set), &set)) {
            perror("nfabric-wake: the completer's CPU");
            _exit(1);
        }
    }
    if (pid > 0 && cpu_waiter >= 0) {
        cpu_set_t set;

        CPU_ZERO(&set);
        CPU_SET(cpu_waiter, &set);
        if (sched_setaffinity(0, sizeof(set), &set)) {
            perror("nfabric-wake: the waiter's CPU");
            kill(pid, SIGKILL);
            return 1;
        }
    }
    if (pid == 0) {
        _exit(completer(d, w, rounds, delay_ms, go[0], told[1], bell[1]) ? 1 : 0);
    }
    for (unsigned k = 0; k < rounds && pid > 0; k++) {
        nfabric_round r;
        double t0, c0, t_done;
        uint32_t seq;

        if (nfabric_round_read(d, w, &r)) {
            rc = 1;
            break;
        }
        seq = r.seq;
        t0 = now_s();
        c0 = cpu_s();
        if (write(go[1], &seq, sizeof(seq)) != sizeof(seq) ||
            (pipe_only ? read(bell[0], &seq, 1) != 1 :
                         nfabric_round_wait(d, w, seq, 60000, &r) != 0)) {
            fprintf(stderr, "nfabric-wake: round %u: %s\n", seq, nfabric_errmsg(d));
            rc = 1;
            break;
        }
        wake[k] = now_s();
        cpu += cpu_s() - c0;
        waited += wake[k] - t0;
        if (read(told[0], &t_done, sizeof(t_done)) != sizeof(t_done) ||
            read(told[0], &took[k], sizeof(took[k])) != sizeof(took[k])) {
            rc = 1;
            break;
        }
        took[k] *= 1e6;
        wake[k] = (wake[k] - t_done) * 1e6;
        if (!pipe_only && nfabric_window_clear(d, w)) {
            rc = 1;
            break;
        }
    }
    if (pid > 0) {
        if (rc) {
            kill(pid, SIGKILL);
        }
        waitpid(pid, &st, 0);
        rc |= !WIFEXITED(st) || WEXITSTATUS(st);
    }
    nfabric_window_disable(d, w);
    if (rc || pid < 0) {
        fprintf(stderr, "nfabric-wake: failed (the completer or a wait)\n");
        return 1;
    }
    qsort(wake, rounds, sizeof(*wake), cmp_double);
    qsort(took, rounds, sizeof(*took), cmp_double);
    printf("%s_rounds=%u\n%s_delay_ms=%u\n%s_access=%s\n", label, rounds, label,
           delay_ms, label, nfabric_access_name(d));
    printf("%s_wake_us_p50=%.1f\n%s_wake_us_p90=%.1f\n%s_wake_us_max=%.1f\n",
           label, wake[rounds / 2], label, wake[rounds * 9 / 10], label,
           wake[rounds - 1]);
    printf("%s_wait_cpu_pct=%.2f\n", label, waited > 0 ? cpu * 100 / waited : 0);
    printf("%s_complete_us_p50=%.1f\n", label, took[rounds / 2]);
    nfabric_free(d);
    free(wake);
    free(took);
    return 0;
}
