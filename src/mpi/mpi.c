/* The MPI transport: ranks, the grid of blocks, and the runtime seam's
 * hooks outside the progress thread (progress.c). */
#include "mpi_int.h"
#include "ftmesh/error.h"
#include "ftmesh/sched.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <string.h>

static int g_rank, g_size = 1, g_node = 1, g_inited, g_grid_r, g_grid_c, g_chips_send;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static ftm_mpi_stats g_stats;
/* A rank rank 0's watchdog gave up on (-1: none), how long it had been
 * silent, and the transports of that time (kept until the job ends). */
static int g_silent = -1;
static double g_silent_s;
static mpi_net *g_kept;

int ftm_mpi_init(int *argc, char ***argv)
{
    int have = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &have) != MPI_SUCCESS)
        return FTM_EIO;
    g_inited = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    MPI_Comm node;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
        MPI_Comm_size(node, &g_node);
        MPI_Comm_free(&node);
    }
    /* the main thread's collectives and a progress thread may overlap
     * across runtimes, with ftm_mpi_chips_send the chips send, and the
     * job's watchdog beats throughout */
    if (have < MPI_THREAD_MULTIPLE)
        return FTM_ENOTSUP;
    return mpi_watch_start(g_rank, g_size);
}

void ftm_mpi_finalize(void)
{
    if (g_inited && ftm_mpi_silent(NULL) >= 0) /* MPI_Finalize would wait for it forever */
        MPI_Abort(MPI_COMM_WORLD, 1);
    if (g_inited) {
        mpi_watch_stop(); /* after every rank's goodbye */
        MPI_Finalize();
    }
    g_inited = 0;
}

int ftm_mpi_silent(double *secs)
{
    pthread_mutex_lock(&g_mu);
    int r = g_silent;
    if (secs)
        *secs = r >= 0 ? g_silent_s : 0;
    pthread_mutex_unlock(&g_mu);
    return r;
}

int mpi_claim_silent(int rank, double secs)
{
    pthread_mutex_lock(&g_mu);
    int first = g_silent < 0;
    if (first) {
        g_silent = rank;
        g_silent_s = secs;
    }
    pthread_mutex_unlock(&g_mu);
    return first;
}

int mpi_is_lost(void) { return ftm_mpi_silent(NULL) >= 0; }

void ftm_mpi_abort(int code)
{
    if (g_inited)
        MPI_Abort(MPI_COMM_WORLD, code);
}

int ftm_mpi_rank(void) { return g_rank; }
int ftm_mpi_size(void) { return g_size; }
int ftm_mpi_node_ranks(void) { return g_node; }

void mpi_account(double mpi_s, double thread_s, uint64_t msgs, uint64_t bytes)
{
    pthread_mutex_lock(&g_mu);
    g_stats.mpi_s += mpi_s;
    g_stats.thread_s += thread_s;
    g_stats.msgs += msgs;
    g_stats.bytes += bytes;
    pthread_mutex_unlock(&g_mu);
}

/* This rank's transport figures (ftm_mpi_stats). */
static void stats_get(ftm_mpi_stats *st)
{
    pthread_mutex_lock(&g_mu);
    *st = g_stats;
    pthread_mutex_unlock(&g_mu);
}

int ftm_mpi_get_stats_all(ftm_mpi_stats *sum, uint64_t *max_rss)
{
    if (mpi_is_lost())
        return FTM_EIO;
    ftm_mpi_stats st;
    stats_get(&st);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double t[3] = { st.mpi_s, st.thread_s,
                    (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
                    (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec };
    uint64_t c[2] = { st.msgs, st.bytes };
    uint64_t rss = (uint64_t)ru.ru_maxrss << 10; /* KiB on Linux */
    if (MPI_Allreduce(MPI_IN_PLACE, t, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS ||
        MPI_Allreduce(MPI_IN_PLACE, c, 2, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS ||
        MPI_Allreduce(MPI_IN_PLACE, &rss, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS)
        return FTM_EIO;
    *sum = (ftm_mpi_stats){ t[0], t[1], t[2], c[0], c[1] };
    *max_rss = rss;
    return 0;
}

int ftm_mpi_agree(int rc, char *msg, size_t len)
{
    int mine = rc ? g_rank : g_size, first = g_size, code = rc;
    if (len > (size_t)INT_MAX)
        return FTM_EINVAL;
    if (mpi_is_lost())
        return FTM_EIO;
    if (MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS)
        return FTM_EIO;
    if (first == g_size)
        return 0;
    if (MPI_Bcast(&code, 1, MPI_INT, first, MPI_COMM_WORLD) != MPI_SUCCESS ||
        (len && MPI_Bcast(msg, (int)len, MPI_CHAR, first, MPI_COMM_WORLD) != MPI_SUCCESS))
        return FTM_EIO;
    if (len)
        msg[len - 1] = 0;
    return code ? code : FTM_EINTERNAL;
}

int ftm_mpi_same(uint64_t v)
{
    uint64_t lo = v, hi = v;
    if (mpi_is_lost())
        return FTM_EIO;
    if (MPI_Allreduce(&v, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS ||
        MPI_Allreduce(&v, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS)
        return FTM_EIO;
    return lo != hi;
}

/* Links a grid of r x c blocks cuts (a torus also cuts its wrap-around). */
static long grid_cut(int r, int c, int mrows, int mcols, int torus)
{
    long rows_cut = torus ? (r > 1 ? r : 0) : r - 1;
    long cols_cut = torus ? (c > 1 ? c : 0) : c - 1;
    return rows_cut * mcols + cols_cut * mrows;
}

int ftm_mpi_choose_grid(int k, int mrows, int mcols, int torus, int *rows, int *cols)
{
    long best = -1;
    for (int r = 1; r <= k; r++) {
        if (k % r || r > mrows || k / r > mcols)
            continue;
        long cut = grid_cut(r, k / r, mrows, mcols, torus);
        if (best < 0 || cut < best) {
            best = cut;
            *rows = r;
            *cols = k / r;
        }
    }
    return best < 0 ? FTM_EINVAL : 0;
}

int ftm_mpi_grid(int mrows, int mcols, int torus, int *rows, int *cols)
{
    if (g_grid_r > 0) {
        *rows = g_grid_r;
        *cols = g_grid_c;
        return g_grid_r <= mrows && g_grid_c <= mcols ? 0 : FTM_EINVAL;
    }
    return ftm_mpi_choose_grid(g_size, mrows, mcols, torus, rows, cols);
}

static int attach(ftm_rt *rt);

void ftm_mpi_chips_send(int on) { g_chips_send = on != 0; }

int ftm_mpi_enable(int rows, int cols)
{
    if (rows < 0 || cols < 0 || (rows > 0 && rows * cols != g_size))
        return FTM_EINVAL;
    g_grid_r = rows;
    g_grid_c = cols;
    rt_net_attach = g_size > 1 ? attach : NULL;
    return 0;
}

/* ---- hooks ---------------------------------------------------------------- */

/* A chip's thread sends what it just published (ftm_mpi_chips_send). */
static void net_pushed(ftm_rt *rt, int chip, int dir)
{
    mpi_net *n = rt->net->ctx;
    mpi_link *l = &n->out[n->out_at[chip * FTM_NDIRS + dir]];
    pthread_mutex_lock(&l->mu);
    mpi_pump_out(n, l);
    int err = l->err;
    pthread_mutex_unlock(&l->mu);
    if (err) /* the progress thread reports it */
        rt_wake(&n->bell);
}

static int net_declare(ftm_rt *rt, const ftm_sched *s)
{
    mpi_net *n = rt->net->ctx;
    for (int i = 0; i < n->ndecl; i++)
        if (n->decl[i] == s)
            return 0;
    if (n->ndecl == n->cap_decl) {
        int cap = n->cap_decl ? 2 * n->cap_decl : 8;
        const ftm_sched **d = realloc(n->decl, sizeof *d * (size_t)cap);
        if (!d)
            return FTM_ENOMEM;
        n->decl = d;
        n->cap_decl = cap;
    }
    n->decl[n->ndecl++] = s;
    return 0;
}

/* After a rank went silent the run is a hang and only this rank's hang
 * report is used: the transport's collectives keep this rank's values
 * (the silent rank would never join them) and report success, so that
 * the callers reach their hang report. */
static int net_combine(ftm_rt *rt, void *v, size_t len, int kind)
{
    mpi_net *n = rt->net->ctx;
    if (mpi_is_lost())
        return 0;
    int rc = kind == RT_COMBINE_SUM_U64
           ? MPI_Allreduce(MPI_IN_PLACE, v, (int)len, MPI_UINT64_T, MPI_SUM, n->ctrl)
           : MPI_Allreduce(MPI_IN_PLACE, v, (int)len, MPI_DOUBLE,
                           kind == RT_COMBINE_SUM_F64 ? MPI_SUM : MPI_MAX, n->ctrl);
    return rc == MPI_SUCCESS ? 0 : FTM_EIO;
}

static int net_bcast(ftm_rt *rt, void *buf, size_t bytes, int chip)
{
    mpi_net *n = rt->net->ctx;
    const size_t most = (size_t)1 << 30; /* an int count per call */
    if (mpi_is_lost()) /* as net_combine */
        return 0;
    for (size_t at = 0; at < bytes; at += most) {
        size_t len = bytes - at < most ? bytes - at : most;
        if (MPI_Bcast((unsigned char *)buf + at, (int)len, MPI_BYTE, n->owner[chip], n->ctrl) !=
            MPI_SUCCESS)
            return FTM_EIO;
    }
    return 0;
}

static void net_chip_done(ftm_rt *rt)
{
    mpi_net *n = rt->net->ctx;
    if (atomic_fetch_sub(&n->local_left, 1) == 1)
        rt_wake(&n->bell);
}

static void net_barrier(ftm_rt *rt, uint64_t gen)
{
    mpi_net *n = rt->net->ctx;
    atomic_store(&n->bar_req, gen + 1);
    rt_wake(&n->bell);
}

static void net_link_killed(ftm_rt *rt, int chip, int dir, int oneway)
{
    mpi_net *n = rt->net->ctx;
    mpi_mark_dead(n, chip, dir);
    if (!oneway)
        mpi_mark_dead(n, ftm_mesh_neighbor(&rt->mesh, chip, dir), ftm_dir_opposite(dir));
    if (mpi_queue_kill(n, chip, dir, oneway))
        n->err = FTM_ENOMEM; /* the other ranks would not learn of it */
    rt_wake(&n->bell);
}

static int net_run_begin(ftm_rt *rt)
{
    mpi_net *n = rt->net->ctx;
    atomic_store(&n->stop, 0);
    atomic_store(&n->local_left, rt->nlocal);
    atomic_store(&n->bar_req, 0);
    n->done_sent = 0;
    n->stall_sent = 0;
    n->all_stalled_since = -1;
    n->silent = -1;
    n->nfin = n->nfin2 = 0;
    n->err = 0;
    n->t_mpi = 0;
    n->msgs = n->bytes = 0;
    for (int i = 0; i < n->nout; i++) {
        n->out[i].t_mpi = 0;
        n->out[i].msgs = n->out[i].bytes = 0;
        n->out[i].err = 0;
    }
    n->sig_sent = mpi_state_sig(rt);
    memset(n->stall_of, 0, (size_t)n->size);
    for (int i = 0; i < n->nout; i++)
        n->out[i].nsent = 0;
    for (int i = 0; i < n->nin; i++) {
        n->in[i].nrecv = 0;
        n->in[i].have_expect = 0;
    }
    if (pthread_create(&n->thread, NULL, mpi_progress_main, n))
        return FTM_ETHREAD;
    n->thread_up = 1;
    return 0;
}

/* What a chip's rank knows of it after a run, for every rank. */
typedef struct mpi_chip_rec {
    int32_t rc, started, wait, peer, dir, step;
    uint64_t missing;
    char phase[40];
} mpi_chip_rec;

/* A phase name another rank sent, as a string that lives as long as the
 * process: a hang report reads the stuck chips' phases after the runtime
 * is gone (local chips' phases are the schedules' static names). The
 * names are few (the algorithms' phases); past MPI_PHASES, "". */
#define MPI_PHASES 64
static const char *phase_keep(const char *name)
{
    static char kept[MPI_PHASES][sizeof ((mpi_chip_rec *)0)->phase];
    static int nkept;
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    const char *r = "";
    pthread_mutex_lock(&mu);
    for (int i = 0; i < nkept && !r[0]; i++)
        if (!strcmp(kept[i], name))
            r = kept[i];
    if (!r[0] && name[0] && nkept < MPI_PHASES) {
        memcpy(kept[nkept], name, sizeof kept[nkept]);
        r = kept[nkept++];
    }
    pthread_mutex_unlock(&mu);
    return r;
}

/* After the chips joined: every rank gets every chip's return code and
 * (after a hang) what it waited for. */
static int gather_chips(mpi_net *n)
{
    ftm_rt *rt = n->rt;
    int nc = rt->mesh.nchips;
    mpi_chip_rec *r = calloc((size_t)nc, sizeof *r);
    if (!r)
        return FTM_ENOMEM;
    for (int c = 0; c < nc; c++) {
        const ftm_chip *ch = &rt->chips[c];
        if (!rt->local[c] || !ch->started)
            continue;
        r[c] = (mpi_chip_rec){ ch->rc, 1, ch->why.wait, ch->why.peer, ch->why.dir, ch->why.step,
                               ch->why.missing, { 0 } };
        if (ch->why.phase)
            strncpy(r[c].phase, ch->why.phase, sizeof r[c].phase - 1);
    }
    int rc = MPI_Allreduce(MPI_IN_PLACE, r, (int)(sizeof *r * (size_t)nc), MPI_BYTE, MPI_BOR,
                           n->ctrl) == MPI_SUCCESS ? 0 : FTM_EIO;
    for (int c = 0; c < nc && !rc; c++) {
        ftm_chip *ch = &rt->chips[c];
        if (rt->local[c] || !r[c].started)
            continue;
        ch->started = 1;
        ch->rc = r[c].rc;
        ch->why = (ftm_stuck){ c, "", r[c].step, r[c].wait, r[c].peer, r[c].dir,
                               (size_t)r[c].missing };
        r[c].phase[sizeof r[c].phase - 1] = 0;
        ch->why.phase = phase_keep(r[c].phase);
    }
    free(r);
    return rc;
}

static int net_run_end(ftm_rt *rt)
{
    mpi_net *n = rt->net->ctx;
    if (n->thread_up) {
        atomic_store(&n->stop, 1);
        rt_wake(&n->bell);
        pthread_join(n->thread, NULL);
        n->thread_up = 0;
    }
    int rc = n->silent < 0 ? gather_chips(n) : 0; /* the silent rank would not join */
    return n->err ? n->err : rc;
}

static void net_detach(ftm_rt *rt)
{
    mpi_net *n = rt->net->ctx;
    if (mpi_is_lost()) {
        /* Never settled: MPI may still read or write its buffers, and
         * freeing its communicators may wait for the silent rank. */
        pthread_mutex_lock(&g_mu);
        n->kept_next = g_kept;
        g_kept = n;
        pthread_mutex_unlock(&g_mu);
        free(rt->local);
        rt->local = NULL;
        rt->net = NULL;
        return;
    }
    for (int i = 0; i < n->nout; i++) {
        free(n->out[i].req);
        pthread_mutex_destroy(&n->out[i].mu); /* made as it was counted */
    }
    if (n->data != MPI_COMM_NULL)
        MPI_Comm_free(&n->data);
    if (n->ctrl != MPI_COMM_NULL)
        MPI_Comm_free(&n->ctrl);
    pthread_mutex_destroy(&n->bell.mu);
    pthread_cond_destroy(&n->bell.cv);
    for (int i = 0; i < n->nin; i++)
        free(n->in[i].rbuf);
    for (int i = 0; i < n->nout; i++)
        free(n->out[i].stage);
    free(n->out);
    free(n->in);
    free(n->owner);
    free(n->active);
    free(n->stall_of);
    free(n->decl);
    free(n->out_at);
    free(n->in_at);
    free(n->kills);
    free(n->cbuf);
    free(rt->local);
    rt->local = NULL;
    rt->net = NULL;
    free(n);
}

/* The rank of every chip: rectangular blocks of the grid. */
static int place_chips(mpi_net *n, const ftm_mesh *m)
{
    int gr, gc;
    if (ftm_mpi_grid(m->rows, m->cols, m->torus, &gr, &gc))
        return FTM_EINVAL;
    for (int c = 0; c < m->nchips; c++) {
        int br = ftm_sched_block_of((size_t)m->rows, gr, (size_t)ftm_mesh_row(m, c));
        int bc = ftm_sched_block_of((size_t)m->cols, gc, (size_t)ftm_mesh_col(m, c));
        n->owner[c] = br * gc + bc;
        n->rt->local[c] = n->owner[c] == n->rank;
        if (ftm_mesh_alive(m, c) && !n->active[n->owner[c]]) {
            n->active[n->owner[c]] = 1;
            n->nactive++;
        }
    }
    n->rt->nlocal = 0;
    for (int c = 0; c < m->nchips; c++)
        n->rt->nlocal += n->rt->local[c] && ftm_mesh_alive(m, c);
    return 0;
}

/* Rewires the links that leave this rank's block to the transport, and
 * frees the mailboxes of links between two other ranks. */
static int wire_links(mpi_net *n)
{
    ftm_rt *rt = n->rt;
    const ftm_mesh *m = &rt->mesh;
    int nl = m->nchips * FTM_NDIRS;
    n->out = calloc((size_t)nl, sizeof *n->out);
    n->in = calloc((size_t)nl, sizeof *n->in);
    if (!n->out || !n->in)
        return FTM_ENOMEM;
    for (int i = 0; i < nl; i++)
        n->out_at[i] = n->in_at[i] = -1;
    for (int c = 0; c < m->nchips; c++)
        for (int d = 0; d < FTM_NDIRS; d++) {
            if (!ftm_mesh_link_live(m, c, d))
                continue;
            rt_mbox *mb = &rt->mbox[c * FTM_NDIRS + d];
            int a = n->owner[c], b = n->owner[ftm_mesh_neighbor(m, c, d)];
            mpi_link *l = NULL;
            if (a == n->rank && b != n->rank) {
                n->out_at[c * FTM_NDIRS + d] = n->nout;
                l = &n->out[n->nout++];
                mb->to = &n->bell;
                l->stage = malloc((RT_HDR_BYTES + rt->pkt_bytes) * rt->depth);
                pthread_mutex_init(&l->mu, NULL);
                if (!(l->req = malloc(sizeof *l->req * rt->depth)) || !l->stage)
                    return FTM_ENOMEM;
                for (uint32_t k = 0; k < rt->depth; k++)
                    l->req[k] = MPI_REQUEST_NULL;
            } else if (b == n->rank && a != n->rank) {
                n->in_at[c * FTM_NDIRS + d] = n->nin;
                l = &n->in[n->nin++];
                mb->from = &n->bell;
                if (!(l->rbuf = malloc(RT_HDR_BYTES + rt->pkt_bytes)))
                    return FTM_ENOMEM;
            } else if (a != n->rank) {
                rt_mbox_free(mb); /* neither end here: never used */
                continue;
            } else {
                continue;
            }
            mb->local = 0; /* packets only: they cross processes */
            l->id = c * FTM_NDIRS + d;
            l->peer = a == n->rank ? b : a;
            l->mb = mb;
            l->sent = atomic_load(&mb->tail);
            l->mreq = l->rreq = MPI_REQUEST_NULL;
        }
    return 0;
}

static int attach(ftm_rt *rt)
{
    mpi_net *n = calloc(1, sizeof *n);
    if (!n)
        return FTM_ENOMEM;
    mpi_watch_timeout(rt->hang_timeout_s); /* what the caller counts as a hang */
    int nc = rt->mesh.nchips;
    n->rt = rt;
    n->rank = g_rank;
    n->size = g_size;
    n->data = n->ctrl = MPI_COMM_NULL;
    n->creq = MPI_REQUEST_NULL;
    n->ops = (rt_net){ n, net_run_begin, net_run_end, net_chip_done, net_barrier, net_link_killed,
                       net_declare, net_combine, net_bcast, net_detach,
                       g_chips_send ? net_pushed : NULL };
    rt->net = &n->ops;
    pthread_mutex_init(&n->bell.mu, NULL);
    pthread_cond_init(&n->bell.cv, NULL);
    n->bell.id = -1;
    n->bell.rt = rt;
    n->owner = calloc((size_t)nc, sizeof *n->owner);
    n->active = calloc((size_t)n->size, 1);
    n->stall_of = calloc((size_t)n->size, 1);
    rt->local = calloc((size_t)nc, 1);
    n->cmax = 64 + mpi_state_bytes(rt) + (size_t)nc * FTM_NDIRS * 2 * sizeof(int64_t);
    n->cbuf = malloc(n->cmax);
    n->out_at = malloc(sizeof(int) * (size_t)nc * FTM_NDIRS);
    n->in_at = malloc(sizeof(int) * (size_t)nc * FTM_NDIRS);
    if (!n->owner || !n->active || !n->stall_of || !rt->local || !n->cbuf || !n->out_at ||
        !n->in_at)
        return FTM_ENOMEM; /* ftm_rt_destroy detaches */
    int rc = place_chips(n, &rt->mesh);
    if (!rc)
        rc = wire_links(n);
    if (!rc && (MPI_Comm_dup(MPI_COMM_WORLD, &n->data) != MPI_SUCCESS ||
                MPI_Comm_dup(MPI_COMM_WORLD, &n->ctrl) != MPI_SUCCESS))
        rc = FTM_EIO;
    return rc;
}
