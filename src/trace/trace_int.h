/* The recorder's calls from inside the library only (trace.h has the
 * public ones). Internal. */
#ifndef FTMESH_TRACE_INT_H
#define FTMESH_TRACE_INT_H

#include "ftmesh/trace.h"

/* Called on chip's own thread between its executions (the trainer at the
 * start of a step --trace-steps leaves out): the runtime records nothing
 * more of chip in this run (ftm_trace_add's events are the caller's to
 * leave out), and no chip records the executions from chip's next one on
 * (every chip runs the same executions, so where each chip stops at the
 * same point of its program, the trace ends there on all of them; what
 * they forward for those is left out too). ftm_trace_begin_run starts
 * recording again. */
void trace_stop_chip(ftm_trace *tr, int chip);

#endif
