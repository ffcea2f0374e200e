/* Mesh topology, faults, reachability and the command-line parsers for them. */
#include "ftmesh/mesh.h"
#include "ftmesh/error.h"
#include "ftmesh/rng.h"

#include <stdlib.h>
#include <string.h>

static const int dr_[FTM_NDIRS] = { -1, 0, 1, 0 };
static const int dc_[FTM_NDIRS] = { 0, 1, 0, -1 };

const char *ftm_mesh_dir_name(int d)
{
    static const char *names[FTM_NDIRS] = { "N", "E", "S", "W" };
    return (d >= 0 && d < FTM_NDIRS) ? names[d] : "?";
}

int ftm_mesh_init(ftm_mesh *m, int rows, int cols, int torus)
{
    if (rows < 1 || cols < 1 || rows > FTM_MESH_MAX_SIDE || cols > FTM_MESH_MAX_SIDE ||
        rows * cols < FTM_MESH_MIN_CHIPS)
        return FTM_ERANGE;
    memset(m, 0, sizeof *m);
    m->rows = rows;
    m->cols = cols;
    m->torus = torus ? 1 : 0;
    m->nchips = rows * cols;
    m->chip_dead = calloc((size_t)m->nchips, 1);
    m->link_dead = calloc((size_t)m->nchips * FTM_NDIRS, 1);
    if (!m->chip_dead || !m->link_dead) {
        ftm_mesh_free(m);
        return FTM_ENOMEM;
    }
    return 0;
}

void ftm_mesh_free(ftm_mesh *m)
{
    free(m->chip_dead);
    free(m->link_dead);
    m->chip_dead = m->link_dead = NULL;
}

int ftm_mesh_same(const ftm_mesh *a, const ftm_mesh *b)
{
    return a->rows == b->rows && a->cols == b->cols && a->torus == b->torus &&
           memcmp(a->chip_dead, b->chip_dead, (size_t)a->nchips) == 0 &&
           memcmp(a->link_dead, b->link_dead, (size_t)a->nchips * FTM_NDIRS) == 0;
}

int ftm_mesh_copy(ftm_mesh *dst, const ftm_mesh *src)
{
    int rc = ftm_mesh_init(dst, src->rows, src->cols, src->torus);
    if (rc)
        return rc;
    memcpy(dst->chip_dead, src->chip_dead, (size_t)src->nchips);
    memcpy(dst->link_dead, src->link_dead, (size_t)src->nchips * FTM_NDIRS);
    return 0;
}

int ftm_mesh_neighbor(const ftm_mesh *m, int chip, int d)
{
    if (d < 0 || d >= FTM_NDIRS)
        return -1;
    int r = ftm_mesh_row(m, chip) + dr_[d], c = ftm_mesh_col(m, chip) + dc_[d];
    if (r < 0 || r >= m->rows) {
        if (!m->torus || m->rows < 3)
            return -1;
        r = (r + m->rows) % m->rows;
    }
    if (c < 0 || c >= m->cols) {
        if (!m->torus || m->cols < 3)
            return -1;
        c = (c + m->cols) % m->cols;
    }
    return ftm_mesh_chip(m, r, c);
}

int ftm_mesh_link_live(const ftm_mesh *m, int chip, int d)
{
    int nb = ftm_mesh_neighbor(m, chip, d);
    return nb >= 0 && !m->chip_dead[chip] && !m->chip_dead[nb] &&
           !m->link_dead[chip * FTM_NDIRS + d];
}

int ftm_mesh_dir_to(const ftm_mesh *m, int a, int b)
{
    for (int d = 0; d < FTM_NDIRS; d++)
        if (ftm_mesh_neighbor(m, a, d) == b)
            return d;
    return -1;
}

int ftm_mesh_healthy_count(const ftm_mesh *m)
{
    int n = 0;
    for (int i = 0; i < m->nchips; i++)
        n += !m->chip_dead[i];
    return n;
}

int ftm_mesh_detour_lower_bound(const ftm_mesh *m)
{
    if (m->torus && ((m->rows >= 3 && (m->rows & 1)) || (m->cols >= 3 && (m->cols & 1))))
        return 0;
    int gap = 0, live = 0;
    for (int i = 0; i < m->nchips; i++)
        if (!m->chip_dead[i]) {
            gap += ((ftm_mesh_row(m, i) + ftm_mesh_col(m, i)) & 1) ? -1 : 1;
            live++;
        }
    return live < 2 ? 0 : gap < 0 ? -gap : gap; /* one chip: a ring with no edge */
}

static int in_range(const ftm_mesh *m, int r, int c)
{
    return r >= 0 && r < m->rows && c >= 0 && c < m->cols;
}

int ftm_mesh_fail_chip(ftm_mesh *m, int r, int c)
{
    if (!in_range(m, r, c))
        return FTM_ERANGE;
    m->chip_dead[ftm_mesh_chip(m, r, c)] = 1;
    return 0;
}

int ftm_mesh_fail_chip_id(ftm_mesh *m, int id)
{
    if (id < 0 || id >= m->nchips)
        return FTM_ERANGE;
    m->chip_dead[id] = 1;
    return 0;
}

int ftm_mesh_link_both(const ftm_mesh *m, int chip, int d, int *nb)
{
    int y = ftm_mesh_neighbor(m, chip, d);
    if (nb)
        *nb = y;
    return y >= 0 && ftm_mesh_link_live(m, chip, d) &&
           ftm_mesh_link_live(m, y, ftm_dir_opposite(d));
}

int ftm_mesh_host_fits(const ftm_mesh *m, int r, int c)
{
    /* No chip beyond an open edge; a torus side of 2 has no wrap link. */
    int wrap_r = m->torus && m->rows >= 3, wrap_c = m->torus && m->cols >= 3;
    return in_range(m, r, c) && m->rows >= 2 && m->cols >= 2 && (wrap_r || r + 1 < m->rows) &&
           (wrap_c || c + 1 < m->cols);
}

int ftm_mesh_dead_links(const ftm_mesh *m, int *oneway)
{
    int n = 0, one = 0;
    for (int c = 0; c < m->nchips; c++)
        for (int d = 0; d < FTM_NDIRS && ftm_mesh_alive(m, c); d++) {
            int nb = ftm_mesh_neighbor(m, c, d);
            if (nb < 0 || !ftm_mesh_alive(m, nb) || ftm_mesh_link_live(m, c, d))
                continue;
            int single = ftm_mesh_link_live(m, nb, ftm_dir_opposite(d));
            one += single;
            n += single || c < nb; /* dead both ways: from its lower chip only */
        }
    if (oneway)
        *oneway = one;
    return n;
}

int ftm_mesh_host_has(const ftm_mesh *m, int hr, int hc, int r, int c)
{
    return (r - hr + m->rows) % m->rows < 2 && (c - hc + m->cols) % m->cols < 2;
}

int ftm_mesh_fail_host(ftm_mesh *m, int r, int c)
{
    if (!ftm_mesh_host_fits(m, r, c))
        return FTM_ERANGE;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            m->chip_dead[ftm_mesh_chip(m, (r + i) % m->rows, (c + j) % m->cols)] = 1;
    return 0;
}

int ftm_mesh_fail_link(ftm_mesh *m, int r, int c, int r2, int c2, int oneway)
{
    if (!in_range(m, r, c) || !in_range(m, r2, c2))
        return FTM_ERANGE;
    int a = ftm_mesh_chip(m, r, c), b = ftm_mesh_chip(m, r2, c2);
    int d = ftm_mesh_dir_to(m, a, b);
    if (d < 0 || a == b)
        return FTM_ENOTNEIGHBOR;
    m->link_dead[a * FTM_NDIRS + d] = 1;
    if (!oneway)
        m->link_dead[b * FTM_NDIRS + ftm_mesh_dir_to(m, b, a)] = 1;
    return 0;
}

int ftm_mesh_fail_random(ftm_mesh *m, int k, uint64_t seed)
{
    int healthy = ftm_mesh_healthy_count(m);
    if (k < 0 || k >= healthy)
        return FTM_ERANGE;
    /* Draw the j-th victim uniformly among the chips still healthy, keyed by
     * (seed, j): the same seed always kills the same chips. */
    for (int j = 0; j < k; j++) {
        uint64_t pick = ftm_rng_u64(seed, FTM_RNG_FAULTS, (uint64_t)j, 0, 0) % (uint64_t)healthy;
        for (int i = 0; i < m->nchips; i++) {
            if (m->chip_dead[i])
                continue;
            if (pick-- == 0) {
                m->chip_dead[i] = 1;
                break;
            }
        }
        healthy--;
    }
    return 0;
}

int ftm_mesh_bfs(const ftm_mesh *m, int src, int reverse, int *dist, int *queue)
{
    int *q = queue ? queue : malloc(sizeof(int) * (size_t)m->nchips);
    if (!q)
        return FTM_ENOMEM;
    for (int i = 0; i < m->nchips; i++)
        dist[i] = -1;
    int head = 0, tail = 0;
    dist[src] = 0;
    q[tail++] = src;
    while (head < tail) {
        int u = q[head++];
        for (int d = 0; d < FTM_NDIRS; d++) {
            int v = ftm_mesh_neighbor(m, u, d);
            if (v < 0 || dist[v] >= 0)
                continue;
            /* Forward: u->v must be live; reverse: v->u must be. */
            int ok = reverse ? ftm_mesh_link_live(m, v, ftm_dir_opposite(d))
                             : ftm_mesh_link_live(m, u, d);
            if (!ok)
                continue;
            dist[v] = dist[u] + 1;
            q[tail++] = v;
        }
    }
    if (!queue)
        free(q);
    return 0;
}

int ftm_mesh_check_connected(const ftm_mesh *m, int *a, int *b)
{
    int first = -1;
    for (int i = 0; i < m->nchips && first < 0; i++)
        if (!m->chip_dead[i])
            first = i;
    if (first < 0)
        return FTM_EALLDEAD;
    int *dist = malloc(sizeof(int) * 2 * (size_t)m->nchips);
    if (!dist)
        return FTM_ENOMEM;
    int rc = 0;
    for (int pass = 0; pass < 2 && !rc; pass++) {
        ftm_mesh_bfs(m, first, pass, dist, dist + m->nchips);
        for (int i = 0; i < m->nchips; i++) {
            if (!m->chip_dead[i] && dist[i] < 0) {
                if (a) *a = pass ? i : first;
                if (b) *b = pass ? first : i;
                rc = FTM_EPARTITION;
                break;
            }
        }
    }
    free(dist);
    return rc;
}

/* Reads a non-negative decimal int; advances *s. */
static int parse_int(const char **s, int *out)
{
    const char *p = *s;
    if (*p < '0' || *p > '9')
        return FTM_EINVAL;
    long v = 0;
    while (*p >= '0' && *p <= '9') {
        v = v * 10 + (*p - '0');
        if (v > 1000000)
            return FTM_EINVAL;
        p++;
    }
    *out = (int)v;
    *s = p;
    return 0;
}

int ftm_mesh_parse_size(const char *s, int *rows, int *cols)
{
    if (parse_int(&s, rows) || (*s != 'x' && *s != 'X'))
        return FTM_EINVAL;
    s++;
    if (parse_int(&s, cols) || *s)
        return FTM_EINVAL;
    return 0;
}

static int parse_pair(const char **s, int *r, int *c)
{
    if (parse_int(s, r) || **s != ',')
        return FTM_EINVAL;
    (*s)++;
    return parse_int(s, c);
}

int ftm_mesh_parse_coord(const char *s, int *r, int *c)
{
    if (parse_pair(&s, r, c) || *s)
        return FTM_EINVAL;
    return 0;
}

int ftm_mesh_parse_link(const char *s, int *r, int *c, int *r2, int *c2, int *oneway)
{
    if (parse_pair(&s, r, c) || (*s != '-' && *s != '>'))
        return FTM_EINVAL;
    *oneway = (*s == '>');
    s++;
    if (parse_pair(&s, r2, c2) || *s)
        return FTM_EINVAL;
    return 0;
}
