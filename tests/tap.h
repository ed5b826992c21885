/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A minimal TAP producer shared by the host unit tests and the guest tests.
 * Each check prints "ok N - name" or "not ok N - name"; scripts/nfabric test
 * counts those lines across every suite.  Plain C11.
 *
 *   TAP_CHECK(cond, "name %d", i);   one check
 *   return tap_done();               prints the plan, exit status 0 iff all ok
 */
#ifndef NFABRIC_TAP_H
#define NFABRIC_TAP_H

#include <stdarg.h>
#include <stdio.h>

static unsigned tap_count, tap_failed;

static inline int tap_vcheck(int ok, const char *file, int line,
                             const char *fmt, va_list ap)
{
    tap_count++;
    if (!ok) {
        tap_failed++;
    }
    printf("%sok %u - ", ok ? "" : "not ", tap_count);
    vprintf(fmt, ap);
    printf("\n");
    if (!ok) {
        printf("#   failed at %s:%d\n", file, line);
    }
    fflush(stdout);
    return ok;
}

static inline int tap_check_at(int ok, const char *file, int line,
                               const char *fmt, ...)
{
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = tap_vcheck(ok, file, line, fmt, ap);
    va_end(ap);
    return r;
}

#define TAP_CHECK(cond, ...) tap_check_at(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

static inline void tap_diag(const char *fmt, ...)
{
    va_list ap;

    printf("# ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

static inline int tap_done(void)
{
    printf("1..%u\n", tap_count);
    if (tap_failed) {
        printf("# %u of %u checks failed\n", tap_failed, tap_count);
    }
    fflush(stdout);
    return tap_failed || tap_count == 0 ? 1 : 0;
}

#endif /* NFABRIC_TAP_H */
