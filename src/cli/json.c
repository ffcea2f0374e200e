/* The one JSON writer of the command line (output only, RFC 8259): every
 * string escaped, non-finite numbers written as null. */
#include "cli.h"

#include <math.h>

void cli_json_init(cli_json *j, FILE *f)
{
    j->f = f;
    j->depth = 0;
    j->count[0] = 0;
}

/* The length of the well-formed UTF-8 sequence at p (RFC 3629, table 3-7
 * of the Unicode standard: no overlong forms, surrogates or code points
 * past U+10FFFF), or 0. */
static int utf8_len(const unsigned char *p)
{
    unsigned char c = p[0], lo = 0x80, hi = 0xbf;
    int n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (c == 0xe0)
        lo = 0xa0;
    else if (c == 0xed)
        hi = 0x9f;
    else if (c == 0xf0)
        lo = 0x90;
    else if (c == 0xf4)
        hi = 0x8f;
    for (int i = 1; i < n; i++)
        if (p[i] < (i == 1 ? lo : 0x80) || p[i] > (i == 1 ? hi : 0xbf))
            return 0; /* also at the string's end: 0 is no continuation */
    return n;
}

/* s as a JSON string; bytes that are not UTF-8 (a file name can hold
 * any) become U+FFFD, so the output is always valid JSON. */
static void put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\u%04x", *p);
        else if (*p < 0x80)
            fputc(*p, f);
        else if (utf8_len(p)) {
            int n = utf8_len(p);
            fwrite(p, 1, (size_t)n, f);
            p += n - 1;
        } else
            fputs("\\ufffd", f);
    }
    fputc('"', f);
}

/* The comma and the key before a value. */
static void member(cli_json *j, const char *key)
{
    if (j->count[j->depth]++)
        fputc(',', j->f);
    if (key) {
        put_string(j->f, key);
        fputc(':', j->f);
    }
}

/* After a value: the top-level value ends the line. */
static void done(cli_json *j)
{
    if (j->depth == 0) {
        fputc('\n', j->f);
        j->count[0] = 0;
    }
}

static void begin(cli_json *j, const char *key, char open, char close)
{
    member(j, key);
    fputc(open, j->f);
    if (j->depth + 1 < CLI_JSON_DEPTH) {
        j->depth++;
        j->close[j->depth] = close;
        j->count[j->depth] = 0;
    }
}

void cli_json_begin_obj(cli_json *j, const char *key) { begin(j, key, '{', '}'); }
void cli_json_begin_arr(cli_json *j, const char *key) { begin(j, key, '[', ']'); }

void cli_json_end(cli_json *j)
{
    if (j->depth == 0)
        return;
    fputc(j->close[j->depth--], j->f);
    done(j);
}

void cli_json_str(cli_json *j, const char *key, const char *s)
{
    member(j, key);
    if (s)
        put_string(j->f, s);
    else
        fputs("null", j->f);
    done(j);
}

void cli_json_num(cli_json *j, const char *key, const char *fmt, double v)
{
    member(j, key);
    if (isfinite(v))
        fprintf(j->f, fmt, v);
    else
        fputs("null", j->f);
    done(j);
}

void cli_json_int(cli_json *j, const char *key, long long v)
{
    member(j, key);
    fprintf(j->f, "%lld", v);
    done(j);
}

void cli_json_u64(cli_json *j, const char *key, unsigned long long v)
{
    member(j, key);
    fprintf(j->f, "%llu", v);
    done(j);
}

void cli_json_bool(cli_json *j, const char *key, int b)
{
    member(j, key);
    fputs(b ? "true" : "false", j->f);
    done(j);
}

void cli_json_null(cli_json *j, const char *key)
{
    member(j, key);
    fputs("null", j->f);
    done(j);
}

void cli_json_chip(cli_json *j, const char *key, const ftm_mesh *m, int chip)
{
    if (chip < 0) {
        cli_json_null(j, key);
        return;
    }
    cli_json_begin_arr(j, key);
    cli_json_int(j, NULL, ftm_mesh_row(m, chip));
    cli_json_int(j, NULL, ftm_mesh_col(m, chip));
    cli_json_end(j);
}

void cli_json_chips(cli_json *j, const char *key, const ftm_mesh *m, const int *chips, int n)
{
    if (!n) {
        cli_json_null(j, key);
        return;
    }
    cli_json_begin_arr(j, key);
    for (int i = 0; i < n; i++)
        cli_json_chip(j, NULL, m, chips[i]);
    cli_json_end(j);
}
