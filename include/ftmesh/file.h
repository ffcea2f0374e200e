/* Files written whole or not at all: the command line's output files and
 * the trainer's checkpoints are written to a temporary file beside their
 * path and renamed over it once complete, so a failed or interrupted write
 * leaves the old file as it was. */
#ifndef FTMESH_FILE_H
#define FTMESH_FILE_H

#include "ftmesh/export.h"

/* Creates a new temporary file beside path, "PATH.tmp-XXXXXX" (its file
 * name cut so that the whole still fits NAME_MAX), open for writing.
 * Its mode is the mode of the file at path where one exists (a replaced
 * file keeps its permissions), else 0666 less the umask, as a plain
 * creat() would give. Returns the descriptor and its name in *tmp (free
 * it), or -1 with errno set and *tmp NULL. */
FTM_EXTERN int ftm_file_tmp_open(const char *path, char **tmp);

/* fsync()s the directory holding path ("." when path has no '/'), so that
 * a rename into it is on disk; a file system that cannot sync a directory
 * (EINVAL) counts as done. 0, or -1 with errno set. */
FTM_EXTERN int ftm_file_sync_dir(const char *path);

#endif
