/* The trainer's events in a run's trace (trace.h): compute phases and the
 * recovery, beside the runtime's own (allreduces, failure). */
#include "ftmesh/trace.h"
#include "train_int.h"

double train_note_t0(const ftm_train_opts *o)
{
    return o->trace ? ftm_trace_now(o->trace) : 0;
}

void train_note(const ftm_train_opts *o, int chip, int kind, const char *name, double t0)
{
    if (!o->trace)
        return;
    ftm_event e = { .kind = (uint8_t)kind, .dir = -1, .chip = chip, .peer = -1, .sched = -1,
                    .step = -1, .op = -1, .t0 = t0, .t1 = ftm_trace_now(o->trace),
                    .name = name };
    ftm_trace_add(o->trace, &e);
}

void train_note_recovery(const ftm_train_opts *o, const ftm_mesh *m, double t0)
{
    for (int c = 0; o->trace && c < m->nchips; c++)
        if (ftm_mesh_alive(m, c))
            train_note(o, c, FTM_EV_RECOVER, "recovery: state copied, rings rebuilt", t0);
}
