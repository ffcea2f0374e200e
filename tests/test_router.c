/* Router: rings around holes, paths, validation, quality.
 *
 * Rings are checked twice: by ftm_router_ring_validate and by check_ring() below,
 * an independent walk written from the mesh's definition (row-major ids,
 * N/E/S/W, wrap links on torus sides >= 3), so a bug shared by the router
 * and its validator does not go unnoticed.
 */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "ftmesh/router.h"
#include "ftmesh/error.h"
#include "ftmesh/rng.h"
#include "test_util.h"

/* ---- independent checker -------------------------------------------- */

static int tnb(const ftm_mesh *m, int x, int d)
{
    static const int dr[4] = { -1, 0, 1, 0 }, dc[4] = { 0, 1, 0, -1 };
    int r = x / m->cols + dr[d], c = x % m->cols + dc[d];
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
    return r * m->cols + c;
}

typedef struct { int hops, detours, longest, maxload; } tq;

/* Returns 1 if the ring is a valid ring over every healthy chip; fills q. */
static int check_ring(const ftm_mesh *m, const ftm_ring *r, tq *q)
{
    int healthy = 0;
    for (int i = 0; i < m->nchips; i++)
        healthy += !m->chip_dead[i];
    if (r->n != healthy || r->path_off[0] != 0)
        return 0;
    int *seen = calloc((size_t)m->nchips, sizeof(int));
    int *load = calloc((size_t)m->nchips * 4, sizeof(int));
    int ok = 1;
    memset(q, 0, sizeof *q);
    for (int i = 0; i < r->n && ok; i++) {
        int x = r->chips[i];
        if (x < 0 || x >= m->nchips || m->chip_dead[x] || seen[x]++)
            ok = 0;
    }
    for (int i = 0; i < r->n && ok; i++) {
        int x = r->chips[i], h = r->path_off[i + 1] - r->path_off[i];
        if (h < (r->n > 1) || h > m->nchips)
            ok = 0;
        for (int k = r->path_off[i]; k < r->path_off[i + 1] && ok; k++) {
            int d = r->dirs[k], y = d < 4 ? tnb(m, x, d) : -1;
            if (y < 0 || m->chip_dead[y] || m->link_dead[x * 4 + d])
                ok = 0;
            else if (++load[x * 4 + d] > q->maxload)
                q->maxload = load[x * 4 + d];
            x = y;
        }
        if (ok && x != r->chips[(i + 1) % r->n])
            ok = 0;
        q->hops += h;
        q->detours += h > 1;
        if (h > q->longest)
            q->longest = h;
    }
    free(seen);
    free(load);
    return ok;
}

/* |black - white| healthy chips when the live graph is bipartite (checker
 * colouring (r + c) % 2; a torus side >= 3 must be even for that), else -1.
 * A ring edge of odd hop count changes colour and an even one does not, so
 * a ring needs at least this many even (detour) edges. */
static int colour_gap(const ftm_mesh *m)
{
    if (m->torus && ((m->rows >= 3 && m->rows % 2) || (m->cols >= 3 && m->cols % 2)))
        return -1;
    int b = 0, w = 0;
    for (int i = 0; i < m->nchips; i++)
        if (!m->chip_dead[i]) {
            if (((i / m->cols) + (i % m->cols)) % 2)
                b++;
            else
                w++;
        }
    return abs(b - w);
}

/* Router ring, checked both ways; returns the checker's figures. */
static void ring_ok(const ftm_mesh *m, ftm_ring *ring, tq *q)
{
    ck_assert_int_eq(ftm_router_ring(m, ring), 0);
    ck_assert_int_eq(ftm_router_ring_validate(m, ring), 0);
    ck_assert_msg(check_ring(m, ring, q), "independent check failed");
    ftm_ring_quality rq;
    ftm_router_ring_measure(m, ring, &rq);
    ck_assert_int_eq(rq.valid, 1);
    ck_assert_int_eq(rq.ring_chips, ring->n);
    ck_assert_int_eq(rq.hops, q->hops);
    ck_assert_int_eq(rq.detours, q->detours);
    ck_assert_int_eq(rq.longest_edge, q->longest);
    ck_assert_int_eq(rq.max_link_load, q->maxload);
}

/* ---- healthy meshes -------------------------------------------------- */

/* A nearest-neighbour ring exists on an open R x C mesh iff both sides are
 * >= 2 and R*C is even; on a torus also when both sides are >= 3 (and a
 * 1 x N torus with N >= 3 is itself a ring). */
static int has_ham(int R, int C, int torus)
{
    if (R >= 2 && C >= 2 && (R * C) % 2 == 0)
        return 1;
    if (torus && ((R >= 3 && C >= 3) || (R == 1 && C >= 3) || (C == 1 && R >= 3)))
        return 1;
    return 0;
}

START_TEST(test_healthy_meshes)
{
    for (int torus = 0; torus < 2; torus++)
        for (int R = 1; R <= 8; R++)
            for (int C = 1; C <= 8; C++) {
                ftm_mesh m;
                ck_assert_int_eq(ftm_mesh_init(&m, R, C, torus), 0);
                ftm_ring ring;
                tq q;
                ring_ok(&m, &ring, &q);
                int n = R * C;
                if (n <= 2) {
                    ck_assert_int_eq(q.hops, n == 1 ? 0 : 2);
                } else if (has_ham(R, C, torus)) {
                    ck_assert_msg(q.hops == n && q.detours == 0,
                                  "%dx%d torus=%d: hops %d detours %d", R, C, torus, q.hops, q.detours);
                } else if (R == 1 || C == 1) {
                    /* A line: every link must be crossed both ways. */
                    ck_assert_int_eq(q.hops, 2 * (n - 1));
                } else {
                    /* Odd x odd open mesh: one colour has one chip more, so
                     * one even edge is needed; 2 hops is the best. */
                    ck_assert_int_eq(colour_gap(&m), 1);
                    ck_assert_int_eq(q.hops, n + 1);
                    ck_assert_int_eq(q.detours, 1);
                }
                ftm_router_ring_free(&ring);
                ftm_mesh_free(&m);
            }
}
END_TEST

/* ---- holes ------------------------------------------------------------ */

/* Random 2x2-aligned dead hosts on even meshes: a Hamiltonian ring always
 * exists when the rest is connected (spanning tree coverage). */
START_TEST(test_aligned_hosts)
{
    int R = 4 + 2 * (_i % 3), C = 4 + 2 * ((_i / 3) % 3), torus = (_i / 9) % 2;
    uint64_t seed = (uint64_t)_i;
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, R, C, torus), 0);
    int hosts = 1 + (int)(ftm_rng_u64(seed, 1, 0, 0, 0) % 3);
    for (int h = 0; h < hosts; h++) {
        int r = 2 * (int)(ftm_rng_u64(seed, 2, (uint64_t)h, 0, 0) % (uint64_t)(R / 2));
        int c = 2 * (int)(ftm_rng_u64(seed, 3, (uint64_t)h, 0, 0) % (uint64_t)(C / 2));
        ck_assert_int_eq(ftm_mesh_fail_host(&m, r, c), 0);
    }
    int cc = ftm_mesh_check_connected(&m, NULL, NULL);
    ftm_ring ring;
    if (cc) {
        ck_assert_int_eq(ftm_router_ring(&m, &ring), cc);
    } else {
        tq q;
        ring_ok(&m, &ring, &q);
        ck_assert_msg(q.hops == ring.n && q.detours == 0, "%dx%d t%d seed %d: hops %d n %d",
                      R, C, torus, _i, q.hops, ring.n);
        ftm_router_ring_free(&ring);
    }
    ftm_mesh_free(&m);
}
END_TEST

START_TEST(test_named_holes)
{
    ftm_mesh m;
    ftm_ring ring;
    tq q;
    /* 8x8 minus host (2,2) and minus two more aligned hosts. */
    ck_assert_int_eq(ftm_mesh_init(&m, 8, 8, 0), 0);
    ftm_mesh_fail_host(&m, 2, 2);
    ring_ok(&m, &ring, &q);
    ck_assert_int_eq(q.hops, 60);
    ck_assert_int_eq(q.detours, 0);
    ftm_router_ring_free(&ring);
    ftm_mesh_fail_host(&m, 4, 6);
    ftm_mesh_fail_host(&m, 0, 6);
    ring_ok(&m, &ring, &q);
    ck_assert_int_eq(q.hops, 52);
    ftm_router_ring_free(&ring);
    ftm_mesh_free(&m);
    /* 32x32 torus minus one host. */
    ck_assert_int_eq(ftm_mesh_init(&m, 32, 32, 1), 0);
    ftm_mesh_fail_host(&m, 10, 10);
    ring_ok(&m, &ring, &q);
    ck_assert_int_eq(q.hops, 1020);
    ftm_router_ring_free(&ring);
    ftm_mesh_free(&m);
}
END_TEST

/* 8x8 minus any one chip (open and torus): no nearest-neighbour ring can
 * exist (the colours are 32 and 31), so at least one even edge of >= 2
 * hops. One 2-hop detour (64 hops) is the best; the heuristic reaches it
 * except next to a corner, where it may use 2 more hops (guarded). */
START_TEST(test_one_dead_chip)
{
    for (int j = 0; j < 64; j++) {
        int torus = _i, r = j / 8, c = j % 8;
        ftm_mesh m;
        ck_assert_int_eq(ftm_mesh_init(&m, 8, 8, torus), 0);
        ftm_mesh_fail_chip(&m, r, c);
        ck_assert_int_eq(colour_gap(&m), 1);
        ftm_ring ring;
        tq q;
        ring_ok(&m, &ring, &q);
        /* The colour gap forces one even edge, so 64 hops is the least;
         * detour pairing reaches it wherever the chip is, corners and
         * (1,1) included (cheapest insertion alone gave 66 there). */
        ck_assert_int_eq(q.hops, 64);
        ck_assert_int_eq(q.detours, 1);
        ck_assert_int_eq(q.longest, 2);
        ftm_router_ring_free(&ring);
        ftm_mesh_free(&m);
    }
}
END_TEST

/* ---- property sweep ---------------------------------------------------- */

static int rnd(uint64_t seed, uint64_t *k, int n)
{
    return (int)(ftm_rng_u64(seed, (*k)++, 7, 0, 0) % (uint64_t)n);
}

/* Random chips, hosts and links (both ways and one way) on every mesh from
 * 2x2 to 8x8, open and torus, 8 seeds each: the router's answer agrees with
 * ftm_mesh_check_connected, the ring passes both checkers, is at least as
 * long as the colour bound, is deterministic, and its reverse is valid. */
static void sweep_one(int R, int C, int torus, uint64_t seed)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, R, C, torus), 0);
    uint64_t k = 0;
#define RND(n) rnd(seed, &k, (n))
    int nchip = RND(R * C / 5 + 1), nhost = RND(2), nlink = RND(R * C / 4 + 1);
    for (int i = 0; i < nchip; i++)
        ftm_mesh_fail_chip(&m, RND(R), RND(C));
    for (int i = 0; i < nhost; i++)
        ftm_mesh_fail_host(&m, RND(R - 1), RND(C - 1));
    for (int i = 0; i < nlink; i++) {
        int x = RND(R * C), d = RND(4), y = tnb(&m, x, d);
        if (y >= 0 && y != x)
            ftm_mesh_fail_link(&m, x / C, x % C, y / C, y % C, RND(2));
    }
#undef RND
    ftm_ring ring, again, rev;
    int cc = ftm_mesh_check_connected(&m, NULL, NULL);
    if (cc) {
        ck_assert_int_eq(ftm_router_ring(&m, &ring), cc);
        ck_assert_int_eq(ring.n, 0);
        ck_assert_ptr_null(ring.chips);
        ftm_mesh_free(&m);
        return;
    }
    tq q, q2;
    ck_assert_msg(ftm_router_ring(&m, &ring) == 0 && check_ring(&m, &ring, &q),
                  "%dx%d torus=%d seed %llu", R, C, torus, (unsigned long long)seed);
    ftm_router_ring_free(&ring);
    ring_ok(&m, &ring, &q);
    if (ring.n > 1)
        ck_assert_int_ge(q.hops, ring.n);
    int gap = colour_gap(&m);
    if (gap >= 0 && ring.n > 1)
        ck_assert_int_ge(q.detours, gap);
    /* Deterministic, bit for bit. */
    ck_assert_int_eq(ftm_router_ring(&m, &again), 0);
    ck_assert_int_eq(again.n, ring.n);
    ck_assert_int_eq(memcmp(again.chips, ring.chips, sizeof(int) * (size_t)ring.n), 0);
    ck_assert_int_eq(memcmp(again.path_off, ring.path_off, sizeof(int) * (size_t)(ring.n + 1)), 0);
    ck_assert_int_eq(memcmp(again.dirs, ring.dirs, (size_t)ring.path_off[ring.n]), 0);
    /* The counter-rotating ring: same chips, reverse order, valid. */
    ck_assert_int_eq(ftm_router_reverse(&m, &ring, &rev), 0);
    ck_assert_int_eq(ftm_router_ring_validate(&m, &rev), 0);
    ck_assert(check_ring(&m, &rev, &q2));
    for (int i = 0; i < ring.n; i++)
        ck_assert_int_eq(rev.chips[i], ring.chips[(ring.n - i) % ring.n]);
    ftm_router_ring_free(&rev);
    ftm_router_ring_free(&again);
    ftm_router_ring_free(&ring);
    ftm_mesh_free(&m);
}

/* One mesh shape per loop iteration (a forked process each), 8 seeds. */
START_TEST(test_sweep)
{
    int R = 2 + _i % 7, C = 2 + (_i / 7) % 7, torus = (_i / 49) % 2;
    for (int k = 0; k < 8; k++)
        sweep_one(R, C, torus, 1000u + (uint64_t)(_i * 8 + k));
}
END_TEST

START_TEST(test_big_torus)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 64, 64, 1), 0);
    ck_assert_int_eq(ftm_mesh_fail_random(&m, 40, 7), 0);
    ftm_ring ring, rev;
    tq q;
    ring_ok(&m, &ring, &q);
    ck_assert_int_eq(ring.n, 4056);
    /* The 40 dead chips split 20/20 by colour here (gap 0), and detour
     * pairing cancels every detour: a nearest-neighbour ring (one 2-hop
     * detour per dead chip before pairing). */
    ck_assert_int_eq(colour_gap(&m), 0);
    ck_assert_int_eq(q.detours, 0);
    ck_assert_int_eq(q.hops, 4056);
    ck_assert_int_eq(ftm_router_reverse(&m, &ring, &rev), 0);
    ck_assert(check_ring(&m, &rev, &q));
    ftm_router_ring_free(&rev);
    ftm_router_ring_free(&ring);
    ftm_mesh_free(&m);
}
END_TEST

/* ---- scattered dead chips ---------------------------------------------- */

/* Scattered single dead chips on tori with even sides: the colour gap is
 * the least number of detours. Detour pairing walks opposite-colour
 * detours together and cancels them, so each ring stays within one
 * leftover pair (2 detours) of the gap, every detour is a 2-hop one, and
 * over all seeds the excess stays small (tolerance 4 detours; cheapest
 * insertion alone left about one detour per dead chip). Loop index picks
 * the shape: 64x64 with 40 dead, 32x32 with 10, 16x16 with 4. */
START_TEST(test_scattered_faults)
{
    static const int side[3] = { 64, 32, 16 }, dead[3] = { 40, 10, 4 };
    static const int seeds[3] = { 12, 30, 60 };
    int R = side[_i], nseeds = sanitizer_scale() ? 3 : seeds[_i];
    int sum_det = 0, sum_gap = 0;
    for (int s = 1; s <= nseeds; s++) {
        ftm_mesh m;
        ck_assert_int_eq(ftm_mesh_init(&m, R, R, 1), 0);
        ck_assert_int_eq(ftm_mesh_fail_random(&m, dead[_i], (uint64_t)s), 0);
        ftm_ring ring;
        tq q;
        ring_ok(&m, &ring, &q);
        int gap = colour_gap(&m);
        ck_assert_int_ge(q.detours, gap);
        ck_assert_msg(q.detours <= gap + 2, "%dx%d seed %d: %d detours, gap %d", R, R, s,
                      q.detours, gap);
        ck_assert_int_le(q.longest, 2);
        ck_assert_int_eq(q.hops, ring.n + q.detours);
        sum_det += q.detours;
        sum_gap += gap;
        ftm_router_ring_free(&ring);
        ftm_mesh_free(&m);
    }
    ck_assert_int_le(sum_det, sum_gap + 4);
}
END_TEST

/* Many dead chips (about 10 %): clusters make the colour gap a loose bound,
 * but pairing still cancels most detours: fewer than one per four dead
 * chips (cheapest insertion alone: about one per dead chip). */
START_TEST(test_many_faults)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 64, 64, 1), 0);
    ck_assert_int_eq(ftm_mesh_fail_random(&m, 400, 1 + (uint64_t)_i), 0);
    ftm_ring ring;
    tq q;
    ring_ok(&m, &ring, &q);
    ck_assert_int_eq(ring.n, 4096 - 400);
    ck_assert_int_ge(q.detours, colour_gap(&m));
    ck_assert_int_lt(q.detours, 100);
    ck_assert_int_le(q.longest, 3);
    ftm_router_ring_free(&ring);
    ftm_mesh_free(&m);
}
END_TEST

/* ---- one-way links ----------------------------------------------------- */

START_TEST(test_one_way_links)
{
    ftm_mesh m;
    ftm_ring ring, rev;
    tq q;
    /* 2x2 with 0 -> 1 dead one way: the forward ring goes the other way
     * round with one hop per edge, and so must the reverse ring fail over. */
    ck_assert_int_eq(ftm_mesh_init(&m, 2, 2, 0), 0);
    ftm_mesh_fail_link(&m, 0, 0, 0, 1, 1);
    ring_ok(&m, &ring, &q);
    ck_assert_int_eq(q.hops, 4);
    ck_assert_int_eq(ftm_router_reverse(&m, &ring, &rev), 0);
    ck_assert(check_ring(&m, &rev, &q));
    ck_assert_int_eq(q.hops, 6); /* 0 -> 1 must go round: 3 hops */
    ftm_router_ring_free(&rev);
    ftm_router_ring_free(&ring);
    ftm_mesh_free(&m);
    /* 1x2 with one direction dead: cut. */
    ck_assert_int_eq(ftm_mesh_init(&m, 1, 2, 0), 0);
    ftm_mesh_fail_link(&m, 0, 0, 0, 1, 1);
    ck_assert_int_eq(ftm_router_ring(&m, &ring), FTM_EPARTITION);
    ftm_mesh_free(&m);
}
END_TEST

/* A link dead one way never makes the ring longer than the same link dead
 * both ways (the router tries that mesh's ring, and the ring of the mesh
 * with the link live, each way round): every link of 4x4 to 6x6 meshes
 * with a dead chip, each direction. The 5x5 mesh with (2,2) dead and
 * (1,1) -> (0,1) dead took 36 hops and 11 detours against 24 and none. */
START_TEST(test_one_way_no_worse)
{
    int n = 4 + _i, checked = 0;
    for (int c = 0; c < n * n; c++)
        for (int d = 0; d < FTM_NDIRS; d++) {
            ftm_mesh one, both;
            ck_assert_int_eq(ftm_mesh_init(&one, n, n, 0), 0);
            ftm_mesh_fail_chip(&one, n / 2, n / 2);
            int nb = ftm_mesh_neighbor(&one, c, d);
            if (nb < 0 || !ftm_mesh_alive(&one, c) || !ftm_mesh_alive(&one, nb)) {
                ftm_mesh_free(&one);
                continue;
            }
            ck_assert_int_eq(ftm_mesh_copy(&both, &one), 0);
            int r = c / n, col = c % n, r2 = nb / n, c2 = nb % n;
            ftm_mesh_fail_link(&one, r, col, r2, c2, 1);
            ftm_mesh_fail_link(&both, r, col, r2, c2, 0);
            ftm_ring a, b;
            if (ftm_router_ring(&both, &b) == 0) {
                tq qa, qb;
                ring_ok(&one, &a, &qa);
                ck_assert(check_ring(&both, &b, &qb));
                ck_assert_msg(qa.hops <= qb.hops, "%dx%d, (%d,%d)>(%d,%d): %d hops one way, %d both",
                              n, n, r, col, r2, c2, qa.hops, qb.hops);
                ftm_router_ring_free(&a);
                ftm_router_ring_free(&b);
                checked++;
            }
            ftm_mesh_free(&one);
            ftm_mesh_free(&both);
        }
    ck_assert_int_ge(checked, 40);
}
END_TEST

/* ---- errors and paths -------------------------------------------------- */

START_TEST(test_errors)
{
    ftm_mesh m;
    ftm_ring ring;
    ck_assert_int_eq(ftm_mesh_init(&m, 2, 2, 0), 0);
    ftm_mesh_fail_host(&m, 0, 0);
    ck_assert_int_eq(ftm_router_ring(&m, &ring), FTM_EALLDEAD);
    ck_assert_int_eq(ring.n, 0);
    ftm_mesh_free(&m);
    ck_assert_int_eq(ftm_mesh_init(&m, 3, 3, 0), 0);
    for (int r = 0; r < 3; r++)
        ftm_mesh_fail_chip(&m, r, 1);
    ck_assert_int_eq(ftm_router_ring(&m, &ring), FTM_EPARTITION);
    ck_assert_ptr_null(ring.chips);
    unsigned char dirs[16];
    ck_assert_int_eq(ftm_router_path(&m, 0, 2, NULL, 0, dirs, 16), FTM_ENOROUTE);
    ck_assert_int_eq(ftm_router_path(&m, 0, 1, NULL, 0, dirs, 16), FTM_ENOROUTE);
    ftm_mesh_free(&m);
}
END_TEST

START_TEST(test_paths)
{
    ftm_mesh m;
    unsigned char dirs[64];
    ck_assert_int_eq(ftm_mesh_init(&m, 8, 8, 0), 0);
    ck_assert_int_eq(ftm_router_path(&m, 0, 63, NULL, 0, dirs, 64), 14);
    ck_assert_int_eq(ftm_router_path(&m, 0, 63, NULL, 0, dirs, 13), FTM_ERANGE);
    ck_assert_int_eq(ftm_router_path(&m, 9, 9, NULL, 0, dirs, 0), 0);
    /* Around a dead chip: (3,3) -> (3,5) with (3,4) dead takes 4 hops. */
    ftm_mesh_fail_chip(&m, 3, 4);
    int h = ftm_router_path(&m, 27, 29, NULL, 0, dirs, 64);
    ck_assert_int_eq(h, 4);
    int x = 27;
    for (int k = 0; k < h; k++) {
        x = tnb(&m, x, dirs[k]);
        ck_assert_int_ge(x, 0);
        ck_assert(!m.chip_dead[x]);
    }
    ck_assert_int_eq(x, 29);
    ftm_mesh_free(&m);
    /* A torus takes the wrap link. */
    ck_assert_int_eq(ftm_mesh_init(&m, 8, 8, 1), 0);
    ck_assert_int_eq(ftm_router_path(&m, 0, 7, NULL, 0, dirs, 64), 1);
    ck_assert_int_eq(dirs[0], FTM_DIR_W);
    ftm_mesh_free(&m);
}
END_TEST

/* ---- validation of hand-made rings -------------------------------------- */

static int vring(const ftm_mesh *m, int n, const int *chips, const int *off,
                 const unsigned char *dirs)
{
    ftm_ring r = { n, (int *)chips, (int *)off, (unsigned char *)dirs };
    return ftm_router_ring_validate(m, &r);
}

START_TEST(test_validate_rejects)
{
    enum { N = FTM_DIR_N, E = FTM_DIR_E, S = FTM_DIR_S, W = FTM_DIR_W };
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 2, 2, 0), 0);
    /* 0 1
     * 2 3 */
    const int good[] = { 0, 1, 3, 2 }, off4[] = { 0, 1, 2, 3, 4 };
    const unsigned char gd[] = { E, S, W, N };
    ck_assert_int_eq(vring(&m, 4, good, off4, gd), 0);
    /* Missing chip 2 (the path 3 -> 0 passes it, still not on the ring). */
    const int miss[] = { 0, 1, 3 }, offm[] = { 0, 1, 2, 4 };
    const unsigned char md[] = { E, S, W, N };
    ck_assert_int_eq(vring(&m, 3, miss, offm, md), FTM_EBADRING);
    /* Duplicate chip 1, chip 2 missing. */
    const int dup[] = { 0, 1, 3, 1 }, offd[] = { 0, 1, 2, 3, 4 };
    const unsigned char dd[] = { E, S, N, W };
    ck_assert_int_eq(vring(&m, 4, dup, offd, dd), FTM_EBADRING);
    /* Path not ending at the next chip: 1 -> 3 written as S, W. */
    const int offe[] = { 0, 1, 3, 4, 5 };
    const unsigned char ed[] = { E, S, W, W, N };
    ck_assert_int_eq(vring(&m, 4, good, offe, ed), FTM_EBADRING);
    /* Path leaving the mesh. */
    const unsigned char od[] = { E, E, W, N };
    ck_assert_int_eq(vring(&m, 4, good, off4, od), FTM_EBADRING);
    /* Dead link 0 -> 1 (one way): that ring breaks, the other way is fine. */
    ftm_mesh_fail_link(&m, 0, 0, 0, 1, 1);
    ck_assert_int_eq(vring(&m, 4, good, off4, gd), FTM_EBADRING);
    const int back[] = { 0, 2, 3, 1 };
    const unsigned char bd[] = { S, E, N, W };
    ck_assert_int_eq(vring(&m, 4, back, off4, bd), 0);
    ftm_mesh_free(&m);
    /* Path through a dead chip: 2x3 with (0,1) dead.
     * 0 X 2
     * 3 4 5 */
    ck_assert_int_eq(ftm_mesh_init(&m, 2, 3, 0), 0);
    ftm_mesh_fail_chip(&m, 0, 1);
    const int c5[] = { 0, 3, 4, 5, 2 };
    const int o5[] = { 0, 1, 2, 3, 4, 6 }, o5b[] = { 0, 1, 2, 3, 4, 8 };
    const unsigned char through[] = { S, E, E, N, W, W };
    const unsigned char around[] = { S, E, E, N, S, W, W, N };
    ck_assert_int_eq(vring(&m, 5, c5, o5, through), FTM_EBADRING);
    ck_assert_int_eq(vring(&m, 5, c5, o5b, around), 0);
    /* A dead chip on the ring. */
    const int c6[] = { 0, 3, 4, 5, 2, 1 }, o6[] = { 0, 1, 2, 3, 4, 5, 6 };
    const unsigned char d6[] = { S, E, E, N, W, W };
    ck_assert_int_eq(vring(&m, 6, c6, o6, d6), FTM_EBADRING);
    ftm_mesh_free(&m);
}
END_TEST

/* ---- quality figures on hand-computed rings ------------------------------ */

/* ftm_router_ring keeps, per thread, its last two meshes' rings: asked
 * again (after other meshes pushed them out, too) it gives the ring a
 * thread with nothing kept builds, and a copy the caller may free. */
typedef struct fresh_ring {
    const ftm_mesh *m;
    ftm_ring r;
    int rc;
} fresh_ring;

static void *fresh_build(void *arg)
{
    fresh_ring *x = arg;
    x->rc = ftm_router_ring(x->m, &x->r);
    return NULL;
}

static void same_ring(const ftm_ring *a, const ftm_ring *b)
{
    ck_assert_int_eq(a->n, b->n);
    ck_assert_mem_eq(a->chips, b->chips, sizeof(int) * (size_t)a->n);
    ck_assert_mem_eq(a->path_off, b->path_off, sizeof(int) * (size_t)(a->n + 1));
    ck_assert_mem_eq(a->dirs, b->dirs, (size_t)a->path_off[a->n]);
}

START_TEST(test_ring_memo)
{
    ftm_mesh m[3];
    fresh_ring f[3];
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(ftm_mesh_init(&m[i], 8, 8 + 2 * i, 1), 0);
        ck_assert_int_eq(ftm_mesh_fail_chip(&m[i], 2, 3), 0);
        f[i] = (fresh_ring){ &m[i], { 0 }, -1 };
    }
    ck_assert_int_eq(ftm_mesh_fail_chip(&m[0], 5, 1), 0);
    for (int i = 0; i < 3; i++) { /* each in a thread with nothing kept */
        pthread_t th;
        ck_assert_int_eq(pthread_create(&th, NULL, fresh_build, &f[i]), 0);
        ck_assert_int_eq(pthread_join(th, NULL), 0);
        ck_assert_int_eq(f[i].rc, 0);
    }
    static const int ORDER[] = { 0, 1, 0, 2, 1, 0, 0, 2 };
    for (size_t k = 0; k < sizeof ORDER / sizeof ORDER[0]; k++) {
        ftm_ring r;
        ck_assert_int_eq(ftm_router_ring(&m[ORDER[k]], &r), 0);
        same_ring(&r, &f[ORDER[k]].r);
        r.chips[0] = -1; /* the caller's copy */
        ftm_router_ring_free(&r);
    }
    /* a fault more: another mesh, another ring */
    ftm_ring r;
    ck_assert_int_eq(ftm_mesh_fail_chip(&m[0], 6, 6), 0);
    ck_assert_int_eq(ftm_router_ring(&m[0], &r), 0);
    ck_assert_int_eq(r.n, f[0].r.n - 1);
    ftm_router_ring_free(&r);
    for (int i = 0; i < 3; i++) {
        ftm_router_ring_free(&f[i].r);
        ftm_mesh_free(&m[i]);
    }
}
END_TEST

START_TEST(test_quality_line)
{
    enum { E = FTM_DIR_E, W = FTM_DIR_W };
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 1, 4, 0), 0);
    /* 0-1-2-3 and back 3 -> 0 over three links: every directed link once. */
    const int c[] = { 0, 1, 2, 3 }, off[] = { 0, 1, 2, 3, 6 };
    const unsigned char d[] = { E, E, E, W, W, W };
    ftm_ring r = { 4, (int *)c, (int *)off, (unsigned char *)d };
    ftm_ring_quality q;
    ftm_router_ring_measure(&m, &r, &q);
    ck_assert_int_eq(q.valid, 1);
    ck_assert_int_eq(q.healthy, 4);
    ck_assert_int_eq(q.ring_chips, 4);
    ck_assert_int_eq(q.hops, 6);
    ck_assert_int_eq(q.detours, 1);
    ck_assert_int_eq(q.longest_edge, 3);
    ck_assert_int_eq(q.max_link_load, 1);
    /* 0 -> 2 -> 1 -> 3 -> 0: links 1E and 2W carry two edges each. */
    const int c2[] = { 0, 2, 1, 3 }, off2[] = { 0, 2, 3, 5, 8 };
    const unsigned char d2[] = { E, E, W, E, E, W, W, W };
    ftm_ring r2 = { 4, (int *)c2, (int *)off2, (unsigned char *)d2 };
    ftm_router_ring_measure(&m, &r2, &q);
    ck_assert_int_eq(q.valid, 1);
    ck_assert_int_eq(q.hops, 8);
    ck_assert_int_eq(q.detours, 3);
    ck_assert_int_eq(q.longest_edge, 3);
    ck_assert_int_eq(q.max_link_load, 2);
    /* The router's own line ring needs 2(N-1) hops. */
    ftm_ring rr;
    tq t;
    ring_ok(&m, &rr, &t);
    ck_assert_int_eq(t.hops, 6);
    ftm_router_ring_free(&rr);
    /* One chip: one edge of zero hops. */
    ftm_mesh_free(&m);
    ck_assert_int_eq(ftm_mesh_init(&m, 3, 3, 0), 0);
    for (int i = 0; i < 9; i++)
        if (i != 4)
            ftm_mesh_fail_chip(&m, i / 3, i % 3);
    ring_ok(&m, &rr, &t);
    ck_assert_int_eq(rr.n, 1);
    ck_assert_int_eq(rr.chips[0], 4);
    ck_assert_int_eq(t.hops, 0);
    ftm_router_ring_free(&rr);
    ftm_mesh_free(&m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("router");
    TCase *tc = tcase_create("router");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_healthy_meshes);
    tcase_add_loop_test(tc, test_aligned_hosts, 0, 18 * 4);
    tcase_add_test(tc, test_named_holes);
    tcase_add_loop_test(tc, test_one_dead_chip, 0, 2);
    tcase_add_loop_test(tc, test_sweep, 0, 49 * 2);
    tcase_add_test(tc, test_big_torus);
    tcase_add_loop_test(tc, test_scattered_faults, 0, 3);
    tcase_add_loop_test(tc, test_many_faults, 0, 2);
    tcase_add_test(tc, test_one_way_links);
    tcase_add_loop_test(tc, test_one_way_no_worse, 0, 3);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_paths);
    tcase_add_test(tc, test_validate_rejects);
    tcase_add_test(tc, test_quality_line);
    tcase_add_test(tc, test_ring_memo);
    suite_add_tcase(s, tc);
    return test_run(s);
}
