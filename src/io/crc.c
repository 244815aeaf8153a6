/*
 * crc.c — CRC-32 (zlib's polynomial and values) over buffers of any length:
 * zlib's crc32 takes a uInt length, so longer buffers go in pieces. Used for
 * the checksums of npy files, batch records and packed chunks; and the CRC
 * of a file followed by a reader that reads it in order for its own use.
 *
 * Place in the data flow: io (dataset, sample and store call it).
 * Thread-safety: pure.
 * Ownership: none.
 */
#include <zlib.h>

#include <stdint.h>

#include "offcore/io.h"

uint32_t oc_crc32(uint32_t crc, const void *data, uint64_t n)
{
    const uint8_t *p = data;
    uLong c = crc;
    while (n) {
        uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, p, k);
        p += k;
        n -= k;
    }
    return (uint32_t)c;
}

void oc_crc_follow_feed(struct oc_crc_follow *c, uint64_t off, const void *data, uint64_t n)
{
    if (off > c->at || off + n <= c->at)
        return; /* past a gap (the finisher reads it), or nothing new */
    c->crc = oc_crc32(c->crc, (const uint8_t *)data + (c->at - off), off + n - c->at);
    c->at = off + n;
}
