/* ftmesh error codes.
 *
 * Every library function that can fail returns 0 or a negative FTM_E* code
 * (libuv style); nothing below the command line prints or exits. One X-macro
 * list generates the enum, ftm_strerror() and ftm_err_name().
 */
#ifndef FTMESH_ERROR_H
#define FTMESH_ERROR_H

#include "ftmesh/export.h"

#define FTM_ERRNO_MAP(X)                                                     \
    X(EINVAL, "invalid argument")                                            \
    X(ENOMEM, "out of memory")                                               \
    X(ERANGE, "value out of range")                                          \
    X(ENOTNEIGHBOR, "chips are not neighbours")                              \
    X(EALLDEAD, "every chip is dead")                                        \
    X(EPARTITION, "healthy chips are cut into parts")                        \
    X(ENOROUTE, "no path of live links between two chips")                   \
    X(EBADRING, "ring failed validation")                                    \
    X(EHANG, "no progress: chips are stuck")                                 \
    X(ECHIPDEAD, "chip died during the run")                                 \
    X(ETHREAD, "could not start a chip thread")                              \
    X(EIO, "input/output error")                                             \
    X(EFORMAT, "malformed input file")                                       \
    X(EMISMATCH, "results differ")                                           \
    X(ENOTSUP, "not supported for this configuration")                       \
    X(EDIVERGED, "training diverged: loss is not finite")                    \
    X(ECORRUPT, "data is damaged (checksum mismatch)")                       \
    X(ECONFIG, "made for another configuration")                             \
    X(ELINKDEAD, "a link died during the run")                               \
    X(EINTERNAL, "internal error (a bug)")                                  \
    X(ESTOPPED, "stopped early: the result could not have been used")

typedef enum {
    FTM_OK = 0,
#define FTM_ERR_ENUM_(name, msg) FTM_##name,
    FTM_ERR_FIRST_ = -1000,
    FTM_ERRNO_MAP(FTM_ERR_ENUM_)
#undef FTM_ERR_ENUM_
    FTM_ERR_LAST_
} ftm_err;

/* Human-readable message for an error code; never NULL. */
FTM_EXTERN const char *ftm_strerror(int err);
/* Symbolic name ("FTM_EINVAL"); never NULL. */
FTM_EXTERN const char *ftm_err_name(int err);

#endif
