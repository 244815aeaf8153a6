/*
 * args.c — the option parser every subcommand uses: "--name value" and
 * "--name=value" (a one-letter option is "-x value"), typed values checked strictly, unknown options and bad
 * values rejected with a message naming the option, and --help generated
 * from the same table so the documentation cannot drift from the parser.
 *
 * Place in the data flow: cli.
 * Thread-safety: single-threaded.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "offcore/core.h"

static const char *type_metavar(const struct cli_opt *o)
{
    if (o->metavar)
        return o->metavar;
    switch (o->type) {
    case CLI_U64:
    case CLI_U32:
        return "N";
    case CLI_F64:
        return "X";
    case CLI_SIZE:
        return "SIZE";
    case CLI_CHOICE:
        return o->choices;
    default:
        return "VALUE";
    }
}

void cli_print_help(const struct cli_cmd *cmd)
{
    printf("usage: offcore %s %s\n\n%s\n", cmd->name, cmd->usage, cmd->summary);
    if (cmd->details)
        printf("\n%s\n", cmd->details);
    printf("\noptions:\n");
    for (size_t i = 0; i < cmd->n_opts; i++) {
        const struct cli_opt *o = &cmd->opts[i];
        char left[64];
        const char *dashes = o->name[1] ? "--" : "-"; /* a one-letter option: "-o" */
        if (o->type == CLI_FLAG)
            snprintf(left, sizeof(left), "%s%s", dashes, o->name);
        else
            snprintf(left, sizeof(left), "%s%s %s", dashes, o->name, type_metavar(o));
        printf("  %-28s %s\n", left, o->help);
    }
    printf("  %-28s %s\n", "-h, --help", "show this help and exit");
}

static int bad_value(const struct cli_cmd *cmd, const struct cli_opt *o, const char *v,
                     const char *why)
{
    fprintf(stderr, "offcore %s: bad value '%s' for --%s: %s\n", cmd->name, v, o->name, why);
    return -1;
}

static int set_value(const struct cli_cmd *cmd, const struct cli_opt *o, const char *v)
{
    char *end = NULL;
    switch (o->type) {
    case CLI_STR:
        if (!*v)
            return bad_value(cmd, o, v, "empty");
        *(const char **)o->target = v;
        return 0;
    case CLI_CHOICE: {
        size_t n = strlen(v);
        const char *c = o->choices;
        while (c && *c) {
            const char *bar = strchr(c, '|');
            size_t len = bar ? (size_t)(bar - c) : strlen(c);
            if (len == n && n && strncmp(c, v, n) == 0) {
                *(const char **)o->target = v;
                return 0;
            }
            c = bar ? bar + 1 : NULL;
        }
        char why[128];
        snprintf(why, sizeof(why), "expected one of %s", o->choices);
        return bad_value(cmd, o, v, why);
    }
    case CLI_U64:
    case CLI_U32: {
        if (*v < '0' || *v > '9') /* strtoull would take a sign after spaces */
            return bad_value(cmd, o, v, "expected a non-negative integer");
        errno = 0;
        unsigned long long x = strtoull(v, &end, 10);
        if (errno || *end)
            return bad_value(cmd, o, v, "expected a non-negative integer");
        if (o->type == CLI_U32) {
            if (x > UINT32_MAX)
                return bad_value(cmd, o, v, "too large");
            *(uint32_t *)o->target = (uint32_t)x;
        } else {
            *(uint64_t *)o->target = (uint64_t)x;
        }
        return 0;
    }
    case CLI_F64: {
        errno = 0;
        double x = strtod(v, &end);
        if (errno || *end || end == v || x != x)
            return bad_value(cmd, o, v, "expected a number");
        *(double *)o->target = x;
        return 0;
    }
    case CLI_SIZE: {
        struct oc_err err;
        if (oc_parse_size(v, (uint64_t *)o->target, &err) != OC_OK)
            return bad_value(cmd, o, v,
                             strstr(err.msg, "less than one byte")
                                 ? "less than one byte (0 means none)"
                                 : "expected a size such as 512M or 4G");
        return 0;
    }
    case CLI_FLAG:
        break;
    }
    return -1;
}

int cli_parse(const struct cli_cmd *cmd, int argc, char **argv, const char **pos, unsigned *n_pos)
{
    *n_pos = 0;
    int only_pos = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (only_pos || a[0] != '-' || a[1] == '\0') {
            if (*n_pos >= cmd->max_pos) {
                fprintf(stderr, "offcore %s: unexpected argument '%s' (usage: offcore %s %s)\n",
                        cmd->name, a, cmd->name, cmd->usage);
                return -1;
            }
            pos[(*n_pos)++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            only_pos = 1;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            cli_print_help(cmd);
            return 1;
        }
        int letter = a[1] != '-' && a[2] == '\0'; /* "-o": a one-letter option */
        if (a[1] != '-' && !letter) {
            fprintf(stderr, "offcore %s: unknown option '%s' (see offcore %s --help)\n", cmd->name,
                    a, cmd->name);
            return -1;
        }
        const char *name = a + 2 - letter;
        const char *eq = letter ? NULL : strchr(name, '=');
        size_t name_len = eq ? (size_t)(eq - name) : strlen(name);
        const struct cli_opt *o = NULL;
        for (size_t k = 0; k < cmd->n_opts; k++)
            if (strlen(cmd->opts[k].name) == name_len && (name_len == 1) == letter &&
                strncmp(cmd->opts[k].name, name, name_len) == 0)
                o = &cmd->opts[k];
        if (!o) {
            fprintf(stderr, "offcore %s: unknown option '%s%.*s' (see offcore %s --help)\n",
                    cmd->name, letter ? "-" : "--", (int)name_len, name, cmd->name);
            return -1;
        }
        if (cmd->given)
            cmd->given[o - cmd->opts] = 1;
        if (o->type == CLI_FLAG) {
            if (eq) {
                fprintf(stderr, "offcore %s: option --%s takes no value\n", cmd->name, o->name);
                return -1;
            }
            *(int *)o->target = 1;
            continue;
        }
        const char *v = eq ? eq + 1 : NULL;
        if (!v) {
            if (i + 1 >= argc) {
                fprintf(stderr, "offcore %s: option --%s needs a value (%s)\n", cmd->name, o->name,
                        type_metavar(o));
                return -1;
            }
            v = argv[++i];
        }
        if (set_value(cmd, o, v) != 0)
            return -1;
    }
    if (*n_pos < cmd->min_pos) {
        fprintf(stderr, "offcore %s: missing argument (usage: offcore %s %s)\n", cmd->name,
                cmd->name, cmd->usage);
        return -1;
    }
    return 0;
}
