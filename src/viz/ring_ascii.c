/* The ring drawn in the terminal (see viz.h for the characters). */
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

typedef struct {
    const ftm_mesh *m;
    char *cv;       /* [h * w] canvas */
    int h, w;
    int mr, mc;     /* margin rows / columns (1 on a wrapping torus side) */
} canvas;

static char *at(canvas *c, int y, int x) { return &c->cv[(size_t)y * (size_t)c->w + (size_t)x]; }

static void chip_pos(canvas *c, int chip, int *y, int *x)
{
    *y = c->mr + 2 * ftm_mesh_row(c->m, chip);
    *x = c->mc + 2 * ftm_mesh_col(c->m, chip);
}

/* The one or two canvas cells that show link chip -> neighbour(d): the
 * midpoint, or the two border cells for a wrap-around link. */
static int link_cells(canvas *c, int chip, int d, int ys[2], int xs[2])
{
    const ftm_mesh *m = c->m;
    int nb = ftm_mesh_neighbor(m, chip, d);
    if (nb < 0)
        return 0;
    int y0, x0, y1, x1;
    chip_pos(c, chip, &y0, &x0);
    chip_pos(c, nb, &y1, &x1);
    int dy = (d == FTM_DIR_S) - (d == FTM_DIR_N), dx = (d == FTM_DIR_E) - (d == FTM_DIR_W);
    if (y0 + 2 * dy == y1 && x0 + 2 * dx == x1) {
        ys[0] = y0 + dy;
        xs[0] = x0 + dx;
        return 1;
    }
    ys[0] = y0 + dy;  /* wrap: beside each end, in the margin */
    xs[0] = x0 + dx;
    ys[1] = y1 - dy;
    xs[1] = x1 - dx;
    return 2;
}

static void mark_link(canvas *c, int chip, int d, char ch, int force)
{
    int ys[2], xs[2], k = link_cells(c, chip, d, ys, xs);
    for (int i = 0; i < k; i++) {
        char *p = at(c, ys[i], xs[i]);
        if (force || *p == ' ' || *p == '-' || *p == '|')
            *p = ch;
    }
}

/* One-hop edges, then detours (drawn over them), then link faults. */
static int draw(canvas *c, const ftm_ring *ring)
{
    const ftm_mesh *m = c->m;
    for (int i = 0; i < m->nchips; i++) {
        int y, x;
        chip_pos(c, i, &y, &x);
        *at(c, y, x) = m->chip_dead[i] ? 'X' : 'o';
    }
    for (int pass = 0; ring && pass < 2; pass++)
        for (int i = 0; i < ring->n; i++) {
            int h = ring->path_off[i + 1] - ring->path_off[i], x = ring->chips[i];
            if (x < 0 || x >= m->nchips)
                return FTM_EINVAL;
            if ((h > 1) != pass)
                continue;
            for (int k = 0; k < h; k++) {
                int d = ring->dirs[ring->path_off[i] + k];
                if (d >= FTM_NDIRS || ftm_mesh_neighbor(m, x, d) < 0)
                    return FTM_EINVAL;
                int vert = d == FTM_DIR_N || d == FTM_DIR_S;
                if (h == 1)
                    mark_link(c, x, d, vert ? '|' : '-', 0);
                else
                    mark_link(c, x, d, vert ? '!' : '=', 0);
                x = ftm_mesh_neighbor(m, x, d);
                if (h > 1 && k + 1 < h && !m->chip_dead[x]) {
                    int yy, xx;
                    chip_pos(c, x, &yy, &xx);
                    *at(c, yy, xx) = '*';
                }
            }
        }
    for (int x = 0; x < m->nchips; x++)
        for (int d = FTM_DIR_E; d <= FTM_DIR_S; d++) {
            int y = ftm_mesh_neighbor(m, x, d);
            if (y < 0)
                continue;
            int fwd = m->link_dead[x * FTM_NDIRS + d];
            int back = m->link_dead[y * FTM_NDIRS + ftm_dir_opposite(d)];
            if (fwd && back)
                mark_link(c, x, d, 'x', 1);
            else if (fwd) /* only y -> x works */
                mark_link(c, x, d, d == FTM_DIR_E ? '<' : '^', 1);
            else if (back)
                mark_link(c, x, d, d == FTM_DIR_E ? '>' : 'v', 1);
        }
    return 0;
}

int ftm_viz_ring_ascii(const ftm_mesh *m, const ftm_ring *ring, char **out)
{
    if (!out)
        return FTM_EINVAL;
    *out = NULL;
    if (!m)
        return FTM_EINVAL;
    canvas c = { m, NULL, 0, 0, 0, 0 };
    c.mr = (m->torus && m->rows >= 3) ? 1 : 0;
    c.mc = (m->torus && m->cols >= 3) ? 1 : 0;
    c.h = 2 * m->rows - 1 + 2 * c.mr;
    c.w = 2 * m->cols - 1 + 2 * c.mc;
    c.cv = malloc((size_t)c.h * (size_t)c.w);
    if (!c.cv)
        return FTM_ENOMEM;
    memset(c.cv, ' ', (size_t)c.h * (size_t)c.w);
    int rc = draw(&c, ring);
    sbuf b = { NULL, 0, 0, 0 };
    for (int y = 0; y < c.h && !rc; y++) {
        int len = c.w;
        while (len > 0 && *at(&c, y, len - 1) == ' ')
            len--;
        sb_printf(&b, "%.*s\n", len, at(&c, y, 0));
    }
    if (!rc) {
        sb_printf(&b, "o chip  X dead  * forwards a detour  -| ring edge  =! detour"
                      "  x dead link  ><v^ one-way link (arrow: working direction)\n");
        int shown = 0, total = 0;
        for (int i = 0; ring && i < ring->n; i++) {
            int h = ring->path_off[i + 1] - ring->path_off[i];
            if (h <= 1)
                continue;
            if (total++ >= FTM_VIZ_MAX_DETOURS)
                continue;
            shown++;
            int a = ring->chips[i], z = ring->chips[(i + 1) % ring->n];
            sb_printf(&b, "detour (%d,%d) -> (%d,%d): %d hops via ", ftm_mesh_row(m, a),
                      ftm_mesh_col(m, a), ftm_mesh_row(m, z), ftm_mesh_col(m, z), h);
            for (int k = 0; k < h; k++)
                sb_printf(&b, "%s%s", k ? "," : "",
                          ftm_dir_name(ring->dirs[ring->path_off[i] + k]));
            sb_printf(&b, "\n");
        }
        if (total > shown)
            sb_printf(&b, "... and %d more detours\n", total - shown);
        rc = b.err;
    }
    free(c.cv);
    if (rc) {
        free(b.s);
        return rc;
    }
    *out = b.s;
    return 0;
}
