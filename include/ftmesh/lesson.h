/* Lesson: a real allreduce with small integers, recorded, and turned into
 * the step-by-step story the teaching demo tells (ftmesh demo).
 *
 * ftm_lesson_run runs the algorithm's OWN schedule (never a fallback to
 * another algorithm's) on the chip threads (the same runtime as ftmesh
 * allreduce) with int64 inputs a learner can add in their head, recording
 * every chip's events with buffer snapshots into a recorder (trace.h).
 * ftm_lesson_frames then reads the recorded run into frames told in ONE
 * global order: frame 0 holds every chip's inputs, frame k every chip's
 * buffer after round k and the transfers completed in round k.
 *
 * Rounds: a transfer is in round n when the latest transfer it waits for
 * is in round n - 1. It waits for every transfer of its sender's earlier
 * steps (a chip starts a step when its previous one is done) and of its
 * receiver's earlier steps (the receiver combines it in that step). So in
 * a line "A -> B #i: x + y = z" of round n, y is what A held after round
 * n - 1 and x what B held just before (after round n - 1 and the lines
 * into B listed before it in round n). Within a round, lines come in the
 * order the cost model's replay (costmodel.h, default parameters)
 * completes them. The values sent (y) are the recorded snapshots; x and z
 * are the running sums in that order, checked against every chip's
 * recorded final buffer (ftm_lesson.mismatch).
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

/* One transfer completed in a round. */
typedef struct ftm_lesson_xfer {
    int src, dst;
    int red;              /* ftm_red: FTM_RED_SUM_I64 or FTM_RED_COPY */
    size_t first, n;      /* elements [first, first + n) of the receiver */
    const int64_t *sent;  /* [n] the values sent (y; the sender's snapshot) */
    const int64_t *before;/* [n] the receiver's values just before (x) */
    const int64_t *after; /* [n] the receiver's values once combined (z);
                           * NULL when the transfer was lost */
    int nhops;            /* links crossed (> 1: a detour through other chips) */
    const unsigned char *dirs; /* [nhops] the route from src */
    const char *phase;    /* the sender's step phase */
    int src_step;         /* the sender's step index */
    double t_s;           /* modeled time its receive completes */
} ftm_lesson_xfer;

typedef struct ftm_lesson_frame {
    const char *phase;    /* the round's phase (its first transfer's) or "" */
    const char *phase2;   /* another phase in the same round, or NULL */
    int64_t *vals;        /* [nchips * count]: every chip's buffer after the round */
    unsigned char *done;  /* [nchips]: 1 if the chip is alive after the round */
    int *steps_done;      /* [nchips]: the chip's steps finished by then */
    ftm_lesson_xfer *x;
    int nx;
} ftm_lesson_frame;

typedef struct ftm_lesson {
    ftm_mesh mesh;        /* the mesh the run used */
    const char *algo;     /* the schedule that ran (always the asked one) */
    size_t count;         /* int64 elements per chip */
    int nframes;          /* frames[0]: inputs; frames[k]: after round k */
    ftm_lesson_frame *frame;
    int *nsteps;          /* [nchips]: steps in the chip's program */
    int died;             /* chip that died during the run, or -1 */
    int died_step;        /* died in round died_step + 1 (the last frame),
                           * or -1 */
    long mismatch;        /* values where the replayed order disagrees with
                           * what the chips recorded (0 for a sound lesson) */
    void *priv;           /* storage of the frames' transfer values */
} ftm_lesson;

/* Runs allreduce `algo`'s own schedule (registry name;
 * ftm_allreduce_build_own) of count int64 elements per chip on mesh m,
 * recording into tr (created for m's chip count with snap_limit >=
 * count * 8). Returns 0, an error (FTM_ENOTSUP: the algorithm cannot run
 * on m), and *wrong (may be NULL) counts elements that do not equal the
 * exact sum. */
FTM_EXTERN int ftm_lesson_run(const ftm_mesh *m, const char *algo, size_t count,
                              ftm_trace *tr, uint64_t *wrong);

/* The frames of recorded run `run` of tr (0 for the first), whose mesh is
 * m. The transfers' values point into tr's snapshots: keep tr until
 * ftm_lesson_free. Returns 0, FTM_EINVAL (no such run, or no snapshots: buffers larger
 * than the recorder's snap_limit) or FTM_ENOMEM. */
FTM_EXTERN int ftm_lesson_frames(const ftm_trace *tr, int run, const ftm_mesh *m, ftm_lesson *out);
FTM_EXTERN void ftm_lesson_free(ftm_lesson *l);

/* A scripted death: chip dies at the start of round `round` (1 ..
 * nframes - 1). The lesson keeps frames 0 .. round; in that round every
 * transfer from, to or through the chip is lost (after NULL, receiver
 * unchanged) and the others complete. Returns 0 or FTM_EINVAL. */
FTM_EXTERN int ftm_lesson_kill(ftm_lesson *l, int chip, int round);

/* The round in which chip sends its transfer number k (from 0, in the
 * lesson's order), or -1 when it sends fewer; *nsent (may be NULL): how
 * many it sends in all. */
FTM_EXTERN int ftm_lesson_send_round(const ftm_lesson *l, int chip, int k, int *nsent);

/* The exact sum of element k over the healthy chips of m (chip c's input
 * is 1 + (c + k) mod 9). */
FTM_EXTERN int64_t ftm_lesson_expected(const ftm_mesh *m, size_t k);

/* 1 when every value transfer x carries is its position's final sum
 * (ftm_lesson_expected on l's mesh): a finished sum, not a partial one
 * (a 2-D schedule's column phase copies partial sums); 0 otherwise. */
FTM_EXTERN int ftm_lesson_xfer_final(const ftm_lesson *l, const ftm_lesson_xfer *x);

/* A round's phase in words a student follows ("row reduce-scatter", "up
 * the tree"; where a schedule names one phase for all its steps, what
 * moved: "along columns, adding"), into b. */
FTM_EXTERN void ftm_lesson_phase_words(const ftm_lesson *l, int k, char *b, size_t n);

/* One part of the lesson's page. */
struct ftm_ring;
typedef struct ftm_lesson_part {
    const char *title;        /* "2. ring allreduce, step by step" */
    const char *intro;        /* what the part tells (plain text; may be NULL) */
    const ftm_lesson *l;      /* its mesh and frames */
    const struct ftm_ring *ring; /* drawn with its direction, or NULL */
    const struct ftm_ring *ring2; /* bidir's other ring, with its own detour
                                   * routes (ftm_router_reverse), or NULL */
    const struct ftm_ring *const *bands; /* 2d: [nbands] rings of the bands that
                                   * go around a fault, each band's one way
                                   * then the other (drawn at step 0), or NULL */
    int nbands;
    int chessboard;           /* 1: chips coloured B/w (the two-colour argument) */
    int verified;             /* 1: the last step holds the exact sums (checked) */
    int picture;              /* 1: only the mesh at step 0 (l's inputs) */
} ftm_lesson_part;

/* Writes one self-contained HTML page (inline CSS, JavaScript and SVG, no
 * network) that tells the parts p[0 .. n) one after the other: each
 * part's mesh, holes, dead links (a link dead one way only: a line of class
 * "link oneway" beside it, an arrow the dead way) and torus wraps (stubs
 * at both borders), the ring with its direction, each step's transfers as arrows (lost ones
 * red) and every chip's values by position, finished sums highlighted.
 * Page contract: each healthy chip of the shown part is an SVG <text
 * class="chip" data-row data-col> whose text is its current values
 * separated by spaces, with class "dead" too when it is dead at the shown
 * step (a hole: a class "hole dead" group with data-row data-col holding an
 * empty text of class "chip dead" with data-row data-col); #step
 * holds the current step, #steps the part's number of steps, #part the
 * part's number (from 1), #parts the number of parts; the fragment
 * #part=P&step=N opens part P at step N, #step=N alone step N of part
 * main_part (from 1). A tree's root (the one healthy chip that sends no
 * partial sum) has a box of class "root" and a "root" label (class
 * rootlabel, data-row data-col); bidir's two rings are drawn in two
 * colours, its segments and the arrows of each direction of class "r1"
 * (the ring's order) or "r2" (the other way: ring2's routes). Returns 0,
 * FTM_EINVAL or FTM_EIO. */
FTM_EXTERN int ftm_lesson_html_parts(FILE *f, const ftm_lesson_part *p, int n, int main_part,
                                     const char *title);

#endif
