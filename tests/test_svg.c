/* SVG pictures: well-formed XML (checked by a tiny parser here), one
 * element per chip, link and ring, escaped title, labels, legend, wrap
 * links, the one-way arrow, detours with their hops, the loss curve. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include "ftmesh/svg.h"
#include "ftmesh/plan2d.h"
#include "ftmesh/collective.h"
#include "ftmesh/error.h"
#include "test_util.h"

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
    ck_assert_int_eq(ftm_allreduce_2d_build(&s, NULL, &m, 1000, FTM_RED_SUM_F32), 0);
    uint64_t *lb = malloc(sizeof(uint64_t) * (size_t)m.nchips * 4);
    ftm_sched_link_bytes(&s, &m, lb);
    char *svg = render(&m, &p, lb, "2d <allreduce> & \"holes\"");
    ck_assert_msg(xml_ok(svg), "malformed SVG");
    ck_assert_int_eq(count(svg, "class=\"chip\""), m.nchips - 4);
    ck_assert_int_eq(count(svg, "class=\"dead\""), 4);
    ck_assert_int_eq(count(svg, "<g class=\"ring"), p.nbands);
    ck_assert_int_ge(count(svg, "ring alternate"), 1);
    int nlinks = 0, nwrap = 0, ndead = 0;
    for (int c = 0; c < m.nchips; c++)
        for (int d = 0; d < 4; d++) {
            int nb = ftm_mesh_neighbor(&m, c, d);
            nlinks += nb >= 0;
            nwrap += nb >= 0 && abs(ftm_mesh_row(&m, nb) - ftm_mesh_row(&m, c)) +
                                    abs(ftm_mesh_col(&m, nb) - ftm_mesh_col(&m, c)) > 1;
            ndead += nb >= 0 && m.link_dead[c * 4 + d];
        }
    ck_assert_int_eq(count(svg, "class=\"link"), nlinks);
    /* a torus's wrap links are drawn as wrap links, one per direction */
    ck_assert_int_eq(count(svg, "class=\"link wrap"), nwrap);
    ck_assert_int_eq(nwrap, torus ? 2 * (6 + 7) : 0);
    ck_assert_int_eq(count(svg, "link dead\"") + count(svg, "link wrap dead\""), ndead);
    /* the one-way link 5,5 > 5,6: the way back still works, with an arrow */
    ck_assert_int_eq(count(svg, "marker-end=\"url(#works)\""), 1 + 1); /* + legend */
    ck_assert_ptr_nonnull(strstr(svg, "(5,6) -&gt; (5,5) (the other way is dead)"));
    ck_assert_ptr_nonnull(strstr(svg, "&lt;allreduce&gt; &amp; &quot;holes&quot;"));
    /* labels: every row and column numbered */
    ck_assert_int_eq(count(svg, "class=\"row-label\""), 6);
    ck_assert_int_eq(count(svg, "class=\"col-label\""), 7);
    ck_assert_ptr_nonnull(strstr(svg, "class=\"col-label\" x=\"") );
    /* legend: chips, dead chips, links, alternate rings, dead and one-way
     * links, wrap links when a torus; the heat scale in MB */
    ck_assert_int_eq(count(svg, "<g class=\"legend\">"), 1);
    ck_assert_ptr_nonnull(strstr(svg, ">dead chip</text>"));
    ck_assert_ptr_nonnull(strstr(svg, ">ring of a band routed around a hole (alternate)</text>"));
    ck_assert_ptr_nonnull(strstr(svg, ">one-way dead link: the arrow is the direction that "
                                      "still works</text>"));
    ck_assert_int_eq(strstr(svg, ">torus wrap link: leaves one border") != NULL, torus);
    ck_assert_ptr_nonnull(strstr(svg, "<g class=\"scale\""));
    ck_assert_ptr_nonnull(strstr(svg, "carried (MB)</text>"));
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

/* The picture q of m; well-formed when drawn, empty when refused. */
static char *draw_pic(const ftm_mesh *m, const ftm_svg_picture *q, int want)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(ftm_svg_draw(f, m, q), want);
    fclose(f);
    if (want == 0)
        ck_assert_msg(xml_ok(buf), "malformed SVG");
    else
        ck_assert_int_eq((int)len, 0);
    return buf;
}

/* A hand-made ring on 1x3 with a 2-hop detour back: the detour is drawn
 * apart (its own class, a dot on the chip that forwards it, its hop count),
 * the one-hop edges as arrows. */
START_TEST(test_svg_detour_and_curve)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 1, 3, 0), 0);
    int chips[] = { 0, 1, 2 }, off[] = { 0, 1, 2, 4 };
    unsigned char dirs[] = { FTM_DIR_E, FTM_DIR_E, FTM_DIR_W, FTM_DIR_W };
    ftm_ring r = { 3, chips, off, dirs };
    double loss[] = { 2.5, 2.0, 1.75, 1.5 };
    ftm_svg_event ev[] = { { .step = 2, .label = "chip (0,1) dies" } };
    ftm_svg_picture q = { .title = "t", .rings = &r, .nrings = 1, .loss = loss, .nloss = 4,
                          .events = ev, .nevents = 1 };
    char *svg = draw_pic(&m, &q, 0);
    ck_assert_int_eq(count(svg, "<path class=\"edge\""), 2);
    ck_assert_int_eq(count(svg, "<path class=\"detour\""), 1);
    ck_assert_int_eq(count(svg, "<circle class=\"hop\""), 1);
    ck_assert_int_eq(count(svg, ">2 hops</text>"), 1);
    ck_assert_ptr_nonnull(strstr(svg, "<title>(0,2) -&gt; (0,0): 2 hops</title>"));
    ck_assert_ptr_nonnull(strstr(svg, ">detour: an edge of several hops"));
    /* the loss curve: 4 points, the event marked and labelled */
    const char *pl = strstr(svg, "class=\"loss-curve\"");
    ck_assert_ptr_nonnull(pl);
    const char *pts = strstr(pl, "points=\"");
    int commas = 0;
    for (const char *c = pts; *c && c[0] != '/'; c++)
        commas += *c == ',';
    ck_assert_int_eq(commas, 4);
    ck_assert_int_eq(count(svg, "<g class=\"event\">"), 1);
    ck_assert_ptr_nonnull(strstr(svg, ">chip (0,1) dies</text>"));
    ck_assert_ptr_null(strstr(svg, "class=\"scale\"")); /* no bytes, no scale */
    ck_assert_int_eq(count(svg, "<circle class=\"loss-curve\""), 0);
    free(svg);
    /* One step: its loss is a dot, as a one-point line shows nothing */
    q.nloss = 1;
    svg = draw_pic(&m, &q, 0);
    ck_assert_int_eq(count(svg, "<circle class=\"loss-curve\""), 1);
    free(svg);
    q.nloss = 4;
    /* A path off the mesh is refused. */
    dirs[3] = FTM_DIR_N;
    free(draw_pic(&m, &q, FTM_EINVAL));
    ftm_mesh_free(&m);
}
END_TEST

/* A schedule's routes, each once; only_detours keeps the multi-hop ones. */
START_TEST(test_svg_sched)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 4, 4, 0), 0);
    ck_assert_int_eq(ftm_mesh_fail_chip(&m, 1, 1), 0);
    ftm_sched s;
    ck_assert_int_eq(ftm_allreduce_ring_build(&s, NULL, &m, 15 * 8, FTM_RED_SUM_F32), 0);
    int one = 0, multi = 0;
    for (int r = 0; r < s.nroutes; r++) {
        one += s.routes[r].nhops == 1;
        multi += s.routes[r].nhops > 1;
    }
    ck_assert_int_ge(multi, 1);
    ftm_svg_picture q = { .sched = &s };
    char *svg = draw_pic(&m, &q, 0);
    ck_assert_int_eq(count(svg, "<path class=\"edge\""), one);
    ck_assert_int_eq(count(svg, "<path class=\"detour\""), multi);
    free(svg);
    q.only_detours = 1;
    svg = draw_pic(&m, &q, 0);
    ck_assert_int_eq(count(svg, "<path class=\"edge\""), 0);
    ck_assert_int_eq(count(svg, "<path class=\"detour\""), multi);
    free(svg);
    q.phase = "no such phase";
    svg = draw_pic(&m, &q, 0);
    ck_assert_int_eq(count(svg, "<path class=\"detour\""), 0);
    free(svg);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* Escaping: markup characters as entities, control characters (not
 * allowed in XML 1.0) as '?', tab and newline kept. */
START_TEST(test_svg_escape)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    ftm_svg_escape(f, "a<b>&\"c\x01\x1f\td\n");
    fclose(f);
    ck_assert_str_eq(buf, "a&lt;b&gt;&amp;&quot;c??\td\n");
    free(buf);
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
    tcase_add_test(tc, test_svg_detour_and_curve);
    tcase_add_test(tc, test_svg_sched);
    tcase_add_test(tc, test_checker_rejects_bad_xml);
    tcase_add_test(tc, test_svg_escape);
    suite_add_tcase(su, tc);
    return su;
}

int main(void)
{
    return test_run(svg_suite());
}
