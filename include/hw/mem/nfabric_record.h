/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric access records: a stream of accesses as the timing model
 * saw them, so that an offline tool (bench/nfabric_timing_tool.c) can
 * replay it through the same model and get the same figures.
 *
 * Pure C11 + stdio, no QEMU headers (the device writes records).  The
 * format, docs/timing.md "Record format", all little-endian:
 *
 *   header, 32 bytes
 *     0  u32 magic        0x5254464e ("NFTR")
 *     4  u16 version      1
 *     6  u16 header_size  32 (a reader skips any larger header)
 *     8  u16 record_size  16 (a reader skips any larger record's tail)
 *    10  u16 flags        bit 0 DEPENDENT: the arrivals were taken from
 *                         nfabric_timing_now_ps() (informational)
 *    12  u32 clock_mhz    the timing parameters the stream was taken with
 *    16  u32 depth
 *    20  u32 service_ns
 *    24  u32 link_mbps
 *    28  u32 reserved     0
 *   then records, 16 bytes each, until end of file
 *     0  u64 arrival_ps   arrival time of the access, ps
 *     8  u32 bytes        access length
 *    12  u8  path         NFABRIC_PATH_*
 *    13  u8  kind         NFABRIC_RECORD_READ / _WRITE / _CLEAR
 *    14  u16 reserved     0
 *
 * A CLEAR record (arrival, bytes and path 0) stands for CTRL.CLEAR_TIMING:
 * the replay zeroes the model there.  Reads and writes cost the same in the
 * model; the kind is kept for the reader's benefit.
 */
#ifndef HW_MEM_NFABRIC_RECORD_H
#define HW_MEM_NFABRIC_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hw/mem/nfabric_timing.h"

#define NFABRIC_RECORD_MAGIC         0x5254464eu /* "NFTR" little-endian */
#define NFABRIC_RECORD_VERSION       1
#define NFABRIC_RECORD_HEADER_SIZE   32
#define NFABRIC_RECORD_SIZE   16

#define NFABRIC_RECORD_F_DEPENDENT   (1u << 0)
#define NFABRIC_RECORD_F_VALID       0x1u

#define NFABRIC_RECORD_READ          0
#define NFABRIC_RECORD_WRITE         1
#define NFABRIC_RECORD_CLEAR         2
#define NFABRIC_RECORD_NUM_KINDS     3

/* Errors (negative returns). */
#define NFABRIC_RECORD_EIO           (-1)    /* read or write failed */
#define NFABRIC_RECORD_EMAGIC        (-2)    /* not a record file */
#define NFABRIC_RECORD_EVERSION      (-3)    /* unknown version or sizes */
#define NFABRIC_RECORD_ETRUNC        (-4)    /* file ends inside a header/record */
#define NFABRIC_RECORD_EBAD          (-5)    /* bad field in a record/header */
#define NFABRIC_RECORD_EPARAMS       (-6)    /* header parameters out of range */

typedef struct NFabricRecordHeader {
    uint16_t version;
    uint16_t header_size;
    uint16_t record_size;
    uint16_t flags;
    NFabricTimingParams params;
} NFabricRecordHeader;

typedef struct NFabricRecord {
    uint64_t arrival_ps;
    uint32_t bytes;
    uint8_t path;
    uint8_t kind;
} NFabricRecord;

const char *nfabric_record_strerror(int err);

/* ---- buffers (no I/O) ------------------------------------------------ */
void nfabric_record_encode_header(uint8_t buf[NFABRIC_RECORD_HEADER_SIZE],
                                 const NFabricTimingParams *p,
                                 unsigned flags);
/* Decode the first 32 bytes of a header; 0 or a negative error. */
int nfabric_record_decode_header(const uint8_t buf[NFABRIC_RECORD_HEADER_SIZE],
                                NFabricRecordHeader *h);
void nfabric_record_encode(uint8_t buf[NFABRIC_RECORD_SIZE],
                          const NFabricRecord *r);
/* Decode the first 16 bytes of a record; 0 or NFABRIC_RECORD_EBAD. */
int nfabric_record_decode(const uint8_t buf[NFABRIC_RECORD_SIZE],
                         NFabricRecord *r);

/* ---- writing --------------------------------------------------------- */
/* Each returns 0 or a negative error. */
int nfabric_record_write_header(FILE *f, const NFabricTimingParams *p,
                               unsigned flags);
int nfabric_record_write(FILE *f, const NFabricRecord *r);
/* One access (bytes up to UINT32_MAX, else NFABRIC_RECORD_EBAD). */
int nfabric_record_write_access(FILE *f, uint64_t arrival_ps, unsigned path,
                               uint64_t bytes, bool write);
int nfabric_record_write_clear(FILE *f);

/* ---- reading --------------------------------------------------------- */
typedef struct NFabricRecordReader {
    FILE *f;
    NFabricRecordHeader h;
    uint64_t records;           /* records read so far */
} NFabricRecordReader;

/* Read and check the header; 0 or a negative error. */
int nfabric_record_reader_open(NFabricRecordReader *rd, FILE *f);
/* The next record: 1, 0 at end of file, or a negative error. */
int nfabric_record_read(NFabricRecordReader *rd, NFabricRecord *r);

/*
 * Replay a whole record file through the model: t is initialised with the
 * header's parameters (or with *params when params is not NULL), every
 * access is accounted with nfabric_timing_account_at() at its arrival time
 * and every CLEAR record clears t.  Returns the number of records, or a
 * negative error (t then holds the figures up to the bad record).
 */
int64_t nfabric_record_replay(FILE *f, NFabricTiming *t,
                             const NFabricTimingParams *params,
                             NFabricRecordHeader *h);

/* Apply one record to the model (what the replay does per record). */
void nfabric_record_apply(NFabricTiming *t, const NFabricRecord *r);

#endif /* HW_MEM_NFABRIC_RECORD_H */
