/* Planning the 2-D allreduce: bands of rows and their rings around holes.
 *
 * 1. Default bands: on a torus with row wrap links (cols >= 3) every row;
 *    otherwise pairs of rows (a lone row of an open mesh is a line, whose
 *    ring must use every link both ways; a 2-row band has a Hamiltonian
 *    ring, so pairing halves the row phase's link load).
 * 2. A band is clean when its default rings are all single live hops.
 *    Clean bands keep them; their edges are counted in a directed-link load
 *    map.
 * 3. Each run of dirty bands is re-planned: candidates merge it with 0 or
 *    1 clean band above and below; for each candidate rows set, rings are
 *    drawn from a family of boustrophedon orders (seam column s, first
 *    direction, top-down or bottom-up) and every edge is routed by a
 *    load-aware shortest path (a hop over a link already used costs
 *    1 + PENALTY * load). The fwd ring is chosen first, then the rev ring
 *    given fwd's load. The candidate with the lowest (max link load, hops,
 *    rows) wins. Everything is deterministic.
 *
 * Why seams: on a torus a band's snake need not cross the hole at all if it
 * turns around at the hole's columns:
 *
 *     dead host at rows r,r+1, cols j,j+1; seam s = j+2:
 *       row r:    (j+2) > > > > ... wrap ... > > (j-1)   fwd east
 *                   ^                              v
 *       row r+1:  (j+2) < < < < ... wrap ... < < (j-1)   fwd west
 *     rev runs the other way round the other links: no link carries two
 *     edges, no edge is longer than one hop.
 */
#include "ftmesh/plan2d.h"
#include "ftmesh/error.h"
#include "router_int.h"

#include <stdlib.h>
#include <string.h>

/* PENALTY: a hop over a link that already carries k ring edges costs
 * 1 + PENALTY * k, so a detour of up to PENALTY extra hops is preferred to
 * sharing one link (a shared link halves both edges' bandwidth, an extra
 * hop costs only latency). MAX_SEAMS bounds the candidate seam columns per
 * rows set (every fault adds two). */
enum { PENALTY = 16, MAX_SEAMS = 8 };

/* ---- rings of a rows set ------------------------------------------------ */

typedef struct band_ctx {
    const ftm_mesh *m;
    int rwrap;        /* rows have wrap links */
    rtr_dijkstra w;
    int *load;        /* accepted rings' edges per directed link */
    int *tmp, *best;  /* scratch load maps */
    int *order;       /* [nchips] */
    unsigned char *dirs;  /* scratch route storage (grows) */
    int dcap;
    int *off;             /* [nchips + 1] */
} band_ctx;

/* Healthy chips of rows [r0, r0+nr) in boustrophedon order: the first row
 * visited goes east (dir0 = 0) or west from seam column s, rows top-down
 * (up = 0) or bottom-up. Returns the count. */
static int snake(const band_ctx *x, int r0, int nr, int s, int dir0, int up, int *out)
{
    const ftm_mesh *m = x->m;
    int n = 0, C = m->cols;
    for (int t = 0; t < nr; t++) {
        int r = up ? r0 + nr - 1 - t : r0 + t;
        int east = ((t & 1) == 0) == (dir0 == 0);
        for (int q = 0; q < C; q++) {
            int c = east ? (s + q) % C : ((s - 1 - q) % C + C) % C;
            int id = ftm_mesh_chip(m, r, c);
            if (ftm_mesh_alive(m, id))
                out[n++] = id;
        }
    }
    return n;
}

/* Routes ring chips[0..n) edge by edge into ld (which starts as the load
 * of everything else and ends including this ring). Writes path offsets to
 * off[0..n] and hops to dirs. Score: max load on the ring's links, then
 * weighted cost. */
static int route_ring(band_ctx *x, const int *chips, int n, int *ld, long *score_max, long *score_cost)
{
    const ftm_mesh *m = x->m;
    int total = 0, *off = x->off;
    long cost = 0;
    int mx = 0;
    off[0] = 0;
    for (int i = 0; i < n; i++) {
        int a = chips[i], b = chips[(i + 1) % n];
        if (x->dcap - total < m->nchips) { /* a shortest path has < nchips hops */
            unsigned char *nd = realloc(x->dirs, (size_t)x->dcap * 2);
            if (!nd)
                return FTM_ENOMEM;
            x->dirs = nd;
            x->dcap *= 2;
        }
        unsigned char *dirs = x->dirs;
        int h = n == 1 ? 0 : rtr_cheapest(&x->w, m, a, b, ld, PENALTY, dirs + total, x->dcap - total);
        if (h < 0)
            return h;
        int at = a;
        for (int k = 0; k < h; k++) {
            int l = at * FTM_NDIRS + dirs[total + k];
            cost += 1 + PENALTY * ld[l];
            ld[l]++;
            if (ld[l] > mx)
                mx = ld[l];
            at = ftm_mesh_neighbor(m, at, dirs[total + k]);
        }
        total += h;
        off[i + 1] = total;
    }
    *score_max = mx;
    *score_cost = cost;
    return 0;
}

/* Candidate seams of rows [r0, r0+nr): column 0 and the columns around
 * every fault in those rows. */
static int seams(const band_ctx *x, int r0, int nr, int *out)
{
    const ftm_mesh *m = x->m;
    int n = 0, C = m->cols;
    out[n++] = 0;
    if (!x->rwrap)
        return n;
    for (int r = r0; r < r0 + nr && n < MAX_SEAMS; r++)
        for (int c = 0; c < C && n < MAX_SEAMS; c++) {
            int id = ftm_mesh_chip(m, r, c);
            int bad = !ftm_mesh_alive(m, id) || !ftm_mesh_link_live(m, id, FTM_DIR_E) ||
                      !ftm_mesh_link_live(m, id, FTM_DIR_W);
            if (!bad)
                continue;
            int cand[2] = { c, (c + 1) % C };
            for (int k = 0; k < 2 && n < MAX_SEAMS; k++) {
                int dup = 0;
                for (int j = 0; j < n; j++)
                    dup |= out[j] == cand[k];
                if (!dup)
                    out[n++] = cand[k];
            }
        }
    return n;
}

/* The router's ring over the healthy chips of rows [r0, r0+nr) (a mesh of
 * those rows, with only the links among them), in chip ids of x->m, into
 * out; or 0 chips when the band's chips are not connected among
 * themselves. Returns the count or an error. */
static int band_router_order(const band_ctx *x, int r0, int nr, int *out)
{
    const ftm_mesh *m = x->m;
    ftm_mesh b;
    int rc = ftm_mesh_init(&b, nr, m->cols, m->torus);
    if (rc)
        return rc;
    for (int r = 0; r < nr; r++)
        for (int c = 0; c < m->cols; c++) {
            int a = ftm_mesh_chip(m, r0 + r, c), k = ftm_mesh_chip(&b, r, c);
            b.chip_dead[k] = m->chip_dead[a];
            for (int d = 0; d < FTM_NDIRS; d++) {
                int na = ftm_mesh_neighbor(m, a, d), nk = ftm_mesh_neighbor(&b, k, d);
                int same = na >= 0 && nk >= 0 && ftm_mesh_row(m, na) - r0 == ftm_mesh_row(&b, nk) &&
                           ftm_mesh_col(m, na) == ftm_mesh_col(&b, nk);
                b.link_dead[k * FTM_NDIRS + d] = !same || !ftm_mesh_link_live(m, a, d);
            }
        }
    ftm_ring g = { 0 };
    rc = ftm_router_ring(&b, &g);
    int n = 0;
    if (rc == FTM_EPARTITION || rc == FTM_EALLDEAD)
        rc = 0;
    else if (!rc)
        for (; n < g.n; n++)
            out[n] = ftm_mesh_chip(m, r0 + ftm_mesh_row(&b, g.chips[n]), ftm_mesh_col(&b, g.chips[n]));
    ftm_router_ring_free(&g);
    ftm_mesh_free(&b);
    return rc ? rc : n;
}

/* Candidate ring orders of rows [r0, r0+nr): snakes from every seam, both
 * ways, then the router's ring of the band and its reverse. Writes
 * candidate k to x->order; returns its length, 0 for none (k past the
 * last) or an error. */
static int candidate(band_ctx *x, int r0, int nr, const int *sv, int ns, int k)
{
    if (k < 4 * ns)
        return snake(x, r0, nr, sv[k / 4], (k / 2) & 1, k & 1, x->order);
    if (k > 4 * ns + 1)
        return 0;
    int n = band_router_order(x, r0, nr, x->order);
    if (n > 0 && k == 4 * ns + 1)
        for (int i = 0; i < n / 2; i++) {
            int t = x->order[i];
            x->order[i] = x->order[n - 1 - i];
            x->order[n - 1 - i] = t;
        }
    return n;
}

/* Picks the best ring of rows [r0, r0+nr) given load x->load, stores it in
 * r and adds its edges to x->load. */
static int best_ring(band_ctx *x, int r0, int nr, ftm_ring *r, long *smax, long *scost)
{
    int sv[MAX_SEAMS], ns = seams(x, r0, nr, sv), nl = x->m->nchips * FTM_NDIRS;
    int found = 0, rc = 0;
    long bmax = 0, bcost = 0;
    for (int k = 0; k < 4 * ns + 2 && !rc; k++) {
        int n = candidate(x, r0, nr, sv, ns, k);
        if (n < 0) {
            rc = n;
            break;
        }
        if (n == 0 && k >= 4 * ns) /* no router ring: the band is cut */
            continue;
        memcpy(x->tmp, x->load, sizeof(int) * (size_t)nl);
        long cm, cc;
        rc = route_ring(x, x->order, n, x->tmp, &cm, &cc);
        if (rc)
            break;
        if (!found || cm < bmax || (cm == bmax && cc < bcost)) {
            found = 1;
            bmax = cm;
            bcost = cc;
            memcpy(x->best, x->tmp, sizeof(int) * (size_t)nl);
            rc = rtr_ring_set(r, x->order, n, x->off, x->dirs);
        }
    }
    if (!rc) {
        memcpy(x->load, x->best, sizeof(int) * (size_t)nl);
        *smax = bmax;
        *scost = bcost;
    }
    return rc;
}

/* ---- bands --------------------------------------------------------------- */

static void add_ring_load(const ftm_mesh *m, const ftm_ring *r, int *ld, int sign)
{
    for (int i = 0; i < r->n; i++) {
        int at = r->chips[i];
        for (int k = r->path_off[i]; k < r->path_off[i + 1]; k++) {
            ld[at * FTM_NDIRS + r->dirs[k]] += sign;
            at = ftm_mesh_neighbor(m, at, r->dirs[k]);
        }
    }
}

/* Default rings of a band: fwd = snake from seam 0 going east, rev = the
 * same chips in reverse order. Clean when every edge is one live hop. */
static int default_rings(band_ctx *x, ftm_plan2d_band *b, int *clean)
{
    const ftm_mesh *m = x->m;
    int n = snake(x, b->row0, b->nrows, 0, 0, 0, x->order);
    *clean = n == b->nrows * m->cols;
    int rc = 0;
    for (int pass = 0; pass < 2 && !rc; pass++) {
        if (pass == 1)
            for (int i = 0; i < n / 2; i++) {
                int t = x->order[i];
                x->order[i] = x->order[n - 1 - i];
                x->order[n - 1 - i] = t;
            }
        long cm, cc;
        memset(x->tmp, 0, sizeof(int) * (size_t)m->nchips * FTM_NDIRS);
        rc = route_ring(x, x->order, n, x->tmp, &cm, &cc);
        if (!rc)
            rc = rtr_ring_set(pass ? &b->rev : &b->fwd, x->order, n, x->off, x->dirs);
        for (int i = 0; i < n && !rc; i++)
            if (x->off[i + 1] - x->off[i] != (n > 1))
                *clean = 0;
    }
    return rc;
}

/* The band's chips by (column, row): the order in which they own blocks,
 * so that a band's block i sits near column i * cols / n. */
static int set_owners(const ftm_mesh *m, ftm_plan2d_band *b)
{
    free(b->owners);
    b->n = b->fwd.n;
    b->owners = malloc(sizeof(int) * (size_t)(b->n ? b->n : 1));
    if (!b->owners)
        return FTM_ENOMEM;
    int k = 0;
    for (int c = 0; c < m->cols; c++)
        for (int r = b->row0; r < b->row0 + b->nrows; r++)
            if (ftm_mesh_alive(m, ftm_mesh_chip(m, r, c)))
                b->owners[k++] = ftm_mesh_chip(m, r, c);
    return k == b->n ? 0 : FTM_EINTERNAL; /* the rings hold the same chips */
}

void ftm_plan2d_free(ftm_plan2d *p)
{
    for (int i = 0; p->bands && i < p->nbands; i++) {
        ftm_router_ring_free(&p->bands[i].fwd);
        ftm_router_ring_free(&p->bands[i].rev);
        free(p->bands[i].owners);
    }
    free(p->bands);
    memset(p, 0, sizeof *p);
}

/* 1 when rows [r0, r0+nr) hold a dead chip or a dead link between two of
 * their chips: a band is "alternate" only around a fault (a healthy open
 * mesh's odd band has a detour too, but nothing to go around). */
static int band_has_fault(const ftm_mesh *m, int r0, int nr)
{
    for (int r = r0; r < r0 + nr; r++)
        for (int c = 0; c < m->cols; c++) {
            int a = ftm_mesh_chip(m, r, c);
            if (!ftm_mesh_alive(m, a))
                return 1;
            for (int d = 0; d < FTM_NDIRS; d++) {
                int nb = ftm_mesh_neighbor(m, a, d);
                int in = nb >= 0 && ftm_mesh_row(m, nb) >= r0 && ftm_mesh_row(m, nb) < r0 + nr;
                if (in && !ftm_mesh_link_live(m, a, d))
                    return 1;
            }
        }
    return 0;
}

/* Re-plans the dirty run of bands [a, e] (indices into p->bands). */
static int replan_run(band_ctx *x, ftm_plan2d *p, int a, int e, const int *dirty, int *used)
{
    const ftm_mesh *m = x->m;
    int nl = m->nchips * FTM_NDIRS, rc = 0;
    int have = 0, bx = 0, by = 0;
    long bmax = 0, bhops = 0, brows = 0;
    ftm_ring bf = { 0 }, br = { 0 }, cf = { 0 }, cr = { 0 };
    int *saved = malloc(sizeof(int) * (size_t)nl), *bestload = malloc(sizeof(int) * (size_t)nl);
    if (!saved || !bestload)
        rc = FTM_ENOMEM;
    for (int xx = 0; xx < 2 && !rc; xx++)
        for (int yy = 0; yy < 2 && !rc; yy++) {
            int lo = a - xx, hi = e + yy;
            if (lo < 0 || hi >= p->nbands || (xx && (dirty[lo] || used[lo])) ||
                (yy && (dirty[hi] || used[hi])))
                continue;
            memcpy(saved, x->load, sizeof(int) * (size_t)nl);
            if (xx)
                add_ring_load(m, &p->bands[lo].fwd, x->load, -1), add_ring_load(m, &p->bands[lo].rev, x->load, -1);
            if (yy)
                add_ring_load(m, &p->bands[hi].fwd, x->load, -1), add_ring_load(m, &p->bands[hi].rev, x->load, -1);
            int r0 = p->bands[lo].row0, nr = p->bands[hi].row0 + p->bands[hi].nrows - r0;
            long m1, c1, m2, c2;
            rc = best_ring(x, r0, nr, &cf, &m1, &c1);
            if (!rc)
                rc = best_ring(x, r0, nr, &cr, &m2, &c2);
            if (rc)
                break;
            long mx = m1 > m2 ? m1 : m2, hops = cf.path_off[cf.n] + cr.path_off[cr.n];
            if (!have || mx < bmax || (mx == bmax && (hops < bhops || (hops == bhops && nr < brows)))) {
                have = 1;
                bmax = mx;
                bhops = hops;
                brows = nr;
                bx = xx;
                by = yy;
                ftm_ring t = bf; bf = cf; cf = t;
                t = br; br = cr; cr = t;
                memcpy(bestload, x->load, sizeof(int) * (size_t)nl);
            }
            memcpy(x->load, saved, sizeof(int) * (size_t)nl);
        }
    if (!rc && have) {
        memcpy(x->load, bestload, sizeof(int) * (size_t)nl);
        int lo = a - bx, hi = e + by;
        ftm_plan2d_band *nb = &p->bands[lo];
        nb->nrows = p->bands[hi].row0 + p->bands[hi].nrows - nb->row0;
        nb->alternate = band_has_fault(m, nb->row0, nb->nrows);
        ftm_router_ring_free(&nb->fwd);
        ftm_router_ring_free(&nb->rev);
        nb->fwd = bf;
        nb->rev = br;
        memset(&bf, 0, sizeof bf);
        memset(&br, 0, sizeof br);
        for (int i = lo + 1; i <= hi; i++)
            used[i] = 2; /* absorbed into band lo */
        used[lo] = 1;
    }
    ftm_router_ring_free(&bf);
    ftm_router_ring_free(&br);
    ftm_router_ring_free(&cf);
    ftm_router_ring_free(&cr);
    free(saved);
    free(bestload);
    return rc;
}

static int plan(band_ctx *x, ftm_plan2d *p)
{
    const ftm_mesh *m = x->m;
    int R = m->rows, per = x->rwrap ? 1 : 2, rc = 0;
    p->nbands = R / per;
    if (p->nbands == 0)
        p->nbands = 1;
    p->bands = calloc((size_t)p->nbands, sizeof *p->bands);
    int *dirty = calloc((size_t)p->nbands, sizeof(int)), *used = calloc((size_t)p->nbands, sizeof(int));
    if (!p->bands || !dirty || !used)
        rc = FTM_ENOMEM;
    for (int i = 0; i < p->nbands && !rc; i++) {
        ftm_plan2d_band *b = &p->bands[i];
        b->row0 = i * per;
        b->nrows = i == p->nbands - 1 ? R - b->row0 : per; /* odd R: last band takes 3 */
        int clean;
        rc = default_rings(x, b, &clean);
        dirty[i] = !clean;
        if (!rc && clean) {
            add_ring_load(m, &b->fwd, x->load, 1);
            add_ring_load(m, &b->rev, x->load, 1);
        }
    }
    for (int i = 0; i < p->nbands && !rc; i++) {
        if (!dirty[i] || used[i])
            continue;
        int e = i;
        while (e + 1 < p->nbands && dirty[e + 1])
            e++;
        rc = replan_run(x, p, i, e, dirty, used);
        i = e;
    }
    /* Compact: drop absorbed bands and bands with no healthy chip. */
    int k = 0;
    for (int i = 0; i < p->nbands && !rc; i++) {
        if (used[i] == 2 || p->bands[i].fwd.n == 0) {
            ftm_router_ring_free(&p->bands[i].fwd);
            ftm_router_ring_free(&p->bands[i].rev);
            continue;
        }
        p->bands[k++] = p->bands[i];
    }
    if (!rc)
        p->nbands = k;
    for (int i = 0; i < p->nbands && !rc; i++)
        rc = set_owners(m, &p->bands[i]);
    if (!rc) {
        memset(x->tmp, 0, sizeof(int) * (size_t)m->nchips * FTM_NDIRS);
        for (int i = 0; i < p->nbands; i++) {
            add_ring_load(m, &p->bands[i].fwd, x->tmp, 1);
            add_ring_load(m, &p->bands[i].rev, x->tmp, 1);
        }
        p->max_load = 0;
        for (int l = 0; l < m->nchips * FTM_NDIRS; l++)
            if (x->tmp[l] > p->max_load)
                p->max_load = x->tmp[l];
    }
    free(dirty);
    free(used);
    return rc;
}

int ftm_plan2d_build(const ftm_mesh *m, ftm_plan2d *p)
{
    memset(p, 0, sizeof *p);
    int a, b, rc = ftm_mesh_check_connected(m, &a, &b);
    if (rc)
        return rc;
    band_ctx x;
    memset(&x, 0, sizeof x);
    x.m = m;
    x.rwrap = m->torus && m->cols >= 3;
    size_t nl = (size_t)m->nchips * FTM_NDIRS;
    rc = rtr_dijkstra_init(&x.w, m->nchips);
    x.load = calloc(nl, sizeof(int));
    x.tmp = calloc(nl, sizeof(int));
    x.best = calloc(nl, sizeof(int));
    x.order = malloc(sizeof(int) * (size_t)m->nchips);
    x.dcap = (int)nl + m->nchips;
    x.dirs = malloc((size_t)x.dcap);
    x.off = malloc(sizeof(int) * (size_t)(m->nchips + 1));
    if (!rc && (!x.load || !x.tmp || !x.best || !x.order || !x.dirs || !x.off))
        rc = FTM_ENOMEM;
    if (!rc)
        rc = plan(&x, p);
    if (rc)
        ftm_plan2d_free(p);
    rtr_dijkstra_free(&x.w);
    free(x.load);
    free(x.tmp);
    free(x.best);
    free(x.order);
    free(x.dirs);
    free(x.off);
    return rc;
}

int ftm_plan2d_columns(const ftm_mesh *m, const ftm_plan2d *p, unsigned char *usable)
{
    int U = 0;
    for (int c = 0; c < m->cols; c++) {
        usable[c] = 1;
        for (int b = 0; b < p->nbands; b++)
            for (int r = p->bands[b].row0; r < p->bands[b].row0 + p->bands[b].nrows; r++)
                if (!ftm_mesh_alive(m, ftm_mesh_chip(m, r, c)))
                    usable[c] = 0;
        U += usable[c];
    }
    /* Column layout unless it would waste more than 1/8 of the columns
     * (each lost column adds 1/U to every ring step). */
    return U == 0 || 8 * U < 7 * m->cols ? 0 : U;
}
