/* Data for the models: deterministic synthetic sets (a pure function of
 * (seed, example id)), CIFAR-10 binary batches and a plain-text corpus with
 * a word tokenizer built on the fly. A loaded dataset is read-only. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "ftmesh/error.h"
#include "ftmesh/model.h"
#include "ftmesh/rng.h"

enum { DS_CIFAR = 1, DS_CORPUS = 2 };
#define CIFAR_REC 3073

typedef struct word { char *s; long count; int id; } word;

struct ftm_dataset {
    int kind;
    long n;                    /* images, or corpus tokens */
    unsigned char *labels, *pixels;
    int *ids;
    word *words;               /* hash table (corpus) */
    size_t cap, nwords;
};

static uint64_t rnd(uint64_t seed, uint64_t id, uint64_t what, uint64_t e)
{
    return ftm_rng_u64(seed, FTM_RNG_DATA, id, what, e);
}

static float unif(uint64_t seed, uint64_t id, uint64_t what, uint64_t e)
{
    return (float)(rnd(seed, id, what, e) >> 40) * (1.0f / 16777216.0f);
}

long ftm_data_size(const ftm_dataset *d) { return d ? d->n : 0; }

/* FNV-1a, 64-bit (Fowler, Noll and Vo): a fingerprint, not a secure hash. */
static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

uint64_t ftm_data_fingerprint(const ftm_dataset *d)
{
    if (!d)
        return 0;
    uint64_t h = fnv1a(0xcbf29ce484222325ULL, &d->kind, sizeof d->kind);
    size_t n = (size_t)d->n;
    h = fnv1a(h, &d->n, sizeof d->n);
    if (d->labels)
        h = fnv1a(h, d->labels, n);
    if (d->pixels)
        h = fnv1a(h, d->pixels, n * 3072);
    if (d->ids)
        h = fnv1a(h, d->ids, n * sizeof *d->ids);
    return h ? h : 1;
}

void ftm_data_free(ftm_dataset *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->cap; i++)
        free(d->words ? d->words[i].s : NULL);
    free(d->words); free(d->labels); free(d->pixels); free(d->ids);
    free(d);
}

/* ---- images ---- */

/* A one-line reason for the caller (the loaders print nothing). */
static int fail(int err, char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(int err, char *why, size_t len, const char *fmt, ...)
{
    if (why && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, len, fmt, ap);
        va_end(ap);
    }
    return err;
}

/* Appends the records of one batch file. */
static int cifar_file(ftm_dataset *d, FILE *f, const char *path, size_t *cap, char *why,
                      size_t len)
{
    unsigned char rec[CIFAR_REC];
    long k = 0;
    for (;; k++) {
        size_t got = fread(rec, 1, CIFAR_REC, f);
        if (got == 0 && ferror(f))
            return fail(FTM_EIO, why, len, "CIFAR batch %s: %s", path, strerror(errno));
        if (got == 0)
            break;
        if (got < CIFAR_REC)
            return fail(FTM_EFORMAT, why, len, "CIFAR batch %s: record %ld is %zu bytes, want %d",
                        path, k, got, CIFAR_REC);
        if (rec[0] >= FTM_DATA_CIFAR_CLASSES)
            return fail(FTM_EFORMAT, why, len, "CIFAR batch %s: record %ld: label %d out of range 0..%d",
                        path, k, rec[0], FTM_DATA_CIFAR_CLASSES - 1);
        if ((size_t)d->n == *cap) {
            size_t c = *cap ? *cap * 2 : 1024;
            unsigned char *l = realloc(d->labels, c);
            if (l)
                d->labels = l;
            unsigned char *p = l ? realloc(d->pixels, c * 3072) : NULL;
            if (!p)
                return FTM_ENOMEM;
            d->pixels = p;
            *cap = c;
        }
        d->labels[d->n] = rec[0];
        memcpy(d->pixels + (size_t)d->n * 3072, rec + 1, 3072);
        d->n++;
    }
    if (k == 0)
        return fail(FTM_EFORMAT, why, len, "CIFAR batch %s: empty", path);
    return 0;
}

int ftm_data_load_cifar(ftm_dataset **out, const char *dir, char *why, size_t len)
{
    *out = NULL;
    struct stat st;
    if (stat(dir, &st))
        return fail(FTM_EIO, why, len, "%s", strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return fail(FTM_EIO, why, len, "not a directory");
    ftm_dataset *d = calloc(1, sizeof *d);
    if (!d)
        return FTM_ENOMEM;
    d->kind = DS_CIFAR;
    size_t cap = 0;
    int rc = 0;
    for (int b = 1; b <= 5 && !rc; b++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/data_batch_%d.bin", dir, b);
        FILE *f = fopen(path, "rb");
        if (!f && errno == ENOENT && b == 1)
            rc = fail(FTM_EIO, why, len, "no data_batch_1.bin in it");
        else if (!f && errno != ENOENT)
            rc = fail(FTM_EIO, why, len, "%s: %s", path, strerror(errno));
        if (!f)
            continue;
        rc = cifar_file(d, f, path, &cap, why, len);
        fclose(f);
    }
    if (rc) {
        ftm_data_free(d);
        return rc;
    }
    *out = d;
    return 0;
}

int ftm_data_image(const ftm_dataset *d, uint64_t seed, uint64_t id, int S,
                   float *img, int *label)
{
    if (d && d->kind == DS_CIFAR) {
        static const float mean[3] = {0.4914f, 0.4822f, 0.4465f};
        static const float sd[3] = {0.2470f, 0.2435f, 0.2616f};
        if (S != 32)
            return FTM_EINVAL;
        long k = (long)(id % (uint64_t)d->n);
        int flip = (int)(rnd(seed, id, 3, 0) & 1);
        const unsigned char *px = d->pixels + (size_t)k * 3072;
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < 32; y++)
                for (int x = 0; x < 32; x++) {
                    int sx = flip ? 31 - x : x;
                    img[(c * 32 + y) * 32 + x] =
                        (px[(c * 32 + y) * 32 + sx] / 255.0f - mean[c]) / sd[c];
                }
        *label = d->labels[k];
        return 0;
    }
    if (d)
        return FTM_EINVAL;
    return ftm_data_synth_image(seed, id, S, 10, img, label);
}

int ftm_data_synth_image(uint64_t seed, uint64_t id, int S, int classes,
                         float *img, int *label)
{
    if (S < 1 || classes < 1)
        return FTM_EINVAL;
    /* Class c of K = a grating at angle pi*c/K with a class colour, random
     * phase and frequency jitter, plus uniform noise. */
    const int K = classes;
    int c = (int)(rnd(seed, id, 0, 0) % (uint64_t)K);
    float th = 3.14159265f * (float)c / (float)K;
    float fr = 2.0f + 2.0f * unif(seed, id, 1, 0), ph = 6.2831853f * unif(seed, id, 1, 1);
    float cx = cosf(th) * fr * 6.2831853f / (float)S, cy = sinf(th) * fr * 6.2831853f / (float)S;
    for (int ch = 0; ch < 3; ch++) {
        float w = 0.4f + 0.6f * cosf(6.2831853f * ((float)c / (float)K + (float)ch / 3.0f));
        for (int y = 0; y < S; y++)
            for (int x = 0; x < S; x++) {
                size_t e = ((size_t)ch * S + y) * S + x;
                img[e] = w * sinf(cx * x + cy * y + ph) + (unif(seed, id, 2, e) - 0.5f);
            }
    }
    *label = c;
    return 0;
}

/* ---- corpus ---- */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static word *lookup(const ftm_dataset *d, const char *s)
{
    size_t i = hash_str(s) & (d->cap - 1);
    while (d->words[i].s && strcmp(d->words[i].s, s))
        i = (i + 1) & (d->cap - 1);
    return &d->words[i];
}

static int grow(ftm_dataset *d)
{
    ftm_dataset old = *d;
    d->cap = old.cap ? old.cap * 2 : 1024;
    d->words = calloc(d->cap, sizeof(word));
    if (!d->words) {
        *d = old;
        return FTM_ENOMEM;
    }
    for (size_t i = 0; i < old.cap; i++)
        if (old.words[i].s)
            *lookup(d, old.words[i].s) = old.words[i];
    free(old.words);
    return 0;
}

/* Calls fn for every word of text[0..n) (lower-cased alnum runs, at most
 * 63 characters kept). */
static int each_word(const unsigned char *text, size_t n,
                     int (*fn)(ftm_dataset *, const char *), ftm_dataset *d)
{
    char buf[64];
    int len = 0, rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        int ch = text[i];
        if (isalnum(ch)) {
            if (len < 63)
                buf[len++] = (char)tolower(ch);
            continue;
        }
        if (len) {
            buf[len] = 0;
            rc = fn(d, buf);
            len = 0;
        }
    }
    if (!rc && len) {
        buf[len] = 0;
        rc = fn(d, buf);
    }
    return rc;
}

static int count_word(ftm_dataset *d, const char *s)
{
    if (2 * (d->nwords + 1) > d->cap && grow(d))
        return FTM_ENOMEM;
    word *w = lookup(d, s);
    if (!w->s) {
        if (!(w->s = strdup(s)))
            return FTM_ENOMEM;
        w->id = FTM_TOK_UNK;
        d->nwords++;
    }
    w->count++;
    d->n++;
    return 0;
}

static int put_word(ftm_dataset *d, const char *s)
{
    d->ids[d->n++] = lookup(d, s)->id;
    return 0;
}

static int by_count(const void *a, const void *b)
{
    const word *x = *(const word *const *)a, *y = *(const word *const *)b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->s, y->s);
}

/* Reads all of file ("-": stdin) once, so a pipe works, up to the limit. */
static int slurp(const char *file, unsigned char **text, size_t *n, char *why, size_t len)
{
    const size_t max = (size_t)FTM_DATA_CORPUS_MAX_MIB << 20;
    int is_stdin = strcmp(file, "-") == 0;
    FILE *f = is_stdin ? stdin : fopen(file, "rb");
    if (!f)
        return fail(FTM_EIO, why, len, "%s", strerror(errno));
    size_t cap = 1 << 16, have = 0;
    unsigned char *buf = malloc(cap);
    int rc = buf ? 0 : FTM_ENOMEM;
    while (!rc) {
        if (have > max) {
            rc = fail(FTM_ERANGE, why, len, "more than %d MiB (the corpus size limit)",
                      FTM_DATA_CORPUS_MAX_MIB);
            break;
        }
        if (have == cap) { /* grow, to one byte past the limit at most */
            size_t c = cap * 2 > max + 1 ? max + 1 : cap * 2;
            unsigned char *b = realloc(buf, c);
            if (!b) {
                rc = FTM_ENOMEM;
                break;
            }
            buf = b;
            cap = c;
        }
        size_t got = fread(buf + have, 1, cap - have, f);
        have += got;
        if (got == 0 && ferror(f))
            rc = fail(FTM_EIO, why, len, "%s", strerror(errno));
        else if (got == 0)
            break;
    }
    if (!is_stdin)
        fclose(f);
    if (!rc && have == 0)
        rc = fail(FTM_EFORMAT, why, len, "empty");
    if (rc) {
        free(buf);
        return rc;
    }
    *text = buf;
    *n = have;
    return 0;
}

/* Gives the (vocab - FTM_TOK_FIRST) most frequent words their ids (all of
 * them when vocab is 0). */
static int assign_ids(ftm_dataset *d, int vocab)
{
    word **all = malloc(sizeof(word *) * (d->nwords ? d->nwords : 1));
    if (!all)
        return FTM_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < d->cap; i++)
        if (d->words[i].s)
            all[k++] = &d->words[i];
    qsort(all, k, sizeof *all, by_count);
    for (size_t i = 0; i < k && (vocab == 0 || i < (size_t)(vocab - FTM_TOK_FIRST)); i++)
        all[i]->id = FTM_TOK_FIRST + (int)i;
    free(all);
    return 0;
}

int ftm_data_load_corpus(ftm_dataset **out, const char *file, int vocab, char *why, size_t len)
{
    *out = NULL;
    if (vocab < 0 || (vocab > 0 && vocab <= FTM_TOK_FIRST))
        return FTM_EINVAL;
    unsigned char *text = NULL;
    size_t n = 0;
    int rc = slurp(file, &text, &n, why, len);
    if (rc)
        return rc;
    ftm_dataset *d = calloc(1, sizeof *d);
    rc = d ? grow(d) : FTM_ENOMEM;
    if (d)
        d->kind = DS_CORPUS;
    if (!rc)
        rc = each_word(text, n, count_word, d);
    if (!rc && d->n == 0)
        rc = fail(FTM_EFORMAT, why, len, "no word in it (words are runs of letters and digits)");
    if (!rc)
        rc = assign_ids(d, vocab);
    if (!rc && !(d->ids = malloc(sizeof(int) * (size_t)d->n)))
        rc = FTM_ENOMEM;
    if (!rc) {
        d->n = 0;
        rc = each_word(text, n, put_word, d);
    }
    free(text);
    if (rc) {
        ftm_data_free(d);
        return rc;
    }
    *out = d;
    return 0;
}

int ftm_data_word_id(const ftm_dataset *d, const char *s)
{
    if (!d || d->kind != DS_CORPUS)
        return FTM_EINVAL;
    const word *w = lookup(d, s);
    return w->s ? w->id : FTM_TOK_UNK;
}

int ftm_data_tokens(const ftm_dataset *d, uint64_t seed, uint64_t id, int T,
                    int V, int *tok, unsigned char *valid)
{
    if (T < 2 || V <= FTM_TOK_FIRST || (d && d->kind != DS_CORPUS))
        return FTM_EINVAL;
    int len;
    tok[0] = FTM_TOK_CLS;
    if (d) {
        /* a window of T-1 corpus tokens starting at a keyed position */
        long room = d->n - (T - 1) + 1;
        long start = room > 1 ? (long)(rnd(seed, id, 10, 0) % (uint64_t)room) : 0;
        len = 1 + (int)(d->n - start < T - 1 ? d->n - start : T - 1);
        for (int i = 1; i < len; i++)
            tok[i] = d->ids[start + i - 1] < V ? d->ids[start + i - 1] : FTM_TOK_UNK;
    } else {
        /* Synthetic: a topic (a group of G = 10 words) per sequence; word i is
         * group[(offset + i*stride) mod G], replaced by a random word of the
         * group with probability 0.1. Length uniform in [T/2, T]. */
        int G = V - FTM_TOK_FIRST < 10 ? V - FTM_TOK_FIRST : 10;
        int topics = (V - FTM_TOK_FIRST) / G;
        int topic = (int)(rnd(seed, id, 11, 0) % (uint64_t)topics);
        int off = (int)(rnd(seed, id, 11, 1) % (uint64_t)G);
        int stride = 1 + (int)(rnd(seed, id, 11, 2) % 3);
        len = T / 2 + (int)(rnd(seed, id, 11, 3) % (uint64_t)(T - T / 2 + 1));
        for (int i = 1; i < len; i++) {
            int j = (off + i * stride) % G;
            if (unif(seed, id, 12, (uint64_t)i) < 0.1f)
                j = (int)(rnd(seed, id, 13, (uint64_t)i) % (uint64_t)G);
            tok[i] = FTM_TOK_FIRST + topic * G + j;
        }
    }
    for (int i = 0; i < T; i++) {
        valid[i] = i < len;
        if (i >= len)
            tok[i] = FTM_TOK_PAD;
    }
    return 0;
}
