/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the shared device state (nfabric_heads.c, nfabric_locks.c, nfabric_fm.c, nfabric_mappings.c) and of several
 * heads of one device, without QEMU: heads are forked processes, each with
 * its own NFabricCtrl over one device memory (MAP_SHARED) and one state
 * file, as QEMU processes are.  TAP output.
 *
 * What is checked: creating, joining and every refusal of attach; exact
 * counts when several processes contribute to one window while another
 * head enables, clears and disables other windows; a head killed while it
 * holds a window lock or the configuration lock never blocks the others
 * and leaves INCOMPLETE; dead heads are found (reaped) and may attach
 * again; a reset of one head leaves the device's windows alone; an FP32
 * window's COUNTERS is not checked (the fuzz finding of issue 21); a
 * corrupted or truncated state file (odd table sequence, garbage window
 * entry, garbage lock, another identity, truncation, also met by a thread
 * that blocks every signal as QEMU's vCPU threads do) makes the head refuse
 * the device's accesses with STATE within bounds, never hang or crash; a
 * garbage lock word held "forever" delays one access by the bound only;
 * liveness is the process's: a head attached by a thread that exited is
 * still alive for a forked process, and another thread may detach it;
 * a second state file, or one made anew, over the memory of live heads is
 * refused, naming both; a head stopped (SIGSTOP) in the middle of an
 * enable or a CLEAR delays no other head's plain memory or other windows,
 * and what it does hold up waits the bound at most, then reports STATE.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hw/mem/nfabric_ctrl.h"
#include "hw/mem/nfabric_fm.h"
#include "hw/mem/nfabric_locks.h"
#include "hw/mem/nfabric_mappings.h"
#include "tap.h"
#include "testutil.h"

#ifndef NF_MULTIHOST_MD
#error "NF_MULTIHOST_MD: the path of docs/multihost.md"
#endif

#define MEM_SIZE    (4u << 20)
#define W_BASE      0x10000ull
#define W_SIZE      0x400ull
#define W_CTRS      0x100000ull
#define NPROC       4
#define PASSES      2000

static const NFabricTimingParams tparams = { 1000, 5, 300, 32000 };
static char dir[512], state_path[600], mem_path[600];
static uint8_t *ram;
static struct stat mem_st;

static NFabricAttach attach_args(unsigned head, unsigned heads)
{
    return (NFabricAttach){
        .path = state_path, .head = head, .heads = heads,
        .mem_size = MEM_SIZE, .mem_dev = mem_st.st_dev,
        .mem_ino = mem_st.st_ino, .mem_path = mem_path,
    };
}

/* Attach head h of heads and set up a controller on it; exits on failure. */
static NFabricShared *head_up(NFabricCtrl *c, unsigned h, unsigned heads,
                              int *fd)
{
    NFabricAttach a = attach_args(h, heads);
    NFabricAttachHow how;
    NFabricShared *sh;
    char err[256];

    if (nfabric_shared_attach(&a, &sh, fd, &how, err, sizeof(err)) != 0) {
        fprintf(stderr, "head %u: %s\n", h, err);
        _exit(99);
    }
    nfabric_ctrl_init(c, ram, MEM_SIZE, &tparams, NULL, NULL);
    nfabric_ctrl_use_shared(c, sh, h);
    return sh;
}

static void wr(NFabricCtrl *c, uint64_t off, uint64_t v, unsigned size)
{
    nfabric_ctrl_reg_write(c, off, v, size);
}

static uint64_t rd(NFabricCtrl *c, uint64_t off, unsigned size)
{
    return nfabric_ctrl_reg_read(c, off, size);
}

static uint32_t win_set(NFabricCtrl *c, unsigned i, uint64_t base,
                        uint64_t size, uint64_t ctrs, unsigned path,
                        unsigned width)
{
    wr(c, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_BASE), base, 8);
    wr(c, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_SIZE), size, 8);
    wr(c, NFABRIC_REG_WIN(i, NFABRIC_WIN_COUNTERS), ctrs, 8);
    wr(c, NFABRIC_REG_WIN(i, NFABRIC_WIN_THRESHOLD), 1, 4);
    wr(c, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL),
       NFABRIC_WCTRL(path, width, 0) | NFABRIC_WCTRL_ENABLE, 4);
    return (uint32_t)rd(c, NFABRIC_REG_WIN(i, NFABRIC_WIN_ERROR), 4);
}

static int64_t now_ms(void);

static uint64_t rnd(uint64_t *s)
{
    return nf_splitmix64(s);
}

static int wait_child(pid_t pid)
{
    int st;

    if (waitpid(pid, &st, 0) != pid) {
        return -1;
    }
    if (WIFSIGNALED(st)) {
        return 128 + WTERMSIG(st);
    }
    return WEXITSTATUS(st);
}

/* ---- attach --------------------------------------------------------- */

static void test_attach(void)
{
    NFabricAttach a = attach_args(0, 2);
    NFabricAttachHow how = 0;
    NFabricShared *sh0, *sh;
    char err[256] = "";
    int fd0, fd, p[2];
    uint32_t live;
    pid_t pid;

    unlink(state_path);
    TAP_CHECK(nfabric_shared_attach(&a, &sh0, &fd0, &how, err, sizeof(err)) == 0 &&
              how == NFABRIC_ATTACH_CREATED && sh0->heads == 2,
              "attach: the first head creates the state file (%s)", err);

    /* Head 0 again, from another process: in use by a live process. */
    pipe(p);
    pid = fork();
    if (pid == 0) {
        NFabricAttach b = attach_args(0, 2);
        int r = nfabric_shared_attach(&b, &sh, &fd, &how, err, sizeof(err));

        write(p[1], err, strlen(err) + 1);
        _exit(r == 0 ? 1 : 0);
    }
    memset(err, 0, sizeof(err));
    read(p[0], err, sizeof(err) - 1);
    TAP_CHECK(wait_child(pid) == 0 && strstr(err, "in use by a live process"),
              "attach: a head in use is refused (%s)", err);

    a = attach_args(1, 3);
    TAP_CHECK(nfabric_shared_attach(&a, &sh, &fd, &how, err, sizeof(err)) != 0 &&
              strstr(err, "property 'heads': 3"),
              "attach: another head count is refused (%s)", err);
    a = attach_args(1, 2);
    a.mem_size = MEM_SIZE * 2;
    TAP_CHECK(nfabric_shared_attach(&a, &sh, &fd, &how, err, sizeof(err)) != 0 &&
              strstr(err, "property 'volatile-memdev'"),
              "attach: another memory size is refused (%s)", err);
    a = attach_args(1, 2);
    a.mem_ino++;
    TAP_CHECK(nfabric_shared_attach(&a, &sh, &fd, &how, err, sizeof(err)) != 0 &&
              strstr(err, "another file"),
              "attach: another memory file is refused (%s)", err);
    a = attach_args(2, 2);
    TAP_CHECK(nfabric_shared_attach(&a, &sh, &fd, &how, err, sizeof(err)) != 0 &&
              strstr(err, "property 'head'"),
              "attach: head >= heads is refused (%s)", err);
    a = attach_args(0, 17);
    TAP_CHECK(nfabric_shared_attach(&a, &sh, &fd, &how, err, sizeof(err)) != 0 &&
              strstr(err, "property 'heads'"),
              "attach: 17 heads are refused (%s)", err);

    /* Head 1 joins in a child that then dies without detaching. */
    pid = fork();
    if (pid == 0) {
        NFabricAttach b = attach_args(1, 2);

        if (nfabric_shared_attach(&b, &sh, &fd, &how, err, sizeof(err)) ||
            how != NFABRIC_ATTACH_JOINED) {
            _exit(1);
        }
        raise(SIGKILL);
    }
    TAP_CHECK(wait_child(pid) == 128 + SIGKILL &&
              sh0->head[1].state == NFABRIC_HEAD_ATTACHED,
              "attach: head 1 joins, then its process is killed");
    live = nfabric_shared_reap(sh0, 0);
    TAP_CHECK(live == 1u && sh0->lost_mask == 2u &&
              sh0->head[1].state == NFABRIC_HEAD_GONE && sh0->reaped == 1,
              "reap: the dead head 1 is found gone (lost 0x%x)", sh0->lost_mask);
    pid = fork();
    if (pid == 0) {
        NFabricAttach b = attach_args(1, 2);

        _exit(nfabric_shared_attach(&b, &sh, &fd, &how, err, sizeof(err)) ||
              how != NFABRIC_ATTACH_JOINED || (sh->lost_mask & 2) ? 1 : 0);
    }
    TAP_CHECK(wait_child(pid) == 0, "attach: the dead head's index attaches "
              "again and is no longer lost");
    /* Last head leaves: the next attach re-initialises (no head alive). */
    nfabric_shared_detach(sh0, fd0, 0);
    a = attach_args(0, 3);
    err[0] = 0;
    TAP_CHECK(nfabric_shared_attach(&a, &sh, &fd, &how, err, sizeof(err)) == 0 &&
              how == NFABRIC_ATTACH_REINIT && sh->heads == 3,
              "attach: with no head alive the state is made anew, even for "
              "another geometry (%s)", err);
    nfabric_shared_detach(sh, fd, 0);

    /* Files that are not state files of this layout. */
    fd = open(state_path, O_WRONLY | O_TRUNC);
    write(fd, "junk", 4);
    close(fd);
    a = attach_args(0, 2);
    TAP_CHECK(nfabric_shared_attach(&a, &sh, &fd, &how, err, sizeof(err)) != 0 &&
              strstr(err, "4 bytes, not the"),
              "attach: a file of another size is refused (%s)", err);
    fd = open(state_path, O_RDWR | O_TRUNC);
    ftruncate(fd, sizeof(NFabricShared));
    pwrite(fd, "XXXXXXXX", 8, 0);
    close(fd);
    TAP_CHECK(nfabric_shared_attach(&a, &sh, &fd, &how, err, sizeof(err)) != 0 &&
              strstr(err, "not a state file of layout"),
              "attach: a file with another magic is refused (%s)", err);
    unlink(state_path);
}

/* ---- contention ------------------------------------------------------- */

/* Process p's 8-byte pattern of pass k at word w. */
static uint64_t pattern(unsigned p, unsigned k, unsigned w)
{
    uint64_t s = (uint64_t)p << 40 | (uint64_t)k << 20 | w;

    return rnd(&s);
}

static void test_contention(void)
{
    static int32_t want[W_SIZE * 8];
    NFabricCtrl c;
    NFabricShared *sh;
    int fd, bad = 0, kids_ok = 1;
    pid_t pids[NPROC + 1];
    uint64_t total = 0;

    unlink(state_path);
    memset(ram, 0, MEM_SIZE);
    sh = head_up(&c, 0, NPROC + 1, &fd);
    TAP_CHECK(win_set(&c, 0, W_BASE, W_SIZE, W_CTRS, NFABRIC_PATH_GBINARY,
                      16) == 0, "contention: head 0 enables the G-Binary window");
    for (unsigned p = 0; p < NPROC; p++) {
        pids[p] = fork();
        if (pids[p] == 0) {
            NFabricCtrl me;
            int f;

            head_up(&me, p + 1, NPROC + 1, &f);
            /* Mixed sizes: 8-byte words, and the last word as 1+2+1+4. */
            for (unsigned k = 0; k < PASSES; k++) {
                for (unsigned w = 0; w < W_SIZE / 8; w++) {
                    uint64_t v = pattern(p, k, w);
                    uint64_t dpa = W_BASE + 8 * w;

                    if (w % 16 == 15) {
                        nfabric_ctrl_mem_access(&me, dpa, (uint8_t *)&v, 1, true);
                        nfabric_ctrl_mem_access(&me, dpa + 1, (uint8_t *)&v + 1, 2, true);
                        nfabric_ctrl_mem_access(&me, dpa + 3, (uint8_t *)&v + 3, 1, true);
                        nfabric_ctrl_mem_access(&me, dpa + 4, (uint8_t *)&v + 4, 4, true);
                    } else {
                        nfabric_ctrl_mem_access(&me, dpa, (uint8_t *)&v, 8, true);
                    }
                }
            }
            _exit(0);
        }
    }
    /* Meanwhile another head enables, clears and disables other windows. */
    pids[NPROC] = fork();
    if (pids[NPROC] == 0) {
        NFabricCtrl me;
        int f;

        /* Head 0's process attached head 0; this one works through it. */
        nfabric_ctrl_init(&me, ram, MEM_SIZE, &tparams, NULL, NULL);
        nfabric_ctrl_use_shared(&me, sh, 0);
        for (unsigned k = 0; k < 3000; k++) {
            unsigned i = 2 + k % 4;

            if (win_set(&me, i, 0x20000 + 0x1000 * i, 0x400, 0x200000 + 0x10000 * i,
                        NFABRIC_PATH_GTERNARY, 8) != 0) {
                _exit(1);
            }
            wr(&me, NFABRIC_REG_WIN(i, NFABRIC_WIN_CMD), NFABRIC_WCMD_CLEAR, 4);
            wr(&me, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL), 0, 4);
        }
        (void)f;
        _exit(0);
    }
    for (unsigned p = 0; p <= NPROC; p++) {
        kids_ok &= wait_child(pids[p]) == 0;
    }
    TAP_CHECK(kids_ok, "contention: %u contributing heads and a reconfiguring "
              "head ran to the end", NPROC);
    for (unsigned p = 0; p < NPROC; p++) {
        for (unsigned k = 0; k < PASSES; k++) {
            for (unsigned w = 0; w < W_SIZE / 8; w++) {
                uint64_t v = pattern(p, k, w);

                for (unsigned b = 0; b < 64; b++) {
                    want[w * 64 + b] += (v >> b) & 1 ? 1 : -1;
                }
            }
        }
    }
    for (uint64_t e = 0; e < W_SIZE * 8; e++) {
        bad += nfabric_counter_get(ram + W_CTRS, 16, e) != want[e];
    }
    for (unsigned p = 0; p < NPROC; p++) {
        total += sh->head[p + 1].contrib_writes[0];
    }
    TAP_CHECK(bad == 0, "contention: every one of %llu counts exact after %u "
              "heads x %u passes (%d differ)", (unsigned long long)W_SIZE * 8,
              NPROC, PASSES, bad);
    TAP_CHECK(rd(&c, NFABRIC_REG_WIN(0, NFABRIC_WIN_CONTRIB_WRITES), 8) == total &&
              total == (uint64_t)NPROC * PASSES * (W_SIZE / 8 + W_SIZE / 8 / 16 * 3),
              "contention: per-head contribution counts add up to the "
              "window's (%" PRIu64 ")", total);
    tap_diag("contention: %" PRIu64 " contended lock acquisitions", sh->lock_waits);
    TAP_CHECK((sh->gen[0] & 1) == 0 && sh->job[0].busy == -1 &&
              (sh->enabled_mask & 0x3c) == 0,
              "contention: the table is consistent afterwards (gen %u)", sh->gen[0]);
    nfabric_shared_detach(sh, fd, 0);
}

/* ---- biased stripes -------------------------------------------------- */

/* n 8-byte all-ones writes at dpa by c. */
static void write_n(NFabricCtrl *c, uint64_t dpa, unsigned n)
{
    uint64_t v = ~0ull;

    for (unsigned k = 0; k < n; k++) {
        nfabric_ctrl_mem_access(c, dpa, (uint8_t *)&v, 8, true);
    }
}

/* Head 1 in a child: n writes at dpa, then how (0 exit, 1 die inside). */
static pid_t bias_child(unsigned n, uint64_t dpa, int how)
{
    pid_t pid = fork();

    if (pid == 0) {
        NFabricCtrl me;
        NFabricHeld held;
        int f;

        head_up(&me, 1, 2, &f);
        write_n(&me, dpa, n);
        if (how == 1) {
            /* Inside its next access, through its bias: killed there. */
            if (!nfabric_shared_lock_span(me.sh, me.lock_token, 0, W_SIZE,
                                          dpa - W_BASE, 8, &held) ||
                !held.bias) {
                _exit(3);
            }
            raise(SIGKILL);
        }
        _exit(0);
    }
    return pid;
}

static void test_bias(void)
{
    NFabricCtrl c;
    NFabricShared *sh;
    NFabricHeld held;
    int fd, st;
    int64_t t0;
    pid_t pid;
    uint64_t revokes, grants, drops, v = ~0ull;
    int32_t before;

    unlink(state_path);
    memset(ram, 0, MEM_SIZE);
    sh = head_up(&c, 0, 2, &fd);
    win_set(&c, 0, W_BASE, W_SIZE, W_CTRS, NFABRIC_PATH_GBINARY, 16);

    TAP_CHECK(nfabric_stripe_shift(W_SIZE) == 8 &&
              nfabric_stripe_shift(16 << 10) == 8 &&
              nfabric_stripe_shift(1 << 20) == 14 &&
              nfabric_stripe_shift((1 << 20) + 4096) == 15 &&
              nfabric_stripe_shift(32ull << 20) == 19,
              "bias: 64 stripes of equal runs of 256 bytes or more");
    write_n(&c, W_BASE, NFABRIC_BIAS_MIN - 1);
    TAP_CHECK(sh->bias_grants == 0 && sh->stripe[0][0].bias == 0,
              "bias: none before %u takings in a row", NFABRIC_BIAS_MIN);
    write_n(&c, W_BASE, 1);
    TAP_CHECK(sh->bias_grants == 1 &&
              (uint32_t)sh->stripe[0][0].bias == c.lock_token &&
              sh->stripe[0][0].bias >> 32,
              "bias: stripe 0 biased to this head's thread after %u takings",
              NFABRIC_BIAS_MIN);
    TAP_CHECK(nfabric_shared_lock_span(sh, c.lock_token, 0, W_SIZE, 8, 8, &held) &&
              held.bias == 1 && held.word == 0 && sh->stripe[0][0].word == 0 &&
              sh->head[0].stripe_busy[0][0] == 1,
              "bias: taken without its word, busy byte raised");
    nfabric_shared_unlock_span(sh, 0, &held);
    TAP_CHECK(sh->head[0].stripe_busy[0][0] == 0,
              "bias: given back, busy byte down");

    /* Another head writes there: taken back, counts exact; kept briefly. */
    sh->stripe[0][0].granted_ns = (uint64_t)now_ms() * 1000000 + 60000000000ull;
    st = wait_child(bias_child(3, W_BASE, 0));
    TAP_CHECK(st == 0 && sh->bias_revokes == 1 && sh->stripe[0][0].bias == 0 &&
              nfabric_counter_get(ram + W_CTRS, 16, 0) ==
              (int32_t)NFABRIC_BIAS_MIN + 3,
              "bias: another head's write takes it back (revokes %" PRIu64
              "), counter 0 is %d", sh->bias_revokes,
              nfabric_counter_get(ram + W_CTRS, 16, 0));
    TAP_CHECK(sh->stripe[0][0].need == 2 * NFABRIC_BIAS_MIN,
              "bias: taken back soon after it was given, the next needs %u "
              "takings", sh->stripe[0][0].need);

    /* A child of this process (fork) never uses this thread's bias. */
    write_n(&c, W_BASE, 2 * NFABRIC_BIAS_MIN - 1);
    TAP_CHECK(sh->bias_grants == 1, "bias: not again before %u takings",
              2 * NFABRIC_BIAS_MIN);
    write_n(&c, W_BASE, 1);
    sh->stripe[0][0].granted_ns = 0;        /* as if given long ago */
    revokes = sh->bias_revokes;
    pid = fork();
    if (pid == 0) {
        bool ok = nfabric_shared_lock_span(sh, c.lock_token, 0, W_SIZE, 0, 8, &held) &&
                  !held.bias && held.word == 1;

        nfabric_shared_unlock_span(sh, 0, &held);
        _exit(ok ? 0 : 1);
    }
    st = wait_child(pid);
    TAP_CHECK(st == 0 && sh->bias_grants == 2 &&
              sh->bias_revokes == revokes + 1 &&
              sh->stripe[0][0].need == NFABRIC_BIAS_MIN,
              "bias: a forked child takes the word and the bias back; kept "
              "long, the next needs %u again", sh->stripe[0][0].need);

    /* Inside through its bias, this head stays: the other waits, bounded. */
    write_n(&c, W_BASE, NFABRIC_BIAS_MIN);
    revokes = sh->bias_revokes;
    if (!nfabric_shared_lock_span(sh, c.lock_token, 0, W_SIZE, 0, 8, &held) ||
        !held.bias) {
        TAP_CHECK(0, "bias: re-earned");
    }
    t0 = now_ms();
    pid = fork();
    if (pid == 0) {
        NFabricCtrl me;
        int f;

        head_up(&me, 1, 2, &f);
        nfabric_ctrl_mem_access(&me, W_BASE, (uint8_t *)&v, 8, true);
        _exit(rd(&me, NFABRIC_REG_LAST_ERROR, 4) == NFABRIC_ERR_STATE ? 0 : 1);
    }
    st = wait_child(pid);
    TAP_CHECK(st == 0 && now_ms() - t0 < 3000 &&
              (uint32_t)sh->stripe[0][0].bias == c.lock_token &&
              sh->bias_revokes == revokes,
              "bias: a head waiting for a holder inside gives up in %lld ms "
              "(STATE), the bias stays with the holder",
              (long long)(now_ms() - t0));
    nfabric_shared_unlock_span(sh, 0, &held);
    st = wait_child(bias_child(1, W_BASE, 0));
    TAP_CHECK(st == 0 && sh->bias_revokes == revokes + 1,
              "bias: once the holder gave it back, the other head takes it");

    /* Head 1 dies inside through its bias (stripe 1): repaired. */
    st = wait_child(bias_child(NFABRIC_BIAS_MIN, W_BASE + 0x100, 1));
    nfabric_ctrl_mem_access(&c, W_BASE + 0x100, (uint8_t *)&v, 8, true);
    TAP_CHECK(st == 128 + SIGKILL && sh->lock_repairs == 1 &&
              sh->round[0].incomplete && sh->stripe[0][1].bias == 0 &&
              sh->head[1].stripe_busy[0][1] == 0,
              "bias: a head killed inside through its bias is repaired "
              "(round INCOMPLETE)");

    /*
     * A head that moves on gives its oldest bias back itself: of stripes
     * 1, 2 and 3 earned in turn, 1 is given back (no barrier), and another
     * head then takes it without taking anything back.
     */
    grants = sh->bias_grants;
    drops = sh->bias_drops;
    for (unsigned k = 1; k <= 3; k++) {
        sh->stripe[0][k].need = NFABRIC_BIAS_MIN;  /* 1 was taken back */
        write_n(&c, W_BASE + k * 0x100, NFABRIC_BIAS_MIN);
    }
    TAP_CHECK(sh->bias_grants == grants + 3 && sh->bias_drops == drops + 1 &&
              sh->stripe[0][1].bias == 0 && sh->stripe[0][1].word == 0 &&
              (uint32_t)sh->stripe[0][2].bias == c.lock_token &&
              (uint32_t)sh->stripe[0][3].bias == c.lock_token,
              "bias: of %u earned in turn, the oldest is given back by its "
              "holder (drops %" PRIu64 "), the %u latest kept", 3u,
              sh->bias_drops - drops, NFABRIC_BIAS_KEPT);
    revokes = sh->bias_revokes;
    before = nfabric_counter_get(ram + W_CTRS, 16, 0x100 * 8);
    st = wait_child(bias_child(1, W_BASE + 0x100, 0));
    TAP_CHECK(st == 0 && sh->bias_revokes == revokes &&
              nfabric_counter_get(ram + W_CTRS, 16, 0x100 * 8) == before + 1,
              "bias: another head takes a stripe given back without a "
              "barrier (revokes +%" PRIu64 ")", sh->bias_revokes - revokes);
    st = wait_child(bias_child(1, W_BASE + 0x300, 0));
    TAP_CHECK(st == 0 && sh->bias_revokes == revokes + 1 &&
              sh->stripe[0][3].bias == 0,
              "bias: a stripe still kept is taken back with one");

    /* A bias no head can have written: refused, nothing waited for. */
    sh->stripe[0][2].bias = 0x7full | 1ull << 32;
    nfabric_ctrl_mem_access(&c, W_BASE + 0x200, (uint8_t *)&v, 8, true);
    TAP_CHECK(rd(&c, NFABRIC_REG_LAST_ERROR, 4) == NFABRIC_ERR_STATE &&
              sh->stripe[0][2].word == 0 &&
              sh->stripe[0][2].bias == (0x7full | 1ull << 32),
              "bias: a corrupted bias refuses the access (STATE), changes "
              "nothing");
    sh->stripe[0][2].bias = 0;

    nfabric_shared_detach(sh, fd, 0);
}

/* ---- faults around the locks (issue 49) ------------------------------ */

/* This thread's bias value of stripe k of window 0, as a taker reads it. */
static bool stripe_biased_to(const NFabricShared *sh, unsigned k,
                             uint32_t token)
{
    uint64_t b = __atomic_load_n(&sh->stripe[0][k].bias, __ATOMIC_ACQUIRE);

    return (uint32_t)b == token && (b >> 32);
}

/* Wait up to ms for *p to be 0. */
static bool wait_zero(const uint64_t *p, int ms)
{
    int64_t t0 = now_ms();

    while (__atomic_load_n(p, __ATOMIC_ACQUIRE)) {
        if (now_ms() - t0 > ms) {
            return false;
        }
        usleep(1000);
    }
    return true;
}

/*
 * A child of head h: CLEAR window 0 (all 64 stripes); exits 0 if it was
 * refused with STATE, 1 if it went through, 2 on anything else.
 */
static pid_t clear_child(unsigned h, unsigned heads)
{
    pid_t pid = fork();

    if (pid == 0) {
        NFabricCtrl me;
        uint32_t err;
        int f;

        head_up(&me, h, heads, &f);
        wr(&me, NFABRIC_REG_WIN(0, NFABRIC_WIN_CMD), NFABRIC_WCMD_CLEAR, 4);
        err = (uint32_t)rd(&me, NFABRIC_REG_LAST_ERROR, 4);
        _exit(err == NFABRIC_ERR_STATE ? 0 : err == 0 ? 1 : 2);
    }
    return pid;
}

typedef struct {
    NFabricShared *sh;
    volatile int go, stop;
    unsigned reaps;
} Reaper;

static void *reaper(void *arg)
{
    Reaper *r = arg;

    while (!r->go) {
        sched_yield();
    }
    while (!r->stop) {
        nfabric_shared_reap(r->sh, 0);
        r->reaps++;
    }
    return NULL;
}

typedef struct {
    NFabricCtrl *c;
    uint64_t dpa;
    unsigned n;
} Writer;

static void *writer_thread(void *arg)
{
    Writer *w = arg;

    write_n(w->c, w->dpa, w->n);
    return NULL;
}

/* n writes at dpa by c from a new thread of this process. */
static void write_n_thread(NFabricCtrl *c, uint64_t dpa, unsigned n)
{
    Writer w = { c, dpa, n };
    pthread_t th;

    pthread_create(&th, NULL, writer_thread, &w);
    pthread_join(th, NULL);
}

static void test_lock_faults(void)
{
    NFabricCtrl c;
    NFabricShared *sh;
    NFabricHeld held;
    int fd, st, sync[2], back[2];
    int64_t t0, t;
    uint64_t revokes, v = ~0ull, me;
    pid_t a, b;
    char x;

    unlink(state_path);
    memset(ram, 0, MEM_SIZE);
    sh = head_up(&c, 0, 3, &fd);
    win_set(&c, 0, W_BASE, W_SIZE, W_CTRS, NFABRIC_PATH_GBINARY, 16);
    /*
     * The holder inside through its bias (stripe 0); a taker of it killed
     * while it waits for the holder; a CLEAR from a third head takes the
     * dead taker's word: it must finish the taking back, not go in beside
     * the holder.
     */
    write_n(&c, W_BASE, 2 * NFABRIC_BIAS_MAX);
    TAP_CHECK(stripe_biased_to(sh, 0, c.lock_token) &&
              nfabric_shared_lock_span(sh, c.lock_token, 0, W_SIZE, 0, 8,
                                       &held) && held.bias,
              "revoker killed: head 0 inside stripe 0 through its bias");
    me = sh->stripe[0][0].bias;
    a = fork();
    if (a == 0) {
        NFabricCtrl r;
        int f;

        head_up(&r, 1, 3, &f);
        nfabric_ctrl_mem_access(&r, W_BASE, (uint8_t *)&v, 8, true);
        _exit(0);
    }
    TAP_CHECK(wait_zero(&sh->stripe[0][0].bias, 2000) &&
              sh->stripe[0][0].revoking == me,
              "revoker killed: head 1 took the word, set the bias to 0 and "
              "waits for the holder (revoking names it)");
    usleep(50000);              /* inside its wait for the holder */
    kill(a, SIGKILL);
    st = wait_child(a);
    t0 = now_ms();
    st = st == 128 + SIGKILL ? wait_child(clear_child(2, 3)) : -1;
    t = now_ms() - t0;
    TAP_CHECK(st == 0 && t < NFABRIC_SHARED_LOCK_MS + 1500 &&
              sh->stripe[0][0].bias == me && sh->stripe[0][0].revoking == 0 &&
              sh->head[0].stripe_busy[0][0] == 1,
              "revoker killed: a CLEAR from head 2 takes the dead taker's "
              "word, finishes the taking back, waits for the holder and is "
              "refused (STATE) in %lld ms; the holder keeps its bias "
              "(child status %d)", (long long)t, st);
    TAP_CHECK(sh->round[0].incomplete,
              "revoker killed: the round says INCOMPLETE (a dead holder's "
              "word)");
    nfabric_shared_unlock_span(sh, 0, &held);
    revokes = sh->bias_revokes;
    st = wait_child(clear_child(2, 3));
    TAP_CHECK(st == 1 && sh->bias_revokes == revokes + 1 &&
              sh->stripe[0][0].bias == 0,
              "revoker killed: once the holder left, the CLEAR takes the bias "
              "back and goes through (child status %d, revokes +%" PRIu64 ")",
              st, sh->bias_revokes - revokes);

    /* A dead holder's revoke left with the holder's own thread: cleared. */
    write_n(&c, W_BASE, 2 * NFABRIC_BIAS_MAX);
    me = sh->stripe[0][0].bias;
    sh->stripe[0][0].bias = 0;
    sh->stripe[0][0].revoking = me;     /* as a taker that died leaves it */
    revokes = sh->bias_revokes;
    write_n(&c, W_BASE, 1);
    TAP_CHECK(me && sh->stripe[0][0].revoking == 0 &&
              sh->bias_revokes == revokes &&
              rd(&c, NFABRIC_REG_LAST_ERROR, 4) == 0,
              "revoker killed: the holder itself, taking the word, clears "
              "the taking back of its own bias (no barrier)");

    /*
     * A hostile granted_ns (INT64_MIN as a signed time): a long keep, no
     * signed overflow (the UBSan fuzz build aborts on one).
     */
    write_n(&c, W_BASE + 0x100, 2 * NFABRIC_BIAS_MAX);
    sh->stripe[0][1].need = 4 * NFABRIC_BIAS_MIN;
    sh->stripe[0][1].granted_ns = 1ull << 63;
    st = stripe_biased_to(sh, 1, c.lock_token) ? -1 : -2;
    if (st == -1) {
        a = fork();
        if (a == 0) {
            NFabricCtrl h1;
            int f;

            head_up(&h1, 1, 3, &f);
            write_n(&h1, W_BASE + 0x100, 1);
            _exit(rd(&h1, NFABRIC_REG_LAST_ERROR, 4) == 0 ? 0 : 1);
        }
        st = wait_child(a);
    }
    TAP_CHECK(st == 0 && sh->stripe[0][1].need == 2 * NFABRIC_BIAS_MIN,
              "bias: a granted_ns near INT64_MIN reads as kept long (the next "
              "needs %u takings), no overflow", sh->stripe[0][1].need);
    nfabric_shared_detach(sh, fd, 0);

    /*
     * Two processes forked from one head before it was given any bias:
     * each may earn biases, never through the other's (their threads'
     * numbers differ), and the parent keeps earning its own.
     */
    unlink(state_path);
    memset(ram, 0, MEM_SIZE);
    sh = head_up(&c, 0, 3, &fd);
    win_set(&c, 0, W_BASE, W_SIZE, W_CTRS, NFABRIC_PATH_GBINARY, 16);
    if (pipe(sync) || pipe(back)) {
        TAP_CHECK(0, "lock faults: pipes");
        return;
    }
    a = fork();
    if (a == 0) {
        bool ok;

        write_n(&c, W_BASE + 0x200, NFABRIC_BIAS_MIN);
        ok = stripe_biased_to(sh, 2, c.lock_token) &&
             nfabric_shared_lock_span(sh, c.lock_token, 0, W_SIZE, 0x200, 8,
                                      &held) && held.bias;
        x = ok ? 'y' : 'n';
        if (write(sync[1], &x, 1) != 1 || read(back[0], &x, 1) != 1) {
            _exit(3);
        }
        nfabric_shared_unlock_span(sh, 0, &held);
        _exit(ok ? 0 : 1);
    }
    x = 0;
    TAP_CHECK(read(sync[0], &x, 1) == 1 && x == 'y',
              "fork: a child of a head with no bias earns one (stripe 2) "
              "and stays inside through it");
    revokes = sh->bias_revokes;
    t0 = now_ms();
    b = fork();
    if (b == 0) {
        /* A number for this thread first (a taking of another stripe). */
        nfabric_ctrl_mem_access(&c, W_BASE + 0x100, (uint8_t *)&v, 8, true);
        nfabric_ctrl_mem_access(&c, W_BASE + 0x200, (uint8_t *)&v, 8, true);
        _exit(rd(&c, NFABRIC_REG_LAST_ERROR, 4) == NFABRIC_ERR_STATE ? 0 : 1);
    }
    st = wait_child(b);
    t = now_ms() - t0;
    TAP_CHECK(st == 0 && t >= NFABRIC_SHARED_LOCK_MS - 50 &&
              sh->bias_revokes == revokes &&
              stripe_biased_to(sh, 2, c.lock_token),
              "fork: its sibling (same token) does not go in through that "
              "bias: it waits for the holder, %lld ms, and is refused (STATE)",
              (long long)t);
    x = 'g';
    st = write(back[1], &x, 1) == 1 ? wait_child(a) : -1;
    TAP_CHECK(st == 0 && sh->head[0].stripe_busy[0][2] == 0,
              "fork: the holder leaves, its busy byte down");
    b = fork();
    if (b == 0) {
        nfabric_ctrl_mem_access(&c, W_BASE + 0x200, (uint8_t *)&v, 8, true);
        _exit(rd(&c, NFABRIC_REG_LAST_ERROR, 4) == 0 ? 0 : 1);
    }
    st = wait_child(b);
    TAP_CHECK(st == 0 && sh->bias_revokes == revokes + 1,
              "fork: then the sibling takes the bias back and writes");
    write_n(&c, W_BASE + 0x300, NFABRIC_BIAS_MIN);
    TAP_CHECK(stripe_biased_to(sh, 3, c.lock_token),
              "fork: the parent that forked before its first bias still "
              "earns biases");
    close(sync[0]);
    close(sync[1]);
    close(back[0]);
    close(back[1]);
    nfabric_shared_detach(sh, fd, 0);

    /*
     * A reap during a revoke: head 1 earns a bias and dies (not inside);
     * head 0 writes there (taking the dead head's bias back) while another
     * thread reaps head 1 (which gives the bias back too).  Never a
     * failed state, never a lost write.
     */
    unlink(state_path);
    memset(ram, 0, MEM_SIZE);
    sh = head_up(&c, 0, 2, &fd);
    win_set(&c, 0, W_BASE, W_SIZE, W_CTRS, NFABRIC_PATH_GBINARY, 16);
    {
        unsigned tries = 40, bad = 0, raced = 0;
        int32_t before;

        for (unsigned n = 0; n < tries; n++) {
            Reaper r = { .sh = sh };
            pthread_t th;

            sh->stripe[0][0].need = NFABRIC_BIAS_MIN;
            if (wait_child(bias_child(NFABRIC_BIAS_MIN, W_BASE, 0)) != 0 ||
                !sh->stripe[0][0].bias) {
                bad++;
                continue;
            }
            before = nfabric_counter_get(ram + W_CTRS, 16, 0);
            pthread_create(&th, NULL, reaper, &r);
            r.go = 1;
            if (n & 1) {
                usleep(n * 5);
            }
            nfabric_ctrl_mem_access(&c, W_BASE, (uint8_t *)&v, 8, true);
            r.stop = 1;
            pthread_join(th, NULL);
            raced += r.reaps > 0;
            if (rd(&c, NFABRIC_REG_LAST_ERROR, 4) != 0 ||
                nfabric_counter_get(ram + W_CTRS, 16, 0) != before + 1 ||
                nfabric_shared_check(sh, NULL, 0) != 0 || c.failed) {
                bad++;
                break;
            }
        }
        TAP_CHECK(bad == 0 && raced > 0,
                  "reap during a revoke: %u takings back of a dead head's "
                  "bias with a reaper running (%u raced), no refusal, no "
                  "failed state, every write counted", tries, raced);
    }
    nfabric_shared_detach(sh, fd, 0);

    /*
     * A guest's writer that moves to another vCPU thread: biases go to
     * one thread of a process at a time, and to another once the first
     * holds none any more.
     */
    unlink(state_path);
    memset(ram, 0, MEM_SIZE);
    sh = head_up(&c, 0, 2, &fd);
    win_set(&c, 0, W_BASE, W_SIZE, W_CTRS, NFABRIC_PATH_GBINARY, 16);
    write_n_thread(&c, W_BASE + 0x100, NFABRIC_BIAS_MIN);
    me = sh->stripe[0][1].bias;
    write_n_thread(&c, W_BASE + 0x200, NFABRIC_BIAS_MIN);
    TAP_CHECK((uint32_t)me == c.lock_token && sh->stripe[0][2].bias == 0,
              "moved writer: a thread earns a bias (stripe 1); another "
              "thread of the process earns none while the first holds one");
    st = wait_child(bias_child(1, W_BASE + 0x100, 0));
    write_n_thread(&c, W_BASE + 0x200, NFABRIC_BIAS_MIN);
    TAP_CHECK(st == 0 && sh->stripe[0][1].bias == 0 &&
              (uint32_t)sh->stripe[0][2].bias == c.lock_token &&
              sh->stripe[0][2].bias >> 32 != me >> 32,
              "moved writer: once another head took the first thread's bias "
              "back, the other thread earns one (stripe 2)");
    nfabric_shared_detach(sh, fd, 0);

    /*
     * Stuck is per stripe: a head stopped holding stripe 1 costs the
     * others the whole bound once, then the short one, even while they
     * take other stripes of that window in between.
     */
    unlink(state_path);
    memset(ram, 0, MEM_SIZE);
    sh = head_up(&c, 0, 2, &fd);
    win_set(&c, 0, W_BASE, W_SIZE, W_CTRS, NFABRIC_PATH_GBINARY, 16);
    a = fork();
    if (a == 0) {
        NFabricCtrl h1;
        int f;

        head_up(&h1, 1, 2, &f);
        if (!nfabric_shared_lock_span(h1.sh, h1.lock_token, 0, W_SIZE, 0x100,
                                      8, &held)) {
            _exit(3);
        }
        raise(SIGSTOP);
        nfabric_shared_unlock_span(h1.sh, 0, &held);
        _exit(0);
    }
    waitpid(a, &st, WUNTRACED);
    {
        int64_t first, again[3];

        t0 = now_ms();
        nfabric_ctrl_mem_access(&c, W_BASE + 0x100, (uint8_t *)&v, 8, true);
        first = now_ms() - t0;
        for (unsigned n = 0; n < 3; n++) {
            nfabric_ctrl_mem_access(&c, W_BASE + 0x200, (uint8_t *)&v, 8, true);
            t0 = now_ms();
            nfabric_ctrl_mem_access(&c, W_BASE + 0x100, (uint8_t *)&v, 8, true);
            again[n] = now_ms() - t0;
        }
        TAP_CHECK(rd(&c, NFABRIC_REG_LAST_ERROR, 4) == NFABRIC_ERR_STATE &&
                  sh->round[0].incomplete &&
                  (rd(&c, NFABRIC_REG_ROUND(0, NFABRIC_ROUND_STATUS), 4) &
                   NFABRIC_RSTAT_INCOMPLETE),
                  "refused store: a write refused (STATE) while a peer is "
                  "stopped inside its stripe leaves the round INCOMPLETE "
                  "(ROUND_STATUS 0x%" PRIx64 ")",
                  rd(&c, NFABRIC_REG_ROUND(0, NFABRIC_ROUND_STATUS), 4));
        TAP_CHECK(WIFSTOPPED(st) && first >= NFABRIC_SHARED_LOCK_MS - 50 &&
                  again[0] < NFABRIC_SHARED_LOCK_MS / 2 &&
                  again[1] < NFABRIC_SHARED_LOCK_MS / 2 &&
                  again[2] < NFABRIC_SHARED_LOCK_MS / 2,
                  "stuck: a stopped holder of stripe 1 costs %lld ms once, "
                  "then %lld/%lld/%lld ms while stripe 2 is taken in between",
                  (long long)first, (long long)again[0], (long long)again[1],
                  (long long)again[2]);
    }
    kill(a, SIGCONT);
    st = wait_child(a);
    wr(&c, NFABRIC_REG_CTRL, NFABRIC_CTRL_CLEAR_ERROR, 4);
    nfabric_ctrl_mem_access(&c, W_BASE + 0x100, (uint8_t *)&v, 8, true);
    TAP_CHECK(st == 0 && rd(&c, NFABRIC_REG_LAST_ERROR, 4) == 0,
              "stuck: once the holder went on, stripe 1 is served");
    nfabric_shared_detach(sh, fd, 0);
}

/* ---- a holder killed with a lock ----------------------------------------- */

static void test_dead_holder(void)
{
    NFabricCtrl c;
    NFabricShared *sh;
    uint64_t v = ~0ull;
    int fd;
    pid_t pid;

    unlink(state_path);
    memset(ram, 0, MEM_SIZE);
    sh = head_up(&c, 0, 2, &fd);
    win_set(&c, 0, W_BASE, W_SIZE, W_CTRS, NFABRIC_PATH_GBINARY, 8);
    win_set(&c, 3, 0x30000, 0x400, 0x300000, NFABRIC_PATH_GBINARY, 8);

    /* Head 1 dies holding window 0's lock (mid-access). */
    pid = fork();
    if (pid == 0) {
        NFabricCtrl me;
        int f;

        NFabricHeld held;

        head_up(&me, 1, 2, &f);
        nfabric_ctrl_mem_access(&me, W_BASE, (uint8_t *)&v, 8, true);
        /* As inside its next access: the stripe of its first 8 bytes. */
        nfabric_shared_lock_span(me.sh, me.lock_token, 0, W_SIZE, 0, 8, &held);
        raise(SIGKILL);
    }
    wait_child(pid);
    /* Head 0 writes there: the lock is taken over, the round flagged. */
    nfabric_ctrl_mem_access(&c, W_BASE, (uint8_t *)&v, 8, true);
    TAP_CHECK(nfabric_counter_get(ram + W_CTRS, 8, 0) == 2 &&
              sh->round[0].incomplete && sh->lock_repairs == 1 &&
              (rd(&c, NFABRIC_REG_ROUND(0, NFABRIC_ROUND_STATUS), 4) &
               NFABRIC_RSTAT_INCOMPLETE),
              "dead holder: a window lock left by a killed head is taken over, "
              "the round reads INCOMPLETE");
    TAP_CHECK(sh->head[1].state == NFABRIC_HEAD_GONE && sh->lost_mask == 2,
              "dead holder: the killed head is found gone");

    /* A head dies in the middle of reconfiguring window 3. */
    pid = fork();
    if (pid == 0) {
        NFabricCtrl me;
        int f;

        head_up(&me, 1, 2, &f);
        nfabric_shared_lock_job(sh, 0);
        nfabric_shared_lock_win(sh, 3);
        sh->job[0].busy = 3;
        nfabric_shared_gen_bump(sh, 0);     /* odd: the table is changing */
        raise(SIGKILL);
    }
    wait_child(pid);
    v = 0x0f0f0f0f0f0f0f0full;
    nfabric_ctrl_mem_access(&c, 0x30000, (uint8_t *)&v, 8, true);
    TAP_CHECK((sh->gen[0] & 1) == 0 && !(sh->enabled_mask & 8) &&
              sh->round[3].incomplete && sh->job[0].busy == -1 &&
              !memcmp(ram + 0x30000, &v, 8),
              "dead holder: a reconfiguration left half-done is undone (window "
              "disabled, INCOMPLETE), the next access is served");
    nfabric_shared_detach(sh, fd, 0);
}

/* ---- rounds and reset ------------------------------------------------------ */

static void test_rounds_reset(void)
{
    NFabricCtrl c0;
    NFabricShared *sh;
    uint32_t st, seq;
    int fd, p[2];
    pid_t pid;
    char ok;

    unlink(state_path);
    sh = head_up(&c0, 0, 2, &fd);
    win_set(&c0, 0, W_BASE, W_SIZE, W_CTRS, NFABRIC_PATH_GBINARY, 8);
    seq = (uint32_t)rd(&c0, NFABRIC_REG_ROUND(0, NFABRIC_ROUND_SEQ), 4);
    wr(&c0, NFABRIC_REG_ROUND(0, NFABRIC_ROUND_COMPLETE), seq, 4);
    st = (uint32_t)rd(&c0, NFABRIC_REG_ROUND(0, NFABRIC_ROUND_STATUS), 4);
    TAP_CHECK(!(st & NFABRIC_RSTAT_ALL_DONE) &&
              (st & NFABRIC_RSTAT_EXPECT_MASK) >> NFABRIC_RSTAT_EXPECT_SHIFT == 2,
              "rounds: a head that never attached is still expected "
              "(status 0x%x)", st);
    wr(&c0, NFABRIC_REG_ROUND(0, NFABRIC_ROUND_COMPLETE), seq + 1, 4);
    TAP_CHECK(c0.last_error == NFABRIC_ERR_ROUND,
              "rounds: completing a round that is not current is refused");

    /* Head 1 in a child: completes, is reset, reads the round intact. */
    pipe(p);
    pid = fork();
    if (pid == 0) {
        NFabricCtrl me;
        int f;

        head_up(&me, 1, 2, &f);
        wr(&me, NFABRIC_REG_ROUND(0, NFABRIC_ROUND_COMPLETE), seq, 4);
        nfabric_ctrl_reset(&me);
        ok = (rd(&me, NFABRIC_REG_ENABLED_MASK, 4) & 1) &&
             rd(&me, NFABRIC_REG_ROUND(0, NFABRIC_ROUND_SEQ), 4) == seq &&
             (rd(&me, NFABRIC_REG_ROUND(0, NFABRIC_ROUND_STATUS), 4) &
              NFABRIC_RSTAT_ALL_DONE) &&
             rd(&me, NFABRIC_REG_HEAD_INFO, 4) ==
             (1 | 2u << NFABRIC_HEAD_INFO_COUNT_SHIFT | NFABRIC_HEAD_INFO_SHARED);
        write(p[1], &ok, 1);
        pause();
        _exit(0);
    }
    ok = 0;
    read(p[0], &ok, 1);
    st = (uint32_t)rd(&c0, NFABRIC_REG_ROUND(0, NFABRIC_ROUND_STATUS), 4);
    TAP_CHECK(ok && (st & NFABRIC_RSTAT_ALL_DONE) &&
              rd(&c0, NFABRIC_REG_HEADS_LIVE, 4) == 3,
              "reset: a head's reset keeps the device's windows and round; "
              "all done (status 0x%x)", st);
    wr(&c0, NFABRIC_REG_WIN(0, NFABRIC_WIN_CMD), NFABRIC_WCMD_CLEAR, 4);
    TAP_CHECK(rd(&c0, NFABRIC_REG_ROUND(0, NFABRIC_ROUND_SEQ), 4) == seq + 1 &&
              rd(&c0, NFABRIC_REG_ROUND(0, NFABRIC_ROUND_DONE), 4) == 0,
              "rounds: CLEAR starts the next round");
    kill(pid, SIGKILL);
    wait_child(pid);
    TAP_CHECK(rd(&c0, NFABRIC_REG_HEADS_LIVE, 4) == 1 &&
              rd(&c0, NFABRIC_REG_HEADS_LOST, 4) == 2,
              "rounds: HEADS_LIVE and HEADS_LOST after head 1 is killed");
    nfabric_shared_detach(sh, fd, 0);
}

/* ---- posted windows (1.7): a head that dies mid-round ------------------- */

/*
 * Head 1 (a child with staging of its own) stores into a posted window's
 * staging, posts some of it (post) or nothing, and is killed before it
 * completes; head 0 completes.  Posted: the round is INCOMPLETE and the
 * posted bytes, only they, are in the counters.  Stored only: the round
 * ends ALL_DONE without head 1, whose stores reached no counter.  And two
 * heads' stagings are their own: head 0 never sees head 1's stores.
 */
static uint32_t posted_death(bool post, bool *counted_ok, bool *apart)
{
    NFabricCtrl c0;
    NFabricShared *sh;
    uint8_t *st0 = calloc(1, MEM_SIZE);
    uint32_t seq, status = 0;
    int fd, p[2];
    pid_t pid;
    char ready = 0;

    unlink(state_path);
    memset(ram, 0, MEM_SIZE);
    sh = head_up(&c0, 0, 2, &fd);
    nfabric_ctrl_set_staging(&c0, st0);
    wr(&c0, NFABRIC_REG_WIN(0, NFABRIC_WIN_DPA_BASE), W_BASE, 8);
    wr(&c0, NFABRIC_REG_WIN(0, NFABRIC_WIN_DPA_SIZE), W_SIZE, 8);
    wr(&c0, NFABRIC_REG_WIN(0, NFABRIC_WIN_COUNTERS), W_CTRS, 8);
    wr(&c0, NFABRIC_REG_WIN(0, NFABRIC_WIN_CTRL),
       NFABRIC_WCTRL(NFABRIC_PATH_GBINARY, 8, 0) | NFABRIC_WCTRL_ENABLE |
       NFABRIC_WCTRL_POSTED, 4);
    seq = (uint32_t)rd(&c0, NFABRIC_REG_ROUND(0, NFABRIC_ROUND_SEQ), 4);
    if (pipe(p)) {
        abort();
    }
    pid = fork();
    if (pid == 0) {
        NFabricCtrl me;
        uint8_t *st1 = calloc(1, MEM_SIZE);
        int f;

        head_up(&me, 1, 2, &f);
        nfabric_ctrl_set_staging(&me, st1);
        memset(st1 + W_BASE, 0xff, W_SIZE);     /* every sign +1 */
        if (post) {
            wr(&me, NFABRIC_REG_POST(0, NFABRIC_STAGE_OFF), 0, 4);
            wr(&me, NFABRIC_REG_POST(0, NFABRIC_POST), 64, 4);
        }
        ready = 1;
        if (write(p[1], &ready, 1) != 1) {
            _exit(1);
        }
        pause();
        _exit(0);
    }
    if (read(p[0], &ready, 1) != 1) {
        ready = 0;
    }
    kill(pid, SIGKILL);
    wait_child(pid);
    close(p[0]);
    close(p[1]);
    wr(&c0, NFABRIC_REG_ROUND(0, NFABRIC_ROUND_COMPLETE), seq, 4);
    for (int k = 0; k < 200; k++) {
        status = (uint32_t)rd(&c0, NFABRIC_REG_ROUND(0, NFABRIC_ROUND_STATUS), 4);
        if (status & NFABRIC_RSTAT_ALL_DONE) {
            break;
        }
        usleep(10000);
    }
    /* 64 posted bytes: elements 0..511 at +1, the rest untouched. */
    *counted_ok = ready == 1;
    for (uint64_t e = 0; e < W_SIZE * 8; e++) {
        *counted_ok &= nfabric_counter_get(ram + W_CTRS, 8, e) ==
                       (post && e < 512 ? 1 : 0);
    }
    *apart = st0[W_BASE] == 0;
    nfabric_shared_detach(sh, fd, 0);
    free(st0);
    return status;
}

static void test_posted_death(void)
{
    bool counted, apart;
    uint32_t st = posted_death(true, &counted, &apart);

    TAP_CHECK((st & NFABRIC_RSTAT_ALL_DONE) && (st & NFABRIC_RSTAT_INCOMPLETE) &&
              counted && apart,
              "posted: a head killed after a POST, before completing: the "
              "round ends INCOMPLETE, its 64 posted bytes counted, no more; "
              "its staging is its own (status 0x%x)", st);
    st = posted_death(false, &counted, &apart);
    TAP_CHECK((st & NFABRIC_RSTAT_ALL_DONE) && !(st & NFABRIC_RSTAT_INCOMPLETE) &&
              counted && apart,
              "posted: a head killed with stores but no POST contributed "
              "nothing: the round ends without it, not INCOMPLETE "
              "(status 0x%x)", st);
}

/* ---- interrupts (1.8): events of other heads ---------------------------- */

/*
 * Head 0 enables window 0's done and INCOMPLETE interrupts.  Head 1 (a
 * child) completes the round: head 0's event_gen moves (its wait returns
 * at once) and its scan asks for one message, ALL_DONE.  Next round head
 * 1 writes and is killed before completing; head 0 completes: the scan
 * finds it dead and asks for one message, with both bits.
 */
static double ms_now(void);

static void test_irq_heads(void)
{
    NFabricCtrl c0;
    NFabricShared *sh;
    uint32_t seq, gen, st;
    int fd, p[2], q[2];
    pid_t pid;
    char ready = 0;
    double t0, waited;
    bool first, again;

    unlink(state_path);
    sh = head_up(&c0, 0, 2, &fd);
    nfabric_ctrl_set_irq(&c0, 8);
    win_set(&c0, 0, W_BASE, W_SIZE, W_CTRS, NFABRIC_PATH_GBINARY, 8);
    wr(&c0, NFABRIC_REG_IRQ_ENABLE,
       NFABRIC_IRQ_DONE(0) | NFABRIC_IRQ_INCOMPLETE(0), 4);
    seq = (uint32_t)rd(&c0, NFABRIC_REG_ROUND(0, NFABRIC_ROUND_SEQ), 4);
    wr(&c0, NFABRIC_REG_ROUND(0, NFABRIC_ROUND_COMPLETE), seq, 4);
    TAP_CHECK(!nfabric_ctrl_irq_scan(&c0), "irq: head 0 alone completed: "
              "head 1 is expected, no message");
    gen = nfabric_shared_event_gen(sh);
    if (pipe(p) || pipe(q)) {
        abort();
    }
    pid = fork();
    if (pid == 0) {
        NFabricCtrl me;
        int f;

        head_up(&me, 1, 2, &f);
        usleep(50000);
        wr(&me, NFABRIC_REG_ROUND(0, NFABRIC_ROUND_COMPLETE), seq, 4);
        if (read(p[0], &ready, 1) != 1) {
            _exit(1);
        }
        /* The next round: a contribution, then killed before completing. */
        wr(&me, NFABRIC_REG_WIN(0, NFABRIC_WIN_CMD), NFABRIC_WCMD_CLEAR, 4);
        nfabric_ctrl_mem_access(&me, W_BASE, (uint8_t *)"\xff", 1, true);
        ready = 1;
        if (write(q[1], &ready, 1) != 1) {
            _exit(1);
        }
        pause();
        _exit(0);
    }
    t0 = ms_now();
    nfabric_shared_event_wait(sh, gen, 5000);
    waited = ms_now() - t0;
    first = nfabric_ctrl_irq_scan(&c0);
    again = nfabric_ctrl_irq_scan(&c0);
    TAP_CHECK(waited < 2000 && first && !again &&
              rd(&c0, NFABRIC_REG_IRQ_STATUS, 4) == NFABRIC_IRQ_DONE(0),
              "irq: head 1's completion woke head 0's wait after %.0f ms; "
              "one message, IRQ_STATUS ALL_DONE", waited);
    wr(&c0, NFABRIC_REG_IRQ_STATUS, NFABRIC_IRQ_DONE(0), 4);
    if (write(p[1], &ready, 1) != 1) {
        ready = 0;
    }
    ready = 0;
    if (read(q[0], &ready, 1) != 1) {
        ready = 0;
    }
    kill(pid, SIGKILL);
    wait_child(pid);
    seq = (uint32_t)rd(&c0, NFABRIC_REG_ROUND(0, NFABRIC_ROUND_SEQ), 4);
    wr(&c0, NFABRIC_REG_ROUND(0, NFABRIC_ROUND_COMPLETE), seq, 4);
    first = nfabric_ctrl_irq_scan(&c0);
    st = (uint32_t)rd(&c0, NFABRIC_REG_IRQ_STATUS, 4);
    TAP_CHECK(ready == 1 && first && st == (NFABRIC_IRQ_DONE(0) |
                                            NFABRIC_IRQ_INCOMPLETE(0)) &&
              !nfabric_ctrl_irq_scan(&c0),
              "irq: head 1 killed mid-round: head 0's scan finds it, one "
              "message, ALL_DONE and INCOMPLETE (status 0x%x)", st);
    {
        NFabricFault f[8];
        unsigned n = nfabric_ctrl_faults(&c0, f, 8);
        bool lost = false, inc = false;

        for (unsigned k = 0; k < n; k++) {
            lost |= f[k].kind == NFABRIC_EVENT_HEAD_LOST && f[k].head == 1;
            inc |= f[k].kind == NFABRIC_EVENT_INCOMPLETE && f[k].window == 0 &&
                   f[k].seq == seq && f[k].head == 1;
        }
        TAP_CHECK(n == 2 && lost && inc && nfabric_ctrl_faults(&c0, f, 8) == 0,
                  "faults: head 0 reports head 1 lost and window 0's round %u "
                  "INCOMPLETE (head 1's contribution missing), once each "
                  "(%u faults)", seq, n);
    }
    close(p[0]);
    close(p[1]);
    close(q[0]);
    close(q[1]);
    nfabric_shared_detach(sh, fd, 0);
}

/* ---- the fuzz finding of issue 21 -------------------------------------- */

static void test_fp32_counters(void)
{
    NFabricCtrl c;
    NFabricShared *sh;
    uint64_t v = 0x0123456789abcdefull, back = 0;
    uint32_t err;
    int fd;

    unlink(state_path);
    sh = head_up(&c, 0, 1, &fd);
    /* As fuzz-shared's crash-19b68f72: COUNTERS far past device memory. */
    err = win_set(&c, 0, 0, 0x2e80, 0xff000000ull, NFABRIC_PATH_FP32, 0);
    nfabric_ctrl_mem_access(&c, 0x40, (uint8_t *)&v, 8, true);
    nfabric_ctrl_mem_access(&c, 0x40, (uint8_t *)&back, 8, false);
    TAP_CHECK(err == NFABRIC_ERR_NONE && sh->enabled_mask == 1 &&
              rd(&c, NFABRIC_REG_WIN(0, NFABRIC_WIN_COUNTERS), 8) ==
              0xff000000ull && back == v && !c.failed,
              "fp32: an FP32 window's COUNTERS is stored, never checked or "
              "used (error %u, read back 0x%" PRIx64 ")", err, back);
    nfabric_shared_detach(sh, fd, 0);
}

/* ---- a corrupted or truncated state file ------------------------------- */

enum {
    CORRUPT_GEN,            /* an odd table sequence count, nobody busy */
    CORRUPT_WINDOW,         /* an enabled window past device memory */
    CORRUPT_MASK,           /* enabled bits of windows the device lacks */
    CORRUPT_LOCK_KIND,      /* a window lock of another kind */
    CORRUPT_IDENTITY,       /* the state made anew under the head */
    CORRUPT_TRUNCATE,       /* the file truncated under the mapping */
    CORRUPT_TRUNCATE_REG,   /* the same, found by a register write */
    CORRUPT_TRUNCATE0,      /* truncated to nothing: every access SIGBUS */
    CORRUPT_TRUNCATE0_BLOCKED, /* the same, met by a thread blocking signals */
    CORRUPT_LOCK_HELD,      /* a stripe this head holds and never releases */
    CORRUPT_LOCK_DEAD,      /* a stripe "held" by a head that is not alive */
    CORRUPT_NUM
};

static const char *const corrupt_names[CORRUPT_NUM] = {
    "an odd table sequence count",
    "a garbage window entry (past device memory)",
    "an enabled mask naming windows the device lacks",
    "a window lock of another kind",
    "another state identity",
    "the file truncated under the mapping (memory access)",
    "the file truncated under the mapping (register write)",
    "the file truncated to 0 bytes under the mapping (SIGBUS)",
    "the same, met by a thread that blocks every signal (as QEMU's vCPUs)",
    "a window stripe this head holds and never releases",
    "a window stripe held by a head that is not alive",
};

typedef struct CorruptResult {
    int64_t ms;             /* the access after the corruption */
    uint64_t val;           /* what it read */
    uint32_t head_info, last_error, failed, enabled_after, round_status;
    uint64_t repairs;
    char failure[256];
} CorruptResult;

static int64_t now_ms(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static NFabricCtrl *blocked_ctrl;

static void *blocked_access(void *arg)
{
    nfabric_ctrl_mem_access(blocked_ctrl, W_BASE, arg, 8, false);
    return NULL;
}

/* In a child: attach, enable window 0, corrupt as k, access, report. */
static void corrupt_child(unsigned k, int out)
{
    CorruptResult r;
    NFabricCtrl c;
    NFabricShared *sh;
    uint64_t v = 0x5555555555555555ull;
    int fd;
    int64_t t0;

    memset(&r, 0, sizeof(r));
    sh = head_up(&c, 0, 2, &fd);
    if (win_set(&c, 0, W_BASE, W_SIZE, W_CTRS, NFABRIC_PATH_GBINARY, 8)) {
        _exit(3);
    }
    nfabric_ctrl_mem_access(&c, W_BASE, (uint8_t *)&v, 8, true);
    switch (k) {
    case CORRUPT_GEN:
        sh->gen[0] |= 1;
        break;
    case CORRUPT_WINDOW:
        sh->win[0].dpa_base = MEM_SIZE - 64;    /* size 0x400: past the end */
        sh->gen[0] += 2;
        break;
    case CORRUPT_MASK:
        sh->enabled_mask |= 0xffff0000u;
        sh->gen[0] += 2;
        break;
    case CORRUPT_LOCK_KIND:
        /* No head has index 0x7e: not a word a head writes. */
        sh->stripe[0][0].word = 0x7fffffff;
        break;
    case CORRUPT_IDENTITY:
        sh->state_id ^= 1;
        break;
    case CORRUPT_TRUNCATE:
    case CORRUPT_TRUNCATE_REG:
    case CORRUPT_TRUNCATE0:
    case CORRUPT_TRUNCATE0_BLOCKED:
        if (ftruncate(fd, k >= CORRUPT_TRUNCATE0 ? 0 : 100) != 0) {
            _exit(4);
        }
        break;
    case CORRUPT_LOCK_HELD:
        /* As if another thread of this head held it, stopped. */
        sh->stripe[0][0].word = nfabric_shared_token(sh);
        break;
    case CORRUPT_LOCK_DEAD:
        /* Head 1, never attached here: its live byte is free. */
        sh->stripe[0][0].word = NFABRIC_STRIPE_EPOCH(7) | 2;
        break;
    }
    if (k == CORRUPT_TRUNCATE_REG || k == CORRUPT_IDENTITY) {
        wr(&c, NFABRIC_REG_WIN(0, NFABRIC_WIN_CMD), NFABRIC_WCMD_CLEAR, 4);
    } else if (k == CORRUPT_TRUNCATE || k == CORRUPT_TRUNCATE0) {
        /* The first access meets the SIGBUS (and lives). */
        nfabric_ctrl_mem_access(&c, W_BASE, (uint8_t *)&r.val, 8, false);
    } else if (k == CORRUPT_TRUNCATE0_BLOCKED) {
        pthread_t t;
        sigset_t all, old;

        /* As QEMU creates its threads: every signal blocked. */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        blocked_ctrl = &c;
        pthread_create(&t, NULL, blocked_access, &r.val);
        pthread_join(t, NULL);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    t0 = now_ms();
    nfabric_ctrl_mem_access(&c, W_BASE, (uint8_t *)&r.val, 8, false);
    r.ms = now_ms() - t0;
    r.head_info = (uint32_t)rd(&c, NFABRIC_REG_HEAD_INFO, 4);
    r.last_error = (uint32_t)rd(&c, NFABRIC_REG_LAST_ERROR, 4);
    r.enabled_after = (uint32_t)rd(&c, NFABRIC_REG_ENABLED_MASK, 4);
    r.round_status = (uint32_t)rd(&c, NFABRIC_REG_ROUND(0, NFABRIC_ROUND_STATUS), 4);
    r.repairs = sh->lock_repairs;
    r.failed = c.failed;
    snprintf(r.failure, sizeof(r.failure), "%s", c.failure);
    if (write(out, &r, sizeof(r)) != (ssize_t)sizeof(r)) {
        _exit(5);
    }
    _exit(0);
}

static void test_corrupt(void)
{
    for (unsigned k = 0; k < CORRUPT_NUM; k++) {
        CorruptResult r;
        int p[2], st;
        pid_t pid;
        bool transient = k == CORRUPT_LOCK_HELD;

        unlink(state_path);
        memset(&r, 0, sizeof(r));
        if (pipe(p) != 0) {
            abort();
        }
        pid = fork();
        if (pid == 0) {
            close(p[0]);
            corrupt_child(k, p[1]);
        }
        close(p[1]);
        if (read(p[0], &r, sizeof(r)) != (ssize_t)sizeof(r)) {
            memset(&r, 0, sizeof(r));
            r.ms = -1;
        }
        close(p[0]);
        st = wait_child(pid);
        if (k == CORRUPT_LOCK_DEAD) {
            /* Taken over at once; the round says a write may be partial. */
            TAP_CHECK(st == 0 && r.ms >= 0 && r.ms < NFABRIC_SHARED_LOCK_MS / 2 &&
                      r.val == 0x5555555555555555ull && r.last_error == 0 &&
                      !r.failed && r.repairs == 1 &&
                      (r.round_status & NFABRIC_RSTAT_INCOMPLETE),
                      "corrupt: %s: taken over in %lld ms, the access served "
                      "(reads 0x%" PRIx64 ", LAST_ERROR %u), 1 repair (%" PRIu64
                      "), the round INCOMPLETE (ROUND_STATUS 0x%x)",
                      corrupt_names[k], (long long)r.ms, r.val, r.last_error,
                      r.repairs, r.round_status);
            continue;
        }
        if (transient) {
            /* Not corrupt for good: one access waits the bound, no more. */
            TAP_CHECK(st == 0 && r.ms >= NFABRIC_SHARED_LOCK_MS - 50 &&
                      r.ms < 3 * NFABRIC_SHARED_LOCK_MS &&
                      r.val == UINT64_MAX && r.last_error == NFABRIC_ERR_STATE &&
                      !(r.head_info & NFABRIC_HEAD_INFO_STATE_FAILED),
                      "corrupt: %s: the access gives up after %lld ms (bound "
                      "%u ms), reads all-ones, STATE; the head stays usable "
                      "(exit %d)", corrupt_names[k], (long long)r.ms,
                      NFABRIC_SHARED_LOCK_MS, st);
            continue;
        }
        TAP_CHECK(st == 0 && r.ms >= 0 && r.ms < 2000 && r.failed &&
                  r.val == UINT64_MAX && r.last_error == NFABRIC_ERR_STATE &&
                  (r.head_info & NFABRIC_HEAD_INFO_STATE_FAILED) &&
                  r.enabled_after == 0,
                  "corrupt: %s: no crash or hang (exit %d, %lld ms); the "
                  "head refuses accesses (reads 0x%" PRIx64 ", LAST_ERROR %u, "
                  "HEAD_INFO 0x%x): %s", corrupt_names[k], st,
                  (long long)r.ms, r.val, r.last_error, r.head_info,
                  r.failure);
    }
    unlink(state_path);
}

/* Attaching to files that are not (or no longer) whole state files. */
static void test_corrupt_attach(void)
{
    NFabricAttach a = attach_args(1, 2);
    NFabricAttachHow how;
    NFabricShared *sh0, *sh;
    char err[256] = "";
    int fd0, fd;

    unlink(state_path);
    if (nfabric_shared_attach(&a, &sh0, &fd0, &how, err, sizeof(err))) {
        abort();
    }
    /* Truncated to nothing while head 1 lives: never made anew. */
    truncate(state_path, 0);
    a = attach_args(0, 2);
    TAP_CHECK(nfabric_shared_attach(&a, &sh, &fd, &how, err, sizeof(err)) != 0 &&
              strstr(err, "truncated under them"),
              "corrupt attach: an emptied file with a live head is refused "
              "(%s)", err);
    truncate(state_path, 4096);
    TAP_CHECK(nfabric_shared_attach(&a, &sh, &fd, &how, err, sizeof(err)) != 0 &&
              strstr(err, "4096 bytes"),
              "corrupt attach: a truncated file is refused (%s)", err);
    /* Zeros of the right size while head 1 lives: refused too. */
    truncate(state_path, sizeof(NFabricShared));
    TAP_CHECK(nfabric_shared_attach(&a, &sh, &fd, &how, err, sizeof(err)) != 0 &&
              strstr(err, "not a state file"),
              "corrupt attach: a zeroed file with a live head is refused (%s)",
              err);
    nfabric_shared_detach(sh0, fd0, 1);
    unlink(state_path);
}

/* ---- liveness is the process's, not the thread's ---------------------- */

static NFabricCtrl thread_ctrl;
static NFabricShared *thread_sh;
static int thread_fd;

static void *attach_thread(void *arg)
{
    (void)arg;
    thread_sh = head_up(&thread_ctrl, 0, 2, &thread_fd);
    win_set(&thread_ctrl, 2, W_BASE, W_SIZE, W_CTRS, NFABRIC_PATH_GBINARY, 8);
    return NULL;            /* the thread ends; the head stays attached */
}

static void test_thread_liveness(void)
{
    pthread_t t;
    NFabricShared *sh;
    NFabricAttachHow how;
    char err[256];
    int p[2], fd, st;
    uint32_t res[3] = { 0, 0, 0 };
    pid_t pid;

    unlink(state_path);
    pthread_create(&t, NULL, attach_thread, NULL);
    pthread_join(t, NULL);
    if (pipe(p) != 0) {
        abort();
    }
    pid = fork();
    if (pid == 0) {
        NFabricAttach b = attach_args(1, 2);
        NFabricCtrl c;

        if (nfabric_shared_attach(&b, &sh, &fd, &how, err, sizeof(err))) {
            _exit(2);
        }
        nfabric_ctrl_init(&c, ram, MEM_SIZE, &tparams, NULL, NULL);
        nfabric_ctrl_use_shared(&c, sh, 1);
        res[0] = how;
        res[1] = (uint32_t)rd(&c, NFABRIC_REG_ENABLED_MASK, 4);
        res[2] = (uint32_t)rd(&c, NFABRIC_REG_HEADS_LIVE, 4);
        write(p[1], res, sizeof(res));
        _exit(0);
    }
    close(p[1]);
    if (read(p[0], res, sizeof(res)) != (ssize_t)sizeof(res)) {
        res[0] = 99;
    }
    close(p[0]);
    st = wait_child(pid);
    TAP_CHECK(st == 0 && res[0] == NFABRIC_ATTACH_JOINED && res[1] == 4 &&
              res[2] == 3,
              "liveness: a head attached by a thread that ended is alive for a "
              "forked process: it joins (how %u, not re-initialised), window 2 "
              "stays enabled (mask 0x%x), both heads live (0x%x)",
              res[0], res[1], res[2]);
    TAP_CHECK(nfabric_shared_reap(thread_sh, 0) == 1 &&
              thread_sh->head[0].state == NFABRIC_HEAD_ATTACHED &&
              thread_sh->head[1].state == NFABRIC_HEAD_GONE,
              "liveness: the attaching thread's end did not make head 0 gone; "
              "the child's exit made head 1 gone");
    /* Another thread (this one) detaches it: the live byte is dropped. */
    nfabric_shared_detach(thread_sh, thread_fd, 0);
    {
        NFabricAttach b = attach_args(0, 2);

        err[0] = 0;
        TAP_CHECK(nfabric_shared_attach(&b, &sh, &fd, &how, err, sizeof(err)) == 0 &&
                  how == NFABRIC_ATTACH_REINIT,
                  "liveness: detached from another thread, no head is alive: "
                  "the next attach makes the state anew (%s)", err);
        nfabric_shared_detach(sh, fd, 0);
    }
    unlink(state_path);
}

/* ---- one device state per memory file ---------------------------------- */

static void test_one_state_per_memory(void)
{
    char other[600], err[1024] = "";
    NFabricAttach a = attach_args(0, 2), b;
    NFabricAttachHow how;
    NFabricShared *sh0, *sh;
    int fd0, fd;

    snprintf(other, sizeof(other), "%s/other.state", dir);
    unlink(state_path);
    unlink(other);
    if (nfabric_shared_attach(&a, &sh0, &fd0, &how, err, sizeof(err))) {
        abort();
    }
    b = attach_args(0, 2);
    b.path = other;
    TAP_CHECK(nfabric_shared_attach(&b, &sh, &fd, &how, err, sizeof(err)) != 0 &&
              strstr(err, other) && strstr(err, state_path) &&
              strstr(err, "one memory file belongs to one device state"),
              "one state per memory: a second state file over the memory of "
              "live heads is refused, naming both (%s)", err);
    /* The state file deleted and made anew under the live head. */
    unlink(state_path);
    a = attach_args(1, 2);
    err[0] = 0;
    TAP_CHECK(nfabric_shared_attach(&a, &sh, &fd, &how, err, sizeof(err)) != 0 &&
              strstr(err, "another device state") && strstr(err, state_path),
              "one state per memory: a state made anew (the old one deleted) "
              "over the memory of live heads is refused (%s)", err);
    nfabric_shared_detach(sh0, fd0, 0);
    err[0] = 0;
    /* (The refused attach above left a state nobody holds: made anew.) */
    TAP_CHECK(nfabric_shared_attach(&b, &sh, &fd, &how, err, sizeof(err)) == 0 &&
              how == NFABRIC_ATTACH_REINIT,
              "one state per memory: once no head of the first state lives, "
              "another state may take the memory (%s)", err);
    nfabric_shared_detach(sh, fd, 0);
    unlink(other);
    unlink(state_path);
}

/* ---- a head stopped (SIGSTOP) at the worst places ------------------------ */

#define S_WIN       2                   /* the stopped head's window */
#define S_BASE      0x20000ull
#define S_SIZE      0x8000ull           /* 256 KiB of 8-bit counters */
#define S_CTRS      0x200000ull
#define S_PLAIN     0x3000ull           /* in no window */

/* A head that stops itself (SIGSTOP) in the clear of window win, once armed. */
typedef struct StopAt {
    int armed;
    unsigned win;
} StopAt;

static void stop_hook(void *opaque, NFabricWinEvent ev, unsigned win,
                      uint32_t code)
{
    const StopAt *at = opaque;

    (void)code;
    if (ev == NFABRIC_WIN_EV_CLEAR && win == at->win && at->armed) {
        raise(SIGSTOP);
    }
}

static const NFabricCtrlOps stop_ops = { .window = stop_hook };

/*
 * Fork head 1: it enables window win (base, size, counters; G-Binary) or,
 * with clear, CLEARs it (enabled before), and stops in the window's clear.
 * Returns its pid once it is stopped, or -1.
 */
static pid_t head_stopped_in_clear(unsigned win, uint64_t base, uint64_t size,
                                   uint64_t ctrs, bool clear)
{
    pid_t pid = fork();
    int st;

    if (pid == 0) {
        StopAt at = { 0, win };
        NFabricCtrl me;
        int f;

        head_up(&me, 1, 2, &f);
        me.ops = &stop_ops;
        me.opaque = &at;
        at.armed = 1;
        if (clear) {
            wr(&me, NFABRIC_REG_WIN(win, NFABRIC_WIN_CMD), NFABRIC_WCMD_CLEAR, 4);
        } else if (win_set(&me, win, base, size, ctrs, NFABRIC_PATH_GBINARY,
                           8) != NFABRIC_ERR_NONE) {
            _exit(3);
        }
        _exit(rd(&me, NFABRIC_REG_LAST_ERROR, 4) == NFABRIC_ERR_NONE ? 0 : 4);
    }
    if (pid < 0 || waitpid(pid, &st, WUNTRACED) != pid || !WIFSTOPPED(st)) {
        return -1;
    }
    return pid;
}

/*
 * What the live head 0 gets while head 1 is stopped: a plain 8-byte write
 * and read, and a G-Binary write to window 0, each timed (ms); then, if
 * reg, a CLEAR of window 0 (the register write path), timed, and its error.
 */
typedef struct StopProbe {
    int64_t plain_ms, win_ms, reg_ms;
    bool plain_ok, win_ok;
    uint32_t reg_err;
} StopProbe;

static StopProbe stop_probe(NFabricCtrl *c, bool reg)
{
    StopProbe p = { 0 };
    uint64_t v = 0x1122334455667788ull, got = 0, ones = ~0ull;
    int32_t before = nfabric_counter_get(ram + W_CTRS, 8, 0);
    int64_t t;

    wr(c, NFABRIC_REG_CTRL, NFABRIC_CTRL_CLEAR_ERROR, 4);
    t = now_ms();
    nfabric_ctrl_mem_access(c, S_PLAIN, (uint8_t *)&v, 8, true);
    nfabric_ctrl_mem_access(c, S_PLAIN, (uint8_t *)&got, 8, false);
    p.plain_ms = now_ms() - t;
    p.plain_ok = got == v && !memcmp(ram + S_PLAIN, &v, 8);
    t = now_ms();
    nfabric_ctrl_mem_access(c, W_BASE, (uint8_t *)&ones, 8, true);
    p.win_ms = now_ms() - t;
    p.win_ok = nfabric_counter_get(ram + W_CTRS, 8, 0) == before + 1 &&
               rd(c, NFABRIC_REG_LAST_ERROR, 4) == NFABRIC_ERR_NONE;
    if (reg) {
        t = now_ms();
        wr(c, NFABRIC_REG_WIN(0, NFABRIC_WIN_CMD), NFABRIC_WCMD_CLEAR, 4);
        p.reg_ms = now_ms() - t;
        p.reg_err = (uint32_t)rd(c, NFABRIC_REG_LAST_ERROR, 4);
    }
    return p;
}

/* Fork head 1: it enables (or clears) window S_WIN and stops in it. */
static pid_t stopped_head(bool clear)
{
    return head_stopped_in_clear(S_WIN, S_BASE, S_SIZE, S_CTRS, clear);
}

static void test_stopped_head(void)
{
    NFabricCtrl c;
    NFabricShared *sh;
    StopProbe p;
    int64_t s_first = 0;
    pid_t pid;
    int fd, rc;

    unlink(state_path);
    memset(ram, 0, MEM_SIZE);
    memset(ram + S_CTRS, 0x5a, S_SIZE * 8);     /* zeroed by the enable */
    sh = head_up(&c, 0, 2, &fd);
    win_set(&c, 0, W_BASE, W_SIZE, W_CTRS, NFABRIC_PATH_GBINARY, 8);

    /* Stopped mid-enable: its counter area zeroed, the window unpublished. */
    pid = stopped_head(false);
    TAP_CHECK(pid > 0, "stopped head: head 1 stops in the middle of enabling "
              "a window with a 256 KiB counter area");
    p = stop_probe(&c, true);
    TAP_CHECK(p.plain_ok && p.win_ok && p.plain_ms < 100 && p.win_ms < 100,
              "stopped head: mid-enable, the others' plain memory (%" PRId64
              " ms) and other windows (%" PRId64 " ms) are served at once",
              p.plain_ms, p.win_ms);
    TAP_CHECK(p.reg_err == NFABRIC_ERR_STATE &&
              p.reg_ms <= NFABRIC_SHARED_LOCK_MS + 500,
              "stopped head: mid-enable, another head's register write waits "
              "at most the bound and is refused with STATE (%" PRId64 " ms, "
              "error %" PRIu32 ")", p.reg_ms, p.reg_err);
    {
        int64_t t;

        wr(&c, NFABRIC_REG_CTRL, NFABRIC_CTRL_CLEAR_ERROR, 4);
        t = now_ms();
        wr(&c, NFABRIC_REG_WIN(0, NFABRIC_WIN_CMD), NFABRIC_WCMD_CLEAR, 4);
        t = now_ms() - t;
        TAP_CHECK(p.reg_ms >= NFABRIC_SHARED_LOCK_MS - 50 &&
                  t <= NFABRIC_SHARED_STUCK_MS + 100 &&
                  rd(&c, NFABRIC_REG_LAST_ERROR, 4) == NFABRIC_ERR_STATE,
                  "stopped head: the lock's wait ran out once (%" PRId64
                  " ms); the next register write that needs it waits only "
                  "the short bound and is refused with STATE (%" PRId64
                  " ms)", p.reg_ms, t);
    }
    kill(pid, SIGCONT);
    rc = wait_child(pid);
    TAP_CHECK(rc == 0 && (sh->enabled_mask & (1u << S_WIN)) &&
              nfabric_counter_get(ram + S_CTRS, 8, 0) == 0 &&
              nfabric_counter_get(ram + S_CTRS, 8, S_SIZE * 8 - 1) == 0,
              "stopped head: continued, its enable completes (status %d, "
              "counters zero)", rc);
    wr(&c, NFABRIC_REG_CTRL, NFABRIC_CTRL_CLEAR_ERROR, 4);
    wr(&c, NFABRIC_REG_WIN(0, NFABRIC_WIN_CMD), NFABRIC_WCMD_CLEAR, 4);
    TAP_CHECK(rd(&c, NFABRIC_REG_LAST_ERROR, 4) == NFABRIC_ERR_NONE,
              "stopped head: once head 1 runs, the same register write "
              "succeeds (error %" PRIu64 ")",
              (uint64_t)rd(&c, NFABRIC_REG_LAST_ERROR, 4));

    /* Stopped mid-CLEAR of its window: window S_WIN's lock held. */
    pid = stopped_head(true);
    TAP_CHECK(pid > 0, "stopped head: head 1 stops in the middle of clearing "
              "its window");
    p = stop_probe(&c, false);
    TAP_CHECK(p.plain_ok && p.win_ok && p.plain_ms < 100 && p.win_ms < 100,
              "stopped head: mid-CLEAR, the others' plain memory (%" PRId64
              " ms) and other windows (%" PRId64 " ms) are served at once",
              p.plain_ms, p.win_ms);
    {
        uint64_t v = 0;
        int64_t t = now_ms();

        nfabric_ctrl_mem_access(&c, S_BASE, (uint8_t *)&v, 8, false);
        t = now_ms() - t;
        TAP_CHECK(v == UINT64_MAX && t <= NFABRIC_SHARED_LOCK_MS + 500 &&
                  rd(&c, NFABRIC_REG_LAST_ERROR, 4) == NFABRIC_ERR_STATE,
                  "stopped head: mid-CLEAR, an access to the window being "
                  "cleared waits at most the bound, reads all-ones and sets "
                  "STATE (%" PRId64 " ms)", t);
        s_first = t;
        t = now_ms();
        nfabric_ctrl_mem_access(&c, S_BASE, (uint8_t *)&v, 8, false);
        t = now_ms() - t;
        TAP_CHECK(s_first >= NFABRIC_SHARED_LOCK_MS - 50 &&
                  t <= NFABRIC_SHARED_STUCK_MS + 100 && v == UINT64_MAX,
                  "stopped head: mid-CLEAR, the next access to that window "
                  "waits only the short bound (%" PRId64 " ms after %" PRId64
                  " ms)", t, s_first);
    }
    kill(pid, SIGCONT);
    rc = wait_child(pid);
    TAP_CHECK(rc == 0, "stopped head: continued, its CLEAR completes "
              "(status %d)", rc);

    /* Taken again, the lock is no longer stuck: a new stop costs the bound. */
    {
        uint64_t v = 0;
        int64_t t;

        nfabric_ctrl_mem_access(&c, S_BASE, (uint8_t *)&v, 8, false);
        pid = stopped_head(true);
        t = now_ms();
        nfabric_ctrl_mem_access(&c, S_BASE, (uint8_t *)&v, 8, false);
        t = now_ms() - t;
        TAP_CHECK(pid > 0 && t >= NFABRIC_SHARED_LOCK_MS - 50 &&
                  t <= NFABRIC_SHARED_LOCK_MS + 500,
                  "stopped head: after the lock was taken again, a new stop "
                  "of its holder is waited for the whole bound again (%"
                  PRId64 " ms)", t);
        if (pid > 0) {
            kill(pid, SIGCONT);
            wait_child(pid);
        }
    }
    nfabric_shared_detach(sh, fd, 0);
}

/* ---- jobs set by a fabric manager: a hostile head in another job --------- */

#define J_PLAIN     0x8000ull           /* the victim's plain data */
#define J1_BASE     0x200000ull         /* job 1's memory: 1 MiB */
#define J1_OWN      0x300000ull         /* head 1's own 64 KiB */

/* What the attacker (head 1, job 1) saw; sent to the parent in a pipe. */
typedef struct Attack {
    uint32_t disable_err, clear_err, repoint_err, complete_err, select_err;
    uint32_t cover_err, cover_win_err, own_err;
    uint32_t write_data_err, write_ctrs_err, read_err;
    uint64_t read_plain, read_ctrs, reg_base, reg_status, reg_contrib;
    uint32_t enabled_mask, heads_live, job;
    uint64_t own_read;
} Attack;

static uint32_t last_err(NFabricCtrl *c)
{
    uint32_t e = (uint32_t)rd(c, NFABRIC_REG_LAST_ERROR, 4);

    wr(c, NFABRIC_REG_CTRL, NFABRIC_CTRL_CLEAR_ERROR, 4);
    return e;
}

static void attacker(int out)
{
    NFabricCtrl me;
    Attack a;
    uint64_t v = ~0ull;
    int f;

    memset(&a, 0, sizeof(a));
    head_up(&me, 1, 2, &f);
    wr(&me, NFABRIC_REG_WIN(0, NFABRIC_WIN_CTRL), 0, 4);
    a.disable_err = last_err(&me);
    wr(&me, NFABRIC_REG_WIN(0, NFABRIC_WIN_CMD), NFABRIC_WCMD_CLEAR, 4);
    a.clear_err = last_err(&me);
    wr(&me, NFABRIC_REG_WIN(0, NFABRIC_WIN_DPA_BASE), J_PLAIN, 8);
    a.repoint_err = last_err(&me);
    wr(&me, NFABRIC_REG_ROUND(0, NFABRIC_ROUND_COMPLETE), 1, 4);
    a.complete_err = last_err(&me);
    wr(&me, NFABRIC_REG_HEAD_SELECT, 0, 4);
    a.select_err = last_err(&me);
    /* Its own window, with a counter area over the victim's data. */
    win_set(&me, 8, J1_BASE, 0x400, J_PLAIN, NFABRIC_PATH_GBINARY, 8);
    a.cover_err = last_err(&me);
    a.cover_win_err = (uint32_t)rd(&me, NFABRIC_REG_WIN(8, NFABRIC_WIN_ERROR), 4);
    /* ... and one inside its job's memory: accepted. */
    a.own_err = win_set(&me, 8, J1_BASE, 0x400, J1_BASE + 0x10000,
                        NFABRIC_PATH_GBINARY, 8);
    nfabric_ctrl_mem_access(&me, W_BASE, (uint8_t *)&v, 8, true);
    a.write_data_err = last_err(&me);
    nfabric_ctrl_mem_access(&me, W_CTRS, (uint8_t *)&v, 8, true);
    a.write_ctrs_err = last_err(&me);
    nfabric_ctrl_mem_access(&me, J_PLAIN, (uint8_t *)&a.read_plain, 8, false);
    nfabric_ctrl_mem_access(&me, W_CTRS, (uint8_t *)&a.read_ctrs, 8, false);
    a.read_err = last_err(&me);
    a.reg_base = rd(&me, NFABRIC_REG_WIN(0, NFABRIC_WIN_DPA_BASE), 8);
    a.reg_status = rd(&me, NFABRIC_REG_ROUND(0, NFABRIC_ROUND_STATUS), 4);
    a.reg_contrib = rd(&me, NFABRIC_REG_WIN(0, NFABRIC_WIN_CONTRIB_WRITES), 8);
    a.enabled_mask = (uint32_t)rd(&me, NFABRIC_REG_ENABLED_MASK, 4);
    a.heads_live = (uint32_t)rd(&me, NFABRIC_REG_HEADS_LIVE, 4);
    a.job = (uint32_t)rd(&me, NFABRIC_REG_JOB, 4);
    v = 0x0123456789abcdefull;
    nfabric_ctrl_mem_access(&me, J1_OWN, (uint8_t *)&v, 8, true);
    nfabric_ctrl_mem_access(&me, J1_OWN, (uint8_t *)&a.own_read, 8, false);
    if (write(out, &a, sizeof(a)) != (ssize_t)sizeof(a)) {
        _exit(5);
    }
    _exit(0);
}

/*
 * Two jobs of one head each: head 0 and windows 0-7 job 0's, head 1 and
 * windows 8-15 job 1's; job 0's memory [0, 2 MiB).  The caller adds job
 * 1's ranges.
 */
static NFabricFm two_jobs_fm(void)
{
    NFabricFm fm;

    memset(&fm, 0, sizeof(fm));
    fm.assigned = 1;
    fm.head_job[0] = 0;
    fm.head_job[1] = 1;
    fm.job_windows[0] = 0x00ff;
    fm.job_windows[1] = 0xff00;
    fm.range[0] = (NFabricFmRange){ 0, 0x200000, 0, NFABRIC_FM_JOB_WIDE };
    fm.nranges = 1;
    return fm;
}

static NFabricFm jobs_fm(void)
{
    NFabricFm fm = two_jobs_fm();

    fm.range[1] = (NFabricFmRange){ J1_BASE, 0x100000, 1, NFABRIC_FM_JOB_WIDE };
    fm.range[2] = (NFabricFmRange){ J1_OWN, 0x10000, 1, 1 };
    fm.nranges = 3;
    return fm;
}

static void test_jobs(void)
{
    NFabricCtrl c;
    NFabricShared *sh;
    NFabricFm fm = jobs_fm(), bad;
    uint64_t v = ~0ull, plain = 0x5555aaaa5555aaaaull, got = 0;
    char err[512];
    Attack a;
    int fd, pfd[2], rc, refused = 0;
    uint32_t seq, st;
    pid_t pid;

    unlink(state_path);
    memset(ram, 0, MEM_SIZE);
    sh = head_up(&c, 0, 2, &fd);

    /* The fabric manager refuses what it must not write. */
    bad = fm; bad.range[1].base = 0x100000;             /* overlaps job 0 */
    refused += nfabric_shared_fm_write(state_path, &bad, err, sizeof(err)) != 0;
    bad = fm; bad.job_windows[1] = 0x0180;              /* window 7 twice */
    refused += nfabric_shared_fm_write(state_path, &bad, err, sizeof(err)) != 0;
    bad = fm; bad.range[2].size = MEM_SIZE;             /* past memory */
    refused += nfabric_shared_fm_write(state_path, &bad, err, sizeof(err)) != 0;
    bad = fm; bad.range[2].head = 0;                    /* owner of job 0 */
    refused += nfabric_shared_fm_write(state_path, &bad, err, sizeof(err)) != 0;
    bad = fm; bad.head_job[1] = 9;                      /* no such job */
    refused += nfabric_shared_fm_write(state_path, &bad, err, sizeof(err)) != 0;
    TAP_CHECK(refused == 5 && sh->fm.assigned == 0, "jobs: the fabric "
              "manager refuses overlapping ranges, a window in two jobs, a "
              "range past memory, an owner of another job, a job past the "
              "last (last: %s)", err);
    rc = nfabric_shared_fm_write(state_path, &fm, err, sizeof(err));
    TAP_CHECK(rc == 0 && sh->fm.assigned == 1 && !(sh->fm.gen & 1),
              "jobs: the fabric manager assigns job 0 (head 0, windows 0-7, "
              "2 MiB) and job 1 (head 1, windows 8-15, 1 MiB, 64 KiB its own) "
              "(%s)", rc ? err : "ok");

    /* The victim: a G-Binary round of its own, and plain data. */
    TAP_CHECK(win_set(&c, 0, W_BASE, W_SIZE, W_CTRS, NFABRIC_PATH_GBINARY, 8) ==
              NFABRIC_ERR_NONE, "jobs: the victim enables window 0 in its "
              "job's memory");
    nfabric_ctrl_mem_access(&c, W_BASE, (uint8_t *)&v, 8, true);
    nfabric_ctrl_mem_access(&c, J_PLAIN, (uint8_t *)&plain, 8, true);

    if (pipe(pfd) != 0) {
        TAP_CHECK(false, "jobs: pipe");
        return;
    }
    pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        attacker(pfd[1]);
    }
    close(pfd[1]);
    memset(&a, 0, sizeof(a));
    rc = read(pfd[0], &a, sizeof(a)) == (ssize_t)sizeof(a) ? wait_child(pid) : -1;
    close(pfd[0]);
    if (rc != 0) {
        wait_child(pid);
    }
    TAP_CHECK(rc == 0, "jobs: the attacker (head 1, job 1) ran (status %d)", rc);
    TAP_CHECK(a.disable_err == NFABRIC_ERR_OWNER &&
              a.clear_err == NFABRIC_ERR_OWNER &&
              a.repoint_err == NFABRIC_ERR_OWNER &&
              a.complete_err == NFABRIC_ERR_OWNER &&
              a.select_err == NFABRIC_ERR_OWNER,
              "jobs: the attacker's disable, CLEAR, re-point and ROUND_COMPLETE "
              "of the victim's window and HEAD_SELECT of the victim are "
              "refused with OWNER (%u %u %u %u %u)", a.disable_err,
              a.clear_err, a.repoint_err, a.complete_err, a.select_err);
    TAP_CHECK(a.cover_err == NFABRIC_ERR_OWNER &&
              a.cover_win_err == NFABRIC_ERR_OWNER &&
              a.own_err == NFABRIC_ERR_NONE,
              "jobs: its window with a counter area over the victim's data is "
              "refused with OWNER; one in its own job's memory is accepted");
    TAP_CHECK(a.write_data_err == NFABRIC_ERR_OWNER &&
              a.write_ctrs_err == NFABRIC_ERR_OWNER &&
              a.read_err == NFABRIC_ERR_OWNER && a.read_plain == UINT64_MAX &&
              a.read_ctrs == UINT64_MAX,
              "jobs: its writes to the victim's window and counters are "
              "dropped, its reads of the victim's data and counters return "
              "all-ones, each with OWNER");
    TAP_CHECK(a.reg_base == 0 && a.reg_status == 0 && a.reg_contrib == 0 &&
              a.enabled_mask == 0x100 && a.heads_live == 0x2 &&
              a.job == (1 | NFABRIC_JOB_ASSIGNED |
                        0xff00u << NFABRIC_JOB_WINDOWS_SHIFT),
              "jobs: it reads nothing of the victim's window (0s), sees only "
              "its job's windows (0x%x) and heads (0x%x); JOB reads 0x%08x",
              a.enabled_mask, a.heads_live, a.job);
    TAP_CHECK(a.own_read == 0x0123456789abcdefull,
              "jobs: it reads back what it wrote to its own range");

    /* The victim's results are its own, and its round needs only it. */
    nfabric_ctrl_mem_access(&c, J_PLAIN, (uint8_t *)&got, 8, false);
    seq = (uint32_t)rd(&c, NFABRIC_REG_ROUND(0, NFABRIC_ROUND_SEQ), 4);
    wr(&c, NFABRIC_REG_ROUND(0, NFABRIC_ROUND_COMPLETE), seq, 4);
    st = (uint32_t)rd(&c, NFABRIC_REG_ROUND(0, NFABRIC_ROUND_STATUS), 4);
    TAP_CHECK(got == plain && nfabric_counter_get(ram + W_CTRS, 8, 0) == 1 &&
              nfabric_counter_get(ram + W_CTRS, 8, 63) == 1 &&
              (sh->enabled_mask & 1) && sh->win[0].dpa_base == W_BASE &&
              rd(&c, NFABRIC_REG_WIN(0, NFABRIC_WIN_CONTRIB_WRITES), 8) == 1,
              "jobs: the victim's data, counts, window and contribution count "
              "are as it left them");
    TAP_CHECK((st & NFABRIC_RSTAT_ALL_DONE) && !(st & NFABRIC_RSTAT_INCOMPLETE) &&
              ((st >> NFABRIC_RSTAT_EXPECT_SHIFT) & 0xff) == 1,
              "jobs: the victim's round expects its job's one head and is "
              "done, clean (status 0x%x)", st);

    /* Back to the default: one job of every head. */
    rc = nfabric_shared_fm_write(state_path, NULL, err, sizeof(err));
    got = 0;
    nfabric_ctrl_mem_access(&c, J1_OWN, (uint8_t *)&got, 8, false);
    TAP_CHECK(rc == 0 && got == 0x0123456789abcdefull &&
              rd(&c, NFABRIC_REG_JOB, 4) == NFABRIC_JOB_WINDOWS_MASK &&
              rd(&c, NFABRIC_REG_ENABLED_MASK, 4) == 0x101,
              "jobs: with the assignment removed, every head reaches all "
              "memory and every window again");

    /* An assignment corrupted in the file fails the head, never crashes. */
    sh->fm.gen += 2;
    sh->fm.assigned = 1;
    sh->fm.nranges = 1;
    sh->fm.range[0] = (NFabricFmRange){ MEM_SIZE - 64, 128, 0, NFABRIC_FM_JOB_WIDE };
    nfabric_ctrl_mem_access(&c, J_PLAIN, (uint8_t *)&got, 8, false);
    TAP_CHECK(c.failed && got == UINT64_MAX &&
              rd(&c, NFABRIC_REG_LAST_ERROR, 4) == NFABRIC_ERR_STATE,
              "jobs: a corrupted assignment (a range past memory) fails the "
              "head with STATE: %s", c.failure);
    nfabric_shared_detach(sh, fd, 0);
}

/* ---- a reassignment leaves no window over another job's memory ---------- */

static void test_reassign(void)
{
    NFabricCtrl c0, c1;
    NFabricShared *sh, *sh1;
    NFabricFm fm = jobs_fm(), bad, split;
    uint64_t v = ~0ull, plain = 0x1122334455667788ull, got = 0;
    char err[512], e1[512], e2[512], e3[512], e4[512];
    int fd0, fd1, rc[4];
    uint32_t gen;

    unlink(state_path);
    memset(ram, 0, MEM_SIZE);
    sh = head_up(&c0, 0, 2, &fd0);
    sh1 = head_up(&c1, 1, 2, &fd1);
    (void)sh1;
    TAP_CHECK(nfabric_shared_fm_write(state_path, &fm, err, sizeof(err)) == 0,
              "reassign: jobs 0 and 1 assigned");
    /* Job 1's G-Binary window 9 in its memory, counters there too. */
    TAP_CHECK(win_set(&c1, 9, J1_BASE + 0x1000, 0x400, J1_BASE + 0x80000,
                      NFABRIC_PATH_GBINARY, 8) == NFABRIC_ERR_NONE,
              "reassign: job 1 enables window 9 (data and counters in its "
              "memory)");
    gen = sh->fm.gen;

    bad = fm;
    bad.range[1].job = 0;                       /* job 1's memory to job 0 */
    rc[0] = nfabric_shared_fm_write(state_path, &bad, e1, sizeof(e1));
    bad = fm;
    bad.job_windows[0] = 0x02ff;                /* slot 9 to job 0 */
    bad.job_windows[1] = 0xfd00;
    rc[1] = nfabric_shared_fm_write(state_path, &bad, e2, sizeof(e2));
    bad = fm;
    bad.job_windows[1] = 0xfd00;                /* slot 9 to no job */
    rc[2] = nfabric_shared_fm_write(state_path, &bad, e3, sizeof(e3));
    split = fm;                                 /* only the counters' half */
    split.range[1].size = 0x80000;
    split.range[3] = (NFabricFmRange){ J1_BASE + 0x80000, 0x80000, 0,
                                       NFABRIC_FM_JOB_WIDE };
    split.nranges = 4;
    rc[3] = nfabric_shared_fm_write(state_path, &split, e4, sizeof(e4));
    TAP_CHECK(rc[0] && strstr(e1, "window 9 of job 1 is enabled over "
                              "0x201000+0x400, which the assignment does not "
                              "leave to job 1"),
              "reassign: giving the memory under job 1's enabled window to "
              "job 0 is refused, naming the window and the range: %s", e1);
    TAP_CHECK(rc[1] && strstr(e2, "window 9 is enabled in job 1") &&
              rc[2] && strstr(e3, "window 9 is enabled") &&
              strstr(e3, "to no job"),
              "reassign: moving an enabled window's slot to another job, or "
              "to none, is refused: %s; %s", e2, e3);
    TAP_CHECK(rc[3] && strstr(e4, "window 9 of job 1 is enabled with its "
                              "counter area over 0x280000+"),
              "reassign: giving away only the memory under its counter area "
              "is refused too: %s", e4);
    TAP_CHECK(sh->fm.gen == gen && sh->fm.range[1].job == 1 &&
              (sh->enabled_mask & (1u << 9)),
              "reassign: a refused assignment changes nothing (the assignment "
              "and the window as they were)");

    /* Job 1 disables its window: now the memory may go. */
    wr(&c1, NFABRIC_REG_WIN(9, NFABRIC_WIN_CTRL), 0, 4);
    bad = fm;
    bad.range[1].job = 0;
    rc[0] = nfabric_shared_fm_write(state_path, &bad, err, sizeof(err));
    nfabric_ctrl_mem_access(&c0, J1_BASE + 0x1000, (uint8_t *)&plain, 8, true);
    nfabric_ctrl_mem_access(&c0, J1_BASE + 0x1000, (uint8_t *)&got, 8, false);
    nfabric_ctrl_mem_access(&c1, J1_BASE + 0x1000, (uint8_t *)&v, 8, true);
    TAP_CHECK(rc[0] == 0 && got == plain &&
              rd(&c1, NFABRIC_REG_LAST_ERROR, 4) == NFABRIC_ERR_OWNER &&
              !memcmp(ram + J1_BASE + 0x1000, &plain, 8),
              "reassign: once job 1 disabled window 9 the memory is job 0's: "
              "job 0 writes and reads it, job 1's write is dropped with "
              "OWNER (%s)", rc[0] ? err : "ok");

    /*
     * A state file written by something other than the fabric manager:
     * window 0, enabled by job 0 over its memory, put in job 1's slots.
     * A head sees only its job's windows: to job 0 the memory is plain
     * memory of its own (no count changes); job 1 does not reach it.
     */
    TAP_CHECK(win_set(&c0, 0, W_BASE, W_SIZE, W_CTRS, NFABRIC_PATH_GBINARY,
                      8) == NFABRIC_ERR_NONE,
              "reassign: job 0 enables window 0");
    sh->fm.gen++;
    sh->fm.job_windows[0] &= ~1u;
    sh->fm.job_windows[1] |= 1u;
    sh->fm.gen++;
    v = ~0ull;
    got = 0;
    nfabric_ctrl_mem_access(&c0, W_BASE, (uint8_t *)&v, 8, true);
    nfabric_ctrl_mem_access(&c0, W_BASE, (uint8_t *)&got, 8, false);
    TAP_CHECK(!c0.failed && got == UINT64_MAX &&
              nfabric_counter_get(ram + W_CTRS, 8, 0) == 0 &&
              rd(&c0, NFABRIC_REG_ENABLED_MASK, 4) == 0,
              "reassign: a window the state file puts in another job is no "
              "window to job 0: its memory is plain, no count changes, job 0 "
              "sees no window");
    v = 0;
    nfabric_ctrl_mem_access(&c1, W_BASE, (uint8_t *)&v, 8, true);
    TAP_CHECK(rd(&c1, NFABRIC_REG_LAST_ERROR, 4) == NFABRIC_ERR_OWNER &&
              !memcmp(ram + W_BASE, &got, 8),
              "reassign: and job 1, whose slots now hold it, does not reach "
              "the memory under it (OWNER)");
    nfabric_ctrl_use_shared(&c1, &c1.local, 0);
    nfabric_shared_detach(sh1, fd1, 1);
    nfabric_ctrl_use_shared(&c0, &c0.local, 0);
    nfabric_shared_detach(sh, fd0, 0);
}

/* ---- jobs stay apart: another job's stopped or busy head ------------------ */

#define A_WIN       9                   /* job 1's window */
#define A_BASE      0x200000ull
#define A_SIZE      0x10000ull          /* 512 KiB of 8-bit counters */
#define A_CTRS      0x300000ull
#define A_BOUND_MS  50                  /* issue 36: worst under 50 ms */

static NFabricFm apart_fm(void)
{
    NFabricFm fm = two_jobs_fm();

    fm.range[1] = (NFabricFmRange){ 0x200000, 0x200000, 1, NFABRIC_FM_JOB_WIDE };
    fm.nranges = 2;
    return fm;
}

/*
 * What job 0's head gets while job 1's head is stopped or busy: register
 * writes (CLEAR of its window), an enable and a disable of another window,
 * a round completion, each timed; the worst and the errors.
 */
typedef struct ApartProbe {
    int64_t worst_ms;
    unsigned ops, refused;
} ApartProbe;

static void apart_op(NFabricCtrl *c, ApartProbe *p, int kind)
{
    int64_t t = now_ms();
    uint32_t seq;

    wr(c, NFABRIC_REG_CTRL, NFABRIC_CTRL_CLEAR_ERROR, 4);
    switch (kind % 4) {
    case 0:
        wr(c, NFABRIC_REG_WIN(0, NFABRIC_WIN_CMD), NFABRIC_WCMD_CLEAR, 4);
        break;
    case 1:
        (void)win_set(c, 1, 0x40000, 0x400, 0x180000, NFABRIC_PATH_GTERNARY, 8);
        break;
    case 2:
        wr(c, NFABRIC_REG_WIN(1, NFABRIC_WIN_CTRL), 0, 4);
        break;
    default:
        seq = (uint32_t)rd(c, NFABRIC_REG_ROUND(0, NFABRIC_ROUND_SEQ), 4);
        wr(c, NFABRIC_REG_ROUND(0, NFABRIC_ROUND_COMPLETE), seq, 4);
        break;
    }
    t = now_ms() - t;
    p->worst_ms = t > p->worst_ms ? t : p->worst_ms;
    p->ops++;
    p->refused += rd(c, NFABRIC_REG_LAST_ERROR, 4) != NFABRIC_ERR_NONE;
}

/*
 * Fork job 1's head: it stops (SIGSTOP) in the clear of its enable of
 * window A_WIN, in a CLEAR of it, or holding its job's lock.
 */
enum { APART_ENABLE, APART_CLEAR, APART_LOCK };

static pid_t apart_stopped(int how)
{
    pid_t pid;
    int st;

    if (how != APART_LOCK) {
        return head_stopped_in_clear(A_WIN, A_BASE, A_SIZE, A_CTRS,
                                     how == APART_CLEAR);
    }
    pid = fork();
    if (pid == 0) {
        NFabricCtrl me;
        NFabricShared *msh;
        int f;

        msh = head_up(&me, 1, 2, &f);
        nfabric_shared_lock_job(msh, 1);
        raise(SIGSTOP);
        nfabric_shared_unlock_job(msh, 1);
        _exit(0);
    }
    if (pid < 0 || waitpid(pid, &st, WUNTRACED) != pid || !WIFSTOPPED(st)) {
        return -1;
    }
    return pid;
}

static void test_jobs_apart(void)
{
    static const char *const what[] = {
        "mid-enable (its job's lock, its window's lock, zeroing 512 KiB)",
        "mid-CLEAR (its job's lock, its window's lock)",
        "holding its job's configuration lock",
    };
    NFabricCtrl c;
    NFabricShared *sh;
    NFabricFm fm = apart_fm();
    char err[512];
    int fd, rc;
    pid_t pid;

    unlink(state_path);
    memset(ram, 0, MEM_SIZE);
    sh = head_up(&c, 0, 2, &fd);
    rc = nfabric_shared_fm_write(state_path, &fm, err, sizeof(err));
    TAP_CHECK(rc == 0 && win_set(&c, 0, W_BASE, W_SIZE, W_CTRS,
                                 NFABRIC_PATH_GBINARY, 8) == NFABRIC_ERR_NONE,
              "apart: head 0 in job 0 with window 0, head 1 in job 1 (%s)",
              rc ? err : "ok");
    for (int how = APART_ENABLE; how <= APART_LOCK; how++) {
        ApartProbe p = { 0 };

        pid = apart_stopped(how);
        for (int k = 0; pid > 0 && k < 40; k++) {
            apart_op(&c, &p, k);
        }
        TAP_CHECK(pid > 0 && p.refused == 0 && p.worst_ms < A_BOUND_MS,
                  "apart: job 1's head stopped %s: job 0's %u register "
                  "writes, enables, disables and round completions all "
                  "succeed (%u refused), the slowest in %" PRId64 " ms",
                  what[how], p.ops, p.refused, p.worst_ms);
        /* The fabric manager needs every job: bounded, and it says which. */
        if (how == APART_LOCK) {
            int64_t t = now_ms();

            rc = nfabric_shared_fm_write(state_path, &fm, err, sizeof(err));
            t = now_ms() - t;
            TAP_CHECK(rc != 0 && strstr(err, "job 1's configuration lock") &&
                      t <= NFABRIC_SHARED_LOCK_MS + 500,
                      "apart: meanwhile the fabric manager's write, which "
                      "needs every job's lock, gives up within the bound "
                      "(%" PRId64 " ms): %s", t, err);
        }
        if (pid > 0) {
            kill(pid, SIGCONT);
            rc = wait_child(pid);
            TAP_CHECK(rc == 0, "apart: continued, job 1's head finishes "
                      "(status %d)", rc);
        }
    }

    /* Job 1's head CLEARs its window (512 KiB of counters) in a loop. */
    pid = fork();
    if (pid == 0) {
        NFabricCtrl me;
        int f;
        int64_t end;

        head_up(&me, 1, 2, &f);
        end = now_ms() + 1500;
        while (now_ms() < end) {
            wr(&me, NFABRIC_REG_WIN(A_WIN, NFABRIC_WIN_CMD), NFABRIC_WCMD_CLEAR, 4);
        }
        _exit(rd(&me, NFABRIC_REG_LAST_ERROR, 4) == NFABRIC_ERR_NONE ? 0 : 4);
    }
    {
        ApartProbe p = { 0 };
        int64_t end = now_ms() + 1000;
        uint64_t clears = sh->round[A_WIN].seq;

        usleep(50000);
        for (int k = 0; now_ms() < end; k++) {
            apart_op(&c, &p, k);
            usleep(2000);
        }
        clears = sh->round[A_WIN].seq - clears;
        rc = wait_child(pid);
        TAP_CHECK(rc == 0 && p.refused == 0 && p.worst_ms < A_BOUND_MS &&
                  clears > 10,
                  "apart: while job 1's head CLEARs its window in a loop (%"
                  PRIu64 " clears), job 0's %u register writes, enables, "
                  "disables and round completions all succeed (%u refused), "
                  "the slowest in %" PRId64 " ms", clears, p.ops, p.refused,
                  p.worst_ms);
    }

    /*
     * Job 1's head in the last step of an enable through the map protocol
     * (its window in the enabled and the pending mask at once, job 1's
     * sequence count odd) while job 0's head makes its view again: that is
     * another job's change in progress, not a corrupted state file (the
     * multihost suite's apart2 failed its head so on a slow machine).
     */
    {
        uint64_t v = 0x0123456789abcdefull, got = 0;
        bool locked = nfabric_shared_lock_job(sh, 1);

        nfabric_shared_gen_bump(sh, 1);
        __atomic_fetch_or(&sh->enabled_mask, 1u << A_WIN, __ATOMIC_SEQ_CST);
        __atomic_fetch_or(&sh->pending_mask, 1u << A_WIN, __ATOMIC_SEQ_CST);
        nfabric_shared_gen_bump(sh, 0);         /* job 0 changed: a new view */
        nfabric_shared_gen_bump(sh, 0);
        wr(&c, NFABRIC_REG_CTRL, NFABRIC_CTRL_CLEAR_ERROR, 4);
        nfabric_ctrl_mem_access(&c, 0x1000, (uint8_t *)&v, 8, true);
        nfabric_ctrl_mem_access(&c, 0x1000, (uint8_t *)&got, 8, false);
        TAP_CHECK(locked && !c.failed && got == v &&
                  rd(&c, NFABRIC_REG_LAST_ERROR, 4) == NFABRIC_ERR_NONE,
                  "apart: job 1's window in both masks mid-enable (its "
                  "sequence count odd) does not fail job 0's head, whose "
                  "plain access is served (%s)",
                  c.failed ? c.failure : "not failed");
        __atomic_fetch_and(&sh->enabled_mask, ~(1u << A_WIN), __ATOMIC_SEQ_CST);
        __atomic_fetch_and(&sh->pending_mask, ~(1u << A_WIN), __ATOMIC_SEQ_CST);
        nfabric_shared_gen_bump(sh, 1);
        if (locked) {
            nfabric_shared_unlock_job(sh, 1);
        }
    }
    nfabric_ctrl_use_shared(&c, &c.local, 0);
    nfabric_shared_detach(sh, fd, 0);
}

/* ---- a head that dies at any step of a window change ----------------------- */

#define D_WIN       4
#define D_BASE      0x80000ull
#define D_SIZE      0x8000ull           /* 256 KiB of 8-bit counters */
#define D_CTRS      0x200000ull

/* The dying head kills itself when its clear of D_WIN begins. */
static void die_hook(void *opaque, NFabricWinEvent ev, unsigned win,
                     uint32_t code)
{
    (void)code;
    if (ev == NFABRIC_WIN_EV_CLEAR_BEGIN && win == D_WIN && *(int *)opaque) {
        raise(SIGKILL);
    }
}

enum { DIE_ENABLE_ZEROING, DIE_MAP_WAIT, DIE_CLEAR_ZEROING, DIE_PUBLISHING,
       DIE_COMPLETING, DIE_FM_WRITE, DIE_STEPS };

/* Fork head 1; it dies (SIGKILL) at step; returns once it is dead. */
static int die_at(NFabricShared *sh, int step)
{
    pid_t pid = fork();

    if (pid > 0 && step == DIE_MAP_WAIT) {
        /* Killed by us while it waits (up to 1 s) for head 0's map. */
        usleep(300000);
        kill(pid, SIGKILL);
    }

    if (pid == 0) {
        static const NFabricCtrlOps ops = { .window = die_hook };
        NFabricCtrl me;
        int f, armed = 0;
        uint32_t seq;

        head_up(&me, 1, 2, &f);
        me.ops = &ops;
        me.opaque = &armed;
        switch (step) {
        case DIE_ENABLE_ZEROING:
        case DIE_MAP_WAIT:              /* head 0 maps directly: waited for */
            armed = step == DIE_ENABLE_ZEROING;
            win_set(&me, D_WIN, D_BASE, D_SIZE, D_CTRS, NFABRIC_PATH_GBINARY, 8);
            break;
        case DIE_CLEAR_ZEROING:
            armed = 1;
            wr(&me, NFABRIC_REG_WIN(D_WIN, NFABRIC_WIN_CMD), NFABRIC_WCMD_CLEAR, 4);
            break;
        case DIE_PUBLISHING:            /* a disable, half-published */
            nfabric_shared_lock_job(sh, 0);
            nfabric_shared_lock_win(sh, D_WIN);
            sh->job[0].busy = D_WIN;
            nfabric_shared_gen_bump(sh, 0);
            sh->win[D_WIN].ctrl &= ~NFABRIC_WCTRL_ENABLE;
            break;
        case DIE_COMPLETING:            /* inside ROUND_COMPLETE */
            seq = sh->round[D_WIN].seq;
            nfabric_shared_lock_job(sh, 0);
            sh->round[D_WIN].done |= 2;
            (void)seq;
            break;
        default:                        /* the fabric manager, mid-write */
            for (unsigned j = 0; j < NFABRIC_FM_MAX_JOBS; j++) {
                nfabric_shared_lock_job(sh, j);
            }
            nfabric_shared_lock_cfg(sh);
            sh->fm.gen |= 1;
            sh->fm.assigned = 1;
            sh->fm.job_windows[0] = 0xffff;
            sh->fm.nranges = 1;
            sh->fm.range[0] = (NFabricFmRange){ 0, MEM_SIZE, 0, NFABRIC_FM_JOB_WIDE };
            break;
        }
        raise(SIGKILL);
        _exit(9);
    }
    return wait_child(pid);
}

static void test_dying_head(void)
{
    static const char *const step_name[DIE_STEPS] = {
        "an enable, zeroing the counter area",
        "an enable, waiting for the others' maps (no lock held)",
        "a CLEAR, zeroing the counter area",
        "a disable, publishing the entry",
        "a round completion",
        "the fabric manager's write",
    };
    NFabricCtrl c;
    NFabricShared *sh;
    int fd;

    for (int step = 0; step < DIE_STEPS; step++) {
        uint64_t v = ~0ull;
        uint32_t st, ctrl;
        bool on, incomplete, ok;
        int rc;

        unlink(state_path);
        memset(ram, 0, MEM_SIZE);
        memset(ram + D_CTRS, 0x5a, D_SIZE * 8);
        sh = head_up(&c, 0, 2, &fd);
        if (step == DIE_MAP_WAIT) {
            nfabric_ctrl_map_join(&c);  /* never acknowledges: waited for */
        }
        if (step >= DIE_CLEAR_ZEROING && step != DIE_FM_WRITE) {
            /* The window the step works on, enabled, a round under way. */
            win_set(&c, D_WIN, D_BASE, D_SIZE, D_CTRS, NFABRIC_PATH_GBINARY, 8);
            nfabric_ctrl_mem_access(&c, D_BASE, (uint8_t *)&v, 8, true);
            memset(ram + D_CTRS + 64, 0x5a, D_SIZE * 8 - 64);
        }
        rc = die_at(sh, step);
        /* The survivor: its next register write and access, then what it sees. */
        wr(&c, NFABRIC_REG_CTRL, NFABRIC_CTRL_CLEAR_ERROR, 4);
        wr(&c, NFABRIC_REG_HEAD_SELECT, 0, 4);
        nfabric_ctrl_mem_access(&c, W_BASE + 0x8000, (uint8_t *)&v, 8, true);
        on = rd(&c, NFABRIC_REG_ENABLED_MASK, 4) & (1u << D_WIN);
        st = (uint32_t)rd(&c, NFABRIC_REG_ROUND(D_WIN, NFABRIC_ROUND_STATUS), 4);
        ctrl = (uint32_t)rd(&c, NFABRIC_REG_WIN(D_WIN, NFABRIC_WIN_CTRL), 4);
        incomplete = st & NFABRIC_RSTAT_INCOMPLETE;
        switch (step) {
        case DIE_ENABLE_ZEROING:
        case DIE_MAP_WAIT:
            ok = !on && !(sh->pending_mask & (1u << D_WIN));
            break;
        case DIE_CLEAR_ZEROING:
        case DIE_PUBLISHING:
            ok = !on || incomplete;
            break;
        case DIE_COMPLETING:
            ok = on && !(sh->gen[0] & 1) && sh->job[0].busy == -1;
            break;
        default:
            ok = !(sh->fm.gen & 1) && sh->fm.assigned && !sh->fm.nranges &&
                 rd(&c, NFABRIC_REG_LAST_ERROR, 4) == NFABRIC_ERR_OWNER;
            break;
        }
        TAP_CHECK(rc == 128 + SIGKILL && ok && !c.failed,
                  "dying head: killed in %s, the survivor finds %s (enabled "
                  "%d, round status 0x%x, CTRL 0x%x, last error %" PRIu64 ")",
                  step_name[step],
                  step <= DIE_MAP_WAIT ? "the window off, not pending" :
                  step <= DIE_PUBLISHING ? "the window off or its round INCOMPLETE" :
                  step == DIE_COMPLETING ? "the window and round consistent, the job's lock free" :
                  "the half-written assignment revoked: nothing reachable (OWNER) until the fabric manager writes again",
                  on, st, ctrl, (uint64_t)rd(&c, NFABRIC_REG_LAST_ERROR, 4));
        if (step == DIE_FM_WRITE) {
            NFabricFm fm = apart_fm();
            char err[512];
            int r1 = nfabric_shared_fm_write(state_path, &fm, err, sizeof(err));

            uint64_t got = 0;

            v = 0x1234;
            wr(&c, NFABRIC_REG_CTRL, NFABRIC_CTRL_CLEAR_ERROR, 4);
            nfabric_ctrl_mem_access(&c, W_BASE + 0x8000, (uint8_t *)&v, 8, true);
            nfabric_ctrl_mem_access(&c, W_BASE + 0x8000, (uint8_t *)&got, 8, false);
            TAP_CHECK(r1 == 0 && got == v &&
                      rd(&c, NFABRIC_REG_LAST_ERROR, 4) == NFABRIC_ERR_NONE,
                      "dying head: the fabric manager writes again, and head 0 "
                      "reaches its job's memory (%s)", r1 ? err : "ok");
        }
        nfabric_ctrl_use_shared(&c, &c.local, 0);
        nfabric_shared_detach(sh, fd, 0);
    }
}

/* ---- docs/registers.md's answers, held to the device ---------------------- */

/* Does docs/multihost.md hold text (as the device writes it)? */
static bool doc_has(const char *text)
{
    static char doc[1 << 18];
    static size_t n;

    if (!n) {
        FILE *f = fopen(NF_MULTIHOST_MD, "r");

        if (!f) {
            return false;
        }
        n = fread(doc, 1, sizeof(doc) - 1, f);
        fclose(f);
        doc[n] = 0;
    }
    return strstr(doc, text) != NULL;
}

static void test_spec(void)
{
    NFabricCtrl c0, c1;
    NFabricShared *sh, *sh1;
    NFabricFm fm = apart_fm();
    NFabricAttach a;
    NFabricAttachHow how;
    NFabricShared *bad_sh;
    char err[512], msg[600], other[600], *p;
    uint64_t v, errs;
    int fd0, fd1, bfd;
    FILE *f;

    unlink(state_path);
    memset(ram, 0, MEM_SIZE);
    sh = head_up(&c0, 0, 2, &fd0);
    sh1 = head_up(&c1, 1, 2, &fd1);
    (void)sh1;
    nfabric_shared_fm_write(state_path, &fm, err, sizeof(err));
    win_set(&c0, 0, W_BASE, W_SIZE, W_CTRS, NFABRIC_PATH_GBINARY, 8);

    /* A register read of another job's window: 0, and no error. */
    wr(&c1, NFABRIC_REG_CTRL, NFABRIC_CTRL_CLEAR_ERROR, 4);
    v = rd(&c1, NFABRIC_REG_WIN(0, NFABRIC_WIN_DPA_BASE), 8);
    TAP_CHECK(v == 0 && rd(&c1, NFABRIC_REG_LAST_ERROR, 4) == NFABRIC_ERR_NONE &&
              rd(&c1, NFABRIC_REG_ERROR_COUNT, 4) == 0,
              "spec: a register read of another job's window reads 0 and sets "
              "no error (OWNER is for writes and memory accesses)");
    /* The order: ACCESS before OWNER, OWNER before the register's checks. */
    wr(&c1, NFABRIC_REG_WIN(0, NFABRIC_WIN_CTRL) + 1, 0, 4);
    errs = rd(&c1, NFABRIC_REG_LAST_ERROR, 4);
    wr(&c1, NFABRIC_REG_WIN(0, NFABRIC_WIN_CTRL), 0xffffffffu, 4);
    TAP_CHECK(errs == NFABRIC_ERR_ACCESS &&
              rd(&c1, NFABRIC_REG_LAST_ERROR, 4) == NFABRIC_ERR_OWNER,
              "spec: a misaligned write to another job's window is ACCESS; "
              "one with reserved bits set is OWNER, not RESERVED_BITS");
    wr(&c1, NFABRIC_REG_HEAD_SELECT, 5, 4);
    errs = rd(&c1, NFABRIC_REG_LAST_ERROR, 4);
    wr(&c1, NFABRIC_REG_HEAD_SELECT, 0, 4);
    TAP_CHECK(errs == NFABRIC_ERR_HEAD &&
              rd(&c1, NFABRIC_REG_LAST_ERROR, 4) == NFABRIC_ERR_OWNER,
              "spec: HEAD_SELECT of a head the device lacks is HEAD, of a head "
              "of another job OWNER");
    TAP_CHECK((rd(&c1, NFABRIC_REG_JOB, 4) & 0xfe00u) == 0 &&
              (rd(&c1, NFABRIC_REG_HEAD_INFO, 4) >> 18) == 0 &&
              (rd(&c0, NFABRIC_REG_JOB, 4) & 0xfe00u) == 0 &&
              (rd(&c0, NFABRIC_REG_HEAD_INFO, 4) >> 18) == 0,
              "spec: JOB bits [15:9] and HEAD_INFO bits [31:18] read 0");

    /* A head whose state failed: registers read 0, memory all-ones. */
    sh->gen[0] |= 1;                   /* corrupted: odd with no writer */
    v = 0;
    nfabric_ctrl_mem_access(&c0, W_BASE, (uint8_t *)&v, 8, false);
    errs = rd(&c0, NFABRIC_REG_ERROR_COUNT, 4);
    TAP_CHECK(c0.failed && v == UINT64_MAX &&
              rd(&c0, NFABRIC_REG_LAST_ERROR, 4) == NFABRIC_ERR_STATE &&
              rd(&c0, NFABRIC_REG_ENABLED_MASK, 4) == 0 &&
              rd(&c0, NFABRIC_REG_WIN(0, NFABRIC_WIN_DPA_BASE), 8) == 0 &&
              rd(&c0, NFABRIC_REG_ERROR_COUNT, 4) == errs &&
              (rd(&c0, NFABRIC_REG_HEAD_INFO, 4) & NFABRIC_HEAD_INFO_STATE_FAILED),
              "spec: a head whose state failed reads all-ones from memory "
              "(STATE), 0 from the registers of the shared state, and those "
              "reads set no error");
    nfabric_ctrl_use_shared(&c1, &c1.local, 0);
    nfabric_shared_detach(sh1, fd1, 1);
    nfabric_ctrl_use_shared(&c0, &c0.local, 0);
    nfabric_shared_detach(sh, fd0, 0);

    /* The refusals' messages in docs/multihost.md are the device's. */
    snprintf(other, sizeof(other), "%s/short.state", dir);
    f = fopen(other, "w");
    if (f) {
        fputs("abc", f);
        fclose(f);
    }
    a = attach_args(0, 2);
    a.path = other;
    err[0] = 0;
    if (nfabric_shared_attach(&a, &bad_sh, &bfd, &how, err, sizeof(err)) == 0) {
        nfabric_shared_detach(bad_sh, bfd, 0);
    }
    snprintf(msg, sizeof(msg), "%s", err);
    p = strstr(msg, other);
    if (p) {
        /* The path as the docs write it: 'FILE'. */
        memmove(p + 4, p + strlen(other), strlen(p + strlen(other)) + 1);
        memcpy(p, "FILE", 4);
    }
    TAP_CHECK(p && doc_has(msg),
              "spec: docs/multihost.md gives the refusal of a file of another "
              "size as the device writes it: %s", msg);
    snprintf(msg, sizeof(msg), "'FILE' is not a state file of layout %u (",
             NFABRIC_SHARED_LAYOUT);
    TAP_CHECK(doc_has(msg), "spec: and the refusal of another layout with this "
              "layout's number (%u)", NFABRIC_SHARED_LAYOUT);
    unlink(other);
}

/* ---- what a head's QEMU may map directly -------------------------------- */

#define O_OWN0      0x200000ull         /* head 0's own 64 KiB */
#define O_OWN1      0x210000ull         /* head 1's own 64 KiB */
#define O_OWN_SIZE  0x10000ull

static void count_own(void *opaque)
{
    (*(unsigned *)opaque)++;
}

static void test_reach_ranges(void)
{
    static const NFabricCtrlOps ops = { .traps_changed = count_own };
    NFabricCtrl c0, c1;
    NFabricShared *sh, *sh1;
    NFabricRange r[NFABRIC_MAX_TRAPS];
    NFabricFm fm, fm2;
    uint64_t v = 0;
    unsigned n, moved = 0;
    char err[512];
    int fd0, fd1, rc, rc2;

    unlink(state_path);
    memset(ram, 0, MEM_SIZE);
    sh = head_up(&c0, 0, 2, &fd0);
    sh1 = head_up(&c1, 1, 2, &fd1);
    c0.ops = &ops;
    c0.opaque = &moved;
    n = nfabric_ctrl_trap_ranges(&c0, true, r);
    TAP_CHECK(n == 0,
              "reach: without an assignment and with no window a shared head "
              "traps nothing: all its memory may be mapped directly (%u "
              "ranges)", n);

    memset(&fm, 0, sizeof(fm));
    fm.assigned = 1;
    fm.job_windows[0] = 0xffff;
    fm.range[0] = (NFabricFmRange){ 0, 0x200000, 0, NFABRIC_FM_JOB_WIDE };
    fm.range[1] = (NFabricFmRange){ O_OWN0, O_OWN_SIZE, 0, 0 };
    fm.range[2] = (NFabricFmRange){ O_OWN1, O_OWN_SIZE, 0, 1 };
    fm.nranges = 3;
    rc = nfabric_shared_fm_write(state_path, &fm, err, sizeof(err));
    nfabric_ctrl_mem_access(&c0, O_OWN0, (uint8_t *)&v, 8, false);
    n = nfabric_ctrl_trap_ranges(&c0, true, r);
    TAP_CHECK(rc == 0 && moved == 1 && n == 1 && r[0].dpa == O_OWN1 &&
              r[0].len == MEM_SIZE - O_OWN1,
              "reach: given the job's 2 MiB and 64 KiB of its own, a head is "
              "told once (%u) and traps only what it does not reach (%u "
              "ranges)", moved, n);

    TAP_CHECK(win_set(&c0, 0, O_OWN0 + 0x1000, 0x400, O_OWN0 + 0x8000,
                      NFABRIC_PATH_GBINARY, 8) == NFABRIC_ERR_NONE &&
              (n = nfabric_ctrl_trap_ranges(&c0, true, r)) == 3 &&
              r[1].dpa == O_OWN0 + 0x1000 && r[1].len == 0x400 &&
              r[2].dpa == O_OWN0 + 0x8000 && r[2].len != 0,
              "reach: a window it enables traps (data and counter area)");
    TAP_CHECK(win_set(&c1, 1, O_OWN0 + 0x4000, 0x400, 0x100000,
                      NFABRIC_PATH_GBINARY, 8) == NFABRIC_ERR_OWNER,
              "reach: another head of the same job cannot enable a window in "
              "a head's own range (OWNER)");

    fm2 = fm;
    fm2.range[1] = fm.range[2];
    fm2.nranges = 2;
    rc = nfabric_shared_fm_write(state_path, &fm2, err, sizeof(err));
    rc2 = nfabric_shared_fm_write(state_path, NULL, err, sizeof(err));
    TAP_CHECK(rc != 0 && rc2 != 0 && strstr(err, "head 0 is attached"),
              "reach: the fabric manager cannot take a head's own range "
              "(nor the assignment) while the head is attached: %s", err);

    nfabric_ctrl_use_shared(&c0, &c0.local, 0);
    nfabric_shared_detach(sh, fd0, 0);
    rc = nfabric_shared_fm_write(state_path, &fm2, err, sizeof(err));
    TAP_CHECK(rc != 0 && strstr(err, "window 0 of job 0 is enabled over "
                                "0x201000+0x400"),
              "reach: once the head left, its range is still not taken while "
              "the window it enabled there is: %s", err);
    wr(&c1, NFABRIC_REG_WIN(0, NFABRIC_WIN_CTRL), 0, 4);
    rc = nfabric_shared_fm_write(state_path, &fm2, err, sizeof(err));
    n = nfabric_ctrl_trap_ranges(&c1, true, r);
    TAP_CHECK(rc == 0 && n == 2 && r[0].dpa == O_OWN0 &&
              r[0].len == O_OWN_SIZE && r[1].dpa == O_OWN1 + O_OWN_SIZE,
              "reach: with the window disabled by the other head of the job, "
              "it is; that head traps the range it no longer reaches and the "
              "rest past its own (%s, %u ranges)", rc ? err : "ok", n);

    sh1->fm.gen += 2;
    sh1->fm.nranges = 1;
    sh1->fm.range[0] = (NFabricFmRange){ MEM_SIZE - 64, 128, 0, 1 };
    n = nfabric_ctrl_trap_ranges(&c1, true, r);
    TAP_CHECK(n == 1 && r[0].dpa == 0 && r[0].len == MEM_SIZE,
              "reach: a corrupted assignment traps all memory again");
    nfabric_ctrl_use_shared(&c1, &c1.local, 0);
    nfabric_shared_detach(sh1, fd1, 1);
}

/* ---- the map protocol: every direct map traps a window before it is on ---- */

/*
 * Head 1 in a child process, as a QEMU with the direct map: joins the
 * protocol, and whenever map_gen moves, works out its traps, tells the
 * parent whether they cover window MP_WIN's data and counters (one byte:
 * 'y' or 'n'), and acknowledges.
 */
#define MP_BASE     0x100000ull
#define MP_CTRS     0x180000ull

static void map_head(int ready, int report)
{
    NFabricRange r[NFABRIC_MAX_TRAPS];
    NFabricShared *sh;
    NFabricCtrl c;
    uint32_t g;
    int fd;

    sh = head_up(&c, 1, 2, &fd);
    nfabric_ctrl_map_join(&c);
    g = nfabric_ctrl_map_gen(&c);
    nfabric_ctrl_trap_ranges(&c, true, r);
    nfabric_ctrl_map_ack(&c, g);
    if (write(ready, "r", 1) != 1) {
        _exit(98);
    }
    for (;;) {
        uint32_t now;
        unsigned n;
        bool data = false, ctrs = false;

        nfabric_shared_map_wait(sh, g, 1000);
        now = nfabric_ctrl_map_gen(&c);
        if (now == g) {
            continue;
        }
        g = now;
        n = nfabric_ctrl_trap_ranges(&c, true, r);
        for (unsigned k = 0; k < n; k++) {
            data |= r[k].dpa <= MP_BASE && r[k].dpa + r[k].len >= MP_BASE + 0x1000;
            ctrs |= r[k].dpa <= MP_CTRS && r[k].dpa + r[k].len > MP_CTRS;
        }
        nfabric_ctrl_map_ack(&c, g);
        if (write(report, data && ctrs ? "y" : "n", 1) != 1) {
            _exit(98);
        }
    }
}

static double ms_now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void test_map_protocol(void)
{
    NFabricCtrl c0;
    NFabricShared *sh;
    int ready[2], report[2], fd0;
    char b = 0, said[64];
    uint32_t err, mask;
    double t0, ms;
    ssize_t got;
    pid_t pid;

    unlink(state_path);
    memset(ram, 0, MEM_SIZE);
    if (pipe(ready) || pipe(report)) {
        perror("pipe");
        exit(1);
    }
    sh = head_up(&c0, 0, 2, &fd0);
    pid = fork();
    if (pid == 0) {
        map_head(ready[1], report[1]);
        _exit(0);
    }
    TAP_CHECK(read(ready[0], &b, 1) == 1 && b == 'r',
              "map: head 1 (another process) maps directly and joined");
    fcntl(report[0], F_SETFL, O_NONBLOCK);

    t0 = ms_now();
    err = win_set(&c0, 0, MP_BASE, 0x1000, MP_CTRS, NFABRIC_PATH_GBINARY, 8);
    ms = ms_now() - t0;
    got = read(report[0], said, sizeof(said));
    TAP_CHECK(err == NFABRIC_ERR_NONE && got >= 1 && said[0] == 'y' &&
              (sh->enabled_mask & 1) && !sh->pending_mask,
              "map: an enable returns once the other head trapped the "
              "window's data and counter area (it saw them pending: %c; "
              "%.1f ms)", got >= 1 ? said[0] : '-', ms);

    kill(pid, SIGSTOP);
    t0 = ms_now();
    err = win_set(&c0, 1, MP_BASE + 0x10000, 0x1000, MP_CTRS + 0x10000,
                  NFABRIC_PATH_GBINARY, 8);
    ms = ms_now() - t0;
    mask = (uint32_t)rd(&c0, NFABRIC_REG_ENABLED_MASK, 4);
    TAP_CHECK(err == NFABRIC_ERR_PEER && !(mask & 2) && !sh->pending_mask &&
              ms >= NFABRIC_SHARED_MAP_MS && ms < NFABRIC_SHARED_MAP_MS + 1000 &&
              c0.map_late == 2,
              "map: with the other head stopped (SIGSTOP), the enable gives "
              "up after the bound with error PEER naming it (%.0f ms, late "
              "0x%x), the window not enabled", ms, c0.map_late);

    kill(pid, SIGCONT);
    err = win_set(&c0, 1, MP_BASE + 0x10000, 0x1000, MP_CTRS + 0x10000,
                  NFABRIC_PATH_GBINARY, 8);
    TAP_CHECK(err == NFABRIC_ERR_NONE,
              "map: once it runs again, the same enable succeeds");

    kill(pid, SIGKILL);
    wait_child(pid);
    t0 = ms_now();
    err = win_set(&c0, 2, MP_BASE + 0x20000, 0x1000, MP_CTRS + 0x20000,
                  NFABRIC_PATH_GBINARY, 8);
    ms = ms_now() - t0;
    TAP_CHECK(err == NFABRIC_ERR_NONE && ms < NFABRIC_SHARED_MAP_MS &&
              !(sh->map_direct & 2),
              "map: a head whose process died is not waited for (%.1f ms)", ms);

    {
        uint32_t g = sh->map_gen;

        wr(&c0, NFABRIC_REG_WIN(2, NFABRIC_WIN_CTRL), 0, 4);
        TAP_CHECK(sh->map_gen != g && !(sh->enabled_mask & 4),
                  "map: a disable moves map_gen (the others may map the "
                  "range again)");
    }
    nfabric_ctrl_use_shared(&c0, &c0.local, 0);
    nfabric_shared_detach(sh, fd0, 0);
    close(ready[0]);
    close(ready[1]);
    close(report[0]);
    close(report[1]);
}

int main(void)
{
    int fd;
    const char *tmp = getenv("TMPDIR");

    snprintf(dir, sizeof(dir), "%s/nfabric-shared-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(state_path, sizeof(state_path), "%s/state", dir);
    snprintf(mem_path, sizeof(mem_path), "%s/mem", dir);
    fd = open(mem_path, O_RDWR | O_CREAT, 0600);
    if (fd < 0 || ftruncate(fd, MEM_SIZE) || fstat(fd, &mem_st)) {
        perror(mem_path);
        return 1;
    }
    ram = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (ram == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    test_attach();
    test_contention();
    test_bias();
    test_lock_faults();
    test_dead_holder();
    test_rounds_reset();
    test_fp32_counters();
    test_posted_death();
    test_irq_heads();
    test_corrupt();
    test_corrupt_attach();
    test_thread_liveness();
    test_one_state_per_memory();
    test_stopped_head();
    test_jobs();
    test_reassign();
    test_jobs_apart();
    test_dying_head();
    test_spec();
    test_reach_ranges();
    test_map_protocol();
    unlink(state_path);
    unlink(mem_path);
    rmdir(dir);
    return tap_done();
}
