/* A two-thread row pool: rows are independent and each is deterministic,
 * so the table is the same in any order. */
#include "rows.h"

#include <pthread.h>

typedef struct pool {
    int (*row)(void *ctx, int i);
    void *ctx;
    int total, next, rc;
    pthread_mutex_t mu;
} pool;

static void *worker(void *arg)
{
    pool *P = arg;
    for (;;) {
        pthread_mutex_lock(&P->mu);
        int i = P->rc ? P->total : P->next++;
        pthread_mutex_unlock(&P->mu);
        if (i >= P->total)
            return NULL;
        int rc = P->row(P->ctx, i);
        if (rc) {
            pthread_mutex_lock(&P->mu);
            if (!P->rc)
                P->rc = rc;
            pthread_mutex_unlock(&P->mu);
        }
    }
}

int coll_rows_run(int total, int (*row)(void *ctx, int i), void *ctx)
{
    pool P = { row, ctx, total, 0, 0, PTHREAD_MUTEX_INITIALIZER };
    pthread_t th;
    int started = pthread_create(&th, NULL, worker, &P) == 0;
    worker(&P);
    if (started)
        pthread_join(th, NULL);
    pthread_mutex_destroy(&P.mu);
    return P.rc;
}
