/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfabric-drvtest: checks of the driver nfabric.ko from guest user space,
 * TAP output ("ok N - ..." / "not ok N - ...").  The `driver` suite
 * (scripts/lib/driver.sh) runs it; docs/driver.md lists the groups:
 *
 *   info       NFABRIC_IOC_INFO against sysfs and the registers
 *   window     WIN_SET / WIN_GET / WIN_DISABLE / WIN_CLEAR, with traffic
 *              through the dax mapping (needs the region)
 *   stats      NFABRIC_IOC_STATS and NFABRIC_IOC_TIMING, sysfs statistics
 *   round      ROUND_GET / ROUND_COMPLETE / ROUND_WAIT (one head), their
 *              bad arguments, a wait woken by a completion and by a signal
 *   events     (register layout 1.8) EVENTS, poll() and an eventfd: a
 *              poll() asleep here woken by another process's completion,
 *              EVENTS naming the window once; their bad arguments
 *   badarg     every bad argument of every ioctl, and mmap's
 *   mmap       private and executable register mappings refused, an ioctl
 *              whose argument is the register mapping; the device answers
 *   priv       every operation as root and as uid 65534 on a node opened
 *              to it: EPERM where docs/driver.md's privilege model says so
 *   fuzz       every ioctl with random arguments and bad pointers: 0 or a
 *              documented errno, nothing the device refuses
 *   exec       code in device memory rewritten through an FP32 window (a
 *              trapped write) runs new once the window is disabled
 *   concurrent several openers and concurrent ioctls on one window
 *   unbind     unbind cxl_pci while a file is open and mapped and a round
 *              wait sleeps, then rebind
 *   reload     rmmod refused while open; rmmod, insmod
 *   dmesg      no warning, error, oops, BUG or bad page logged since the start
 *   sysram     (only when named; the region onlined as System RAM) low-bit
 *              windows over it refused (EBUSY), as libnfabric does
 *   interleave (only when named; two devices, no region at boot) low-bit
 *              windows on a 2-way interleaved region refused (EXDEV)
 *   multihost  (only when named; under `scripts/nfabric cluster`, which sets
 *              NFABRIC_RANK and NFABRIC_HOSTS) every host completes one
 *              round of a shared window and waits for the others (all but
 *              the last asleep in poll() until the last one's completion)
 *
 * usage: nfabric-drvtest [--only GROUP,...]
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "libnfabric.h"
#include "nfabric.h"
#include "guest/sysram_online.h"

#define CLASS_DIR "/sys/class/nfabric"
#define MARKER "nfabric-drvtest: start"

static unsigned tap_n, tap_fail;
static const char *only;

static bool check(bool cond, const char *fmt, ...)
{
    va_list ap;

    printf("%s %u - ", cond ? "ok" : "not ok", ++tap_n);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    if (!cond) {
        tap_fail++;
    }
    return cond;
}

static bool want(const char *group)
{
    const char *p;
    size_t n = strlen(group);

    if (!only) {
        return strcmp(group, "multihost") != 0;
    }
    for (p = only; (p = strstr(p, group)); p += n) {
        if ((p == only || p[-1] == ',') && (p[n] == ',' || !p[n])) {
            return true;
        }
    }
    return false;
}

/* ---- helpers ---------------------------------------------------------- */

static int read_sysfs(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    size_t n;

    buf[0] = 0;
    if (!f) {
        return -1;
    }
    n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = 0;
    while (n && buf[n - 1] == '\n') {
        buf[--n] = 0;
    }
    return 0;
}

static uint64_t sysfs_u64(const char *dev, const char *attr)
{
    char path[256], buf[64];

    snprintf(path, sizeof(path), CLASS_DIR "/%s/%s", dev, attr);
    if (read_sysfs(path, buf, sizeof(buf))) {
        return UINT64_MAX;
    }
    return strtoull(buf, NULL, 0);
}

static int write_sysfs(const char *path, const char *val)
{
    int fd = open(path, O_WRONLY);
    ssize_t n;

    if (fd < 0) {
        return -1;
    }
    n = write(fd, val, strlen(val));
    close(fd);
    return n == (ssize_t)strlen(val) ? 0 : -1;
}

/* The first nfabricN in /sys/class/nfabric; 0 or -1. */
static int find_dev(char *name, size_t len)
{
    DIR *d = opendir(CLASS_DIR);
    struct dirent *e;
    int rc = -1;

    if (!d) {
        return -1;
    }
    while ((e = readdir(d))) {
        if (!strncmp(e->d_name, "nfabric", 7) && strlen(e->d_name) < len) {
            snprintf(name, len, "%s", e->d_name);
            rc = 0;
            break;
        }
    }
    closedir(d);
    return rc;
}

static int wait_dev(char *name, size_t len, bool present)
{
    for (int i = 0; i < 100; i++) {
        if ((find_dev(name, len) == 0) == present) {
            return 0;
        }
        usleep(100000);
    }
    return -1;
}

static int open_dev(const char *name)
{
    char path[64];

    snprintf(path, sizeof(path), "/dev/%s", name);
    return open(path, O_RDWR | O_CLOEXEC);
}

/* ioctl returning -errno (0 on success). */
static int xioctl(int fd, unsigned long cmd, void *arg)
{
    return ioctl(fd, cmd, arg) ? -errno : 0;
}

static struct nfabric_ioc_window win(unsigned idx, unsigned path, uint64_t base,
                                 uint64_t len, uint64_t counters, unsigned width,
                                 unsigned tie, unsigned threshold)
{
    struct nfabric_ioc_window w;

    memset(&w, 0, sizeof(w));
    w.size = sizeof(w);
    w.index = idx;
    w.path = path;
    w.base = base;
    w.length = len;
    w.counters = counters;
    w.width = width;
    w.tie = tie;
    w.threshold = threshold;
    return w;
}

static struct nfabric_ioc_window_cmd wcmd(unsigned idx)
{
    struct nfabric_ioc_window_cmd c = { .size = sizeof(c), .index = idx };

    return c;
}

static int win_get(int fd, unsigned idx, struct nfabric_ioc_window *w)
{
    memset(w, 0, sizeof(*w));
    w->size = sizeof(*w);
    w->index = idx;
    return xioctl(fd, NFABRIC_IOC_WIN_GET, w);
}

static int stats(int fd, unsigned flags, struct nfabric_ioc_stats *st)
{
    memset(st, 0, sizeof(*st));
    st->size = sizeof(*st);
    st->flags = flags;
    return xioctl(fd, NFABRIC_IOC_STATS, st);
}

static void disable_all(int fd, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        struct nfabric_ioc_window_cmd c = wcmd(i);

        xioctl(fd, NFABRIC_IOC_WIN_DISABLE, &c);
    }
}

/* ---- groups ----------------------------------------------------------- */

static struct nfabric_ioc_info info;

static void t_info(int fd, const char *name)
{
    char path[256], buf[64], link[256];
    ssize_t n;
    int rc;

    memset(&info, 0, sizeof(info));
    info.size = sizeof(info);
    rc = xioctl(fd, NFABRIC_IOC_INFO, &info);
    check(rc == 0, "INFO: %s (version 0x%08x, caps 0x%08x, %u windows, %u paths, "
          "%" PRIu64 " bytes, memdev %s, pci %s)", rc ? strerror(-rc) : "accepted",
          info.version, info.caps, info.num_windows, info.num_paths, info.mem_size,
          info.memdev, info.pci_dev);
    check(info.version >> 16 == NFABRIC_VERSION_MAJOR && info.num_windows == NFABRIC_NUM_WINDOWS &&
          info.num_paths == NFABRIC_NUM_PATHS && info.mem_size >= (64u << 20),
          "INFO: version major %u, %u windows, %u paths, memory %" PRIu64 " MiB",
          info.version >> 16, info.num_windows, info.num_paths, info.mem_size >> 20);
    check(sysfs_u64(name, "num_windows") == info.num_windows &&
          sysfs_u64(name, "mem_size") == info.mem_size &&
          sysfs_u64(name, "caps") == info.caps,
          "sysfs num_windows, mem_size, caps equal INFO");
    snprintf(path, sizeof(path), CLASS_DIR "/%s/version", name);
    read_sysfs(path, buf, sizeof(buf));
    {
        char v[32];

        snprintf(v, sizeof(v), "%u.%u", info.version >> 16, info.version & 0xffff);
        check(!strcmp(buf, v), "sysfs version \"%s\" (INFO %s)", buf, v);
    }
    snprintf(path, sizeof(path), CLASS_DIR "/%s/memdev", name);
    read_sysfs(path, buf, sizeof(buf));
    check(!strncmp(buf, "mem", 3) && !strcmp(buf, info.memdev),
          "sysfs memdev \"%s\", INFO memdev \"%s\"", buf, info.memdev);
    snprintf(path, sizeof(path), CLASS_DIR "/%s/cxl_memdev", name);
    n = readlink(path, link, sizeof(link) - 1);
    link[n > 0 ? n : 0] = 0;
    check(n > 0 && strstr(link, info.memdev), "cxl_memdev link -> %s", link);
    snprintf(path, sizeof(path), CLASS_DIR "/%s/device", name);
    n = readlink(path, link, sizeof(link) - 1);
    link[n > 0 ? n : 0] = 0;
    check(n > 0 && strstr(link, info.pci_dev), "device link -> %s (INFO pci %s)", link,
          info.pci_dev);
    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/vendor", info.pci_dev);
    read_sysfs(path, buf, sizeof(buf));
    check(strtoul(buf, NULL, 0) == NFABRIC_PCI_VENDOR_ID, "PCI vendor %s", buf);
}

/* libnfabric's context with the device memory mapped, or NULL (a failed check). */
static nfabric_dev *open_mem(void)
{
    nfabric_dev *m = nfabric_new();
    int rc = m ? nfabric_open(m, NFABRIC_OPEN_NO_REGS) : -ENOMEM;

    if (!check(rc == 0, "device memory mapped (%s)", !m ? strerror(ENOMEM) :
               rc ? nfabric_errmsg(m) : nfabric_dax_name(m))) {
        nfabric_free(m);
        return NULL;
    }
    return m;
}

/* The windows: each ioctl's effect, with traffic through the dax mapping. */
static void t_window(int fd, const char *name)
{
    nfabric_dev *m;
    struct nfabric_ioc_window w, g;
    struct nfabric_ioc_window_cmd c;
    const uint64_t base = 40ull << 20, cnt = 44ull << 20;
    volatile uint8_t *p;
    int rc;

    disable_all(fd, info.num_windows);
    m = open_mem();
    if (!m) {
        return;
    }
    w = win(3, NFABRIC_PATH_GBINARY, base, 4096, cnt, 8, NFABRIC_TIE_POSITIVE, 0);
    rc = xioctl(fd, NFABRIC_IOC_WIN_SET, &w);
    check(rc == 0, "WIN_SET window 3 G-Binary 4 KiB at 40 MiB: %s", rc ? strerror(-rc) : "0");
    rc = win_get(fd, 3, &g);
    check(rc == 0 && g.enabled && g.path == NFABRIC_PATH_GBINARY && g.width == 8 &&
          g.tie == NFABRIC_TIE_POSITIVE && g.base == base && g.length == 4096 &&
          g.counters == cnt && g.error == 0 && g.contrib_writes == 0,
          "WIN_GET window 3: enabled %u path %u width %u tie %u base 0x%" PRIx64
          " length %" PRIu64 " counters 0x%" PRIx64 " error %u", g.enabled, g.path,
          g.width, g.tie, g.base, g.length, g.counters, g.error);
    check(sysfs_u64(name, "stats/enabled_mask") == (1u << 3), "sysfs stats/enabled_mask 0x%" PRIx64,
          sysfs_u64(name, "stats/enabled_mask"));
    p = nfabric_dpa_ptr(m, base, 4096);
    if (p) {
        p[0] = 0xff;
        p[1] = 0x00;
        p[64] = 0x0f;
    }
    rc = win_get(fd, 3, &g);
    check(p && rc == 0 && g.contrib_writes == 3 && g.contrib_bytes == 3,
          "3 byte stores through the dax mapping: contrib_writes %" PRIu64 " bytes %" PRIu64,
          g.contrib_writes, g.contrib_bytes);
    check(p && nfabric_counter(m, cnt, 8, 0) == 1 && nfabric_counter(m, cnt, 8, 8) == -1,
          "counters: element 0 %d, element 8 %d", p ? nfabric_counter(m, cnt, 8, 0) : 0,
          p ? nfabric_counter(m, cnt, 8, 8) : 0);
    c = wcmd(3);
    rc = xioctl(fd, NFABRIC_IOC_WIN_CLEAR, &c);
    win_get(fd, 3, &g);
    check(rc == 0 && g.enabled && g.contrib_writes == 0 && g.contrib_bytes == 0 &&
          nfabric_counter(m, cnt, 8, 0) == 0,
          "WIN_CLEAR: %s, contrib_writes %" PRIu64 ", counter 0 %d, still enabled",
          rc ? strerror(-rc) : "0", g.contrib_writes, nfabric_counter(m, cnt, 8, 0));
    w = win(3, NFABRIC_PATH_FP32, 0, 4096, 0, 0, 0, 0);
    rc = xioctl(fd, NFABRIC_IOC_WIN_SET, &w);
    check(rc == -EBUSY, "WIN_SET on the enabled window 3: %s (want EBUSY)", strerror(-rc));
    w = win(4, NFABRIC_PATH_FP32, base + 1024, 4096, 0, 0, 0, 0);
    rc = xioctl(fd, NFABRIC_IOC_WIN_SET, &w);
    check(rc == -EBUSY && w.error == NFABRIC_ERR_OVERLAP,
          "WIN_SET window 4 over window 3's data: %s, device error %u (want EBUSY, %u)",
          strerror(-rc), w.error, NFABRIC_ERR_OVERLAP);
    w = win(5, NFABRIC_PATH_GTERNARY, 41ull << 20, 4096, 46ull << 20, 16, 0, 300);
    rc = xioctl(fd, NFABRIC_IOC_WIN_SET, &w);
    win_get(fd, 5, &g);
    check(rc == 0 && g.enabled && g.path == NFABRIC_PATH_GTERNARY && g.width == 16 &&
          g.threshold == 300, "WIN_SET window 5 G-Ternary width 16 threshold 300: %s",
          rc ? strerror(-rc) : "0");
    c = wcmd(3);
    rc = xioctl(fd, NFABRIC_IOC_WIN_DISABLE, &c);
    win_get(fd, 3, &g);
    check(rc == 0 && !g.enabled, "WIN_DISABLE window 3: %s, enabled %u",
          rc ? strerror(-rc) : "0", g.enabled);
    w = win(4, NFABRIC_PATH_FP32, base, 4096, 0, 0, 0, 0);
    rc = xioctl(fd, NFABRIC_IOC_WIN_SET, &w);
    check(rc == 0, "WIN_SET window 4 FP32 over the freed range: %s", rc ? strerror(-rc) : "0");
    if (p) {
        p[100] = 0x5a;
    }
    check(p && p[100] == 0x5a, "FP32 window reads back a store");
    disable_all(fd, info.num_windows);
    check(sysfs_u64(name, "stats/enabled_mask") == 0, "all windows disabled");
    nfabric_free(m);
}

static void t_stats(int fd, const char *name)
{
    struct nfabric_ioc_stats st;
    struct nfabric_ioc_timing t;
    nfabric_dev *m;
    volatile uint64_t *p;
    uint64_t sum = 0;
    int rc;

    disable_all(fd, info.num_windows);
    m = open_mem();
    if (!m) {
        return;
    }
    p = nfabric_dpa_ptr(m, 48ull << 20, 4096);
    /*
     * FP32 accesses are counted inside an FP32 window: plain memory
     * outside windows is mapped directly by the device (docs/device.md,
     * "The direct map") and not counted.
     */
    {
        struct nfabric_ioc_window w = win(5, NFABRIC_PATH_FP32, 48ull << 20, 4096,
                                          0, 0, 0, 0);

        rc = xioctl(fd, NFABRIC_IOC_WIN_SET, &w);
        check(rc == 0, "WIN_SET window 5 FP32 over the 4 KiB the statistics check "
              "uses: %s", rc ? strerror(-rc) : "0");
    }
    rc = stats(fd, NFABRIC_STATS_F_CLEAR, &st);
    check(rc == 0, "STATS with F_CLEAR: %s", rc ? strerror(-rc) : "0");
    memset(&t, 0, sizeof(t));
    t.size = sizeof(t);
    t.flags = NFABRIC_TIMING_F_CLEAR;
    rc = xioctl(fd, NFABRIC_IOC_TIMING, &t);
    check(rc == 0 && t.clock_mhz && t.service_ns, "TIMING with F_CLEAR: %s (clock %u MHz, "
          "depth %u, service %u ns, link %u MB/s)", rc ? strerror(-rc) : "0",
          t.clock_mhz, t.depth, t.service_ns, t.link_mbps);
    for (unsigned i = 0; i < 8; i++) {
        sum += p[i];
    }
    for (unsigned i = 0; i < 4; i++) {
        p[i] = sum + i;
    }
    rc = stats(fd, 0, &st);
    check(rc == 0 && st.path[0].reads == 8 && st.path[0].writes == 4 &&
          st.path[0].read_bytes == 64 && st.path[0].write_bytes == 32 &&
          st.path[1].reads == 0 && st.path[2].writes == 0,
          "STATS after 8 loads and 4 stores of 8 bytes: FP32 reads %" PRIu64 " writes %" PRIu64
          " read bytes %" PRIu64 " write bytes %" PRIu64, st.path[0].reads, st.path[0].writes,
          st.path[0].read_bytes, st.path[0].write_bytes);
    check(sysfs_u64(name, "stats/fp32_reads") == 8 && sysfs_u64(name, "stats/fp32_writes") == 4 &&
          sysfs_u64(name, "stats/fp32_write_bytes") == 32 &&
          sysfs_u64(name, "stats/gbinary_reads") == 0,
          "sysfs stats/fp32_reads %" PRIu64 ", fp32_writes %" PRIu64,
          sysfs_u64(name, "stats/fp32_reads"), sysfs_u64(name, "stats/fp32_writes"));
    memset(&t, 0, sizeof(t));
    t.size = sizeof(t);
    rc = xioctl(fd, NFABRIC_IOC_TIMING, &t);
    check(rc == 0 && t.path_accesses[0] == 12 && t.total_ps == t.path_time_ps[0] &&
          t.total_ps >= 12ull * t.service_ns * 1000 && sysfs_u64(name, "stats/total_ps") == t.total_ps,
          "TIMING: 12 FP32 accesses accounted (%" PRIu64 "), total %" PRIu64 " ps (sysfs %" PRIu64 ")",
          t.path_accesses[0], t.total_ps, sysfs_u64(name, "stats/total_ps"));
    rc = stats(fd, NFABRIC_STATS_F_CLEAR, &st);
    rc |= stats(fd, 0, &st);
    check(rc == 0 && st.path[0].reads == 0 && st.path[0].writes == 0,
          "STATS F_CLEAR returned the figures, then zeroed them (reads %" PRIu64 ")",
          st.path[0].reads);
    /* A refused register write (read-only MAGIC) through the mapping. */
    {
        volatile uint32_t *r = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

        if (r != MAP_FAILED) {
            r[0] = 1;
            munmap((void *)r, 4096);
        }
    }
    rc = stats(fd, NFABRIC_STATS_F_CLEAR_ERRORS, &st);
    check(rc == 0 && st.error_count >= 1 && st.last_error == NFABRIC_ERR_READONLY,
          "STATS: error_count %u, last_error %u after a write to MAGIC", st.error_count,
          st.last_error);
    rc = stats(fd, 0, &st);
    check(rc == 0 && st.error_count == 0 && sysfs_u64(name, "stats/error_count") == 0,
          "STATS F_CLEAR_ERRORS zeroed error_count (%u)", st.error_count);
    disable_all(fd, info.num_windows);
    nfabric_free(m);
}

static struct nfabric_ioc_round rnd(unsigned idx, uint32_t seq, uint32_t timeout_ms)
{
    struct nfabric_ioc_round r;

    memset(&r, 0, sizeof(r));
    r.size = sizeof(r);
    r.index = idx;
    r.seq = seq;
    r.timeout_ms = timeout_ms;
    return r;
}

static void on_usr1(int sig)
{
    (void)sig;
}

/* A child that waits for round seq of window idx; returns its pid. */
static pid_t round_waiter(int fd, unsigned idx, uint32_t seq, uint32_t timeout_ms, int wpipe)
{
    pid_t pid = fork();

    if (pid == 0) {
        struct nfabric_ioc_round r = rnd(idx, seq, timeout_ms);
        struct sigaction sa;
        int rc;

        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_usr1;   /* no SA_RESTART: the wait sees the signal */
        sigaction(SIGUSR1, &sa, NULL);
        rc = xioctl(fd, NFABRIC_IOC_ROUND_WAIT, &r);
        if (write(wpipe, &rc, sizeof(rc)) != sizeof(rc)) {
            _exit(1);
        }
        _exit(0);
    }
    return pid;
}

/* The waiter's ioctl result (its -errno). */
static int waiter_result(pid_t pid, int rpipe)
{
    int rc = 1;

    if (read(rpipe, &rc, sizeof(rc)) != sizeof(rc)) {
        rc = 1;
    }
    waitpid(pid, NULL, 0);
    return rc;
}

static void t_round(int fd)
{
    struct nfabric_ioc_window w = win(9, NFABRIC_PATH_GBINARY, 20ull << 20, 4096, 24ull << 20, 8, 0, 0);
    struct nfabric_ioc_window_cmd c = wcmd(9);
    struct nfabric_ioc_round r;
    uint32_t seq;
    int rc, p[2];
    pid_t pid;

    disable_all(fd, info.num_windows);
    if ((info.version & 0xffff) < 1) {
        r = rnd(9, 0, 0);
        rc = xioctl(fd, NFABRIC_IOC_ROUND_GET, &r);
        check(rc == -EOPNOTSUPP, "ROUND_GET on layout %u.%u: %s (want EOPNOTSUPP)",
              info.version >> 16, info.version & 0xffff, strerror(-rc));
        return;
    }
    r = rnd(9, 0, 0);
    rc = xioctl(fd, NFABRIC_IOC_ROUND_GET, &r);
    check(rc == -ENOENT, "ROUND_GET on a disabled window: %s (want ENOENT)", strerror(-rc));
    rc = xioctl(fd, NFABRIC_IOC_WIN_SET, &w);
    r = rnd(9, 0, 0);
    rc |= xioctl(fd, NFABRIC_IOC_ROUND_GET, &r);
    seq = r.seq;
    check(rc == 0 && r.heads_expected == 1 && r.heads_done == 0 && !r.all_done && r.done == 0,
          "ROUND_GET window 9: round %u, %u of %u heads done, all_done %u",
          r.seq, r.heads_done, r.heads_expected, r.all_done);
    r = rnd(9, seq, 30);
    rc = xioctl(fd, NFABRIC_IOC_ROUND_WAIT, &r);
    check(rc == -ETIMEDOUT && r.heads_done == 0, "ROUND_WAIT 30 ms before the completion: %s "
          "(want ETIMEDOUT), %u heads done", strerror(-rc), r.heads_done);
    r = rnd(9, seq + 1, 0);
    rc = xioctl(fd, NFABRIC_IOC_ROUND_COMPLETE, &r);
    check(rc == -ESTALE && r.seq == seq, "ROUND_COMPLETE of round %u (the window is at %u): %s "
          "(want ESTALE)", seq + 1, seq, strerror(-rc));
    if (pipe(p)) {
        check(false, "pipe: %s", strerror(errno));
        return;
    }
    pid = round_waiter(fd, 9, seq, 10000, p[1]);
    usleep(200000);
    r = rnd(9, seq, 0);
    rc = xioctl(fd, NFABRIC_IOC_ROUND_COMPLETE, &r);
    check(rc == 0 && r.all_done && r.done == 1 && r.heads_done == 1,
          "ROUND_COMPLETE round %u: %s, done mask 0x%x, all_done %u", seq,
          rc ? strerror(-rc) : "0", r.done, r.all_done);
    rc = waiter_result(pid, p[0]);
    check(rc == 0, "a ROUND_WAIT sleeping in another process returns on the completion: %s",
          rc ? strerror(-rc) : "0");
    r = rnd(9, seq, 1000);
    rc = xioctl(fd, NFABRIC_IOC_ROUND_WAIT, &r);
    check(rc == 0 && r.all_done, "ROUND_WAIT on a completed round returns at once: %s",
          rc ? strerror(-rc) : "0");
    rc = xioctl(fd, NFABRIC_IOC_WIN_CLEAR, &c);
    r = rnd(9, 0, 0);
    rc |= xioctl(fd, NFABRIC_IOC_ROUND_GET, &r);
    check(rc == 0 && r.seq == seq + 1 && r.done == 0 && !r.all_done,
          "WIN_CLEAR starts round %u (was %u), nothing done", r.seq, seq);
    r = rnd(9, seq, 1000);
    rc = xioctl(fd, NFABRIC_IOC_ROUND_WAIT, &r);
    check(rc == -ESTALE && r.seq == seq + 1, "ROUND_WAIT for the old round: %s (want ESTALE), "
          "window at round %u", strerror(-rc), r.seq);
    pid = round_waiter(fd, 9, seq + 1, 10000, p[1]);
    usleep(200000);
    kill(pid, SIGUSR1);
    rc = waiter_result(pid, p[0]);
    check(rc == -EINTR, "a signal ends a ROUND_WAIT: %s (want EINTR)", strerror(-rc));
    close(p[0]);
    close(p[1]);

    /* Bad arguments. */
    {
        static const char *const nm[] = { "ROUND_GET", "ROUND_COMPLETE", "ROUND_WAIT" };
        static const unsigned long cmds[] = { NFABRIC_IOC_ROUND_GET, NFABRIC_IOC_ROUND_COMPLETE,
                                              NFABRIC_IOC_ROUND_WAIT };

        for (int k = 0; k < 3; k++) {
            uint32_t s0 = k ? seq + 1 : 0;

            r = rnd(16, s0, 0);
            rc = xioctl(fd, cmds[k], &r);
            check(rc == -EINVAL, "%s index 16: %s (want EINVAL)", nm[k], strerror(-rc));
            r = rnd(9, s0, 0);
            r.size = 8;
            rc = xioctl(fd, cmds[k], &r);
            check(rc == -EINVAL, "%s wrong size: %s (want EINVAL)", nm[k], strerror(-rc));
            r = rnd(9, s0, 0);
            r.flags = 1;
            rc = xioctl(fd, cmds[k], &r);
            check(rc == -EINVAL, "%s flags: %s (want EINVAL)", nm[k], strerror(-rc));
            r = rnd(9, s0, 0);
            r.reserved[0] = 1;
            rc = xioctl(fd, cmds[k], &r);
            check(rc == -EINVAL, "%s reserved: %s (want EINVAL)", nm[k], strerror(-rc));
            r = rnd(9, s0, 0);
            r.all_done = 1;
            rc = xioctl(fd, cmds[k], &r);
            check(rc == -EINVAL, "%s output field set: %s (want EINVAL)", nm[k], strerror(-rc));
        }
        r = rnd(9, 5, 0);
        rc = xioctl(fd, NFABRIC_IOC_ROUND_GET, &r);
        check(rc == -EINVAL, "ROUND_GET with seq set: %s (want EINVAL)", strerror(-rc));
        r = rnd(9, seq + 1, 10);
        rc = xioctl(fd, NFABRIC_IOC_ROUND_COMPLETE, &r);
        check(rc == -EINVAL, "ROUND_COMPLETE with a timeout: %s (want EINVAL)", strerror(-rc));
        r = rnd(9, seq + 1, NFABRIC_ROUND_MAX_TIMEOUT_MS + 1);
        rc = xioctl(fd, NFABRIC_IOC_ROUND_WAIT, &r);
        check(rc == -EINVAL, "ROUND_WAIT timeout %u ms: %s (want EINVAL)",
              NFABRIC_ROUND_MAX_TIMEOUT_MS + 1, strerror(-rc));
        c = wcmd(9);
        xioctl(fd, NFABRIC_IOC_WIN_DISABLE, &c);
        r = rnd(9, seq + 1, 0);
        rc = xioctl(fd, NFABRIC_IOC_ROUND_COMPLETE, &r);
        check(rc == -ENOENT, "ROUND_COMPLETE on a disabled window: %s (want ENOENT)",
              strerror(-rc));
        r = rnd(9, seq + 1, 100);
        rc = xioctl(fd, NFABRIC_IOC_ROUND_WAIT, &r);
        check(rc == -ENOENT, "ROUND_WAIT on a disabled window: %s (want ENOENT)", strerror(-rc));
    }
}

struct bad {
    const char *what;
    int want;
    struct nfabric_ioc_window w;
};

/* ---- events: the device's interrupt (register layout 1.8) ------------ */

static int events(int fd, struct nfabric_ioc_events *e)
{
    memset(e, 0, sizeof(*e));
    e->size = sizeof(*e);
    return xioctl(fd, NFABRIC_IOC_EVENTS, e);
}

static int set_eventfd(int fd, int efd)
{
    struct nfabric_ioc_eventfd a = { .size = sizeof(a), .fd = efd };

    return xioctl(fd, NFABRIC_IOC_EVENTFD, &a);
}

static bool readable(int fd, int ms)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };

    return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/*
 * What EVENTS, poll() and an eventfd say about window 9's rounds: nothing
 * at open; a round completed by another process wakes a poll() sleeping
 * here, EVENTS then names window 9 once; the eventfd counts the message;
 * the arguments are checked like every ioctl's.
 */
static void t_events(int fd, const char *name)
{
    struct nfabric_ioc_window w = win(9, NFABRIC_PATH_GBINARY, 20ull << 20, 4096, 24ull << 20, 8, 0, 0);
    struct nfabric_ioc_events e;
    struct nfabric_ioc_round r;
    int f2, efd, rc, bad;
    uint64_t n = 0;
    double took;
    pid_t pid;

    if ((info.version & 0xffff) < 8) {
        rc = events(fd, &e);
        check(rc == 0 && !e.irq, "EVENTS on layout %u.%u: %s, irq %u (want 0: no interrupt)",
              info.version >> 16, info.version & 0xffff, strerror(-rc), e.irq);
        return;
    }
    disable_all(fd, info.num_windows);
    f2 = open_dev(name);
    rc = events(f2, &e);
    check(f2 >= 0 && rc == 0 && e.irq == 1 && !e.done && !e.incomplete && !e.head,
          "EVENTS on a new open file: %s, irq %u, nothing happened yet", strerror(-rc), e.irq);
    check(!readable(f2, 0), "poll() on it: not readable");
    rc = xioctl(fd, NFABRIC_IOC_WIN_SET, &w);
    r = rnd(9, 0, 0);
    rc |= xioctl(fd, NFABRIC_IOC_ROUND_GET, &r);
    efd = eventfd(0, EFD_NONBLOCK);
    rc |= set_eventfd(f2, efd);
    check(rc == 0 && efd >= 0, "window 9 enabled, an eventfd registered on the file: %s",
          strerror(-rc));
    pid = fork();
    if (pid == 0) {
        struct nfabric_ioc_round c = rnd(9, r.seq, 0);

        usleep(200000);
        _exit(xioctl(fd, NFABRIC_IOC_ROUND_COMPLETE, &c) ? 1 : 0);
    }
    {
        struct timespec a, b;

        clock_gettime(CLOCK_MONOTONIC, &a);
        rc = readable(f2, 10000);
        clock_gettime(CLOCK_MONOTONIC, &b);
        took = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
    }
    waitpid(pid, NULL, 0);
    check(rc && took >= 150 && took < 5000, "poll() asleep here wakes when another process "
          "completes window 9's round, after %.0f ms (the completion came at 200 ms)", took);
    rc = events(f2, &e);
    check(rc == 0 && e.done == 1u << 9 && !e.incomplete && !e.head,
          "EVENTS then: done 0x%x (want window 9 alone), incomplete 0x%x", e.done,
          e.incomplete);
    rc = events(f2, &e);
    check(rc == 0 && !e.done && !readable(f2, 0), "EVENTS again: nothing new, poll() not "
          "readable");
    check(read(efd, &n, sizeof(n)) == sizeof(n) && n >= 1, "the eventfd counted %llu message(s)",
          (unsigned long long)n);
    rc = events(fd, &e);
    check(rc == 0 && e.done == 1u << 9, "the other open file has its own news: done 0x%x",
          e.done);
    /* Bad arguments: EINVAL, EBADF; nothing registered by them. */
    bad = 0;
    memset(&e, 0, sizeof(e));
    e.size = sizeof(e) - 1;
    bad += xioctl(fd, NFABRIC_IOC_EVENTS, &e) != -EINVAL;
    memset(&e, 0, sizeof(e));
    e.size = sizeof(e);
    e.flags = 1;
    bad += xioctl(fd, NFABRIC_IOC_EVENTS, &e) != -EINVAL;
    memset(&e, 0, sizeof(e));
    e.size = sizeof(e);
    e.done = 1;
    bad += xioctl(fd, NFABRIC_IOC_EVENTS, &e) != -EINVAL;
    memset(&e, 0, sizeof(e));
    e.size = sizeof(e);
    e.reserved[1] = 1;
    bad += xioctl(fd, NFABRIC_IOC_EVENTS, &e) != -EINVAL;
    check(bad == 0, "EVENTS with a wrong size, flags, output or reserved field set: EINVAL "
          "(%d wrong)", bad);
    {
        int devnull = open("/dev/null", O_RDONLY), closed = dup(devnull);

        close(closed);
        rc = set_eventfd(f2, -2);
        check(rc == -EINVAL, "EVENTFD fd -2: %s (want EINVAL)", strerror(-rc));
        rc = set_eventfd(f2, devnull);
        check(rc == -EINVAL, "EVENTFD of /dev/null: %s (want EINVAL)", strerror(-rc));
        rc = set_eventfd(f2, closed);
        check(rc == -EBADF, "EVENTFD of a closed fd: %s (want EBADF)", strerror(-rc));
        rc = set_eventfd(f2, -1);
        check(rc == 0, "EVENTFD -1 (no longer): %s", strerror(-rc));
        close(devnull);
    }
    close(efd);
    close(f2);
    disable_all(fd, info.num_windows);
}

static void t_badarg(int fd)
{
    struct nfabric_ioc_info in;
    struct nfabric_ioc_window w, g;
    struct nfabric_ioc_window_cmd c;
    struct nfabric_ioc_stats st, st0;
    struct nfabric_ioc_timing t;
    const uint64_t M = 1ull << 20, end = info.mem_size;
    const unsigned GB = NFABRIC_PATH_GBINARY, GT = NFABRIC_PATH_GTERNARY, F = NFABRIC_PATH_FP32;
    struct bad bad[] = {
        { "wrong size", -EINVAL, win(0, F, 0, 4096, 0, 0, 0, 0) },
        { "flags 1", -EINVAL, win(0, F, 0, 4096, 0, 0, 0, 0) },
        { "reserved0", -EINVAL, win(0, F, 0, 4096, 0, 0, 0, 0) },
        { "reserved1", -EINVAL, win(0, F, 0, 4096, 0, 0, 0, 0) },
        { "reserved[1]", -EINVAL, win(0, F, 0, 4096, 0, 0, 0, 0) },
        { "output field enabled set", -EINVAL, win(0, F, 0, 4096, 0, 0, 0, 0) },
        { "output field contrib_writes set", -EINVAL, win(0, F, 0, 4096, 0, 0, 0, 0) },
        { "index 16", -EINVAL, win(16, F, 0, 4096, 0, 0, 0, 0) },
        { "index 0xffffffff", -EINVAL, win(0xffffffffu, F, 0, 4096, 0, 0, 0, 0) },
        { "path 3", -EINVAL, win(0, 3, 0, 4096, 0, 0, 0, 0) },
        { "path 0xffffffff", -EINVAL, win(0, 0xffffffffu, 0, 4096, 0, 0, 0, 0) },
        { "FP32 with width 8", -EINVAL, win(0, F, 0, 4096, 0, 8, 0, 0) },
        { "FP32 with tie 1", -EINVAL, win(0, F, 0, 4096, 0, 0, 1, 0) },
        { "FP32 with threshold 1", -EINVAL, win(0, F, 0, 4096, 0, 0, 0, 1) },
        { "FP32 with counters", -EINVAL, win(0, F, 0, 4096, M, 0, 0, 0) },
        { "G-Binary width 0", -EINVAL, win(0, GB, 0, 4096, M, 0, 0, 0) },
        { "G-Binary width 12", -EINVAL, win(0, GB, 0, 4096, M, 12, 0, 0) },
        { "G-Binary width 32", -EINVAL, win(0, GB, 0, 4096, M, 32, 0, 0) },
        { "G-Binary tie 2", -EINVAL, win(0, GB, 0, 4096, M, 8, 2, 0) },
        { "G-Binary threshold 1", -EINVAL, win(0, GB, 0, 4096, M, 8, 0, 1) },
        { "G-Ternary threshold 0", -EINVAL, win(0, GT, 0, 4096, M, 8, 0, 0) },
        { "G-Ternary threshold 128 at width 8", -EINVAL, win(0, GT, 0, 4096, M, 8, 0, 128) },
        { "G-Ternary threshold 32768 at width 16", -EINVAL, win(0, GT, 0, 4096, M, 16, 0, 32768) },
        { "G-Ternary tie 1", -EINVAL, win(0, GT, 0, 4096, M, 8, 1, 1) },
        { "base not 64-byte aligned", -EINVAL, win(0, F, 32, 4096, 0, 0, 0, 0) },
        { "length not a multiple of 64", -EINVAL, win(0, F, 0, 100, 0, 0, 0, 0) },
        { "length 0", -EINVAL, win(0, F, 0, 0, 0, 0, 0, 0) },
        { "counters not aligned", -EINVAL, win(0, GB, 0, 4096, M + 8, 8, 0, 0) },
        { "base at the end of memory", -ERANGE, win(0, F, end, 4096, 0, 0, 0, 0) },
        { "data past the end", -ERANGE, win(0, F, end - 4096, 8192, 0, 0, 0, 0) },
        { "range that wraps", -ERANGE, win(0, F, UINT64_MAX - 63, 128, 0, 0, 0, 0) },
        { "counters past the end", -ERANGE, win(0, GB, 0, 4096, end - 4096, 8, 0, 0) },
        { "counters wrap", -ERANGE, win(0, GB, 0, 4096, UINT64_MAX - 4095, 8, 0, 0) },
        { "data overlaps its own counters", -EINVAL, win(0, GB, 0, 4096, 2048, 8, 0, 0) },
    };
    int rc;

    disable_all(fd, info.num_windows);
    stats(fd, NFABRIC_STATS_F_CLEAR_ERRORS, &st0);
    bad[0].w.size = sizeof(w) - 8;
    bad[1].w.flags = 1;
    bad[2].w.reserved0 = 1;
    bad[3].w.reserved1 = 1;
    bad[4].w.reserved[1] = 1;
    bad[5].w.enabled = 1;
    bad[6].w.contrib_writes = 1;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        rc = xioctl(fd, NFABRIC_IOC_WIN_SET, &bad[i].w);
        check(rc == bad[i].want, "WIN_SET %s: %s (want %s)", bad[i].what,
              rc ? strerror(-rc) : "accepted", strerror(-bad[i].want));
    }
    rc = stats(fd, 0, &st);
    check(rc == 0 && st.error_count == 0 && st.enabled_mask == 0,
          "the driver refused all of them before the device saw them: error_count %u, "
          "enabled_mask 0x%x", st.error_count, st.enabled_mask);
    rc = xioctl(fd, NFABRIC_IOC_WIN_SET, NULL);
    check(rc == -EFAULT, "WIN_SET with a NULL argument: %s (want EFAULT)", strerror(-rc));
    rc = xioctl(fd, NFABRIC_IOC_WIN_SET, (void *)8);
    check(rc == -EFAULT, "WIN_SET with a bad pointer: %s (want EFAULT)", strerror(-rc));

    /* WIN_GET */
    rc = win_get(fd, 16, &g);
    check(rc == -EINVAL, "WIN_GET index 16: %s (want EINVAL)", strerror(-rc));
    memset(&g, 0, sizeof(g));
    g.size = sizeof(g) + 1;
    rc = xioctl(fd, NFABRIC_IOC_WIN_GET, &g);
    check(rc == -EINVAL, "WIN_GET wrong size: %s (want EINVAL)", strerror(-rc));
    memset(&g, 0, sizeof(g));
    g.size = sizeof(g);
    g.flags = 0x80000000u;
    rc = xioctl(fd, NFABRIC_IOC_WIN_GET, &g);
    check(rc == -EINVAL, "WIN_GET flags: %s (want EINVAL)", strerror(-rc));
    memset(&g, 0, sizeof(g));
    g.size = sizeof(g);
    g.reserved[0] = 1;
    rc = xioctl(fd, NFABRIC_IOC_WIN_GET, &g);
    check(rc == -EINVAL, "WIN_GET reserved: %s (want EINVAL)", strerror(-rc));

    /* WIN_DISABLE, WIN_CLEAR */
    for (int k = 0; k < 2; k++) {
        unsigned long cmd = k ? NFABRIC_IOC_WIN_CLEAR : NFABRIC_IOC_WIN_DISABLE;
        const char *nm = k ? "WIN_CLEAR" : "WIN_DISABLE";

        c = wcmd(16);
        rc = xioctl(fd, cmd, &c);
        check(rc == -EINVAL, "%s index 16: %s (want EINVAL)", nm, strerror(-rc));
        c = wcmd(0);
        c.size = 8;
        rc = xioctl(fd, cmd, &c);
        check(rc == -EINVAL, "%s wrong size: %s (want EINVAL)", nm, strerror(-rc));
        c = wcmd(0);
        c.flags = 2;
        rc = xioctl(fd, cmd, &c);
        check(rc == -EINVAL, "%s flags: %s (want EINVAL)", nm, strerror(-rc));
        c = wcmd(0);
        c.reserved = 1;
        rc = xioctl(fd, cmd, &c);
        check(rc == -EINVAL, "%s reserved: %s (want EINVAL)", nm, strerror(-rc));
    }

    /* INFO */
    memset(&in, 0, sizeof(in));
    in.size = 4;
    rc = xioctl(fd, NFABRIC_IOC_INFO, &in);
    check(rc == -EINVAL, "INFO wrong size: %s (want EINVAL)", strerror(-rc));
    memset(&in, 0, sizeof(in));
    in.size = sizeof(in);
    in.flags = 1;
    rc = xioctl(fd, NFABRIC_IOC_INFO, &in);
    check(rc == -EINVAL, "INFO flags: %s (want EINVAL)", strerror(-rc));

    /* STATS, TIMING */
    memset(&st, 0, sizeof(st));
    st.size = sizeof(st);
    st.flags = 4;
    rc = xioctl(fd, NFABRIC_IOC_STATS, &st);
    check(rc == -EINVAL, "STATS unknown flag 4: %s (want EINVAL)", strerror(-rc));
    memset(&st, 0, sizeof(st));
    st.size = sizeof(st);
    st.reserved[1] = 7;
    rc = xioctl(fd, NFABRIC_IOC_STATS, &st);
    check(rc == -EINVAL, "STATS reserved: %s (want EINVAL)", strerror(-rc));
    memset(&st, 0, sizeof(st));
    st.size = 0;
    rc = xioctl(fd, NFABRIC_IOC_STATS, &st);
    check(rc == -EINVAL, "STATS size 0: %s (want EINVAL)", strerror(-rc));
    memset(&t, 0, sizeof(t));
    t.size = sizeof(t);
    t.flags = 2;
    rc = xioctl(fd, NFABRIC_IOC_TIMING, &t);
    check(rc == -EINVAL, "TIMING unknown flag 2: %s (want EINVAL)", strerror(-rc));
    memset(&t, 0, sizeof(t));
    t.size = sizeof(t);
    t.reserved0 = 1;
    rc = xioctl(fd, NFABRIC_IOC_TIMING, &t);
    check(rc == -EINVAL, "TIMING reserved: %s (want EINVAL)", strerror(-rc));

    /* Unknown commands. */
    rc = xioctl(fd, _IOWR(NFABRIC_IOC_MAGIC, 0x0a, struct nfabric_ioc_info), &in);
    check(rc == -ENOTTY, "unknown command nr 10: %s (want ENOTTY)", strerror(-rc));
    rc = xioctl(fd, _IOWR(NFABRIC_IOC_MAGIC, 0x00, uint64_t), &in);
    check(rc == -ENOTTY, "INFO with a wrong size in the command: %s (want ENOTTY)",
          strerror(-rc));
    rc = xioctl(fd, _IOR('T', 0x13, int), &rc);
    check(rc == -ENOTTY, "a tty ioctl: %s (want ENOTTY)", strerror(-rc));

    /* mmap */
    {
        void *p = mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, 0);

        check(p == MAP_FAILED && errno == EINVAL, "mmap of 2 pages: %s (want EINVAL)",
              p == MAP_FAILED ? strerror(errno) : "mapped");
        if (p != MAP_FAILED) {
            munmap(p, 8192);
        }
        p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 4096);
        check(p == MAP_FAILED && errno == EINVAL, "mmap at offset 4096: %s (want EINVAL)",
              p == MAP_FAILED ? strerror(errno) : "mapped");
        if (p != MAP_FAILED) {
            munmap(p, 4096);
        }
        p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
        check(p != MAP_FAILED && *(volatile uint32_t *)p == NFABRIC_MAGIC,
              "mmap of the register page reads MAGIC 0x%08x",
              p != MAP_FAILED ? *(volatile uint32_t *)p : 0);
        if (p != MAP_FAILED) {
            munmap(p, 4096);
        }
    }
    rc = (int)read(fd, &in, 4);
    check(rc < 0 && errno == EINVAL, "read() on the device: %s (want EINVAL)",
          rc < 0 ? strerror(errno) : "succeeded");
}

/*
 * K processes, each with its own open file (and two of them sharing one
 * file across fork), hammer the same window with SET/GET/DISABLE and STATS.
 * With the driver's mutex no configuration write can land while another
 * opener enabled the window, so the device never refuses one.
 */
static void t_concurrent(const char *name)
{
    enum { K = 4, ITER = 300 };
    int pipes[K][2], shared = open_dev(name), fd;
    struct nfabric_ioc_stats st;
    unsigned total_ok = 0, total_busy = 0, total_bad = 0;

    if (!check(shared >= 0, "open %s: %s", name, shared < 0 ? strerror(errno) : "ok")) {
        return;
    }
    disable_all(shared, info.num_windows);
    stats(shared, NFABRIC_STATS_F_CLEAR_ERRORS, &st);
    for (int k = 0; k < K; k++) {
        if (pipe(pipes[k])) {
            check(false, "pipe: %s", strerror(errno));
            return;
        }
        if (fork() == 0) {
            unsigned r[3] = { 0, 0, 0 };

            fd = k == K - 1 ? shared : open_dev(name);
            for (int i = 0; fd >= 0 && i < ITER; i++) {
                struct nfabric_ioc_window w = win(7, NFABRIC_PATH_GBINARY, 8ull << 20,
                                              64u << (k % 3), 12ull << 20, 8, 0, 0);
                struct nfabric_ioc_window g;
                struct nfabric_ioc_window_cmd c = wcmd(7);
                struct nfabric_ioc_stats s;
                int rc = xioctl(fd, NFABRIC_IOC_WIN_SET, &w);

                r[rc == 0 ? 0 : rc == -EBUSY ? 1 : 2]++;
                if (win_get(fd, 7, &g) || (g.enabled && g.error)) {
                    r[2]++;
                }
                if (rc == 0 && xioctl(fd, NFABRIC_IOC_WIN_DISABLE, &c)) {
                    r[2]++;
                }
                if (stats(fd, 0, &s)) {
                    r[2]++;
                }
            }
            if (fd < 0) {
                r[2] = 1;
            }
            if (write(pipes[k][1], r, sizeof(r)) != sizeof(r)) {
                _exit(1);
            }
            _exit(0);
        }
        close(pipes[k][1]);
    }
    for (int k = 0; k < K; k++) {
        unsigned r[3] = { 0, 0, 1 };

        if (read(pipes[k][0], r, sizeof(r)) != sizeof(r)) {
            r[2] = 1;
        }
        close(pipes[k][0]);
        total_ok += r[0];
        total_busy += r[1];
        total_bad += r[2];
    }
    while (wait(NULL) > 0) {
    }
    stats(shared, 0, &st);
    check(total_bad == 0 && total_ok > 0 && total_ok + total_busy == K * ITER,
          "%d openers x %d SET/GET/DISABLE/STATS on one window: %u enabled, %u EBUSY, "
          "%u unexpected", K, ITER, total_ok, total_busy, total_bad);
    check(st.error_count == 0 && st.enabled_mask == 0,
          "the device refused no register write (error_count %u), no window left enabled "
          "(0x%x)", st.error_count, st.enabled_mask);
    close(shared);
}

static int kmsg_marker(void)
{
    int fd = open("/dev/kmsg", O_WRONLY);
    int rc = -1;

    if (fd >= 0) {
        rc = write(fd, MARKER "\n", strlen(MARKER) + 1) > 0 ? 0 : -1;
        close(fd);
    }
    return rc;
}

/*
 * A process that calls the ioctls (or reads the register page) in a loop
 * while the device is unbound: the calls end with ENODEV, the reads with
 * SIGBUS (the unbind zaps the page; the next read faults); anything else
 * exits with another status.
 */
static pid_t hammer(int fd, bool touch)
{
    pid_t pid = fork();

    if (pid == 0) {
        volatile uint32_t *r = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
        struct nfabric_ioc_info in;
        struct nfabric_ioc_window w, s = win(5, NFABRIC_PATH_FP32, 8ull << 20, 4096,
                                             0, 0, 0, 0);
        struct nfabric_ioc_window_cmd c = wcmd(5);
        struct nfabric_ioc_stats st;
        uint64_t t0 = 0;

        alarm(60);          /* never hang the test: SIGALRM fails the check */
        for (unsigned long n = 0;; n++) {
            int rc[5];

            if (touch && r != MAP_FAILED) {
                if (r[0] != NFABRIC_MAGIC) {
                    _exit(1);
                }
                continue;
            }
            memset(&in, 0, sizeof(in));
            in.size = sizeof(in);
            rc[0] = xioctl(fd, NFABRIC_IOC_INFO, &in);
            rc[1] = win_get(fd, 5, &w);
            rc[2] = stats(fd, 0, &st);
            w = s;
            rc[3] = xioctl(fd, NFABRIC_IOC_WIN_SET, &w);
            rc[4] = xioctl(fd, NFABRIC_IOC_WIN_DISABLE, &c);
            if (rc[0] == -ENODEV && rc[1] == -ENODEV && rc[2] == -ENODEV &&
                rc[3] == -ENODEV && rc[4] == -ENODEV) {
                _exit(0);
            }
            for (int i = 0; i < 5; i++) {
                if (rc[i] && rc[i] != -ENODEV && !(i == 3 && rc[i] == -EBUSY)) {
                    _exit(10 + i);
                }
            }
            if (n == 0) {
                t0 = (uint64_t)time(NULL);
            } else if ((uint64_t)time(NULL) > t0 + 60) {
                _exit(2);
            }
        }
    }
    return pid;
}

static void t_unbind(const char *name0)
{
    char name[32], path[256];
    struct nfabric_ioc_info in;
    volatile uint32_t *r;
    int fd = open_dev(name0), fd2, rc, status = 0, wp[2];
    pid_t pid, waiter = -1, hcalls, htouch;

    if (!check(fd >= 0, "open %s: %s", name0, fd < 0 ? strerror(errno) : "ok")) {
        return;
    }
    r = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    check(r != MAP_FAILED && r[0] == NFABRIC_MAGIC, "register page mapped before unbind");
    if ((info.version & 0xffff) >= 1 && pipe(wp) == 0) {
        struct nfabric_ioc_window w = win(2, NFABRIC_PATH_FP32, 0, 4096, 0, 0, 0, 0);
        struct nfabric_ioc_round q = rnd(2, 0, 0);

        xioctl(fd, NFABRIC_IOC_WIN_SET, &w);
        xioctl(fd, NFABRIC_IOC_ROUND_GET, &q);
        waiter = round_waiter(fd, 2, q.seq, 20000, wp[1]);
        usleep(200000);
    }
    hcalls = hammer(fd, false);
    htouch = hammer(fd, true);
    usleep(300000);
    rc = write_sysfs("/sys/bus/pci/drivers/cxl_pci/unbind", info.pci_dev);
    check(rc == 0, "unbind %s from cxl_pci with %s open and mapped: %s", info.pci_dev, name0,
          rc ? strerror(errno) : "done");
    status = -1;
    if (hcalls > 0) {
        waitpid(hcalls, &status, 0);
    }
    check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a process calling INFO, WIN_GET, "
          "STATS, WIN_SET, WIN_DISABLE in a loop through the unbind: every call 0 (or EBUSY) "
          "then ENODEV (status 0x%x)", status);
    status = -1;
    if (htouch > 0) {
        waitpid(htouch, &status, 0);
    }
    check(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS, "a process faulting the register "
          "page in a loop through the unbind: MAGIC, then %s",
          WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "no signal");
    status = 0;
    if (waiter > 0) {
        rc = waiter_result(waiter, wp[0]);
        check(rc == -ENODEV, "a ROUND_WAIT sleeping at the unbind returns %s (want ENODEV)",
              strerror(-rc));
        close(wp[0]);
        close(wp[1]);
    }
    snprintf(path, sizeof(path), CLASS_DIR "/%s", name0);
    check(access(path, F_OK) != 0, "%s is gone", path);
    memset(&in, 0, sizeof(in));
    in.size = sizeof(in);
    rc = xioctl(fd, NFABRIC_IOC_INFO, &in);
    check(rc == -ENODEV, "INFO on the open file: %s (want ENODEV)", strerror(-rc));
    {
        struct nfabric_ioc_window w = win(0, NFABRIC_PATH_FP32, 0, 4096, 0, 0, 0, 0);

        rc = xioctl(fd, NFABRIC_IOC_WIN_SET, &w);
        check(rc == -ENODEV, "WIN_SET on the open file: %s (want ENODEV)", strerror(-rc));
    }
    pid = fork();
    if (pid == 0) {
        volatile uint32_t v = r != MAP_FAILED ? r[0] : 0;

        (void)v;
        _exit(0);
    }
    waitpid(pid, &status, 0);
    check(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS,
          "the old register mapping is revoked: a read gets %s",
          WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "no signal");
    {
        void *p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);

        check(p == MAP_FAILED && errno == ENODEV, "a new mmap: %s (want ENODEV)",
              p == MAP_FAILED ? strerror(errno) : "mapped");
    }
    fd2 = open_dev(name0);
    check(fd2 < 0, "open /dev/%s again: %s", name0, fd2 < 0 ? strerror(errno) : "opened");
    if (fd2 >= 0) {
        close(fd2);
    }
    if (r != MAP_FAILED) {
        munmap((void *)r, 4096);
    }
    check(close(fd) == 0, "close the revoked file");
    rc = write_sysfs("/sys/bus/pci/drivers/cxl_pci/bind", info.pci_dev);
    check(rc == 0, "bind %s to cxl_pci again: %s", info.pci_dev, rc ? strerror(errno) : "done");
    rc = wait_dev(name, sizeof(name), true);
    fd = rc ? -1 : open_dev(name);
    memset(&in, 0, sizeof(in));
    in.size = sizeof(in);
    rc = fd >= 0 ? xioctl(fd, NFABRIC_IOC_INFO, &in) : -ENODEV;
    check(rc == 0 && in.version == info.version && !strcmp(in.pci_dev, info.pci_dev),
          "the driver attached again as %s: INFO %s", fd >= 0 ? name : "(none)",
          rc ? strerror(-rc) : "ok");
    if (fd >= 0) {
        close(fd);
    }
}

static int run(const char *cmd)
{
    int rc = system(cmd);

    return rc == -1 ? -1 : WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

static void t_reload(void)
{
    char name[32], cmd[256], ko[200];
    struct utsname u;
    struct nfabric_ioc_info in;
    int fd, rc;

    uname(&u);
    snprintf(ko, sizeof(ko), "/lib/modules/%s/extra/nfabric.ko", u.release);
    if (!check(find_dev(name, sizeof(name)) == 0, "a device before reload: %s", name)) {
        return;
    }
    fd = open_dev(name);
    rc = run("rmmod nfabric 2>/dev/null");
    check(fd >= 0 && rc != 0 && access("/sys/module/nfabric", F_OK) == 0,
          "rmmod while %s is open is refused (status %d)", name, rc);
    if (fd >= 0) {
        close(fd);
    }
    rc = run("rmmod nfabric");
    check(rc == 0 && access("/sys/module/nfabric", F_OK) != 0 && access(CLASS_DIR, F_OK) != 0,
          "rmmod once closed: status %d, module and class gone", rc);
    snprintf(cmd, sizeof(cmd), "insmod %s", ko);
    rc = run(cmd);
    check(rc == 0, "insmod %s: status %d", ko, rc);
    rc = wait_dev(name, sizeof(name), true);
    fd = rc ? -1 : open_dev(name);
    memset(&in, 0, sizeof(in));
    in.size = sizeof(in);
    rc = fd >= 0 ? xioctl(fd, NFABRIC_IOC_INFO, &in) : -ENODEV;
    check(rc == 0 && in.version == info.version, "reloaded: %s answers INFO (%s)",
          fd >= 0 ? name : "(none)", rc ? strerror(-rc) : "ok");
    if (fd >= 0) {
        close(fd);
    }
}

/*
 * Nothing at warning level or worse in the kernel log since the marker,
 * but the two expected lines of loading an unsigned out-of-tree module and
 * the kernel's notes that the emulated CPU is slow (TCG on a busy host:
 * "hrtimer: interrupt took N ns", clocksource skew): they say nothing of the
 * driver.  BUG, Oops, WARNING, Bad page and Call Trace are never excused.
 */
static bool t_dmesg_benign(const char *line)
{
    return strstr(line, "taints kernel") || strstr(line, "module verification failed") ||
           strstr(line, "hrtimer: interrupt took") || strstr(line, "clocksource:");
}

static void t_dmesg(void)
{
    int len = klogctl(10, NULL, 0);   /* SYSLOG_ACTION_SIZE_BUFFER */
    char *buf, *line, *save, *start;
    unsigned bad = 0, seen = 0;

    if (len <= 0 || !(buf = calloc(1, (size_t)len + 1))) {
        check(false, "kernel log: %s", strerror(errno));
        return;
    }
    len = klogctl(3, buf, len);       /* SYSLOG_ACTION_READ_ALL */
    if (len < 0) {
        check(false, "kernel log: %s", strerror(errno));
        free(buf);
        return;
    }
    buf[len] = 0;
    start = strstr(buf, MARKER);
    if (!check(start != NULL, "kernel log has the start marker")) {
        free(buf);
        return;
    }
    for (line = strtok_r(start, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        int lvl = line[0] == '<' ? line[1] - '0' : 6;

        seen++;
        if ((lvl <= 4 && !t_dmesg_benign(line)) ||
            strstr(line, "WARNING") || strstr(line, "BUG:") || strstr(line, "kernel BUG") ||
            strstr(line, "Oops") ||
            strstr(line, "Bad page") || strstr(line, "Call Trace") ||
            strstr(line, "corruption")) {
            printf("# %s\n", line);
            bad++;
        }
    }
    check(bad == 0, "kernel log since the start: %u lines, %u warnings or worse", seen, bad);
    free(buf);
}

/* ---- issue 22: hostile mappings, privileges, stale code, System RAM ---- */

/*
 * Register mappings the driver must refuse without harm: private (a
 * copy-on-write mapping of a PFN map, once a kernel BUG with the device's
 * mutex left held) and executable ones; then the device still answers
 * (nothing left locked), and an ioctl whose argument is the register
 * mapping itself (the copy faults the page in) neither deadlocks nor
 * reaches the device.
 */
static void t_mmap(int fd, const char *name)
{
    struct nfabric_ioc_stats st;
    char path[256], buf[64];
    void *p;
    int rc;

    p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
    check(p == MAP_FAILED && errno == EINVAL, "mmap(MAP_PRIVATE) of the register page: %s "
          "(want EINVAL)", p == MAP_FAILED ? strerror(errno) : "mapped");
    if (p != MAP_FAILED) {
        munmap(p, 4096);
    }
    p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    check(p == MAP_FAILED && errno == EINVAL, "mmap(MAP_PRIVATE, PROT_WRITE): %s (want EINVAL)",
          p == MAP_FAILED ? strerror(errno) : "mapped");
    if (p != MAP_FAILED) {
        munmap(p, 4096);
    }
    p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
    check(p == MAP_FAILED && errno == EPERM, "mmap(PROT_EXEC) of the register page: %s "
          "(want EPERM)", p == MAP_FAILED ? strerror(errno) : "mapped");
    if (p != MAP_FAILED) {
        munmap(p, 4096);
    }
    p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    if (check(p != MAP_FAILED, "mmap(MAP_SHARED, PROT_READ): %s",
              p == MAP_FAILED ? strerror(errno) : "mapped")) {
        rc = mprotect(p, 4096, PROT_READ | PROT_EXEC);
        check(rc != 0 && errno == EACCES, "mprotect(PROT_EXEC) on the mapping later: %s "
              "(want EACCES)", rc ? strerror(errno) : "allowed");
        memset(&st, 0x5a, sizeof(st));
        rc = xioctl(fd, NFABRIC_IOC_STATS, p);
        check(rc == -EINVAL, "STATS whose argument is the register mapping (faulted in "
              "by the copy): %s (want EINVAL: size is MAGIC), no deadlock", strerror(-rc));
        munmap(p, 4096);
    }
    memset(&info, 0, sizeof(info));
    info.size = sizeof(info);
    rc = xioctl(fd, NFABRIC_IOC_INFO, &info);
    check(rc == 0, "after the refused mappings INFO answers: %s", rc ? strerror(-rc) : "ok");
    snprintf(path, sizeof(path), CLASS_DIR "/%s/stats/error_count", name);
    check(read_sysfs(path, buf, sizeof(buf)) == 0 && buf[0], "and sysfs stats/error_count "
          "reads %s (the device's mutex is free)", buf);
    rc = system("nfabricctl info >/dev/null");
    check(rc == 0, "nfabricctl info runs (status %d)", rc);
}

/* ---- random arguments ---------------------------------------------- */

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd64(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

/*
 * Every ioctl (and two unknown ones) with random arguments: random bytes,
 * often with the right size and no flags so that the checks further in
 * are reached, sometimes a bad pointer (NULL, unmapped, a kernel address,
 * a buffer ending at an unmapped page).  Each call returns 0 or a
 * documented errno, never EIO (the device refusing what the driver
 * accepted), and the device refuses no register write; windows left
 * enabled are disabled after.  Then calls whose argument is the register
 * mapping itself (the device counts the copy's byte reads of its
 * registers as errors: not the driver's).
 */
static void t_fuzz(int fd)
{
    static const unsigned long cmds[] = {
        NFABRIC_IOC_INFO, NFABRIC_IOC_WIN_SET, NFABRIC_IOC_WIN_GET,
        NFABRIC_IOC_WIN_DISABLE, NFABRIC_IOC_WIN_CLEAR, NFABRIC_IOC_STATS,
        NFABRIC_IOC_TIMING, NFABRIC_IOC_ROUND_GET, NFABRIC_IOC_ROUND_COMPLETE,
        NFABRIC_IOC_ROUND_WAIT, _IOWR(NFABRIC_IOC_MAGIC, 0x0b, struct nfabric_ioc_window),
        _IOWR(NFABRIC_IOC_MAGIC, 0x01, struct nfabric_ioc_round),
    };
    enum { ITER = 4000 };
    unsigned counts[8] = { 0 }, bad = 0, ok = 0;
    uint8_t *page = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    void *regs = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    struct nfabric_ioc_stats st0, st;

    if (!check(page != MAP_FAILED && regs != MAP_FAILED, "fuzz: buffers mapped")) {
        return;
    }
    munmap(page + 4096, 4096);          /* a buffer may end at an unmapped page */
    disable_all(fd, info.num_windows);
    stats(fd, NFABRIC_STATS_F_CLEAR_ERRORS, &st0);
    for (unsigned n = 0; n < ITER; n++) {
        unsigned long cmd = cmds[rnd64() % (sizeof(cmds) / sizeof(cmds[0]))];
        size_t sz = _IOC_SIZE(cmd);
        uint8_t *buf = page + 4096 - sz;
        uint64_t r = rnd64();
        void *arg = buf;
        int rc;

        for (size_t k = 0; k < sz; k++) {
            buf[k] = (uint8_t)rnd64();
        }
        if (r & 1) {
            uint32_t hdr[2] = { (uint32_t)sz, 0 };

            memcpy(buf, hdr, sizeof(hdr));
            /* Mostly zeroes after the header, a few random fields. */
            for (size_t k = 8; k < sz; k++) {
                buf[k] = (r >> 8) & 1 ? buf[k] & -(uint8_t)((rnd64() & 7) == 0) : buf[k];
            }
        }
        if (cmd == NFABRIC_IOC_ROUND_WAIT) {
            struct nfabric_ioc_round q;

            memcpy(&q, buf, sizeof(q));
            q.timeout_ms %= 3;          /* short waits only */
            memcpy(buf, &q, sizeof(q));
        }
        switch ((r >> 16) % 16) {
        case 0: arg = NULL; break;
        case 1: arg = page + 4096; break;                          /* unmapped */
        case 2: arg = (void *)(uintptr_t)0xffff888000000000ull; break;  /* kernel */
        case 3: arg = buf + 1; break;                              /* runs off the end */
        default: break;
        }
        rc = xioctl(fd, cmd, arg);
        switch (-rc) {
        case 0: counts[0]++; ok++; break;
        case EINVAL: counts[1]++; break;
        case EFAULT: counts[2]++; break;
        case ENOTTY: counts[3]++; break;
        case ERANGE: case EBUSY: case EXDEV: counts[4]++; break;
        case ENOENT: case ESTALE: case ETIMEDOUT: case EOPNOTSUPP: counts[5]++; break;
        default:
            if (bad++ < 5) {
                printf("# fuzz: call %u, command 0x%lx: %s\n", n, cmd, strerror(-rc));
            }
        }
    }
    check(bad == 0, "fuzz: %u random calls: %u returned 0, %u EINVAL, %u EFAULT, %u ENOTTY, "
          "%u ERANGE/EBUSY/EXDEV, %u round errors, %u anything else (EIO would be the "
          "device refusing what the driver accepted)", ITER, counts[0], counts[1], counts[2],
          counts[3], counts[4], counts[5], bad);
    disable_all(fd, info.num_windows);
    stats(fd, 0, &st);
    check(st.error_count == st0.error_count && st.enabled_mask == 0,
          "fuzz: the device refused no register write the driver made (error_count %u), "
          "nothing left enabled", st.error_count);
    bad = 0;
    for (unsigned n = 0; n < 200; n++) {
        unsigned long cmd = cmds[n % (sizeof(cmds) / sizeof(cmds[0]))];
        int rc = xioctl(fd, cmd, regs);

        bad += rc != -EINVAL && rc != -ENOTTY;
    }
    check(bad == 0, "fuzz: 200 calls whose argument is the register mapping: EINVAL (size "
          "is MAGIC) or ENOTTY, %u other", bad);
    stats(fd, NFABRIC_STATS_F_CLEAR_ERRORS, &st);
    munmap(page, 4096);
    munmap(regs, 4096);
    (void)ok;
}

/* ---- privileges ------------------------------------------------------ */

enum { OP_INFO, OP_WIN_GET, OP_STATS, OP_TIMING, OP_ROUND_GET, OP_EVENTS, OP_SYSFS_READ,
       OP_WIN_SET, OP_WIN_DISABLE, OP_WIN_CLEAR, OP_ROUND_COMPLETE,
       OP_STATS_CLEAR, OP_STATS_CLEAR_ERRORS, OP_TIMING_CLEAR, OP_SYSFS_CLEAR,
       OP_MMAP, OP_COUNT };

static const struct {
    const char *what;
    bool admin;         /* needs a capability (docs/driver.md) */
    const char *cap;
} ops[OP_COUNT] = {
    [OP_INFO] = { "INFO", false, "" },
    [OP_WIN_GET] = { "WIN_GET", false, "" },
    [OP_STATS] = { "STATS", false, "" },
    [OP_TIMING] = { "TIMING", false, "" },
    [OP_ROUND_GET] = { "ROUND_GET", false, "" },
    [OP_EVENTS] = { "EVENTS", false, "" },
    [OP_SYSFS_READ] = { "read sysfs stats/fp32_reads", false, "" },
    [OP_WIN_SET] = { "WIN_SET", true, "CAP_SYS_ADMIN" },
    [OP_WIN_DISABLE] = { "WIN_DISABLE", true, "CAP_SYS_ADMIN" },
    [OP_WIN_CLEAR] = { "WIN_CLEAR", true, "CAP_SYS_ADMIN" },
    [OP_ROUND_COMPLETE] = { "ROUND_COMPLETE", true, "CAP_SYS_ADMIN" },
    [OP_STATS_CLEAR] = { "STATS F_CLEAR", true, "CAP_SYS_ADMIN" },
    [OP_STATS_CLEAR_ERRORS] = { "STATS F_CLEAR_ERRORS", true, "CAP_SYS_ADMIN" },
    [OP_TIMING_CLEAR] = { "TIMING F_CLEAR", true, "CAP_SYS_ADMIN" },
    [OP_SYSFS_CLEAR] = { "write sysfs stats/clear", true, "CAP_SYS_ADMIN" },
    [OP_MMAP] = { "mmap of the register page", true, "CAP_SYS_RAWIO" },
};

static int sysfs_rc(const char *path, const char *val, bool wr)
{
    char buf[64];
    int fd = open(path, wr ? O_WRONLY : O_RDONLY);
    ssize_t n;

    if (fd < 0) {
        return -errno;
    }
    n = wr ? write(fd, val, strlen(val)) : read(fd, buf, sizeof(buf));
    n = n < 0 ? -errno : 0;
    close(fd);
    return (int)n;
}

/*
 * Each operation once on window @idx (enabled by the caller, a round
 * open): the result of each, 0 or -errno.  The privileged ones are done so
 * that the state is the same afterwards when they succeed (the window is
 * set again after being disabled).
 */
static void priv_ops(const char *name, unsigned idx, const struct nfabric_ioc_window *w0,
                     int *rc)
{
    struct nfabric_ioc_window w;
    struct nfabric_ioc_window_cmd c = wcmd(idx);
    struct nfabric_ioc_stats st;
    struct nfabric_ioc_timing t;
    struct nfabric_ioc_round r;
    struct nfabric_ioc_info in;
    char path[256];
    int fd = open_dev(name);
    void *p;

    for (int i = 0; i < OP_COUNT; i++) {
        rc[i] = fd < 0 ? -errno : -EIO;
    }
    if (fd < 0) {
        return;
    }
    memset(&in, 0, sizeof(in));
    in.size = sizeof(in);
    rc[OP_INFO] = xioctl(fd, NFABRIC_IOC_INFO, &in);
    rc[OP_WIN_GET] = win_get(fd, idx, &w);
    rc[OP_STATS] = stats(fd, 0, &st);
    memset(&t, 0, sizeof(t));
    t.size = sizeof(t);
    rc[OP_TIMING] = xioctl(fd, NFABRIC_IOC_TIMING, &t);
    r = rnd(idx, 0, 0);
    rc[OP_ROUND_GET] = xioctl(fd, NFABRIC_IOC_ROUND_GET, &r);
    {
        struct nfabric_ioc_events e;

        rc[OP_EVENTS] = events(fd, &e);
    }
    snprintf(path, sizeof(path), CLASS_DIR "/%s/stats/fp32_reads", name);
    rc[OP_SYSFS_READ] = sysfs_rc(path, NULL, false);
    rc[OP_WIN_CLEAR] = xioctl(fd, NFABRIC_IOC_WIN_CLEAR, &c);
    rc[OP_WIN_DISABLE] = xioctl(fd, NFABRIC_IOC_WIN_DISABLE, &c);
    w = *w0;
    rc[OP_WIN_SET] = xioctl(fd, NFABRIC_IOC_WIN_SET, &w);
    r = rnd(idx, 0, 0);
    xioctl(fd, NFABRIC_IOC_ROUND_GET, &r);
    r = rnd(idx, r.seq, 0);
    rc[OP_ROUND_COMPLETE] = xioctl(fd, NFABRIC_IOC_ROUND_COMPLETE, &r);
    rc[OP_STATS_CLEAR] = stats(fd, NFABRIC_STATS_F_CLEAR, &st);
    rc[OP_STATS_CLEAR_ERRORS] = stats(fd, NFABRIC_STATS_F_CLEAR_ERRORS, &st);
    memset(&t, 0, sizeof(t));
    t.size = sizeof(t);
    t.flags = NFABRIC_TIMING_F_CLEAR;
    rc[OP_TIMING_CLEAR] = xioctl(fd, NFABRIC_IOC_TIMING, &t);
    snprintf(path, sizeof(path), CLASS_DIR "/%s/stats/clear", name);
    rc[OP_SYSFS_CLEAR] = sysfs_rc(path, "stats", true);
    p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    rc[OP_MMAP] = p == MAP_FAILED ? -errno : 0;
    if (p != MAP_FAILED) {
        munmap(p, 4096);
    }
    close(fd);
}

/*
 * Run priv_ops as uid/gid 65534 (nobody: no capability) in a child; its
 * results through a pipe.  0 or -1 (the child could not drop privileges).
 */
static int priv_ops_as_nobody(const char *name, unsigned idx,
                              const struct nfabric_ioc_window *w0, int *rc)
{
    int pp[2], status = 0;
    pid_t pid;
    ssize_t n;

    if (pipe(pp)) {
        return -1;
    }
    pid = fork();
    if (pid == 0) {
        int res[OP_COUNT];

        close(pp[0]);
        /* As root, setgid/setuid set every id; a uid other than 0 has no capability. */
        if (setgroups(0, NULL) || setgid(65534) || setuid(65534)) {
            _exit(3);
        }
        priv_ops(name, idx, w0, res);
        n = write(pp[1], res, sizeof(res));
        _exit(n == (ssize_t)sizeof(res) ? 0 : 4);
    }
    close(pp[1]);
    n = pid > 0 ? read(pp[0], rc, sizeof(int) * OP_COUNT) : -1;
    close(pp[0]);
    if (pid > 0) {
        waitpid(pid, &status, 0);
    }
    return n == (ssize_t)(sizeof(int) * OP_COUNT) && WIFEXITED(status) &&
           WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* Open the node and the sysfs clear file to everyone, as an admin would. */
static void open_to_all(const char *name, bool open)
{
    char path[256];

    snprintf(path, sizeof(path), "/dev/%s", name);
    chmod(path, open ? 0666 : 0600);
    snprintf(path, sizeof(path), CLASS_DIR "/%s/stats/clear", name);
    chmod(path, open ? 0666 : 0200);
}

/*
 * The privilege model (docs/driver.md) on a node opened to everyone: each
 * operation as root (all allowed) and as nobody (queries allowed, state
 * changes, clears and the register mapping EPERM), and nobody's attempts
 * change nothing.
 */
static void t_priv(int fd, const char *name)
{
    const unsigned idx = 9;
    struct nfabric_ioc_window w0 = win(idx, NFABRIC_PATH_GBINARY, 60ull << 20, 4096,
                                       61ull << 20, 8, 0, 0), g;
    struct nfabric_ioc_stats st0, st1;
    int rc[OP_COUNT], r;

    disable_all(fd, info.num_windows);
    g = w0;
    r = xioctl(fd, NFABRIC_IOC_WIN_SET, &g);
    check(r == 0, "priv: window %u enabled by root: %s", idx, r ? strerror(-r) : "ok");
    open_to_all(name, true);
    priv_ops(name, idx, &w0, rc);
    for (int i = 0; i < OP_COUNT; i++) {
        check(rc[i] == 0, "priv: as root, %s: %s", ops[i].what,
              rc[i] ? strerror(-rc[i]) : "allowed");
    }
    win_get(fd, idx, &g);
    check(g.enabled, "priv: window %u enabled after root's operations", idx);
    stats(fd, 0, &st0);
    r = priv_ops_as_nobody(name, idx, &w0, rc);
    if (check(r == 0, "priv: a child as uid 65534 without capabilities ran every operation "
              "on /dev/%s (mode 0666)", name)) {
        for (int i = 0; i < OP_COUNT; i++) {
            int want = ops[i].admin ? -EPERM : 0;

            check(rc[i] == want, "priv: as nobody, %s: %s (want %s%s%s)", ops[i].what,
                  rc[i] ? strerror(-rc[i]) : "allowed", want ? "EPERM: needs " : "allowed",
                  ops[i].cap, "");
        }
    }
    win_get(fd, idx, &g);
    stats(fd, 0, &st1);
    check(g.enabled && g.base == w0.base && st1.error_count == st0.error_count,
          "priv: nobody's refused calls changed nothing (window %u enabled at 0x%" PRIx64
          ", error_count %u)", idx, (uint64_t)g.base, st1.error_count);
    open_to_all(name, false);
    disable_all(fd, info.num_windows);
}

/* ---- stale code --------------------------------------------------------- */

/*
 * Code in plain device memory (mapped directly: TCG translates it like
 * RAM) is run, rewritten through an enabled FP32 window (a trapped write,
 * served by the device), the window disabled, and run again: the new code
 * must run, not the translation of the old.
 */
static void t_exec(int fd)
{
    static const uint8_t ret1[8] = { 0xb8, 1, 0, 0, 0, 0xc3, 0x90, 0x90 };  /* mov eax,1; ret */
    static const uint8_t ret2[8] = { 0xb8, 2, 0, 0, 0, 0xc3, 0x90, 0x90 };  /* mov eax,2; ret */
    const uint64_t off = 200ull << 20;      /* into the dax device, 2 MiB aligned */
    nfabric_dev *m = open_mem();
    struct nfabric_ioc_window w;
    struct nfabric_ioc_window_cmd c = wcmd(3);
    char path[64];
    volatile uint64_t *q;
    uint64_t dpa, v2;
    int (*fn)(void);
    void *p;
    int dfd, rc, a, b;

    if (!m) {
        return;
    }
    dpa = nfabric_map_dpa(m) + off;
    /* A node of our own on /tmp: /dev may be mounted noexec. */
    {
        char dev[64];
        struct stat sb;

        snprintf(dev, sizeof(dev), "/dev/%s", nfabric_dax_name(m));
        snprintf(path, sizeof(path), "/tmp/drvtest-%s", nfabric_dax_name(m));
        unlink(path);
        if (stat(dev, &sb) || mknod(path, S_IFCHR | 0600, sb.st_rdev)) {
            snprintf(path, sizeof(path), "%s", dev);
        }
    }
    dfd = open(path, O_RDWR | O_CLOEXEC);
    p = dfd < 0 ? MAP_FAILED : mmap(NULL, 2u << 20, PROT_READ | PROT_WRITE | PROT_EXEC,
                                    MAP_SHARED, dfd, (off_t)off);
    if (!check(p != MAP_FAILED, "exec: %s mapped executable at offset %" PRIu64 " MiB: %s",
               path, off >> 20, p == MAP_FAILED ? strerror(errno) : "ok")) {
        if (dfd >= 0) {
            close(dfd);
        }
        nfabric_free(m);
        return;
    }
    q = p;
    memcpy(&fn, &p, sizeof(fn));
    memcpy(&v2, ret2, 8);
    {
        uint64_t v1;

        memcpy(&v1, ret1, 8);
        q[0] = v1;
    }
    a = fn();
    a += fn();              /* twice: the translation is cached */
    disable_all(fd, info.num_windows);
    w = win(3, NFABRIC_PATH_FP32, dpa, 4096, 0, 0, 0, 0);
    rc = xioctl(fd, NFABRIC_IOC_WIN_SET, &w);
    check(rc == 0, "exec: FP32 window 3 over the code (DPA 0x%" PRIx64 "): %s", dpa,
          rc ? strerror(-rc) : "enabled");
    q[0] = v2;              /* through the window: a trapped write */
    win_get(fd, 3, &w);
    check(w.contrib_writes == 1, "exec: the new code went through the window (%" PRIu64
          " write counted)", (uint64_t)w.contrib_writes);
    rc = xioctl(fd, NFABRIC_IOC_WIN_DISABLE, &c);
    check(rc == 0 && q[0] == v2, "exec: window disabled, the bytes read back new");
    b = fn();
    check(a == 2 && b == 2, "exec: the old code returned %d twice; after the rewrite "
          "through the window the code returns %d (want 2: the stale translation was "
          "invalidated)", a / 2, b);
    munmap(p, 2u << 20);
    close(dfd);
    if (!strncmp(path, "/tmp/", 5)) {
        unlink(path);
    }
    nfabric_free(m);
}

/* ---- windows the library refuses too ------------------------------------ */

/* WIN_SET's errno for w; the library's code for the same configuration. */
static void lib_and_drv(int fd, nfabric_dev *d, struct nfabric_ioc_window w, int want,
                        const char *what)
{
    nfabric_win_cfg cfg = {
        .base = w.base, .size = w.length, .counters = w.counters, .path = w.path,
        .width = w.width, .tie = w.tie, .threshold = w.threshold,
    };
    struct nfabric_ioc_window_cmd c = wcmd(w.index);
    int rc = xioctl(fd, NFABRIC_IOC_WIN_SET, &w), lrc;
    struct nfabric_ioc_stats st;

    stats(fd, 0, &st);
    check(rc == want && (want || (st.enabled_mask & (1u << w.index))) &&
          (!want || !(st.enabled_mask & (1u << w.index))),
          "%s: WIN_SET %s (want %s), enabled mask 0x%x", what,
          rc ? strerror(-rc) : "accepted", want ? strerror(-want) : "accepted",
          st.enabled_mask);
    xioctl(fd, NFABRIC_IOC_WIN_DISABLE, &c);
    lrc = d ? nfabric_window_set(d, w.index, &cfg) : -ENODEV;
    check(lrc == want, "%s: libnfabric gives the same (%s): %s", what,
          lrc ? nfabric_strerror(lrc) : "accepted", d && lrc ? nfabric_errmsg(d) : "");
    if (d) {
        nfabric_window_disable(d, w.index);
    }
}

/* As nobody on a node opened to everyone: WIN_SET EPERM before anything. */
static void win_set_as_nobody(const char *name, struct nfabric_ioc_window w, const char *what)
{
    int rc[OP_COUNT], r;

    open_to_all(name, true);
    r = priv_ops_as_nobody(name, w.index, &w, rc);
    check(r == 0 && rc[OP_WIN_SET] == -EPERM, "%s: as nobody WIN_SET is %s (want EPERM)",
          what, r ? "not run" : rc[OP_WIN_SET] ? strerror(-rc[OP_WIN_SET]) : "accepted");
    open_to_all(name, false);
}

/*
 * (only when named; a boot of its own: it changes the guest) the region
 * onlined as System RAM: a low-bit window whose data or counters are there
 * is refused with EBUSY, an FP32 window is not; as libnfabric does.
 */
static void t_sysram(int fd, const char *name)
{
    const uint64_t M = 1ull << 20;
    nfabric_dev *d = nfabric_new();
    int rc;

    disable_all(fd, info.num_windows);
    rc = system(sysram_online_cmd);
    check(rc == 0, "sysram: the region's memory is online as System RAM (kmem)");
    rc = d ? nfabric_open(d, NFABRIC_OPEN_NO_MEM) : -ENOMEM;
    check(rc == 0, "sysram: libnfabric opens the registers (%s)",
          rc && d ? nfabric_errmsg(d) : "ok");
    lib_and_drv(fd, rc ? NULL : d, win(0, NFABRIC_PATH_GBINARY, M, 4096, 2 * M, 8, 0, 0),
                -EBUSY, "sysram: G-Binary data over System RAM");
    lib_and_drv(fd, rc ? NULL : d, win(1, NFABRIC_PATH_GTERNARY, 8 * M, 4096, 2 * M, 8, 0, 1),
                -EBUSY, "sysram: G-Ternary data and counters over System RAM");
    lib_and_drv(fd, rc ? NULL : d, win(2, NFABRIC_PATH_FP32, 4 * M, 4096, 0, 0, 0, 0),
                0, "sysram: an FP32 window (identity) over System RAM");
    win_set_as_nobody(name, win(0, NFABRIC_PATH_GBINARY, M, 4096, 2 * M, 8, 0, 0),
                      "sysram: G-Binary over System RAM");
    nfabric_free(d);
}

/*
 * (only when named; two devices, no region at boot) a region interleaved
 * over both: a low-bit window on either is refused with EXDEV, an FP32
 * one is not; before the region, the same window is accepted.
 */
static void t_interleave(int fd, const char *name)
{
    const uint64_t M = 1ull << 20;
    struct nfabric_ioc_window gb = win(0, NFABRIC_PATH_GBINARY, M, 4096, 2 * M, 8, 0, 0);
    nfabric_dev *d = nfabric_new();
    char name1[32];
    int fd1, rc;

    disable_all(fd, info.num_windows);
    rc = d ? nfabric_open(d, NFABRIC_OPEN_NO_MEM) : -ENOMEM;
    check(rc == 0, "interleave: libnfabric opens the registers of the first device (%s)",
          rc && d ? nfabric_errmsg(d) : "ok");
    lib_and_drv(fd, rc ? NULL : d, gb, 0, "interleave: G-Binary with no region yet");
    rc = system("cxl create-region -m -t ram -d decoder0.0 -w 2 -g 256 mem0 mem1 "
                ">/tmp/interleave.log 2>&1 || cat /tmp/interleave.log; "
                "grep -q 2 /sys/bus/cxl/devices/region*/interleave_ways");
    check(rc == 0, "interleave: cxl create-region made a 2-way region over mem0 and mem1");
    lib_and_drv(fd, d, gb, -EXDEV, "interleave: G-Binary on the interleaved region");
    lib_and_drv(fd, d, win(1, NFABRIC_PATH_GTERNARY, 16 * M, 4096, 17 * M, 16, 0, 3),
                -EXDEV, "interleave: G-Ternary on it");
    lib_and_drv(fd, d, win(2, NFABRIC_PATH_FP32, 4 * M, 4096, 0, 0, 0, 0), 0,
                "interleave: an FP32 window on it");
    snprintf(name1, sizeof(name1), "%s", name);
    name1[strlen(name1) - 1] = name[strlen(name) - 1] == '0' ? '1' : '0';
    fd1 = open_dev(name1);
    if (check(fd1 >= 0, "interleave: the other device /dev/%s opens: %s", name1,
              fd1 < 0 ? strerror(errno) : "ok")) {
        struct nfabric_ioc_window w = gb;

        rc = xioctl(fd1, NFABRIC_IOC_WIN_SET, &w);
        check(rc == -EXDEV, "interleave: G-Binary on %s: %s (want EXDEV)", name1,
              rc ? strerror(-rc) : "accepted");
        disable_all(fd1, info.num_windows);
        close(fd1);
    }
    win_set_as_nobody(name, gb, "interleave: G-Binary on the interleaved region");
    nfabric_free(d);
}

/*
 * Rounds across heads: rank 0 enables window 11 on the shared device; every
 * rank waits for it, completes the round and waits for all heads with
 * ROUND_WAIT, which must return once the slowest host completed.
 */
static void t_multihost(int fd)
{
    const char *rs = getenv("NFABRIC_RANK"), *hs = getenv("NFABRIC_HOSTS");
    unsigned rank = rs ? (unsigned)atoi(rs) : 0, hosts = hs ? (unsigned)atoi(hs) : 0;
    struct nfabric_ioc_window w = win(11, NFABRIC_PATH_GBINARY, 30ull << 20, 4096,
                                      31ull << 20, 8, 0, 0);
    struct nfabric_ioc_round r;
    int rc = -ENOENT;

    if (!check(rs && hosts >= 2 && rank < hosts, "NFABRIC_RANK %s of NFABRIC_HOSTS %s",
               rs ? rs : "(unset)", hs ? hs : "(unset)")) {
        return;
    }
    if (rank == 0) {
        rc = xioctl(fd, NFABRIC_IOC_WIN_SET, &w);
        check(rc == 0, "[rank 0] WIN_SET window 11 on the shared device: %s",
              rc ? strerror(-rc) : "0");
    }
    for (int i = 0; i < 300; i++) {
        r = rnd(11, 0, 0);
        rc = xioctl(fd, NFABRIC_IOC_ROUND_GET, &r);
        if (rc != -ENOENT) {
            break;
        }
        usleep(100000);
    }
    check(rc == 0 && r.heads_expected == hosts, "[rank %u] ROUND_GET window 11: %s, round %u, "
          "%u heads expected", rank, rc ? strerror(-rc) : "0", r.seq, r.heads_expected);
    /* The last rank completes late, so that the others really wait. */
    if (rank == hosts - 1) {
        usleep(500000);
    }
    {
        uint32_t seq = r.seq;
        struct nfabric_ioc_events e;

        events(fd, &e);         /* only what happens from here */
        r = rnd(11, seq, 0);
        rc = xioctl(fd, NFABRIC_IOC_ROUND_COMPLETE, &r);
        check(rc == 0 && (r.done & (1u << rank)), "[rank %u] ROUND_COMPLETE round %u: %s, "
              "done 0x%x", rank, seq, rc ? strerror(-rc) : "0", r.done);
        if (rank != hosts - 1 && (info.version & 0xffff) >= 8) {
            /* Asleep in poll() until the last host's completion reaches here. */
            bool woke = readable(fd, 30000);

            rc = events(fd, &e);
            check(woke && rc == 0 && (e.done & (1u << 11)), "[rank %u] poll() woke when "
                  "another host completed the round: EVENTS done 0x%x", rank, e.done);
        }
        r = rnd(11, seq, 30000);
        rc = xioctl(fd, NFABRIC_IOC_ROUND_WAIT, &r);
        check(rc == 0 && r.all_done && r.heads_done == hosts && r.done == (1u << hosts) - 1,
              "[rank %u] ROUND_WAIT round %u: %s, %u of %u heads done (0x%x)", rank, seq,
              rc ? strerror(-rc) : "0", r.heads_done, r.heads_expected, r.done);
    }
}

int main(int argc, char **argv)
{
    char name[32];
    int fd;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            only = argv[++i];
        } else {
            fprintf(stderr, "usage: nfabric-drvtest [--only info,window,stats,round,events,badarg,"
                    "mmap,priv,fuzz,exec,concurrent,unbind,reload,dmesg,sysram,interleave,"
                    "multihost]\n");
            return 2;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    check(kmsg_marker() == 0, "start marker written to /dev/kmsg");
    if (!check(find_dev(name, sizeof(name)) == 0, "the driver is attached: %s", name)) {
        printf("summary: driver 0 passed, %u failed\n", tap_fail);
        return 1;
    }
    fd = open_dev(name);
    if (!check(fd >= 0, "open /dev/%s: %s", name, fd < 0 ? strerror(errno) : "ok")) {
        return 1;
    }
    t_info(fd, name);
    if (want("window")) {
        t_window(fd, name);
    }
    if (want("stats")) {
        t_stats(fd, name);
    }
    if (want("round")) {
        t_round(fd);
    }
    if (want("events")) {
        t_events(fd, name);
    }
    if (want("badarg")) {
        t_badarg(fd);
    }
    if (want("mmap")) {
        t_mmap(fd, name);
    }
    if (want("priv")) {
        t_priv(fd, name);
    }
    if (want("fuzz")) {
        t_fuzz(fd);
    }
    if (want("exec")) {
        t_exec(fd);
    }
    if (only && want("sysram")) {
        t_sysram(fd, name);
    }
    if (only && want("interleave")) {
        t_interleave(fd, name);
    }
    if (want("multihost")) {
        t_multihost(fd);
    }
    close(fd);
    if (want("concurrent")) {
        t_concurrent(name);
    }
    if (want("unbind")) {
        t_unbind(name);
    }
    if (want("reload")) {
        t_reload();
    }
    if (want("dmesg")) {
        t_dmesg();
    }
    printf("1..%u\n", tap_n);
    printf("summary: driver %u passed, %u failed\n", tap_n - tap_fail, tap_fail);
    return tap_fail ? 1 : 0;
}
