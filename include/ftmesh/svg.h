/* SVG pictures of a mesh: chips and holes with row and column numbers, the
 * links (two lanes per link, one per direction, coloured by the bytes each
 * direction carried: grey when idle, then light yellow to dark red, with a
 * scale in MB), rings or a schedule's routes as arrows, detours drawn apart
 * with a dot on every hop, dead links dashed red, one-way dead links with an
 * arrow the way that still works, torus wrap links as stubs that leave one
 * border and come back at the other, a legend of everything drawn, and for
 * training the loss curve with the fault events, beside the mesh. */
#ifndef FTMESH_SVG_H
#define FTMESH_SVG_H

#include "ftmesh/export.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "ftmesh/mesh.h"
#include "ftmesh/router.h"
#include "ftmesh/sched.h"

#define FTM_SVG_MAX_DETOURS 16

/* Something that happened at a training step (a chip dying, the resume). */
typedef struct ftm_svg_event {
    long step;
    const char *label;     /* escaped on output */
    int repair;            /* 1: something came back (drawn green) */
} ftm_svg_event;

/* What to draw; every member may be 0 / NULL. */
typedef struct ftm_svg_picture {
    const char *title;             /* escaped */
    const char *note;              /* a second line under the title (NULL:
                                      where sched ran another algorithm's
                                      schedule, which and why) */
    const ftm_ring *rings;         /* [nrings], drawn with arrows */
    const int *alternate;          /* [nrings] or NULL: 1 = dashed, e.g. a
                                      2-D band routed around a hole */
    int nrings;
    const ftm_sched *sched;        /* its routes, each once, as arrows */
    const char *phase;             /* only sends of this phase (NULL: all) */
    size_t lo, hi;                 /* ... from source bytes [lo, hi) (hi 0:
                                      all) */
    int only_detours;              /* 1: of those, only routes of several
                                      hops, and only when there are at most
                                      FTM_SVG_MAX_DETOURS (else a note says
                                      how many): a busy schedule stays
                                      legible */
    const uint64_t *link_bytes;    /* [nchips * 4], chip * 4 + dir: heat */
    const double *loss;            /* [nloss] loss per training step */
    long nloss;
    const ftm_svg_event *events;   /* [nevents] marked on the loss curve */
    int nevents;
    /* the run's timeline under the loss curve (NULL: none): chips alive
     * and wall seconds per step, [nloss] each, the events marked */
    const int *chips;
    const double *step_s;
} ftm_svg_picture;

/* Writes s with <, >, & and " escaped for XML text and attribute values
 * (the SVG here, the demo's HTML page); a control character other than
 * tab, newline and carriage return, which XML 1.0 cannot hold, as '?'. */
FTM_EXTERN void ftm_svg_escape(FILE *f, const char *s);

/* Writes one standalone SVG document to f. Returns 0, FTM_EINVAL (no f or
 * m, a ring or schedule that does not fit m) or FTM_EIO. */
FTM_EXTERN int ftm_svg_draw(FILE *f, const ftm_mesh *m, const ftm_svg_picture *p);

/* The same with rings, alternate flags, link bytes and a title only. */
FTM_EXTERN int ftm_svg_write(FILE *f, const ftm_mesh *m, const ftm_ring *rings, const int *alternate,
                  int nrings, const uint64_t *link_bytes, const char *title);

#endif
