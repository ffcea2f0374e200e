/* Internals of the MPI transport (src/mpi): the runtime seam's
 * implementation (runtime/rt_internal.h). */
#ifndef FTMESH_MPI_INT_H
#define FTMESH_MPI_INT_H

#include "ftmesh/mpi.h"
#include "runtime/rt_internal.h"

#include <mpi.h>

/* A directed link between this rank and another. */
typedef struct mpi_link {
    int id;                  /* chip * 4 + dir (the MPI tag) */
    int peer;                /* the other rank */
    rt_mbox *mb;
    /* sending side: slots [head, sent) are with MPI, [sent, tail) not yet.
     * With chips sending (mpi_net.chips_send) the sending chip's thread
     * and the progress thread both send and take credits: under mu. */
    pthread_mutex_t mu;
    uint32_t sent;
    int err;                 /* a send failed (the progress thread reports it) */
    double t_mpi;            /* seconds inside its MPI sends this run */
    uint64_t msgs, bytes;    /* packets and payload bytes sent this run */
    MPI_Request *req;        /* [depth], one per payload slot */
    unsigned char *stage;    /* [depth] header + payload as sent */
    int marker_sent;         /* the link died: the marker went after its data */
    MPI_Request mreq;
    unsigned char marker[RT_HDR_BYTES];
    /* receiving side */
    MPI_Request rreq;
    int posted;
    unsigned char *rbuf;     /* where the posted receive lands */
    int drop;                /* it is a broken run's leftover */
    uint32_t credited;       /* head already reported to the sender */
    uint64_t nsent, nrecv;   /* messages of this run */
    uint64_t expect;         /* messages the sender sent (from its FIN) */
    int have_expect;
} mpi_link;

/* A control message in flight (kept until MPI is done with it). */
typedef struct mpi_pend {
    struct mpi_pend *next;
    MPI_Request req;
    size_t len;
    unsigned char data[];
} mpi_pend;

enum { MPI_BAR_SLOTS = 8 };

typedef struct mpi_net {
    rt_net ops;
    ftm_rt *rt;
    int chips_send;          /* 1: chips send their packets (MPI_THREAD_MULTIPLE) */
    MPI_Comm data, ctrl;
    int rank, size;
    int *owner;              /* [nchips] rank that runs the chip */
    unsigned char *active;   /* [size] 1: the rank runs a healthy chip */
    int nactive;
    mpi_link *out, *in;
    int nout, nin;
    ftm_chip bell;           /* the transport's doorbell (mu, cv, bell) */
    const ftm_sched **decl;
    int ndecl, cap_decl;
    /* per run */
    pthread_t thread;
    int thread_up;
    _Atomic int stop;
    _Atomic int local_left;
    int done_sent;
    _Atomic uint64_t bar_req;   /* gen + 1 the local chips reached; 0 none */
    uint64_t bar_done;          /* last gen + 1 announced */
    uint64_t bar_gen[MPI_BAR_SLOTS];
    int bar_count[MPI_BAR_SLOTS];
    int64_t bar_val[MPI_BAR_SLOTS][FTM_BARRIER_WORDS]; /* combined so far */
    _Atomic int dirty;          /* failure state changed: tell the others */
    unsigned sig_sent;          /* state signature last broadcast */
    int stall_sent;
    unsigned char *stall_of;    /* rank 0: [size] stalled flags */
    double all_stalled_since;
    /* A rank that stops entirely (SIGSTOP, swapped out) cannot say it is
     * stalled: rank 0 asks the job's watchdog (watch.c) who went silent. */
    int silent;                 /* rank 0: the rank it gave up on, or -1 */
    struct mpi_net *kept_next;  /* mpi.c: kept after that (g_kept) */
    int nfin, nfin2;            /* end-of-run messages received */
    int err;                    /* a transport error of this run */
    MPI_Request creq;
    unsigned char *cbuf;
    size_t cmax;
    mpi_pend *pend;
    int *out_at, *in_at;        /* [nchips * 4] link id -> index, or -1 */
    int *kills;                 /* queued link deaths (chip, dir, oneway) */
    int nkills, cap_kills;      /* under bell.mu */
    double t_mpi;               /* this run: seconds inside MPI calls */
    uint64_t msgs, bytes;
} mpi_net;

/* progress.c */
void *mpi_progress_main(void *arg);
/* Failure state: serialises into buf (mpi_state_bytes long), merges one
 * received, and a cheap signature of the local one. */
size_t mpi_state_bytes(const ftm_rt *rt);
void mpi_state_pack(const ftm_rt *rt, unsigned char *buf);
void mpi_state_merge(mpi_net *n, const unsigned char *buf);
unsigned mpi_state_sig(const ftm_rt *rt);
/* Stops the run on this rank (as a hang when hang is set). */
void mpi_stop_run(ftm_rt *rt, int hang);
/* A directed link died: marks what this rank may (the receiving side of a
 * link from another rank is marked by the marker after its data). */
void mpi_mark_dead(mpi_net *n, int chip, int dir);
/* Queues a link death for the other ranks (any thread). */
int mpi_queue_kill(mpi_net *n, int chip, int dir, int oneway);

/* The sending side of out-link l (any thread, under l->mu): sends what
 * the chip published, then the death marker. 1 if something went. */
int mpi_pump_out(mpi_net *n, mpi_link *l);

/* mpi.c: time accounting of the progress threads */
void mpi_account(double mpi_s, double thread_s, uint64_t msgs, uint64_t bytes);
/* mpi.c: rank went silent for secs; from now on this process makes no
 * call that would wait for it (ftm_mpi_silent). 1 for the first caller
 * (the run's watchdog or the job's), 0 when a rank was named already:
 * only one of them reports. */
int mpi_claim_silent(int rank, double secs);
int mpi_is_lost(void);

/* watch.c: the job's heartbeats (a thread from ftm_mpi_init to
 * ftm_mpi_finalize; nothing with one rank). */
int mpi_watch_start(int rank, int size);
void mpi_watch_stop(void);
/* This rank's hang timeout from now on (s > 0; each runtime sets its own). */
void mpi_watch_timeout(double s);
/* 1 when rank r was not heard from for timeout (or for its own hang
 * timeout, if longer), with *quiet the seconds since. */
int mpi_watch_quiet(int r, double timeout, double *quiet);
/* A progress thread enters (on) or leaves its run's loop: rank 0's run
 * watchdog declares a silent rank first, with the stuck chips. */
void mpi_watch_run(int on);

#endif
