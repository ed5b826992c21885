/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfabric-state: print a shared device's state file (docs/multihost.md)
 * as key=value lines, read-only: heads, windows, rounds and the locks'
 * figures (contended acquisitions, repairs after a dead holder).
 *
 *   nfabric-state FILE
 *   nfabric-state --live FILE   live_heads=0x... (heads whose process holds
 *                               its live byte now); exit 0 if none, 1 if
 *                               some, 2 on error: for scripts that must not
 *                               remove the state of running hosts
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* F_OFD_GETLK */
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hw/mem/nfabric_shared.h"

static const char *const head_state[] = { "free", "attached", "gone" };

/* Heads whose process holds their live byte (an OFD lock) right now. */
static int live_heads(const char *path)
{
    uint32_t live = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        if (errno == ENOENT) {
            printf("live_heads=0x0\n");
            return 0;
        }
        fprintf(stderr, "nfabric-state: %s: %s\n", path, strerror(errno));
        return 2;
    }
    for (unsigned h = 0; h < NFABRIC_MAX_HEADS; h++) {
        struct flock fl;

        memset(&fl, 0, sizeof(fl));
        fl.l_type = F_WRLCK;
        fl.l_whence = SEEK_SET;
        fl.l_start = (off_t)NFABRIC_SHARED_LIVE_BYTE(h);
        fl.l_len = 1;
        if (fcntl(fd, F_OFD_GETLK, &fl) != 0) {
            fprintf(stderr, "nfabric-state: %s: %s\n", path, strerror(errno));
            close(fd);
            return 2;
        }
        if (fl.l_type != F_UNLCK) {
            live |= 1u << h;
        }
    }
    close(fd);
    printf("live_heads=0x%" PRIx32 "\n", live);
    return live ? 1 : 0;
}

int main(int argc, char **argv)
{
    const NFabricShared *sh;
    struct stat st;
    int fd;

    if (argc == 3 && !strcmp(argv[1], "--live")) {
        return live_heads(argv[2]);
    }
    if (argc != 2 || !strcmp(argv[1], "--help")) {
        fprintf(argc == 2 ? stdout : stderr,
                "usage: nfabric-state FILE\n       nfabric-state --live FILE\n");
        return argc == 2 ? 0 : 2;
    }
    fd = open(argv[1], O_RDONLY);
    if (fd < 0 || fstat(fd, &st) != 0) {
        fprintf(stderr, "nfabric-state: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    if ((uint64_t)st.st_size != sizeof(NFabricShared)) {
        fprintf(stderr, "nfabric-state: %s is %lld bytes, not a state file of "
                "layout %u (%zu bytes)\n", argv[1], (long long)st.st_size,
                NFABRIC_SHARED_LAYOUT, sizeof(NFabricShared));
        return 1;
    }
    sh = mmap(NULL, sizeof(*sh), PROT_READ, MAP_SHARED, fd, 0);
    if (sh == MAP_FAILED) {
        fprintf(stderr, "nfabric-state: cannot map %s: %s\n", argv[1],
                strerror(errno));
        return 1;
    }
    if (sh->magic != NFABRIC_SHARED_MAGIC || sh->layout != NFABRIC_SHARED_LAYOUT) {
        fprintf(stderr, "nfabric-state: %s is not a state file of layout %u\n",
                argv[1], NFABRIC_SHARED_LAYOUT);
        return 1;
    }
    printf("heads=%" PRIu32 "\nmem_size=%" PRIu64 "\nenabled_mask=0x%" PRIx32
           "\nlost_mask=0x%" PRIx32 "\nheads_reaped=%" PRIu64
           "\nlock_waits=%" PRIu64 "\nlock_sleeps=%" PRIu64
           "\nlock_repairs=%" PRIu64 "\nlock_timeouts=%" PRIu64
           "\nstate_id=%016" PRIx64 "\n",
           sh->heads, sh->mem_size, sh->enabled_mask, sh->lost_mask,
           sh->reaped, sh->lock_waits, sh->lock_sleeps, sh->lock_repairs,
           sh->lock_timeouts, sh->state_id);
    for (unsigned h = 0; h < sh->heads && h < NFABRIC_MAX_HEADS; h++) {
        const NFabricSharedHead *hd = &sh->head[h];
        uint64_t w = 0;

        for (unsigned p = 0; p < NFABRIC_NUM_PATHS; p++) {
            w += hd->stats[p][NFABRIC_STAT_WRITES];
        }
        printf("head%u_state=%s\nhead%u_pid=%" PRIu32 "\nhead%u_attaches=%"
               PRIu64 "\nhead%u_writes=%" PRIu64 "\n", h,
               hd->state < 3 ? head_state[hd->state] : "?", h, hd->pid, h,
               hd->attaches, h, w);
    }
    for (unsigned i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
        if (!(sh->enabled_mask & (1u << i))) {
            continue;
        }
        printf("win%u_path=%u\nwin%u_round=%" PRIu32 "\nwin%u_done=0x%" PRIx32
               "\nwin%u_incomplete=%" PRIu32 "\nwin%u_contrib_writes=%" PRIu64
               "\n", i, sh->cfg[i].path, i, sh->round[i].seq, i,
               sh->round[i].done, i, sh->round[i].incomplete, i,
               sh->win[i].contrib_writes);
    }
    munmap((void *)sh, sizeof(*sh));
    close(fd);
    return 0;
}
