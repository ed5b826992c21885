/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What taking a bias back costs the processes that do not take part: the
 * barrier (membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED), as
 * hw/mem/nfabric/nfabric_locks.c issues it) interrupts every running
 * thread of every process that registered for it, on the whole machine:
 * other jobs' QEMUs included.  A bystander process spins, counting its
 * loops, first alone, then while this process issues barriers as fast as
 * it can; once registered for the barrier (as every head is), once not.
 * Prints key=value lines (docs/multihost.md, "Locks and their cost"):
 *
 *   barrier_us                 one barrier, as the taker pays it
 *   bystander_registered_loss_pct / _ns_per_barrier
 *                              a registered bystander's lost loops while
 *                              barriers run, and the time it loses per
 *                              barrier
 *   bystander_unregistered_loss_pct
 *                              the same for a process that never
 *                              registered (any other program)
 *
 * Usage: nfabric-bench-barrier [SECONDS]   (each phase; default 1)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <linux/membarrier.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long barrier(int cmd)
{
    return syscall(__NR_membarrier, cmd, 0, 0);
}

static double now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Loops per second of a spin of secs seconds. */
static double spin_rate(double secs)
{
    volatile uint64_t n = 0;
    double t0 = now_s(), t;

    do {
        for (unsigned k = 0; k < 100000; k++) {
            n++;
        }
        t = now_s();
    } while (t - t0 < secs);
    return (double)n / (t - t0);
}

/*
 * A bystander: spins secs alone, then secs while the parent issues
 * barriers (it says when through the pipes), and writes both rates.
 */
static pid_t bystander(bool registered, double secs, int go[2], int out[2])
{
    pid_t pid = fork();

    if (pid == 0) {
        double r[2];
        char c;

        if (registered &&
            barrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) != 0) {
            _exit(2);
        }
        r[0] = spin_rate(secs);
        if (write(out[1], "a", 1) != 1 || read(go[0], &c, 1) != 1) {
            _exit(3);
        }
        r[1] = spin_rate(secs);
        _exit(write(out[1], r, sizeof(r)) == sizeof(r) ? 0 : 4);
    }
    return pid;
}

/* Barriers for secs seconds: how many. */
static uint64_t barriers_for(double secs)
{
    double t0 = now_s();
    uint64_t n = 0;

    while (now_s() - t0 < secs) {
        if (barrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) != 0) {
            fprintf(stderr, "nfabric-bench-barrier: membarrier: %s\n",
                    strerror(errno));
            exit(1);
        }
        n++;
    }
    return n;
}

static int run(bool registered, double secs, double *loss_pct,
               double *ns_per_barrier)
{
    int go[2], out[2], st;
    double r[2];
    uint64_t n;
    char c;
    pid_t pid;

    if (pipe(go) || pipe(out)) {
        perror("nfabric-bench-barrier: pipe");
        return -1;
    }
    pid = bystander(registered, secs, go, out);
    if (pid < 0 || read(out[0], &c, 1) != 1 || write(go[1], "g", 1) != 1) {
        fprintf(stderr, "nfabric-bench-barrier: the bystander did not start\n");
        return -1;
    }
    n = barriers_for(secs);
    if (read(out[0], r, sizeof(r)) != sizeof(r) || waitpid(pid, &st, 0) != pid ||
        !WIFEXITED(st) || WEXITSTATUS(st)) {
        fprintf(stderr, "nfabric-bench-barrier: the bystander failed\n");
        return -1;
    }
    *loss_pct = 100.0 * (r[0] - r[1]) / r[0];
    *ns_per_barrier = n ? (r[0] - r[1]) / r[0] * secs * 1e9 / (double)n : 0;
    close(go[0]);
    close(go[1]);
    close(out[0]);
    close(out[1]);
    return 0;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 1.0;
    double t0, loss, ns, loss_u, ns_u;
    uint64_t n;

    if (argc > 2 || !(secs > 0 && secs <= 600)) {
        fprintf(stderr, "usage: nfabric-bench-barrier [SECONDS] (0 < SECONDS "
                "<= 600, each phase)\n");
        return 2;
    }
    if (barrier(MEMBARRIER_CMD_QUERY) < 0 ||
        !(barrier(MEMBARRIER_CMD_QUERY) & MEMBARRIER_CMD_GLOBAL_EXPEDITED)) {
        fprintf(stderr, "nfabric-bench-barrier: this kernel has no "
                "MEMBARRIER_CMD_GLOBAL_EXPEDITED\n");
        return 1;
    }
    t0 = now_s();
    n = barriers_for(secs / 4);
    printf("barrier_us=%.2f\n", (now_s() - t0) * 1e6 / (double)n);
    if (run(true, secs, &loss, &ns) || run(false, secs, &loss_u, &ns_u)) {
        return 1;
    }
    printf("bystander_registered_loss_pct=%.1f\n", loss);
    printf("bystander_registered_ns_per_barrier=%.0f\n", ns);
    printf("bystander_unregistered_loss_pct=%.1f\n", loss_u);
    return 0;
}
