/*
 * json.c — ooc_bench's `--json FILE` (see json.h), built with cJSON.
 *
 * Place in the data flow: bench/ooc_bench only.
 * Thread-safety: single-threaded parent.
 * Ownership: json_write frees the document it writes.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "offcore/store.h"
#include "offcore/train.h"

static void add_ref(cJSON *refs, const char *name, double v)
{
    cJSON *r = cJSON_CreateObject();
    if (!r)
        return;
    cJSON_AddStringToObject(r, "name", name);
    cJSON_AddNumberToObject(r, "value", v);
    cJSON_AddItemToArray(refs, r);
}

cJSON *json_new(const struct json_head *h)
{
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    cJSON_AddStringToObject(root, "bench", "ooc_bench");
    cJSON_AddStringToObject(root, "title", h->title);
    cJSON_AddStringToObject(root, "metric",
                            "epoch time, training (last epoch, evaluation excluded)");
    cJSON_AddStringToObject(root, "unit", "s");
    cJSON_AddNumberToObject(root, "epochs", h->epochs);
    cJSON *refs = cJSON_AddArrayToObject(root, "references");
    if (refs && h->memory_epoch_s > 0)
        add_ref(refs, "memory", h->memory_epoch_s);
    if (refs && h->bound_s > 0)
        add_ref(refs, "bound", h->bound_s);
    cJSON *b = cJSON_AddObjectToObject(root, "bound");
    if (b) {
        cJSON_AddNumberToObject(b, "bound_s", h->bound_s);
        cJSON_AddNumberToObject(b, "memory_epoch_s", h->memory_epoch_s);
        cJSON_AddNumberToObject(b, "io_bound_s", h->io_bound_s);
        cJSON_AddNumberToObject(b, "unique_bytes", (double)h->unique_bytes);
        cJSON_AddNumberToObject(b, "must_read_bytes", (double)h->must_read_bytes);
    }
    cJSON *d = cJSON_AddObjectToObject(root, "disk");
    if (d) {
        cJSON_AddNumberToObject(d, "seq_bytes_per_s", h->seq_bytes_per_s);
        cJSON_AddNumberToObject(d, "rand4k_iops", h->rand4k_iops);
        cJSON_AddNumberToObject(d, "rand8k_iops", h->rand8k_iops);
    }
    cJSON_AddArrayToObject(root, "rows");
    return root;
}

void json_add_run(cJSON *root, const struct json_run *r)
{
    cJSON *rows = cJSON_GetObjectItemCaseSensitive(root, "rows");
    cJSON *o = rows ? cJSON_CreateObject() : NULL;
    if (!o)
        return;
    cJSON_AddStringToObject(o, "label", r->label);
    cJSON_AddStringToObject(o, "strategy", r->strategy);
    cJSON_AddNumberToObject(o, "budget_bytes", (double)r->budget_bytes);
    if (r->others_cpu_share >= 0)
        cJSON_AddNumberToObject(o, "others_cpu_share", r->others_cpu_share);
    else
        cJSON_AddNullToObject(o, "others_cpu_share");
    if (!r->last) {
        cJSON_AddNullToObject(o, "value");
        cJSON_AddStringToObject(o, "failed", r->failed ? r->failed : "no epoch");
        cJSON_AddItemToArray(rows, o);
        return;
    }
    const struct oc_train_epoch_stats *st = r->last;
    cJSON_AddNumberToObject(o, "value", r->epoch_s);
    cJSON_AddNullToObject(o, "failed");
    cJSON_AddNumberToObject(o, "x_memory", r->x_memory);
    cJSON_AddNumberToObject(o, "x_bound", r->x_bound);
    cJSON_AddNumberToObject(o, "own_io_s", r->own_io_s);
    cJSON_AddNumberToObject(o, "x_own", r->x_own);
    cJSON_AddNumberToObject(o, "wait_s", st->wait_s);
    cJSON_AddNumberToObject(o, "epoch0_s", r->epoch0_s);
    cJSON_AddNumberToObject(o, "requested_bytes", (double)st->store.requested_bytes);
    cJSON_AddNumberToObject(o, "from_disk_bytes", (double)st->store.requested_disk_bytes);
    cJSON_AddNumberToObject(o, "read_bytes", (double)st->store.read_bytes);
    cJSON_AddNumberToObject(o, "amplification", oc_store_stats_amplification(&st->store));
    cJSON_AddNumberToObject(o, "cpu_hit_ratio",
                            oc_store_stats_hit_ratio(&st->store, OC_STORE_TIER_CPU));
    cJSON_AddNumberToObject(o, "samples_per_batch",
                            st->n_batches ? (double)st->n_sampled / (double)st->n_batches : 0.0);
    cJSON_AddNumberToObject(o, "peak_rss_bytes", (double)r->peak_rss_bytes);
    cJSON_AddStringToObject(o, "weights", r->weights);
    cJSON_AddStringToObject(o, "weights_sha256", r->weights_sha256);
    cJSON_AddItemToArray(rows, o);
}

int json_write(cJSON *root, const char *path)
{
    char *text = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text) {
        fprintf(stderr, "ooc_bench: --json %s: out of memory\n", path);
        return -1;
    }
    FILE *f = fopen(path, "w");
    int ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    int e = errno;
    if (f && fclose(f) != 0)
        ok = 0, e = errno;
    cJSON_free(text);
    if (!ok) {
        fprintf(stderr, "ooc_bench: --json %s: %s\n", path, strerror(e));
        return -1;
    }
    return 0;
}
