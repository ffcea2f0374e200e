/* Reducing transfers in pieces (pieces.h).
 *
 * The cost model ends a receive that sums len/HBM after its last byte
 * arrives, and a chip's step when its last receive ends, so every step
 * that sums pays its reduction after its transfers. Sent as pieces back
 * to back over the same route in the same step, a piece is summed while
 * the next one arrives, and only the last piece's reduction is left, for
 * a hop latency more per piece (per link of the route). So the pieces
 * shrink: each one no larger than what HBM sums while the next arrives,
 * b_i <= u + r b_(i+1) (u = hop x HBM, r = HBM / link bandwidth), the
 * last as small as that leaves it, and the count q the one with the
 * least q hop + last / HBM: two pieces from 2 u (TPU-v3 defaults: 1.8
 * MB; the last a tenth of what exceeds u), three from 11 u (9.9 MB).
 * Pieces would pay from u already where a link carries nothing else, but
 * where transfers share links (segments of cut rows, detours) the extra
 * hop latencies cost more than they hide: 2d-lines with two dead hosts
 * in the same rows at BERT-large size was 3% slower with pieces from u.
 * Measured on the healthy 32x32 torus at BERT-large size (`2d-lines`,
 * 10.6 MB row transfers): 7.27 ms in one piece, 7.09 in three equal
 * ones, 6.97 in these three; 6.89 with reductions free. */
#include "pieces.h"
#include "ftmesh/costmodel.h"
#include "keep.h"

#include <stdint.h>

size_t coll_pieces_split(const ftm_cost_params *cost, size_t elem)
{
    ftm_cost_params p = coll_cost(cost);
    double v = p.hop_s * p.hbm_Bps / (double)elem;
    /* a slow hop and fast HBM can pass any size (1 s x 1e18 B/s): then
     * nothing is split */
    return v < (double)(SIZE_MAX / 4) ? (size_t)v : SIZE_MAX / 4;
}

/* Sizes of q pieces for len, each as large as the next allows, into b
 * (largest first); the last one's size, negative where q pieces that
 * large would exceed len. With a last piece of x, piece i is its size at
 * x = 0 plus r^(q-1-i) x. */
static double tight(double len, double u, double r, int q, double *b)
{
    double w[COLL_PIECES_MAX], sum = 0, grow = 0;
    for (int i = q - 1; i >= 0; i--) {
        b[i] = i == q - 1 ? 0 : u + r * b[i + 1];
        w[i] = i == q - 1 ? 1 : r * w[i + 1];
        sum += b[i];
        grow += w[i];
    }
    double x = (len - sum) / grow;
    for (int i = 0; i < q; i++)
        b[i] += w[i] * x;
    return x;
}

int coll_pieces(size_t len, size_t split, double r, size_t sz[COLL_PIECES_MAX])
{
    double best = (double)split + (double)len, b[COLL_PIECES_MAX], keep[COLL_PIECES_MAX] = { 0 };
    int q = 1;
    sz[0] = len;
    for (int n = 2; split && split < len && len - split > split && n <= COLL_PIECES_MAX && (size_t)n <= len; n++) {
        double x = tight((double)len, (double)split, r, n, b), cost = n * (double)split + x;
        if (x < 0 || cost >= best)
            continue;
        best = cost;
        q = n;
        for (int i = 0; i < n; i++)
            keep[i] = b[i];
    }
    /* whole elements: round the running sum, at least one each */
    double run = 0;
    size_t done = 0;
    for (int i = 0; q > 1 && i < q; i++) {
        run += keep[i];
        size_t to = i == q - 1 ? len : (size_t)(run + 0.5);
        size_t min = done + 1, max = len - (size_t)(q - 1 - i);
        to = to < min ? min : to > max ? max : to;
        sz[i] = to - done;
        done = to;
    }
    return q;
}

int coll_xfer(ftm_sched *s, int route, size_t f, size_t len, size_t elem, ftm_red red,
              size_t split)
{
    if (red == FTM_RED_COPY || route < 0 || route >= s->nroutes) /* (a bad route: xfer says so) */
        return ftm_sched_xfer(s, route, f * elem, f * elem, len * elem, red);
    ftm_cost_params p = coll_cost(s->cost);
    size_t sz[COLL_PIECES_MAX];
    /* a piece costs a hop latency per link of its route (ring detours) */
    int hops = s->routes[route].nhops > 1 ? s->routes[route].nhops : 1, rc = 0;
    int q = coll_pieces(len, split * (size_t)hops, p.hbm_Bps / p.link_Bps, sz);
    for (int i = 0; i < q && !rc; i++) {
        rc = ftm_sched_xfer(s, route, f * elem, f * elem, sz[i] * elem, red);
        f += sz[i];
    }
    return rc;
}
