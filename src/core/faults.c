/* Fault scripts: parsing, random draws, time order and the pre-run check
 * (see include/ftmesh/faults.h). */
#include "ftmesh/faults.h"
#include "ftmesh/error.h"
#include "core/util.h"
#include "core/faults_int.h"
#include "ftmesh/rng.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const phase_names_[FTM_FAULT_NPHASES] = {
    "start", "forward", "backward", "allreduce", "optimizer"
};

const char *ftm_fault_phase_name(int phase)
{
    return phase >= 0 && phase < FTM_FAULT_NPHASES ? phase_names_[phase] : "?";
}

void ftm_fault_script_init(ftm_fault_script *s, int mode)
{
    memset(s, 0, sizeof *s);
    s->mode = mode;
}

void ftm_fault_script_free(ftm_fault_script *s)
{
    free(s->ev);
    s->ev = NULL;
    s->n = s->cap = 0;
}

int ftm_fault_script_add(ftm_fault_script *s, const ftm_fault_event *ev)
{
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 8;
        ftm_fault_event *e = realloc(s->ev, sizeof *e * (size_t)cap);
        if (!e)
            return FTM_ENOMEM;
        s->ev = e;
        s->cap = cap;
    }
    s->ev[s->n] = *ev;
    s->ev[s->n].order = s->n;
    s->n++;
    return 0;
}

/* ---- parsing ---------------------------------------------------------------- */

/* A decimal number 0..max without sign; advances *p. */
static int fs_num(const char **p, long long max, long long *out)
{
    const char *s = *p;
    long long v = 0;
    if (*s < '0' || *s > '9')
        return -1;
    for (; *s >= '0' && *s <= '9'; s++) {
        v = v * 10 + (*s - '0');
        if (v > max)
            return -1;
    }
    *out = v;
    *p = s;
    return 0;
}

static int fs_coord(const char **p, int *r, int *c)
{
    long long a, b;
    if (fs_num(p, 1000000, &a) || **p != ',')
        return -1;
    (*p)++;
    if (fs_num(p, 1000000, &b))
        return -1;
    *r = (int)a;
    *c = (int)b;
    return 0;
}

static int fs_prefix(const char **p, const char *word)
{
    size_t n = strlen(word);
    if (strncmp(*p, word, n))
        return 0;
    *p += n;
    return 1;
}

/* WHAT, up to the '@'. */
static int fs_what(const char **p, ftm_fault_event *ev, char *detail, size_t dlen)
{
    ev->kind = FTM_FAULT_CHIP;
    if (fs_prefix(p, "host:"))
        ev->kind = FTM_FAULT_HOST;
    else if (fs_prefix(p, "link:"))
        ev->kind = FTM_FAULT_LINK;
    else
        fs_prefix(p, "chip:");
    const char *what = ev->kind == FTM_FAULT_LINK ? "link:R,C-R2,C2 or link:R,C>R2,C2"
                     : ev->kind == FTM_FAULT_HOST ? "host:R,C" : "R,C";
    if (fs_coord(p, &ev->r, &ev->c))
        return core_fail_detail(FTM_EINVAL, detail, dlen, "expected %s before '@'", what);
    if (ev->kind == FTM_FAULT_LINK) {
        if (**p != '-' && **p != '>')
            return core_fail_detail(FTM_EINVAL, detail, dlen, "expected %s before '@'", what);
        ev->oneway = **p == '>';
        (*p)++;
        if (fs_coord(p, &ev->r2, &ev->c2))
            return core_fail_detail(FTM_EINVAL, detail, dlen, "expected %s before '@'", what);
    }
    if (**p != '@')
        return core_fail_detail(FTM_EINVAL, detail, dlen, "expected '@' after %s", what);
    (*p)++;
    return 0;
}

/* Words after a whole event (a file line "1,1@1 extra"): named as such. */
static int fs_trailing(const char *p, char *detail, size_t dlen)
{
    p = strpbrk(p, " \t");
    if (!p)
        return 0;
    while (*p == ' ' || *p == '\t')
        p++;
    if (!*p)
        return core_fail_detail(FTM_EINVAL, detail, dlen, "a blank inside or after the event: "
                                "drop it");
    return core_fail_detail(FTM_EINVAL, detail, dlen, "unexpected '%.40s' after the event: one "
                            "event a line ('#' starts a comment)", p);
}

/* WHEN for training: STEP[:PHASE] or STEP:allreduce:N. */
static int fs_when_train(const char *p, ftm_fault_event *ev, char *detail, size_t dlen)
{
    if (!*p)
        return 0;
    if (fs_trailing(p, detail, dlen))
        return FTM_EINVAL;
    if (*p++ != ':')
        return core_fail_detail(FTM_EINVAL, detail, dlen, "expected STEP, STEP:PHASE or STEP:allreduce:N after '@'");
    for (int ph = FTM_PHASE_FORWARD; ph < FTM_FAULT_NPHASES; ph++) {
        const char *q = p;
        if (!fs_prefix(&q, phase_names_[ph]) || (*q && *q != ':'))
            continue;
        ev->phase = ph;
        if (!*q)
            return 0;
        long long n;
        q++;
        if (ph != FTM_PHASE_ALLREDUCE)
            return core_fail_detail(FTM_EINVAL, detail, dlen, "a packet count goes only after 'allreduce'");
        if (fs_num(&q, FTM_FAULT_MAX_PKTS, &n) || *q)
            return core_fail_detail(FTM_EINVAL, detail, dlen, "expected a packet count 0..%lld after 'allreduce:'",
                           (long long)FTM_FAULT_MAX_PKTS);
        ev->pkts = n;
        return 0;
    }
    return core_fail_detail(FTM_EINVAL, detail, dlen,
                   "unknown phase after STEP: (forward, backward, allreduce or optimizer)");
}

/* WHEN for allreduce runs: ITER, ITER:N or ITER:allreduce. */
static int fs_when_iter(const char *p, ftm_fault_event *ev, char *detail, size_t dlen)
{
    if (!*p)
        return 0;
    long long n;
    if (fs_trailing(p, detail, dlen))
        return FTM_EINVAL;
    ev->phase = FTM_PHASE_ALLREDUCE;
    if (!strcmp(p, ":allreduce"))
        return 0;
    p += *p == ':';
    if (p[-1] != ':' || fs_num(&p, FTM_FAULT_MAX_PKTS, &n) || *p)
        return core_fail_detail(FTM_EINVAL, detail, dlen,
                       "expected ITER, ITER:N (packets sent) or ITER:allreduce after '@'");
    ev->pkts = n;
    return 0;
}

int ftm_fault_parse(const char *text, int mode, ftm_fault_event *ev, char *detail, size_t dlen)
{
    const char *p = text;
    long long when;
    memset(ev, 0, sizeof *ev);
    ev->pkts = FTM_FAULT_MID;
    int rc = fs_what(&p, ev, detail, dlen);
    if (rc)
        return rc;
    if (fs_num(&p, FTM_FAULT_MAX_WHEN, &when))
        return core_fail_detail(FTM_EINVAL, detail, dlen, "expected %s number 0..%ld after '@'",
                       mode == FTM_FAULT_TRAIN ? "a step" : "an iteration", FTM_FAULT_MAX_WHEN);
    ev->when = (long)when;
    return mode == FTM_FAULT_TRAIN ? fs_when_train(p, ev, detail, dlen)
                                   : fs_when_iter(p, ev, detail, dlen);
}

int ftm_fault_parse_repair(const char *text, int mode, ftm_fault_event *ev, char *detail,
                           size_t dlen)
{
    int rc = ftm_fault_parse(text, mode, ev, detail, dlen);
    if (rc)
        return rc;
    if (ev->phase != FTM_PHASE_START)
        return core_fail_detail(FTM_EINVAL, detail, dlen, "a repair takes effect at the start of a%s %s: "
                       "write WHAT@%s", mode == FTM_FAULT_TRAIN ? "" : "n",
                       mode == FTM_FAULT_TRAIN ? "step" : "iteration",
                       mode == FTM_FAULT_TRAIN ? "STEP" : "ITER");
    ev->repair = 1;
    return 0;
}

int ftm_fault_parse_line(const char *text, int mode, ftm_fault_event *ev, char *detail,
                         size_t dlen)
{
    const char *p = text;
    int repair = fs_prefix(&p, "repair");
    if (repair || fs_prefix(&p, "kill")) {
        if (*p != ' ' && *p != '\t')
            return core_fail_detail(FTM_EINVAL, detail, dlen, "expected a blank after '%s'",
                           repair ? "repair" : "kill");
        p += strspn(p, " \t");
    }
    return repair ? ftm_fault_parse_repair(p, mode, ev, detail, dlen)
                  : ftm_fault_parse(p, mode, ev, detail, dlen);
}

#define FS_LINE_MAX 256

/* One line of a file into buf without comment and surrounding blanks;
 * returns the bytes consumed (with the newline), -1 where it holds a byte
 * that is not text, -2 where it is too long. */
static long fs_line(const char *text, size_t len, char *buf)
{
    size_t i = 0, n = 0;
    int comment = 0;
    for (; i < len && text[i] != '\n'; i++) {
        unsigned char ch = (unsigned char)text[i];
        if (ch == '#')
            comment = 1;
        if (comment)
            continue;
        if (ch == 0 || (ch < 0x20 && ch != '\t' && ch != '\r'))
            return -1;
        if (n == FS_LINE_MAX - 1)
            return -2;
        buf[n++] = (char)ch;
    }
    while (n && (buf[n - 1] == ' ' || buf[n - 1] == '\t' || buf[n - 1] == '\r'))
        n--;
    buf[n] = 0;
    size_t lead = strspn(buf, " \t");
    memmove(buf, buf + lead, n - lead + 1);
    return (long)(i + (i < len));
}

int ftm_fault_script_parse_text(ftm_fault_script *s, const char *text, size_t len,
                                int origin, char *detail, size_t dlen)
{
    char buf[FS_LINE_MAX], why[160];
    int n0 = s->n, line = 0, rc = 0;
    while (len && !rc) {
        long used = fs_line(text, len, buf);
        line++;
        if (used < 0) {
            if (used == -1)
                rc = core_fail_detail(FTM_EFORMAT, detail, dlen, "line %d: holds a byte that is not "
                                      "text (a NUL or a control character)", line);
            else
                rc = core_fail_detail(FTM_EFORMAT, detail, dlen, "line %d: longer than %d characters",
                                      line, FS_LINE_MAX - 1);
            break;
        }
        text += used;
        len -= (size_t)used;
        if (!buf[0])
            continue;
        ftm_fault_event ev;
        if (ftm_fault_parse_line(buf, s->mode, &ev, why, sizeof why)) {
            rc = core_fail_detail(FTM_EFORMAT, detail, dlen, "line %d: '%.60s': %s", line, buf, why);
            break;
        }
        ev.origin = origin;
        ev.line = line;
        rc = ftm_fault_script_add(s, &ev);
    }
    if (rc)
        s->n = n0;
    return rc;
}

int ftm_fault_script_load(ftm_fault_script *s, const char *path, int origin,
                          char *detail, size_t dlen)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return core_fail_detail(FTM_EIO, detail, dlen, "cannot open: %s", strerror(errno));
    size_t cap = 4096, len = 0;
    char *text = malloc(cap);
    int rc = text ? 0 : FTM_ENOMEM;
    int err = 0;
    while (!rc) {
        if (len == cap && cap >= (64u << 20) && fgetc(f) == EOF)
            break; /* exactly the largest size */
        if (len == cap) {
            char *t = cap < (64u << 20) ? realloc(text, cap * 2) : NULL;
            if (!t) {
                rc = core_fail_detail(t || cap < (64u << 20) ? FTM_ENOMEM : FTM_EFORMAT, detail, dlen,
                             "file too large for a fault script");
                break;
            }
            text = t;
            cap *= 2;
        }
        size_t got = fread(text + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            err = errno;
            break;
        }
    }
    if (!rc && ferror(f))
        rc = core_fail_detail(FTM_EIO, detail, dlen, "cannot read it: %s",
                              err ? strerror(err) : "read error");
    fclose(f);
    /* a UTF-8 byte-order mark (editors on some systems write one) */
    size_t bom = len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3) ? 3 : 0;
    if (!rc)
        rc = ftm_fault_script_parse_text(s, text + bom, len - bom, origin, detail, dlen);
    free(text);
    return rc;
}

/* ---- time order --------------------------------------------------------------- */

static int64_t fs_pkt_key(const ftm_fault_event *e)
{
    return e->pkts == FTM_FAULT_MID ? INT64_MAX : e->pkts;
}

int ftm_fault_cmp(const ftm_fault_event *a, const ftm_fault_event *b)
{
    if (a->when != b->when)
        return a->when < b->when ? -1 : 1;
    if (a->repair != b->repair) /* repairs join at the start, before any kill */
        return a->repair ? -1 : 1;
    if (a->phase != b->phase)
        return a->phase < b->phase ? -1 : 1;
    int64_t ka = a->phase == FTM_PHASE_ALLREDUCE ? fs_pkt_key(a) : 0;
    int64_t kb = b->phase == FTM_PHASE_ALLREDUCE ? fs_pkt_key(b) : 0;
    if (ka != kb)
        return ka < kb ? -1 : 1;
    return (a->order > b->order) - (a->order < b->order);
}

int core_fault_qcmp(const void *a, const void *b)
{
    return ftm_fault_cmp(a, b);
}

void ftm_fault_script_sort(ftm_fault_script *s)
{
    if (s->n > 1)
        qsort(s->ev, (size_t)s->n, sizeof *s->ev, core_fault_qcmp);
}

/* Same instant: equal in everything ftm_fault_cmp looks at but order. */
int core_fault_same_time(const ftm_fault_event *a, const ftm_fault_event *b)
{
    ftm_fault_event x = *b;
    x.order = a->order;
    return ftm_fault_cmp(a, &x) == 0;
}

int core_fault_concurrent(const ftm_fault_event *a, const ftm_fault_event *b)
{
    return !a->repair && !b->repair && a->when == b->when && a->phase == FTM_PHASE_ALLREDUCE &&
           b->phase == FTM_PHASE_ALLREDUCE && a->pkts != 0 && b->pkts != 0;
}

int core_fault_together(const ftm_fault_event *a, const ftm_fault_event *b)
{
    return core_fault_same_time(a, b) || core_fault_concurrent(a, b);
}

/* 1 when ev kills chip v (alive in m). */
static int fs_kills(const ftm_mesh *m, const ftm_fault_event *ev, int v)
{
    int chips[4], n = ftm_fault_chips(m, ev, chips);
    for (int k = 0; k < n; k++)
        if (chips[k] == v)
            return 1;
    return 0;
}

/* Every subset of the kills must leave the chips connected. It is enough
 * that the whole set does, and that each chip v it kills, spared with the
 * rest struck (every kill of v left out), is connected with them: a
 * subset's survivors are the chips the whole set spares, connected over
 * no fewer links than with all struck, plus chips it spares, each joined
 * to them by its own test's path, whose chips the subset spares too. */
int core_fault_window_ok(const ftm_mesh *before, const ftm_fault_event *ev, int n, int *who,
                         int *a, int *b)
{
    ftm_mesh t;
    int rc = ftm_mesh_copy(&t, before);
    if (rc)
        return rc;
    for (int k = 0; k < n && !rc; k++) {
        int chips[4], nc = ftm_fault_chips(before, &ev[k], chips);
        for (int i = 0; i < nc && !rc; i++) {
            if (!ftm_mesh_alive(before, chips[i]))
                continue;
            core_mesh_set(&t, before);
            for (int j = 0; j < n; j++)
                if (!fs_kills(before, &ev[j], chips[i]))
                    (void)ftm_fault_apply(&t, &ev[j]); /* what is dead already stays so */
            rc = ftm_mesh_check_connected(&t, a, b);
            if (rc && who)
                *who = k;
        }
    }
    ftm_mesh_free(&t);
    return rc;
}

/* ---- applying ------------------------------------------------------------------ */

int ftm_fault_chips(const ftm_mesh *m, const ftm_fault_event *ev, int *out)
{
    int n = 0;
    if (ev->kind == FTM_FAULT_CHIP) {
        out[n] = ftm_mesh_chip(m, ev->r, ev->c);
        n += !ev->repair || !ftm_mesh_alive(m, out[n]);
    } else if (ev->kind == FTM_FAULT_HOST) {
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++) {
                int id = ftm_mesh_chip(m, (ev->r + i) % m->rows, (ev->c + j) % m->cols);
                if (ftm_mesh_alive(m, id) != ev->repair)
                    out[n++] = id;
            }
    }
    return n;
}

/* The link of a link event: its first end a, direction *d, other end *b;
 * FTM_ERANGE or FTM_ENOTNEIGHBOR. */
static int fs_link(const ftm_mesh *m, const ftm_fault_event *ev, int *a, int *d, int *b)
{
    if (ev->r2 < 0 || ev->r2 >= m->rows || ev->c2 < 0 || ev->c2 >= m->cols)
        return FTM_ERANGE;
    *a = ftm_mesh_chip(m, ev->r, ev->c);
    *b = ftm_mesh_chip(m, ev->r2, ev->c2);
    *d = ftm_mesh_dir_to(m, *a, *b);
    return *d < 0 || *a == *b ? FTM_ENOTNEIGHBOR : 0;
}

/* A repair: brings back what ev names (see ftm_fault_apply). */
static int fs_repair(ftm_mesh *m, const ftm_fault_event *ev)
{
    int chips[4], n, a, b, d, rc;
    switch (ev->kind) {
    case FTM_FAULT_CHIP:
    case FTM_FAULT_HOST:
        if (ev->kind == FTM_FAULT_HOST && !ftm_mesh_host_fits(m, ev->r, ev->c))
            return FTM_ERANGE;
        /* only what is entirely dead comes back: a host with a live chip
         * is not repaired (repair its dead chips one by one) */
        n = ftm_fault_chips(m, ev, chips);
        if (n == 0 || (ev->kind == FTM_FAULT_HOST && n < 4))
            return FTM_EINVAL;
        for (int k = 0; k < n; k++)
            m->chip_dead[chips[k]] = 0;
        return 0;
    case FTM_FAULT_LINK: {
        if ((rc = fs_link(m, ev, &a, &d, &b)))
            return rc;
        unsigned char *ab = &m->link_dead[a * FTM_NDIRS + d];
        unsigned char *ba = &m->link_dead[b * FTM_NDIRS + ftm_dir_opposite(d)];
        if (!*ab || (!ev->oneway && !*ba)) /* both ways: both directions dead */
            return FTM_EINVAL;
        *ab = 0;
        if (!ev->oneway)
            *ba = 0;
        return 0;
    }
    default:
        return FTM_EINVAL;
    }
}

int ftm_fault_apply(ftm_mesh *m, const ftm_fault_event *ev)
{
    if (ev->r < 0 || ev->r >= m->rows || ev->c < 0 || ev->c >= m->cols)
        return FTM_ERANGE;
    if (ev->repair)
        return fs_repair(m, ev);
    int a = ftm_mesh_chip(m, ev->r, ev->c), chips[4];
    switch (ev->kind) {
    case FTM_FAULT_CHIP:
        if (!ftm_mesh_alive(m, a))
            return FTM_EINVAL;
        return ftm_mesh_fail_chip(m, ev->r, ev->c);
    case FTM_FAULT_HOST: {
        if (!ftm_mesh_host_fits(m, ev->r, ev->c))
            return FTM_ERANGE;
        if (ftm_fault_chips(m, ev, chips) == 0)
            return FTM_EINVAL;
        return ftm_mesh_fail_host(m, ev->r, ev->c);
    }
    case FTM_FAULT_LINK: {
        int b, d, rc = fs_link(m, ev, &a, &d, &b);
        if (rc)
            return rc;
        int live = ftm_mesh_link_live(m, a, d);
        if (!ev->oneway)
            live |= ftm_mesh_link_live(m, b, ftm_dir_opposite(d));
        if (!live)
            return FTM_EINVAL;
        return ftm_mesh_fail_link(m, ev->r, ev->c, ev->r2, ev->c2, ev->oneway);
    }
    default:
        return FTM_EINVAL;
    }
}

/* ---- text ------------------------------------------------------------------------ */

int ftm_fault_what(const ftm_fault_event *ev, char *buf, size_t len)
{
    if (ev->kind == FTM_FAULT_LINK)
        return snprintf(buf, len, "link (%d,%d)%s(%d,%d)", ev->r, ev->c,
                        ev->oneway ? "->" : "-", ev->r2, ev->c2);
    return snprintf(buf, len, "%s (%d,%d)", ev->kind == FTM_FAULT_HOST ? "host" : "chip",
                    ev->r, ev->c);
}

int ftm_fault_format(const ftm_fault_event *ev, int mode, char *buf, size_t len)
{
    char what[64], when[64];
    if (ev->kind == FTM_FAULT_LINK)
        snprintf(what, sizeof what, "link:%d,%d%c%d,%d", ev->r, ev->c, ev->oneway ? '>' : '-',
                 ev->r2, ev->c2);
    else
        snprintf(what, sizeof what, "%s%d,%d", ev->kind == FTM_FAULT_HOST ? "host:" : "",
                 ev->r, ev->c);
    if (ev->phase == FTM_PHASE_START)
        snprintf(when, sizeof when, "%ld", ev->when);
    else if (ev->phase == FTM_PHASE_ALLREDUCE && ev->pkts != FTM_FAULT_MID)
        snprintf(when, sizeof when, mode == FTM_FAULT_TRAIN ? "%ld:allreduce:%lld" : "%ld:%lld",
                 ev->when, (long long)ev->pkts);
    else
        snprintf(when, sizeof when, "%ld:%s", ev->when, ftm_fault_phase_name(ev->phase));
    return snprintf(buf, len, "%s%s@%s", ev->repair ? "repair " : "", what, when);
}
