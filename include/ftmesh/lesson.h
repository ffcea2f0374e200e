/* Lesson: a real allreduce with small integers, recorded, and turned into
 * the step-by-step story the teaching demo tells (ftmesh demo).
 *
 * ftm_lesson_run runs the algorithm's schedule on the chip threads (the
 * same runtime as ftmesh allreduce) with int64 inputs a learner can add in
 * their head, recording every chip's events with buffer snapshots into a
 * recorder (trace.h). ftm_lesson_frames then reads the recorded events, and
 * only them, into frames: frame 0 holds every chip's inputs, frame k every
 * chip's buffer after its step k and the transfers made in that step. The
 * story is what the chips did, never a separate script of what they should
 * do.
 *
 * Limit: snapshots are taken only for buffers of at most
 * FTM_LESSON_MAX_BYTES bytes per chip (512 int64 values), which is plenty
 * for a lesson (one value per chip and block) and keeps recording cheap.
 */
#ifndef FTMESH_LESSON_H
#define FTMESH_LESSON_H

#include "ftmesh/export.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "ftmesh/mesh.h"
#include "ftmesh/trace.h"

#define FTM_LESSON_MAX_BYTES 4096

/* The input of element k on chip c: 1 + (c + k) mod 9. */
FTM_EXTERN int64_t ftm_lesson_input(int chip, size_t k);

/* One transfer made during a step. */
typedef struct ftm_lesson_xfer {
    int src, dst;
    int red;              /* ftm_red: FTM_RED_SUM_I64 or FTM_RED_COPY */
    size_t first, n;      /* elements [first, first + n) of the buffers */
    const int64_t *sent;  /* [n] the values sent (the sender's snapshot) */
    const int64_t *after; /* [n] the receiver's values once combined */
    int nhops;            /* links crossed (> 1: a detour through other chips) */
    const unsigned char *dirs; /* [nhops] the route from src */
} ftm_lesson_xfer;

typedef struct ftm_lesson_frame {
    const char *phase;    /* the step's phase ("reduce-scatter", ...) or "" */
    int64_t *vals;        /* [nchips * count]: every chip's buffer after the step */
    unsigned char *done;  /* [nchips]: 1 if the chip got this far */
    ftm_lesson_xfer *x;
    int nx;
} ftm_lesson_frame;

typedef struct ftm_lesson {
    ftm_mesh mesh;        /* the mesh the run used */
    const char *algo;
    size_t count;         /* int64 elements per chip */
    int nframes;          /* frames[0]: inputs; frames[k]: after step k */
    ftm_lesson_frame *frame;
    int died;             /* chip that died during the run, or -1 */
    int died_step;        /* the step it died in (frame died_step + 1 is
                           * the last one it reached), or -1 */
} ftm_lesson;

/* Runs allreduce `algo` (registry name) of count int64 elements per chip on
 * mesh m, recording into tr (created for m's chip count with snap_limit >=
 * count * 8). With fail_chip >= 0 that chip dies after sending fail_after
 * packets (0: half of its packets): the run stops with FTM_ECHIPDEAD (the
 * recording stays). Returns 0, FTM_ECHIPDEAD, or an error; *wrong (may be
 * NULL) counts elements that do not equal the exact sum after a full run. */
FTM_EXTERN int ftm_lesson_run(const ftm_mesh *m, const char *algo, size_t count, int fail_chip,
                   uint64_t fail_after, ftm_trace *tr, uint64_t *wrong);

/* The frames of recorded run `run` of tr (0 for the first), whose mesh is
 * m. The transfers' values point into tr's snapshots: keep tr until
 * ftm_lesson_free. Returns 0, FTM_EINVAL (no such run, or no snapshots: buffers larger
 * than the recorder's snap_limit) or FTM_ENOMEM. */
FTM_EXTERN int ftm_lesson_frames(const ftm_trace *tr, int run, const ftm_mesh *m, ftm_lesson *out);
FTM_EXTERN void ftm_lesson_free(ftm_lesson *l);

/* The exact sum of element k over the healthy chips of m. */
FTM_EXTERN int64_t ftm_lesson_expected(const ftm_mesh *m, size_t k);

/* Writes one self-contained HTML page (inline CSS, JavaScript and SVG)
 * that animates the lesson: mesh, holes, dead links, the ring of the 1-D
 * algorithms (ring may be NULL), each step's transfers as arrows and every
 * chip's values. Page contract: each healthy chip is an SVG <text
 * class="chip" data-row data-col> whose text is its current values
 * separated by spaces; #step holds the current step, #steps the number of
 * steps; the fragment #step=N opens step N. Returns 0, FTM_EINVAL or
 * FTM_EIO. */
struct ftm_ring;
FTM_EXTERN int ftm_lesson_html(FILE *f, const ftm_lesson *l, const struct ftm_ring *ring, const char *title);

#endif
