/* ftmesh demo: the narrated lesson (cmd_demo.c parses and runs the parts,
 * demo_text.c tells them in the terminal). */
#ifndef FTMESH_CLI_DEMO_H
#define FTMESH_CLI_DEMO_H

#include "ftmesh/lesson.h"
#include "ftmesh/mesh.h"
#include "ftmesh/plan2d.h"
#include "ftmesh/router.h"

/* How the story is told. */
typedef struct demo_out {
    int color;      /* ANSI colours (a terminal, no --no-color, no NO_COLOR) */
    int tty;        /* stdout is a terminal: --step and --delay apply */
    int step;       /* wait for Enter between steps */
    double delay;   /* seconds between steps */
} demo_out;

/* What the page tells: the parts, and the lessons, recorders and rings
 * they point into (owned here until demo_story_free). */
#define DEMO_MAX_PARTS 6
typedef struct demo_story {
    ftm_lesson_part part[DEMO_MAX_PARTS];
    int n, main_part;       /* main_part: the allreduce step by step (from 1) */
    ftm_lesson les[DEMO_MAX_PARTS];
    ftm_trace *tr[DEMO_MAX_PARTS];
    ftm_ring ring[DEMO_MAX_PARTS];
    ftm_ring ring2[DEMO_MAX_PARTS]; /* bidir's other ring (the page draws it) */
    ftm_plan2d plan[DEMO_MAX_PARTS]; /* 2d's bands (have_plan): a part's picture */
    int have_plan[DEMO_MAX_PARTS];   /* draws the rings of those around a fault */
    const ftm_ring *bandp[DEMO_MAX_PARTS][2 * FTM_MESH_MAX_SIDE];
    char title[DEMO_MAX_PARTS][96];
    char intro[DEMO_MAX_PARTS][3072];
} demo_story;

/* Adds a part told from *l (moved into the story, with its recorder tr
 * and ring, whose ownership passes too; ring may be NULL). Returns the
 * part, or NULL when the story is full (then nothing is taken). */
ftm_lesson_part *demo_story_add(demo_story *st, const char *title, ftm_lesson *l, ftm_trace *tr,
                                ftm_ring *ring);
void demo_story_free(demo_story *st);
/* Part i's ring2: where it runs bidir over a ring, the counter-rotating
 * ring that bidir's schedule runs (its detours can take other routes). */
void demo_story_ring2(demo_story *st, int i);
/* With algo 2d: the rings of m's bands that go around a fault, both ways,
 * into part i (the story keeps the plan); 0, or FTM_ENOMEM. */
int demo_story_bands(demo_story *st, int i, const ftm_mesh *m, const char *algo);
/* 1 when algo runs the router's ring (ring, bidir). */
int demo_runs_ring(const char *algo);
/* 0 when algo's own schedule can run on m (and, with victim >= 0, on m
 * without it); else one line saying why not (CLI_EXIT_USAGE). */
int demo_own_ok(const char *algo, const ftm_mesh *m, int victim);
/* The router's ring of m into *ring when algo runs it (demo_runs_ring):
 * 1, else 0 with *ring empty (the page draws no ring for the others). */
int demo_story_ring(const ftm_mesh *m, const char *algo, ftm_ring *ring);

/* ANSI colour codes, or "" without colour. */
const char *demo_c(const demo_out *o, const char *code);
#define D_BOLD "1"
#define D_RED "31"
#define D_GREEN "32"
#define D_YELLOW "33"
#define D_BLUE "34"
#define D_CYAN "36"
#define D_DIM "2"
#define D_OFF "0"

/* A section heading. */
void demo_heading(const demo_out *o, const char *text);
/* Waits for Enter (--step) or sleeps (--delay), on a terminal only. */
void demo_pause(const demo_out *o);
/* The mesh, its hole(s) and the ring; with why the ring must detour (the
 * two-colour argument); count: the numbers each chip holds. */
void demo_mesh(const demo_out *o, const ftm_mesh *m, const ftm_ring *ring, size_t count);
/* The same without the two-colour argument: the mesh and its holes, and
 * ring when not NULL (for an algorithm that runs no ring, pass NULL). */
void demo_mesh_picture(const ftm_mesh *m, const ftm_ring *ring, size_t count);
/* The picture's sentence on m and its count numbers per chip, into b. */
void demo_mesh_words(const ftm_mesh *m, size_t count, char *b, size_t n);
/* Part 1's heading: "1. The mesh", "... and its hole(s)", "... and its
 * dead link(s)", or "1. The mesh, its hole(s) and its dead link(s)". */
const char *demo_mesh_title(const ftm_mesh *m);
/* The two-colour argument for m and its ring, as one paragraph. */
void demo_two_colour_words(const ftm_mesh *m, const ftm_ring *ring, char *b, size_t n);
/* Prints a paragraph wrapped at 76 columns, after an empty line. */
void demo_wrap(const char *s);
/* What algo does, a few lines of plain words (demo_text.c). */
const char *demo_algo_story(const char *algo);
/* For 2d and 2d-concurrent: the bands their plan makes on m ("Here the
 * bands are rows 0-1, 2-3.", "Here the band is row 0."), and for 2d why its
 * columns take the drift layout, into b (DEMO_BANDS_MAX bytes hold any
 * mesh's); "" for other algorithms. */
#define DEMO_BANDS_MAX 2048
void demo_bands_words(const ftm_mesh *m, const char *algo, char *b, size_t n);
/* Every chip's values in frame k (a table, wrapped to 80 columns). */
void demo_table(const demo_out *o, const ftm_lesson *l, int k);
/* Frames 1 .. last: each step's transfers and sums (last < 0: all). */
void demo_steps(const demo_out *o, const ftm_lesson *l, int last);
/* Frames first .. last (last < 0: all); from first to the end. */
void demo_steps_range(const demo_out *o, const ftm_lesson *l, int first, int last);
void demo_steps_from(const demo_out *o, const ftm_lesson *l, int first);
/* The final check: every healthy chip holds the exact sum. Returns the
 * number of wrong elements. */
long demo_check(const demo_out *o, const ftm_lesson *l);
/* Numbers per chip of algo's lesson on m: one block per chip and ring
 * direction (bidir runs two rings, each on half of the buffer: with one
 * number per chip each ring would get half a block per chip and half the
 * chips would idle). */
size_t demo_lesson_count(const ftm_mesh *m, const char *algo);
/* Where the survivors stand when chip l->died dies at the start of step
 * k: each one's last step in the lesson's global order (demo_repair.c);
 * page (pn bytes, or NULL) gets the list as a sentence for the page ("" when
 * the text has no list). Returns the latest of them (0: no survivor sent or
 * received). */
int demo_tell_behind(const demo_out *o, const ftm_lesson *l, int k, char *page, size_t pn);
/* Records algo on m (demo_lesson_count numbers) into a new recorder *tr
 * and reads its first run into *l. 0 or an FTM_E* code. */
int demo_record(const ftm_mesh *m, const char *algo, ftm_trace **tr, ftm_lesson *l);
/* Where `ftmesh allreduce --algo algo` (its default 8 MiB of floats) runs
 * another algorithm's schedule on m, a sentence saying so into b; else
 * "". The lesson always shows algo's own schedule. */
void demo_fallback_words(const ftm_mesh *m, const char *algo, char *b, size_t n);
/* Parts 4 and 5 (and the comeback): chip victim dies in the middle of
 * algo's allreduce on m, told under title; the survivors start over. */
int demo_tell_failure(const demo_out *o, const ftm_mesh *m, const char *algo, int victim,
                      const char *title, demo_story *st, long *wrong);
/* The failure story's end (demo_repair.c): the dead chip `victim` of m
 * comes back; algo runs again on m, recorded into tr as its run `run`,
 * told in the text and added as a part (verified). 0 or an error. */
int demo_tell_repair(const demo_out *o, const ftm_mesh *m, const char *algo, int victim,
                     ftm_trace *tr, int run, demo_story *st, long *wrong);

#endif
