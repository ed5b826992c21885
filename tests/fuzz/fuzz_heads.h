/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the harnesses of heads over a real state file (fuzz_shared.c,
 * fuzz_state.c) share: their invariant check, the state file's name in
 * TMPDIR (removed at exit) and the identity of the device-memory file the
 * heads attach with, and a head's attach that aborts on a refusal.
 */
#ifndef NFABRIC_FUZZ_HEADS_H
#define NFABRIC_FUZZ_HEADS_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hw/mem/nfabric_ctrl.h"
#include "hw/mem/nfabric_fm.h"
#include "hw/mem/nfabric_locks.h"

#define CHECK(cond, ...) do { \
    if (!(cond)) { \
        fprintf(stderr, "invariant violated: " __VA_ARGS__); \
        fprintf(stderr, "\n"); \
        abort(); \
    } \
} while (0)

static char state_path[512];
static struct stat mem_st;

static void remove_state(void)
{
    unlink(state_path);
}

/*
 * Names the state file TMPDIR/nfabric-TAG-PID.state (a run of
 * scripts/nfabric gives each its own TMPDIR), removed at exit, and takes
 * the identity of a device-memory file made and removed again.
 */
static void fuzz_heads_files(const char *tag)
{
    char mem[512];
    const char *tmp = getenv("TMPDIR");
    int fd;

    if (!tmp || !*tmp) {
        tmp = "/tmp";
    }
    snprintf(state_path, sizeof(state_path), "%s/nfabric-%s-%d.state", tmp,
             tag, (int)getpid());
    snprintf(mem, sizeof(mem), "%s/nfabric-%s-%d.mem", tmp, tag,
             (int)getpid());
    atexit(remove_state);
    fd = open(mem, O_RDWR | O_CREAT, 0600);
    if (fd < 0 || fstat(fd, &mem_st) != 0) {
        abort();
    }
    close(fd);
    unlink(mem);
}

/* Head h of @heads attaches to the state file; a refusal aborts. */
static void fuzz_heads_attach(unsigned h, unsigned heads, uint64_t mem_size,
                              NFabricShared **sh, int *fd)
{
    NFabricAttach a = {
        .path = state_path, .head = h, .heads = heads, .mem_size = mem_size,
        .mem_dev = mem_st.st_dev, .mem_ino = mem_st.st_ino,
    };
    NFabricAttachHow how;
    char err[256];

    if (nfabric_shared_attach(&a, sh, fd, &how, err, sizeof(err)) != 0) {
        fprintf(stderr, "attach head %u: %s\n", h, err);
        abort();
    }
}

#endif
