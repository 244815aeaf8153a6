/*
 * auto_log.c — reads `--strategy auto`'s predictions back from its JSON
 * lines training log (auto_log.h): the line whose object has "auto": true,
 * its "predictions" array of {strategy, reuse_samples, approximate,
 * epoch_s | excluded}.
 *
 * Place in the data flow: bench/ooc_bench only.
 * Thread-safety: single-threaded parent.
 * Ownership: the file's text (io.h's oc_read_file) and the parsed object
 * are freed before return.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "offcore/io.h"

#include "auto_log.h"

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
    char *text = NULL;
    size_t len = 0;
    struct oc_err err;
    oc_err_clear(&err);
    if (oc_read_file(path, 0, &text, &len, &err) != OC_OK) {
        snprintf(why, why_n, "%s", err.msg);
        return -1;
    }
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
    oc_free(text);
    if (!found)
        snprintf(why, why_n, "%s: no record with \"auto\": true and its \"predictions\"", path);
    return found ? 0 : -1;
}
