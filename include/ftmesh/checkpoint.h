/* checkpoint: the training state in one file, written atomically and
 * refused when damaged or made for another configuration.
 *
 * File layout (every integer and float little-endian):
 *   "FTMCKPT\0"            magic, 8 bytes
 *   u32 version            FTM_CKPT_VERSION
 *   u32 flags              0
 *   u64 total              length of the whole file, checksum included
 *   u32 meta_len           bytes of the configuration that follows
 *   meta                   model, optimizer, batch, micro, exact, data id,
 *                          parameter count (see checkpoint.c:ck_put_meta)
 *   u32 desc_len, desc     the configuration in words (for people)
 *   u64 step               steps done = the next step to run
 *   u64 examples           data position: examples consumed (step * batch)
 *   u64 nparams, u32 nmoments (1 for SGD momentum, 2 for AdamW/LAMB),
 *   u64 nlosses (0 or step)
 *   f32 params[nparams], f32 moment[nmoments][nparams], f64 losses[nlosses]
 *   (version 2 on)         the mesh and the fault script still to come:
 *   u32 rows, u32 cols, u32 torus   (rows 0: none, nothing else of it)
 *   u8 chip_dead[rows*cols], u8 link_dead[rows*cols*4] (chip*4 + dir;
 *                          1 dead, 2 dead but nobody noticed yet)
 *   u32 script_len, script  the events not yet played (and the link kills
 *                          nobody noticed yet), one per line as
 *                          include/ftmesh/faults.h writes them
 *   u32 crc                CRC-32C (Castagnoli) of every byte before it
 *
 * CRC-32C: polynomial 0x1EDC6F41, reflected (0x82F63B78), init and final
 * xor 0xFFFFFFFF (Castagnoli, Braeuer, Herrmann, IEEE Trans. Commun. 1993;
 * as in iSCSI, RFC 3720 section 12.1 and appendix B.4). A CRC of 32 bits
 * detects every burst of errors up to 32 bits long, so any one damaged
 * byte is always caught; together with the exact total length, so is any
 * truncation.
 *
 * Nothing here prints: errors are negative FTM_E* codes plus one line of
 * detail in the caller's buffer.
 */
#ifndef FTMESH_CHECKPOINT_H
#define FTMESH_CHECKPOINT_H

#include "ftmesh/export.h"

#include <stddef.h>
#include <stdint.h>
#include "ftmesh/model.h"

#define FTM_CKPT_VERSION 2    /* version 1 files (no mesh) are read too */
#define FTM_CKPT_MAX_CHIPS (1 << 20)
#define FTM_CKPT_MAX_SCRIPT (1u << 20)
#define FTM_CKPT_DESC_MAX 512

/* What a checkpoint was made for; a resumed run must match all of it. */
typedef struct ftm_ckpt_meta {
    ftm_model_config model;  /* max_batch and data are not stored */
    ftm_optim_config optim;  /* resolved: kind != 0 */
    long batch;
    int micro;
    int exact;
    uint64_t data_id;        /* 0: synthetic data; else the caller's
                                fingerprint of the dataset */
    size_t nparams;
} ftm_ckpt_meta;

/* The state at a step boundary. */
typedef struct ftm_ckpt_state {
    long step;               /* steps done: the next step to run */
    uint64_t examples;       /* examples consumed (step * batch) */
    size_t nparams;
    float *params;           /* [nparams] */
    int nmoments;            /* 1 (SGD) or 2 (AdamW, LAMB) */
    float *moment[2];        /* [nparams] each */
    double *losses;          /* [step] the losses of steps 0..step-1, or
                                NULL (none stored) */
    char desc[FTM_CKPT_DESC_MAX]; /* after a load: the file's description */
    /* The mesh at that step (rows 0: not recorded) with its dead chips and
     * directed links (0/1 each), and the fault script still to come. */
    int rows, cols, torus;
    unsigned char *chip_dead;  /* [rows * cols] */
    unsigned char *link_dead;  /* [rows * cols * 4] 1 dead, 2 nobody noticed */
    char *script;              /* script_len bytes of text (not NUL-ended
                                  in the file; a load adds the NUL) */
    size_t script_len;
} ftm_ckpt_state;

/* Moments an optimizer kind keeps: 1 for SGD, 2 for AdamW and LAMB, else 0. */
FTM_EXTERN int ftm_ckpt_nmoments(int optim_kind);

/* CRC-32C of n bytes, continuing from crc (start with 0). */
FTM_EXTERN uint32_t ftm_ckpt_crc32c(uint32_t crc, const void *data, size_t n);

/* The file's bytes in a malloc'd buffer. FTM_EINVAL when st does not fit
 * meta (sizes, moments, examples), FTM_ENOMEM. */
FTM_EXTERN int ftm_ckpt_encode(const ftm_ckpt_meta *meta, const ftm_ckpt_state *st,
                    unsigned char **buf, size_t *len);
/* Writes the file atomically: a temporary file in the same directory
 * (ftm_file_tmp_open: a replaced file keeps its mode, a new one gets 0666
 * less the umask), fsync, rename over path, fsync of the directory. On an
 * error path is left as it was. The rename replaces a symbolic link at path, not its target;
 * a path that is not a regular file (a directory, pipe or device: the
 * rename would replace /dev/null) is refused with FTM_EINVAL. 0,
 * FTM_EINVAL, FTM_ENOMEM or FTM_EIO (detail says what). */
FTM_EXTERN int ftm_ckpt_save(const char *path, const ftm_ckpt_meta *meta, const ftm_ckpt_state *st,
                  char *detail, size_t dlen);

/* Reads a checkpoint from memory. Checks, in order: size and magic
 * (FTM_EFORMAT), version (FTM_EFORMAT), the total length (FTM_EFORMAT:
 * truncated or trailing bytes), the checksum (FTM_ECORRUPT), the layout
 * and values (FTM_EFORMAT), and, when expect is not NULL, that it was made
 * for that configuration (FTM_ECONFIG: the detail names the first
 * difference). Only then does it allocate and fill *st (and *meta if not
 * NULL); on any error nothing is allocated and *st is zeroed. */
FTM_EXTERN int ftm_ckpt_decode(const void *buf, size_t len, const ftm_ckpt_meta *expect,
                    ftm_ckpt_meta *meta, ftm_ckpt_state *st, char *detail, size_t dlen);
/* The same from a file: also FTM_EIO when it cannot be read. */
FTM_EXTERN int ftm_ckpt_load(const char *path, const ftm_ckpt_meta *expect, ftm_ckpt_meta *meta,
                  ftm_ckpt_state *st, char *detail, size_t dlen);
/* 0 when a file made for `file` may resume a run of `run`, else
 * FTM_ECONFIG naming the first difference (model, size, optimizer, batch,
 * micro-batch, reduce mode or data). */
FTM_EXTERN int ftm_ckpt_match(const ftm_ckpt_meta *file, const ftm_ckpt_meta *run,
                   char *detail, size_t dlen);
/* Frees what a decode or load allocated (st itself is the caller's). */
FTM_EXTERN void ftm_ckpt_state_free(ftm_ckpt_state *st);

#endif
