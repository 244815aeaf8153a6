/*
 * utf8.c — strings made valid UTF-8 for the JSON files offcore writes
 * (manifests: dataset and KG names and provenance come from paths and user
 * input, which may be any bytes, and may be cut to a field's size).
 *
 *   s ──► each sequence checked (RFC 3629: no overlong forms, no surrogates,
 *         at most U+10FFFF) ──► copied whole, or '?' for a bad lead byte
 *         ──► stop before a character that would not fit in buf
 *
 * Place in the data flow: core; the manifest writers call it.
 * Thread-safety: a pure function.
 * Ownership: the caller's buffers.
 */
#include <stdint.h>
#include <string.h>

#include "offcore/core.h"

/* Length of the valid UTF-8 sequence at p (1-4), or 0 if p starts none. */
static size_t seq_len(const unsigned char *p)
{
    unsigned c = p[0];
    if (c < 0x80)
        return 1;
    size_t len = c >= 0xC2 && c <= 0xDF   ? 2
                 : c >= 0xE0 && c <= 0xEF ? 3
                 : c >= 0xF0 && c <= 0xF4 ? 4
                                          : 0;
    if (!len)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0; /* also stops at the terminating NUL */
    if ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] > 0x9F) || /* overlong, surrogate */
        (c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] > 0x8F))   /* overlong, > U+10FFFF */
        return 0;
    return len;
}

char *oc_utf8_copy(char *buf, size_t n, const char *s)
{
    if (!n)
        return buf;
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t out = 0;
    while (*p) {
        size_t len = seq_len(p);
        size_t put = len ? len : 1;
        if (out + put > n - 1)
            break;
        if (len)
            memcpy(buf + out, p, len);
        else
            buf[out] = '?';
        out += put;
        p += put;
    }
    buf[out] = '\0';
    return buf;
}
