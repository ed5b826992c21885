/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Small helpers of the test programs (host unit tests, guest and driver
 * checks, RTL harnesses), beside tap.h: a reproducible random generator
 * and a monotonic clock.  Plain C11 (and C++).
 */
#ifndef NFABRIC_TESTUTIL_H
#define NFABRIC_TESTUTIL_H

#include <stdint.h>
#include <time.h>

/* splitmix64: the next value of the sequence whose state is *s. */
static inline uint64_t nf_splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Seconds on the monotonic clock. */
static inline double nf_now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

#endif /* NFABRIC_TESTUTIL_H */
