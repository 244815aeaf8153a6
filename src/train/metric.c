/*
 * metric.c — the evaluation metrics of `train --metric`, accumulated row by
 * row from the last layer's logits of the labelled nodes of one split:
 *   acc:      the share of rows whose first maximal logit is their label;
 *   rocauc:   two classes only: ROC-AUC of the score logit[1] - logit[0]
 *             (the softmax probability of class 1 is monotone in it, so the
 *             ranks are the same), exact: the Mann-Whitney U statistic, the
 *             probability that a positive scores above a negative with ties
 *             counting one half (the average-rank formulation, as sklearn's
 *             roc_auc_score); NaN when the split lacks a class;
 *   f1-macro: the mean over classes of F1 = 2 TP / (2 TP + FP + FN), over
 *             the classes among the labels or the predictions (sklearn's
 *             f1_score(average="macro")); 0 for no rows.
 * Scores are kept as radix-sortable 64-bit keys of doubles, positives and
 * negatives apart, and sorted once when the value is asked for. Under
 * --distributed each rank accumulates its share of the split and
 * train_metric_reduce makes every rank's accumulator the whole split's: the
 * counts summed, the score keys gathered rank by rank (through dist.h), so
 * the value is the one a single process computes.
 *
 * Place in the data flow: train (eval.c feeds it the logits it computes).
 * Thread-safety: one accumulator per split, used by the evaluating thread.
 * Ownership: an accumulator owns its arrays (through the accountant).
 */
#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "train/dist.h"
#include "train/train_int.h"

static const char *const metric_names[OC_TRAIN_METRIC_COUNT] = {"acc", "rocauc", "f1-macro"};
static const char *const metric_keys[OC_TRAIN_METRIC_COUNT] = {"acc", "rocauc", "f1_macro"};
static const char *const metric_labels[OC_TRAIN_METRIC_COUNT] = {"Acc", "ROC-AUC", "F1-macro"};

const char *oc_train_metric_name(enum oc_train_metric m)
{
    return (unsigned)m < OC_TRAIN_METRIC_COUNT ? metric_names[m] : "?";
}

const char *oc_train_metric_key(enum oc_train_metric m)
{
    return (unsigned)m < OC_TRAIN_METRIC_COUNT ? metric_keys[m] : "?";
}

const char *oc_train_metric_label(enum oc_train_metric m)
{
    return (unsigned)m < OC_TRAIN_METRIC_COUNT ? metric_labels[m] : "?";
}

int oc_train_metric_parse(const char *s, enum oc_train_metric *out, struct oc_err *err)
{
    for (int k = 0; k < OC_TRAIN_METRIC_COUNT; k++)
        if (s && strcmp(s, metric_names[k]) == 0) {
            *out = (enum oc_train_metric)k;
            return OC_OK;
        }
    return OC_ERR(err, OC_ERR_ARG, "--metric '%s': expected acc, rocauc or f1-macro",
                  s ? s : "(null)");
}

uint64_t train_row_argmax(const float *row, uint64_t n)
{
    uint64_t best = 0;
    for (uint64_t k = 1; k < n; k++)
        if (row[k] > row[best])
            best = k;
    return best;
}

uint64_t train_score_key(double score)
{
    uint64_t u;
    if (score == 0.0)
        score = 0.0; /* -0 and +0 are one score */
    memcpy(&u, &score, sizeof(u));
    return u >> 63 ? ~u : u | (1ull << 63);
}

double train_rocauc_keys(uint64_t *pos, uint64_t n_pos, uint64_t *neg, uint64_t n_neg,
                         uint64_t *tmp)
{
    if (n_pos == 0 || n_neg == 0)
        return NAN;
    oc_sort_u64(pos, tmp, n_pos);
    oc_sort_u64(neg, tmp, n_neg);
    /* twice U: for each run of equal positive scores, the negatives below it count 2 and
       the negatives equal to it 1 (sums of integers: exact in a double below 2^53) */
    double u2 = 0;
    uint64_t below = 0, j = 0;
    for (uint64_t i = 0; i < n_pos;) {
        uint64_t v = pos[i], run = 0, equal = 0;
        for (; i < n_pos && pos[i] == v; i++)
            run++;
        for (; j < n_neg && neg[j] < v; j++)
            below++;
        for (; j < n_neg && neg[j] == v; j++)
            equal++;
        u2 += (double)run * (double)(2 * below + equal);
        below += equal;
    }
    return u2 / (2.0 * (double)n_pos * (double)n_neg);
}

double train_f1_macro(const uint64_t *tp, const uint64_t *fp, const uint64_t *fn,
                      uint64_t n_classes)
{
    double sum = 0;
    uint64_t present = 0;
    for (uint64_t c = 0; c < n_classes; c++) {
        uint64_t d = 2 * tp[c] + fp[c] + fn[c];
        if (d == 0)
            continue; /* neither a label nor a prediction of this split */
        sum += 2.0 * (double)tp[c] / (double)d;
        present++;
    }
    return present ? sum / (double)present : 0.0;
}

int train_metric_init(struct train_metric *m, enum oc_train_metric kind, uint64_t n_classes,
                      uint64_t cap_pos, uint64_t cap_neg, struct oc_err *err)
{
    memset(m, 0, sizeof(*m));
    m->kind = kind;
    m->n_classes = n_classes;
    if (kind == OC_TRAIN_METRIC_ROCAUC) {
        assert(n_classes == 2);
        uint64_t big = cap_pos > cap_neg ? cap_pos : cap_neg;
        m->cap_pos = cap_pos;
        m->cap_neg = cap_neg;
        m->pos = oc_alloc((cap_pos ? cap_pos : 1) * sizeof(uint64_t), "ROC-AUC scores", err);
        m->neg = oc_alloc((cap_neg ? cap_neg : 1) * sizeof(uint64_t), "ROC-AUC scores", err);
        m->tmp = oc_alloc((big ? big : 1) * sizeof(uint64_t), "ROC-AUC sort", err);
        if (!m->pos || !m->neg || !m->tmp) {
            train_metric_deinit(m);
            return err->status;
        }
    } else if (kind == OC_TRAIN_METRIC_F1_MACRO) {
        m->tp = oc_calloc(3 * n_classes, sizeof(uint64_t), "F1 counts", err);
        if (!m->tp)
            return err->status;
        m->fp = m->tp + n_classes;
        m->fn = m->fp + n_classes;
    }
    return OC_OK;
}

uint64_t train_metric_bytes(enum oc_train_metric kind, uint64_t n_classes, uint64_t n_rows)
{
    if (kind == OC_TRAIN_METRIC_ROCAUC) /* keys of every row and a sort buffer */
        return 2 * (n_rows + 1) * sizeof(uint64_t) + sizeof(uint64_t);
    if (kind == OC_TRAIN_METRIC_F1_MACRO)
        return 3 * n_classes * sizeof(uint64_t);
    return 0;
}

void train_metric_deinit(struct train_metric *m)
{
    oc_free(m->pos);
    oc_free(m->neg);
    oc_free(m->tmp);
    oc_free(m->tp);
    memset(m, 0, sizeof(*m));
}

void train_metric_reset(struct train_metric *m)
{
    m->n = m->correct = m->n_pos = m->n_neg = 0;
    m->nan = 0;
    if (m->tp)
        memset(m->tp, 0, 3 * m->n_classes * sizeof(uint64_t));
}

void train_metric_add(struct train_metric *m, const float *row, uint64_t n_out, int32_t label)
{
    assert(label >= 0 && (uint64_t)label < n_out && n_out == m->n_classes);
    uint64_t pred = train_row_argmax(row, n_out);
    m->n++;
    m->correct += pred == (uint64_t)label;
    if (m->kind == OC_TRAIN_METRIC_ROCAUC) {
        double score = (double)row[1] - (double)row[0];
        m->nan |= isnan(score);
        if (label == 1) {
            assert(m->n_pos < m->cap_pos);
            m->pos[m->n_pos++] = train_score_key(score);
        } else {
            assert(m->n_neg < m->cap_neg);
            m->neg[m->n_neg++] = train_score_key(score);
        }
    } else if (m->kind == OC_TRAIN_METRIC_F1_MACRO) {
        if (pred == (uint64_t)label) {
            m->tp[label]++;
        } else {
            m->fp[pred]++;
            m->fn[label]++;
        }
    }
}

double train_metric_value(struct train_metric *m)
{
    switch (m->kind) {
    case OC_TRAIN_METRIC_ROCAUC:
        return m->nan ? NAN : train_rocauc_keys(m->pos, m->n_pos, m->neg, m->n_neg, m->tmp);
    case OC_TRAIN_METRIC_F1_MACRO:
        return train_f1_macro(m->tp, m->fp, m->fn, m->n_classes);
    default:
        return m->n ? (double)m->correct / (double)m->n : 0.0;
    }
}

/*
 * Gathers every rank's keys[0..*n) into keys (rank 0's first), *n their
 * total; ones and counts: n_ranks each, tmp: room for this rank's keys.
 */
static int gather_keys(uint64_t *keys, uint64_t *n, uint64_t cap, uint64_t *tmp,
                       const uint64_t *ones, uint64_t *counts, struct oc_err *err)
{
    uint64_t own = *n, total = 0;
    int rc = oc_dist_allgather_u64(&own, counts, ones, err);
    if (rc)
        return rc;
    for (uint32_t r = 0; r < oc_dist_size(); r++)
        total += counts[r];
    if (total > cap) /* the shares are one split's: more rows than it has is a broken invariant */
        return OC_ERR(err, OC_ERR_INTERNAL,
                      "--distributed: the ranks evaluated %" PRIu64
                      " scores of a class, the split has %" PRIu64,
                      total, cap);
    memcpy(tmp, keys, own * sizeof(uint64_t));
    if ((rc = oc_dist_allgather_u64(tmp, keys, counts, err)))
        return rc;
    *n = total;
    return OC_OK;
}

int train_metric_reduce(struct train_metric *m, struct oc_err *err)
{
    if (!oc_dist_on() || oc_dist_size() < 2)
        return OC_OK;
    uint64_t v[3] = {m->n, m->correct, (uint64_t)m->nan};
    int rc;
    if ((rc = oc_dist_sum_u64(v, 3, err)))
        return rc;
    m->n = v[0];
    m->correct = v[1];
    m->nan = v[2] != 0;
    if (m->kind == OC_TRAIN_METRIC_F1_MACRO)
        return oc_dist_sum_u64(m->tp, 3 * m->n_classes, err);
    if (m->kind != OC_TRAIN_METRIC_ROCAUC)
        return OC_OK;
    uint32_t n_ranks = oc_dist_size();
    uint64_t *ones = oc_calloc(2 * (uint64_t)n_ranks, sizeof(uint64_t), "ROC-AUC exchange", err);
    if (!ones)
        return err->status;
    for (uint32_t r = 0; r < n_ranks; r++)
        ones[r] = 1;
    /* the sort buffer holds the split's larger class, so it holds one rank's keys */
    rc = gather_keys(m->pos, &m->n_pos, m->cap_pos, m->tmp, ones, ones + n_ranks, err);
    if (rc == OC_OK)
        rc = gather_keys(m->neg, &m->n_neg, m->cap_neg, m->tmp, ones, ones + n_ranks, err);
    oc_free(ones);
    return rc;
}

void train_split_binary_counts(const struct train_data *d, int s, uint64_t *n_pos, uint64_t *n_neg)
{
    *n_pos = *n_neg = 0;
    for (uint64_t i = 0; i < d->n_split[s]; i++) {
        int32_t y = d->labels[d->split[s][i]];
        if (y >= 0)
            *(y == 1 ? n_pos : n_neg) += 1;
    }
}

int train_metric_check(const struct train_data *d, const struct oc_train_opts *o, const char *dir,
                       struct oc_err *err)
{
    if (o->metric != OC_TRAIN_METRIC_ROCAUC)
        return OC_OK;
    if (d->n_classes != 2)
        return OC_ERR(err, OC_ERR_ARG,
                      "--metric rocauc: %s has %" PRIu64
                      " classes; ROC-AUC is computed for two classes only (use acc or f1-macro)",
                      dir, d->n_classes);
    static const char *const names[TRAIN_SPLIT_COUNT] = {"training", "validation", "test"};
    for (int s = TRAIN_SPLIT_VAL; s < TRAIN_SPLIT_COUNT; s++) {
        uint64_t n_pos, n_neg;
        train_split_binary_counts(d, s, &n_pos, &n_neg);
        if (n_pos == 0 || n_neg == 0)
            return OC_ERR(err, OC_ERR_ARG,
                          "--metric rocauc: the %s split of %s has %" PRIu64
                          " labelled nodes of class 0 and %" PRIu64
                          " of class 1; ROC-AUC needs both (use acc or f1-macro)",
                          names[s], dir, n_neg, n_pos);
    }
    return OC_OK;
}
