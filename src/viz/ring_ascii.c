/* Terminal pictures of rings and schedule phases (see viz.h for the marks).
 *
 * The edges to draw are collected first as flags per directed link (one-hop
 * edge, detour hop), then each link's cells are composed from the flags of
 * both its directions and its faults, so a mark never hides another: a
 * one-hop edge keeps its arrow when a detour crosses the same link. */
#include "ftmesh/viz.h"
#include "ftmesh/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *s;
    size_t len, cap;
    int err;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    if (b->err)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->err = FTM_ENOMEM;
            return;
        }
        if ((size_t)k < b->cap - b->len) {
            b->len += (size_t)k;
            return;
        }
        size_t ncap = 2 * b->cap + (size_t)k + 64;
        char *p = realloc(b->s, ncap);
        if (!p) {
            b->err = FTM_ENOMEM;
            return;
        }
        b->s = p;
        b->cap = ncap;
    }
}

enum { LK_EDGE = 1, LK_DETOUR = 2 };  /* per directed link */

/* Marks that appear, for the legend. */
enum {
    SEEN_DEAD = 1, SEEN_FWD = 2, SEEN_EDGE = 4, SEEN_BOTH = 8, SEEN_DETOUR = 16,
    SEEN_SHARED = 32, SEEN_XLINK = 64, SEEN_ONEWAY = 128, SEEN_WRAP = 256, SEEN_ROOT = 512
};

/* One edge to draw: nhops directions from src (to dst, for the text). */
typedef struct {
    int src, dst, nhops;
    const unsigned char *dirs;
} vz_path;

typedef struct {
    const ftm_mesh *m;
    unsigned char *lk;   /* [nchips * 4] LK_* flags */
    unsigned char *fwd;  /* [nchips] 1: forwards a detour */
    char *cv;            /* [h * w] canvas */
    int h, w, hm, vm;    /* hm, vm: wrap margins (1 when that side wraps) */
    int root, seen;
    int plain;           /* no path drawn: the wrap links are marked as links */
} canvas;

static char *at(canvas *c, int y, int x) { return &c->cv[(size_t)y * (size_t)c->w + (size_t)x]; }
static int chip_y(const canvas *c, int r) { return c->vm + 2 * r; }
static int chip_x(const canvas *c, int col) { return FTM_VIZ_LABEL_W + 4 * c->hm + 4 * col; }

/* Flags of the paths' hops; FTM_EINVAL when a path leaves the mesh. */
static int mark_paths(canvas *c, const vz_path *p, int np)
{
    const ftm_mesh *m = c->m;
    for (int i = 0; i < np; i++) {
        int x = p[i].src;
        if (x < 0 || x >= m->nchips)
            return FTM_EINVAL;
        for (int k = 0; k < p[i].nhops; k++) {
            int d = p[i].dirs[k];
            int nb = d < FTM_NDIRS ? ftm_mesh_neighbor(m, x, d) : -1;
            if (nb < 0)
                return FTM_EINVAL;
            c->lk[x * 4 + d] |= p[i].nhops == 1 ? LK_EDGE : LK_DETOUR;
            x = nb;
            if (p[i].nhops > 1 && k + 1 < p[i].nhops && !m->chip_dead[x])
                c->fwd[x] = 1;
        }
    }
    return 0;
}

/* The three cells of the link chip -> neighbour(d), d = E or S, as text:
 * for E read left to right, for S the cells left of, on, and right of the
 * chip's column. */
static void link_text(canvas *c, int chip, int d, char s[3])
{
    const ftm_mesh *m = c->m;
    int nb = ftm_mesh_neighbor(m, chip, d), od = ftm_dir_opposite(d);
    int ef = c->lk[chip * 4 + d] & LK_EDGE, eb = c->lk[nb * 4 + od] & LK_EDGE;
    int det = (c->lk[chip * 4 + d] | c->lk[nb * 4 + od]) & LK_DETOUR;
    int df = m->link_dead[chip * 4 + d], db = m->link_dead[nb * 4 + od];
    int vert = d == FTM_DIR_S;
    memcpy(s, "   ", 3);
    if (ef || eb) {
        c->seen |= ef && eb ? SEEN_BOTH : SEEN_EDGE;
        if (vert) {
            s[1] = ef ? 'v' : '^';
            if (ef && eb)
                s[0] = '^';
        } else {
            memcpy(s, ef && eb ? "<->" : ef ? "-->" : "<--", 3);
        }
    }
    if (det) {
        c->seen |= (ef || eb) ? SEEN_SHARED : SEEN_DETOUR;
        if (vert)
            s[(ef || eb) ? 2 : 1] = '!';
        else if (ef || eb)
            s[1] = '=';
        else
            memcpy(s, "===", 3);
    }
    if (df && db) {
        s[1] = 'x';
        c->seen |= SEEN_XLINK;
    } else if (df || db) {
        s[vert ? 0 : 1] = '~';
        c->seen |= SEEN_ONEWAY;
    }
}

/* Horizontal: the cells x .. x+2 of line y; vertical: x-1 .. x+1. */
static void put3(canvas *c, int y, int x, const char s[3], int vert)
{
    memcpy(at(c, y, vert ? x - 1 : x), s, 3);
}

/* Whether the link's cells hold a mark: the legend names the wrap margins
 * only when something is drawn in them. */
static int marked(const char s[3]) { return memcmp(s, "   ", 3) != 0; }

/* 1 when both chips of the link chip -> d are alive. */
static int live_ends(const ftm_mesh *m, int chip, int d)
{
    return ftm_mesh_alive(m, chip) && ftm_mesh_alive(m, ftm_mesh_neighbor(m, chip, d));
}

/* Links E and S of every chip; a wrap link is drawn whole in both margins. */
static void draw_links(canvas *c)
{
    const ftm_mesh *m = c->m;
    for (int chip = 0; chip < m->nchips; chip++) {
        int r = ftm_mesh_row(m, chip), col = ftm_mesh_col(m, chip);
        int y = chip_y(c, r), x = chip_x(c, col);
        char s[3];
        if (ftm_mesh_neighbor(m, chip, FTM_DIR_E) >= 0) {
            link_text(c, chip, FTM_DIR_E, s);
            if (col == m->cols - 1 && c->plain && !marked(s) && live_ends(m, chip, FTM_DIR_E))
                memcpy(s, " - ", 3);
            put3(c, y, x + 1, s, 0);
            if (col == m->cols - 1) {
                put3(c, y, chip_x(c, 0) - 3, s, 0);
                c->seen |= marked(s) ? SEEN_WRAP : 0;
            }
        }
        if (ftm_mesh_neighbor(m, chip, FTM_DIR_S) >= 0) {
            link_text(c, chip, FTM_DIR_S, s);
            if (r == m->rows - 1 && c->plain && !marked(s) && live_ends(m, chip, FTM_DIR_S))
                memcpy(s, " | ", 3);
            put3(c, y + 1, x, s, 1);
            if (r == m->rows - 1) {
                put3(c, 0, x, s, 1);
                c->seen |= marked(s) ? SEEN_WRAP : 0;
            }
        }
    }
}

static void draw_chips(canvas *c)
{
    const ftm_mesh *m = c->m;
    for (int i = 0; i < m->nchips; i++) {
        char ch = m->chip_dead[i] ? 'X' : i == c->root ? 'R' : c->fwd[i] ? '*' : 'o';
        c->seen |= ch == 'X' ? SEEN_DEAD : ch == 'R' ? SEEN_ROOT : ch == '*' ? SEEN_FWD : 0;
        *at(c, chip_y(c, ftm_mesh_row(m, i)), chip_x(c, ftm_mesh_col(m, i))) = ch;
    }
}

/* Column numbers above the chips, then the canvas with row numbers. */
static void emit_canvas(canvas *c, sbuf *b)
{
    const ftm_mesh *m = c->m;
    char *hdr = malloc((size_t)c->w + 1);
    if (!hdr) {
        b->err = FTM_ENOMEM;
        return;
    }
    memset(hdr, ' ', (size_t)c->w);
    for (int col = 0; col < m->cols; col++) {
        char num[16];
        int k = snprintf(num, sizeof num, "%d", col % 100), x = chip_x(c, col);
        memcpy(hdr + x + 1 - k, num, (size_t)k);
    }
    sb_printf(b, "%.*s\n", (int)(chip_x(c, m->cols - 1) + 1), hdr);
    free(hdr);
    for (int y = 0; y < c->h; y++) {
        if ((y - c->vm) % 2 == 0 && y >= c->vm && y < c->h - c->vm) {
            char num[16];
            snprintf(num, sizeof num, "%2d", ((y - c->vm) / 2) % 100);
            memcpy(at(c, y, 0), num, 2);
        }
        int len = c->w;
        while (len > 0 && *at(c, y, len - 1) == ' ')
            len--;
        sb_printf(b, "%.*s\n", len, at(c, y, 0));
    }
}

/* Legend entries for the marks drawn, packed into lines of at most 80
 * columns. */
static void emit_legend(const canvas *c, sbuf *b)
{
    static const struct { int bit; const char *text; } items[] = {
        { 0, "o chip" },
        { SEEN_DEAD, "X dead chip" },
        { SEEN_ROOT, "R root" },
        { SEEN_FWD, "* chip forwarding a detour" },
        { SEEN_EDGE, "--> <-- v ^ one-hop edge, arrow: the way data goes" },
        { SEEN_BOTH, "<-> ^v edges both ways" },
        { SEEN_DETOUR, "=== ! link a detour crosses" },
        { SEEN_SHARED, "-=> <=- v! one-hop edge and a detour on one link" },
        { SEEN_XLINK, "x link dead both ways" },
        { SEEN_ONEWAY, "~ link dead one way (listed below)" },
        { SEEN_WRAP, "marks outside the border: torus wrap links, drawn at both ends" },
    };
    int col = 0;
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) {
        if (items[i].bit && !(c->seen & items[i].bit))
            continue;
        int len = (int)strlen(items[i].text);
        if (col && col + 3 + len > FTM_VIZ_WIDTH) {
            sb_printf(b, "\n");
            col = 0;
        }
        sb_printf(b, "%s%s", col ? "   " : "", items[i].text);
        col += (col ? 3 : 0) + len;
    }
    sb_printf(b, "\n");
}

static void emit_coord(sbuf *b, const ftm_mesh *m, int chip)
{
    sb_printf(b, "(%d,%d)", ftm_mesh_row(m, chip), ftm_mesh_col(m, chip));
}

/* "detour (r,c) -> (r2,c2): 3 hops via N,E,S" per multi-hop path. */
static void emit_detours(sbuf *b, const ftm_mesh *m, const vz_path *p, int np, int max)
{
    int shown = 0, total = 0;
    for (int i = 0; i < np; i++) {
        if (p[i].nhops <= 1 || total++ >= max)
            continue;
        shown++;
        sb_printf(b, "detour ");
        emit_coord(b, m, p[i].src);
        sb_printf(b, " -> ");
        emit_coord(b, m, p[i].dst);
        sb_printf(b, ": %d hops via ", p[i].nhops);
        /* 2 columns a hop after at most 40 ("detour (12,13) -> (14,13): 100
         * hops via "); a longer list ends in ",..." within 80 columns */
        for (int k = 0; k < p[i].nhops; k++) {
            if (k == 17 && p[i].nhops > 18) {
                sb_printf(b, ",...");
                break;
            }
            sb_printf(b, "%s%s", k ? "," : "", ftm_mesh_dir_name(p[i].dirs[k]));
        }
        sb_printf(b, "\n");
    }
    if (total > shown)
        sb_printf(b, "... and %d more detours\n", total - shown);
}

/* "one-way link (r,c) -> (r2,c2) dead, the other way works" per link. */
static void emit_oneway(sbuf *b, const ftm_mesh *m)
{
    int shown = 0;
    for (int x = 0; x < m->nchips; x++)
        for (int d = 0; d < FTM_NDIRS; d++) {
            int y = ftm_mesh_neighbor(m, x, d);
            if (y < 0 || !m->link_dead[x * 4 + d] || m->link_dead[y * 4 + ftm_dir_opposite(d)])
                continue;
            if (shown++ == FTM_VIZ_MAX_DETOURS) {
                sb_printf(b, "... and more one-way links\n");
                return;
            }
            sb_printf(b, "one-way link: ");
            emit_coord(b, m, x);
            sb_printf(b, " -> ");
            emit_coord(b, m, y);
            sb_printf(b, " dead, the other way works\n");
        }
}

static int render(const ftm_mesh *m, const vz_path *p, int np, int root, int max_detours,
                  sbuf *b)
{
    canvas c = { m, NULL, NULL, NULL, 0, 0, 0, 0, root, 0, np == 0 };
    c.hm = m->torus && m->cols >= 3;
    c.vm = m->torus && m->rows >= 3;
    c.h = 2 * m->rows - 1 + 2 * c.vm;
    /* the last column's vertical links reach one cell right of it, a wrap
     * link three */
    c.w = chip_x(&c, m->cols - 1) + (c.hm ? 4 : 2);
    c.lk = calloc((size_t)m->nchips, 4);
    c.fwd = calloc((size_t)m->nchips, 1);
    c.cv = malloc((size_t)c.h * (size_t)c.w);
    int rc = c.lk && c.fwd && c.cv ? 0 : FTM_ENOMEM;
    if (!rc)
        rc = mark_paths(&c, p, np);
    if (!rc && m->cols > FTM_VIZ_MAX_COLS) {
        sb_printf(b, "(%d columns do not fit in %d: draw this mesh as a picture with "
                     "--svg FILE)\n", m->cols, FTM_VIZ_WIDTH);
    } else if (!rc) {
        memset(c.cv, ' ', (size_t)c.h * (size_t)c.w);
        draw_links(&c);
        draw_chips(&c);
        emit_canvas(&c, b);
        emit_legend(&c, b);
    }
    if (!rc) {
        emit_detours(b, m, p, np, max_detours);
        emit_oneway(b, m);
        rc = b->err;
    }
    free(c.lk);
    free(c.fwd);
    free(c.cv);
    return rc;
}

/* "ring: (0,0) -> (0,1) -> ... -> (1,0) -> back to (0,0)", at most 80
 * columns. */
static void emit_ring_order(sbuf *b, const ftm_mesh *m, const ftm_ring *ring)
{
    if (ring->n < 2)
        return;
    sb_printf(b, "ring direction: ");
    size_t start = b->len;
    for (int i = 0; i < ring->n; i++) {
        /* 16 + 27 + 37 (" -> ... -> (63,63) -> back to (63,63)") <= 80 */
        if (i && b->len - start + 11 > 27 && i < ring->n - 1) {
            sb_printf(b, " -> ... -> ");
            emit_coord(b, m, ring->chips[ring->n - 1]);
            break;
        }
        sb_printf(b, "%s", i ? " -> " : "");
        emit_coord(b, m, ring->chips[i]);
    }
    sb_printf(b, " -> back to ");
    emit_coord(b, m, ring->chips[0]);
    sb_printf(b, "\n");
}

static int finish(sbuf *b, int rc, char **out)
{
    if (!rc)
        rc = b->err;
    if (rc) {
        free(b->s);
        return rc;
    }
    *out = b->s;
    return 0;
}

int ftm_viz_ring_ascii(const ftm_mesh *m, const ftm_ring *ring, char **out)
{
    if (!out)
        return FTM_EINVAL;
    *out = NULL;
    if (!m)
        return FTM_EINVAL;
    int np = ring ? ring->n : 0;
    vz_path *p = calloc((size_t)np + 1, sizeof *p);
    if (!p)
        return FTM_ENOMEM;
    for (int i = 0; i < np; i++) {
        p[i].src = ring->chips[i];
        p[i].dst = ring->chips[(i + 1) % np];
        p[i].nhops = ring->path_off[i + 1] - ring->path_off[i];
        p[i].dirs = ring->dirs + ring->path_off[i];
    }
    sbuf b = { NULL, 0, 0, 0 };
    int rc = render(m, p, np, -1, FTM_VIZ_MAX_DETOURS, &b);
    if (!rc && ring)
        emit_ring_order(&b, m, ring);
    free(p);
    return finish(&b, rc, out);
}

/* Does send op o of chip's step st belong to the picture? */
static int op_drawn(const ftm_step *st, const ftm_op *o, const char *phase, size_t lo, size_t hi)
{
    return o->kind == FTM_OP_SEND && o->len > 0 && o->off >= lo && o->off < hi &&
           (!phase || ftm_sched_phase_match(st->phase, phase));
}

/* The tags of the transfers whose receiver adds them: [max tag + 1]
 * flags (*out NULL when sums is 0). */
static int summed_tags(const ftm_sched *s, int sums, unsigned char **out)
{
    *out = NULL;
    uint32_t top = 0;
    for (int c = 0; sums && c < s->nchips; c++)
        for (int k = 0; k < s->prog[c].nops; k++)
            top = s->prog[c].ops[k].tag > top ? s->prog[c].ops[k].tag : top;
    if (sums && !(*out = calloc((size_t)top + 1, 1)))
        return FTM_ENOMEM;
    for (int c = 0; sums && c < s->nchips; c++)
        for (int k = 0; k < s->prog[c].nops; k++) {
            const ftm_op *o = &s->prog[c].ops[k];
            if (o->kind == FTM_OP_RECV && o->red != FTM_RED_COPY)
                (*out)[o->tag] = 1;
        }
    return 0;
}

/* The routes the picture's sends take, each once, in route order. */
static int sched_paths(const ftm_sched *s, const char *phase, size_t lo, size_t hi, int sums,
                       vz_path **out, int *np)
{
    unsigned char *use = calloc((size_t)s->nroutes + 1, 1), *summed;
    if (!use || summed_tags(s, sums, &summed)) {
        free(use);
        return FTM_ENOMEM;
    }
    int n = 0;
    for (int c = 0; c < s->nchips; c++) {
        const ftm_chip_prog *pg = &s->prog[c];
        for (int j = 0; j < pg->nsteps; j++)
            for (int k = 0; k < pg->steps[j].nops; k++) {
                const ftm_op *o = &pg->ops[pg->steps[j].first_op + k];
                if (op_drawn(&pg->steps[j], o, phase, lo, hi) && (!summed || summed[o->tag]) &&
                    o->route < (unsigned)s->nroutes && !use[o->route]) {
                    use[o->route] = 1;
                    n++;
                }
            }
    }
    vz_path *p = calloc((size_t)n + 1, sizeof *p);
    for (int r = 0, i = 0; p && r < s->nroutes; r++)
        if (use[r]) {
            const ftm_route *rt = &s->routes[r];
            p[i++] = (vz_path){ rt->src, rt->dst, rt->nhops, s->dirs + rt->first };
        }
    free(use);
    free(summed);
    *out = p;
    *np = n;
    return p ? 0 : FTM_ENOMEM;
}

int ftm_viz_sched_ascii(const ftm_mesh *m, const ftm_sched *s, const char *phase, size_t lo,
                        size_t hi, int sums, int root, char **out)
{
    if (!out)
        return FTM_EINVAL;
    *out = NULL;
    if (!m || !s || s->nchips != m->nchips || root >= m->nchips || s->packed || s->dry)
        return FTM_EINVAL; /* a packed or dry schedule has no op arrays to read */
    vz_path *p = NULL;
    int np = 0;
    int rc = sched_paths(s, phase, lo, hi, sums, &p, &np);
    sbuf b = { NULL, 0, 0, 0 };
    if (!rc)
        rc = render(m, p, np, root, FTM_VIZ_MAX_SCHED_DETOURS, &b);
    free(p);
    return finish(&b, rc, out);
}
