/* SVG pictures (see svg.h). Layout: title, column numbers, the grid of
 * chips (row numbers on the left; on a torus a band around the grid for the
 * wrap stubs), the legend below the grid, the loss curve to its right.
 *
 * Each directed link is a lane 3 px to the right of its direction of
 * travel, so both directions show their own load; ring and route arrows run
 * 9 px to the right, so two rings that use a link both ways stay apart. */
#include "ftmesh/svg.h"
#include "ftmesh/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CELL = 48, PAD = 24, LABEL = 24, TITLE_H = 44, WRAP = 22, LEG_LINE = 18 };
enum { CURVE_W = 360, CURVE_H = 220 };

static const int dr_[4] = { -1, 0, 1, 0 }, dc_[4] = { 0, 1, 0, -1 };
static const char *const ring_pal[] = { "#1f77b4", "#2ca02c", "#9467bd", "#17becf", "#8c564b",
                                        "#e377c2" };
#define DETOUR_COL "#ff7f0e"
#define DEAD_COL "#d00000"
#define WORKS_COL "#006400"

typedef struct {
    FILE *f;
    const ftm_mesh *m;
    double ox, oy;   /* centre of chip (0,0) */
    int wrap_h, wrap_v;
    unsigned seen;   /* legend entries in use (LG_*) */
    uint64_t max_bytes;
    int noted;       /* draw_note drew the line under the title */
} pic;

enum {
    LG_DEAD = 1, LG_DEADLINK = 2, LG_ONEWAY = 4, LG_WRAP = 8, LG_RING = 16, LG_ALT = 32,
    LG_DETOUR = 64, LG_HEAT = 128, LG_ROUTE = 256
};

static double cx(const pic *p, int c) { return p->ox + (double)c * CELL; }
static double cy(const pic *p, int r) { return p->oy + (double)r * CELL; }

void ftm_svg_escape(FILE *f, const char *s)
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
        else if ((unsigned char)*s < 0x20 && *s != '\t' && *s != '\n' && *s != '\r')
            fputc('?', f); /* no character reference makes these valid XML 1.0 */
        else
            fputc(*s, f);
    }
}

/* Heat colour for load fraction x in (0, 1]: light yellow to dark red. */
static void heat_colour(double x, char *out, size_t n)
{
    static const int stops[3][3] = { { 255, 237, 160 }, { 253, 141, 60 }, { 128, 0, 38 } };
    double t = x < 0 ? 0 : x > 1 ? 2 : 2 * x;
    int i = t >= 1 ? 1 : 0;
    double u = t - i;
    int rgb[3];
    for (int k = 0; k < 3; k++)
        rgb[k] = (int)(stops[i][k] + u * (stops[i + 1][k] - stops[i][k]));
    snprintf(out, n, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

static int is_wrap(const ftm_mesh *m, int id, int d)
{
    int nb = ftm_mesh_neighbor(m, id, d);
    return nb >= 0 && (ftm_mesh_row(m, nb) != ftm_mesh_row(m, id) + dr_[d] ||
                       ftm_mesh_col(m, nb) != ftm_mesh_col(m, id) + dc_[d]);
}

/* Path data of hop id -> neighbour(d) at offset `off` right of travel,
 * trimmed by `trim` px at both ends; a wrap hop is two stubs, out of the
 * border and in at the opposite one. */
static void hop_path(const pic *p, int id, int d, double off, double trim, int start)
{
    const ftm_mesh *m = p->m;
    int nb = ftm_mesh_neighbor(m, id, d);
    double ox = -dr_[d] * off, oy = dc_[d] * off;
    double x1 = cx(p, ftm_mesh_col(m, id)) + ox, y1 = cy(p, ftm_mesh_row(m, id)) + oy;
    double x2 = cx(p, ftm_mesh_col(m, nb)) + ox, y2 = cy(p, ftm_mesh_row(m, nb)) + oy;
    double ux = dc_[d], uy = dr_[d];
    if (!is_wrap(m, id, d)) {
        fprintf(p->f, "%s%.1f %.1f L%.1f %.1f", start ? "M" : " L", x1 + ux * trim,
                y1 + uy * trim, x2 - ux * trim, y2 - uy * trim);
        return;
    }
    double out = CELL / 2.0 + WRAP / 2.0;
    fprintf(p->f, "%s%.1f %.1f L%.1f %.1f M%.1f %.1f L%.1f %.1f", start ? "M" : " L",
            x1 + ux * trim, y1 + uy * trim, x1 + ux * out, y1 + uy * out, x2 - ux * out,
            y2 - uy * out, x2 - ux * trim, y2 - uy * trim);
}

/* One element per directed link: its heat, dead (dashed red), or the
 * working direction of a one-way dead link (arrow). */
static void draw_links(pic *p, const uint64_t *lb)
{
    const ftm_mesh *m = p->m;
    for (int id = 0; id < m->nchips; id++)
        for (int d = 0; d < 4; d++) {
            int nb = ftm_mesh_neighbor(m, id, d);
            if (nb < 0)
                continue;
            int dead = m->link_dead[id * 4 + d];
            int oneway = !dead && m->link_dead[nb * 4 + ftm_dir_opposite(d)];
            int wrap = is_wrap(m, id, d);
            uint64_t b = lb ? lb[id * 4 + d] : 0;
            char col[16] = "#cccccc";
            if (b && p->max_bytes)
                heat_colour((double)b / (double)p->max_bytes, col, sizeof col);
            p->seen |= (dead ? LG_DEADLINK : 0) | (oneway ? LG_ONEWAY : 0) | (wrap ? LG_WRAP : 0);
            fprintf(p->f, "<path class=\"link%s%s\" d=\"", wrap ? " wrap" : "",
                    dead ? " dead" : "");
            hop_path(p, id, d, 3, 8, 1);
            char mb[32] = ""; /* no heat given (a picture of routes): no bytes told */
            if (lb)
                snprintf(mb, sizeof mb, ": %.3f MB", (double)b / 1e6);
            fprintf(p->f, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"3\"%s%s>"
                          "<title>(%d,%d) -&gt; (%d,%d)%s%s</title></path>\n",
                    dead ? DEAD_COL : oneway ? WORKS_COL : col,
                    dead ? " stroke-dasharray=\"3,3\"" : wrap ? " stroke-dasharray=\"8,2\"" : "",
                    oneway ? " marker-end=\"url(#works)\"" : "", ftm_mesh_row(m, id),
                    ftm_mesh_col(m, id), ftm_mesh_row(m, nb), ftm_mesh_col(m, nb),
                    dead ? " dead" : oneway ? " (the other way is dead)" : wrap ? " wrap" : "", mb);
        }
}

/* One edge (nhops from src): one hop as an arrow in colour col; more as a
 * detour, thick orange with a dot on each chip it passes and its hop count. */
static void draw_edge(pic *p, int src, int nhops, const unsigned char *dirs, const char *col,
                      int k, int alt)
{
    const ftm_mesh *m = p->m;
    int det = nhops > 1;
    p->seen |= det ? LG_DETOUR : alt ? LG_ALT : LG_RING;
    fprintf(p->f, "<path class=\"%s\" d=\"", det ? "detour" : "edge");
    int x = src;
    for (int h = 0; h < nhops; h++) {
        hop_path(p, x, dirs[h], 9, h ? 0 : 8, h == 0);
        x = ftm_mesh_neighbor(m, x, dirs[h]);
    }
    fprintf(p->f, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s marker-end=\"url(#%s%d)\">"
                  "<title>(%d,%d) -&gt; (%d,%d): %d hop%s</title></path>\n",
            det ? DETOUR_COL : col, det ? "3" : "1.5",
            alt && !det ? " stroke-dasharray=\"6,3\"" : "", det ? "det" : "arr", det ? 0 : k % 6,
            ftm_mesh_row(m, src), ftm_mesh_col(m, src), ftm_mesh_row(m, x), ftm_mesh_col(m, x),
            nhops, nhops == 1 ? "" : "s");
    if (!det)
        return;
    x = src;
    for (int h = 0; h + 1 < nhops; h++) { /* where the hop into x ends */
        x = ftm_mesh_neighbor(m, x, dirs[h]);
        fprintf(p->f, "<circle class=\"hop\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"#ffffff\" "
                      "stroke=\"%s\" stroke-width=\"2\"/>\n",
                cx(p, ftm_mesh_col(m, x)) - dr_[dirs[h]] * 9.0,
                cy(p, ftm_mesh_row(m, x)) + dc_[dirs[h]] * 9.0, DETOUR_COL);
    }
    fprintf(p->f, "<text class=\"hops\" x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"%s\">%d hops"
                  "</text>\n", cx(p, ftm_mesh_col(m, src)) + 10, cy(p, ftm_mesh_row(m, src)) + 18,
            DETOUR_COL, nhops);
}

static int check_path(const ftm_mesh *m, int src, int nhops, const unsigned char *dirs)
{
    if (src < 0 || src >= m->nchips)
        return FTM_EINVAL;
    for (int h = 0; h < nhops; h++) {
        if (dirs[h] >= FTM_NDIRS || (src = ftm_mesh_neighbor(m, src, dirs[h])) < 0)
            return FTM_EINVAL;
    }
    return 0;
}

/* FTM_EINVAL when a ring or route leaves the mesh (checked before anything
 * is written, so a refused picture writes nothing). */
static int check_input(const ftm_mesh *m, const ftm_svg_picture *q)
{
    for (int i = 0; i < q->nrings; i++)
        for (int e = 0; e < q->rings[i].n; e++) {
            const ftm_ring *g = &q->rings[i];
            if (check_path(m, g->chips[e], g->path_off[e + 1] - g->path_off[e],
                           g->dirs + g->path_off[e]))
                return FTM_EINVAL;
        }
    const ftm_sched *s = q->sched;
    if (s && s->nchips != m->nchips)
        return FTM_EINVAL;
    for (int r = 0; s && r < s->nroutes; r++)
        if (check_path(m, s->routes[r].src, s->routes[r].nhops, s->dirs + s->routes[r].first))
            return FTM_EINVAL;
    return 0;
}

static void draw_rings(pic *p, const ftm_svg_picture *q)
{
    for (int i = 0; i < q->nrings; i++) {
        const ftm_ring *g = &q->rings[i];
        int alt = q->alternate ? q->alternate[i] : 0;
        fprintf(p->f, "<g class=\"ring%s\">\n", alt ? " alternate" : "");
        for (int e = 0; e < g->n; e++)
            draw_edge(p, g->chips[e], g->path_off[e + 1] - g->path_off[e],
                      g->dirs + g->path_off[e], ring_pal[i % 6], i, alt);
        fprintf(p->f, "</g>\n");
    }
}

/* The schedule's routes used by the selected sends, each once. */
static int draw_sched(pic *p, const ftm_svg_picture *q)
{
    const ftm_sched *s = q->sched;
    unsigned char *use = calloc((size_t)s->nroutes + 1, 1);
    if (!use)
        return FTM_ENOMEM;
    size_t hi = q->hi ? q->hi : (size_t)-1;
    ftm_sched_view v = { 0 }; /* packed or not (sched.h) */
    int rc = 0;
    for (int c = 0; c < s->nchips && rc >= 0; c++) {
        ftm_sched_cur cur = { 0 };
        while ((rc = ftm_sched_read_step(s, c, &cur, &v)) > 0)
            for (int k = 0; k < v.nops; k++) {
                const ftm_op *o = &v.ops[k];
                if (o->kind == FTM_OP_SEND && o->len && o->off >= q->lo && o->off < hi &&
                    o->route < (unsigned)s->nroutes &&
                    (!q->phase || ftm_sched_phase_match(v.phase, q->phase)))
                    use[o->route] = 1;
            }
    }
    ftm_sched_view_free(&v);
    if (rc < 0) { /* a step not read: no picture with routes left out */
        free(use);
        return rc;
    }
    int ndet = 0;
    for (int r = 0; r < s->nroutes; r++)
        ndet += use[r] && s->routes[r].nhops > 1;
    if (q->only_detours && ndet > FTM_SVG_MAX_DETOURS) {
        fprintf(p->f, "<text class=\"note\" x=\"%d\" y=\"%d\" font-size=\"11\">%d detours "
                      "not drawn (too many to read)</text>\n", PAD, p->noted ? 54 : 38, ndet);
        free(use);
        return 0;
    }
    fprintf(p->f, "<g class=\"routes\">\n");
    for (int r = 0; r < s->nroutes; r++) {
        const ftm_route *rt = &s->routes[r];
        if (!use[r] || rt->nhops == 0 || (q->only_detours && rt->nhops == 1))
            continue;
        draw_edge(p, rt->src, rt->nhops, s->dirs + rt->first, ring_pal[0], 0, 0);
    }
    fprintf(p->f, "</g>\n");
    p->seen = (p->seen & ~(unsigned)LG_RING) | ((p->seen & LG_RING) ? LG_ROUTE : 0);
    free(use);
    return 0;
}

static void draw_chips(pic *p)
{
    const ftm_mesh *m = p->m;
    for (int id = 0; id < m->nchips; id++) {
        int r = ftm_mesh_row(m, id), c = ftm_mesh_col(m, id);
        double x = cx(p, c), y = cy(p, r);
        if (ftm_mesh_alive(m, id)) {
            fprintf(p->f, "<circle class=\"chip\" cx=\"%.1f\" cy=\"%.1f\" r=\"6\" fill=\"#4d4d4d\">"
                          "<title>chip (%d,%d)</title></circle>\n", x, y, r, c);
            continue;
        }
        p->seen |= LG_DEAD;
        fprintf(p->f, "<g class=\"dead\" stroke=\"%s\" stroke-width=\"3\"><title>dead chip (%d,%d)"
                      "</title><path d=\"M%.1f %.1f L%.1f %.1f M%.1f %.1f L%.1f %.1f\"/></g>\n",
                DEAD_COL, r, c, x - 8, y - 8, x + 8, y + 8, x - 8, y + 8, x + 8, y - 8);
    }
}

/* The line under the title: q->note, or the schedule that ran in place
 * of the one asked for, and why (what the picture shows is what ran). */
static void draw_note(pic *p, const ftm_svg_picture *q)
{
    const ftm_sched *s = q->sched;
    FILE *f = p->f;
    if (!q->note && !(s && s->fallback && s->algo))
        return;
    p->noted = 1;
    fprintf(f, "<text x=\"%d\" y=\"38\" font-size=\"11\" fill=\"#444444\">", PAD);
    if (q->note) {
        ftm_svg_escape(f, q->note);
    } else {
        fputs("schedule run: ", f);
        ftm_svg_escape(f, s->algo);
        fputs(" (", f);
        ftm_svg_escape(f, s->fallback);
        fputs(")", f);
    }
    fputs("</text>\n", f);
}

/* Row numbers left of the grid, column numbers above it. */
static void draw_labels(pic *p)
{
    const ftm_mesh *m = p->m;
    double top = p->oy - CELL / 2.0 - (p->wrap_v ? WRAP : 0) + 4;
    double left = p->ox - CELL / 2.0 - (p->wrap_h ? WRAP : 0) - 2;
    fprintf(p->f, "<g class=\"labels\" font-size=\"11\" fill=\"#555555\">\n");
    for (int c = 0; c < m->cols; c++)
        fprintf(p->f, "<text class=\"col-label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d"
                      "</text>\n", cx(p, c), top, c);
    for (int r = 0; r < m->rows; r++)
        fprintf(p->f, "<text class=\"row-label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%d"
                      "</text>\n", left, cy(p, r) + 4, r);
    fprintf(p->f, "</g>\n");
}

static void draw_defs(FILE *f)
{
    fprintf(f, "<defs>\n");
    for (int k = 0; k < 7; k++)
        fprintf(f, "<marker id=\"%s%d\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" "
                   "markerWidth=\"%d\" markerHeight=\"%d\" orient=\"auto\"><path d=\"M0 0 L10 5 "
                   "L0 10 z\" fill=\"%s\"/></marker>\n", k < 6 ? "arr" : "det", k < 6 ? k : 0,
                k < 6 ? 6 : 4, k < 6 ? 6 : 4, k < 6 ? ring_pal[k] : DETOUR_COL);
    fprintf(f, "<marker id=\"works\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"4\" "
               "markerHeight=\"4\" orient=\"auto\"><path d=\"M0 0 L10 5 L0 10 z\" fill=\"%s\"/>"
               "</marker>\n", WORKS_COL);
    fprintf(f, "<linearGradient id=\"heat\"><stop offset=\"0\" stop-color=\"#ffeda0\"/>"
               "<stop offset=\"0.5\" stop-color=\"#fd8d3c\"/><stop offset=\"1\" "
               "stop-color=\"#800026\"/></linearGradient>\n</defs>\n");
}

/* A legend line: a sample drawing at (x, y) and its text. */
static void legend_line(FILE *f, double x, double y, const char *sample, const char *text)
{
    fprintf(f, "<g transform=\"translate(%.1f %.1f)\">%s<text x=\"44\" y=\"4\" font-size=\"11\">",
            x, y, sample);
    ftm_svg_escape(f, text);
    fprintf(f, "</text></g>\n");
}

enum { LEGEND_LINES = 10 };

/* Every mark in use, one line each, from (x, y) down. */
static void draw_legend(pic *p, double x, double y)
{
    static const struct { unsigned bit; const char *sample, *text; } items[] = {
        { 0, "<circle cx=\"18\" cy=\"0\" r=\"6\" fill=\"#4d4d4d\"/>", "healthy chip" },
        { LG_DEAD, "<path d=\"M10 -8 L26 8 M10 8 L26 -8\" stroke=\"" DEAD_COL "\" stroke-width=\"3\"/>",
          "dead chip" },
        { 0, "<path d=\"M4 0 L34 0\" stroke=\"#cccccc\" stroke-width=\"3\"/>",
          "link: one lane per direction, right of the way it goes (grey: idle)" },
        { LG_RING, "<path d=\"M4 0 L32 0\" stroke=\"#1f77b4\" stroke-width=\"1.5\" marker-end=\"url(#arr0)\"/>",
          "ring edge of one hop; the arrow is the way data goes (one colour per ring)" },
        { LG_ROUTE, "<path d=\"M4 0 L32 0\" stroke=\"#1f77b4\" stroke-width=\"1.5\" marker-end=\"url(#arr0)\"/>",
          "a transfer over one hop; the arrow is the way data goes" },
        { LG_ALT, "<path d=\"M4 0 L32 0\" stroke=\"#1f77b4\" stroke-width=\"1.5\" stroke-dasharray=\"6,3\"/>",
          "ring of a band routed around a hole (alternate)" },
        { LG_DETOUR, "<path d=\"M4 0 L32 0\" stroke=\"" DETOUR_COL "\" stroke-width=\"3\" marker-end=\"url(#det0)\"/>"
                     "<circle cx=\"18\" cy=\"0\" r=\"3.5\" fill=\"#ffffff\" stroke=\"" DETOUR_COL "\" stroke-width=\"2\"/>",
          "detour: an edge of several hops; a dot on each chip that forwards it" },
        { LG_DEADLINK, "<path d=\"M4 0 L34 0\" stroke=\"" DEAD_COL "\" stroke-width=\"3\" stroke-dasharray=\"3,3\"/>",
          "dead direction of a link" },
        { LG_ONEWAY, "<path d=\"M4 0 L32 0\" stroke=\"" WORKS_COL "\" stroke-width=\"3\" marker-end=\"url(#works)\"/>",
          "one-way dead link: the arrow is the direction that still works" },
        { LG_WRAP, "<path d=\"M4 0 L34 0\" stroke=\"#cccccc\" stroke-width=\"3\" stroke-dasharray=\"8,2\"/>",
          "torus wrap link: leaves one border, comes back at the opposite one" },
    };
    fprintf(p->f, "<g class=\"legend\">\n");
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++)
        if (!items[i].bit || (p->seen & items[i].bit)) {
            legend_line(p->f, x, y, items[i].sample, items[i].text);
            y += LEG_LINE;
        }
    fprintf(p->f, "</g>\n");
}

/* The heat scale: a gradient bar from 0 to the busiest link, in MB. */
static void draw_scale(pic *p, double x, double y)
{
    double mb = (double)p->max_bytes / 1e6;
    fprintf(p->f, "<g class=\"scale\" font-size=\"11\">\n<text x=\"%.1f\" y=\"%.1f\">bytes each "
                  "direction of a link carried (MB)</text>\n<rect x=\"%.1f\" y=\"%.1f\" "
                  "width=\"200\" height=\"10\" fill=\"url(#heat)\" stroke=\"#999999\"/>\n",
            x, y, x, y + 6);
    for (int k = 0; k <= 4; k++)
        fprintf(p->f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.3g</text>\n",
                x + 50.0 * k, y + 30, mb * k / 4);
    fprintf(p->f, "</g>\n");
}

/* A one-step run's curve is one point, which a polyline does not show: a
 * dot of the curve's class and colour. */
static void lone_point(FILE *f, const char *cls, double x, double y, const char *col)
{
    fprintf(f, "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", cls, x, y,
            col);
}

/* The loss per step in a box at (x, y), with the fault events. */
static void draw_curve(pic *p, const ftm_svg_picture *q, double x, double y)
{
    FILE *f = p->f;
    double lo = q->loss[0], hi = q->loss[0];
    for (long i = 1; i < q->nloss; i++) {
        lo = q->loss[i] < lo ? q->loss[i] : lo;
        hi = q->loss[i] > hi ? q->loss[i] : hi;
    }
    if (hi - lo < 1e-12)
        hi = lo + 1;
    double w = CURVE_W - 60, h = CURVE_H - 50, x0 = x + 50, y0 = y + 20;
    double sx = q->nloss > 1 ? w / (double)(q->nloss - 1) : 0;
#define PX(i) (x0 + sx * (double)(i))
#define PY(v) (y0 + h - h * ((v) - lo) / (hi - lo))
    fprintf(f, "<g class=\"loss\" font-size=\"11\">\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\">"
               "training loss per step</text>\n", x0, y + 8);
    fprintf(f, "<path d=\"M%.1f %.1f L%.1f %.1f L%.1f %.1f\" fill=\"none\" stroke=\"#333333\"/>\n",
            x0, y0, x0, y0 + h, x0 + w, y0 + h);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.4g</text>\n", x0 - 4, y0 + 4, hi);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.4g</text>\n", x0 - 4, y0 + h, lo);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">0</text>\n", x0, y0 + h + 14);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%ld</text>\n", x0 + w,
            y0 + h + 14, q->nloss - 1);
    /* between the end ticks, on their line: lower, it would touch the next
     * box's title */
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">step</text>\n", x0 + w / 2,
            y0 + h + 14);
    fprintf(f, "<polyline class=\"loss-curve\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" "
               "points=\"");
    for (long i = 0; i < q->nloss; i++)
        fprintf(f, "%s%.1f,%.1f", i ? " " : "", PX(i), PY(q->loss[i]));
    fprintf(f, "\"/>\n");
    if (q->nloss == 1)
        lone_point(f, "loss-curve", PX(0), PY(q->loss[0]), "#1f77b4");
    for (int e = 0; e < q->nevents; e++) {
        double ex = PX(q->events[e].step < 0 ? 0 : q->events[e].step);
        const char *col = q->events[e].repair ? WORKS_COL : DEAD_COL;
        /* right of the line, or left of it (right-anchored) where it would
         * pass the box (11px sans-serif: under 6.5 px a character), so a
         * label never runs off the picture */
        const char *lab = q->events[e].label ? q->events[e].label : "";
        int right = ex + 3 + 6.5 * (double)strlen(lab) > x0 + w;
        fprintf(f, "<g class=\"event\"><path d=\"M%.1f %.1f L%.1f %.1f\" stroke=\"%s\" "
                   "stroke-dasharray=\"4,3\"/><text x=\"%.1f\" y=\"%.1f\" fill=\"%s\"%s>", ex, y0,
                ex, y0 + h, col, right ? ex - 3 : ex + 3, y0 + 12 + 13.0 * e, col,
                right ? " text-anchor=\"end\"" : "");
        ftm_svg_escape(f, q->events[e].label ? q->events[e].label : "");
        fprintf(f, "</text></g>\n");
    }
#undef PX
#undef PY
    fprintf(f, "</g>\n");
}

/* The run's timeline in a box at (x, y): chips alive per step (bars, left
 * scale), the step's wall time (line, right scale), kills red and repairs
 * green. */
static void draw_timeline(pic *p, const ftm_svg_picture *q, double x, double y)
{
    FILE *f = p->f;
    double w = CURVE_W - 60, h = CURVE_H - 70, x0 = x + 50, y0 = y + 20, tmax = 0;
    int cmax = p->m->nchips;
    for (long i = 0; i < q->nloss; i++)
        tmax = q->step_s[i] > tmax ? q->step_s[i] : tmax;
    tmax = tmax > 0 ? tmax : 1;
    double bw = w / (double)(q->nloss > 0 ? q->nloss : 1);
    fprintf(f, "<g class=\"timeline\" font-size=\"11\">\n<text x=\"%.1f\" y=\"%.1f\" "
               "font-size=\"13\">chips alive (bars) and step wall time (line)</text>\n", x0, y + 8);
    fprintf(f, "<path d=\"M%.1f %.1f L%.1f %.1f L%.1f %.1f\" fill=\"none\" stroke=\"#333333\"/>\n",
            x0, y0, x0, y0 + h, x0 + w, y0 + h);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%d</text>\n", x0 - 4, y0 + 4, cmax);
    /* inside the box's top right corner: right of the box it would be cut */
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.3g s</text>\n", x0 + w - 2,
            y0 + 12, tmax);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">step</text>\n", x0 + w / 2,
            y0 + h + 16);
    for (long i = 0; i < q->nloss; i++)
        fprintf(f, "<rect class=\"alive\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                   "fill=\"#aec7e8\"/>\n", x0 + bw * (double)i + 0.5,
                y0 + h - h * q->chips[i] / cmax, bw > 2 ? bw - 1 : bw, h * q->chips[i] / cmax);
    fprintf(f, "<polyline class=\"step-time\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
               "points=\"", DETOUR_COL);
    for (long i = 0; i < q->nloss; i++)
        fprintf(f, "%s%.1f,%.1f", i ? " " : "", x0 + bw * ((double)i + 0.5),
                y0 + h - h * q->step_s[i] / tmax);
    fprintf(f, "\"/>\n");
    if (q->nloss == 1)
        lone_point(f, "step-time", x0 + bw * 0.5, y0 + h - h * q->step_s[0] / tmax, DETOUR_COL);
    for (int e = 0; e < q->nevents; e++) {
        double ex = x0 + bw * (double)(q->events[e].step < 0 ? 0 : q->events[e].step);
        fprintf(f, "<path class=\"%s\" d=\"M%.1f %.1f L%.1f %.1f\" stroke=\"%s\" "
                   "stroke-width=\"2\"/>\n", q->events[e].repair ? "repair" : "kill", ex, y0, ex,
                y0 + h, q->events[e].repair ? WORKS_COL : DEAD_COL);
    }
    fprintf(f, "</g>\n");
}

static uint64_t max_bytes(const ftm_mesh *m, const uint64_t *lb)
{
    uint64_t mx = 0;
    for (int l = 0; lb && l < m->nchips * 4; l++)
        mx = lb[l] > mx ? lb[l] : mx;
    return mx;
}

int ftm_svg_draw(FILE *f, const ftm_mesh *m, const ftm_svg_picture *q)
{
    static const ftm_svg_picture none = { 0 };
    if (!f || !m || (q && ((q->nrings < 0 || (q->nrings && !q->rings)) ||
                           (q->nloss < 0 || (q->nloss && !q->loss)) ||
                           (q->nevents < 0 || (q->nevents && !q->events)))))
        return FTM_EINVAL;
    q = q ? q : &none;
    if (check_input(m, q))
        return FTM_EINVAL;
    pic p = { f, m, 0, 0, m->torus && m->cols >= 3, m->torus && m->rows >= 3, 0,
              max_bytes(m, q->link_bytes), 0 };
    p.ox = PAD + LABEL + CELL / 2.0 + (p.wrap_h ? WRAP : 0);
    p.oy = TITLE_H + LABEL + CELL / 2.0 + (p.wrap_v ? WRAP : 0);
    double grid_w = p.ox + (m->cols - 1) * CELL + CELL / 2.0 + (p.wrap_h ? WRAP : 0) + PAD;
    double grid_h = p.oy + (m->rows - 1) * CELL + CELL / 2.0 + (p.wrap_v ? WRAP : 0);
    double leg_h = LEGEND_LINES * LEG_LINE + (q->link_bytes ? 50 : 0) + PAD;
    double w = (grid_w > 560 ? grid_w : 560) + (q->nloss ? CURVE_W + PAD : 0);
    double h = grid_h + leg_h;
    double curves_h = CURVE_H + (q->chips && q->step_s ? CURVE_H : 0);
    if (q->nloss && h < TITLE_H + curves_h + PAD)
        h = TITLE_H + curves_h + PAD;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n", w, h, w, h);
    draw_defs(f);
    fprintf(f, "<rect width=\"%.0f\" height=\"%.0f\" fill=\"#ffffff\"/>\n<text x=\"%d\" y=\"22\" "
               "font-size=\"15\">", w, h, PAD);
    ftm_svg_escape(f, q->title ? q->title : "ftmesh");
    fprintf(f, " (%dx%d %s, %d healthy chips)</text>\n", m->rows, m->cols,
            m->torus ? "torus" : "mesh", ftm_mesh_healthy_count(m));
    draw_note(&p, q);
    draw_labels(&p);
    draw_links(&p, q->link_bytes);
    draw_rings(&p, q);
    int rc = 0;
    if (q->sched)
        rc = draw_sched(&p, q);
    draw_chips(&p);
    draw_legend(&p, PAD, grid_h + PAD);
    if (q->link_bytes)
        draw_scale(&p, PAD, grid_h + PAD + LEGEND_LINES * LEG_LINE);
    if (q->nloss)
        draw_curve(&p, q, (grid_w > 560 ? grid_w : 560), TITLE_H);
    if (q->nloss && q->chips && q->step_s)
        draw_timeline(&p, q, (grid_w > 560 ? grid_w : 560), TITLE_H + CURVE_H);
    fprintf(f, "</svg>\n");
    if (rc)
        return rc;
    return ferror(f) ? FTM_EIO : 0;
}

int ftm_svg_write(FILE *f, const ftm_mesh *m, const ftm_ring *rings, const int *alternate,
                  int nrings, const uint64_t *link_bytes, const char *title)
{
    ftm_svg_picture q = { 0 };
    q.title = title;
    q.rings = rings;
    q.alternate = alternate;
    q.nrings = nrings;
    q.link_bytes = link_bytes;
    return ftm_svg_draw(f, m, &q);
}
