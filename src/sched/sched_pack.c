/* Packed programs (sched.h: ftm_sched_ctx.packed).
 *
 * A chip's program is one byte string of step headers and ops. The first
 * byte tells them apart (bit 0: 1 header, 0 op).
 *
 *   header: 1 | same << 1 [phase id, index as varints unless same]
 *           same: the phase of the previous header, its index + 1
 *   op:     0 | kind << 1 | lane << 2 | red << 3 | len_same << 5 |
 *           route_same << 6 | on_stride << 7, then unless on_stride the
 *           offset's and the tag's differences from their predictions
 *           (zigzag varints), the length (varint, unless the slot's), the
 *           route's difference from the slot's (unless the same)
 *
 * The prediction of op k of a step is op k of the previous step (its
 * slot, sched_codec) moved on by the same offset and tag strides: a
 * ring's steps send the next block over the same route, so most ops are
 * the flag byte alone. The peer is the route's other end. A ring step
 * (header, receive, send) takes about 4 bytes instead of 72 (a step
 * record and two ops).
 */
#include "ftmesh/sched.h"
#include "ftmesh/error.h"
#include "sched_int.h"
#include "sched_lib.h"
#include "sched_code.h"

#include <stdlib.h>
#include <string.h>

enum { H_STEP = 1, H_SAME = 2, O_KIND = 2, O_LANE = 4, O_RED_SHIFT = 3, O_LEN_SAME = 32,
       O_ROUTE_SAME = 64, O_ON_STRIDE = 128, MAX_OP_BYTES = 1 + 10 + 10 + 10 + 10, MAX_HDR_BYTES = 1 + 5 + 5 };

static int put_varint(unsigned char *b, uint64_t v)
{
    int n = 0;
    while (v >= 0x80) {
        b[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    b[n++] = (unsigned char)v;
    return n;
}

static uint64_t zigzag(int64_t d)
{
    return ((uint64_t)d << 1) ^ (uint64_t)(d >> 63);
}

static int64_t unzigzag(uint64_t u)
{
    return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

/* Reads a varint at *pos of code[0 .. n); FTM_EINVAL past the end. */
static int get_varint(const unsigned char *code, size_t n, size_t *pos, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*pos >= n)
            return FTM_EINVAL;
        unsigned char b = code[(*pos)++];
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return FTM_EINVAL;
}

/* Appends len bytes to chip's program (a dry schedule only counts them). */
static int emit(const ftm_sched *s, ftm_chip_prog *p, const unsigned char *b, int len)
{
    if (SCHED_CODE(p)->ncode + (size_t)len > SCHED_CODE(p)->cap_code) {
        int rc = sched_pack_grow(s, p, SCHED_CODE(p)->ncode + (size_t)len, 0);
        if (rc)
            return rc;
    }
    if (!s->dry) /* a few bytes: a loop, not a call */
        for (int i = 0; i < len; i++)
            SCHED_CODE(p)->code[SCHED_CODE(p)->ncode + (size_t)i] = b[i];
    SCHED_CODE(p)->ncode += (size_t)len;
    return 0;
}

/* The id of phase in s's table (added if new). */
static int phase_id(ftm_sched *s, const char *phase)
{
    for (int i = s->nphases - 1; i >= 0; i--)
        if (s->phases[i] == phase)
            return i;
    if (s->nphases == s->cap_phases) {
        int nc = s->cap_phases ? 2 * s->cap_phases : 8;
        if (sched_room(s, sizeof *s->phases * (size_t)(nc - s->cap_phases)))
            return FTM_ENOMEM;
        const char **q = realloc(s->phases, sizeof *q * (size_t)nc);
        if (!q)
            return FTM_ENOMEM;
        sched_acct(s, sizeof *q * (size_t)(nc - s->cap_phases), 0);
        s->phases = q;
        s->cap_phases = nc;
    }
    s->phases[s->nphases] = phase;
    return s->nphases++;
}

int sched_pack_step(ftm_sched *s, int chip, const char *phase, int index)
{
    ftm_chip_prog *p = &s->prog[chip];
    int id = phase_id(s, phase);
    if (id < 0)
        return id;
    unsigned char b[MAX_HDR_BYTES];
    int n = 1;
    if (p->nsteps > 0 && id == SCHED_CODE(p)->enc.phase && index == SCHED_CODE(p)->enc.index + 1) {
        b[0] = H_STEP | H_SAME;
    } else {
        b[0] = H_STEP;
        n += put_varint(b + n, (uint64_t)id);
        n += put_varint(b + n, (uint64_t)(uint32_t)index);
    }
    int rc = emit(s, p, b, n);
    if (rc)
        return rc;
    SCHED_CODE(p)->enc.phase = id;
    SCHED_CODE(p)->enc.index = index;
    SCHED_CODE(p)->enc.at[0] = SCHED_CODE(p)->enc.at[1] = 0;
    p->nsteps++;
    SCHED_CODE(p)->cur_nops = 0;
    return 0;
}

/* The slot op k of lane's step is predicted from (and then becomes). */
static sched_slot *slot_of(sched_codec *c, int lane)
{
    int k = c->at[lane]++;
    return &c->slot[lane][k < SCHED_SLOTS ? k : SCHED_SLOTS - 1];
}

/* Moves slot q on to op's values. */
static void slot_set(sched_slot *q, uint64_t off, uint64_t len, uint32_t route, uint32_t tag)
{
    q->doff = (int64_t)(off - q->off);
    q->dtag = (int32_t)(tag - q->tag);
    q->off = off;
    q->len = len;
    q->route = route;
    q->tag = tag;
}

/* Encodes op into b with the running values c (updated); returns its size. */
static int encode_op(sched_codec *c, const ftm_op *op, int lane, unsigned char *b)
{
    sched_slot *q = slot_of(c, lane);
    uint64_t off = (uint64_t)op->off, len = (uint64_t)op->len;
    uint32_t route = (uint32_t)op->route, tag = op->tag;
    int64_t roff = (int64_t)(off - (q->off + (uint64_t)q->doff));
    int32_t rtag = (int32_t)(tag - (q->tag + (uint32_t)q->dtag));
    int len_same = len == q->len, route_same = route == q->route, on = !roff && !rtag, n = 1;
    b[0] = (unsigned char)((op->kind ? O_KIND : 0) | (lane ? O_LANE : 0) |
                           (op->red << O_RED_SHIFT) | (len_same ? O_LEN_SAME : 0) |
                           (route_same ? O_ROUTE_SAME : 0) | (on ? O_ON_STRIDE : 0));
    if (!on) {
        n += put_varint(b + n, zigzag(roff));
        n += put_varint(b + n, zigzag(rtag));
    }
    if (!len_same)
        n += put_varint(b + n, len);
    if (!route_same)
        n += put_varint(b + n, zigzag((int64_t)route - (int64_t)q->route));
    slot_set(q, off, len, route, tag);
    return n;
}

int sched_pack_op(ftm_sched *s, int chip, const ftm_op *op, int lane)
{
    ftm_chip_prog *p = &s->prog[chip];
    unsigned char b[MAX_OP_BYTES];
    int n = encode_op(&SCHED_CODE(p)->enc, op, lane ? 1 : 0, b);
    int rc = emit(s, p, b, n);
    if (rc)
        return rc;
    SCHED_CODE(p)->code_used = SCHED_CODE(p)->ncode;
    p->dry_used = p->nsteps;
    SCHED_CODE(p)->used_phase = SCHED_CODE(p)->enc.phase;
    SCHED_CODE(p)->used_index = SCHED_CODE(p)->enc.index;
    SCHED_CODE(p)->used_at[0] = SCHED_CODE(p)->enc.at[0];
    SCHED_CODE(p)->used_at[1] = SCHED_CODE(p)->enc.at[1];
    SCHED_CODE(p)->cur_nops++;
    return 0;
}

/* Drops the empty steps after the last op (their headers) and the unused
 * room; the encoder goes back to the last kept header. */
void sched_pack_trim(const ftm_sched *s, ftm_chip_prog *p)
{
    p->nsteps = p->dry_used;
    SCHED_CODE(p)->ncode = SCHED_CODE(p)->code_used;
    SCHED_CODE(p)->enc.phase = SCHED_CODE(p)->used_phase;
    SCHED_CODE(p)->enc.index = SCHED_CODE(p)->used_index;
    SCHED_CODE(p)->enc.at[0] = SCHED_CODE(p)->used_at[0];
    SCHED_CODE(p)->enc.at[1] = SCHED_CODE(p)->used_at[1];
    if (SCHED_CODE(p)->ncode < SCHED_CODE(p)->cap_code)
        (void)sched_pack_grow(s, p, SCHED_CODE(p)->ncode, 1);
}

/* Decodes one op at cur (its first byte b0 already read). */
static int decode_op(const ftm_sched *s, const ftm_chip_prog *p, ftm_sched_cur *cur, int b0,
                     ftm_op *op)
{
    int lane = (b0 & O_LANE) ? 1 : 0, rc = 0;
    sched_slot *q = slot_of(&SCHED_DEC(cur)->dec, lane);
    uint64_t off = q->off + (uint64_t)q->doff, len = q->len, v = 0, w = 0;
    uint32_t route = q->route, tag = q->tag + (uint32_t)q->dtag;
    if (!(b0 & O_ON_STRIDE) && !(rc = get_varint(SCHED_CODE(p)->code, SCHED_CODE(p)->ncode, &SCHED_DEC(cur)->pos, &v)) &&
        !(rc = get_varint(SCHED_CODE(p)->code, SCHED_CODE(p)->ncode, &SCHED_DEC(cur)->pos, &w))) {
        off += (uint64_t)unzigzag(v);
        tag += (uint32_t)unzigzag(w);
    }
    if (!rc && !(b0 & O_LEN_SAME))
        rc = get_varint(SCHED_CODE(p)->code, SCHED_CODE(p)->ncode, &SCHED_DEC(cur)->pos, &len);
    if (!rc && !(b0 & O_ROUTE_SAME) && !(rc = get_varint(SCHED_CODE(p)->code, SCHED_CODE(p)->ncode, &SCHED_DEC(cur)->pos, &v)))
        route = (uint32_t)((int64_t)route + unzigzag(v));
    if (rc || route >= (uint32_t)s->nroutes)
        return FTM_EINVAL;
    slot_set(q, off, len, route, tag);
    int k = (b0 & O_KIND) ? 1 : 0;
    const ftm_route *r = &s->routes[route];
    *op = (ftm_op){ .off = off, .peer = (unsigned)(k ? r->src : r->dst), .len = len,
                    .route = route, .tag = tag, .kind = (uint8_t)k,
                    .red = (uint8_t)((b0 >> O_RED_SHIFT) & 3) };
    return 0;
}

/* Reads the step header at cur into v. */
static int decode_header(const ftm_sched *s, const ftm_chip_prog *p, ftm_sched_cur *cur,
                         ftm_sched_view *v)
{
    if (SCHED_DEC(cur)->pos >= SCHED_CODE(p)->ncode || !(SCHED_CODE(p)->code[SCHED_DEC(cur)->pos] & H_STEP))
        return FTM_EINVAL;
    int b0 = SCHED_CODE(p)->code[SCHED_DEC(cur)->pos++];
    sched_codec *c = &SCHED_DEC(cur)->dec;
    if (b0 & H_SAME) {
        c->index++;
    } else {
        uint64_t id, ix;
        if (get_varint(SCHED_CODE(p)->code, SCHED_CODE(p)->ncode, &SCHED_DEC(cur)->pos, &id) ||
            get_varint(SCHED_CODE(p)->code, SCHED_CODE(p)->ncode, &SCHED_DEC(cur)->pos, &ix) || id >= (uint64_t)s->nphases)
            return FTM_EINVAL;
        c->phase = (int)id;
        c->index = (int)(uint32_t)ix;
    }
    v->phase = s->phases[c->phase];
    v->index = c->index;
    c->at[0] = c->at[1] = 0;
    return 0;
}

static int view_room(ftm_sched_view *v, int n)
{
    if (n <= v->cap)
        return 0;
    int nc = v->cap ? 2 * v->cap : 16;
    ftm_op *q = realloc(v->buf, sizeof *q * (size_t)nc);
    if (!q)
        return FTM_ENOMEM;
    v->buf = q;
    v->cap = nc;
    return 0;
}

static int read_packed(const ftm_sched *s, const ftm_chip_prog *p, ftm_sched_cur *cur,
                       ftm_sched_view *v)
{
    int rc = decode_header(s, p, cur, v), n = 0;
    while (!rc && SCHED_DEC(cur)->pos < SCHED_CODE(p)->ncode && !(SCHED_CODE(p)->code[SCHED_DEC(cur)->pos] & H_STEP)) {
        int b0 = SCHED_CODE(p)->code[SCHED_DEC(cur)->pos++];
        if (!(rc = view_room(v, n + 1)))
            rc = decode_op(s, p, cur, b0, &v->buf[n++]);
    }
    v->ops = v->buf;
    v->nops = n;
    return rc;
}

int ftm_sched_read_step(const ftm_sched *s, int chip, ftm_sched_cur *cur, ftm_sched_view *v)
{
    if (chip < 0 || chip >= s->nchips)
        return FTM_EINVAL;
    const ftm_chip_prog *p = &s->prog[chip];
    if (cur->step >= p->nsteps)
        return 0;
    if (s->dry)
        return FTM_EINVAL; /* nothing stored */
    if (s->packed) {
        int rc = read_packed(s, p, cur, v);
        if (rc)
            return rc;
    } else {
        const ftm_step *st = &p->steps[cur->step];
        v->ops = p->ops + st->first_op;
        v->nops = st->nops;
        v->phase = st->phase;
        v->index = st->index;
    }
    cur->step++;
    return 1;
}

const void *ftm_sched_code_at(const ftm_sched *s, int chip, const ftm_sched_cur *cur)
{
    if (!s->packed)
        return NULL;
    return SCHED_CODE(&s->prog[chip])->code + ((const sched_dec *)(const void *)cur->state)->pos;
}

void ftm_sched_view_free(ftm_sched_view *v)
{
    free(v->buf);
    memset(v, 0, sizeof *v);
}

/* Packed programs: SCHED_CODE(p)->code holds at least need bytes (exact: exactly
 * need, else doubled). A dry schedule only counts the capacity. */
int sched_pack_grow(const ftm_sched *s, ftm_chip_prog *p, size_t need, int exact)
{
    if (!exact && need <= SCHED_CODE(p)->cap_code)
        return 0;
    size_t nc = need;
    if (!exact) {
        nc = SCHED_CODE(p)->cap_code ? SCHED_CODE(p)->cap_code : 64;
        while (nc < need)
            nc *= 2;
    }
    if (nc > SCHED_CODE(p)->cap_code && sched_room(s, nc - SCHED_CODE(p)->cap_code))
        return FTM_ENOMEM;
    if (!s->dry) {
        unsigned char *q = realloc(SCHED_CODE(p)->code, nc ? nc : 1);
        if (!q)
            return FTM_ENOMEM;
        SCHED_CODE(p)->code = q;
    }
    sched_acct(s, nc > SCHED_CODE(p)->cap_code ? nc - SCHED_CODE(p)->cap_code : 0, nc < SCHED_CODE(p)->cap_code ? SCHED_CODE(p)->cap_code - nc : 0);
    SCHED_CODE(p)->cap_code = nc;
    return 0;
}

int sched_reserve_code(ftm_sched *s, int chip, size_t bytes)
{
    if (chip < 0 || chip >= s->nchips)
        return FTM_EINVAL;
    ftm_chip_prog *p = &s->prog[chip];
    if (!s->packed || SCHED_CODE(p)->ncode + bytes <= SCHED_CODE(p)->cap_code)
        return 0;
    int rc = sched_pack_grow(s, p, SCHED_CODE(p)->ncode + bytes, 1);
    if (!rc && s->dry) /* a dry run counts the room as used (an upper bound) */
        SCHED_CODE(p)->ncode = SCHED_CODE(p)->code_used = SCHED_CODE(p)->cap_code;
    return rc;
}
