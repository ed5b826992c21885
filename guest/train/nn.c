/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfabric-train: the network.  A multi-layer perceptron 784-H1-..-C with
 * ReLU and softmax cross-entropy, plain C11 in a fixed order of operations
 * (no libm but sqrt, which IEEE rounds exactly), so that every build of the
 * same source computes the same bits.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nft.h"

/* ---- exp and log ------------------------------------------------------- */

static double pow2i(int k)
{
    union { double d; uint64_t u; } v;

    v.u = (uint64_t)(k + 1023) << 52;
    return v.d;
}

double nft_exp(double x)
{
    static const double ln2_hi = 6.93147180369123816490e-01;
    static const double ln2_lo = 1.90821492927058770002e-10;
    static const double log2e = 1.44269504088896338700e+00;
    double t, r, p;
    int k;

    if (x > 700.0) {
        return pow2i(1000);
    }
    if (x < -700.0) {
        return 0.0;
    }
    t = x * log2e;
    k = (int)(t + (t >= 0 ? 0.5 : -0.5));
    r = (x - k * ln2_hi) - k * ln2_lo;          /* |r| <= 0.35 */
    /* Taylor to r^13: error below 1e-16 relative. */
    p = 1.0 / 6227020800.0;
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    return p * pow2i(k);
}

double nft_log(double x)
{
    static const double ln2 = 6.93147180559945309417e-01;
    union { double d; uint64_t u; } v;
    double m, s, s2, sum, term;
    int e;

    if (!(x > 0)) {
        return -1e300;
    }
    if (x < 1e-300) {
        x = 1e-300;
    }
    v.d = x;
    e = (int)((v.u >> 52) & 0x7ff) - 1023;
    v.u = (v.u & 0x000fffffffffffffull) | (1023ull << 52);
    m = v.d;                                     /* [1, 2) */
    if (m > 1.41421356237309504880) {
        m *= 0.5;
        e++;
    }
    s = (m - 1.0) / (m + 1.0);                   /* |s| <= 0.172 */
    s2 = s * s;
    sum = 0.0;
    term = s;
    for (int k = 1; k <= 23; k += 2) {
        sum += term / k;
        term *= s2;
    }
    return 2.0 * sum + e * ln2;
}

/* ---- the network ------------------------------------------------------ */

int nft_net_init(NftNet *n, const int *sizes, int nl)
{
    size_t off = 0;

    if (nl < 1 || nl > NFT_MAX_LAYERS) {
        return -1;
    }
    memset(n, 0, sizeof(*n));
    n->nl = nl;
    for (int l = 0; l <= nl; l++) {
        if (sizes[l] < 1 || sizes[l] > 4096) {
            return -1;
        }
        n->sizes[l] = sizes[l];
        if (sizes[l] > n->maxw) {
            n->maxw = sizes[l];
        }
    }
    for (int l = 0; l < nl; l++) {
        n->woff[l] = off;
        off += (size_t)sizes[l] * sizes[l + 1];
        n->boff[l] = off;
        off += (size_t)sizes[l + 1];
    }
    n->nparams = off;
    return 0;
}

/* He-uniform weights, zero biases. */
void nft_net_init_params(const NftNet *n, float *p, uint64_t seed)
{
    memset(p, 0, n->nparams * sizeof(float));
    for (int l = 0; l < n->nl; l++) {
        NftRng r = nft_rng(seed, 0x1417, (uint64_t)l, 0);
        size_t cnt = (size_t)n->sizes[l] * n->sizes[l + 1];
        float a = (float)sqrt(6.0 / n->sizes[l]);

        for (size_t i = 0; i < cnt; i++) {
            p[n->woff[l] + i] = (2.0f * nft_uniform(&r) - 1.0f) * a;
        }
    }
}

int nft_work_alloc(NftWork *w, const NftNet *n, int cap)
{
    memset(w, 0, sizeof(*w));
    w->cap = cap;
    for (int l = 0; l <= n->nl; l++) {
        w->act[l] = malloc(sizeof(float) * (size_t)cap * n->sizes[l]);
        if (!w->act[l]) {
            return -1;
        }
    }
    for (int k = 0; k < 2; k++) {
        w->delta[k] = malloc(sizeof(float) * (size_t)cap * n->maxw);
        if (!w->delta[k]) {
            return -1;
        }
    }
    return 0;
}

void nft_work_free(NftWork *w)
{
    for (int l = 0; l <= NFT_MAX_LAYERS; l++) {
        free(w->act[l]);
    }
    free(w->delta[0]);
    free(w->delta[1]);
    memset(w, 0, sizeof(*w));
}

/* out[s] = b + sum_i in[s][i] * W[i]  (W in-major), ReLU if relu. */
static void fwd_layer(const float *W, const float *b, const float *in, int nin,
                      float *out, int nout, int B, bool relu)
{
    for (int s = 0; s < B; s++) {
        memcpy(out + (size_t)s * nout, b, sizeof(float) * nout);
    }
    for (int i = 0; i < nin; i++) {
        const float *wr = W + (size_t)i * nout;

        for (int s = 0; s < B; s++) {
            float v = in[(size_t)s * nin + i];
            float *o = out + (size_t)s * nout;

            if (v == 0.0f) {
                continue;
            }
            for (int j = 0; j < nout; j++) {
                o[j] += v * wr[j];
            }
        }
    }
    if (relu) {
        for (size_t k = 0; k < (size_t)B * nout; k++) {
            out[k] = out[k] > 0.0f ? out[k] : 0.0f;
        }
    }
}

/* A dot product in a fixed order: 8 partial sums, then their sum. */
static float dot(const float *a, const float *b, int n)
{
    float acc[8] = { 0 };
    float s;
    int j = 0;

    for (; j + 8 <= n; j += 8) {
        for (int k = 0; k < 8; k++) {
            acc[k] += a[j + k] * b[j + k];
        }
    }
    for (; j < n; j++) {
        acc[j & 7] += a[j] * b[j];
    }
    s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    return s;
}

static void load_input(const uint8_t *x, int B, float *a0)
{
    for (size_t k = 0; k < (size_t)B * NFT_IMG; k++) {
        a0[k] = (float)x[k] * (1.0f / 255.0f);
    }
}

static void forward(const NftNet *n, const float *p, int B, NftWork *w)
{
    for (int l = 0; l < n->nl; l++) {
        fwd_layer(p + n->woff[l], p + n->boff[l], w->act[l], n->sizes[l],
                  w->act[l + 1], n->sizes[l + 1], B, l + 1 < n->nl);
    }
}

/* Softmax of z (C logits): writes probabilities to pr, returns -log p[y]. */
static double softmax(const float *z, int C, int y, float *pr)
{
    double e[4096], sum = 0.0;
    float m = z[0];

    for (int j = 1; j < C; j++) {
        m = z[j] > m ? z[j] : m;
    }
    for (int j = 0; j < C; j++) {
        e[j] = nft_exp((double)z[j] - m);
        sum += e[j];
    }
    if (pr) {
        for (int j = 0; j < C; j++) {
            pr[j] = (float)(e[j] / sum);
        }
    }
    return nft_log(sum) - ((double)z[y] - m);
}

double nft_net_grad(const NftNet *n, const float *p, const uint8_t *x,
                    const uint8_t *y, int B, float *grad, NftWork *w)
{
    int C = n->sizes[n->nl];
    double loss = 0.0;
    float *d = w->delta[0], *dn = w->delta[1];
    float invB = 1.0f / (float)B;

    load_input(x, B, w->act[0]);
    forward(n, p, B, w);
    for (int s = 0; s < B; s++) {
        float *ds = d + (size_t)s * C;

        loss += softmax(w->act[n->nl] + (size_t)s * C, C, y[s], ds);
        ds[y[s]] -= 1.0f;
        for (int j = 0; j < C; j++) {
            ds[j] *= invB;
        }
    }
    for (int l = n->nl - 1; l >= 0; l--) {
        int nin = n->sizes[l], nout = n->sizes[l + 1];
        const float *in = w->act[l];
        const float *W = p + n->woff[l];
        float *gW = grad + n->woff[l], *gb = grad + n->boff[l];
        float *t;

        for (int i = 0; i < nin; i++) {
            float *row = gW + (size_t)i * nout;

            memset(row, 0, sizeof(float) * nout);
            for (int s = 0; s < B; s++) {
                float v = in[(size_t)s * nin + i];
                const float *ds = d + (size_t)s * nout;

                if (v == 0.0f) {
                    continue;
                }
                for (int j = 0; j < nout; j++) {
                    row[j] += v * ds[j];
                }
            }
        }
        memset(gb, 0, sizeof(float) * nout);
        for (int s = 0; s < B; s++) {
            const float *ds = d + (size_t)s * nout;

            for (int j = 0; j < nout; j++) {
                gb[j] += ds[j];
            }
        }
        if (l == 0) {
            break;
        }
        for (int s = 0; s < B; s++) {
            const float *ds = d + (size_t)s * nout;
            const float *ins = in + (size_t)s * nin;
            float *o = dn + (size_t)s * nin;

            for (int i = 0; i < nin; i++) {
                o[i] = ins[i] > 0.0f ? dot(W + (size_t)i * nout, ds, nout) : 0.0f;
            }
        }
        t = d;
        d = dn;
        dn = t;
    }
    return loss;
}

size_t nft_net_eval(const NftNet *n, const float *p, const NftData *d,
                    size_t count, double *loss, NftWork *w)
{
    int C = n->sizes[n->nl];
    size_t correct = 0;
    double l = 0.0;

    if (count > d->n) {
        count = d->n;
    }
    for (size_t s0 = 0; s0 < count; s0 += (size_t)w->cap) {
        int B = (int)(count - s0 < (size_t)w->cap ? count - s0 : (size_t)w->cap);

        load_input(d->x + s0 * NFT_IMG, B, w->act[0]);
        forward(n, p, B, w);
        for (int s = 0; s < B; s++) {
            const float *z = w->act[n->nl] + (size_t)s * C;
            int best = 0;

            for (int j = 1; j < C; j++) {
                if (z[j] > z[best]) {
                    best = j;
                }
            }
            correct += best == d->y[s0 + s];
            l += softmax(z, C, d->y[s0 + s], NULL);
        }
    }
    if (loss) {
        *loss = l;
    }
    return correct;
}
