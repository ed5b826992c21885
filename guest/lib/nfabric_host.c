/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libnfabric's host transport (nfabric_host.h; a transport by calls,
 * nfabric_priv.h): registers and memory accesses go to the controller
 * model (nfabric_ctrl.c) of this process's head, over the shared state
 * (nfabric_heads.c and its neighbours).  The same code QEMU runs for the device, so the
 * per-element semantics are the device's.  It may call the controller
 * model, libnfabric.c (nfabric_strerror) and the C library; nothing else
 * of the library.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hw/mem/nfabric_ctrl.h"
#include "nfabric_host.h"
#include "nfabric_priv.h"

typedef struct nfabric_host {
    NFabricCtrl ctrl;
    NFabricShared *sh;
    int state_fd;
    uint8_t *ram;
    uint64_t ram_size;
    uint8_t *staging;           /* this head's, for posted windows */
} nfabric_host;

static uint32_t host_rd32(void *priv, uint32_t off)
{
    nfabric_host *h = priv;

    return (uint32_t)nfabric_ctrl_reg_read(&h->ctrl, off, 4);
}

static void host_wr32(void *priv, uint32_t off, uint32_t v)
{
    nfabric_host *h = priv;

    nfabric_ctrl_reg_write(&h->ctrl, off, v, 4);
}

/* As a CPU's copy: naturally aligned accesses of at most 8 bytes. */
static int host_mem(void *priv, uint64_t dpa, void *buf, uint64_t len,
                    bool write)
{
    nfabric_host *h = priv;
    uint8_t *b = buf;

    if (dpa > h->ram_size || len > h->ram_size - dpa) {
        return -1;
    }
    while (len) {
        unsigned n = 8 - (unsigned)(dpa & 7);

        n = n > len ? (unsigned)len : n;
        if (n != 8 && n != 4 && n != 2) {
            n = 1;
        }
        if (!nfabric_ctrl_mem_access(&h->ctrl, dpa, b, n, write)) {
            return -1;
        }
        dpa += n;
        b += n;
        len -= n;
    }
    return 0;
}

static void host_close(void *priv)
{
    nfabric_host *h = priv;

    nfabric_shared_detach(h->sh, h->state_fd, h->ctrl.head);
    munmap(h->ram, h->ram_size);
    if (h->staging) {
        munmap(h->staging, h->ram_size);
    }
    free(h);
}

static const nfabric_transport host_transport = {
    .rd32 = host_rd32,
    .wr32 = host_wr32,
    .mem = host_mem,
    .close = host_close,
};

int nfabric_open_host(nfabric_dev *d, const char *state_path,
                      const char *mem_path, uint64_t mem_size,
                      unsigned head, unsigned heads)
{
    static const NFabricTimingParams tp = {
        NFABRIC_T_DEFAULT_CLOCK_MHZ, NFABRIC_T_DEFAULT_DEPTH,
        NFABRIC_T_DEFAULT_SERVICE_NS, NFABRIC_T_DEFAULT_LINK_MBPS,
    };
    NFabricAttach a = {
        .path = state_path, .head = head, .heads = heads,
        .mem_size = mem_size,
    };
    NFabricAttachHow how;
    nfabric_host *h;
    struct stat st;
    int fd;

    memset(d, 0, sizeof(*d));
    d->bar_fd = d->dax_fd = -1;
    if (!mem_size || mem_size % 65536) {
        snprintf(d->errmsg, sizeof(d->errmsg), "%s: memory size %" PRIu64
                 " is not a positive multiple of 64 KiB",
                 nfabric_strerror(NFLIB_EINVAL), mem_size);
        return NFLIB_EINVAL;
    }
    fd = open(mem_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || fstat(fd, &st) != 0 ||
        ((uint64_t)st.st_size < mem_size && ftruncate(fd, mem_size) != 0)) {
        snprintf(d->errmsg, sizeof(d->errmsg), "%s: %s: %s",
                 nfabric_strerror(NFLIB_EOPEN), mem_path, strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return NFLIB_EOPEN;
    }
    h = calloc(1, sizeof(*h));
    if (!h) {
        close(fd);
        return NFLIB_EINVAL;
    }
    h->ram_size = mem_size;
    h->ram = mmap(NULL, mem_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (h->ram == MAP_FAILED) {
        snprintf(d->errmsg, sizeof(d->errmsg), "%s: %s: %s",
                 nfabric_strerror(NFLIB_EMMAP), mem_path, strerror(errno));
        free(h);
        return NFLIB_EMMAP;
    }
    a.mem_dev = st.st_dev;
    a.mem_ino = st.st_ino;
    a.mem_path = mem_path;      /* one device state per memory file */
    if (nfabric_shared_attach(&a, &h->sh, &h->state_fd, &how, d->errmsg,
                              sizeof(d->errmsg)) != 0) {
        munmap(h->ram, mem_size);
        free(h);
        return NFLIB_EINVAL;
    }
    nfabric_ctrl_init(&h->ctrl, h->ram, mem_size, &tp, NULL, NULL);
    /* Staging for posted windows: private, allocated as it is touched. */
    h->staging = mmap(NULL, mem_size, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (h->staging == MAP_FAILED) {
        h->staging = NULL;      /* posted windows then refused: POSTED */
    }
    nfabric_ctrl_set_staging(&h->ctrl, h->staging);
    nfabric_ctrl_use_shared(&h->ctrl, h->sh, head);
    d->xport = &host_transport;
    d->xport_priv = h;
    d->version = host_rd32(h, NFABRIC_REG_VERSION);
    d->caps = host_rd32(h, NFABRIC_REG_CAPS);
    d->dev_mem_size = host_rd32(h, NFABRIC_REG_MEM_SIZE);
    d->dev_mem_size |= (uint64_t)host_rd32(h, NFABRIC_REG_MEM_SIZE + 4) << 32;
    snprintf(d->pci_name, sizeof(d->pci_name), "host");
    snprintf(d->access, sizeof(d->access), "host: head %u of %s", head,
             state_path);
    return 0;
}
