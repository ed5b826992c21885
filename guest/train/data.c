/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfabric-train: Fashion-MNIST idx files and the embedded subset.
 *
 * The Debian package dataset-fashion-mnist installs the four idx files
 * gzip-compressed; they are read through `gzip -dc` (the host's gzip or the
 * guest's busybox), so the program needs no zlib.  Uncompressed files are
 * read directly.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nft.h"

typedef struct Src {
    FILE *f;
    bool pipe;
} Src;

static int src_open(Src *s, const char *dir, const char *base, char *err,
                    size_t errlen)
{
    char path[4096], cmd[4200];

    snprintf(path, sizeof(path), "%s/%s", dir, base);
    s->pipe = false;
    s->f = fopen(path, "rb");
    if (s->f) {
        return 0;
    }
    snprintf(path, sizeof(path), "%s/%s.gz", dir, base);
    if (access(path, R_OK)) {
        snprintf(err, errlen, "%s/%s(.gz): %s", dir, base, strerror(errno));
        return -1;
    }
    if (strchr(path, '\'')) {
        snprintf(err, errlen, "%s: quote in the path", path);
        return -1;
    }
    snprintf(cmd, sizeof(cmd), "gzip -dc '%s'", path);
    s->f = popen(cmd, "r");
    s->pipe = true;
    if (!s->f) {
        snprintf(err, errlen, "%s: %s", cmd, strerror(errno));
        return -1;
    }
    return 0;
}

static void src_close(Src *s)
{
    if (!s->f) {
        return;
    }
    if (s->pipe) {
        /* Drain so that gzip ends normally, then reap it. */
        char buf[65536];

        while (fread(buf, 1, sizeof(buf), s->f) > 0) {
        }
        pclose(s->f);
    } else {
        fclose(s->f);
    }
    s->f = NULL;
}

static int read_be32(FILE *f, uint32_t *v)
{
    uint8_t b[4];

    if (fread(b, 1, 4, f) != 4) {
        return -1;
    }
    *v = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
    return 0;
}

int nft_load_idx(const char *dir, bool train, size_t limit, NftData *d,
                 char *err, size_t errlen)
{
    const char *img = train ? "train-images-idx3-ubyte" : "t10k-images-idx3-ubyte";
    const char *lab = train ? "train-labels-idx1-ubyte" : "t10k-labels-idx1-ubyte";
    uint32_t magic, n, rows, cols, nl;
    Src si = { 0 }, sl = { 0 };
    int rc = -1;

    memset(d, 0, sizeof(*d));
    if (src_open(&si, dir, img, err, errlen) || src_open(&sl, dir, lab, err, errlen)) {
        goto out;
    }
    if (read_be32(si.f, &magic) || read_be32(si.f, &n) || read_be32(si.f, &rows) ||
        read_be32(si.f, &cols) || magic != 0x803 || rows != 28 || cols != 28) {
        snprintf(err, errlen, "%s/%s: not a 28x28 idx3 image file", dir, img);
        goto out;
    }
    if (read_be32(sl.f, &magic) || read_be32(sl.f, &nl) || magic != 0x801 || nl != n) {
        snprintf(err, errlen, "%s/%s: not an idx1 label file for %u images", dir, lab, n);
        goto out;
    }
    d->n = limit && limit < n ? limit : n;
    d->x = malloc(d->n * NFT_IMG);
    d->y = malloc(d->n);
    if (!d->x || !d->y) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (fread(d->x, NFT_IMG, d->n, si.f) != d->n || fread(d->y, 1, d->n, sl.f) != d->n) {
        snprintf(err, errlen, "%s: short read", dir);
        goto out;
    }
    for (size_t i = 0; i < d->n; i++) {
        if (d->y[i] > 9) {
            snprintf(err, errlen, "%s/%s: label %u out of range", dir, lab, d->y[i]);
            goto out;
        }
    }
    rc = 0;
out:
    src_close(&si);
    src_close(&sl);
    if (rc) {
        nft_data_free(d);
    }
    return rc;
}

size_t nft_embedded_count(bool train)
{
    return train ? nft_embed_ntrain : nft_embed_ntest;
}

int nft_load_embedded(bool train, NftData *d)
{
    size_t n = nft_embedded_count(train);

    memset(d, 0, sizeof(*d));
    if (!n) {
        return -1;
    }
    d->n = n;
    d->x = malloc(n * NFT_IMG);
    d->y = malloc(n);
    if (!d->x || !d->y) {
        nft_data_free(d);
        return -1;
    }
    memcpy(d->x, train ? nft_embed_train_x : nft_embed_test_x, n * NFT_IMG);
    memcpy(d->y, train ? nft_embed_train_y : nft_embed_test_y, n);
    return 0;
}

void nft_filter_classes(NftData *d, const int *classes, int k)
{
    size_t o = 0;

    for (size_t i = 0; i < d->n; i++) {
        for (int c = 0; c < k; c++) {
            if (d->y[i] == classes[c]) {
                memmove(d->x + o * NFT_IMG, d->x + i * NFT_IMG, NFT_IMG);
                d->y[o++] = (uint8_t)c;
                break;
            }
        }
    }
    d->n = o;
}

void nft_data_free(NftData *d)
{
    free(d->x);
    free(d->y);
    memset(d, 0, sizeof(*d));
}
