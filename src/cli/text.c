/*
 * text.c — makes untrusted text safe for a terminal: dataset names,
 * provenance and paths come from files a user may not have written, and
 * error messages quote them, so control characters (C0, DEL and the UTF-8
 * encoded C1 range U+0080..U+009F, which some terminals obey as escape
 * sequences) are printed as \xNN instead of reaching the terminal raw.
 *
 * Place in the data flow: cli (the only layer that prints).
 * Thread-safety: pure function on caller buffers.
 */
#include <stdio.h>

#include "cli/cli.h"

const char *cli_safe_text(const char *s, char *buf, size_t n)
{
    size_t o = 0;
    if (n == 0)
        return "";
    for (const unsigned char *p = (const unsigned char *)s; *p && o + 5 < n; p++) {
        int c1 = p[0] == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F; /* U+0080..U+009F */
        if (*p < 0x20 || *p == 0x7F || c1) {
            unsigned v = c1 ? p[1] : *p;
            o += (size_t)snprintf(buf + o, n - o, "\\x%02X", v);
            p += c1;
        } else {
            buf[o++] = (char)*p;
        }
    }
    buf[o] = '\0';
    return buf;
}
