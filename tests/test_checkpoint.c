/* Checkpoints: checksum, round trip, atomic save, and refusal of every
 * damaged, truncated or mismatched file. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ftmesh/checkpoint.h"
#include "ftmesh/error.h"
#include "test_util.h"

START_TEST(test_crc32c)
{
    /* The CRC-32C check value (RFC 3720 appendix B.4; Castagnoli 1993). */
    ck_assert_uint_eq(ftm_ckpt_crc32c(0, "123456789", 9), 0xE3069283u);
    ck_assert_uint_eq(ftm_ckpt_crc32c(0, "", 0), 0);
    /* 32 bytes of zeros, RFC 3720 B.4 */
    unsigned char z[32] = { 0 };
    ck_assert_uint_eq(ftm_ckpt_crc32c(0, z, 32), 0x8A9136AAu);
    ck_assert_uint_eq(ftm_ckpt_crc32c(ftm_ckpt_crc32c(0, "12345", 5), "6789", 4), 0xE3069283u);
}
END_TEST

typedef struct fixture {
    ftm_ckpt_meta meta;
    ftm_ckpt_state st;
    float p[37], m0[37], m1[37];
    double loss[5];
} fixture;

static void make_fixture(fixture *f, int optim_kind)
{
    memset(f, 0, sizeof *f);
    ftm_model_config_default(&f->meta.model, optim_kind == FTM_OPTIM_SGD ? FTM_MODEL_RESNET
                                                                         : FTM_MODEL_BERT);
    ftm_optim_config_default(&f->meta.optim, f->meta.model.kind);
    f->meta.optim.kind = optim_kind;
    f->meta.batch = 21;
    f->meta.micro = 4;
    f->meta.exact = 1;
    f->meta.nparams = 37;
    for (int i = 0; i < 37; i++) {
        f->p[i] = (float)i * 0.37f - 3.0f;
        f->m0[i] = 1.0f / (float)(i + 1);
        f->m1[i] = (float)(i * i) * 1e-7f;
    }
    for (int i = 0; i < 5; i++)
        f->loss[i] = 2.3 - 0.1 * i;
    f->st.step = 5;
    f->st.examples = 5 * 21;
    f->st.nparams = 37;
    f->st.params = f->p;
    f->st.nmoments = ftm_ckpt_nmoments(optim_kind);
    f->st.moment[0] = f->m0;
    f->st.moment[1] = f->st.nmoments > 1 ? f->m1 : NULL;
    f->st.losses = f->loss;
}

START_TEST(test_roundtrip)
{
    static const int kinds[] = { FTM_OPTIM_SGD, FTM_OPTIM_ADAMW, FTM_OPTIM_LAMB };
    fixture f;
    make_fixture(&f, kinds[_i]);
    unsigned char *buf;
    size_t len;
    ck_assert_int_eq(ftm_ckpt_encode(&f.meta, &f.st, &buf, &len), 0);
    ftm_ckpt_state st;
    ftm_ckpt_meta meta;
    char why[300] = "";
    ck_assert_int_eq(ftm_ckpt_decode(buf, len, &f.meta, &meta, &st, why, sizeof why), 0);
    ck_assert_int_eq(st.step, 5);
    ck_assert(st.examples == 105);
    ck_assert_int_eq(st.nmoments, f.st.nmoments);
    ck_assert_int_eq(memcmp(st.params, f.p, sizeof f.p), 0);
    ck_assert_int_eq(memcmp(st.moment[0], f.m0, sizeof f.m0), 0);
    if (st.nmoments > 1)
        ck_assert_int_eq(memcmp(st.moment[1], f.m1, sizeof f.m1), 0);
    ck_assert_int_eq(memcmp(st.losses, f.loss, sizeof f.loss), 0);
    ck_assert_int_eq(ftm_ckpt_match(&meta, &f.meta, why, sizeof why), 0);
    ck_assert_msg(strstr(st.desc, "batch 21") != NULL, "%s", st.desc);
    ftm_ckpt_state_free(&st);
    /* Without losses. */
    free(buf);
    f.st.losses = NULL;
    ck_assert_int_eq(ftm_ckpt_encode(&f.meta, &f.st, &buf, &len), 0);
    ck_assert_int_eq(ftm_ckpt_decode(buf, len, NULL, NULL, &st, why, sizeof why), 0);
    ck_assert_ptr_null(st.losses);
    ftm_ckpt_state_free(&st);
    free(buf);
}
END_TEST

static void assert_refused(const unsigned char *buf, size_t len, const ftm_ckpt_meta *expect,
                           const char *what)
{
    ftm_ckpt_state st;
    char why[300] = "";
    int rc = ftm_ckpt_decode(buf, len, expect, NULL, &st, why, sizeof why);
    ck_assert_msg(rc == FTM_EFORMAT || rc == FTM_ECORRUPT, "%s: rc %d (%s)", what, rc, why);
    ck_assert_msg(why[0] && !strchr(why, '\n'), "%s: no one-line detail", what);
    ck_assert_ptr_null(st.params);
    ck_assert_ptr_null(st.moment[0]);
}

START_TEST(test_every_byte_corrupted)
{
    fixture f;
    make_fixture(&f, _i ? FTM_OPTIM_LAMB : FTM_OPTIM_SGD);
    unsigned char *buf;
    size_t len;
    ck_assert_int_eq(ftm_ckpt_encode(&f.meta, &f.st, &buf, &len), 0);
    static const unsigned char flips[] = { 0x01, 0x80, 0xff, 0x5a };
    char what[64];
    for (size_t i = 0; i < len; i++) {
        for (size_t k = 0; k < sizeof flips; k++) {
            buf[i] ^= flips[k];
            snprintf(what, sizeof what, "byte %zu ^ 0x%02x", i, flips[k]);
            assert_refused(buf, len, &f.meta, what);
            assert_refused(buf, len, NULL, what);
            buf[i] ^= flips[k];
        }
    }
    free(buf);
}
END_TEST

START_TEST(test_every_truncation)
{
    fixture f;
    make_fixture(&f, _i ? FTM_OPTIM_ADAMW : FTM_OPTIM_SGD);
    unsigned char *buf;
    size_t len;
    ck_assert_int_eq(ftm_ckpt_encode(&f.meta, &f.st, &buf, &len), 0);
    char what[64];
    for (size_t n = 0; n < len; n++) {
        snprintf(what, sizeof what, "first %zu of %zu bytes", n, len);
        assert_refused(buf, n, &f.meta, what);
    }
    unsigned char *longer = malloc(len + 1);
    memcpy(longer, buf, len);
    longer[len] = 0;
    assert_refused(longer, len + 1, NULL, "one byte more");
    free(longer);
    free(buf);
}
END_TEST

static void assert_mismatch(const fixture *f, const ftm_ckpt_meta *run, const char *word)
{
    unsigned char *buf;
    size_t len;
    ck_assert_int_eq(ftm_ckpt_encode(&f->meta, &f->st, &buf, &len), 0);
    ftm_ckpt_state st;
    char why[300] = "";
    ck_assert_int_eq(ftm_ckpt_decode(buf, len, run, NULL, &st, why, sizeof why), FTM_ECONFIG);
    ck_assert_msg(strstr(why, word) != NULL, "want '%s' in: %s", word, why);
    ck_assert_ptr_null(st.params);
    free(buf);
}

START_TEST(test_mismatch)
{
    fixture f;
    make_fixture(&f, FTM_OPTIM_SGD);
    ftm_ckpt_meta run = f.meta;
    run.model.kind = FTM_MODEL_BERT;
    assert_mismatch(&f, &run, "another model");
    run = f.meta;
    run.model.depth = 14;
    assert_mismatch(&f, &run, "depth");
    run = f.meta;
    run.nparams = 38;
    assert_mismatch(&f, &run, "size");
    run = f.meta;
    run.optim.kind = FTM_OPTIM_ADAMW;
    assert_mismatch(&f, &run, "optimizer");
    run = f.meta;
    run.optim.lr = 0.05f;
    assert_mismatch(&f, &run, "lr");
    run = f.meta;
    run.batch = 22;
    assert_mismatch(&f, &run, "batch");
    run = f.meta;
    run.model.seed = 2;
    assert_mismatch(&f, &run, "seed");
    run = f.meta;
    run.exact = 0;
    assert_mismatch(&f, &run, "reduce mode");
}
END_TEST

START_TEST(test_encode_refuses_inconsistent)
{
    fixture f;
    make_fixture(&f, FTM_OPTIM_LAMB);
    unsigned char *buf;
    size_t len;
    f.st.nmoments = 1;
    ck_assert_int_eq(ftm_ckpt_encode(&f.meta, &f.st, &buf, &len), FTM_EINVAL);
    make_fixture(&f, FTM_OPTIM_LAMB);
    f.st.examples = 7;
    ck_assert_int_eq(ftm_ckpt_encode(&f.meta, &f.st, &buf, &len), FTM_EINVAL);
    make_fixture(&f, FTM_OPTIM_LAMB);
    f.st.nparams = 36;
    ck_assert_int_eq(ftm_ckpt_encode(&f.meta, &f.st, &buf, &len), FTM_EINVAL);
    ck_assert_ptr_null(buf);
}
END_TEST

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

START_TEST(test_save_load)
{
    char dir[] = "/tmp/ftm_ckpt_XXXXXX", path[128], why[300] = "";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/run.ckpt", dir);
    fixture f;
    make_fixture(&f, FTM_OPTIM_SGD);
    ck_assert_int_eq(ftm_ckpt_save(path, &f.meta, &f.st, why, sizeof why), 0);
    ck_assert_int_eq(count_entries(dir), 1); /* no temporary file left */
    ftm_ckpt_state st;
    ck_assert_int_eq(ftm_ckpt_load(path, &f.meta, NULL, &st, why, sizeof why), 0);
    ck_assert_int_eq(memcmp(st.params, f.p, sizeof f.p), 0);
    ftm_ckpt_state_free(&st);
    /* Overwrite with a later step. */
    f.p[3] = 42.0f;
    f.st.step = 3;
    f.st.examples = 63;
    ck_assert_int_eq(ftm_ckpt_save(path, &f.meta, &f.st, why, sizeof why), 0);
    ck_assert_int_eq(ftm_ckpt_load(path, &f.meta, NULL, &st, why, sizeof why), 0);
    ck_assert_int_eq(st.step, 3);
    ck_assert(st.params[3] == 42.0f);
    ftm_ckpt_state_free(&st);
    /* A failed save leaves the old file as it was. */
    f.st.examples = 1;
    ck_assert_int_eq(ftm_ckpt_save(path, &f.meta, &f.st, why, sizeof why), FTM_EINVAL);
    ck_assert_int_eq(ftm_ckpt_load(path, &f.meta, NULL, &st, why, sizeof why), 0);
    ck_assert_int_eq(st.step, 3);
    ftm_ckpt_state_free(&st);
    f.st.examples = 63;
    char nodir[160];
    snprintf(nodir, sizeof nodir, "%s/no/such/dir.ckpt", dir);
    ck_assert_int_eq(ftm_ckpt_save(nodir, &f.meta, &f.st, why, sizeof why), FTM_EIO);
    ck_assert_msg(strstr(why, "cannot") != NULL, "%s", why);
    ck_assert_int_eq(ftm_ckpt_load(nodir, &f.meta, NULL, &st, why, sizeof why), FTM_EIO);
    ck_assert_int_eq(count_entries(dir), 1);
    /* A path that is not a regular file is refused, never renamed over. */
    ck_assert_int_eq(ftm_ckpt_save(dir, &f.meta, &f.st, why, sizeof why), FTM_EINVAL);
    ck_assert_msg(strstr(why, "not a regular file") != NULL, "%s", why);
    char fifo[160];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ck_assert_int_eq(ftm_ckpt_save(fifo, &f.meta, &f.st, why, sizeof why), FTM_EINVAL);
    struct stat sb;
    ck_assert(stat(fifo, &sb) == 0 && S_ISFIFO(sb.st_mode));
    unlink(fifo);
    ck_assert_int_eq(count_entries(dir), 1);
    /* A file that is not a checkpoint. */
    FILE *fp = fopen(path, "w");
    fputs("hello\n", fp);
    fclose(fp);
    ck_assert_int_eq(ftm_ckpt_load(path, &f.meta, NULL, &st, why, sizeof why), FTM_EFORMAT);
    ck_assert_msg(strstr(why, "not an ftmesh checkpoint") != NULL, "%s", why);
    unlink(path);
    rmdir(dir);
}
END_TEST

/* Version 2 keeps the mesh and the script to come; version 1 files (no
 * such section) are still read. */
START_TEST(test_mesh_section_and_version_1)
{
    fixture f;
    make_fixture(&f, FTM_OPTIM_SGD);
    unsigned char dead[5 * 6] = { 0, 1, 0, 0, 0, 0 };
    dead[6 + 4 * 2 + 1] = 1;
    char script[] = "repair 0,1@7\n";
    f.st.rows = 2;
    f.st.cols = 3;
    f.st.chip_dead = dead;
    f.st.link_dead = dead + 6;
    f.st.script = script;
    f.st.script_len = strlen(script);
    unsigned char *buf;
    size_t len;
    ck_assert_int_eq(ftm_ckpt_encode(&f.meta, &f.st, &buf, &len), 0);
    ftm_ckpt_state st;
    char why[300] = "";
    ck_assert_int_eq(ftm_ckpt_decode(buf, len, &f.meta, NULL, &st, why, sizeof why), 0);
    ck_assert(st.rows == 2 && st.cols == 3 && !st.torus);
    ck_assert_int_eq(memcmp(st.chip_dead, dead, 30), 0);
    ck_assert_str_eq(st.script, script);
    ftm_ckpt_state_free(&st);
    free(buf);
    /* the same without a mesh, rewritten as version 1: no section at all */
    f.st.rows = f.st.cols = 0;
    f.st.script_len = 0;
    ck_assert_int_eq(ftm_ckpt_encode(&f.meta, &f.st, &buf, &len), 0);
    len -= 16 + 4; /* rows, cols, torus, script_len; the CRC */
    buf[8] = 1;
    for (int i = 0; i < 8; i++)
        buf[16 + i] = (unsigned char)((uint64_t)(len + 4) >> (8 * i));
    uint32_t crc = ftm_ckpt_crc32c(0, buf, len);
    for (int i = 0; i < 4; i++)
        buf[len + (size_t)i] = (unsigned char)(crc >> (8 * i));
    len += 4;
    ck_assert_msg(ftm_ckpt_decode(buf, len, &f.meta, NULL, &st, why, sizeof why) == 0, "%s", why);
    ck_assert(st.rows == 0 && !st.chip_dead && !st.script && st.step == 5);
    ck_assert_int_eq(memcmp(st.params, f.p, sizeof f.p), 0);
    ftm_ckpt_state_free(&st);
    buf[8] = 3; /* a version from the future */
    ck_assert_int_eq(ftm_ckpt_decode(buf, len, &f.meta, NULL, &st, why, sizeof why), FTM_EFORMAT);
    free(buf);
}
END_TEST

static Suite *checkpoint_suite(void)
{
    Suite *s = suite_create("checkpoint");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_crc32c);
    tcase_add_loop_test(tc, test_roundtrip, 0, 3);
    tcase_add_loop_test(tc, test_every_byte_corrupted, 0, 2);
    tcase_add_loop_test(tc, test_every_truncation, 0, 2);
    tcase_add_test(tc, test_mismatch);
    tcase_add_test(tc, test_encode_refuses_inconsistent);
    tcase_add_test(tc, test_save_load);
    tcase_add_test(tc, test_mesh_section_and_version_1);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return test_run(checkpoint_suite());
}
