/* ftmesh demo --html: one self-contained page that tells the lesson's
 * parts (see ftm_lesson_html_parts in include/ftmesh/lesson.h). Written
 * here: the parts as a JavaScript object (each part's mesh, holes, dead
 * links, ring, inputs and per round the transfers with the values they
 * carried and left); the page's script (html_js.c: plain ES2017, no
 * modules, no network) draws the shown part's picture, scaled to the
 * window, and replays the values step by step.
 */
#include "ftmesh/lesson.h"
#include "ftmesh/error.h"
#include "ftmesh/router.h"
#include "ftmesh/svg.h"
#include "lesson_html.h"

#include <stdlib.h>
#include <string.h>

/* A JavaScript string literal: quotes, backslashes and '<' escaped (the
 * page's script may not contain "</script"), newlines as spaces. */
static void js_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if (*s == '<')
            fputs("\\u003c", f);
        else if (*s == '\n')
            fputc(' ', f);
        else if ((unsigned char)*s >= 0x20)
            fputc(*s, f);
    }
    fputc('"', f);
}

static const char dirch[] = "NESW";

static void ints(FILE *f, const int64_t *v, size_t n)
{
    fputc('[', f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%lld", i ? "," : "", (long long)v[i]);
    fputc(']', f);
}

/* The mesh: size, holes, dead directed links [chip, dir]. */
static void mesh_data(FILE *f, const ftm_mesh *m)
{
    fprintf(f, "rows:%d,cols:%d,torus:%d,holes:[", m->rows, m->cols, m->torus);
    for (int c = 0, k = 0; c < m->nchips; c++)
        if (!ftm_mesh_alive(m, c))
            fprintf(f, "%s%d", k++ ? "," : "", c);
    fprintf(f, "],dlinks:[");
    for (int c = 0, k = 0; c < m->nchips; c++)
        for (int d = 0; d < 4 && ftm_mesh_alive(m, c); d++) {
            int nb = ftm_mesh_neighbor(m, c, d);
            if (nb >= 0 && ftm_mesh_alive(m, nb) && !ftm_mesh_link_live(m, c, d))
                fprintf(f, "%s[%d,%d]", k++ ? "," : "", c, d);
        }
    int oneway, all = ftm_mesh_dead_links(m, &oneway); /* for the legend */
    fprintf(f, "],dead2:%d,oneway:%d", all > oneway, oneway > 0);
}

/* A ring: its chips in order and each edge's route ("ENN"); null when
 * there is none. */
static void ring_value(FILE *f, const ftm_ring *r)
{
    if (!r || r->n < 2) {
        fprintf(f, "null");
        return;
    }
    fprintf(f, "{chips:[");
    for (int i = 0; i < r->n; i++)
        fprintf(f, "%s%d", i ? "," : "", r->chips[i]);
    fprintf(f, "],dirs:[");
    for (int i = 0; i < r->n; i++) {
        fprintf(f, "%s\"", i ? "," : "");
        for (int h = r->path_off[i]; h < r->path_off[i + 1]; h++)
            fputc(dirch[r->dirs[h] & 3], f);
        fputc('"', f);
    }
    fprintf(f, "]}");
}

static void ring_data(FILE *f, const char *name, const ftm_ring *r)
{
    fprintf(f, "%s:", name);
    ring_value(f, r);
}

/* 2d's band rings (null when none): one way, the other, per band. */
static void bands_data(FILE *f, const ftm_lesson_part *p)
{
    fprintf(f, ",bands:");
    if (!p->bands || p->nbands < 1) {
        fprintf(f, "null");
        return;
    }
    for (int i = 0; i < p->nbands; i++) {
        fputc(i ? ',' : '[', f);
        ring_value(f, p->bands[i]);
    }
    fputc(']', f);
}

/* One transfer; fin:1 when it carries only final sums (the caption calls
 * only those finished). */
static void xfer_data(FILE *f, const ftm_lesson *l, const ftm_lesson_xfer *x)
{
    fprintf(f, "{s:%d,d:%d,m:%d,fin:%d,f:%zu,v:", x->src, x->dst, x->red != 0,
            ftm_lesson_xfer_final(l, x), x->first);
    ints(f, x->sent, x->n);
    fprintf(f, ",z:");
    if (x->after)
        ints(f, x->after, x->n);
    else
        fprintf(f, "null");
    fprintf(f, ",h:\"");
    for (int h = 0; h < x->nhops; h++)
        fputc(dirch[x->dirs[h] & 3], f);
    fprintf(f, "\"}");
}

/* 1 when the part runs trees: "tree" (one), "trees" (one per share; the
 * page shows the first, the one position #0 goes up). */
static int tree_part(const ftm_lesson *l)
{
    return l->algo && (!strcmp(l->algo, "tree") || !strcmp(l->algo, "trees"));
}

/* 1 when x carries a partial sum up the tree the page shows. */
static int tree_up(const ftm_lesson *l, const ftm_lesson_xfer *x)
{
    return x->red != FTM_RED_COPY && (!strcmp(l->algo, "tree") || x->first == 0);
}

/* The tree's root as the run shows it: the one healthy chip that sends
 * no partial sum up it (every other chip sends its subtree's up); -1 when
 * the part is not a tree's or no single chip fits. */
static int tree_root(const ftm_lesson *l)
{
    if (!tree_part(l) || l->nframes < 2)
        return -1;
    int root = -1;
    for (int c = 0; c < l->mesh.nchips; c++) {
        int sends = 0;
        for (int k = 1; k < l->nframes && !sends; k++)
            for (int i = 0; i < l->frame[k].nx && !sends; i++)
                sends = l->frame[k].x[i].src == c && tree_up(l, &l->frame[k].x[i]);
        if (!ftm_mesh_alive(&l->mesh, c) || sends)
            continue;
        if (root >= 0)
            return -1;
        root = c;
    }
    return root;
}

/* The tree the page shows (tree_part), as [chip, direction to its parent]
 * pairs: each chip's first partial sum up it goes one hop to its parent. */
static void tree_data(FILE *f, const ftm_lesson *l)
{
    fprintf(f, ",tree:");
    if (!tree_part(l)) {
        fprintf(f, "null");
        return;
    }
    fputc('[', f);
    for (int c = 0, n = 0; c < l->mesh.nchips; c++) {
        const ftm_lesson_xfer *up = NULL;
        for (int k = 1; k < l->nframes && !up; k++)
            for (int i = 0; i < l->frame[k].nx && !up; i++) {
                const ftm_lesson_xfer *x = &l->frame[k].x[i];
                up = x->src == c && tree_up(l, x) && x->nhops == 1 ? x : NULL;
            }
        if (up)
            fprintf(f, "%s[%d,%d]", n++ ? "," : "", c, up->dirs[0]);
    }
    fputc(']', f);
}

static void part_data(FILE *f, const ftm_lesson_part *p)
{
    const ftm_lesson *l = p->l;
    /* the page heading while this part is shown: its own algorithm and mesh */
    char head[128];
    const char *shape = l->mesh.torus ? "torus" : "mesh";
    const char *an = l->mesh.rows == 8 ? "an" : "a"; /* "an 8x8" */
    if (!l->algo)
        snprintf(head, sizeof head, "ftmesh demo: %s %dx%d %s", an, l->mesh.rows, l->mesh.cols,
                 shape);
    else
        snprintf(head, sizeof head, "ftmesh demo: %s allreduce on %s %dx%d %s", l->algo, an,
                 l->mesh.rows, l->mesh.cols, shape);
    fprintf(f, "{heading:");
    js_str(f, head);
    fprintf(f, ",title:");
    js_str(f, p->title);
    fprintf(f, ",intro:");
    js_str(f, p->intro);
    fputc(',', f);
    mesh_data(f, &l->mesh);
    fputc(',', f);
    ring_data(f, "ring", p->ring);
    fputc(',', f);
    ring_data(f, "ring2", p->ring2);
    bands_data(f, p);
    tree_data(f, l);
    fprintf(f, ",tname:\"%s\"", tree_part(l) && !strcmp(l->algo, "trees") ? "first tree"
                                                                           : "tree");
    fprintf(f, ",chess:%d,verified:%d,count:%zu,steps:%d,died:%d,diedStep:%d,root:%d,bidir:%d,"
               "\ninputs:", p->chessboard, p->verified, l->count, p->picture ? 0 : l->nframes - 1,
            l->died, l->died >= 0 ? l->died_step + 1 : -1, tree_root(l), /* a picture's too */
            p->ring && p->ring2 && l->algo && !strcmp(l->algo, "bidir"));
    ints(f, l->frame[0].vals, (size_t)l->mesh.nchips * l->count);
    fprintf(f, ",\nexpect:[");
    for (size_t i = 0; i < l->count; i++)
        fprintf(f, "%s%lld", i ? "," : "", (long long)ftm_lesson_expected(&l->mesh, i));
    fprintf(f, "],phase:[\"\"");
    int last = p->picture ? 0 : l->nframes - 1;
    for (int k = 1; k <= last; k++) {
        char w[160];
        ftm_lesson_phase_words(l, k, w, sizeof w);
        fputc(',', f);
        js_str(f, w);
    }
    fprintf(f, "],\nxf:[[]");
    for (int k = 1; k <= last; k++) {
        fprintf(f, ",\n[");
        for (int i = 0; i < l->frame[k].nx; i++) {
            if (i)
                fputc(',', f);
            xfer_data(f, l, &l->frame[k].x[i]);
        }
        fputc(']', f);
    }
    fprintf(f, "]}");
}

int ftm_lesson_html_parts(FILE *f, const ftm_lesson_part *p, int n, int main_part,
                          const char *title)
{
    if (!f || !p || n < 1 || main_part < 1 || main_part > n)
        return FTM_EINVAL;
    for (int i = 0; i < n; i++)
        if (!p[i].l || p[i].l->nframes < 1)
            return FTM_EINVAL;
    const char *t = title ? title : "ftmesh demo";
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
               "<meta name=\"viewport\" content=\"width=device-width\">\n<title>");
    ftm_svg_escape(f, t);
    fprintf(f, "</title>\n<style>\n%s</style></head><body>\n<h1>", ftm_lesson_page_css);
    ftm_svg_escape(f, t);
    fprintf(f, "</h1>\n");
    fputs(ftm_lesson_page_body, f);
    fprintf(f, "<script>\nvar MAIN=%d,P=[\n", main_part);
    for (int i = 0; i < n; i++) {
        if (i)
            fprintf(f, ",\n");
        part_data(f, &p[i]);
    }
    fprintf(f, "];\n");
    fputs(ftm_lesson_page_js, f);
    fprintf(f, "</script>\n</body></html>\n");
    return ferror(f) ? FTM_EIO : 0;
}
