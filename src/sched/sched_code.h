/* The packed form's state (sched_pack.c), private to src/sched: the
 * public structs (ftm_chip_prog.packed, ftm_sched_cur.state) keep it as
 * opaque words, so no module outside src/sched sees the codec. */
#ifndef FTMESH_SCHED_CODE_H
#define FTMESH_SCHED_CODE_H

#include "ftmesh/sched.h"

#include <stddef.h>
#include <stdint.h>

/* A packed program's running values: op k of a step is predicted from
 * op k of the chip's previous step (its slot: the offset and tag moved on
 * by the same stride again, the same length and route), and only what
 * differs is stored. Lane 0 holds every op a builder adds; lane 1 the
 * second part of a merged schedule (2d-concurrent), so each part keeps
 * its own slots. Ops past the last slot share it. */
#define SCHED_SLOTS 4
typedef struct sched_slot {
    uint64_t off, len;
    int64_t doff;          /* the last offset stride */
    uint32_t route, tag;
    int32_t dtag;          /* the last tag stride */
} sched_slot;

typedef struct sched_codec {
    sched_slot slot[2][SCHED_SLOTS]; /* [lane][op of the step] */
    int at[2];             /* [lane] ops of the current step so far */
    int phase, index;      /* the last step header (phase id, index) */
} sched_codec;

/* One chip's packed program, in ftm_chip_prog.packed (steps and ops stay
 * NULL). may_alias: it lives in those words, which nothing else reads. */
typedef struct __attribute__((may_alias)) sched_code {
    unsigned char *code;  /* the program's bytes: step headers and ops */
    size_t ncode, cap_code;
    size_t code_used;     /* ncode just after the last op (trim cuts there) */
    sched_codec enc;      /* the encoder's running values */
    int used_phase, used_index, used_at[2]; /* enc's header values just after the last op */
    int cur_nops;         /* ops in the open step */
} sched_code;

/* A reader's place in a packed program, in ftm_sched_cur.state. */
typedef struct __attribute__((may_alias)) sched_dec {
    size_t pos;           /* bytes read */
    sched_codec dec;      /* the decoder's running values */
} sched_dec;

_Static_assert(sizeof(sched_code) <= sizeof(((ftm_chip_prog *)0)->packed),
               "FTM_SCHED_PROG_WORDS too small for sched_code");
_Static_assert(sizeof(sched_dec) <= sizeof(((ftm_sched_cur *)0)->state),
               "FTM_SCHED_CUR_WORDS too small for sched_dec");

/* The packed state of program p (const or not) and of reader cur. */
#define SCHED_CODE(p)                                                                        \
    _Generic((p), const ftm_chip_prog *: (const sched_code *)(const void *)(p)->packed,     \
             default: (sched_code *)(void *)(p)->packed)
#define SCHED_DEC(cur) ((sched_dec *)(void *)(cur)->state)

#endif
