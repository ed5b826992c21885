/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfabric-train: data-parallel training of an MLP on Fashion-MNIST, each
 * step's worker gradients aggregated through the NEURON-Fabric paths.
 *
 *   nfabric-train [--mode fp32|gbinary|gternary|layeraware] [--config easy|hard]
 *                 [--device] [options]          (--help lists them)
 *
 * W workers (simulated in turn, one process) each compute the gradient of
 * their shard of the mini-batch, compress it for the tensor's path and
 * write it into that path's window; the aggregate is read back and applied:
 *
 *   fp32      every worker writes its FP32 gradient into its slot of the FP32
 *             window; the slots are read back and averaged (SGD + momentum).
 *   gbinary   every worker writes the sign bits of its worker-momentum
 *             gradient (Signum) into the G-Binary window; the majority is
 *             read back; update -lr * sign.  --ef: EF-signSGD (scaled signs
 *             with a per-worker error-feedback residual).
 *   gternary  every worker writes a stochastic ternarisation (scale max|g|,
 *             P(+-1) = |g|/scale) into the G-Ternary window and its scale
 *             into the FP32 window; the gated sum (threshold T) is read back
 *             and multiplied by the mean scale.
 *   layeraware the classifier head (last layer) on FP32, the rest on
 *             --lowbit (gbinary by default).
 *
 * Output: key=value lines (docs/training.md lists them).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hw/mem/nfabric_regs.h"
#include "nft.h"

enum { MODE_FP32, MODE_GBINARY, MODE_GTERNARY, MODE_LAYERAWARE };
static const char *const mode_names[] = { "fp32", "gbinary", "gternary", "layeraware" };
enum { TIE_NEG, TIE_POS, TIE_ALT };
static const char *const tie_names[] = { "neg", "pos", "alt" };

typedef struct Opts {
    int mode, lowbit, config;         /* lowbit: MODE_GBINARY / MODE_GTERNARY */
    int workers, batch;
    long steps, epochs;
    uint64_t seed;
    long warmup;
    bool ef, device, quiet, label_shards;
    double lr, lr_fp32, momentum, beta;
    long threshold;
    long subset, test_subset, curve_test, eval_every, hash_steps;
    int hidden[NFT_MAX_LAYERS], nhidden;
    int classes[10], nclasses;
    const char *data, *csv;
    int tie;
    bool linear;
} Opts;

/* One tensor: a weight matrix or a bias vector. */
typedef struct Tensor {
    char name[16];
    size_t off, n;                   /* in the flat parameter vector */
    bool head;
    uint64_t fp_off, fp_slot;        /* FP32 window: W slots of fp_slot bytes */
    uint64_t gb_off, gb_len;         /* G-Binary window */
    uint64_t gt_off, gt_len;         /* G-Ternary window */
} Tensor;

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t pad8(uint64_t v)
{
    return (v + 7) & ~7ull;
}

static uint64_t pad64(uint64_t v)
{
    return (v + 63) & ~63ull;
}

static void usage(FILE *f)
{
    fprintf(f,
"usage: nfabric-train [OPTIONS]\n"
"\n"
"Data-parallel MLP training on Fashion-MNIST, gradients aggregated through\n"
"the NEURON-Fabric paths (engine in host memory, or the device with --device).\n"
"\n"
"  --mode M          fp32 | gbinary | gternary | layeraware (default fp32)\n"
"  --lowbit M        layeraware backbone path: gbinary | gternary (gbinary)\n"
"  --config C        easy | hard: network, data and step presets (easy)\n"
"  --device          aggregate through the device (guest; libnfabric)\n"
"  --workers W       data-parallel workers (4)\n"
"  --batch B         global mini-batch, split over the workers (preset)\n"
"  --steps S         optimiser steps (default: --epochs worth)\n"
"  --epochs E        passes over the training images (preset)\n"
"  --seed N          initialisation, shuffling and ternarisation seed (1)\n"
"  --warmup N        all tensors on FP32 for the first N steps (0)\n"
"  --ef              error feedback on the low-bit tensors\n"
"  --lr X            learning rate of the mode's path (preset per mode)\n"
"  --lr-fp32 X       learning rate of FP32 tensors in layeraware / warmup\n"
"  --momentum X      server momentum of FP32 tensors (0.9)\n"
"  --beta X          worker momentum before low-bit compression (0.9; 0 with --ef)\n"
"  --threshold T     G-Ternary gate (1)\n"
"  --shard iid|label worker shards: slices of each batch, or label-skewed\n"
"                    (worker w holds the classes c %% W == w) (preset)\n"
"  --tie neg|pos|alt G-Binary tie rule; alt switches every step (alt)\n"
"  --schedule const|linear  learning-rate schedule (linear decay to 0)\n"
"  --subset N        use the first N training images (preset; 0 = all)\n"
"  --test-subset N   evaluate on the first N test images (0 = all)\n"
"  --classes LIST    e.g. 0,2,4,6: train on these classes only (preset)\n"
"  --hidden LIST     hidden layer sizes, e.g. 256,128 (preset)\n"
"  --data DIR|embedded|auto  idx files, or the subset compiled in (auto)\n"
"  --hash-steps K    hash the aggregated gradients of the first K steps (5)\n"
"  --eval-every N    accuracy-curve point every N steps (about 25 points)\n"
"  --curve-test N    test images per curve point (2000)\n"
"  --csv FILE        curve: step,epoch,test_acc,train_loss,bytes_written\n"
"  --quiet           no progress lines on stderr\n");
}

static int parse_list(const char *s, int *out, int max)
{
    int n = 0;

    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);

        if (end == s || v < 0 || v > 4096 || n == max) {
            return -1;
        }
        out[n++] = (int)v;
        s = end;
        if (*s == ',') {
            s++;
        } else if (*s) {
            return -1;
        }
    }
    return n;
}

static int parse_name(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++) {
        if (!strcmp(s, names[i])) {
            return i;
        }
    }
    return -1;
}

static bool parse_num(const char *s, double *v)
{
    char *end;

    errno = 0;
    *v = strtod(s, &end);
    return !errno && end != s && !*end;
}

static bool parse_int(const char *s, long *v, long lo, long hi)
{
    char *end;

    errno = 0;
    *v = strtol(s, &end, 0);
    return !errno && end != s && !*end && *v >= lo && *v <= hi;
}

/*
 * Presets.  Both: all ten classes, 784-256-128-10, batch 128, all 60000
 * training images.  easy: IID shards (each worker a slice of every batch),
 * 2 epochs.  hard: label-skewed shards (worker w holds only the classes
 * c % W == w, as data held by different sites would be), 1 epoch: the
 * majority vote of biased workers is no longer the sign of the mean.
 */
static void apply_config(Opts *o, bool set_batch, bool set_epochs, bool set_subset,
                         bool set_classes, bool set_hidden, bool set_shard)
{
    if (!set_hidden) {
        o->hidden[0] = 256;
        o->hidden[1] = 128;
        o->nhidden = 2;
    }
    if (!set_classes) {
        o->nclasses = 10;
        for (int c = 0; c < 10; c++) {
            o->classes[c] = c;
        }
    }
    if (!set_subset) {
        o->subset = 0;
    }
    if (!set_batch) {
        o->batch = 128;
    }
    if (!set_epochs) {
        o->epochs = o->config ? 1 : 2;
    }
    if (!set_shard) {
        o->label_shards = o->config == 1;
    }
}

/* Default learning rates per mode (docs/training.md has the reasons). */
static double default_lr(int path_mode, bool ef)
{
    switch (path_mode) {
    case MODE_GBINARY:
        return ef ? 0.3 : 0.001;
    case MODE_GTERNARY:
        return ef ? 0.1 : 0.2;
    default:
        return 0.1;
    }
}

typedef struct Run {
    Opts o;
    NftNet net;
    Tensor t[2 * NFT_MAX_LAYERS];
    int nt;
    NftData train, test;
    NftFabric fab;
    float *p, *g, *v, *tmp, *agg;     /* params, grad, server momentum, scratch */
    float *m, *e;                     /* worker momentum / residual: W x nparams */
    float *scales;                    /* W x nt */
    uint8_t *pack;                    /* packed buffer, max tensor */
    float *slots;                     /* W slots of the largest tensor */
    uint64_t sc_off, sc_stride;       /* scales in the FP32 window */
    NftWork work, evalw;
} Run;

static int route(const Run *r, const Tensor *t, long step)
{
    if (step < r->o.warmup || r->o.mode == MODE_FP32) {
        return NFT_WIN_FP32;
    }
    if (r->o.mode == MODE_LAYERAWARE) {
        if (t->head) {
            return NFT_WIN_FP32;
        }
        return r->o.lowbit == MODE_GBINARY ? NFT_WIN_GB : NFT_WIN_GT;
    }
    return r->o.mode == MODE_GBINARY ? NFT_WIN_GB : NFT_WIN_GT;
}

static bool needs_scale(const Run *r, int win)
{
    return win == NFT_WIN_GT || (win == NFT_WIN_GB && r->o.ef);
}

static int fab_call(Run *r, int rc)
{
    if (rc) {
        fprintf(stderr, "nfabric-train: %s backend: %s\n", r->fab.name, r->fab.err);
    }
    return rc;
}

/* Worker w's contribution for tensor t (its gradient in r->g). */
static int contribute(Run *r, int w, int ti, long step)
{
    const Tensor *t = &r->t[ti];
    const float *g = r->g + t->off;
    int win = route(r, t, step);
    size_t n = t->n;
    float *pv = r->tmp;
    float *m = r->m ? r->m + (size_t)w * r->net.nparams + t->off : NULL;
    float *e = r->e ? r->e + (size_t)w * r->net.nparams + t->off : NULL;
    float beta = (float)r->o.beta, scale = 1.0f;

    if (m) {    /* worker momentum: kept on every step, used by low-bit paths */
        for (size_t i = 0; i < n; i++) {
            m[i] = beta * m[i] + (1.0f - beta) * g[i];
        }
    }
    if (win == NFT_WIN_FP32) {
        memset((uint8_t *)r->tmp + 4 * n, 0, t->fp_slot - 4 * n);
        memcpy(r->tmp, g, 4 * n);
        return fab_call(r, r->fab.write(&r->fab, NFT_WIN_FP32,
                                        t->fp_off + (uint64_t)w * t->fp_slot,
                                        r->tmp, t->fp_slot));
    }
    for (size_t i = 0; i < n; i++) {
        pv[i] = (m ? m[i] : g[i]) + (e ? e[i] : 0.0f);
    }
    if (win == NFT_WIN_GB) {
        uint8_t *pk = r->pack;

        memset(pk, 0, t->gb_len);
        if (r->o.ef) {
            double s = 0;

            for (size_t i = 0; i < n; i++) {
                s += pv[i] < 0 ? -pv[i] : pv[i];
            }
            scale = (float)(s / (double)n);
        }
        for (size_t i = 0; i < n; i++) {
            /* A zero votes +1 and -1 alternately over workers and elements. */
            bool bit = pv[i] > 0.0f || (pv[i] == 0.0f && ((size_t)w + i) % 2 == 1);

            pk[i / 8] |= (uint8_t)(bit << (i % 8));
            if (e) {
                e[i] = pv[i] - (bit ? scale : -scale);
            }
        }
        r->scales[(size_t)w * (r->sc_stride / 4) + ti] = scale;
        return fab_call(r, r->fab.write(&r->fab, NFT_WIN_GB, t->gb_off, pk, t->gb_len));
    } else {
        uint8_t *pk = r->pack;
        NftRng rng = nft_rng(r->o.seed, 0x7e57 + (uint64_t)step, (uint64_t)w, (uint64_t)ti);
        float s = 0.0f;

        memset(pk, 0, t->gt_len);
        for (size_t i = 0; i < n; i++) {
            float a = pv[i] < 0 ? -pv[i] : pv[i];

            s = a > s ? a : s;
        }
        for (size_t i = 0; i < n; i++) {
            float a = pv[i] < 0 ? -pv[i] : pv[i];
            float u = nft_uniform(&rng);
            unsigned code = NFABRIC_TERN_ZERO;
            float val = 0.0f;

            if (s > 0.0f && u * s < a) {
                code = pv[i] > 0 ? NFABRIC_TERN_PLUS : NFABRIC_TERN_MINUS;
                val = pv[i] > 0 ? s : -s;
            }
            pk[i / 4] |= (uint8_t)(code << (2 * (i % 4)));
            if (e) {
                e[i] = pv[i] - val;
            }
        }
        r->scales[(size_t)w * (r->sc_stride / 4) + ti] = s;
        return fab_call(r, r->fab.write(&r->fab, NFT_WIN_GT, t->gt_off, pk, t->gt_len));
    }
}

/* Read the aggregate of tensor t into r->agg + t->off. */
static int aggregate(Run *r, int ti, long step, const float *smean)
{
    const Tensor *t = &r->t[ti];
    int win = route(r, t, step), W = r->o.workers;
    float *a = r->agg + t->off;
    size_t n = t->n;

    if (win == NFT_WIN_FP32) {
        if (fab_call(r, r->fab.read(&r->fab, NFT_WIN_FP32, t->fp_off, r->slots,
                                    (size_t)W * t->fp_slot))) {
            return -1;
        }
        for (size_t i = 0; i < n; i++) {
            float s = 0.0f;

            for (int w = 0; w < W; w++) {
                s += r->slots[(size_t)w * (t->fp_slot / 4) + i];
            }
            a[i] = s / (float)W;
        }
    } else if (win == NFT_WIN_GB) {
        float sc = r->o.ef ? smean[ti] : 1.0f;

        if (fab_call(r, r->fab.read(&r->fab, NFT_WIN_GB, t->gb_off, r->pack, t->gb_len))) {
            return -1;
        }
        for (size_t i = 0; i < n; i++) {
            a[i] = (r->pack[i / 8] >> (i % 8)) & 1 ? sc : -sc;
        }
    } else {
        float sc = smean[ti];

        if (fab_call(r, r->fab.read(&r->fab, NFT_WIN_GT, t->gt_off, r->pack, t->gt_len))) {
            return -1;
        }
        for (size_t i = 0; i < n; i++) {
            unsigned code = (r->pack[i / 4] >> (2 * (i % 4))) & 3;

            a[i] = code == NFABRIC_TERN_PLUS ? sc : code == NFABRIC_TERN_MINUS ? -sc : 0.0f;
        }
    }
    return 0;
}

static int setup(Run *r)
{
    Opts *o = &r->o;
    int sizes[NFT_MAX_LAYERS + 1], nl = o->nhidden + 1;
    uint64_t win[NFT_NWIN] = { 0 };
    size_t maxn = 0, maxslot = 0;
    unsigned width;

    sizes[0] = NFT_IMG;
    for (int i = 0; i < o->nhidden; i++) {
        sizes[i + 1] = o->hidden[i];
    }
    sizes[nl] = o->nclasses;
    if (nft_net_init(&r->net, sizes, nl)) {
        fprintf(stderr, "nfabric-train: bad network shape\n");
        return -1;
    }
    r->nt = 2 * nl;
    for (int l = 0; l < nl; l++) {
        for (int k = 0; k < 2; k++) {
            Tensor *t = &r->t[2 * l + k];

            snprintf(t->name, sizeof(t->name), "%c%d", k ? 'b' : 'W', l + 1);
            t->off = k ? r->net.boff[l] : r->net.woff[l];
            t->n = k ? (size_t)sizes[l + 1] : (size_t)sizes[l] * sizes[l + 1];
            t->head = l == nl - 1;
            t->fp_slot = pad8(4 * t->n);
            t->fp_off = win[NFT_WIN_FP32];
            win[NFT_WIN_FP32] += pad64((uint64_t)o->workers * t->fp_slot);
            t->gb_len = pad8((t->n + 7) / 8);
            t->gb_off = win[NFT_WIN_GB];
            win[NFT_WIN_GB] += pad64(t->gb_len);
            t->gt_len = pad8((t->n + 3) / 4);
            t->gt_off = win[NFT_WIN_GT];
            win[NFT_WIN_GT] += pad64(t->gt_len);
            maxn = t->n > maxn ? t->n : maxn;
            maxslot = t->fp_slot > maxslot ? t->fp_slot : maxslot;
        }
    }
    r->sc_stride = pad8(4 * (uint64_t)r->nt);
    r->sc_off = win[NFT_WIN_FP32];
    win[NFT_WIN_FP32] += pad64((uint64_t)o->workers * r->sc_stride);

    width = o->workers <= 127 ? 8 : 16;
    if (o->device ? nft_fabric_device_open(&r->fab, win, width, (unsigned)o->threshold)
                  : nft_fabric_engine_open(&r->fab, win, width, (unsigned)o->threshold)) {
        fprintf(stderr, "nfabric-train: %s backend: %s\n",
                o->device ? "device" : "engine", r->fab.err);
        return -1;
    }
    size_t np = r->net.nparams;
    r->p = malloc(np * sizeof(float));
    r->g = malloc(np * sizeof(float));
    r->v = calloc(np, sizeof(float));
    r->agg = malloc(np * sizeof(float));
    r->tmp = malloc(maxslot + 64);
    r->pack = malloc(pad8(maxn / 4 + 8) + 64);
    r->slots = malloc((size_t)o->workers * maxslot);
    r->scales = calloc((size_t)o->workers * r->sc_stride / 4, sizeof(float));
    if (o->mode != MODE_FP32 && o->beta > 0) {
        r->m = calloc((size_t)o->workers * np, sizeof(float));
    }
    if (o->mode != MODE_FP32 && o->ef) {
        r->e = calloc((size_t)o->workers * np, sizeof(float));
    }
    if (!r->p || !r->g || !r->v || !r->agg || !r->tmp || !r->pack || !r->slots ||
        !r->scales || (o->mode != MODE_FP32 && o->beta > 0 && !r->m) ||
        (o->mode != MODE_FP32 && o->ef && !r->e)) {
        fprintf(stderr, "nfabric-train: out of memory\n");
        return -1;
    }
    int cap = (o->batch + o->workers - 1) / o->workers;
    if (nft_work_alloc(&r->work, &r->net, cap) || nft_work_alloc(&r->evalw, &r->net, 250)) {
        fprintf(stderr, "nfabric-train: out of memory\n");
        return -1;
    }
    nft_net_init_params(&r->net, r->p, o->seed);
    return 0;
}

static int load_data(Run *r)
{
    Opts *o = &r->o;
    char err[512];
    bool emb;

    emb = !strcmp(o->data, "embedded") ||
          (!strcmp(o->data, "auto") && access(NFT_DEFAULT_DATA, R_OK) &&
           nft_embedded_count(true));
    if (emb) {
        if (nft_load_embedded(true, &r->train) || nft_load_embedded(false, &r->test)) {
            fprintf(stderr, "nfabric-train: no embedded data in this build (the data set "
                            "was not installed when it was configured)\n");
            return -1;
        }
        o->data = "embedded";
    } else {
        const char *dir = strcmp(o->data, "auto") ? o->data : NFT_DEFAULT_DATA;

        if (nft_load_idx(dir, true, 0, &r->train, err, sizeof(err)) ||
            nft_load_idx(dir, false, 0, &r->test, err, sizeof(err))) {
            fprintf(stderr, "nfabric-train: %s (install dataset-fashion-mnist, or --data)\n",
                    err);
            return -1;
        }
        o->data = dir;
    }
    nft_filter_classes(&r->train, o->classes, o->nclasses);
    nft_filter_classes(&r->test, o->classes, o->nclasses);
    if (o->subset > 0 && (size_t)o->subset < r->train.n) {
        r->train.n = (size_t)o->subset;
    }
    if (o->test_subset > 0 && (size_t)o->test_subset < r->test.n) {
        r->test.n = (size_t)o->test_subset;
    }
    if (r->train.n < (size_t)o->batch || !r->test.n) {
        fprintf(stderr, "nfabric-train: %zu training images for a batch of %d, %zu test "
                        "images\n", r->train.n, o->batch, r->test.n);
        return -1;
    }
    return 0;
}

static double eval_acc(Run *r, size_t count, double *loss)
{
    size_t c = nft_net_eval(&r->net, r->p, &r->test, count, loss, &r->evalw);

    if (count > r->test.n) {
        count = r->test.n;
    }
    if (loss) {
        *loss /= (double)count;
    }
    return 100.0 * (double)c / (double)count;
}

static int train(Run *r)
{
    Opts *o = &r->o;
    int W = o->workers, B = o->batch;
    long spe = (long)(r->train.n / (size_t)B), total, step;
    int npool = o->label_shards ? W : 1;
    size_t **pool = calloc((size_t)npool, sizeof(size_t *));
    size_t *pool_n = calloc((size_t)npool, sizeof(size_t));
    uint8_t *xb = malloc((size_t)B * NFT_IMG), *yb = malloc((size_t)B);
    float *smean = calloc((size_t)r->nt, sizeof(float));
    uint64_t h = NFT_FNV_INIT, wr[3], rd[3], wr0 = 0, fp32_step = 0;
    double t0 = now(), loss_acc = 0, t_eval = 0, loss;
    long loss_n = 0, epoch_done = 0, hashed = 0;
    FILE *csv = NULL;

    if (!pool || !pool_n || !xb || !yb || !smean) {
        fprintf(stderr, "nfabric-train: out of memory\n");
        return -1;
    }
    /*
     * Pools of training images: one (IID shards: worker w takes its slice of
     * each global batch), or with --shard label one per worker holding the
     * classes c with c % W == w (label-skewed, non-IID shards).
     */
    for (int q = 0; q < npool; q++) {
        pool[q] = malloc(r->train.n * sizeof(size_t));
        if (!pool[q]) {
            fprintf(stderr, "nfabric-train: out of memory\n");
            return -1;
        }
        for (size_t i = 0; i < r->train.n; i++) {
            if (npool == 1 || r->train.y[i] % W == q) {
                pool[q][pool_n[q]++] = i;
            }
        }
    }
    if (npool > 1) {
        spe = -1;
        for (int q = 0; q < npool; q++) {
            long sh = (q + 1) * B / W - q * B / W;
            long s = (long)pool_n[q] / sh;

            spe = spe < 0 || s < spe ? s : spe;
        }
        if (spe < 1) {
            fprintf(stderr, "nfabric-train: --shard label: a worker has too few images "
                            "(more workers than classes?)\n");
            return -1;
        }
    }
    total = o->steps > 0 ? o->steps : o->epochs * spe;
    if (o->eval_every <= 0) {
        o->eval_every = total / 25 > 0 ? total / 25 : 1;
    }
    for (int i = 0; i < r->nt; i++) {
        fp32_step += (uint64_t)W * r->t[i].fp_slot;
    }
    if (o->csv) {
        csv = fopen(o->csv, "w");
        if (!csv) {
            fprintf(stderr, "nfabric-train: %s: %s\n", o->csv, strerror(errno));
            return -1;
        }
        fprintf(csv, "step,epoch,test_acc,train_loss,bytes_written\n");
    }

    printf("mode=%s\nconfig=%s\nbackend=%s\nlowbit=%s\nworkers=%d\nbatch=%d\nsteps=%ld\n"
           "steps_per_epoch=%ld\nseed=%" PRIu64 "\nwarmup=%ld\nef=%d\nlr=%g\nlr_fp32=%g\n"
           "momentum=%g\nbeta=%g\nthreshold=%ld\ntie=%s\nschedule=%s\ndata=%s\n"
           "train_images=%zu\ntest_images=%zu\nclasses=%d\nshard=%s\n",
           mode_names[o->mode], o->config ? "hard" : "easy", r->fab.name,
           o->mode == MODE_LAYERAWARE ? mode_names[o->lowbit] : "-", W, B, total, spe,
           o->seed, o->warmup, o->ef, o->lr, o->lr_fp32, o->momentum, o->beta,
           o->threshold, tie_names[o->tie], o->linear ? "linear" : "const", o->data,
           r->train.n, r->test.n, o->nclasses, o->label_shards ? "label" : "iid");
    printf("net=%d", NFT_IMG);
    for (int l = 1; l <= r->net.nl; l++) {
        printf("-%d", r->net.sizes[l]);
    }
    printf("\nparams=%zu\nhead_params=%zu\n", r->net.nparams,
           r->t[r->nt - 2].n + r->t[r->nt - 1].n);
    fflush(stdout);

    for (step = 0; step < total; step++) {
        long epoch = step / spe, k = step % spe;
        float frac = o->linear ? 1.0f - (float)step / (float)total : 1.0f;
        float lr = (float)o->lr * frac, lr32 = (float)o->lr_fp32 * frac;
        float mu = (float)o->momentum;
        unsigned tie = o->tie == TIE_ALT ? (unsigned)(step & 1) : (unsigned)o->tie;
        bool scales = false;

        for (int q = 0; k == 0 && q < npool; q++) {   /* a fresh shuffle per epoch */
            NftRng rng = nft_rng(o->seed, 0x5417, (uint64_t)epoch, (uint64_t)q);
            size_t *pm = pool[q];

            for (size_t i = pool_n[q] - 1; i > 0; i--) {
                size_t j = (size_t)(nft_next(&rng) % (i + 1)), tmp = pm[i];

                pm[i] = pm[j];
                pm[j] = tmp;
            }
        }
        for (int s = 0; s < B; s++) {
            int w = (int)(((long)s * W + W - 1) / B), lo;
            size_t idx;

            /* s lies in worker w's shard [w*B/W, (w+1)*B/W) */
            while ((w + 1) * B / W <= s) {
                w++;
            }
            while (w * B / W > s) {
                w--;
            }
            lo = w * B / W;
            idx = npool == 1 ? pool[0][(size_t)k * B + s]
                             : pool[w][(size_t)k * ((w + 1) * B / W - lo) + (s - lo)];
            memcpy(xb + (size_t)s * NFT_IMG, r->train.x + idx * NFT_IMG, NFT_IMG);
            yb[s] = r->train.y[idx];
        }
        for (int ti = 0; ti < r->nt; ti++) {
            scales |= needs_scale(r, route(r, &r->t[ti], step));
        }
        if (fab_call(r, r->fab.round(&r->fab, tie))) {
            return -1;
        }
        for (int w = 0; w < W; w++) {
            int lo = w * B / W, hi = (w + 1) * B / W;

            loss_acc += nft_net_grad(&r->net, r->p, xb + (size_t)lo * NFT_IMG, yb + lo,
                                     hi - lo, r->g, &r->work);
            for (int ti = 0; ti < r->nt; ti++) {
                if (contribute(r, w, ti, step)) {
                    return -1;
                }
            }
            if (scales && fab_call(r, r->fab.write(&r->fab, NFT_WIN_FP32,
                                                   r->sc_off + (uint64_t)w * r->sc_stride,
                                                   r->scales + (size_t)w * (r->sc_stride / 4),
                                                   r->sc_stride))) {
                return -1;
            }
        }
        loss_n += B;
        if (scales) {
            if (fab_call(r, r->fab.read(&r->fab, NFT_WIN_FP32, r->sc_off, r->scales,
                                        (size_t)W * r->sc_stride))) {
                return -1;
            }
            for (int ti = 0; ti < r->nt; ti++) {
                float s = 0.0f;

                for (int w = 0; w < W; w++) {
                    s += r->scales[(size_t)w * (r->sc_stride / 4) + ti];
                }
                smean[ti] = s / (float)W;
            }
        }
        for (int ti = 0; ti < r->nt; ti++) {
            if (aggregate(r, ti, step, smean)) {
                return -1;
            }
        }
        if (step < o->hash_steps) {
            uint64_t hs = nft_fnv(NFT_FNV_INIT, r->agg, r->net.nparams * sizeof(float));

            h = nft_fnv(h, r->agg, r->net.nparams * sizeof(float));
            printf("grad_hash_step_%ld=%016" PRIx64 "\n", step, hs);
            hashed++;
        }
        /* Update: FP32 tensors SGD + momentum, low-bit tensors -lr * aggregate. */
        for (int ti = 0; ti < r->nt; ti++) {
            const Tensor *t = &r->t[ti];
            float *p = r->p + t->off, *a = r->agg + t->off, *v = r->v + t->off;

            if (route(r, t, step) == NFT_WIN_FP32) {
                float l = o->mode == MODE_FP32 ? lr : lr32;

                for (size_t i = 0; i < t->n; i++) {
                    v[i] = mu * v[i] + a[i];
                    p[i] -= l * v[i];
                }
            } else {
                for (size_t i = 0; i < t->n; i++) {
                    p[i] -= lr * a[i];
                }
            }
        }
        if ((step + 1) % o->eval_every == 0 || step + 1 == total || (step + 1) % spe == 0) {
            double te = now(), acc = -1;
            bool curve = (step + 1) % o->eval_every == 0 || step + 1 == total;

            if (fab_call(r, r->fab.stats(&r->fab, wr, rd))) {
                return -1;
            }
            if ((step + 1) % spe == 0 && step + 1 != total) {
                epoch_done = (step + 1) / spe;
                acc = eval_acc(r, r->test.n, NULL);
                printf("acc_epoch_%ld=%.2f\n", epoch_done, acc);
            }
            if (curve) {
                double ca = eval_acc(r, (size_t)o->curve_test, NULL);

                if (csv) {
                    fprintf(csv, "%ld,%.4f,%.3f,%.5f,%" PRIu64 "\n", step + 1,
                            (double)(step + 1) / (double)spe, ca, loss_acc / loss_n,
                            wr[0] + wr[1] + wr[2]);
                }
                if (!o->quiet) {
                    fprintf(stderr, "[%s] step %ld/%ld  loss %.4f  curve_acc %.2f%%\n",
                            mode_names[o->mode], step + 1, total, loss_acc / loss_n, ca);
                }
                loss_acc = 0;
                loss_n = 0;
            }
            fflush(stdout);
            t_eval += now() - te;
        }
    }
    double train_s = now() - t0 - t_eval;
    double acc = eval_acc(r, r->test.n, &loss);

    if (total % spe == 0) {
        printf("acc_epoch_%ld=%.2f\n", total / spe, acc);
    }
    if (fab_call(r, r->fab.stats(&r->fab, wr, rd))) {
        return -1;
    }
    wr0 = wr[0] + wr[1] + wr[2];
    printf("final_acc=%.2f\nfinal_loss=%.4f\n", acc, loss);
    printf("traffic_source=%s\n", r->fab.traffic_source);
    printf("bytes_written_fp32=%" PRIu64 "\nbytes_written_gbinary=%" PRIu64 "\n"
           "bytes_written_gternary=%" PRIu64 "\n", wr[0], wr[1], wr[2]);
    printf("bytes_read_fp32=%" PRIu64 "\nbytes_read_gbinary=%" PRIu64 "\n"
           "bytes_read_gternary=%" PRIu64 "\n", rd[0], rd[1], rd[2]);
    printf("grad_bytes_per_step=%.1f\nread_bytes_per_step=%.1f\n",
           (double)wr0 / total, (double)(rd[0] + rd[1] + rd[2]) / total);
    printf("fp32_bytes_per_step=%" PRIu64 "\n", fp32_step);
    printf("traffic_pct=%.3f\n", 100.0 * (double)wr0 / ((double)fp32_step * total));
    printf("grad_hash_steps=%ld\ngrad_hash=%016" PRIx64 "\n", hashed, h);
    printf("weights_hash=%016" PRIx64 "\n",
           nft_fnv(NFT_FNV_INIT, r->p, r->net.nparams * sizeof(float)));
    printf("train_s=%.2f\nwall_s=%.2f\n", train_s, now() - t0);
    if (csv) {
        fclose(csv);
    }
    for (int q = 0; q < npool; q++) {
        free(pool[q]);
    }
    free(pool);
    free(pool_n);
    free(xb);
    free(yb);
    free(smean);
    return 0;
}

static void run_free(Run *r)
{
    if (r->fab.close) {
        r->fab.close(&r->fab);
    }
    nft_data_free(&r->train);
    nft_data_free(&r->test);
    nft_work_free(&r->work);
    nft_work_free(&r->evalw);
    free(r->p);
    free(r->g);
    free(r->v);
    free(r->tmp);
    free(r->agg);
    free(r->m);
    free(r->e);
    free(r->scales);
    free(r->pack);
    free(r->slots);
    free(r);
}

int main(int argc, char **argv)
{
    Run *r = calloc(1, sizeof(Run));
    Opts *o;
    bool set_batch = false, set_epochs = false, set_subset = false, set_classes = false;
    bool set_hidden = false, set_lr = false, set_lr32 = false, set_thr = false, set_beta = false;
    bool set_shard = false;
    int rc;

    if (!r) {
        return 1;
    }
    o = &r->o;
    *o = (Opts){
        .mode = MODE_FP32, .lowbit = MODE_GBINARY, .workers = 4, .seed = 1,
        .momentum = 0.9, .beta = 0.9, .curve_test = 2000, .hash_steps = 5,
        .data = "auto", .tie = TIE_ALT, .linear = true,
    };
    for (int a = 1; a < argc; a++) {
        const char *opt = argv[a], *val = a + 1 < argc ? argv[a + 1] : NULL;
        long iv;
        bool ok = true, takes = true;

        if (!strcmp(opt, "--help") || !strcmp(opt, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(opt, "--device")) {
            o->device = true;
            takes = false;
        } else if (!strcmp(opt, "--ef")) {
            o->ef = true;
            takes = false;
        } else if (!strcmp(opt, "--quiet")) {
            o->quiet = true;
            takes = false;
        } else if (!strcmp(opt, "--has-embedded")) {
            printf("embedded_train=%zu\nembedded_test=%zu\n", nft_embedded_count(true),
                   nft_embedded_count(false));
            return nft_embedded_count(true) ? 0 : 1;
        } else if (!val) {
            ok = false;
        } else if (!strcmp(opt, "--mode")) {
            ok = (o->mode = parse_name(val, mode_names, 4)) >= 0;
        } else if (!strcmp(opt, "--lowbit")) {
            o->lowbit = parse_name(val, mode_names, 3);
            ok = o->lowbit == MODE_GBINARY || o->lowbit == MODE_GTERNARY;
        } else if (!strcmp(opt, "--config")) {
            static const char *const cfgs[] = { "easy", "hard" };

            ok = (o->config = parse_name(val, cfgs, 2)) >= 0;
        } else if (!strcmp(opt, "--shard")) {
            ok = !strcmp(val, "iid") || !strcmp(val, "label");
            o->label_shards = !strcmp(val, "label");
            set_shard = true;
        } else if (!strcmp(opt, "--tie")) {
            ok = (o->tie = parse_name(val, tie_names, 3)) >= 0;
        } else if (!strcmp(opt, "--schedule")) {
            ok = !strcmp(val, "const") || !strcmp(val, "linear");
            o->linear = !strcmp(val, "linear");
        } else if (!strcmp(opt, "--workers")) {
            ok = parse_int(val, &iv, 1, 1024);
            o->workers = (int)iv;
        } else if (!strcmp(opt, "--batch")) {
            ok = parse_int(val, &iv, 1, 65536);
            o->batch = (int)iv;
            set_batch = true;
        } else if (!strcmp(opt, "--steps")) {
            ok = parse_int(val, &o->steps, 1, 100000000);
        } else if (!strcmp(opt, "--epochs")) {
            ok = parse_int(val, &o->epochs, 1, 100000);
            set_epochs = true;
        } else if (!strcmp(opt, "--seed")) {
            ok = parse_int(val, &iv, 0, 0x7fffffff);
            o->seed = (uint64_t)iv;
        } else if (!strcmp(opt, "--warmup")) {
            ok = parse_int(val, &o->warmup, 0, 100000000);
        } else if (!strcmp(opt, "--lr")) {
            ok = parse_num(val, &o->lr) && o->lr > 0;
            set_lr = true;
        } else if (!strcmp(opt, "--lr-fp32")) {
            ok = parse_num(val, &o->lr_fp32) && o->lr_fp32 > 0;
            set_lr32 = true;
        } else if (!strcmp(opt, "--momentum")) {
            ok = parse_num(val, &o->momentum) && o->momentum >= 0 && o->momentum < 1;
        } else if (!strcmp(opt, "--beta")) {
            ok = parse_num(val, &o->beta) && o->beta >= 0 && o->beta < 1;
            set_beta = true;
        } else if (!strcmp(opt, "--threshold")) {
            ok = parse_int(val, &o->threshold, 1, 32767);
            set_thr = true;
        } else if (!strcmp(opt, "--subset")) {
            ok = parse_int(val, &o->subset, 0, 100000000);
            set_subset = true;
        } else if (!strcmp(opt, "--test-subset")) {
            ok = parse_int(val, &o->test_subset, 0, 100000000);
        } else if (!strcmp(opt, "--curve-test")) {
            ok = parse_int(val, &o->curve_test, 1, 100000000);
        } else if (!strcmp(opt, "--eval-every")) {
            ok = parse_int(val, &o->eval_every, 1, 100000000);
        } else if (!strcmp(opt, "--hash-steps")) {
            ok = parse_int(val, &o->hash_steps, 0, 100000000);
        } else if (!strcmp(opt, "--classes")) {
            o->nclasses = parse_list(val, o->classes, 10);
            ok = o->nclasses >= 2;
            for (int c = 0; ok && c < o->nclasses; c++) {
                ok = o->classes[c] <= 9;
            }
            set_classes = true;
        } else if (!strcmp(opt, "--hidden")) {
            o->nhidden = parse_list(val, o->hidden, NFT_MAX_LAYERS - 1);
            ok = o->nhidden >= 0;
            for (int l = 0; ok && l < o->nhidden; l++) {
                ok = o->hidden[l] >= 1;
            }
            set_hidden = true;
        } else if (!strcmp(opt, "--data")) {
            o->data = val;
        } else if (!strcmp(opt, "--csv")) {
            o->csv = val;
        } else {
            fprintf(stderr, "nfabric-train: unknown option \"%s\"\n", opt);
            usage(stderr);
            return 2;
        }
        if (!ok) {
            fprintf(stderr, "nfabric-train: bad or missing value for %s\n", opt);
            return 2;
        }
        a += takes;
    }
    apply_config(o, set_batch, set_epochs, set_subset, set_classes, set_hidden, set_shard);
    if (o->batch < o->workers) {
        fprintf(stderr, "nfabric-train: --batch must be at least --workers\n");
        return 2;
    }
    if (!set_thr) {
        o->threshold = 1;
    }
    if (!set_beta && o->ef) {
        o->beta = 0;        /* the residual takes the place of momentum */
    }
    if (o->threshold > (o->workers <= 127 ? 127 : 32767)) {
        fprintf(stderr, "nfabric-train: --threshold above the counter range\n");
        return 2;
    }
    if (!set_lr) {
        o->lr = default_lr(o->mode == MODE_LAYERAWARE ? o->lowbit : o->mode, o->ef);
    }
    if (!set_lr32) {
        o->lr_fp32 = default_lr(MODE_FP32, false);
    }
    if (o->mode == MODE_FP32) {
        o->lr_fp32 = o->lr;
    }
    if (load_data(r) || setup(r)) {
        run_free(r);
        return 1;
    }
    rc = train(r) ? 1 : 0;
    run_free(r);
    return rc;
}
