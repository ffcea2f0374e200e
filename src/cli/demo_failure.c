/* ftmesh demo: a chip dies in the middle of the allreduce, the survivors
 * start over on the chips left (demo.h); the comeback is demo_repair.c's. */
#include "cli.h"
#include "demo.h"
#include "ftmesh/error.h"
#include "ftmesh/lesson.h"
#include "ftmesh/router.h"
#include "ftmesh/trace.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* The recovery: the allreduce again on the chips left (run 1 of tr, which
 * passes to the story with the recovery's part). */
static int tell_recovery(const demo_out *o, const ftm_mesh *m, const char *algo, int victim,
                         ftm_trace *tr, demo_story *st, long *wrong)
{
    ftm_mesh m2;
    ftm_lesson l2;
    memset(&l2, 0, sizeof l2);
    int rc = ftm_mesh_copy(&m2, m);
    if (rc)
        return rc;
    m2.chip_dead[victim] = 1;
    /* the survivors reduce the same numbers, fewer chips (blocks grow) */
    size_t count = demo_lesson_count(m, algo);
    /* the router's ring only for the algorithms that run it */
    ftm_ring ring;
    int one_d = demo_runs_ring(algo);
    int have_ring = demo_story_ring(&m2, algo, &ring);
    if (one_d)
        demo_mesh(o, &m2, have_ring ? &ring : NULL, count);
    else
        demo_mesh_picture(&m2, NULL, count);
    rc = cli_demo_own_picture(&m2, algo, count);
    if (!rc)
        rc = ftm_lesson_run(&m2, algo, count, tr, NULL);
    if (!rc)
        rc = ftm_lesson_frames(tr, 1, &m2, &l2);
    long w = 0;
    char bands[DEMO_BANDS_MAX], fb[320];
    demo_bands_words(&m2, algo, bands, sizeof bands);
    demo_fallback_words(&m2, algo, fb, sizeof fb);
    if (!rc) {
        if (bands[0])
            demo_wrap(bands);
        if (fb[0])
            demo_wrap(fb);
        printf("\nThe recovery run takes %d steps (told as above; here its end):\n",
               l2.nframes - 1);
        demo_table(o, &l2, l2.nframes - 1);
        w = demo_check(o, &l2);
        *wrong += w;
    }
    ftm_lesson_part *p = rc ? NULL : demo_story_add(st, "The recovery", &l2, NULL,
                                                    have_ring ? &ring : NULL);
    if (p) {
        p->verified = w == 0;
        snprintf(st->intro[st->n - 1], sizeof st->intro[0], "The survivors run the %s "
                 "allreduce again from their own numbers, on the mesh without chip (%d,%d): "
                 "%d steps.%s%s%s%s At the last step every chip holds the sums of the chips "
                 "left.", algo, ftm_mesh_row(m, victim), ftm_mesh_col(m, victim),
                 st->les[st->n - 1].nframes - 1, bands[0] ? " " : "", bands, fb[0] ? " " : "",
                 fb);
        if (one_d && p->ring) { /* the page tells the rebuilt ring as the text does */
            size_t u = strlen(st->intro[st->n - 1]);
            char *at = st->intro[st->n - 1] + u;
            if (u + 1 < sizeof st->intro[0]) {
                *at++ = ' ';
                demo_two_colour_words(&m2, p->ring, at, sizeof st->intro[0] - u - 1);
            }
            p->chessboard = 1;
        }
        rc = demo_story_bands(st, st->n - 1, &m2, algo); /* the rebuilt bands' rings */
    }
    if (ring.n) /* not passed to the story */
        ftm_router_ring_free(&ring);
    ftm_lesson_free(&l2);
    ftm_mesh_free(&m2);
    return rc;
}

/* The victim's death in the lesson's order: the round of its middle
 * transfer, sent or received (-1: it sends nothing). A tree's leaf sends
 * once, early, and receives late: it dies before its receive, with its
 * numbers in the sums. *nsent its transfers, *before those it made before
 * that round. */
static int death_round(const ftm_lesson *l, int victim, int *nsent, int *before)
{
    int n = 0, k, i;
    ftm_lesson_send_round(l, victim, 0, nsent);
    for (k = 1; k < l->nframes; k++)
        for (i = 0; i < l->frame[k].nx; i++)
            n += l->frame[k].x[i].src == victim || l->frame[k].x[i].dst == victim;
    if (*nsent == 0)
        return -1;
    int round = -1;
    for (k = 1, n /= 2; k < l->nframes && round < 0; k++)
        for (i = 0; i < l->frame[k].nx && round < 0; i++)
            if ((l->frame[k].x[i].src == victim || l->frame[k].x[i].dst == victim) && n-- == 0)
                round = k;
    *before = 0;
    while (*before < *nsent && ftm_lesson_send_round(l, victim, *before, NULL) < round)
        ++*before;
    return round;
}

/* 1 when after round k every chip but the victim holds every sum of the
 * lesson's mesh (the victim's numbers in them). */
static int survivors_done(const ftm_lesson *l, int k, int victim)
{
    const int64_t *v = l->frame[k].vals;
    for (int c = 0; c < l->mesh.nchips; c++)
        for (size_t i = 0; c != victim && ftm_mesh_alive(&l->mesh, c) && i < l->count; i++)
            if (v[(size_t)c * l->count + i] != ftm_lesson_expected(&l->mesh, i))
                return 0;
    return 1;
}

/* Why the survivors start over: what the sums made so far hold (summed:
 * 1 some chip summed something before the death, 2 every survivor holds
 * every sum; before: the victim's own transfers by then, so whether any
 * sum holds its numbers). */
static const char *summed_words(int summed, int before)
{
    if (summed == 2)
        return "every survivor holds the sums already, but they count the dead chip's "
               "numbers, which are gone";
    if (!summed)
        return "nothing was summed yet, and the dead chip's numbers are gone";
    if (before == 0)
        return "their buffers are unfinished; no survivor's sum holds the dead chip's numbers "
               "yet (it had sent none), but they are gone with it";
    return "their buffers are unfinished and the sums made so far count the dead chip's "
           "numbers, which are gone";
}

/* The page's words for the death: what the text tells around its steps. */
static void failure_intro(char *b, size_t n, const char *algo, int victim, const ftm_mesh *m,
                          int round, int before, int nsent, int summed, const char *where)
{
    int u = snprintf(b, n,
             "The same %s allreduce on the same %dx%d %s, but chip (%d,%d) dies at the start of "
             "step %d, having sent %d of its %d transfer%s. The death is scripted at that "
             "point of the recorded run's steps, so every run of the lesson tells the same "
             "story. A dead chip sends, receives and forwards nothing: the transfers from, to "
             "or through it in that step are lost. The health monitor tells every chip at "
             "once and they stop; %s, so the survivors start over on the chips left (the "
             "next part); then the chip comes back (the part after).",
             algo, m->rows, m->cols, cli_mesh_kind(m), ftm_mesh_row(m, victim),
             ftm_mesh_col(m, victim), round, before, nsent,
             cli_s(nsent), summed_words(summed, before));
    if (where[0] && u > 0 && (size_t)u < n)
        snprintf(b + u, n - u, " %s", where);
}

/* Part 4: chip `victim` dies mid-allreduce; the survivors start over. The
 * death is scripted in the lesson's order: the chip dies at the start of
 * the round of its middle transfer, sent or received, so every run tells
 * the same story. */
int demo_tell_failure(const demo_out *o, const ftm_mesh *m, const char *algo, int victim,
                        const char *title, demo_story *st, long *wrong)
{
    ftm_trace *tr = NULL;
    ftm_lesson l1;
    memset(&l1, 0, sizeof l1);
    int rc = demo_record(m, algo, &tr, &l1), nsent = 0, before = 0;
    int round = rc ? -1 : death_round(&l1, victim, &nsent, &before);
    int vr = ftm_mesh_row(m, victim), vc = ftm_mesh_col(m, victim);
    if (!rc && round < 1)
        printf("Chip (%d,%d) sends nothing in this allreduce: its death could not\n"
               "change it.\n", vr, vc);
    else if (!rc && !(rc = ftm_lesson_kill(&l1, victim, round))) {
        printf("The same %s allreduce on the same %dx%d %s, but chip (%d,%d) dies at\n"
               "the start of step %d, having sent %d of its %d transfer%s.\n"
               "The death is scripted at that point of the steps above (the same\n"
               "recorded run, the same order), so every run of the lesson tells the\n"
               "same story. A dead chip sends, receives and forwards nothing.\n",
               algo, m->rows, m->cols, cli_mesh_kind(m), vr, vc, round, before, nsent,
               cli_s(nsent));
        if (round > 1)
            printf("\n%s%d go%s as above; after step %d every chip holds:\n",
                   round == 2 ? "Step " : round == 3 ? "Steps 1 and " : "Steps 1 to ", round - 1,
                   round == 2 ? "es" : "", round - 1);
        else
            printf("\nEvery chip starts with its numbers as above:\n");
        demo_table(o, &l1, round - 1);
        demo_steps_from(o, &l1, round);
        printf("\nThe health monitor tells every chip at once; they stop after this step.\n");
        char where[900];
        int summed = demo_tell_behind(o, &l1, round, where, sizeof where) > 0;
        summed = summed && survivors_done(&l1, round, victim) ? 2 : summed;
        char why[320];
        snprintf(why, sizeof why, "%s, so the survivors start the allreduce over on the chips "
                 "left, its schedule rebuilt around the new hole; then the chip comes back.",
                 summed_words(summed, before));
        why[0] = (char)toupper((unsigned char)why[0]);
        demo_wrap(why);
        ftm_ring ring;
        int have_ring = demo_story_ring(m, algo, &ring);
        if (demo_story_add(st, title, &l1, NULL, have_ring ? &ring : NULL)) {
            failure_intro(st->intro[st->n - 1], sizeof st->intro[0], algo, victim, m, round,
                          before, nsent, summed, where);
            rc = demo_story_bands(st, st->n - 1, m, algo);
        }
        if (ring.n)
            ftm_router_ring_free(&ring);
        char h[80];
        snprintf(h, sizeof h, "%d. The recovery", st->n + 1);
        demo_heading(o, h);
        if (!rc)
            rc = tell_recovery(o, m, algo, victim, tr, st, wrong);
        if (!rc && st->n)
            snprintf(st->title[st->n - 1], sizeof st->title[0], "%s", h);
        if (!rc)
            rc = demo_tell_repair(o, m, algo, victim, tr, 2, st, wrong);
        if (!rc && st->n && st->tr[st->n - 1] == NULL) {
            st->tr[st->n - 1] = tr; /* the last part owns the recorder */
            tr = NULL;
        }
    }
    ftm_lesson_free(&l1);
    ftm_trace_destroy(tr);
    return rc;
}

