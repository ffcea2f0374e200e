/* ftmesh demo: the last part of the failure story, the dead chip coming
 * back (demo.h). An allreduce holds no state a returning chip must be
 * sent (each chip's numbers are its own inputs), so a repair is what
 * `ftmesh allreduce --repair` does: the chip joins at the start of the
 * next allreduce, the schedule is rebuilt with it, and that allreduce
 * runs over every chip again. Told from a real run, recorded. */
#include "demo.h"
#include "ftmesh/error.h"

#include <stdio.h>
#include <string.h>

size_t demo_lesson_count(const ftm_mesh *m, const char *algo)
{
    return (size_t)ftm_mesh_healthy_count(m) * (strcmp(algo, "bidir") ? 1 : 2);
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
    ftm_lesson_part *p = demo_story_add(st, h, &l, NULL, NULL);
    if (p) {
        p->verified = w == 0;
        snprintf(st->intro[st->n - 1], sizeof st->intro[0], "%s", intro);
    }
    ftm_lesson_free(&l);
    return 0;
}
