/* SVG pictures: a grid of chips, two offset lines per link (one per
 * direction, so a link's two directions can show different loads), ring
 * polylines through the path hops. Wrap-around links of a torus are drawn
 * as short segments leaving and entering the grid's edge. */
#include "ftmesh/svg.h"
#include "ftmesh/error.h"

#include <stdio.h>

enum { CELL = 48, MARGIN = 40, TOP = 30 };

static double cx(int c) { return MARGIN + (double)c * CELL; }
static double cy(int r) { return TOP + MARGIN + (double)r * CELL; }

static const int dr_[4] = { -1, 0, 1, 0 }, dc_[4] = { 0, 1, 0, -1 };

/* Colour for load fraction x in [0, 1]: light grey when idle, then
 * yellow to red. */
static void load_colour(double x, char *out, size_t n)
{
    if (x <= 0) {
        snprintf(out, n, "#dddddd");
        return;
    }
    int g = (int)(230 * (1 - x));
    snprintf(out, n, "#%02x%02x%02x", 255, g < 0 ? 0 : g, 40);
}

static void escaped(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else if (*s == '&')
            fputs("&amp;", f);
        else if (*s == '"')
            fputs("&quot;", f);
        else
            fputc(*s, f);
    }
}

static void links(FILE *f, const ftm_mesh *m, const uint64_t *lb)
{
    uint64_t mx = 0;
    for (int l = 0; lb && l < m->nchips * 4; l++)
        mx = lb[l] > mx ? lb[l] : mx;
    for (int id = 0; id < m->nchips; id++)
        for (int d = 0; d < 4; d++) {
            int nb = ftm_mesh_neighbor(m, id, d);
            if (nb < 0)
                continue;
            int r = ftm_mesh_row(m, id), c = ftm_mesh_col(m, id);
            int wrap = ftm_mesh_row(m, nb) != r + dr_[d] || ftm_mesh_col(m, nb) != c + dc_[d];
            double len = wrap ? 0.4 : 1.0;
            /* offset to the right of the direction of travel */
            double ox = -dr_[d] * 4.0, oy = dc_[d] * 4.0;
            double x1 = cx(c) + ox + dc_[d] * 8, y1 = cy(r) + oy + dr_[d] * 8;
            double x2 = cx(c) + ox + dc_[d] * (CELL * len - (wrap ? 0 : 8));
            double y2 = cy(r) + oy + dr_[d] * (CELL * len - (wrap ? 0 : 8));
            char col[16];
            uint64_t b = lb ? lb[id * 4 + d] : 0;
            load_colour(mx ? (double)b / (double)mx : 0, col, sizeof col);
            int live = ftm_mesh_link_live(m, id, d);
            fprintf(f, "<line class=\"link\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                       "stroke=\"%s\" stroke-width=\"3\"%s><title>(%d,%d) %s: %llu bytes</title></line>\n",
                    x1, y1, x2, y2, live ? col : "#ff0000",
                    live ? "" : " stroke-dasharray=\"3,3\"", r, c, ftm_dir_name(d),
                    (unsigned long long)b);
        }
    if (lb) /* a picture without traffic has no busiest link */
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\">busiest link: %llu bytes "
                   "(white to red)</text>\n",
                MARGIN, TOP + 12, (unsigned long long)mx);
}

static void ring(FILE *f, const ftm_mesh *m, const ftm_ring *g, int alt, int k)
{
    static const char *pal[] = { "#1f77b4", "#2ca02c", "#9467bd", "#17becf", "#8c564b", "#e377c2" };
    const char *col = pal[k % 6];
    fprintf(f, "<g class=\"ring%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s>\n",
            alt ? " alternate" : "", col, alt ? " stroke-dasharray=\"6,3\"" : "");
    for (int i = 0; i < g->n; i++) {
        int at = g->chips[i];
        for (int h = g->path_off[i]; h < g->path_off[i + 1]; h++) {
            int d = g->dirs[h], nb = ftm_mesh_neighbor(m, at, d);
            int r = ftm_mesh_row(m, at), c = ftm_mesh_col(m, at);
            int wrap = ftm_mesh_row(m, nb) != r + dr_[d] || ftm_mesh_col(m, nb) != c + dc_[d];
            double x2 = cx(c) + dc_[d] * CELL * (wrap ? 0.45 : 1.0);
            double y2 = cy(r) + dr_[d] * CELL * (wrap ? 0.45 : 1.0);
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", cx(c), cy(r), x2, y2);
            at = nb;
        }
    }
    fprintf(f, "</g>\n");
}

int ftm_svg_write(FILE *f, const ftm_mesh *m, const ftm_ring *rings, const int *alternate,
                  int nrings, const uint64_t *link_bytes, const char *title)
{
    if (!f || !m || nrings < 0 || (nrings && !rings))
        return FTM_EINVAL;
    int w = 2 * MARGIN + (m->cols - 1) * CELL, h = TOP + 2 * MARGIN + (m->rows - 1) * CELL;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n",
            w, h, w, h);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", w, h);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"13\">", MARGIN, 18);
    escaped(f, title ? title : "ftmesh");
    fprintf(f, " (%dx%d %s)</text>\n", m->rows, m->cols, m->torus ? "torus" : "mesh");
    links(f, m, link_bytes);
    for (int i = 0; i < nrings; i++)
        ring(f, m, &rings[i], alternate ? alternate[i] : 0, i);
    for (int id = 0; id < m->nchips; id++) {
        int r = ftm_mesh_row(m, id), c = ftm_mesh_col(m, id);
        if (ftm_mesh_alive(m, id)) {
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"6\" fill=\"#4d4d4d\"><title>chip %d (%d,%d)</title></circle>\n",
                    cx(c), cy(r), id, r, c);
        } else {
            fprintf(f, "<g class=\"dead\" stroke=\"#d00000\" stroke-width=\"3\"><title>dead chip %d (%d,%d)</title>"
                       "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                       "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/></g>\n",
                    id, r, c, cx(c) - 8, cy(r) - 8, cx(c) + 8, cy(r) + 8, cx(c) - 8, cy(r) + 8,
                    cx(c) + 8, cy(r) - 8);
        }
    }
    fprintf(f, "</svg>\n");
    return ferror(f) ? FTM_EIO : 0;
}
