/* ftmesh demo in the terminal: the mesh and why the ring detours, then a
 * recorded allreduce told step by step (every line comes from a frame of
 * the recorded run, see lesson.h). Lines stay within 80 columns for
 * meshes up to 8x8. */
#include "cli.h"
#include "demo.h"
#include "ftmesh/collective.h"
#include "ftmesh/plan2d.h"
#include "ftmesh/viz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *demo_c(const demo_out *o, const char *code)
{
    static char buf[8][24];
    static int next;
    if (!o->color)
        return "";
    char *b = buf[next++ & 7];
    snprintf(b, sizeof buf[0], "\033[%sm", code);
    return b;
}

void demo_heading(const demo_out *o, const char *text)
{
    printf("\n%s== %s ==%s\n", demo_c(o, D_BOLD), text, demo_c(o, D_OFF));
}

void demo_pause(const demo_out *o)
{
    fflush(stdout);
    if (!o->tty)
        return;
    if (o->step) {
        printf("%s[Enter: next]%s", demo_c(o, D_DIM), demo_c(o, D_OFF));
        fflush(stdout);
        int ch;
        while ((ch = getchar()) != EOF && ch != '\n')
            ;
    } else if (o->delay > 0) {
        struct timespec ts = { (time_t)o->delay, (long)((o->delay - (double)(time_t)o->delay) * 1e9) };
        nanosleep(&ts, NULL);
    }
}

static void chip_str(char *b, size_t n, const ftm_mesh *m, int c)
{
    snprintf(b, n, "(%d,%d)", ftm_mesh_row(m, c), ftm_mesh_col(m, c));
}

/* The chessboard colouring and what it says about the ring. */
static void two_colours(const demo_out *o, const ftm_mesh *m, const ftm_ring *ring)
{
    int nb = 0, nw = 0;
    printf("\nThe chips coloured like a chessboard (B: row+col even, w: odd):\n\n   ");
    for (int c = 0; c < m->cols; c++)
        printf(" %d", c % 10);
    printf("\n");
    for (int r = 0; r < m->rows; r++) {
        printf("%3d", r);
        for (int c = 0; c < m->cols; c++) {
            int id = ftm_mesh_chip(m, r, c), black = (r + c) % 2 == 0;
            if (!ftm_mesh_alive(m, id)) {
                printf(" %sX%s", demo_c(o, D_RED), demo_c(o, D_OFF));
                continue;
            }
            nb += black;
            nw += !black;
            printf(" %s%s%s", demo_c(o, black ? "7" : D_DIM), black ? "B" : "w", demo_c(o, D_OFF));
        }
        printf("\n");
    }
    char w[1024];
    demo_two_colour_words(m, ring, w, sizeof w);
    demo_wrap(w);
    (void)nb, (void)nw;
}

/* s printed from column col on, wrapped before column 80 with lines
 * after the first indented by two, keeping room for tail characters after
 * the last word; returns the column reached. */
static int wrap_on(int col, const char *s, int tail)
{
    int gap = 0; /* a space before this word, unless it starts a line */
    while (*s) {
        size_t n = strcspn(s, " ");
        const char *next = s + n;
        while (*next == ' ')
            next++;
        int need = gap + (int)n + (*next ? 0 : tail);
        if (col > 2 && col + need > 79) {
            printf("\n  ");
            col = 2;
            gap = 0;
        }
        col += printf("%s%.*s", gap ? " " : "", (int)n, s);
        gap = n > 0;
        s = next;
    }
    return col;
}

/* s wrapped at 76 columns, ending the line. */
static void wrap(const char *s)
{
    int col = 0;
    while (*s) {
        size_t n = strcspn(s, " ");
        if (col && col + 1 + (int)n > 76) {
            printf("\n");
            col = 0;
        } else if (col) {
            putchar(' ');
            col++;
        }
        printf("%.*s", (int)n, s);
        col += (int)n;
        s += n;
        while (*s == ' ')
            s++;
    }
    printf("\n");
}

void demo_wrap(const char *s)
{
    printf("\n");
    wrap(s);
}

/* Live links both ways at chip c. */
static int live_links(const ftm_mesh *m, int c)
{
    int n = 0;
    for (int d = 0; d < FTM_NDIRS; d++)
        n += ftm_mesh_link_both(m, c, d, NULL);
    return n;
}

/* Why a ring has detours the colours do not force (forced of them are):
 * the colour counts are needed for a ring of one-hop edges, not enough
 * (a chip with one live link cannot sit between two of them). Names up
 * to three such chips. On a torus with an odd side (odd_wrap) the counts
 * say nothing, and the router's step that pairs detours by colour does
 * not run (doc/design.md): its ring may have detours a better one has
 * not. */
static void other_detours(const ftm_mesh *m, int forced, int odd_wrap, int detours, char *b,
                          size_t n)
{
    size_t u = forced     ? (size_t)snprintf(b, n, " The colours force %d of them; this router's "
                                                   "ring has %d more (it builds rings by a rule "
                                                   "of thumb: a ring with fewer may exist). ",
                                             forced, detours - forced)
             : odd_wrap   ? (size_t)snprintf(b, n, " The colours do not explain %s: ",
                                             detours == 1 ? "it" : "them")
                          : (size_t)snprintf(b, n, " Equal counts are needed for a ring of one-hop "
                                                   "edges but not enough: ");
    int one[3], ones = 0;
    for (int c = 0; c < m->nchips; c++)
        if (ftm_mesh_alive(m, c) && live_links(m, c) < 2 && ones++ < 3)
            one[ones - 1] = c;
    for (int i = 0; i < ones && i < 3 && u < n; i++)
        u += (size_t)snprintf(b + u, n - u, "%s(%d,%d)",
                              i == 0 ? (ones > 1 ? (forced ? "Chips " : "chips ")
                                                 : (forced ? "Chip " : "chip "))
                                     : i == ones - 1 ? " and " : ", ",
                              ftm_mesh_row(m, one[i]), ftm_mesh_col(m, one[i]));
    if (u >= n)
        return;
    if (ones && forced) /* its detour may be one the colours force */
        snprintf(b + u, n - u, "%s %s one live link: a ring passes each chip over two, so "
                 "each needs a detour at it, one of those or its own.",
                 ones > 3 ? " and others" : "", ones > 1 ? "have" : "has");
    else if (ones && detours > (ones + 1) / 2) /* a detour's two ends can serve two of them */
        snprintf(b + u, n - u, "%s %s one live link, and a ring passes each chip over two, so "
                 "each needs a detour at it (one detour can serve two); this router's ring has "
                 "%d (it builds rings by a rule of thumb: a ring with fewer may exist).",
                 ones > 3 ? " and others" : "", ones > 1 ? "have" : "has", detours);
    else if (ones)
        snprintf(b + u, n - u, "%s %s one live link, and a ring passes each chip over two.",
                 ones > 3 ? " and others" : "", ones > 1 ? "have" : "has");
    else if (forced)
        b[u ? u - 1 : 0] = 0; /* the router's words above say it all */
    else if (odd_wrap)
        snprintf(b + u, n - u, "on a torus with an odd side this router does not look for "
                 "a ring with fewer detours, and one with none may exist.");
    else
        snprintf(b + u, n - u, "the holes and dead links leave this router no ring with "
                 "fewer detours.");
}

/* 1 when some hop of ring crosses a torus's wrap-around link. */
static int ring_wraps(const ftm_mesh *m, const ftm_ring *ring)
{
    for (int i = 0; i < ring->n; i++) {
        int at = ring->chips[i];
        for (int h = ring->path_off[i]; h < ring->path_off[i + 1] && at >= 0; h++) {
            int nb = ftm_mesh_neighbor(m, at, ring->dirs[h]);
            if (nb >= 0 && (abs(ftm_mesh_row(m, nb) - ftm_mesh_row(m, at)) > 1 ||
                            abs(ftm_mesh_col(m, nb) - ftm_mesh_col(m, at)) > 1))
                return 1;
            at = nb;
        }
    }
    return 0;
}

void demo_two_colour_words(const ftm_mesh *m, const ftm_ring *ring, char *b, size_t n)
{
    int nb = 0, nw = 0;
    for (int c = 0; c < m->nchips; c++)
        if (ftm_mesh_alive(m, c))
            (ftm_mesh_row(m, c) + ftm_mesh_col(m, c)) % 2 ? nw++ : nb++;
    int odd_wrap = m->torus && ((m->rows >= 3 && m->rows % 2) || (m->cols >= 3 && m->cols % 2));
    size_t u = (size_t)snprintf(b, n, "Colour the chips like a chessboard: B where row+col is even, "
                                "w where odd. %s", odd_wrap
                                ? "Between neighbours inside the grid a hop always changes "
                                  "colour, so a ring made only of such hops alternates B, w, B, "
                                  "w ... and needs as many B as w chips. "
                                : "A hop between neighbours always changes colour, so a ring made "
                                  "only of one-hop edges alternates B, w, B, w ... and needs as "
                                  "many B as w chips. ");
    if (u >= n)
        return;
    if (odd_wrap)
        u += (size_t)snprintf(b + u, n - u, "On this torus an odd side's wrap-around link joins "
                              "two chips of the same colour, so the count does not force "
                              "detours here%s. ", ring && !ring_wraps(m, ring)
                              ? " (this ring takes no wrap-around link: the picture draws the "
                                "ring's links only)" : "");
    else if (nb != nw)
        u += (size_t)snprintf(b + u, n - u, "Here %d B and %d w: %d ring edge%s must join two "
                              "chips of the same colour, and such chips are never neighbours: "
                              "%s a detour through other chips. ", nb, nw, abs(nb - nw),
                              abs(nb - nw) > 1 ? "s" : "", abs(nb - nw) > 1 ? "each is" : "it is");
    else
        u += (size_t)snprintf(b + u, n - u, "Here %d B and %d w: balanced, so the count does "
                              "not force a detour. ", nb, nw);
    if (ring && u < n) {
        ftm_ring_quality q;
        ftm_router_ring_measure(m, ring, &q);
        u += (size_t)snprintf(b + u, n - u, "The router's ring: %d chips, %d detour edge%s, "
                              "%d hops in all.", q.ring_chips, q.detours,
                              q.detours == 1 ? "" : "s", q.hops);
        int forced = odd_wrap ? 0 : abs(nb - nw);
        if (q.detours > forced && u < n)
            other_detours(m, forced, odd_wrap, q.detours, b + u, n - u);
    }
}

/* "An" before a number said with a vowel sound (8, 11, 18, 80..89). */
static const char *article(int n)
{
    return n == 8 || n == 11 || n == 18 || (n >= 80 && n <= 89) ? "An" : "A";
}

static int dead_chips(const ftm_mesh *m)
{
    int dead = 0;
    for (int c = 0; c < m->nchips; c++)
        dead += !ftm_mesh_alive(m, c);
    return dead;
}

const char *demo_mesh_title(const ftm_mesh *m)
{
    static const char *t[3][3] = {
        { "1. The mesh", "1. The mesh and its dead link", "1. The mesh and its dead links" },
        { "1. The mesh and its hole", "1. The mesh, its hole and its dead link",
          "1. The mesh, its hole and its dead links" },
        { "1. The mesh and its holes", "1. The mesh, its holes and its dead link",
          "1. The mesh, its holes and its dead links" },
    };
    int dead = dead_chips(m), links = ftm_mesh_dead_links(m, NULL);
    return t[dead < 2 ? dead : 2][links < 2 ? links : 2];
}

void demo_mesh(const demo_out *o, const ftm_mesh *m, const ftm_ring *ring, size_t count)
{
    demo_mesh_picture(m, ring, count);
    two_colours(o, m, ring);
}

void demo_mesh_words(const ftm_mesh *m, size_t count, char *b, size_t n)
{
    int dead = dead_chips(m);
    snprintf(b, n, "%s %dx%d %s of chips; %d dead, %d healthy. Each healthy chip holds %zu "
             "small number%s; allreduce must leave every chip holding the %s.",
             article(m->rows), m->rows, m->cols, cli_mesh_kind(m), dead, m->nchips - dead, count,
             count == 1 ? "" : "s", count == 1 ? "sum" : "sums");
}

void demo_mesh_picture(const ftm_mesh *m, const ftm_ring *ring, size_t count)
{
    char buf[256];
    demo_mesh_words(m, count, buf, sizeof buf);
    wrap(buf);
    printf("\n");
    char *pic = NULL;
    if (ftm_viz_ring_ascii(m, ring, &pic) == 0 && pic) {
        printf("%s", pic);
        free(pic);
    }
}

/* Values per table line: 8 + 14 * 5 = 78 columns (sums of up to 64 chips
 * have at most 3 digits; each value is " %3d" and its finished-sum mark,
 * so "113*" never runs into the next value). Longer buffers are cut into
 * bands of positions, each band a row per chip, so a chip's row never
 * wraps. */
#define TABLE_PER 14

void demo_table(const demo_out *o, const ftm_lesson *l, int k)
{
    const ftm_mesh *m = &l->mesh;
    const ftm_lesson_frame *f = &l->frame[k];
    for (size_t from = 0; from < l->count; from += TABLE_PER) {
        size_t to = from + TABLE_PER < l->count ? from + TABLE_PER : l->count;
        if (l->count > TABLE_PER && to - 1 > from)
            printf("  positions #%zu-#%zu:\n", from, to - 1);
        else if (l->count > TABLE_PER)
            printf("  position #%zu:\n", from);
        for (int c = 0; c < m->nchips; c++) {
            if (!ftm_mesh_alive(m, c))
                continue;
            char name[32];
            chip_str(name, sizeof name, m, c);
            printf("  %-5s", name);
            if (!f->done[c]) {
                printf("%s  (dead)%s\n", demo_c(o, D_RED), demo_c(o, D_OFF));
                continue;
            }
            for (size_t i = from; i < to; i++) {
                int64_t v = f->vals[(size_t)c * l->count + i];
                /* a finished sum: green, and marked with * for plain text */
                int fin = k && v == ftm_lesson_expected(m, i);
                printf(" %s%3lld%s%s", fin ? demo_c(o, D_GREEN) : "", (long long)v,
                       fin ? "*" : i + 1 < to ? " " : "", fin ? demo_c(o, D_OFF) : "");
            }
            printf("\n");
        }
    }
}

/* "#3: 4 + 7 = 11, #4: ..." (sums) or "#3 = 11" (copies), cut at width. */
static void xfer_values(char *b, size_t n, const ftm_lesson_xfer *x, size_t width)
{
    size_t used = 0;
    b[0] = 0;
    for (size_t j = 0; j < x->n && x->sent; j++) {
        char one[64];
        long long s = (long long)x->sent[j];
        if (!x->after)
            snprintf(one, sizeof one, "#%zu: %lld (lost)", x->first + j, s);
        else if (x->red)
            snprintf(one, sizeof one, "#%zu: %lld + %lld = %lld", x->first + j,
                     (long long)x->before[j], s, (long long)x->after[j]);
        else
            snprintf(one, sizeof one, "#%zu = %lld", x->first + j, (long long)x->after[j]);
        /* room for ", ... (N more)" unless this is the last one */
        size_t tail = j + 1 < x->n ? 16 : 0;
        if (used + 2 + strlen(one) + tail > width && j) {
            snprintf(b + used, n - used, ", ... (%zu more)", x->n - j);
            return;
        }
        used += (size_t)snprintf(b + used, n - used, "%s%s", j ? ", " : "", one);
        if (used >= n)
            return;
    }
}

/* " (detour 4 hops: S,E,E,N)": the route from the sender, the first 8
 * hops of a longer one. */
static void detour_words(char *b, size_t n, const ftm_lesson_xfer *x)
{
    size_t u = (size_t)snprintf(b, n, " (detour %d hops: ", x->nhops);
    for (int h = 0; h < x->nhops && h < 8 && u < n; h++)
        u += (size_t)snprintf(b + u, n - u, "%s%c", h ? "," : "", "NESW"[x->dirs[h] & 3]);
    if (u < n)
        snprintf(b + u, n - u, "%s)", x->nhops > 8 ? ",..." : "");
}

/* What the receivers of round k do. A copy is called a finished sum only
 * when every value copied is its position's final sum: a 2-D schedule's
 * column phase copies partial sums too. */
static const char *phase_hint(const ftm_lesson *l, int k)
{
    const ftm_lesson_frame *f = &l->frame[k];
    int sums = 0, final = 0;
    for (int i = 0; i < f->nx; i++) {
        sums += f->x[i].red != 0;
        final += !f->x[i].red && ftm_lesson_xfer_final(l, &f->x[i]);
    }
    int copies = f->nx - sums;
    if (!copies)
        return "receivers add what they get";
    if (sums)
        return "receivers add (+) or copy (=)";
    if (final == copies)
        return "receivers copy finished sums";
    return final ? "receivers copy partial and finished sums" : "receivers copy partial sums";
}

static void one_step(const demo_out *o, const ftm_lesson *l, int k)
{
    const ftm_mesh *m = &l->mesh;
    const ftm_lesson_frame *f = &l->frame[k];
    char ph[160];
    ftm_lesson_phase_words(l, k, ph, sizeof ph);
    /* the hint only where the phase words do not say it already */
    int said = strstr(ph, "adding") || strstr(ph, "copying");
    /* the hint on a line of its own where the header would pass 80 columns */
    char head[40]; /* a run cut by a death has no "of N": it stopped there */
    int w = l->died >= 0 && k == l->nframes - 1
                ? snprintf(head, sizeof head, "Step %d (the chip dies in it)", k)
                : snprintf(head, sizeof head, "Step %d of %d", k, l->nframes - 1);
    const char *hint = phase_hint(l, k);
    int wrap = !said && w + 2 + strlen(ph) + 2 + strlen(hint) > 80;
    printf("\n%s%s%s  %s", demo_c(o, D_BOLD), head, demo_c(o, D_OFF), demo_c(o, D_CYAN));
    wrap_on(w + 2, ph, said ? 0 : 1); /* room for the ':' before the hint */
    printf("%s%s%s\n", said ? "" : wrap ? ":\n  " : ": ", said ? "" : hint, demo_c(o, D_OFF));
    for (int i = 0; i < f->nx; i++) {
        const ftm_lesson_xfer *x = &f->x[i];
        char a[32], b[32], vals[96], via[64] = "";
        chip_str(a, sizeof a, m, x->src);
        chip_str(b, sizeof b, m, x->dst);
        if (x->nhops > 1)
            detour_words(via, sizeof via, x);
        size_t lead = 2 + (strlen(a) > 5 ? strlen(a) : 5) + 4 + (strlen(b) > 5 ? strlen(b) : 5) + 1;
        xfer_values(vals, sizeof vals, x, 80 - lead - strlen(via));
        const char *col = !x->after ? D_RED : x->red ? D_GREEN : D_BLUE;
        printf("  %-5s -> %-5s %s%s%s%s%s%s\n", a, b, demo_c(o, col), vals, demo_c(o, D_OFF),
               demo_c(o, D_YELLOW), via, demo_c(o, D_OFF));
    }
    if (l->died >= 0 && l->died_step == k - 1) {
        char d[32];
        chip_str(d, sizeof d, m, l->died);
        printf("  %schip %s dies at the start of this step%s: what it sends, receives or\n"
               "  forwards is lost (lost: the values it would have carried).\n",
               demo_c(o, D_RED), d, demo_c(o, D_OFF));
    }
}

void demo_steps(const demo_out *o, const ftm_lesson *l, int last)
{
    demo_steps_range(o, l, 1, last);
}

void demo_steps_from(const demo_out *o, const ftm_lesson *l, int first)
{
    demo_steps_range(o, l, first, -1);
}

void demo_steps_range(const demo_out *o, const ftm_lesson *l, int first, int last)
{
    if (last < 0 || last > l->nframes - 1)
        last = l->nframes - 1;
    for (int k = first; k <= last; k++) {
        one_step(o, l, k);
        /* the end of a phase: show where every chip stands */
        char a[160], b[160];
        ftm_lesson_phase_words(l, k, a, sizeof a);
        if (k < l->nframes - 1)
            ftm_lesson_phase_words(l, k + 1, b, sizeof b);
        if (k < l->nframes - 1 && k < last && strcmp(a, b) != 0) {
            printf("\n  After step %d, every chip holds (* a finished sum):\n", k);
            demo_table(o, l, k);
        }
        demo_pause(o);
    }
}

long demo_check(const demo_out *o, const ftm_lesson *l)
{
    const ftm_mesh *m = &l->mesh;
    const ftm_lesson_frame *f = &l->frame[l->nframes - 1];
    long wrong = l->mismatch;
    for (int c = 0; c < m->nchips; c++)
        for (size_t i = 0; i < l->count && ftm_mesh_alive(m, c); i++)
            wrong += f->vals[(size_t)c * l->count + i] != ftm_lesson_expected(m, i);
    printf("\nThe sums, added up directly from every chip's inputs:");
    for (size_t i = 0; i < l->count; i++)
        printf("%s %3lld%s", i % TABLE_PER == 0 ? "\n  sum  " : "",
               (long long)ftm_lesson_expected(m, i), (i + 1) % TABLE_PER && i + 1 < l->count ? " " : "");
    if (wrong)
        printf("\n%s%ld values differ from these sums or from what the chips recorded.%s\n",
               demo_c(o, D_RED), wrong, demo_c(o, D_OFF));
    else
        printf("\n%sEvery healthy chip holds exactly these sums.%s\n", demo_c(o, D_GREEN),
               demo_c(o, D_OFF));
    return wrong;
}

/* The bands of m's 2-D plan, of kind "row" or "column": " row 3",
 * " rows 0-1" or " rows 0-1, 2-3", into b (n bytes); the bands' count
 * (0 where no plan is made). */
static int band_list(const ftm_mesh *m, const char *kind, char *b, size_t n)
{
    ftm_plan2d p;
    b[0] = 0;
    if (ftm_plan2d_build(m, &p))
        return 0;
    int one = p.nbands == 1 && p.bands[0].nrows == 1;
    size_t u = (size_t)snprintf(b, n, " %s%s", kind, one ? "" : "s");
    for (int i = 0; i < p.nbands && u < n; i++) {
        const ftm_plan2d_band *d = &p.bands[i];
        u += (size_t)snprintf(b + u, n - u, "%s %d", i ? "," : "", d->row0);
        if (d->nrows > 1 && u < n)
            u += (size_t)snprintf(b + u, n - u, "-%d", d->row0 + d->nrows - 1);
    }
    int nb = p.nbands;
    ftm_plan2d_free(&p);
    return nb;
}

/* t = m transposed, as 2d-concurrent plans its columns-first half: chip
 * (r, c) of m is (c, r) of t, direction d of m is 3 - d in t. */
static int transpose(const ftm_mesh *m, ftm_mesh *t)
{
    int rc = ftm_mesh_init(t, m->cols, m->rows, m->torus);
    for (int r = 0; r < m->rows && !rc; r++)
        for (int c = 0; c < m->cols; c++) {
            int a = ftm_mesh_chip(m, r, c), b = ftm_mesh_chip(t, c, r);
            t->chip_dead[b] = m->chip_dead[a];
            for (int d = 0; d < FTM_NDIRS; d++)
                t->link_dead[b * FTM_NDIRS + 3 - d] = m->link_dead[a * FTM_NDIRS + d];
        }
    return rc;
}

/* 1 when 2d's column phase runs the drift layout on m (ftm_plan2d_columns). */
static int drift_layout(const ftm_mesh *m)
{
    ftm_plan2d p;
    unsigned char *usable = malloc((size_t)m->cols);
    int drift = usable && !ftm_plan2d_build(m, &p);
    if (drift) {
        drift = ftm_plan2d_columns(m, &p, usable) == 0;
        ftm_plan2d_free(&p);
    }
    free(usable);
    return drift;
}

/* The first band of m's 2d plan whose second ring is its first, the same
 * way round (a single open row: no other way avoids the first one's
 * links), named into b ("row 0", "rows 0-2"); 0 when none. */
static int band_one_way(const ftm_mesh *m, char *b, size_t n)
{
    ftm_plan2d p;
    if (ftm_plan2d_build(m, &p))
        return 0;
    int found = 0;
    for (int i = 0; i < p.nbands && !found; i++) {
        const ftm_plan2d_band *d = &p.bands[i];
        const ftm_ring *f = &d->fwd, *r = &d->rev;
        found = f->n > 1 && f->n == r->n &&
                !memcmp(f->chips, r->chips, sizeof *f->chips * (size_t)f->n) &&
                !memcmp(f->path_off, r->path_off, sizeof *f->path_off * (size_t)(f->n + 1)) &&
                !memcmp(f->dirs, r->dirs, (size_t)f->path_off[f->n]);
        if (found && d->nrows > 1)
            snprintf(b, n, "rows %d-%d", d->row0, d->row0 + d->nrows - 1);
        else if (found)
            snprintf(b, n, "row %d", d->row0);
    }
    ftm_plan2d_free(&p);
    return found;
}

void demo_bands_words(const ftm_mesh *m, const char *algo, char *b, size_t n)
{
    b[0] = 0;
    int conc = !strcmp(algo, "2d-concurrent");
    if (n < 2 || (strcmp(algo, "2d") && !conc))
        return;
    char rows[512], cols[512] = ""; /* 64 bands of ", 62-63" */
    int nb = band_list(m, "row", rows, sizeof rows);
    ftm_mesh t;
    if (conc && !transpose(m, &t)) {
        band_list(&t, "column", cols, sizeof cols);
        ftm_mesh_free(&t);
    }
    int u = snprintf(b, n, "Here the band%s%s%s%s.", nb == 1 ? " is" : "s are", rows,
                     cols[0] ? "; for the second half" : "", cols);
    char why[160];
    int one_way = !conc && band_one_way(m, why, sizeof why);
    if (one_way && u > 0 && (size_t)u < n)
        u += snprintf(b + u, n - (size_t)u, " The band of %s has no second way round that "
                      "avoids its ring's links, so both halves go the same way round it.", why);
    if (!conc && nb == 1 && u > 0 && (size_t)u < n) {
        snprintf(b + u, n - (size_t)u, " The whole mesh is one band, so there is no column "
                 "phase: this run is the band's ring%s, with as many steps as one long ring.",
                 one_way ? "" : " both ways at once");
        return;
    }
    if (!conc && u > 0 && (size_t)u < n && drift_layout(m)) {
        cli_drift_why(m, why, sizeof why);
        snprintf(b + u, n - (size_t)u, " Here %s: instead of column rings, the chips of the "
                 "bands that own the same block are linked top to bottom over live paths "
                 "(the drift layout), so a column-phase transfer may cross columns.", why);
    }
}

/* What the algorithm does, in words a student follows (the registry's
 * summary for one without its own). */
const char *demo_algo_story(const char *algo)
{
    if (!strcmp(algo, "ring"))
        return "Ring allreduce: the P chips form a ring and the buffer is cut into P\n"
               "blocks (here one number each). Reduce-scatter, P-1 steps: every chip\n"
               "passes a block to the next chip on the ring, which adds it to its own.\n"
               "After it each chip holds one block's full sum. All-gather, P-1 steps:\n"
               "the finished blocks travel on around the ring and are copied.";
    if (!strcmp(algo, "bidir"))
        return "Bidirectional ring: the ring run both ways at once, each direction\n"
               "carrying half of the buffer, so every link works in both directions\n"
               "(the other way round, a detour may take another route: part 1 draws\n"
               "both rings).";
    if (!strcmp(algo, "tree"))
        return "Tree: partial sums flow up a spanning tree to a root (reduce), and the\n"
               "total flows back down (broadcast). Few steps, but the root's links carry\n"
               "everything: good for tiny buffers.";
    if (!strcmp(algo, "trees"))
        return "Trees: the buffer is split into shares, one per spanning tree; each\n"
               "tree is a shortest-path tree from its own root, and the trees are\n"
               "picked so that every link carries about as many as any other (a hole's\n"
               "neighbours just become leaves of more trees). Each share is summed up\n"
               "its tree and copied back down, in chunks, both at once.";
    if (!strcmp(algo, "2d"))
        return "2-D: rows first. The rows are grouped into bands, each with a ring\n"
               "through its chips: on a torus a healthy row is a band alone (its wrap\n"
               "link closes the ring); on an open mesh rows are paired and the ring\n"
               "snakes through both; rows touched by a hole merge into a wider band\n"
               "whose ring goes around it. Each band runs a ring reduce-scatter, its\n"
               "ring both ways at once (half of the numbers each way), then the chips\n"
               "of the bands that own the same block sum it (in a column, or over a\n"
               "detour where a hole is in the way), then the bands all-gather, both\n"
               "ways again. Bands and columns are short rings: fewer steps than one\n"
               "long ring. Where a band has more chips than its blocks, some own none.\n"
               "A chip may copy another band's partial sum over a number it no longer\n"
               "needs (its own is in its band's sum already) and pass it on.";
    if (!strcmp(algo, "2d-concurrent"))
        return "2-D concurrent: the 2-D algorithm with the buffer split in two halves,\n"
               "one going rows-then-columns and the other columns-then-rows at once.\n"
               "Row bands (column bands for the second half) each have a ring through\n"
               "their chips: on a torus a healthy row is a band alone (its wrap link\n"
               "closes the ring); on an open mesh rows are paired and the ring snakes\n"
               "through both; rows touched by a hole merge into a wider band whose ring\n"
               "goes around it. As in 2-D, a chip may copy another band's partial sum\n"
               "over a number it no longer needs (its own is in its band's sum already)\n"
               "and pass it on, and a band's ring may step between rows.";
    if (!strcmp(algo, "2d-lines"))
        return "2-D around holes (2d-lines): the buffer is cut in two halves that run at\n"
               "once, half A rows first, half B columns first. Row phase: the chips of a\n"
               "row sum their numbers so that each owns a share; a whole row of a torus\n"
               "is a ring, a row cut by a hole is a LINE of the chips left, which needs\n"
               "no link outside the row; a row cut into pieces (a hole inside an open\n"
               "mesh's row, or two on a torus's) folds each piece into a whole\n"
               "neighbouring row, which sums the piece's numbers for it (sent up or down\n"
               "a column). Column phase: only the usable columns, whose chips are all\n"
               "alive, add the row results across the rows. Half B is the same with\n"
               "rows and columns swapped. The halves are cut into chunks that follow\n"
               "each other, so steps of different phases run together. A step's\n"
               "heading names the positions that moved along rows and those that\n"
               "moved along columns, by the links they took: half A's first phase and\n"
               "half B's second phase move along rows, half B's first phase and half\n"
               "A's second phase along columns.";
    const ftm_allreduce_algo *a = ftm_allreduce_find(algo);
    return a && a->summary ? a->summary : algo;
}
