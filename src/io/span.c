/*
 * span.c — the batch reader's merge rule, its one copy: how byte ranges of
 * one file, sorted by offset, become aligned reads. The reader (batch.c)
 * builds its reads with it, and --strategy auto's inspection (store's
 * inspect.c) counts a batch's reads with it, so the two cannot drift.
 *
 *   range      [off, off + len)     split at add time into pieces whose
 *                                   page-aligned span fits max_read
 *   piece      [lo, hi) = its pages (aligned down, up)
 *   span       joins the open span when merging is on, lo <= span end + gap
 *              (gap in whole pages) and the joined span stays <= max_read;
 *              else it opens a new span: one read each
 *
 * Place in the data flow: io; batch.c's build step, and store's cost model.
 * Thread-safety: pure over their arguments.
 * Ownership: nothing is allocated.
 */
#include "offcore/io.h"

uint64_t oc_io_piece_end(uint64_t pos, uint64_t end, uint64_t max_read)
{
    uint64_t lim = oc_io_align_down(pos) + max_read;
    return end < lim ? end : lim;
}

void oc_io_span_open(struct oc_io_span *s, uint64_t off, uint64_t len)
{
    s->off = oc_io_align_down(off);
    s->len = oc_io_align_up(off + len) - s->off;
}

int oc_io_span_join(const struct oc_io_span_rule *rule, struct oc_io_span *s, uint64_t off,
                    uint64_t len)
{
    uint64_t lo = oc_io_align_down(off), hi = oc_io_align_up(off + len), end = s->off + s->len;
    if (!rule->merge || lo > end + oc_io_align_down(rule->gap))
        return 0;
    uint64_t new_end = hi > end ? hi : end;
    if (new_end - s->off > rule->max_read)
        return 0;
    s->len = new_end - s->off;
    return 1;
}

void oc_io_span_count(const struct oc_io_span_rule *rule, const uint64_t *offs, uint64_t n,
                      uint64_t len, uint64_t *reads, uint64_t *bytes)
{
    struct oc_io_span s = {0, 0};
    int open = 0;
    for (uint64_t i = 0; i < n && len > 0; i++) {
        for (uint64_t pos = offs[i], end = offs[i] + len; pos < end;) {
            uint64_t piece = oc_io_piece_end(pos, end, rule->max_read);
            if (!open || !oc_io_span_join(rule, &s, pos, piece - pos)) {
                if (open) {
                    *reads += 1;
                    *bytes += s.len;
                }
                oc_io_span_open(&s, pos, piece - pos);
                open = 1;
            }
            pos = piece;
        }
    }
    if (open) {
        *reads += 1;
        *bytes += s.len;
    }
}
