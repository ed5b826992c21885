/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * No embedded subset: the data set was not installed when the build was
 * configured (install dataset-fashion-mnist and reconfigure).
 */
#include "nft.h"

static const unsigned char none[1];
const size_t nft_embed_ntrain = 0, nft_embed_ntest = 0;
const unsigned char *const nft_embed_train_x = none;
const unsigned char *const nft_embed_train_y = none;
const unsigned char *const nft_embed_test_x = none;
const unsigned char *const nft_embed_test_y = none;
