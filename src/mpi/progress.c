/* The progress thread of a rank: every MPI call of a run.
 *
 * A link between ranks keeps a mailbox's contract. The sending chip fills
 * its mailbox as usual; this thread sends each packet straight from its
 * slot and frees the slot only when the receiving rank reports that its
 * chip took the packet out (a credit), so the link holds at most `depth`
 * packets end to end, in order (MPI does not overtake on one tag), and
 * the byte counters stay the sending chip's. The receiving rank posts one
 * receive per link into the free slot of its own copy of the mailbox.
 * Control messages (credits, finished chips, barriers, failures, the
 * watchdog's stall reports and the end of a run) share one tag of a
 * second communicator, so each rank's are seen in the order sent. The
 * heartbeats are the job's (watch.c): they go on between runs too.
 */
#define _GNU_SOURCE 1 /* syscall(2): the futex of the doorbell */
#include "mpi_int.h"
#include "ftmesh/error.h"
#include "core/util.h"

#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

enum { MSG_CREDIT = 1, MSG_DONE, MSG_BAR, MSG_STALL, MSG_HANG, MSG_STATE, MSG_KILL, MSG_FIN,
       MSG_FIN2 };
#define MPI_MARK ((size_t)-1) /* hdr.len of a link's death marker */
/* Idle passes before the progress thread starts to sleep (0.01 .. 1.3 ms,
 * doubling): chips on the same cores need the CPU more than a spin. */
#ifndef MPI_SPIN
#define MPI_SPIN 2
#endif

typedef struct mpi_msg {
    int32_t kind, a;
    int64_t b;
} mpi_msg;

/* CPU seconds of the calling thread (wall time would count the waits of
 * an oversubscribed machine as work). */
static double cpu_now(void) { return core_clock_s(CLOCK_THREAD_CPUTIME_ID); }

/* Adds the CPU time of an MPI call to acc (n->t_mpi: the progress
 * thread's; a link's t_mpi: its sender's). */
#define TIMED_AT(acc, call)                      \
    do {                                         \
        double t_ = cpu_now();                   \
        call;                                    \
        (acc) += cpu_now() - t_;                 \
    } while (0)
#define TIMED(n, call) TIMED_AT((n)->t_mpi, call)

static void fail(mpi_net *n, int err)
{
    if (!n->err)
        n->err = err;
    mpi_stop_run(n->rt, 0);
}

static void send_ctrl(mpi_net *n, int dest, int kind, int a, int64_t b, const void *pay, size_t len)
{
    mpi_pend *p = malloc(sizeof *p + sizeof(mpi_msg) + len);
    if (!p) {
        fail(n, FTM_ENOMEM);
        return;
    }
    mpi_msg m = { kind, a, b };
    memcpy(p->data, &m, sizeof m);
    if (len)
        memcpy(p->data + sizeof m, pay, len);
    p->len = sizeof m + len;
    TIMED(n, MPI_Isend(p->data, (int)p->len, MPI_BYTE, dest, 0, n->ctrl, &p->req));
    p->next = n->pend;
    n->pend = p;
    n->msgs++;
}

static void send_all(mpi_net *n, int kind, int a, int64_t b, const void *pay, size_t len)
{
    for (int r = 0; r < n->size; r++)
        if (r != n->rank)
            send_ctrl(n, r, kind, a, b, pay, len);
}

/* Frees control messages MPI is done with. */
static void reap(mpi_net *n)
{
    for (mpi_pend **pp = &n->pend; *pp;) {
        int done = 0;
        TIMED(n, MPI_Test(&(*pp)->req, &done, MPI_STATUS_IGNORE));
        if (done) {
            mpi_pend *p = *pp;
            *pp = p->next;
            free(p);
        } else {
            pp = &(*pp)->next;
        }
    }
}

static int decl_id(const mpi_net *n, const ftm_sched *s)
{
    for (int i = 0; i < n->ndecl; i++)
        if (n->decl[i] == s)
            return i;
    return -1;
}

/* Sends the packets the local chip published on link l: header and
 * payload packed into the link's staging slot (a remote link carries
 * packets only, mailbox.c). The mailbox entry stays until the credit.
 * Called with l->mu held, by the progress thread or the sending chip. */
int mpi_pump_out(mpi_net *n, mpi_link *l)
{
    rt_mbox *mb = l->mb;
    uint32_t t = atomic_load_explicit(&mb->tail, memory_order_acquire);
    size_t stride = RT_HDR_BYTES + mb->pkt_bytes;
    int moved = 0;
    while (l->sent != t && !l->err) {
        const rt_hdr *h = (const rt_hdr *)(const void *)(mb->hdrs +
                                                          (size_t)(l->sent % mb->entries) * RT_HDR_BYTES);
        unsigned char *st = l->stage + (size_t)(l->sent % mb->depth) * stride;
        int id = decl_id(n, h->sched);
        if (id < 0 || h->expo) { /* undeclared schedule, or a descriptor */
            l->err = FTM_EINVAL;
            return 0;
        }
        memcpy(st, h, RT_HDR_BYTES);
        memcpy(st + RT_HDR_BYTES, h->data, h->len);
        rt_hdr *w = (rt_hdr *)(void *)st;
        w->sched = (const ftm_sched *)(uintptr_t)(id + 1);
        w->data = NULL;
        TIMED_AT(l->t_mpi, MPI_Isend(st, RT_HDR_BYTES + (int)h->len, MPI_BYTE, l->peer, l->id,
                                     n->data, &l->req[l->sent % mb->depth]));
        l->sent++;
        l->nsent++;
        l->msgs++;
        l->bytes += h->len;
        moved = 1;
    }
    if (!l->marker_sent && atomic_load(&mb->dead)) {
        rt_hdr *h = (rt_hdr *)(void *)l->marker;
        memset(l->marker, 0, sizeof l->marker);
        h->len = MPI_MARK;
        TIMED_AT(l->t_mpi, MPI_Isend(l->marker, RT_HDR_BYTES, MPI_BYTE, l->peer, l->id, n->data,
                                     &l->mreq));
        l->marker_sent = 1;
        l->nsent++;
        moved = 1;
    }
    return moved;
}

/* The progress thread's turn on out-link l: skipped while the sending
 * chip is sending (it will be back), a send error reported. */
static int pump_out(mpi_net *n, mpi_link *l, int wait)
{
    if (wait)
        pthread_mutex_lock(&l->mu);
    else if (pthread_mutex_trylock(&l->mu))
        return 1;
    int moved = mpi_pump_out(n, l);
    int err = l->err;
    pthread_mutex_unlock(&l->mu);
    if (err)
        fail(n, err);
    return moved;
}

/* A packet (or marker) landed in l->rbuf: into the mailbox (its producer
 * is this thread), unless it is a broken run's leftover. */
static void landed(mpi_net *n, mpi_link *l)
{
    rt_mbox *mb = l->mb;
    const rt_hdr *h = (const rt_hdr *)(const void *)l->rbuf;
    if (h->len == MPI_MARK) {
        atomic_store(&mb->dead, 1);
        rt_wake(mb->to);
        return;
    }
    if (l->drop)
        return;
    uintptr_t id = (uintptr_t)h->sched;
    unsigned char *slot = rt_mbox_slot_in(mb, 1);
    if (id == 0 || id > (uintptr_t)n->ndecl || !slot) {
        fail(n, FTM_EINTERNAL);
        return;
    }
    unsigned char *pay = rt_mbox_payload_in(mb);
    memcpy(slot, l->rbuf, RT_HDR_BYTES);
    memcpy(pay, l->rbuf + RT_HDR_BYTES, h->len);
    rt_hdr *w = (rt_hdr *)(void *)slot;
    w->sched = n->decl[id - 1];
    w->data = pay;
    w->expo = NULL;
    rt_mbox_push(mb, 1);
    rt_poke(mb->to, RT_WANT_DATA);
}

static void post_recv(mpi_net *n, mpi_link *l, int drop)
{
    l->drop = drop;
    TIMED(n, MPI_Irecv(l->rbuf, (int)(RT_HDR_BYTES + l->mb->pkt_bytes), MPI_BYTE, l->peer, l->id,
                       n->data, &l->rreq));
    l->posted = 1;
}

/* Receives on link l into its mailbox (settling: drops as many messages
 * as the sender said it sent), and returns credits. */
static int pump_in(mpi_net *n, mpi_link *l, int settling)
{
    int moved = 0;
    if (l->posted) {
        int done = 0;
        TIMED(n, MPI_Test(&l->rreq, &done, MPI_STATUS_IGNORE));
        if (done) {
            l->posted = 0;
            l->nrecv++;
            landed(n, l);
            moved = 1;
        }
    }
    if (!l->posted && !settling) {
        if (rt_mbox_slot_in(l->mb, 1)) /* room for it (this thread is the producer) */
            post_recv(n, l, 0);
    } else if (!l->posted && l->have_expect && l->nrecv < l->expect) {
        post_recv(n, l, 1);
    }
    uint32_t h = atomic_load_explicit(&l->mb->head, memory_order_acquire);
    if (h != l->credited) {
        send_ctrl(n, l->peer, MSG_CREDIT, l->id, (int64_t)(uint32_t)(h - l->credited), NULL, 0);
        l->credited = h;
        moved = 1;
    }
    return moved;
}

static void post_ctrl(mpi_net *n)
{
    TIMED(n, MPI_Irecv(n->cbuf, (int)n->cmax, MPI_BYTE, MPI_ANY_SOURCE, 0, n->ctrl, &n->creq));
}

/* The receiving rank took k packets of link id out: free their slots. */
static void credit(mpi_net *n, int id, int64_t k)
{
    int i = id >= 0 && id < n->rt->mesh.nchips * FTM_NDIRS ? n->out_at[id] : -1;
    if (i < 0) {
        fail(n, FTM_EINTERNAL);
        return;
    }
    mpi_link *l = &n->out[i];
    pthread_mutex_lock(&l->mu);
    for (int64_t j = 0; j < k; j++) {
        uint32_t h = atomic_load_explicit(&l->mb->head, memory_order_relaxed);
        TIMED(n, MPI_Wait(&l->req[h % l->mb->depth], MPI_STATUS_IGNORE));
        rt_mbox_pop(l->mb, 1);
    }
    pthread_mutex_unlock(&l->mu);
    rt_poke(l->mb->from, RT_WANT_SLOT);
}

/* Chips elsewhere finished their programs. */
static void remote_done(mpi_net *n, int64_t k)
{
    ftm_rt *rt = n->rt;
    if (atomic_fetch_sub(&rt->running, (int)k) == (int)k) {
        rt_wake_all(rt);
        pthread_mutex_lock(&rt->mu);
        pthread_cond_signal(&rt->cv);
        pthread_mutex_unlock(&rt->mu);
    }
}

/* A rank (this one included) has every chip in barrier gen, with its
 * chips' combined values w (nsum summed, nmax maximised words). */
static void bar_arrive(mpi_net *n, uint64_t gen, int nsum, int nmax, const unsigned char *w)
{
    int s = (int)(gen % MPI_BAR_SLOTS), nw = nsum + nmax;
    int64_t v[FTM_BARRIER_WORDS];
    if (nsum < 0 || nmax < 0 || nw > FTM_BARRIER_WORDS) {
        fail(n, FTM_EINTERNAL);
        return;
    }
    if (nw)
        memcpy(v, w, sizeof *v * (size_t)nw);
    if (n->bar_gen[s] != gen) {
        n->bar_gen[s] = gen;
        n->bar_count[s] = 0;
        memcpy(n->bar_val[s], v, sizeof *v * (size_t)nw);
    } else {
        rt_bar_combine(n->bar_val[s], v, nsum, nmax);
    }
    if (++n->bar_count[s] == n->nactive) {
        /* the local chips wait: the row is theirs to read once it opens */
        memcpy(n->rt->bar_acc[gen & 1], n->bar_val[s], sizeof *v * (size_t)nw);
        atomic_store(&n->rt->bar_gen, gen + 1);
        rt_wake_all(n->rt);
    }
}

/* The sender's FIN2: (link, messages sent) pairs. */
static void fin2(mpi_net *n, const unsigned char *p, int npairs)
{
    for (int i = 0; i < npairs; i++) {
        int64_t v[2];
        memcpy(v, p + sizeof v * (size_t)i, sizeof v);
        int at = n->in_at[v[0]];
        if (at < 0) {
            fail(n, FTM_EINTERNAL);
            continue;
        }
        n->in[at].expect = (uint64_t)v[1];
        n->in[at].have_expect = 1;
    }
    n->nfin2++;
}

static void handle(mpi_net *n, int src, const unsigned char *buf)
{
    mpi_msg m;
    memcpy(&m, buf, sizeof m);
    const unsigned char *pay = buf + sizeof m;
    ftm_rt *rt = n->rt;
    switch (m.kind) {
    case MSG_CREDIT: credit(n, m.a, m.b); break;
    case MSG_DONE: remote_done(n, m.b); break;
    case MSG_BAR: bar_arrive(n, (uint64_t)m.b, m.a & 255, m.a >> 8, pay); break;
    case MSG_STALL: n->stall_of[src] = (unsigned char)m.a; break;
    case MSG_HANG: mpi_stop_run(rt, 1); break;
    case MSG_STATE: mpi_state_merge(n, pay); break;
    case MSG_KILL: {
        int chip = m.a, dir = (int)(m.b & 3), oneway = (int)(m.b >> 8);
        mpi_mark_dead(n, chip, dir);
        if (!oneway)
            mpi_mark_dead(n, ftm_mesh_neighbor(&rt->mesh, chip, dir), ftm_dir_opposite(dir));
        rt_wake_all(rt);
        break;
    }
    case MSG_FIN:
        mpi_state_merge(n, pay);
        n->nfin++;
        break;
    case MSG_FIN2: fin2(n, pay, m.a); break;
    default: fail(n, FTM_EINTERNAL);
    }
}

static int poll_ctrl(mpi_net *n)
{
    int moved = 0;
    for (;;) {
        int done = 0;
        MPI_Status st;
        TIMED(n, MPI_Test(&n->creq, &done, &st));
        if (!done)
            return moved;
        handle(n, st.MPI_SOURCE, n->cbuf);
        post_ctrl(n);
        moved = 1;
    }
}

/* Rank 0 gives up on rank r: the run ends as a hang on the ranks that
 * still listen, and this one stops waiting for r (no settling, no
 * collective: r would never answer). Unless the job's watchdog named a
 * silent rank first: it is ending the job. */
static void declare_silent(mpi_net *n, int r, double quiet)
{
    if (!mpi_claim_silent(r, quiet))
        return;
    n->silent = r;
    send_all(n, MSG_HANG, 0, 0, NULL, 0);
    mpi_stop_run(n->rt, 1);
}

/* Rank 0 is the run's watchdog: a hang is every rank stalled (no packet
 * moved, every running chip asleep) for the hang timeout, or every rank
 * stalled but some that were silent (no heartbeat) for the hang timeout.
 * A silent rank's process is not running at all (stopped, or starved of
 * the CPU for that long): its chips can neither move nor report. A busy
 * rank is not silent: its watch thread beats whatever its chips do. The
 * beats go on for the whole job, so a rank that stopped before this run
 * (or before it reached it) is silent too. */
static void watch_ranks(mpi_net *n)
{
    ftm_rt *rt = n->rt;
    double now = core_now_s(), quiet = 0;
    int all = 1, silent = -1;
    for (int r = 0; r < n->size; r++) {
        double q;
        if (!mpi_watch_quiet(r, rt->hang_timeout_s, &q)) {
            all &= n->stall_of[r];
        } else if (q > quiet) {
            silent = r;
            quiet = q;
        }
    }
    if (!all || atomic_load(&rt->abort) || atomic_load(&rt->running) == 0) {
        n->all_stalled_since = -1;
    } else if (silent >= 0) {
        declare_silent(n, silent, quiet);
    } else if (n->all_stalled_since < 0) {
        n->all_stalled_since = now;
    } else if (now - n->all_stalled_since >= rt->hang_timeout_s) {
        send_all(n, MSG_HANG, 0, 0, NULL, 0);
        mpi_stop_run(rt, 1);
    }
}

/* What the local chips did that the other ranks must learn. */
static int local_events(mpi_net *n)
{
    ftm_rt *rt = n->rt;
    int moved = 0;
    if (!n->done_sent && rt->nlocal > 0 && atomic_load(&n->local_left) == 0) {
        send_all(n, MSG_DONE, 0, rt->nlocal, NULL, 0);
        n->done_sent = moved = 1;
    }
    uint64_t b = atomic_load(&n->bar_req);
    if (b && b != n->bar_done) {
        /* every local chip is in barrier b - 1: its row holds their values */
        ftm_rt *r = n->rt;
        int nw = r->bar_nsum + r->bar_nmax;
        const int64_t *w = r->bar_acc[(b - 1) & 1];
        n->bar_done = b;
        send_all(n, MSG_BAR, r->bar_nsum | r->bar_nmax << 8, (int64_t)(b - 1), w,
                 sizeof *w * (size_t)nw);
        bar_arrive(n, b - 1, r->bar_nsum, r->bar_nmax, (const unsigned char *)w);
        moved = 1;
    }
    pthread_mutex_lock(&n->bell.mu);
    for (int i = 0; i + 2 < n->nkills; i += 3)
        send_all(n, MSG_KILL, n->kills[i], n->kills[i + 1] | (n->kills[i + 2] << 8), NULL, 0);
    moved |= n->nkills > 0;
    n->nkills = 0;
    pthread_mutex_unlock(&n->bell.mu);
    if (atomic_load(&rt->abort)) {
        unsigned sig = mpi_state_sig(rt);
        if (sig != n->sig_sent) {
            unsigned char *st = malloc(mpi_state_bytes(rt));
            if (!st) {
                fail(n, FTM_ENOMEM);
                return 1;
            }
            mpi_state_pack(rt, st);
            send_all(n, MSG_STATE, 0, 0, st, mpi_state_bytes(rt));
            free(st);
            n->sig_sent = sig;
            moved = 1;
        }
    }
    int s = atomic_load(&rt->stalled);
    if (s != n->stall_sent) {
        n->stall_sent = s;
        if (n->rank == 0)
            n->stall_of[0] = (unsigned char)s;
        else
            send_ctrl(n, 0, MSG_STALL, s, 0, NULL, 0);
    }
    if (n->rank == 0)
        watch_ranks(n);
    return moved;
}

static int pass(mpi_net *n)
{
    int moved = 0;
    for (int i = 0; i < n->nout; i++)
        moved |= pump_out(n, &n->out[i], 0);
    for (int i = 0; i < n->nin; i++)
        moved |= pump_in(n, &n->in[i], 0);
    moved |= poll_ctrl(n);
    moved |= local_events(n);
    reap(n);
    return moved;
}

/* Nothing moved: poll MPI again soon, or at once when a local chip pokes
 * (a packet to send, a slot freed, a barrier). The pause doubles while
 * idle, up to 1.3 ms: a busy run polls, an idle one sleeps. */
static void idle_wait(mpi_net *n, uint32_t seen, int idle)
{
    if (idle < MPI_SPIN)
        return;
    long ns = 10000L << (idle - MPI_SPIN < 7 ? idle - MPI_SPIN : 7);
    /* pokes ring only a chip that said it may sleep */
    atomic_store(&n->bell.asleep, RT_WANT_DATA | RT_WANT_SLOT | RT_WANT_RELEASE);
    struct timespec ts = { 0, ns };
    if (atomic_load_explicit(&n->bell.bell, memory_order_acquire) == seen && !atomic_load(&n->stop)) {
#ifdef __linux__
        syscall(SYS_futex, &n->bell.bell, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
#else
        nanosleep(&ts, NULL);
#endif
    }
}

static uint32_t bell_now(mpi_net *n)
{
    return atomic_load_explicit(&n->bell.bell, memory_order_acquire);
}

/* The end of a run, in two rounds to every rank. FIN: the failure state
 * (after every rank's FIN, every link death of the run is known and its
 * marker sent); FIN2: how many messages went on each link to that rank. */
static void send_fin2(mpi_net *n)
{
    int64_t *v = malloc(sizeof(int64_t) * 2 * (size_t)(n->nout + 1));
    if (!v) {
        fail(n, FTM_ENOMEM);
        return;
    }
    for (int r = 0; r < n->size; r++) {
        if (r == n->rank)
            continue;
        int k = 0;
        for (int i = 0; i < n->nout; i++)
            if (n->out[i].peer == r) {
                v[2 * k] = n->out[i].id;
                v[2 * k++ + 1] = (int64_t)n->out[i].nsent;
            }
        send_ctrl(n, r, MSG_FIN2, k, 0, v, sizeof(int64_t) * 2 * (size_t)k);
    }
    free(v);
}

static void send_fin(mpi_net *n)
{
    unsigned char *st = malloc(mpi_state_bytes(n->rt));
    if (!st) {
        fail(n, FTM_ENOMEM);
        return;
    }
    mpi_state_pack(n->rt, st);
    send_all(n, MSG_FIN, 0, 0, st, mpi_state_bytes(n->rt));
    free(st);
}

static int sends_done(mpi_net *n, mpi_link *l)
{
    int done = 1;
    TIMED(n, MPI_Test(&l->mreq, &done, MPI_STATUS_IGNORE));
    for (uint32_t i = atomic_load(&l->mb->head); done && i != l->sent; i++)
        TIMED(n, MPI_Test(&l->req[i % l->mb->depth], &done, MPI_STATUS_IGNORE));
    return done;
}

static int settled(mpi_net *n)
{
    if (n->nfin2 < n->size - 1 || n->pend)
        return 0;
    for (int i = 0; i < n->nin; i++)
        if (!n->in[i].have_expect || n->in[i].nrecv < n->in[i].expect)
            return 0;
    for (int i = 0; i < n->nout; i++)
        if (!sends_done(n, &n->out[i]))
            return 0;
    return 1;
}

static void cancel(mpi_net *n, MPI_Request *r)
{
    if (*r == MPI_REQUEST_NULL)
        return;
    TIMED(n, MPI_Cancel(r));
    TIMED(n, MPI_Wait(r, MPI_STATUS_IGNORE));
}

/* After the local chips joined: every message of the run is matched, so
 * the next run (or the next runtime's communicators) starts clean. */
static void settle(mpi_net *n)
{
    pass(n); /* the last credits, markers and failure state */
    send_fin(n);
    while (n->nfin < n->size - 1) {
        int moved = poll_ctrl(n);
        for (int i = 0; i < n->nin; i++)
            moved |= pump_in(n, &n->in[i], 1);
        reap(n);
        if (!moved) {
            struct timespec ts = { 0, 50000 };
            nanosleep(&ts, NULL);
        }
    }
    for (int i = 0; i < n->nout; i++) /* markers of links killed elsewhere */
        pump_out(n, &n->out[i], 1);
    send_fin2(n);
    while (!settled(n)) {
        int moved = 0;
        for (int i = 0; i < n->nin; i++)
            moved |= pump_in(n, &n->in[i], 1);
        moved |= poll_ctrl(n);
        reap(n);
        if (!moved) {
            struct timespec ts = { 0, 50000 };
            nanosleep(&ts, NULL);
        }
    }
    for (int i = 0; i < n->nin; i++) {
        cancel(n, &n->in[i].rreq);
        n->in[i].posted = 0;
    }
    cancel(n, &n->creq);
}

void *mpi_progress_main(void *arg)
{
    mpi_net *n = arg;
    double t0 = cpu_now();
    post_ctrl(n);
    int idle = 0;
    mpi_watch_run(1);
    while (!atomic_load(&n->stop)) {
        uint32_t seen = bell_now(n);
        if (pass(n))
            idle = 0;
        else
            idle_wait(n, seen, idle < 64 ? ++idle : idle);
    }
    mpi_watch_run(0); /* settling: the job's watchdog watches alone */
    if (n->silent < 0) /* a silent rank would never settle */
        settle(n);
    for (int i = 0; i < n->nout; i++) { /* the chips joined: no lock needed */
        n->t_mpi += n->out[i].t_mpi;
        n->msgs += n->out[i].msgs;
        n->bytes += n->out[i].bytes;
    }
    mpi_account(n->t_mpi, cpu_now() - t0, n->msgs, n->bytes);
    return NULL;
}
