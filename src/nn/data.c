/* Data for the models: deterministic synthetic sets (a pure function of
 * (seed, example id)), CIFAR-10 binary batches and a plain-text corpus with
 * a word tokenizer built on the fly. A loaded dataset is read-only. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int ftm_data_load_cifar(ftm_dataset **out, const char *dir)
{
    *out = NULL;
    ftm_dataset *d = calloc(1, sizeof *d);
    if (!d)
        return FTM_ENOMEM;
    d->kind = DS_CIFAR;
    int rc = 0;
    for (int b = 1; b <= 5 && !rc; b++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/data_batch_%d.bin", dir, b);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        fseek(f, 0, SEEK_END);
        long sz = ftell(f);
        fseek(f, 0, SEEK_SET);
        if (sz <= 0 || sz % CIFAR_REC) {
            rc = FTM_EFORMAT;
        } else {
            long k = sz / CIFAR_REC;
            unsigned char *l = realloc(d->labels, (size_t)(d->n + k));
            unsigned char *p = l ? realloc(d->pixels, (size_t)(d->n + k) * 3072) : NULL;
            if (l) d->labels = l;
            if (p) d->pixels = p;
            if (!l || !p)
                rc = FTM_ENOMEM;
            for (long i = 0; i < k && !rc; i++) {
                if (fread(d->labels + d->n, 1, 1, f) != 1 ||
                    fread(d->pixels + (size_t)d->n * 3072, 1, 3072, f) != 3072)
                    rc = FTM_EIO;
                else if (d->labels[d->n] > 9)
                    rc = FTM_EFORMAT;
                else
                    d->n++;
            }
        }
        fclose(f);
    }
    if (!rc && d->n == 0)
        rc = FTM_EIO;
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

/* Calls fn for every word of f (lower-cased alnum runs, max 63 chars). */
static int each_word(FILE *f, int (*fn)(ftm_dataset *, const char *), ftm_dataset *d)
{
    char buf[64];
    int len = 0, ch, rc = 0;
    rewind(f);
    while (!rc && (ch = fgetc(f)) != EOF) {
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

int ftm_data_load_corpus(ftm_dataset **out, const char *file, int vocab)
{
    *out = NULL;
    if (vocab <= FTM_TOK_FIRST)
        return FTM_EINVAL;
    FILE *f = fopen(file, "r");
    if (!f)
        return FTM_EIO;
    ftm_dataset *d = calloc(1, sizeof *d);
    int rc = d ? grow(d) : FTM_ENOMEM;
    if (d)
        d->kind = DS_CORPUS;
    if (!rc)
        rc = each_word(f, count_word, d);
    if (!rc && d->n == 0)
        rc = FTM_EFORMAT;
    word **all = rc ? NULL : malloc(sizeof(word *) * d->nwords);
    if (!rc && !all)
        rc = FTM_ENOMEM;
    if (!rc) {
        size_t k = 0;
        for (size_t i = 0; i < d->cap; i++)
            if (d->words[i].s)
                all[k++] = &d->words[i];
        qsort(all, k, sizeof *all, by_count);
        for (size_t i = 0; i < k && i < (size_t)(vocab - FTM_TOK_FIRST); i++)
            all[i]->id = FTM_TOK_FIRST + (int)i;
        d->ids = malloc(sizeof(int) * (size_t)d->n);
        if (!d->ids)
            rc = FTM_ENOMEM;
        d->n = 0;
        if (!rc)
            rc = each_word(f, put_word, d);
    }
    free(all);
    fclose(f);
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
