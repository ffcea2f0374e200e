/* Checkpoints: encode, decode, atomic save, load (see
 * include/ftmesh/checkpoint.h for the layout and the checksum). */
#include "ftmesh/checkpoint.h"
#include "ftmesh/error.h"
#include "ftmesh/file.h"
#include "core/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const unsigned char ck_magic_[8] = { 'F', 'T', 'M', 'C', 'K', 'P', 'T', 0 };
/* The header: magic, version, flags, total bytes, meta length. */
#define CK_HEAD (8 + 4 + 4 + 8 + 4)

uint32_t ftm_ckpt_crc32c(uint32_t crc, const void *data, size_t n)
{
    /* Table per call (1 KiB, 2048 steps): no shared state between threads. */
    uint32_t table[256];
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        table[i] = c;
    }
    const unsigned char *p = data;
    crc = ~crc;
    for (size_t i = 0; i < n; i++)
        crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return ~crc;
}

int ftm_ckpt_nmoments(int optim_kind)
{
    return optim_kind == FTM_OPTIM_SGD ? 1
         : optim_kind == FTM_OPTIM_ADAMW || optim_kind == FTM_OPTIM_LAMB ? 2 : 0;
}

static const char *ck_optim_name(int kind)
{
    return kind == FTM_OPTIM_SGD ? "sgd" : kind == FTM_OPTIM_ADAMW ? "adamw"
         : kind == FTM_OPTIM_LAMB ? "lamb" : "?";
}

/* A size of the model config in words: 0 means the model's default. */
static const char *ck_size(int v, char *b)
{
    if (v == 0)
        return "default";
    snprintf(b, 16, "%d", v);
    return b;
}

/* A probability of the model config: 0 means the default, < 0 none. */
static const char *ck_prob(float v, char *b)
{
    if (v == 0)
        return "default";
    if (v < 0)
        return "none";
    snprintf(b, 16, "%g", (double)v);
    return b;
}

/* The configuration in words ("resnet depth 8 ...; sgd lr 0.1 ...; batch 32
 * micro 4 float"); returns the length snprintf would write. */
static int ckpt_describe(const ftm_ckpt_meta *mt, char *buf, size_t len)
{
    const ftm_model_config *m = &mt->model;
    const ftm_optim_config *o = &mt->optim;
    char model[200], b[5][16];
    if (m->kind == FTM_MODEL_RESNET)
        snprintf(model, sizeof model, "resnet depth %d width %s image %s classes %s", m->depth,
                 ck_size(m->width, b[0]), ck_size(m->image, b[1]), ck_size(m->classes, b[2]));
    else
        snprintf(model, sizeof model, "bert layers %d heads %d hidden %s seq %s vocab %s "
                 "dropout %s mask %s", m->depth, m->heads, ck_size(m->hidden, b[0]),
                 ck_size(m->seq, b[1]), ck_size(m->vocab, b[2]), ck_prob(m->dropout, b[3]),
                 ck_prob(m->mask_prob, b[4]));
    return snprintf(buf, len, "%s seed %llu, %zu parameters; %s lr %g warmup %d momentum %g "
                    "wd %g betas %g/%g eps %g; batch %ld micro %d %s; data %s", model,
                    (unsigned long long)m->seed, mt->nparams, ck_optim_name(o->kind),
                    (double)o->lr, o->warmup, (double)o->momentum, (double)o->weight_decay,
                    (double)o->beta1, (double)o->beta2, (double)o->eps, mt->batch, mt->micro,
                    mt->exact ? "exact" : "float", mt->data_id ? "file" : "synthetic");
}

/* ---- little-endian writer and bounds-checked reader -------------------------------- */

/* p NULL: counts the bytes only (the encoder's first pass sizes the
 * buffer with the same calls that fill it). */
typedef struct ck_w {
    unsigned char *p;
    size_t pos;
} ck_w;

static void ck_u32(ck_w *w, uint32_t v)
{
    for (int i = 0; i < 4; i++, w->pos++)
        if (w->p)
            w->p[w->pos] = (unsigned char)(v >> (8 * i));
}

static void ck_u64(ck_w *w, uint64_t v)
{
    for (int i = 0; i < 8; i++, w->pos++)
        if (w->p)
            w->p[w->pos] = (unsigned char)(v >> (8 * i));
}

static void ck_bytes(ck_w *w, const void *b, size_t n)
{
    if (w->p && n)
        memcpy(w->p + w->pos, b, n);
    w->pos += n;
}

static void ck_f32(ck_w *w, float f)
{
    uint32_t v;
    memcpy(&v, &f, 4);
    ck_u32(w, v);
}

static void ck_f64(ck_w *w, double f)
{
    uint64_t v;
    memcpy(&v, &f, 8);
    ck_u64(w, v);
}

typedef struct ck_r {
    const unsigned char *p;
    size_t len, pos;
    int bad;               /* a read went past the end */
} ck_r;

static uint64_t ck_get(ck_r *r, int bytes)
{
    uint64_t v = 0;
    if (r->bad || r->len - r->pos < (size_t)bytes) {
        r->bad = 1;
        return 0;
    }
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)r->p[r->pos + (size_t)i] << (8 * i);
    r->pos += (size_t)bytes;
    return v;
}

static uint32_t ck_g32(ck_r *r) { return (uint32_t)ck_get(r, 4); }
static uint64_t ck_g64(ck_r *r) { return ck_get(r, 8); }

static float ck_gf32(ck_r *r)
{
    uint32_t v = ck_g32(r);
    float f;
    memcpy(&f, &v, 4);
    return f;
}

static double ck_gf64(ck_r *r)
{
    uint64_t v = ck_g64(r);
    double f;
    memcpy(&f, &v, 8);
    return f;
}

/* ---- encode ------------------------------------------------------------------------- */

/* The meta section (ck_meta_len bytes). */
static void ck_put_meta(ck_w *w, const ftm_ckpt_meta *mt)
{
    const ftm_model_config *m = &mt->model;
    const ftm_optim_config *o = &mt->optim;
    ck_u32(w, (uint32_t)m->kind);
    ck_u32(w, (uint32_t)m->depth);
    ck_u32(w, (uint32_t)m->heads);
    ck_u32(w, (uint32_t)m->width);
    ck_u32(w, (uint32_t)m->image);
    ck_u32(w, (uint32_t)m->classes);
    ck_u32(w, (uint32_t)m->hidden);
    ck_u32(w, (uint32_t)m->seq);
    ck_u32(w, (uint32_t)m->vocab);
    ck_f32(w, m->dropout);
    ck_f32(w, m->mask_prob);
    ck_u32(w, (uint32_t)o->kind);
    ck_f32(w, o->lr);
    ck_u32(w, (uint32_t)o->warmup);
    ck_f32(w, o->momentum);
    ck_f32(w, o->weight_decay);
    ck_f32(w, o->beta1);
    ck_f32(w, o->beta2);
    ck_f32(w, o->eps);
    ck_u32(w, (uint32_t)mt->micro);
    ck_u32(w, (uint32_t)mt->exact);
    ck_u64(w, m->seed);
    ck_u64(w, (uint64_t)mt->batch);
    ck_u64(w, mt->data_id);
    ck_u64(w, (uint64_t)mt->nparams);
}

/* The meta section's length, counted by writing one. */
static uint32_t ck_meta_len(void)
{
    ftm_ckpt_meta zero = { 0 };
    ck_w count = { NULL, 0 };
    ck_put_meta(&count, &zero);
    return (uint32_t)count.pos;
}

static int ck_state_fits(const ftm_ckpt_meta *mt, const ftm_ckpt_state *st)
{
    int nm = ftm_ckpt_nmoments(mt->optim.kind);
    if (nm == 0 || st->nmoments != nm || st->nparams != mt->nparams || st->nparams == 0 ||
        !st->params || st->step < 0 || mt->batch < 1 || mt->micro < 1 ||
        st->examples != (uint64_t)st->step * (uint64_t)mt->batch)
        return 0;
    for (int k = 0; k < nm; k++)
        if (!st->moment[k])
            return 0;
    long nc = (long)st->rows * st->cols;
    if (st->rows < 0 || st->cols < 0 || (st->rows == 0) != (st->cols == 0) ||
        nc > FTM_CKPT_MAX_CHIPS || (nc && (!st->chip_dead || !st->link_dead)) ||
        st->script_len > FTM_CKPT_MAX_SCRIPT || (st->script_len && !st->script))
        return 0;
    return st->nparams <= ((size_t)1 << 40);
}

/* The whole file but its checksum, total bytes long with it (0 while
 * counting). */
static void ck_put_file(ck_w *w, const ftm_ckpt_meta *mt, const ftm_ckpt_state *st,
                        const char *desc, size_t dn, size_t total)
{
    size_t nl = st->losses ? (size_t)st->step : 0, np = st->nparams;
    size_t nc = (size_t)st->rows * (size_t)st->cols;
    ck_bytes(w, ck_magic_, 8);
    ck_u32(w, FTM_CKPT_VERSION);
    ck_u32(w, 0);
    ck_u64(w, total);
    ck_u32(w, ck_meta_len());
    ck_put_meta(w, mt);
    ck_u32(w, (uint32_t)dn);
    ck_bytes(w, desc, dn);
    ck_u64(w, (uint64_t)st->step);
    ck_u64(w, st->examples);
    ck_u64(w, np);
    ck_u32(w, (uint32_t)st->nmoments);
    ck_u64(w, nl);
    for (size_t i = 0; i < np; i++)
        ck_f32(w, st->params[i]);
    for (int k = 0; k < st->nmoments; k++)
        for (size_t i = 0; i < np; i++)
            ck_f32(w, st->moment[k][i]);
    for (size_t i = 0; i < nl; i++)
        ck_f64(w, st->losses[i]);
    ck_u32(w, (uint32_t)st->rows);
    ck_u32(w, (uint32_t)st->cols);
    ck_u32(w, (uint32_t)st->torus);
    ck_bytes(w, st->chip_dead, nc);
    ck_bytes(w, st->link_dead, 4 * nc);
    ck_u32(w, (uint32_t)st->script_len);
    ck_bytes(w, st->script, st->script_len);
}

int ftm_ckpt_encode(const ftm_ckpt_meta *mt, const ftm_ckpt_state *st, unsigned char **buf,
                    size_t *len)
{
    *buf = NULL;
    *len = 0;
    if (!ck_state_fits(mt, st))
        return FTM_EINVAL;
    char desc[FTM_CKPT_DESC_MAX];
    int dl = ckpt_describe(mt, desc, sizeof desc);
    size_t dn = dl < 0 ? 0 : (size_t)dl >= sizeof desc ? sizeof desc - 1 : (size_t)dl;
    ck_w count = { NULL, 0 };
    ck_put_file(&count, mt, st, desc, dn, 0);
    size_t total = count.pos + 4; /* and the checksum */
    ck_w w = { malloc(total), 0 };
    if (!w.p)
        return FTM_ENOMEM;
    ck_put_file(&w, mt, st, desc, dn, total);
    ck_u32(&w, ftm_ckpt_crc32c(0, w.p, w.pos));
    *buf = w.p;
    *len = w.pos;
    return 0;
}

/* ---- atomic save ---------------------------------------------------------------------- */

static int ck_write_all(int fd, const unsigned char *p, size_t n)
{
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static const char *ck_write_tmp(int fd, const unsigned char *buf, size_t len)
{
    if (ck_write_all(fd, buf, len))
        return "write a temporary file next to it";
    if (fsync(fd))
        return "fsync a temporary file next to it";
    return NULL;
}

int ftm_ckpt_save(const char *path, const ftm_ckpt_meta *mt, const ftm_ckpt_state *st,
                  char *detail, size_t dlen)
{
    unsigned char *buf;
    size_t len;
    int rc = ftm_ckpt_encode(mt, st, &buf, &len);
    if (rc)
        return core_fail_detail(rc, detail, dlen, "%s", rc == FTM_EINVAL ? "the state does not fit its "
                       "configuration" : ftm_strerror(rc));
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        free(buf);
        return core_fail_detail(FTM_EINVAL, detail, dlen, "%s: not a regular file", path);
    }
    char *tmp;
    const char *what = NULL;
    int fd = ftm_file_tmp_open(path, &tmp);
    if (fd < 0 && errno == ENOMEM) {
        free(buf);
        return FTM_ENOMEM;
    }
    if (fd < 0) {
        what = "create a temporary file next to it";
    } else {
        what = ck_write_tmp(fd, buf, len);
        if (close(fd) && !what)
            what = "close a temporary file next to it";
        if (!what && rename(tmp, path))
            what = "rename the temporary file over it";
        if (what) {
            int e = errno;
            unlink(tmp);
            errno = e;
        } else if (ftm_file_sync_dir(path)) {
            what = "fsync its directory";
        }
    }
    if (what)
        rc = core_fail_detail(FTM_EIO, detail, dlen, "%s: cannot %s: %s", path, what, strerror(errno));
    free(tmp);
    free(buf);
    return rc;
}

/* ---- decode -------------------------------------------------------------------------- */

static void ck_get_meta(ck_r *r, ftm_ckpt_meta *mt)
{
    ftm_model_config *m = &mt->model;
    ftm_optim_config *o = &mt->optim;
    memset(mt, 0, sizeof *mt);
    m->kind = (int)ck_g32(r);
    m->depth = (int)ck_g32(r);
    m->heads = (int)ck_g32(r);
    m->width = (int)ck_g32(r);
    m->image = (int)ck_g32(r);
    m->classes = (int)ck_g32(r);
    m->hidden = (int)ck_g32(r);
    m->seq = (int)ck_g32(r);
    m->vocab = (int)ck_g32(r);
    m->dropout = ck_gf32(r);
    m->mask_prob = ck_gf32(r);
    o->kind = (int)ck_g32(r);
    o->lr = ck_gf32(r);
    o->warmup = (int)ck_g32(r);
    o->momentum = ck_gf32(r);
    o->weight_decay = ck_gf32(r);
    o->beta1 = ck_gf32(r);
    o->beta2 = ck_gf32(r);
    o->eps = ck_gf32(r);
    mt->micro = (int)ck_g32(r);
    mt->exact = (int)ck_g32(r);
    m->seed = ck_g64(r);
    mt->batch = (long)ck_g64(r);
    mt->data_id = ck_g64(r);
    mt->nparams = (size_t)ck_g64(r);
}

/* Sizes of the arrays, read after the description. */
typedef struct ck_layout {
    uint64_t step, examples, nparams, nlosses;
    uint32_t nmoments;
    uint32_t version;
    size_t data;           /* offset of params[0] */
    uint32_t rows, cols, torus, script_len; /* version 2: the mesh section */
    size_t mesh;           /* its offset (chip_dead[0]) */
} ck_layout;

/* Version 2: the mesh section after the arrays, to exactly `left` bytes. */
static int ck_parse_mesh(ck_r *r, ck_layout *l, uint64_t left, char *detail, size_t dlen)
{
    if (left < 16)
        return core_fail_detail(FTM_EFORMAT, detail, dlen, "array sizes do not match the file length");
    l->rows = ck_g32(r);
    l->cols = ck_g32(r);
    l->torus = ck_g32(r);
    uint64_t nc = (uint64_t)l->rows * l->cols;
    if ((l->rows == 0) != (l->cols == 0) || nc > FTM_CKPT_MAX_CHIPS || l->torus > 1 ||
        left - 16 < 5 * nc)
        return core_fail_detail(FTM_EFORMAT, detail, dlen, "bad mesh section");
    l->mesh = r->pos;
    for (uint64_t i = 0; i < 5 * nc; i++) /* a link's 2: dead, nobody noticed yet */
        if (r->p[r->pos + i] > (i < nc ? 1 : 2))
            return core_fail_detail(FTM_EFORMAT, detail, dlen,
                                    "bad mesh section: dead flags not 0 or 1 (2 for a link)");
    r->pos += 5 * nc;
    l->script_len = ck_g32(r);
    if (l->script_len > FTM_CKPT_MAX_SCRIPT || left - 16 - 5 * nc != l->script_len)
        return core_fail_detail(FTM_EFORMAT, detail, dlen, "bad mesh section: script of a bad length");
    return 0;
}

/* Layout and values, after the checksum passed. */
static int ck_parse(ck_r *r, ftm_ckpt_meta *mt, ck_layout *l, char *desc, char *detail, size_t dlen)
{
    r->pos = CK_HEAD - 4;
    if (ck_g32(r) != ck_meta_len())
        return core_fail_detail(FTM_EFORMAT, detail, dlen, "configuration section of the wrong size");
    ck_get_meta(r, mt);
    uint32_t dn = ck_g32(r);
    if (dn >= FTM_CKPT_DESC_MAX || r->bad || r->len - r->pos < dn)
        return core_fail_detail(FTM_EFORMAT, detail, dlen, "description of a bad length (%u)", dn);
    memcpy(desc, r->p + r->pos, dn);
    desc[dn] = 0;
    r->pos += dn;
    l->step = ck_g64(r);
    l->examples = ck_g64(r);
    l->nparams = ck_g64(r);
    l->nmoments = ck_g32(r);
    l->nlosses = ck_g64(r);
    l->data = r->pos;
    int nm = ftm_ckpt_nmoments(mt->optim.kind);
    if (r->bad || (mt->model.kind != FTM_MODEL_RESNET && mt->model.kind != FTM_MODEL_BERT) ||
        nm == 0 || l->nmoments != (uint32_t)nm || mt->batch < 1 || mt->batch > (1L << 30) ||
        mt->micro < 1)
        return core_fail_detail(FTM_EFORMAT, detail, dlen, "bad model, optimizer or batch in the header");
    if (l->nparams == 0 || l->nparams != (uint64_t)mt->nparams || l->step > (1ULL << 40) ||
        l->examples != l->step * (uint64_t)mt->batch || (l->nlosses && l->nlosses != l->step))
        return core_fail_detail(FTM_EFORMAT, detail, dlen, "inconsistent step, data position or sizes");
    /* What is left must be exactly the arrays and the checksum. */
    if (r->len - r->pos < 4)
        return core_fail_detail(FTM_EFORMAT, detail, dlen, "array sizes do not match the file length");
    uint64_t left = r->len - r->pos - 4, per = 4 * (1 + (uint64_t)nm);
    if (l->nparams > left / per || l->nlosses > (left - l->nparams * per) / 8 ||
        (l->version == 1 && l->nparams * per + l->nlosses * 8 != left))
        return core_fail_detail(FTM_EFORMAT, detail, dlen, "array sizes do not match the file length");
    if (l->version == 1)
        return 0;
    left -= l->nparams * per + l->nlosses * 8;
    r->pos += (size_t)(l->nparams * per + l->nlosses * 8);
    return ck_parse_mesh(r, l, left, detail, dlen);
}

static int ck_fill(ck_r *r, const ck_layout *l, ftm_ckpt_state *st)
{
    size_t np = (size_t)l->nparams;
    st->params = malloc(sizeof(float) * np);
    for (uint32_t k = 0; k < l->nmoments; k++)
        st->moment[k] = malloc(sizeof(float) * np);
    st->losses = l->nlosses ? malloc(sizeof(double) * (size_t)l->nlosses) : NULL;
    if (!st->params || !st->moment[0] || (l->nmoments > 1 && !st->moment[1]) ||
        (l->nlosses && !st->losses)) {
        ftm_ckpt_state_free(st);
        return FTM_ENOMEM;
    }
    st->step = (long)l->step;
    st->examples = l->examples;
    st->nparams = np;
    st->nmoments = (int)l->nmoments;
    r->pos = l->data;
    for (size_t i = 0; i < np; i++)
        st->params[i] = ck_gf32(r);
    for (uint32_t k = 0; k < l->nmoments; k++)
        for (size_t i = 0; i < np; i++)
            st->moment[k][i] = ck_gf32(r);
    for (uint64_t i = 0; i < l->nlosses; i++)
        st->losses[i] = ck_gf64(r);
    size_t nc = (size_t)l->rows * l->cols;
    if (l->version == 1 || (!nc && !l->script_len))
        return 0;
    st->chip_dead = nc ? malloc(5 * nc) : NULL;
    st->script = malloc((size_t)l->script_len + 1);
    if ((nc && !st->chip_dead) || !st->script) {
        ftm_ckpt_state_free(st);
        return FTM_ENOMEM;
    }
    st->rows = (int)l->rows;
    st->cols = (int)l->cols;
    st->torus = (int)l->torus;
    if (nc) {
        memcpy(st->chip_dead, r->p + l->mesh, 5 * nc);
        st->link_dead = st->chip_dead + nc;
    }
    memcpy(st->script, r->p + l->mesh + 5 * nc + 4, l->script_len);
    st->script[l->script_len] = 0;
    st->script_len = l->script_len;
    return 0;
}

/* Magic, version, flags, total length and checksum. */
static int ck_envelope(const unsigned char *p, size_t len, uint32_t *vers, char *detail,
                       size_t dlen)
{
    if (len < 8 || memcmp(p, ck_magic_, 8))
        return core_fail_detail(FTM_EFORMAT, detail, dlen, "not an ftmesh checkpoint (%s)",
                       len < 8 ? "too short" : "no FTMCKPT magic at the start");
    ck_r r = { p, len, 8, 0 };
    uint32_t version = ck_g32(&r), flags = ck_g32(&r);
    uint64_t total = ck_g64(&r);
    if (r.bad)
        return core_fail_detail(FTM_EFORMAT, detail, dlen, "truncated: %zu bytes, not even a header", len);
    if (version < 1 || version > FTM_CKPT_VERSION || flags)
        return core_fail_detail(FTM_EFORMAT, detail, dlen, "format version %u (flags %u); this ftmesh "
                       "reads versions 1 to %d", version, flags, FTM_CKPT_VERSION);
    *vers = version;
    if (total != len)
        return core_fail_detail(FTM_EFORMAT, detail, dlen, "%s: %zu bytes, the header says %llu",
                       len < total ? "truncated" : "wrong length", len, (unsigned long long)total);
    if (len < CK_HEAD + ck_meta_len() + 4)
        return core_fail_detail(FTM_EFORMAT, detail, dlen, "truncated: %zu bytes", len);
    r.pos = len - 4;
    uint32_t want = ck_g32(&r), got = ftm_ckpt_crc32c(0, p, len - 4);
    if (want != got)
        return core_fail_detail(FTM_ECORRUPT, detail, dlen, "damaged: CRC-32C is %08x, the file says %08x",
                       got, want);
    return 0;
}

int ftm_ckpt_decode(const void *buf, size_t len, const ftm_ckpt_meta *expect,
                    ftm_ckpt_meta *meta, ftm_ckpt_state *st, char *detail, size_t dlen)
{
    memset(st, 0, sizeof *st);
    ck_layout l = { 0 };
    int rc = ck_envelope(buf, len, &l.version, detail, dlen);
    if (rc)
        return rc;
    ck_r r = { buf, len, 0, 0 };
    ftm_ckpt_meta mt;
    char desc[FTM_CKPT_DESC_MAX];
    if ((rc = ck_parse(&r, &mt, &l, desc, detail, dlen)))
        return rc;
    if (expect && (rc = ftm_ckpt_match(&mt, expect, detail, dlen)))
        return rc;
    if ((rc = ck_fill(&r, &l, st)))
        return core_fail_detail(rc, detail, dlen, "%s", ftm_strerror(rc));
    memcpy(st->desc, desc, sizeof desc);
    if (meta)
        *meta = mt;
    return 0;
}

/* ---- match, load, free ------------------------------------------------------------------ */

#define CK_SAME(field, what)                                                         \
    if (a->field != b->field)                                                         \
        return core_fail_detail(FTM_ECONFIG, detail, dlen, "made for another %s: %s %g in the " \
                       "checkpoint, %g in this run", what, #field, (double)a->field,  \
                       (double)b->field)

int ftm_ckpt_match(const ftm_ckpt_meta *a, const ftm_ckpt_meta *b, char *detail, size_t dlen)
{
    if (a->model.kind != b->model.kind)
        return core_fail_detail(FTM_ECONFIG, detail, dlen, "made for another model: %s, this run trains %s",
                       a->model.kind == FTM_MODEL_RESNET ? "resnet" : "bert",
                       b->model.kind == FTM_MODEL_RESNET ? "resnet" : "bert");
    CK_SAME(model.depth, "model"); CK_SAME(model.heads, "model"); CK_SAME(model.width, "model");
    CK_SAME(model.image, "model"); CK_SAME(model.classes, "model");
    CK_SAME(model.hidden, "model"); CK_SAME(model.seq, "model"); CK_SAME(model.vocab, "model");
    CK_SAME(model.dropout, "model"); CK_SAME(model.mask_prob, "model");
    CK_SAME(model.seed, "seed");
    CK_SAME(nparams, "model size");
    if (a->optim.kind != b->optim.kind)
        return core_fail_detail(FTM_ECONFIG, detail, dlen, "made for another optimizer: %s, this run uses %s",
                       ck_optim_name(a->optim.kind), ck_optim_name(b->optim.kind));
    CK_SAME(optim.lr, "optimizer"); CK_SAME(optim.warmup, "optimizer");
    CK_SAME(optim.momentum, "optimizer"); CK_SAME(optim.weight_decay, "optimizer");
    CK_SAME(optim.beta1, "optimizer"); CK_SAME(optim.beta2, "optimizer");
    CK_SAME(optim.eps, "optimizer");
    CK_SAME(batch, "batch"); CK_SAME(micro, "micro-batch");
    if (a->exact != b->exact)
        return core_fail_detail(FTM_ECONFIG, detail, dlen, "made for another reduce mode: %s in the "
                       "checkpoint, %s in this run", a->exact ? "exact" : "float",
                       b->exact ? "exact" : "float");
    if (a->data_id != b->data_id)
        return core_fail_detail(FTM_ECONFIG, detail, dlen, "made for another dataset: %s in the "
                       "checkpoint, %s in this run (give the --data or --corpus it was made with)",
                       a->data_id ? "a file's" : "synthetic data",
                       b->data_id ? (a->data_id ? "another file's" : "a file's") : "synthetic data");
    return 0;
}
#undef CK_SAME

int ftm_ckpt_load(const char *path, const ftm_ckpt_meta *expect, ftm_ckpt_meta *meta,
                  ftm_ckpt_state *st, char *detail, size_t dlen)
{
    memset(st, 0, sizeof *st);
    int fd = open(path, O_RDONLY);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb)) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return core_fail_detail(FTM_EIO, detail, dlen, "cannot open: %s", strerror(e));
    }
    size_t len = (size_t)sb.st_size, got = 0;
    unsigned char *buf = malloc(len ? len : 1);
    int rc = buf ? 0 : core_fail_detail(FTM_ENOMEM, detail, dlen, "%zu bytes: %s", len, ftm_strerror(FTM_ENOMEM));
    while (!rc && got < len) {
        ssize_t k = read(fd, buf + got, len - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            rc = core_fail_detail(FTM_EIO, detail, dlen, "read error: %s", k ? strerror(errno) : "file shrank");
        else
            got += (size_t)k;
    }
    close(fd);
    if (!rc)
        rc = ftm_ckpt_decode(buf, len, expect, meta, st, detail, dlen);
    free(buf);
    return rc;
}

void ftm_ckpt_state_free(ftm_ckpt_state *st)
{
    free(st->params);
    free(st->moment[0]);
    free(st->moment[1]);
    free(st->losses);
    free(st->chip_dead);
    free(st->script);
    st->params = st->moment[0] = st->moment[1] = NULL;
    st->losses = NULL;
    st->chip_dead = st->link_dead = NULL;
    st->script = NULL;
    st->script_len = 0;
}
