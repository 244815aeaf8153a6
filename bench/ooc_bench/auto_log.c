/*
 * auto_log.c — reads `--strategy auto`'s predictions back from its JSON
 * lines training log (auto_log.h): the line whose object has "auto": true,
 * its "predictions" array of {strategy, reuse_samples, approximate,
 * epoch_s | excluded}.
 *
 * Place in the data flow: bench/ooc_bench only.
 * Thread-safety: single-threaded parent.
 * Ownership: the file's text and the parsed object are freed before return.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auto_log.h"

static char *slurp(const char *path, char *why, size_t why_n)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, why_n, "%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap + 1);
    for (size_t got; buf && (got = fread(buf + len, 1, cap - len, f)) > 0;) {
        len += got;
        if (len == cap) {
            char *bigger = realloc(buf, 2 * cap + 1);
            if (!bigger) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        snprintf(why, why_n, "%s: %s", path, buf ? "read error" : "out of memory");
        free(buf);
        return NULL;
    }
    buf[len] = '\0';
    return buf;
}

static void take(const cJSON *e, struct auto_pred *p)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(e, "strategy");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(e, "epoch_s");
    memset(p, 0, sizeof(*p));
    snprintf(p->strategy, sizeof(p->strategy), "%s", cJSON_IsString(s) ? s->valuestring : "?");
    p->reuse = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "reuse_samples"));
    p->approximate = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "approximate"));
    p->excluded = !cJSON_IsNumber(t);
    p->epoch_s = cJSON_IsNumber(t) ? t->valuedouble : 0;
}

int auto_log_read(const char *path, struct auto_pred *out, uint32_t cap, uint32_t *n, char *why,
                  size_t why_n)
{
    *n = 0;
    char *text = slurp(path, why, why_n);
    if (!text)
        return -1;
    int found = 0;
    for (char *line = text, *next; line && *line && !found; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        cJSON *j = cJSON_Parse(line);
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "predictions");
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "auto")) && cJSON_IsArray(arr)) {
            found = 1;
            const cJSON *e;
            cJSON_ArrayForEach(e, arr)
            {
                if (*n < cap && cJSON_IsObject(e))
                    take(e, &out[(*n)++]);
            }
        }
        cJSON_Delete(j);
    }
    free(text);
    if (!found)
        snprintf(why, why_n, "%s: no record with \"auto\": true and its \"predictions\"", path);
    return found ? 0 : -1;
}
