/* ftmesh demo --html: one self-contained page that animates a lesson (see
 * ftm_lesson_html in include/ftmesh/lesson.h). Everything is inline: the
 * static picture (links, holes, ring, chips with their step-0 values) is
 * SVG written here; the frames are a JavaScript object the page's script
 * (plain ES2017, no modules, no network) steps through.
 */
#include "ftmesh/lesson.h"
#include "ftmesh/error.h"
#include "ftmesh/router.h"
#include "ftmesh/svg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Geometry: chip boxes of w x h with a gap between them (links, arrows). */
typedef struct geo {
    int w, h, gap, margin, vpl; /* vpl: values per text line */
} geo;

static geo layout(const ftm_lesson *l)
{
    geo g;
    g.vpl = (int)ceil(sqrt((double)l->count));
    if (g.vpl < 4)
        g.vpl = l->count < 4 ? (int)l->count : 4;
    if (g.vpl > 8)
        g.vpl = 8;
    int lines = (int)((l->count + (size_t)g.vpl - 1) / (size_t)g.vpl);
    g.w = g.vpl * 30 + 16;
    if (g.w < 96)
        g.w = 96;
    g.h = lines * 15 + 30;
    g.gap = 46;
    g.margin = 64;
    return g;
}

static double cx(const geo *g, int col) { return g->margin + col * (g->w + g->gap) + g->w / 2.0; }
static double cy(const geo *g, int row) { return g->margin + row * (g->h + g->gap) + g->h / 2.0; }

/* One link (chip -> its E or S neighbour) drawn between the two boxes. */
static void link_line(FILE *f, const ftm_mesh *m, const geo *g, int a, int d)
{
    int b = ftm_mesh_neighbor(m, a, d);
    if (b < 0 || !ftm_mesh_alive(m, a) || !ftm_mesh_alive(m, b))
        return;
    int ra = ftm_mesh_row(m, a), ca = ftm_mesh_col(m, a);
    int rb = ftm_mesh_row(m, b), cb = ftm_mesh_col(m, b);
    int fwd = ftm_mesh_link_live(m, a, d), back = ftm_mesh_link_live(m, b, ftm_dir_opposite(d));
    const char *cls = fwd && back ? "link" : !fwd && !back ? "link dead" : "link oneway";
    int wrap = (d == FTM_DIR_E && cb != ca + 1) || (d == FTM_DIR_S && rb != ra + 1);
    double x1 = cx(g, ca), y1 = cy(g, ra), x2, y2;
    if (!wrap) {
        fprintf(f, "<line class=\"%s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"%s/>\n", cls,
                x1, y1, cx(g, cb), cy(g, rb),
                fwd && back ? "" : fwd ? " marker-end=\"url(#oneway)\"" : " marker-start=\"url(#oneway-r)\"");
        return;
    }
    /* torus wrap-around: a stub off each border, labelled */
    x2 = d == FTM_DIR_E ? x1 + g->w / 2.0 + g->gap / 2.0 : x1;
    y2 = d == FTM_DIR_S ? y1 + g->h / 2.0 + g->gap / 2.0 : y1;
    double x3 = d == FTM_DIR_E ? cx(g, cb) - g->w / 2.0 - g->gap / 2.0 : cx(g, cb);
    double y3 = d == FTM_DIR_S ? cy(g, rb) - g->h / 2.0 - g->gap / 2.0 : cy(g, rb);
    fprintf(f, "<line class=\"%s wrap\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
               "<line class=\"%s wrap\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
            cls, x1, y1, x2, y2, cls, x3, y3, cx(g, cb), cy(g, rb));
    fprintf(f, "<text class=\"wraplabel\" x=\"%.1f\" y=\"%.1f\">wrap</text>"
               "<text class=\"wraplabel\" x=\"%.1f\" y=\"%.1f\">wrap</text>\n",
            x2, y2 - 3, x3, y3 - 3);
}

/* The ring of the 1-D algorithms, as a faint closed path along its hops. */
static void ring_path(FILE *f, const ftm_mesh *m, const geo *g, const ftm_ring *ring)
{
    if (!ring || ring->n < 2)
        return;
    fprintf(f, "<path class=\"ring\" d=\"");
    for (int i = 0; i < ring->n; i++) {
        int at = ring->chips[i];
        fprintf(f, "%s%.1f %.1f", i ? " L" : "M", cx(g, ftm_mesh_col(m, at)), cy(g, ftm_mesh_row(m, at)));
        for (int h = ring->path_off[i]; h < ring->path_off[i + 1] - 1; h++) {
            at = ftm_mesh_neighbor(m, at, ring->dirs[h]);
            fprintf(f, " L%.1f %.1f", cx(g, ftm_mesh_col(m, at)), cy(g, ftm_mesh_row(m, at)));
        }
    }
    fprintf(f, " Z\"/>\n");
}

/* A chip's values as text lines; the page contract: the element's text is
 * the values separated by spaces. */
static void chip_values(FILE *f, const geo *g, const ftm_lesson *l, int c, double x, double y)
{
    const int64_t *v = l->frame[0].vals + (size_t)c * l->count;
    fprintf(f, "<text class=\"chip\" data-row=\"%d\" data-col=\"%d\" data-id=\"%d\" x=\"%.1f\" "
               "y=\"%.1f\">", ftm_mesh_row(&l->mesh, c), ftm_mesh_col(&l->mesh, c), c, x, y);
    for (size_t k = 0; k < l->count; k++) {
        if (k % (size_t)g->vpl == 0)
            fprintf(f, "%s<tspan x=\"%.1f\" dy=\"%s\">", k ? "</tspan>" : "", x, k ? "15" : "0");
        fprintf(f, "%lld ", (long long)v[k]);
    }
    fprintf(f, "</tspan></text>\n");
}

static void chips(FILE *f, const geo *g, const ftm_lesson *l)
{
    const ftm_mesh *m = &l->mesh;
    for (int c = 0; c < m->nchips; c++) {
        double x = cx(g, ftm_mesh_col(m, c)) - g->w / 2.0, y = cy(g, ftm_mesh_row(m, c)) - g->h / 2.0;
        int r = ftm_mesh_row(m, c), col = ftm_mesh_col(m, c);
        if (!ftm_mesh_alive(m, c)) {
            fprintf(f, "<g class=\"dead\"><rect class=\"box deadbox\" x=\"%.1f\" y=\"%.1f\" width=\"%d\" "
                       "height=\"%d\" rx=\"6\"/><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                       "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/><text class=\"label\" "
                       "x=\"%.1f\" y=\"%.1f\">(%d,%d) dead</text></g>\n",
                    x, y, g->w, g->h, x, y, x + g->w, y + g->h, x + g->w, y, x, y + g->h,
                    x + 6, y + 14, r, col);
            continue;
        }
        fprintf(f, "<rect class=\"box\" id=\"box%d\" x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%d\" "
                   "rx=\"6\"/><text class=\"label\" x=\"%.1f\" y=\"%.1f\">(%d,%d)</text>\n",
                c, x, y, g->w, g->h, x + 6, y + 14, r, col);
        chip_values(f, g, l, c, x + 8, y + 30);
    }
    for (int c = 0; c < m->cols; c++)
        fprintf(f, "<text class=\"coord\" x=\"%.1f\" y=\"%d\">col %d</text>\n", cx(g, c) - 14,
                14, c);
    for (int r = 0; r < m->rows; r++)
        fprintf(f, "<text class=\"coord\" x=\"4\" y=\"%.1f\">row %d</text>\n", cy(g, r) + 4, r);
}

/* A transfer's route as one arrow segment per hop, each from the edge of
 * one box to the edge of the next (so arrows never cover the values; a
 * wrap hop leaves one border and comes back at the other), shifted right
 * of the travel direction so opposite transfers do not overlap. Then the
 * chips in between, which forward it. */
static void xfer_segments(FILE *f, const ftm_mesh *m, const geo *g, const ftm_lesson_xfer *x)
{
    int at = x->src;
    fputc('[', f);
    for (int h = 0; h < x->nhops; h++) {
        int d = x->dirs[h], nb = ftm_mesh_neighbor(m, at, d);
        double dx = d == FTM_DIR_E ? 1 : d == FTM_DIR_W ? -1 : 0;
        double dy = d == FTM_DIR_S ? 1 : d == FTM_DIR_N ? -1 : 0;
        double half = dx != 0 ? g->w / 2.0 + 2 : g->h / 2.0 + 2, out = half + g->gap / 2.0 - 2;
        double ox = -dy * 9, oy = dx * 9; /* right of travel */
        double x1 = cx(g, ftm_mesh_col(m, at)) + ox, y1 = cy(g, ftm_mesh_row(m, at)) + oy;
        double x2 = cx(g, ftm_mesh_col(m, nb)) + ox, y2 = cy(g, ftm_mesh_row(m, nb)) + oy;
        /* a wrap hop goes against its direction on the page */
        int wrap = (x2 - x1) * dx < 0 || (y2 - y1) * dy < 0;
        if (wrap)
            fprintf(f, "%s[%.1f,%.1f,%.1f,%.1f],[%.1f,%.1f,%.1f,%.1f]", h ? "," : "",
                    x1 + dx * half, y1 + dy * half, x1 + dx * out, y1 + dy * out,
                    x2 - dx * out, y2 - dy * out, x2 - dx * half, y2 - dy * half);
        else
            fprintf(f, "%s[%.1f,%.1f,%.1f,%.1f]", h ? "," : "", x1 + dx * half, y1 + dy * half,
                    x2 - dx * half, y2 - dy * half);
        at = nb;
    }
    fprintf(f, "],fwd:[");
    at = x->src;
    for (int h = 0; h + 1 < x->nhops; h++) {
        at = ftm_mesh_neighbor(m, at, x->dirs[h]);
        fprintf(f, "%s%d", h ? "," : "", at);
    }
    fputc(']', f);
}

static void frame_data(FILE *f, const ftm_lesson *l, const geo *g)
{
    const ftm_mesh *m = &l->mesh;
    fprintf(f, "var L={count:%zu,nchips:%d,steps:%d,died:%d,diedStep:%d,phase:[", l->count,
            m->nchips, l->nframes - 1, l->died, l->died_step);
    for (int k = 0; k < l->nframes; k++)
        fprintf(f, "%s\"%s\"", k ? "," : "", l->frame[k].phase); /* static ASCII phase names */
    fprintf(f, "],\nvals:[\n");
    for (int k = 0; k < l->nframes; k++) {
        fputc('[', f);
        for (size_t i = 0; i < (size_t)m->nchips * l->count; i++)
            fprintf(f, "%s%lld", i ? "," : "", (long long)l->frame[k].vals[i]);
        fprintf(f, "]%s\n", k + 1 < l->nframes ? "," : "");
    }
    fprintf(f, "],\nxf:[\n");
    for (int k = 0; k < l->nframes; k++) {
        fputc('[', f);
        for (int i = 0; i < l->frame[k].nx; i++) {
            const ftm_lesson_xfer *x = &l->frame[k].x[i];
            fprintf(f, "%s{s:%d,d:%d,sum:%d,first:%zu,n:%zu,v:[", i ? "," : "", x->src, x->dst,
                    x->red != 0, x->first, x->n);
            for (size_t j = 0; j < x->n && x->sent; j++)
                fprintf(f, "%s%lld", j ? "," : "", (long long)x->sent[j]);
            fprintf(f, "],seg:");
            xfer_segments(f, m, g, x);
            fputc('}', f);
        }
        fprintf(f, "]%s\n", k + 1 < l->nframes ? "," : "");
    }
    fprintf(f, "]};\n");
}

static const char page_css[] =
    "body{font-family:system-ui,sans-serif;margin:16px;background:#fafafa;color:#222}\n"
    "h1{font-size:20px;margin:0 0 6px}\n"
    "#bar{margin:8px 0;display:flex;gap:6px;align-items:center;flex-wrap:wrap}\n"
    "button{font-size:15px;padding:4px 10px}\n"
    "#caption{font-size:15px;margin:6px 0;min-height:1.4em}\n"
    "svg{background:#fff;border:1px solid #ccc}\n"
    ".box{fill:#eef4ff;stroke:#557;stroke-width:1.5}.deadbox{fill:#eee;stroke:#999}\n"
    ".dead line{stroke:#c33;stroke-width:2}\n"
    ".label{font:bold 12px sans-serif;fill:#335}.coord{font:11px sans-serif;fill:#777}\n"
    ".chip{font:13px monospace;fill:#111}.chip .changed{fill:#c0392b;font-weight:bold}\n"
    ".link{stroke:#bbb;stroke-width:4}.link.dead{stroke:#c33;stroke-dasharray:5 4}\n"
    ".link.oneway{stroke:#e67e22;stroke-dasharray:5 4}.wraplabel{font:10px sans-serif;fill:#999}\n"
    ".ring{fill:none;stroke:#6fa8dc;stroke-width:10;stroke-opacity:.25;stroke-linejoin:round}\n"
    ".arrow{stroke:#2e86c1;stroke-width:2.5;fill:none}.arrow.copy{stroke:#27ae60}\n"
    ".sent{font:bold 12px monospace;fill:#2e86c1}.sent.copy{fill:#27ae60}\n"
    ".box.fwd{stroke:#e67e22;stroke-width:3;stroke-dasharray:6 3}\n"
    "#legend{font-size:13px;color:#444;margin:6px 0;max-width:60em}\n";

/* The player: ES2017, no modules. Builds each chip's text from the frame,
 * marks values that changed, draws the step's transfers as arrows. */
static const char page_js[] =
    "(function(){\n"
    "var cur=0,timer=null,NS='http://www.w3.org/2000/svg';\n"
    "var chips=Array.prototype.slice.call(document.querySelectorAll('text.chip'));\n"
    "var arrows=document.getElementById('arrows');\n"
    "function vals(k,id){return L.vals[k].slice(id*L.count,(id+1)*L.count);}\n"
    "function caption(k){\n"
    " if(k===0)return 'Step 0: every chip holds its own numbers.';\n"
    " var p=L.phase[k]||'', s='Step '+k+' of '+L.steps+(p?' ('+p+')':'')+': ';\n"
    " if(L.died>=0&&k>L.diedStep)return s+'a chip has died; the others stop and wait for recovery.';\n"
    " if(/reduce-scatter|reduce/.test(p))return s+'blue arrows carry a partial sum; the receiver adds it (red: changed).';\n"
    " if(/gather|broadcast/.test(p))return s+'green arrows carry a finished sum; the receiver copies it.';\n"
    " return s+'arrows show what moved (blue: added, green: copied).';}\n"
    "function show(k){\n"
    " k=Math.max(0,Math.min(L.steps,k|0));cur=k;\n"
    " chips.forEach(function(t){\n"
    "  var id=+t.getAttribute('data-id'),v=vals(k,id),p=k?vals(k-1,id):v,x=t.getAttribute('x'),per=PER;\n"
    "  while(t.firstChild)t.removeChild(t.firstChild);\n"
    "  var line=null;\n"
    "  for(var i=0;i<v.length;i++){\n"
    "   if(i%per===0){line=document.createElementNS(NS,'tspan');line.setAttribute('x',x);\n"
    "    line.setAttribute('dy',i?'15':'0');t.appendChild(line);}\n"
    "   var s=document.createElementNS(NS,'tspan');s.textContent=v[i]+' ';\n"
    "   if(v[i]!==p[i])s.setAttribute('class','changed');line.appendChild(s);}\n"
    " });\n"
    " while(arrows.firstChild)arrows.removeChild(arrows.firstChild);\n"
    " Array.prototype.forEach.call(document.querySelectorAll('rect.fwd'),function(r){r.setAttribute('class','box');});\n"
    " (L.xf[k]||[]).forEach(function(x){\n"
    "  var g=document.createElementNS(NS,'g');\n"
    "  x.seg.forEach(function(s,i){var l=document.createElementNS(NS,'line');\n"
    "   l.setAttribute('x1',s[0]);l.setAttribute('y1',s[1]);l.setAttribute('x2',s[2]);l.setAttribute('y2',s[3]);\n"
    "   l.setAttribute('class','arrow'+(x.sum?'':' copy'));\n"
    "   if(i===x.seg.length-1)l.setAttribute('marker-end',x.sum?'url(#head)':'url(#headc)');g.appendChild(l);});\n"
    "  x.fwd.forEach(function(c){var r=document.getElementById('box'+c);if(r)r.setAttribute('class','box fwd');});\n"
    "  if(x.v.length&&x.v.length<=3){var m=x.seg[x.seg.length-1],t=document.createElementNS(NS,'text');\n"
    "   var vert=m[0]===m[2];t.setAttribute('x',(m[0]+m[2])/2+(vert?(m[1]<m[3]?-4:6):0));\n"
    "   t.setAttribute('y',(m[1]+m[3])/2+(vert?4:(m[0]<m[2]?16:-6)));\n"
    "   t.setAttribute('text-anchor',vert&&m[1]<m[3]?'end':vert?'start':'middle');\n"
    "   t.setAttribute('class','sent'+(x.sum?'':' copy'));t.textContent=(x.sum?'+':'=')+x.v.join(' ');g.appendChild(t);}\n"
    "  arrows.appendChild(g);});\n"
    " document.getElementById('step').textContent=String(k);\n"
    " document.getElementById('caption').textContent=caption(k);\n"
    " try{history.replaceState(null,'','#step='+k);}catch(e){}\n"
    "}\n"
    "function play(){if(timer){clearInterval(timer);timer=null;btn('play','Play');return;}\n"
    " if(cur>=L.steps)show(0);btn('play','Pause');\n"
    " timer=setInterval(function(){if(cur>=L.steps){play();return;}show(cur+1);},900);}\n"
    "function btn(id,t){document.getElementById(id).textContent=t;}\n"
    "function fromHash(){var m=/step=(\\d+)/.exec(location.hash);return m?+m[1]:0;}\n"
    "document.getElementById('first').onclick=function(){show(0);};\n"
    "document.getElementById('prev').onclick=function(){show(cur-1);};\n"
    "document.getElementById('play').onclick=play;\n"
    "document.getElementById('next').onclick=function(){show(cur+1);};\n"
    "document.getElementById('last').onclick=function(){show(L.steps);};\n"
    "document.addEventListener('keydown',function(e){\n"
    " if(e.key==='ArrowRight'||e.key==='l')show(cur+1);else if(e.key==='ArrowLeft'||e.key==='h')show(cur-1);\n"
    " else if(e.key===' '||e.key==='k'){e.preventDefault();play();}\n"
    " else if(e.key==='Home')show(0);else if(e.key==='End')show(L.steps);else return;});\n"
    "window.addEventListener('hashchange',function(){if(fromHash()!==cur)show(fromHash());});\n"
    "show(fromHash());\n"
    "})();\n";

static void svg_defs(FILE *f)
{
    fprintf(f, "<defs>"
               "<marker id=\"head\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"6\" "
               "markerHeight=\"6\" orient=\"auto\"><path d=\"M0 0L10 5L0 10z\" fill=\"#2e86c1\"/></marker>"
               "<marker id=\"headc\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"6\" "
               "markerHeight=\"6\" orient=\"auto\"><path d=\"M0 0L10 5L0 10z\" fill=\"#27ae60\"/></marker>"
               "<marker id=\"oneway\" viewBox=\"0 0 10 10\" refX=\"5\" refY=\"5\" markerWidth=\"5\" "
               "markerHeight=\"5\" orient=\"auto\"><path d=\"M0 0L10 5L0 10z\" fill=\"#e67e22\"/></marker>"
               "<marker id=\"oneway-r\" viewBox=\"0 0 10 10\" refX=\"5\" refY=\"5\" markerWidth=\"5\" "
               "markerHeight=\"5\" orient=\"auto-start-reverse\"><path d=\"M0 0L10 5L0 10z\" "
               "fill=\"#e67e22\"/></marker></defs>\n");
}

int ftm_lesson_html(FILE *f, const ftm_lesson *l, const ftm_ring *ring, const char *title)
{
    if (!f || !l || l->nframes < 1)
        return FTM_EINVAL;
    const ftm_mesh *m = &l->mesh;
    geo g = layout(l);
    int W = 2 * g.margin + m->cols * (g.w + g.gap) - g.gap, H = 2 * g.margin + m->rows * (g.h + g.gap) - g.gap;
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>");
    ftm_svg_escape(f, title ? title : "ftmesh demo");
    fprintf(f, "</title>\n<style>\n%s</style></head><body>\n<h1>", page_css);
    ftm_svg_escape(f, title ? title : "ftmesh demo");
    fprintf(f, "</h1>\n<div id=\"bar\"><button id=\"first\" title=\"Home\">|&#x25C0;</button>"
               "<button id=\"prev\" title=\"Left arrow\">&#x25C0; Back</button>"
               "<button id=\"play\" title=\"Space\">Play</button>"
               "<button id=\"next\" title=\"Right arrow\">Forward &#x25B6;</button>"
               "<button id=\"last\" title=\"End\">&#x25B6;|</button>"
               "<span>step <b id=\"step\">0</b> of <b id=\"steps\">%d</b></span>"
               "<span style=\"color:#777\">keys: &larr; &rarr; space Home End</span></div>\n"
               "<div id=\"caption\">Step 0: every chip holds its own numbers.</div>\n",
            l->nframes - 1);
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\">\n", W, H, W, H);
    svg_defs(f);
    for (int c = 0; c < m->nchips; c++) {
        link_line(f, m, &g, c, FTM_DIR_E);
        link_line(f, m, &g, c, FTM_DIR_S);
    }
    ring_path(f, m, &g, ring);
    chips(f, &g, l);
    fprintf(f, "<g id=\"arrows\"></g>\n</svg>\n<div id=\"legend\">Blue arrow: a partial sum "
               "sent and added by the receiver (+value). Green arrow: a finished sum copied "
               "(=value). Red numbers: changed in this step. Orange dashed box: a chip "
               "forwarding a detour. Red dashed link: dead; orange: one way only (arrow: the "
               "working direction)%s.</div>\n<script>\n", ring ? ". Pale blue band: the ring" : "");
    frame_data(f, l, &g);
    fprintf(f, "var PER=%d;\n", g.vpl);
    fputs(page_js, f);
    fprintf(f, "</script>\n</body></html>\n");
    return ferror(f) ? FTM_EIO : 0;
}
