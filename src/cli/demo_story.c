/* ftmesh demo: the parts the page tells, collected while the text is told
 * (demo.h). */
#include "demo.h"

#include "ftmesh/router.h"

#include <string.h>

int demo_runs_ring(const char *algo)
{
    return !strcmp(algo, "ring") || !strcmp(algo, "bidir");
}

int demo_story_ring(const ftm_mesh *m, const char *algo, ftm_ring *ring)
{
    memset(ring, 0, sizeof *ring);
    if (!demo_runs_ring(algo))
        return 0;
    return ftm_router_ring(m, ring) == 0;
}

ftm_lesson_part *demo_story_add(demo_story *st, const char *title, ftm_lesson *l, ftm_trace *tr,
                                ftm_ring *ring)
{
    if (st->n >= DEMO_MAX_PARTS)
        return NULL;
    int i = st->n++;
    st->les[i] = *l;
    memset(l, 0, sizeof *l);
    st->tr[i] = tr;
    if (ring) {
        st->ring[i] = *ring;
        memset(ring, 0, sizeof *ring);
    }
    snprintf(st->title[i], sizeof st->title[i], "%s", title);
    ftm_lesson_part *p = &st->part[i];
    memset(p, 0, sizeof *p);
    p->title = st->title[i];
    p->intro = st->intro[i];
    p->l = &st->les[i];
    p->ring = st->ring[i].n ? &st->ring[i] : NULL;
    return p;
}

void demo_story_free(demo_story *st)
{
    for (int i = 0; i < st->n; i++) {
        ftm_lesson_free(&st->les[i]);
        ftm_trace_destroy(st->tr[i]);
        if (st->ring[i].n)
            ftm_ring_free(&st->ring[i]);
    }
    memset(st, 0, sizeof *st);
}
