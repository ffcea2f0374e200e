/* Independent table rows shared out to worker threads (sweep, throughput).
 * Internal to src/collective. */
#ifndef FTMESH_COLLECTIVE_ROWS_H
#define FTMESH_COLLECTIVE_ROWS_H

/* Calls row(ctx, i) once for each i in [0, total), on the calling thread
 * and one more (the machines this runs on have 2 cores; each row holds one
 * schedule at a time). row must be safe to call concurrently for different
 * i. After the first error no new row starts; returns 0 or that error. */
int coll_rows_run(int total, int (*row)(void *ctx, int i), void *ctx);

#endif
