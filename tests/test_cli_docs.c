/*
 * test_cli_docs.c — docs/CLI.md documents every option the CLI offers: each
 * command listed by `offcore --help` (and each sub-help a help text points
 * to, such as `import kg --help`) is run with --help, every option line of
 * its output (`  --flag ...` or `  -h, --help ...`) is parsed, and each flag
 * must appear in that command's section of docs/CLI.md (the `### ` heading
 * naming `offcore CMD ...` or `CMD`, down to the next `##`/`###` heading);
 * --help itself is documented once, in the Commands introduction. A second
 * test runs the same checker on a made-up help text and document, so the
 * check is seen to fire.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "proc_util.h"

/* Whether flag occurs in text[0..len) as a whole flag (not the start of a longer one). */
static int has_flag(const char *text, size_t len, const char *flag)
{
    size_t n = strlen(flag);
    for (size_t i = 0; i + n <= len; i++) {
        if (memcmp(text + i, flag, n) != 0)
            continue;
        char after = i + n < len ? text[i + n] : '\0';
        char before = i ? text[i - 1] : ' ';
        if (!isalnum((unsigned char)after) && after != '-' && before != '-' &&
            !isalnum((unsigned char)before))
            return 1;
    }
    return 0;
}

/*
 * The section of doc for command cmd ("train", "import kg"): from the first
 * `### ` heading naming "`offcore CMD " / "`offcore CMD`" / "`CMD`" to the next
 * `## ` or `### ` heading. *len 0 if there is none.
 */
static const char *doc_section(const char *doc, const char *cmd, size_t *len)
{
    char a[96], b[96], c[96];
    snprintf(a, sizeof(a), "`offcore %s ", cmd);
    snprintf(b, sizeof(b), "`offcore %s`", cmd);
    snprintf(c, sizeof(c), "`%s`", cmd);
    *len = 0;
    for (const char *l = doc; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *eol = strchr(l, '\n');
        size_t ll = eol ? (size_t)(eol - l) : strlen(l);
        if (strncmp(l, "### ", 4) != 0)
            continue;
        char head[512];
        snprintf(head, sizeof(head), "%.*s", (int)(ll < 511 ? ll : 511), l);
        if (!strstr(head, a) && !strstr(head, b) && !strstr(head, c))
            continue;
        const char *end = eol ? eol + 1 : l + ll;
        while (*end && strncmp(end, "## ", 3) != 0 && strncmp(end, "### ", 4) != 0) {
            const char *nl = strchr(end, '\n');
            end = nl ? nl + 1 : end + strlen(end);
        }
        *len = (size_t)(end - l);
        return l;
    }
    return NULL;
}

/* The Commands introduction of doc: from `## Commands` to the first `### ` heading. */
static const char *doc_intro(const char *doc, size_t *len)
{
    const char *s = strstr(doc, "\n## Commands\n");
    const char *e = s ? strstr(s, "\n### ") : NULL;
    *len = s && e ? (size_t)(e - s) : 0;
    return s;
}

/*
 * Checks every option line of help (command cmd) against doc; prints each
 * flag missing from cmd's section and returns how many there are (-1 if the
 * section is missing or help lists no option).
 */
static int check_help(const char *doc, const char *cmd, const char *help)
{
    size_t sec_len, intro_len;
    const char *sec = doc_section(doc, cmd, &sec_len);
    const char *intro = doc_intro(doc, &intro_len);
    if (!sec) {
        fprintf(stderr, "  docs/CLI.md: no `### ` section for `%s`\n", cmd);
        return -1;
    }
    int missing = 0, n = 0;
    for (const char *l = help; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *p = l;
        while (*p == ' ')
            p++;
        if (p == l || p[0] != '-') /* an option line is indented and starts with '-' */
            continue;
        if (p[1] != '-' && strncmp(p + 2, ", --", 4) == 0) /* "-h, --help" */
            p += 4;
        if (p[0] != '-' || p[1] != '-')
            continue;
        char flag[64];
        size_t k = 0;
        while (k + 1 < sizeof(flag) && (isalnum((unsigned char)p[k]) || p[k] == '-'))
            flag[k] = p[k], k++;
        flag[k] = '\0';
        n++;
        int ok = strcmp(flag, "--help") == 0 ? intro && has_flag(intro, intro_len, flag)
                                             : has_flag(sec, sec_len, flag);
        if (!ok) {
            fprintf(stderr,
                    "  `offcore %s %s` (in its --help) is not documented in its section "
                    "of docs/CLI.md\n",
                    cmd, flag);
            missing++;
        }
    }
    return n ? missing : -1;
}

static char *read_doc(void)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/docs/CLI.md", getenv("OC_SRC"));
    char *doc = NULL;
    size_t len;
    struct oc_err err;
    OC_CHECK_OK(oc_read_file(path, 0, &doc, &len, &err), &err);
    return doc;
}

/* Runs `offcore <words of cmd> --help`; its stdout (oc_free), NULL if it failed. */
static char *help_of(const char *cmd)
{
    char words[96];
    snprintf(words, sizeof(words), "%s", cmd);
    const char *args[8];
    int n = 0;
    for (char *s = strtok(words, " "); s && n < 6; s = strtok(NULL, " "))
        args[n++] = s;
    args[n++] = "--help";
    args[n] = NULL;
    struct proc_run r;
    proc_run_cli(args, 60, &r);
    if (r.code != 0) {
        fprintf(stderr, "  `offcore %s --help` exited %d\n", cmd, r.code);
        proc_run_free(&r);
        return NULL;
    }
    oc_free(r.err);
    return r.out;
}

/* Appends to cmds the sub-helps help points to ("`import kg --help`"), not listed yet. */
static void add_subhelps(const char *help, char cmds[][48], int *n, int cap)
{
    for (const char *p = help; (p = strstr(p, " --help`")) != NULL; p++) {
        const char *s = p;
        while (s > help && s[-1] != '`')
            s--;
        if (s == help || (size_t)(p - s) >= 48 || strncmp(s, "offcore ", 8) == 0)
            continue;
        char c[48];
        snprintf(c, sizeof(c), "%.*s", (int)(p - s), s);
        int seen = 0;
        for (int i = 0; i < *n; i++)
            seen |= strcmp(cmds[i], c) == 0;
        if (!seen && *n < cap)
            snprintf(cmds[(*n)++], 48, "%s", c);
    }
}

OC_TEST(every_help_option_is_documented)
{
    if (!getenv("OC_BIN") || !getenv("OC_SRC"))
        OC_SKIP("OC_BIN or OC_SRC not set; run through ctest");
    char *doc = read_doc();
    char *top = help_of("");
    OC_CHECK(doc && top);
    if (!doc || !top)
        goto out;
    /* the commands: the lines under "commands:" of `offcore --help` */
    char cmds[32][48];
    int n = 0;
    const char *l = strstr(top, "\ncommands:\n");
    OC_CHECK(l != NULL);
    for (l = l ? strchr(l + 1, '\n') + 1 : NULL; l && strncmp(l, "  ", 2) == 0 && n < 32;
         l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        int k = 0;
        while (l[2 + k] && l[2 + k] != ' ' && k < 47)
            k++;
        snprintf(cmds[n++], 48, "%.*s", k, l + 2);
    }
    OC_CHECK(n >= 9); /* demo generate generate-kg import info layout train kg-train report */
    int n_checked = 0;
    for (int i = 0; i < n; i++) {
        char *help = help_of(cmds[i]);
        OC_CHECK(help != NULL);
        if (!help)
            continue;
        add_subhelps(help, cmds, &n, 32);
        int missing = check_help(doc, cmds[i], help);
        OC_CHECK(missing == 0);
        n_checked++;
        oc_free(help);
    }
    OC_CHECK(n_checked >= 10); /* with `import kg` */
out:
    oc_free(top);
    oc_free(doc);
}

/* The checker fires: a flag missing from the command's section, one only in another section. */
OC_TEST(the_checker_finds_undocumented_options)
{
    const char *doc = "# x\n\n## Commands\n\nEvery command takes `--help`.\n\n"
                      "### `offcore frob DIR [options]`\n\n`--alpha N` sets alpha.\n"
                      "`--beta-two` is a longer flag.\n\n"
                      "### `offcore other`\n\n`--gamma` is documented here only.\n\n"
                      "### Pairs: `frob pair`\n\n`--delta`\n\n## Safety\n\n`--zeta`\n";
    const char *ok = "usage: offcore frob\n\noptions:\n  --alpha N     alpha\n"
                     "  -h, --help    show this help (not --gamma)\n";
    OC_CHECK(check_help(doc, "frob", ok) == 0);
    const char *bad = "options:\n  --alpha N  a\n  --beta    the prefix of --beta-two\n"
                      "  --gamma   another command's\n  --zeta    after the sections\n";
    OC_CHECK(check_help(doc, "frob", bad) == 3);
    OC_CHECK(check_help(doc, "frob pair", "  --delta  d\n  --alpha a\n") == 1);
    OC_CHECK(check_help(doc, "nosuch", ok) == -1);                /* no section */
    OC_CHECK(check_help(doc, "frob", "no options here\n") == -1); /* nothing parsed */
    const char *no_help_doc = "## Commands\n\nnothing\n\n### `offcore frob`\n\n`--alpha`\n";
    OC_CHECK(check_help(no_help_doc, "frob", ok) == 1); /* --help not in the introduction */
    char cmds[4][48] = {"import"};
    int n = 1;
    add_subhelps("see `import kg --help` and `offcore x --help`; `import kg --help`", cmds, &n, 4);
    OC_CHECK(n == 2 && strcmp(cmds[1], "import kg") == 0);
}

OC_TEST_MAIN()
