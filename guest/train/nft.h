/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfabric-train: data-parallel MLP training on Fashion-MNIST with gradient
 * aggregation through the NEURON-Fabric paths (FP32, G-Binary, G-Ternary).
 *
 * Shared declarations of the program's parts:
 *   nn.c      the network (MLP, ReLU, softmax cross-entropy), own exp/log
 *   data.c    idx files (gzip through `gzip -dc`), the embedded subset
 *   fabric.c  aggregation backends: the engine in host memory, the device
 *   train.c   options, workers, compression, optimiser, reports
 *
 * Everything that feeds the aggregated gradients is deterministic and free
 * of libm (own exp/log, no FMA contraction: -ffp-contract=off), so that the
 * host build and the static guest build compute bit-identical values.
 * docs/training.md describes the program.
 */
#ifndef NFT_H
#define NFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NFT_IMG          784        /* 28 x 28 pixels */
#define NFT_MAX_LAYERS   6          /* weight layers */
#define NFT_DEFAULT_DATA "/usr/share/datasets/fashion-mnist"

/* ---- random numbers: splitmix64, one stream per use ------------------- */
typedef struct NftRng {
    uint64_t s;
} NftRng;

static inline uint64_t nft_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline NftRng nft_rng(uint64_t seed, uint64_t a, uint64_t b, uint64_t c)
{
    NftRng r = { nft_mix64(seed ^ nft_mix64(a + 0x9e3779b97f4a7c15ull *
                                            (1 + nft_mix64(b + 0x632be59bd9b4e019ull *
                                                           (1 + c))))) };
    return r;
}

static inline uint64_t nft_next(NftRng *r)
{
    r->s += 0x9e3779b97f4a7c15ull;
    return nft_mix64(r->s);
}

/* Uniform in [0, 1), 24 random bits. */
static inline float nft_uniform(NftRng *r)
{
    return (float)(nft_next(r) >> 40) * (1.0f / 16777216.0f);
}

/* ---- FNV-1a 64 -------------------------------------------------------- */
#define NFT_FNV_INIT 0xcbf29ce484222325ull
static inline uint64_t nft_fnv(uint64_t h, const void *buf, size_t len)
{
    const uint8_t *p = buf;

    for (size_t i = 0; i < len; i++) {
        h = (h ^ p[i]) * 0x100000001b3ull;
    }
    return h;
}

/* ---- math (nn.c) ------------------------------------------------------ */
double nft_exp(double x);
double nft_log(double x);           /* x > 0 */

/* ---- data (data.c) ---------------------------------------------------- */
typedef struct NftData {
    size_t n;
    uint8_t *x;                     /* n x NFT_IMG pixels */
    uint8_t *y;                     /* n labels */
} NftData;

/*
 * Load the training (train = true) or test set from DIR's idx files
 * (FILE or FILE.gz).  At most limit images (0: all).  0, or -1 with err.
 */
int nft_load_idx(const char *dir, bool train, size_t limit, NftData *d,
                 char *err, size_t errlen);
/* The subset compiled into the program (embed.c); 0 or -1 if none. */
int nft_load_embedded(bool train, NftData *d);
size_t nft_embedded_count(bool train);
/* Keep the images whose label is in classes[0..k), relabelled 0..k-1. */
void nft_filter_classes(NftData *d, const int *classes, int k);
void nft_data_free(NftData *d);

/* The embedded subset (a generated embed.c, or embed_none.c). */
extern const size_t nft_embed_ntrain, nft_embed_ntest;
extern const unsigned char *const nft_embed_train_x, *const nft_embed_train_y;
extern const unsigned char *const nft_embed_test_x, *const nft_embed_test_y;

/* ---- network (nn.c) --------------------------------------------------- */
typedef struct NftNet {
    int nl;                          /* weight layers */
    int sizes[NFT_MAX_LAYERS + 1];   /* sizes[0] = 784 .. sizes[nl] = classes */
    size_t woff[NFT_MAX_LAYERS];     /* W_l: sizes[l] x sizes[l+1], in-major */
    size_t boff[NFT_MAX_LAYERS];     /* b_l: sizes[l+1] */
    size_t nparams;
    int maxw;                        /* widest layer */
} NftNet;

typedef struct NftWork {
    int cap;                         /* samples */
    float *act[NFT_MAX_LAYERS + 1];  /* act[0] input, act[l] after layer l */
    float *delta[2];                 /* ping-pong deltas, cap x maxw */
} NftWork;

int nft_net_init(NftNet *n, const int *sizes, int nl);
void nft_net_init_params(const NftNet *n, float *p, uint64_t seed);
int nft_work_alloc(NftWork *w, const NftNet *n, int cap);
void nft_work_free(NftWork *w);
/*
 * Gradient of the mean cross-entropy over the B samples x (B x 784 pixels)
 * with labels y, written to grad (n->nparams floats).  Returns the summed
 * loss.
 */
double nft_net_grad(const NftNet *n, const float *p, const uint8_t *x,
                    const uint8_t *y, int B, float *grad, NftWork *w);
/* Correct predictions on d's first count images; *loss = summed loss. */
size_t nft_net_eval(const NftNet *n, const float *p, const NftData *d,
                    size_t count, double *loss, NftWork *w);

/* ---- aggregation backends (fabric.c) ---------------------------------- */
enum { NFT_WIN_FP32, NFT_WIN_GB, NFT_WIN_GT, NFT_NWIN };

typedef struct NftFabric NftFabric;
struct NftFabric {
    const char *name;               /* "engine" or "device" */
    const char *traffic_source;     /* where the byte counts come from */
    uint64_t size[NFT_NWIN];        /* window data bytes (multiples of 64) */
    unsigned width, threshold;
    /* Start a round: G-Binary window with tie rule tie, both cleared. */
    int (*round)(NftFabric *f, unsigned tie);
    /* off and len multiples of 8, inside the window. */
    int (*write)(NftFabric *f, int win, uint64_t off, const void *buf, size_t len);
    int (*read)(NftFabric *f, int win, uint64_t off, void *buf, size_t len);
    /* Bytes written / read per path (NFABRIC_PATH_*) since open. */
    int (*stats)(NftFabric *f, uint64_t wr[3], uint64_t rd[3]);
    void (*close)(NftFabric *f);
    void *priv;
    char err[512];
};

int nft_fabric_engine_open(NftFabric *f, const uint64_t size[NFT_NWIN],
                           unsigned width, unsigned threshold);
int nft_fabric_device_open(NftFabric *f, const uint64_t size[NFT_NWIN],
                           unsigned width, unsigned threshold);

#endif /* NFT_H */
