/* The job's watchdog over ranks: heartbeats from ftm_mpi_init to
 * ftm_mpi_finalize.
 *
 * A rank that stops (SIGSTOP, frozen in the kernel, starved of the CPU)
 * cannot say so, and the others may wait for it anywhere: its chips in a
 * run, a collective between runs, the settling of a run. So each rank
 * has a thread of its own, for the whole job, that sends every other rank
 * a heartbeat a few times per hang timeout whatever the rank's other
 * threads do (computing, building schedules, waiting in MPI), and notes
 * when it last heard from each. A rank not heard from for the hang
 * timeout is silent.
 *
 * Who reports: the lowest rank that sees every lower rank silent, so
 * rank 0 while it runs and rank 1 when rank 0 stopped, and one rank only.
 * It names the lowest silent rank to the callback of ftm_mpi_watch, which
 * ends the job (nothing else can: the stopped rank never joins anything).
 * During a run rank 0 lets the run's own watchdog (progress.c) declare
 * the hang first, so that the report lists the stuck chips.
 *
 * The end: ftm_mpi_finalize sends each rank a goodbye and keeps watching
 * until every rank's came, so a rank that stops before finishing is
 * caught too (MPI_Finalize would wait for it).
 */
#include "mpi_int.h"
#include "ftmesh/error.h"
#include "ftmesh/runtime.h"
#include "core/util.h"

#include <stdlib.h>

enum { BEAT = 1, BYE = 2 };

typedef struct watch_peer {
    double heard;            /* last message from it (monotonic seconds) */
    double timeout;          /* its hang timeout, from its last heartbeat */
    int bye;                 /* it reached ftm_mpi_finalize: no more beats */
    int64_t beat[2], adieu[2]; /* what goes to it (kept while MPI has it) */
    MPI_Request breq, yreq;
} watch_peer;

static struct {
    MPI_Comm comm;
    int rank, size;
    pthread_t thread;
    int up;
    pthread_mutex_t mu;      /* peer[].heard, .timeout, .bye; timeout; fn */
    watch_peer *peer;
    double timeout;          /* this rank's hang timeout */
    int changed;             /* it changed: beat now to tell the others */
    double beat_at;          /* last heartbeat sent (watch thread only) */
    _Atomic int runs;        /* progress threads in a run (not settling) */
    _Atomic int closing;     /* ftm_mpi_finalize: say goodbye */
    ftm_mpi_silent_fn fn;
    int64_t rbuf[2];
    MPI_Request rreq;
} w = { .comm = MPI_COMM_NULL, .mu = PTHREAD_MUTEX_INITIALIZER };

/* Takes in every message that arrived; a heartbeat is dated when it is
 * taken, so a watch thread that got no CPU for a while does not take the
 * others for silent (their beats waited for it). */
static int drain(void)
{
    for (;;) {
        int done = 0;
        MPI_Status st;
        if (MPI_Test(&w.rreq, &done, &st) != MPI_SUCCESS)
            return FTM_EIO;
        if (!done)
            return 0;
        int src = st.MPI_SOURCE;
        if (src >= 0 && src < w.size) {
            pthread_mutex_lock(&w.mu);
            w.peer[src].heard = core_now_s();
            if (w.rbuf[0] == BEAT && w.rbuf[1] > 0)
                w.peer[src].timeout = 1e-6 * (double)w.rbuf[1];
            w.peer[src].bye |= w.rbuf[0] == BYE;
            pthread_mutex_unlock(&w.mu);
        }
        if (MPI_Irecv(w.rbuf, 2, MPI_INT64_T, MPI_ANY_SOURCE, 0, w.comm, &w.rreq) != MPI_SUCCESS)
            return FTM_EIO;
    }
}

/* Sends kind to every other rank. A heartbeat whose previous one is
 * still with MPI is skipped: that rank takes none in (it is stopped). */
static void send_all(int kind, double timeout)
{
    for (int r = 0; r < w.size; r++) {
        watch_peer *p = &w.peer[r];
        MPI_Request *q = kind == BEAT ? &p->breq : &p->yreq;
        int64_t *m = kind == BEAT ? p->beat : p->adieu;
        int done = 1;
        if (r == w.rank || (MPI_Test(q, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done))
            continue;
        m[0] = kind;
        m[1] = (int64_t)(timeout * 1e6);
        MPI_Isend(m, 2, MPI_INT64_T, r, 0, w.comm, q);
    }
}

static double my_timeout(void)
{
    pthread_mutex_lock(&w.mu);
    double t = w.timeout;
    pthread_mutex_unlock(&w.mu);
    return t;
}

/* Heartbeats every quarter of this rank's hang timeout, and at once when
 * it changed (the others judge this rank by it). */
static void beat(void)
{
    pthread_mutex_lock(&w.mu);
    double now = core_now_s(), t = w.timeout;
    int changed = w.changed;
    w.changed = 0;
    pthread_mutex_unlock(&w.mu);
    if (!changed && now - w.beat_at < t / 4)
        return;
    w.beat_at = now;
    send_all(BEAT, t);
}

/* Rank r has been silent (*quiet seconds) for timeout, or for its own
 * hang timeout when that is longer (it beats at its own pace). Under w.mu. */
static int quiet_locked(int r, double timeout, double now, double *quiet)
{
    const watch_peer *p = &w.peer[r];
    double limit = p->timeout > timeout ? p->timeout : timeout;
    *quiet = now - p->heard;
    return r != w.rank && !p->bye && *quiet >= limit;
}

int mpi_watch_quiet(int r, double timeout, double *quiet)
{
    *quiet = 0;
    if (!w.up || r < 0 || r >= w.size)
        return 0;
    pthread_mutex_lock(&w.mu);
    int s = quiet_locked(r, timeout, core_now_s(), quiet);
    pthread_mutex_unlock(&w.mu);
    return s;
}

/* The rank this rank must report silent, or -1: only the lowest rank
 * that is not silent reports (every rank below it silent), and it names
 * the lowest silent rank. *limit: the timeout that rank is judged by. */
static int to_report(double *quiet, double *limit)
{
    double now = core_now_s(), q;
    int target = -1;
    pthread_mutex_lock(&w.mu);
    for (int r = 0; r < w.size; r++) {
        int s = quiet_locked(r, w.timeout, now, &q);
        if (r < w.rank && !s) { /* a lower rank watches */
            target = -1;
            break;
        }
        if (s && target < 0) {
            target = r;
            *quiet = q;
            *limit = w.peer[r].timeout > w.timeout ? w.peer[r].timeout : w.timeout;
        }
    }
    pthread_mutex_unlock(&w.mu);
    return target;
}

/* Ends the job for a silent rank: the stopped rank would never join a
 * collective, and the others may already wait in one. */
static void judge(void)
{
    double quiet = 0, limit = 0;
    int r = mpi_is_lost() ? -1 : to_report(&quiet, &limit);
    if (r < 0)
        return;
    /* Rank 0 in a run: its run's watchdog declares the hang with the
     * stuck chips; here only when that did not happen in twice the time
     * (another rank kept computing). Settling is not in a run. */
    if (w.rank == 0 && atomic_load(&w.runs) > 0 && quiet < 2 * limit)
        return;
    if (!mpi_claim_silent(r, quiet))
        return; /* the run's watchdog was first */
    pthread_mutex_lock(&w.mu);
    ftm_mpi_silent_fn fn = w.fn;
    pthread_mutex_unlock(&w.mu);
    if (fn)
        fn(r, quiet);
    MPI_Abort(MPI_COMM_WORLD, 1); /* fn did not end the job */
}

static int all_said_bye(void)
{
    int all = 1;
    pthread_mutex_lock(&w.mu);
    for (int r = 0; r < w.size; r++)
        all &= r == w.rank || w.peer[r].bye;
    pthread_mutex_unlock(&w.mu);
    return all;
}

/* Sleeps between rounds: an eighth of the hang timeout, at most 0.1 s,
 * and 1 ms while waiting for the goodbyes (the job's end waits on them). */
static void nap(double tick)
{
    struct timespec ts = { 0, (long)(tick * 1e9) };
    nanosleep(&ts, NULL);
}

/* After this thread itself got no CPU for half a timeout (its process
 * stopped, then continued), what it last heard is stale: every rank gets
 * a whole timeout from now before it is judged. 1 when that happened.
 * Never under half a second, so that a short --hang-timeout on a loaded
 * machine (naps of a few ms running late) does not keep resetting it. */
static int woke_late(double *last)
{
    double now = core_now_s(), gap = now - *last, t = my_timeout() / 2;
    *last = now;
    if (gap < (t > 0.5 ? t : 0.5))
        return 0;
    pthread_mutex_lock(&w.mu);
    for (int r = 0; r < w.size; r++)
        w.peer[r].heard = w.peer[r].heard > now ? w.peer[r].heard : now;
    pthread_mutex_unlock(&w.mu);
    return 1;
}

static void *watch_main(void *arg)
{
    (void)arg;
    int bye = 0;
    double last = core_now_s();
    for (;;) {
        if (drain())
            return NULL; /* MPI broke: the job cannot go on anyway */
        int late = woke_late(&last);
        if (!bye && atomic_load(&w.closing)) {
            send_all(BYE, 0);
            bye = 1;
        } else if (!bye) {
            beat();
        }
        if (!late)
            judge();
        if (bye && all_said_bye())
            return NULL;
        double t = my_timeout() / 8;
        nap(bye ? 0.001 : t < 0.1 ? t : 0.1);
    }
}

int mpi_watch_start(int rank, int size)
{
    if (size < 2)
        return 0;
    w.rank = rank;
    w.size = size;
    w.timeout = FTM_RT_DEFAULT_HANG_S;
    w.beat_at = -1e9; /* the first beat at once */
    w.peer = calloc((size_t)size, sizeof *w.peer);
    if (!w.peer)
        return FTM_ENOMEM;
    double now = core_now_s(); /* MPI_Init_thread lined the ranks up */
    for (int r = 0; r < size; r++)
        w.peer[r] = (watch_peer){ now, FTM_RT_DEFAULT_HANG_S, 0, { 0 }, { 0 },
                                  MPI_REQUEST_NULL, MPI_REQUEST_NULL };
    int rc = 0, dup = 0, recv = 0;
    dup = MPI_Comm_dup(MPI_COMM_WORLD, &w.comm) == MPI_SUCCESS;
    if (dup)
        recv = MPI_Irecv(w.rbuf, 2, MPI_INT64_T, MPI_ANY_SOURCE, 0, w.comm, &w.rreq) ==
               MPI_SUCCESS;
    if (!dup || !recv)
        rc = FTM_EIO;
    else if (pthread_create(&w.thread, NULL, watch_main, NULL))
        rc = FTM_ETHREAD;
    if (!rc) {
        w.up = 1;
        return 0;
    }
    if (recv) { /* this rank sent nothing; a heartbeat another rank sent
                 * may have matched the receive: cancel, then wait */
        MPI_Cancel(&w.rreq);
        MPI_Wait(&w.rreq, MPI_STATUS_IGNORE);
    }
    if (dup)
        MPI_Comm_free(&w.comm);
    free(w.peer);
    w.peer = NULL;
    return rc;
}

/* After every rank's goodbye nothing more comes: the receive is
 * cancelled. A send still with MPI (to a rank that stopped after its
 * goodbye) is let go, and its buffer with it (leaked on purpose). */
void mpi_watch_stop(void)
{
    if (!w.up)
        return;
    atomic_store(&w.closing, 1);
    pthread_join(w.thread, NULL);
    w.up = 0;
    int pending = 0;
    for (int r = 0; r < w.size; r++) {
        MPI_Request *q[2] = { &w.peer[r].breq, &w.peer[r].yreq };
        for (int k = 0; k < 2; k++) {
            int done = 1;
            MPI_Test(q[k], &done, MPI_STATUS_IGNORE);
            if (!done) {
                MPI_Request_free(q[k]);
                pending = 1;
            }
        }
    }
    MPI_Cancel(&w.rreq);
    MPI_Wait(&w.rreq, MPI_STATUS_IGNORE);
    MPI_Comm_free(&w.comm);
    if (!pending)
        free(w.peer);
    w.peer = NULL;
}

void mpi_watch_timeout(double s)
{
    if (s <= 0)
        return;
    pthread_mutex_lock(&w.mu);
    w.changed |= w.timeout != s;
    w.timeout = s;
    pthread_mutex_unlock(&w.mu);
}

void mpi_watch_run(int on) { atomic_fetch_add(&w.runs, on ? 1 : -1); }

void ftm_mpi_watch(double hang_timeout_s, ftm_mpi_silent_fn fn)
{
    mpi_watch_timeout(hang_timeout_s);
    pthread_mutex_lock(&w.mu);
    w.fn = fn;
    pthread_mutex_unlock(&w.mu);
}
