/* Data sets (synthetic, CIFAR-10 binary, text corpus) and optimizers. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ftmesh/error.h"
#include "ftmesh/model.h"

void add_data_tests(Suite *s);

START_TEST(synthetic_images)
{
    float a[3 * 32 * 32], b[3 * 32 * 32];
    int la, lb, seen[10] = {0};
    ck_assert_int_eq(ftm_data_image(NULL, 1, 17, 32, a, &la), 0);
    ck_assert_int_eq(ftm_data_image(NULL, 1, 17, 32, b, &lb), 0);
    ck_assert_mem_eq(a, b, sizeof a); /* pure function of (seed, id) */
    ck_assert_int_eq(la, lb);
    ck_assert_int_eq(ftm_data_image(NULL, 2, 17, 32, b, &lb), 0);
    ck_assert(memcmp(a, b, sizeof a) != 0);
    for (int id = 0; id < 200; id++) {
        ck_assert_int_eq(ftm_data_image(NULL, 1, (uint64_t)id, 32, a, &la), 0);
        ck_assert(la >= 0 && la < 10);
        seen[la]++;
    }
    for (int c = 0; c < 10; c++)
        ck_assert_int_gt(seen[c], 5);
}
END_TEST

START_TEST(synthetic_tokens)
{
    int t1[32], t2[32];
    unsigned char v1[32], v2[32];
    for (uint64_t id = 0; id < 50; id++) {
        ck_assert_int_eq(ftm_data_tokens(NULL, 3, id, 32, 1000, t1, v1), 0);
        ck_assert_int_eq(ftm_data_tokens(NULL, 3, id, 32, 1000, t2, v2), 0);
        ck_assert_mem_eq(t1, t2, sizeof t1);
        ck_assert_int_eq(t1[0], FTM_TOK_CLS);
        int len = 0;
        while (len < 32 && v1[len])
            len++;
        ck_assert_int_ge(len, 16);
        for (int i = 0; i < 32; i++) {
            ck_assert_int_eq(v1[i], i < len);
            if (i >= len)
                ck_assert_int_eq(t1[i], FTM_TOK_PAD);
            else if (i > 0) /* all words of one sequence come from one topic of 10 */
                ck_assert_int_eq((t1[i] - FTM_TOK_FIRST) / 10, (t1[1] - FTM_TOK_FIRST) / 10);
            ck_assert(t1[i] >= 0 && t1[i] < 1000);
        }
    }
}
END_TEST

static char tmpdir[256];

static void make_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ftm_nn_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void rm_tmp(const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    unlink(p);
}

static void write_file(const char *name, const void *data, size_t n)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    FILE *f = fopen(p, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    fclose(f);
}

START_TEST(cifar_loader)
{
    make_tmpdir();
    ftm_dataset *d;
    ck_assert_int_eq(ftm_data_load_cifar(&d, tmpdir, NULL, 0), FTM_EIO); /* no files */
    unsigned char rec[3 * 3073];
    for (int r = 0; r < 3; r++) {
        rec[r * 3073] = (unsigned char)(r + 4);
        for (int i = 0; i < 3072; i++)
            rec[r * 3073 + 1 + i] = (unsigned char)((i + r) % 256);
    }
    write_file("data_batch_1.bin", rec, 3 * 3073);
    write_file("data_batch_2.bin", rec, 2 * 3073);
    ck_assert_int_eq(ftm_data_load_cifar(&d, tmpdir, NULL, 0), 0);
    ck_assert_int_eq(ftm_data_size(d), 5);
    float img[3 * 32 * 32];
    int label, flips = 0;
    for (uint64_t id = 0; id < 10; id++) {
        ck_assert_int_eq(ftm_data_image(d, 9, id, 32, img, &label), 0);
        int k = (int)(id % 5), r = k < 3 ? k : k - 3;
        ck_assert_int_eq(label, r + 4);
        /* green channel, row 2, column 0 (or 31 if flipped) */
        int i0 = (1 * 32 + 2) * 32, raw = (i0 + r) % 256, rawf = (i0 + 31 + r) % 256;
        float want = (raw / 255.0f - 0.4822f) / 0.2435f, wantf = (rawf / 255.0f - 0.4822f) / 0.2435f;
        ck_assert(fabsf(img[i0] - want) < 1e-5f || fabsf(img[i0] - wantf) < 1e-5f);
        flips += fabsf(img[i0] - wantf) < 1e-5f;
    }
    ck_assert(flips > 0 && flips < 10);
    ck_assert_int_eq(ftm_data_image(d, 9, 0, 16, img, &label), FTM_EINVAL);
    ftm_data_free(d);
    write_file("data_batch_3.bin", rec, 100); /* truncated record */
    ck_assert_int_eq(ftm_data_load_cifar(&d, tmpdir, NULL, 0), FTM_EFORMAT);
    rm_tmp("data_batch_1.bin"); rm_tmp("data_batch_2.bin"); rm_tmp("data_batch_3.bin");
    rmdir(tmpdir);
}
END_TEST

START_TEST(corpus_loader)
{
    make_tmpdir();
    const char *text = "The cat sat; the DOG sat.\nthe cat, a bird!\n";
    write_file("c.txt", text, strlen(text));
    char p[512];
    snprintf(p, sizeof p, "%s/c.txt", tmpdir);
    ftm_dataset *d;
    /* words by count: the 3, cat 2, sat 2, a 1, bird 1, dog 1; vocab keeps 3 */
    ck_assert_int_eq(ftm_data_load_corpus(&d, p, FTM_TOK_FIRST + 3, NULL, 0), 0);
    ck_assert_int_eq(ftm_data_size(d), 10);
    ck_assert_int_eq(ftm_data_word_id(d, "the"), FTM_TOK_FIRST);
    ck_assert_int_eq(ftm_data_word_id(d, "cat"), FTM_TOK_FIRST + 1);
    ck_assert_int_eq(ftm_data_word_id(d, "sat"), FTM_TOK_FIRST + 2);
    ck_assert_int_eq(ftm_data_word_id(d, "dog"), FTM_TOK_UNK);
    ck_assert_int_eq(ftm_data_word_id(d, "zebra"), FTM_TOK_UNK);
    int tok[16];
    unsigned char v[16];
    /* T = 16 > corpus: the whole corpus, then padding */
    ck_assert_int_eq(ftm_data_tokens(d, 1, 0, 16, FTM_TOK_FIRST + 3, tok, v), 0);
    int want[11] = {FTM_TOK_CLS, 5, 6, 7, 5, FTM_TOK_UNK, 7, 5, 6, FTM_TOK_UNK, FTM_TOK_UNK};
    for (int i = 0; i < 16; i++) {
        ck_assert_int_eq(v[i], i < 11);
        ck_assert_int_eq(tok[i], i < 11 ? want[i] : FTM_TOK_PAD);
    }
    /* T = 4: a window of 3 consecutive corpus tokens */
    ck_assert_int_eq(ftm_data_tokens(d, 1, 3, 4, FTM_TOK_FIRST + 3, tok, v), 0);
    ck_assert_int_eq(tok[0], FTM_TOK_CLS);
    int found = 0;
    for (int s = 0; s + 3 <= 10; s++)
        found |= !memcmp(tok + 1, want + 1 + s, 3 * sizeof(int));
    ck_assert(found);
    /* the fingerprint: 0 only for synthetic data; the same for the same
     * text, another for one word changed */
    uint64_t f = ftm_data_fingerprint(d);
    ck_assert(f != 0 && ftm_data_fingerprint(NULL) == 0);
    ftm_data_free(d);
    ck_assert_int_eq(ftm_data_load_corpus(&d, p, FTM_TOK_FIRST + 3, NULL, 0), 0);
    ck_assert(ftm_data_fingerprint(d) == f);
    ftm_data_free(d);
    const char *other = "The cat sat; the DOG sat.\nthe sat, a bird!\n";
    write_file("c.txt", other, strlen(other));
    ck_assert_int_eq(ftm_data_load_corpus(&d, p, FTM_TOK_FIRST + 3, NULL, 0), 0);
    ck_assert(ftm_data_fingerprint(d) != f);
    ftm_data_free(d);
    ck_assert_int_eq(ftm_data_load_corpus(&d, "/nonexistent/x.txt", 100, NULL, 0), FTM_EIO);
    rm_tmp("c.txt");
    rmdir(tmpdir);
}
END_TEST

/* ---- optimizers: one step against the formulas ---- */

START_TEST(optim_steps)
{
    ftm_tensor_info t[2] = {{"w", 0, 2, 1}, {"b", 2, 1, 0}};
    float p[3], g[3] = {0.5f, -1.0f, 2.0f};
    ftm_optim *o;
    ftm_optim_config c;
    ftm_optim_config_default(&c, FTM_MODEL_RESNET);
    c.warmup = 0;
    c.lr = 0.1f; c.momentum = 0.9f; c.weight_decay = 0.01f;
    ck_assert_int_eq(ftm_optim_create(&o, &c, 3), 0);
    float p0[3] = {1.0f, 2.0f, 3.0f};
    memcpy(p, p0, sizeof p);
    ck_assert_int_eq(ftm_optim_step(o, p, g, t, 2, 0), 0);
    ck_assert_int_eq(ftm_optim_step(o, p, g, t, 2, 1), 0);
    /* by hand: v1 = g + wd p0; p1 = p0 - lr v1; v2 = 0.9 v1 + g + wd p1 */
    for (int i = 0; i < 3; i++) {
        float wd = i < 2 ? 0.01f : 0.0f, v1 = g[i] + wd * p0[i], p1 = p0[i] - 0.1f * v1;
        float v2 = 0.9f * v1 + g[i] + wd * p1;
        ck_assert_float_eq_tol(p[i], p1 - 0.1f * v2, 1e-6f);
    }
    ftm_optim_destroy(o);
    /* AdamW first step: m/bc1 = g, v/bc2 = g^2 -> p -= lr (sign(g) + wd p) */
    ftm_optim_config_default(&c, FTM_MODEL_BERT);
    c.kind = FTM_OPTIM_ADAMW;
    c.warmup = 0; c.lr = 0.01f; c.weight_decay = 0.1f;
    ck_assert_int_eq(ftm_optim_create(&o, &c, 3), 0);
    memcpy(p, p0, sizeof p);
    ck_assert_int_eq(ftm_optim_step(o, p, g, t, 2, 0), 0);
    for (int i = 0; i < 3; i++) {
        float wd = i < 2 ? 0.1f : 0.0f;
        ck_assert_float_eq_tol(p[i], p0[i] - 0.01f * ((g[i] > 0 ? 1.0f : -1.0f) + wd * p0[i]), 1e-5f);
    }
    ftm_optim_destroy(o);
    /* LAMB first step: tensor w scaled by ||p|| / ||u||; b (no decay) not */
    c.kind = FTM_OPTIM_LAMB;
    ck_assert_int_eq(ftm_optim_create(&o, &c, 3), 0);
    memcpy(p, p0, sizeof p);
    ck_assert_int_eq(ftm_optim_step(o, p, g, t, 2, 0), 0);
    float u0 = 1.0f + 0.1f * 1.0f, u1 = -1.0f + 0.1f * 2.0f;
    float ratio = sqrtf(1.0f + 4.0f) / sqrtf(u0 * u0 + u1 * u1);
    ck_assert_float_eq_tol(p[0], 1.0f - 0.01f * ratio * u0, 1e-5f);
    ck_assert_float_eq_tol(p[1], 2.0f - 0.01f * ratio * u1, 1e-5f);
    ck_assert_float_eq_tol(p[2], 3.0f - 0.01f, 1e-5f);
    ftm_optim_destroy(o);
    c.lr = 0.0f;
    ck_assert_int_eq(ftm_optim_create(&o, &c, 3), FTM_EINVAL);
}
END_TEST

void add_data_tests(Suite *s)
{
    TCase *tc = tcase_create("data_optim");
    tcase_add_test(tc, synthetic_images);
    tcase_add_test(tc, synthetic_tokens);
    tcase_add_test(tc, cifar_loader);
    tcase_add_test(tc, corpus_loader);
    tcase_add_test(tc, optim_steps);
    suite_add_tcase(s, tc);
}
