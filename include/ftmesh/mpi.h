/* Runs spread over MPI processes (built with ./configure --with-mpi).
 *
 * Every process ("rank") builds the same mesh, rings and schedules; the
 * chips are split over the ranks in a grid of rectangular blocks, and each
 * rank runs the threads of its block's chips. A link inside a block stays
 * a mailbox; a link between blocks is carried by MPI point-to-point
 * messages with the same capacity, order and counters as a mailbox (one
 * progress thread per rank does every MPI call of a run, or, with
 * ftm_mpi_chips_send, the chips send their packets themselves). Runtimes made
 * after ftm_mpi_enable are spread this way (runtime.h: ftm_rt_is_local,
 * ftm_rt_sum_u64). A process that dies ends the MPI job (Open MPI's and
 * MPICH's default); surviving it would need ULFM.
 */
#ifndef FTMESH_MPI_H
#define FTMESH_MPI_H

#include "ftmesh/export.h"

#include <stddef.h>
#include <stdint.h>

/* MPI_Init_thread (threads: multiple). 0, FTM_ENOTSUP (the MPI library
 * offers too little thread support) or FTM_EIO. */
FTM_EXTERN int ftm_mpi_init(int *argc, char ***argv);
/* MPI_Finalize, once every rank got here (the watchdog, ftm_mpi_watch,
 * keeps watching until then); after ftm_mpi_silent named a rank it cannot
 * finish with that rank, so it aborts the job (code 1) instead: call
 * ftm_mpi_abort with the code the job should end with first. */
FTM_EXTERN void ftm_mpi_finalize(void);
/* Aborts the whole job (every rank) with code. */
FTM_EXTERN void ftm_mpi_abort(int code);
/* This process's rank and the number of ranks (0 and 1 before init). */
FTM_EXTERN int ftm_mpi_rank(void);
FTM_EXTERN int ftm_mpi_size(void);
/* Ranks of this run on this machine (they share its memory). */
FTM_EXTERN int ftm_mpi_node_ranks(void);

/* Splits the chips of every runtime created from now on over the ranks:
 * rows x cols blocks (rows * cols == ftm_mpi_size()), or, with rows == 0,
 * the grid ftm_mpi_choose_grid picks for each mesh. 0 or FTM_EINVAL. */
FTM_EXTERN int ftm_mpi_enable(int rows, int cols);
/* The grid of k ranks over a mesh of mrows x mcols chips that cuts the
 * fewest links (ties: fewer rank rows). 0, or FTM_EINVAL when k blocks
 * cannot each hold a chip. */
FTM_EXTERN int ftm_mpi_choose_grid(int k, int mrows, int mcols, int torus, int *rows, int *cols);
/* Runtimes created from now on: 1, a chip's thread sends each packet it
 * publishes on a link to another rank itself (MPI_THREAD_MULTIPLE); 0
 * (the default), it pokes the progress thread, which sends it. The
 * progress thread receives and returns credits either way. */
FTM_EXTERN void ftm_mpi_chips_send(int on);
/* The grid used for a mesh of mrows x mcols (after ftm_mpi_enable). */
FTM_EXTERN int ftm_mpi_grid(int mrows, int mcols, int torus, int *rows, int *cols);

/* What a rank's transport did since ftm_mpi_init: CPU seconds its
 * progress threads spent inside MPI calls and in total, the CPU seconds of
 * the whole process (every thread), messages and payload bytes it sent to
 * other ranks. */
typedef struct ftm_mpi_stats {
    double mpi_s, thread_s, process_s;
    uint64_t msgs, bytes;
} ftm_mpi_stats;
/* Collective (every rank calls it): the stats summed over the ranks, and
 * the largest peak resident memory of one rank in bytes. 0 or FTM_EIO. */
FTM_EXTERN int ftm_mpi_get_stats_all(ftm_mpi_stats *sum, uint64_t *max_rss);
/* The job's watchdog over ranks. From ftm_mpi_init to ftm_mpi_finalize
 * a thread of every rank sends the others a heartbeat a few times per
 * hang timeout, whatever the rank's chips and main thread do (a rank busy
 * computing or building schedules beats). A rank not heard from for the
 * hang timeout is silent: its process is stopped or starved of the CPU.
 * The lowest rank whose lower ranks are all silent (rank 0, or rank 1
 * when rank 0 stopped) calls fn(rank, secs) on the watchdog's thread with
 * the lowest silent rank and how long it was silent; fn must end the job
 * (print, then ftm_mpi_abort), as the other ranks may wait for the silent
 * one anywhere; if fn returns, or is NULL, the job is aborted with code 1.
 * Except for rank 0 inside a run: that run first returns FTM_EHANG with
 * the stuck chips (ftm_mpi_silent). The hang timeout is hang_timeout_s
 * when > 0; each runtime created sets it to its own; before either,
 * FTM_RT_DEFAULT_HANG_S. */
typedef void (*ftm_mpi_silent_fn)(int rank, double secs);
FTM_EXTERN void ftm_mpi_watch(double hang_timeout_s, ftm_mpi_silent_fn fn);
/* The rank this rank's watchdog found silent, or -1. On rank 0 after a run
 * that returned FTM_EHANG with this rank's stuck chips (ftm_rt_stuck):
 * from then on the runtimes' collectives keep this rank's own values, and
 * ftm_mpi_get_stats_all and ftm_mpi_agree return FTM_EIO, rather than wait
 * for the silent rank: end the job with ftm_mpi_abort. *secs (may be
 * NULL): how long it had been silent. */
FTM_EXTERN int ftm_mpi_silent(double *secs);
/* Collective (every rank calls it, with the same len): whether every rank
 * got rc == 0 from the same step (an input one rank alone could not read:
 * a file on another node, standard input, which reaches rank 0 only).
 * Returns 0 when all did; else the rc of the lowest rank that did not,
 * with its msg (len bytes, NUL-terminated) in every rank's msg; FTM_EIO
 * when MPI fails. */
FTM_EXTERN int ftm_mpi_agree(int rc, char *msg, size_t len);
/* Collective: 0 when every rank passed the same v (a digest of what each
 * read, as files may differ between nodes), 1 when not, FTM_EIO when MPI
 * fails. */
FTM_EXTERN int ftm_mpi_same(uint64_t v);

#endif
