/* Reducing transfers in pieces (pieces.h).
 *
 * The cost model ends a receive that sums len/HBM after its last byte
 * arrives, and a chip's step when its last receive ends, so every step
 * that sums pays its reduction after its transfers. Sent as q pieces back
 * to back over the same route in the same step, each piece's reduction
 * overlaps the next piece's transfer and only the last one's,
 * len/(q HBM), is left, for q - 1 more hop latencies: q pieces beat q - 1
 * while len/HBM (1/(q-1) - 1/q) > hop, that is len > q (q - 1) hop HBM
 * (TPU-v3 defaults: two pieces above 1.8 MB, three above 5.4 MB, four
 * above 10.8 MB). Measured on the healthy 32x32 torus at BERT-large size
 * (`2d-lines`, 10.6 MB row transfers): 7.27 ms in one piece, 7.12 in
 * two, 7.09 in three (the rule's), 7.09 in four, 7.12 in six; 6.89 with
 * reductions free. */
#include "pieces.h"
#include "ftmesh/costmodel.h"
#include "keep.h"

size_t coll_pieces_split(const ftm_cost_params *cost, size_t elem)
{
    ftm_cost_params p = coll_cost(cost);
    return (size_t)(2 * p.hop_s * p.hbm_Bps / (double)elem);
}

int coll_pieces(size_t len, size_t split)
{
    int q = 1;
    while (split && q < COLL_PIECES_MAX && (size_t)q < len &&
           (double)(q + 1) * q / 2 * (double)split < (double)len)
        q++;
    return q;
}

int coll_xfer(ftm_sched *s, int route, size_t f, size_t len, size_t elem, ftm_red red,
              size_t split)
{
    int q = red == FTM_RED_COPY ? 1 : coll_pieces(len, split), rc = 0;
    for (int i = 0; i < q && !rc; i++) {
        size_t pf, pn;
        ftm_sched_block(len, q, i, &pf, &pn);
        rc = ftm_sched_xfer(s, route, (f + pf) * elem, (f + pf) * elem, pn * elem, red);
    }
    return rc;
}
