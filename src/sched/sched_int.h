/* Internals shared by the schedule's files: sched_mem.c (dry runs and
 * budgets) below sched_pack.c (the packed form) below sched.c (building)
 * below sched_read.c (whole-schedule readers). */
#ifndef FTMESH_SCHED_INT_H
#define FTMESH_SCHED_INT_H

#include "ftmesh/sched.h"

#include <stdint.h>

/* Counts a change of a schedule's arrays on its meter: more bytes held,
 * less freed. */
void sched_acct(const ftm_sched *s, size_t more, size_t less);
/* Asked before s's arrays grow by more bytes, before allocating: FTM_ENOMEM
 * where its meter's limit (ftm_sched_ctx) refuses it, else 0. */
int sched_room(const ftm_sched *s, size_t more);
/* The context s is built in (its form, watch and meter), for the
 * schedules built from it (ftm_sched_merge). */
ftm_sched_ctx sched_ctx_of(const ftm_sched *s);
/* Frees chip's program (steps and ops) of s; the chip's step and op counts
 * become 0. Dry schedules too (ftm_sched_merge). */
void sched_clear_chip(ftm_sched *s, int chip);

/* For code in src/sched that moves programs between schedules
 * (sched_merge.c, sched_read.c). */
/* Appends op (its peer, route, tag, offsets as given) to chip's open step,
 * in lane (0 or 1; see sched_code.h) -- for code that moves ops between
 * schedules (2d-concurrent's merge). The peer must be the route's other
 * end. */
int sched_put_op(ftm_sched *s, int chip, const ftm_op *op, int lane);

/* Packed schedules: makes room for bytes more bytes of chip's program
 * (exactly). No effect on unpacked schedules. */
int sched_reserve_code(ftm_sched *s, int chip, size_t bytes);

/* Dry schedules only: gives chip's (empty) program nsteps steps and nops
 * ops, the last step that holds an op being used - 1 (0: none), with
 * exact capacities, as a builder that reserves exactly and then fills in
 * would. FTM_EINVAL on a schedule that is not dry or a non-empty program. */
int sched_dry_fill(ftm_sched *s, int chip, int nsteps, int nops, int used);

/* Packed programs (sched_pack.c). */
int sched_pack_step(ftm_sched *s, int chip, const char *phase, int index);
int sched_pack_op(ftm_sched *s, int chip, const ftm_op *op, int lane);
int sched_pack_grow(const ftm_sched *s, ftm_chip_prog *p, size_t need, int exact);
void sched_pack_trim(const ftm_sched *s, ftm_chip_prog *p);

#endif
