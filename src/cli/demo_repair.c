/* ftmesh demo: pieces of the failure story (demo.h): where the survivors
 * stand when the chip dies, and its last part, the dead chip coming
 * back. An allreduce holds no state a returning chip must be
 * sent (each chip's numbers are its own inputs), so a repair is what
 * `ftmesh allreduce --repair` does: the chip joins at the start of the
 * next allreduce, the schedule is rebuilt with it, and that allreduce
 * runs over every chip again. Told from a real run, recorded. */
#include "demo.h"
#include "ftmesh/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t demo_lesson_count(const ftm_mesh *m, const char *algo)
{
    return (size_t)ftm_mesh_healthy_count(m) * (strcmp(algo, "bidir") ? 1 : 2);
}

/* The last of the lesson's steps (rounds 1 .. k) in which chip c sent or
 * received a transfer that completed, or 0: a position in the one global
 * order the steps are told in, not the chip's own step count. */
static int last_round(const ftm_lesson *l, int c, int k)
{
    for (int r = k; r >= 1; r--)
        for (int i = 0; i < l->frame[r].nx; i++) {
            const ftm_lesson_xfer *x = &l->frame[r].x[i];
            if (x->after && (x->src == c || x->dst == c))
                return r;
        }
    return 0;
}

/* 1 when chip c had a transfer of round k that was lost: it took part in
 * that step, though nothing it sent or waited for arrived. */
static int lost_in(const ftm_lesson *l, int c, int k)
{
    for (int i = 0; i < l->frame[k].nx; i++) {
        const ftm_lesson_xfer *x = &l->frame[k].x[i];
        if (!x->after && (x->src == c || x->dst == c))
            return 1;
    }
    return 0;
}

/* The survivors grouped by the step of their last transfer, latest first; *
 * marks those whose transfer of that step was lost. Printed, and (page,
 * unless NULL) appended to page in one line: "step 7: (0,2) (1,2)*; ...". */
static void behind_list(const ftm_lesson *l, const int *at, const unsigned char *lost, int lo,
                        int hi, char *page, size_t pn)
{
    const ftm_mesh *m = &l->mesh;
    size_t u = page ? strlen(page) : 0;
    for (int n = hi; n >= lo; n--) {
        int col = 0, any = 0;
        for (int c = 0; c < m->nchips; c++) {
            if (!ftm_mesh_alive(m, c) || c == l->died || at[c] != n)
                continue;
            char chip[48];
            snprintf(chip, sizeof chip, " (%d,%d)%s", ftm_mesh_row(m, c), ftm_mesh_col(m, c),
                     lost[c] ? "*" : "");
            if (!any)
                col = n ? printf("  step %2d:", n) : printf("  none yet:");
            if (!any && page && u < pn)
                u += (size_t)(n ? snprintf(page + u, pn - u, "%sstep %d:", n == hi ? "" : "; ", n)
                                : snprintf(page + u, pn - u, "%snone yet:", n == hi ? "" : "; "));
            if (col > 72)
                col = printf("\n          ") - 1;
            col += printf("%s", chip);
            if (page && u < pn)
                u += (size_t)snprintf(page + u, pn - u, "%s", chip);
            any = 1;
        }
        if (any)
            printf("\n");
    }
    if (page && u < pn)
        snprintf(page + u, pn - u, ".");
}

/* Where the survivors stand: lo..hi the steps reached (k for a chip whose
 * transfer of step k was lost), done the last step any of them completed;
 * page (or NULL) gets the list's sentence for the page. */
static void tell_positions(const ftm_lesson *l, int k, const int *at, const unsigned char *lost,
                           int lo, int hi, int nlost, char *page, size_t pn)
{
    if (lo == hi && nlost)
        printf("\nEvery survivor was in step %d; the transfers marked lost went to, from\n"
               "or through the dead chip.\n", hi);
    else if (lo == hi)
        printf("\nEvery survivor last sent or received in step %d of the steps above.\n", hi);
    if (lo == hi && page)
        snprintf(page, pn, nlost ? "Every survivor was in step %d; the transfers marked lost "
                 "went to, from or through the dead chip." : "Every survivor last sent or "
                 "received in step %d.", hi);
    if (lo != hi) {
        printf("\nChips run at their own pace: a chip starts its next step as soon as its\n"
               "own transfers of the step before are done. Some had got further than\n"
               "others; one listed at an earlier step is not slow: it waits for data that\n"
               "has not reached it yet, or has nothing to do until a later step (a tree's\n"
               "leaves send once, then wait for the sums to come back down). The step of\n"
               "each survivor's last transfer (%s%d)%s\n", k > 1 ? "1 to " : "none yet, or ", k,
               nlost ? "; *: its transfer of that step went to,\nfrom or through the "
                       "dead chip and was lost:" : ":");
        if (page)
            snprintf(page, pn, "Chips run at their own pace; one whose last transfer is in an "
                     "earlier step waited for data, or had nothing to do until later. The step "
                     "of each survivor's last transfer%s ", nlost ? " (*: its transfer of that "
                     "step touched the dead chip and was lost):" : ":");
        behind_list(l, at, lost, lo, hi, page, pn);
    }
}

int demo_tell_behind(const demo_out *o, const ftm_lesson *l, int k, char *page, size_t pn)
{
    if (page && pn)
        page[0] = 0;
    const ftm_mesh *m = &l->mesh;
    int lo = -1, hi = -1, done = 0, nlost = 0, *at = calloc((size_t)m->nchips, sizeof *at);
    unsigned char *lost = calloc((size_t)m->nchips, 1);
    if (!at || !lost) {
        free(at);
        free(lost);
        return -1;
    }
    for (int c = 0; c < m->nchips; c++) {
        if (!ftm_mesh_alive(m, c) || c == l->died)
            continue;
        int last = last_round(l, c, k);
        done = last > done ? last : done;
        lost[c] = lost_in(l, c, k);
        nlost += lost[c];
        at[c] = lost[c] ? k : last;
        lo = lo < 0 || at[c] < lo ? at[c] : lo;
        hi = at[c] > hi ? at[c] : hi;
    }
    if (done <= 0 && k == 1)
        printf("\nNo survivor sent or received anything: every transfer of step 1\n"
               "touched the dead chip.\n");
    else if (done <= 0)
        printf("\nNo survivor sent or received anything in steps 1 to %d: every\n"
               "transfer touched the dead chip.\n", k);
    else
        tell_positions(l, k, at, lost, lo, hi, nlost, page, pn);
    if (done > 0 && hi < k)
        printf("No survivor took part in step %d: its transfers all touched the dead chip.\n", k);
    free(at);
    free(lost);
    (void)o;
    return done;
}

int demo_tell_repair(const demo_out *o, const ftm_mesh *m, const char *algo, int victim,
                     ftm_trace *tr, int run, demo_story *st, long *wrong)
{
    int vr = ftm_mesh_row(m, victim), vc = ftm_mesh_col(m, victim), P = ftm_mesh_healthy_count(m);
    char h[80];
    snprintf(h, sizeof h, "%d. The chip comes back", st->n + 1);
    demo_heading(o, h);
    ftm_lesson l;
    memset(&l, 0, sizeof l);
    int rc = ftm_lesson_run(m, algo, demo_lesson_count(m, algo), tr, NULL);
    if (!rc)
        rc = ftm_lesson_frames(tr, run, m, &l);
    if (rc)
        return rc;
    char intro[sizeof st->intro[0]];
    snprintf(intro, sizeof intro,
             "Chip (%d,%d) is repaired and joins again at the start of the next allreduce. "
             "An allreduce holds no state it must be sent first (each chip's numbers are its "
             "own inputs), so the schedule is simply rebuilt with it and the %s allreduce runs "
             "over all %d chips again: %d steps. At the last step every chip, the repaired "
             "one too, holds the sums of all the chips.", vr, vc, algo, P, l.nframes - 1);
    demo_wrap(intro);
    printf("\nThe run with the chip back takes %d steps (told as above; here its end):\n",
           l.nframes - 1);
    demo_table(o, &l, l.nframes - 1);
    long w = demo_check(o, &l);
    *wrong += w;
    ftm_ring ring;
    int have_ring = demo_story_ring(m, algo, &ring);
    ftm_lesson_part *p = demo_story_add(st, h, &l, NULL, have_ring ? &ring : NULL);
    int brc = 0;
    if (p) {
        p->verified = w == 0;
        snprintf(st->intro[st->n - 1], sizeof st->intro[0], "%s", intro);
        brc = demo_story_bands(st, st->n - 1, m, algo);
    }
    if (ring.n)
        ftm_router_ring_free(&ring);
    ftm_lesson_free(&l);
    return brc;
}
