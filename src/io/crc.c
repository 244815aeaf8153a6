/*
 * crc.c — CRC-32 (zlib's polynomial and values, the gzip CRC) over buffers of
 * any length, by libdeflate's crc32 (carry-less multiply where the CPU has
 * it: about 4x zlib's on this project's machines, which matters where a
 * whole feature file is checked). Used for the checksums of npy files, batch
 * records and packed chunks; and the CRC of a file followed by a reader that
 * reads it in order for its own use.
 *
 * Place in the data flow: io (dataset, sample and store call it).
 * Thread-safety: pure.
 * Ownership: none.
 */
#include <libdeflate.h>
#include <stdint.h>

#include "offcore/io.h"

uint32_t oc_crc32(uint32_t crc, const void *data, uint64_t n)
{
    return n ? (uint32_t)libdeflate_crc32(crc, data, (size_t)n) : crc;
}

void oc_crc_follow_feed(struct oc_crc_follow *c, uint64_t off, const void *data, uint64_t n)
{
    if (off > c->at || off + n <= c->at)
        return; /* past a gap (the finisher reads it), or nothing new */
    c->crc = oc_crc32(c->crc, (const uint8_t *)data + (c->at - off), off + n - c->at);
    c->at = off + n;
}
