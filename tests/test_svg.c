/* SVG pictures: well-formed XML (checked by a tiny parser here), one
 * element per chip, link and ring, escaped title. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include "ftmesh/svg.h"
#include "ftmesh/plan2d.h"
#include "ftmesh/collective.h"
#include "ftmesh/error.h"

/* Returns 1 if s is well-formed enough: every tag closed in order,
 * attributes name="value", entities known, one root element. */
static int xml_ok(const char *s)
{
    char stack[64][32];
    int depth = 0, roots = 0;
    const char *p = s;
    while (*p) {
        if (*p == '&') {
            if (strncmp(p, "&amp;", 5) && strncmp(p, "&lt;", 4) && strncmp(p, "&gt;", 4) &&
                strncmp(p, "&quot;", 6))
                return 0;
            p++;
            continue;
        }
        if (*p == '>')
            return 0; /* stray */
        if (*p != '<') {
            p++;
            continue;
        }
        p++;
        if (*p == '?') { /* declaration */
            const char *e = strstr(p, "?>");
            if (!e || depth)
                return 0;
            p = e + 2;
            continue;
        }
        int closing = *p == '/';
        if (closing)
            p++;
        char name[32];
        int n = 0;
        while (isalnum((unsigned char)*p) || *p == '-' || *p == ':')
            if (n < 31)
                name[n++] = *p++;
            else
                return 0;
        name[n] = 0;
        if (n == 0)
            return 0;
        if (closing) {
            if (*p != '>' || depth == 0 || strcmp(stack[depth - 1], name))
                return 0;
            depth--;
            p++;
            continue;
        }
        for (;;) { /* attributes */
            while (*p == ' ' || *p == '\n')
                p++;
            if (*p == '>' || (*p == '/' && p[1] == '>'))
                break;
            if (!isalpha((unsigned char)*p))
                return 0;
            while (isalnum((unsigned char)*p) || *p == '-' || *p == ':')
                p++;
            if (*p++ != '=' || *p++ != '"')
                return 0;
            while (*p && *p != '"') {
                if (*p == '<')
                    return 0;
                p++;
            }
            if (*p++ != '"')
                return 0;
        }
        if (depth == 0)
            roots++;
        if (*p == '/') {
            p += 2;
            continue;
        }
        if (depth >= 64)
            return 0;
        strcpy(stack[depth++], name);
        p++;
    }
    return depth == 0 && roots == 1;
}

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)); p++)
        n++;
    return n;
}

static char *render(const ftm_mesh *m, const ftm_plan2d *p, const uint64_t *lb, const char *title)
{
    ftm_ring *rings = calloc((size_t)p->nbands, sizeof *rings);
    int *alt = calloc((size_t)p->nbands, sizeof(int));
    for (int b = 0; b < p->nbands; b++) {
        rings[b] = p->bands[b].fwd;
        alt[b] = p->bands[b].alternate;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(ftm_svg_write(f, m, rings, alt, p->nbands, lb, title), 0);
    fclose(f);
    free(rings);
    free(alt);
    return buf;
}

START_TEST(test_svg_well_formed)
{
    ftm_mesh m;
    int torus = _i;
    ck_assert_int_eq(ftm_mesh_init(&m, 6, 7, torus), 0);
    ck_assert_int_eq(ftm_mesh_fail_host(&m, 2, 2), 0);
    ck_assert_int_eq(ftm_mesh_fail_link(&m, 5, 5, 5, 6, 1), 0);
    ftm_plan2d p;
    ck_assert_int_eq(ftm_plan2d_build(&m, &p), 0);
    ftm_sched s;
    ck_assert_int_eq(ftm_allreduce_2d_build(&s, &m, 1000, FTM_RED_SUM_F32), 0);
    uint64_t *lb = malloc(sizeof(uint64_t) * (size_t)m.nchips * 4);
    ftm_sched_link_bytes(&s, &m, lb);
    char *svg = render(&m, &p, lb, "2d <allreduce> & \"holes\"");
    ck_assert_msg(xml_ok(svg), "malformed SVG");
    ck_assert_int_eq(count(svg, "<circle"), m.nchips - 4);
    ck_assert_int_eq(count(svg, "class=\"dead\""), 4);
    ck_assert_int_eq(count(svg, "<g class=\"ring"), p.nbands);
    ck_assert_int_ge(count(svg, "ring alternate"), 1);
    int nlinks = 0;
    for (int c = 0; c < m.nchips; c++)
        for (int d = 0; d < 4; d++)
            nlinks += ftm_mesh_neighbor(&m, c, d) >= 0;
    ck_assert_int_eq(count(svg, "class=\"link\""), nlinks);
    ck_assert_ptr_nonnull(strstr(svg, "&lt;allreduce&gt; &amp; &quot;holes&quot;"));
    free(svg);
    /* No loads, no rings, no title. */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_int_eq(ftm_svg_write(f, &m, NULL, NULL, 0, NULL, NULL), 0);
    fclose(f);
    ck_assert(xml_ok(buf));
    free(buf);
    ck_assert_int_eq(ftm_svg_write(NULL, &m, NULL, NULL, 0, NULL, NULL), FTM_EINVAL);
    free(lb);
    ftm_sched_free(&s);
    ftm_plan2d_free(&p);
    ftm_mesh_free(&m);
}
END_TEST

START_TEST(test_checker_rejects_bad_xml)
{
    ck_assert(xml_ok("<svg><g a=\"1\"/></svg>"));
    ck_assert(!xml_ok("<svg><g></svg>"));
    ck_assert(!xml_ok("<svg a=1></svg>"));
    ck_assert(!xml_ok("<svg>a & b</svg>"));
    ck_assert(!xml_ok("<svg></svg><svg></svg>"));
}
END_TEST

Suite *svg_suite(void);
Suite *svg_suite(void)
{
    Suite *su = suite_create("svg");
    TCase *tc = tcase_create("svg");
    tcase_add_loop_test(tc, test_svg_well_formed, 0, 2);
    tcase_add_test(tc, test_checker_rejects_bad_xml);
    suite_add_tcase(su, tc);
    return su;
}

int main(void)
{
    SRunner *sr = srunner_create(svg_suite());
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
