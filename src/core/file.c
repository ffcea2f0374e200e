/* Temporary files beside the file they will replace (file.h). */
#define _GNU_SOURCE /* O_DIRECTORY, strndup */
#include "ftmesh/file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FILE_SUFFIX ".tmp-XXXXXX"
#define FILE_SUFFIX_LEN (sizeof FILE_SUFFIX - 1)

/* "PATH.tmp-XXXXXX", the file name cut to fit NAME_MAX; NULL on no memory. */
static char *tmp_pattern(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t dir = slash ? (size_t)(slash - path) + 1 : 0, n = strlen(path);
    if (n - dir > NAME_MAX - FILE_SUFFIX_LEN)
        n = dir + NAME_MAX - FILE_SUFFIX_LEN;
    char *t = malloc(n + FILE_SUFFIX_LEN + 1);
    if (t) {
        memcpy(t, path, n);
        memcpy(t + n, FILE_SUFFIX, FILE_SUFFIX_LEN + 1);
    }
    return t;
}

/* Fills the pattern's X's with letters from x (a different name per x). */
static void fill(char *x, uint64_t v)
{
    static const char abc[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    for (size_t i = 0; i < 6; i++, v /= 62)
        x[i] = abc[v % 62];
}

int ftm_file_tmp_open(const char *path, char **tmp)
{
    *tmp = tmp_pattern(path);
    if (!*tmp) {
        errno = ENOMEM;
        return -1;
    }
    struct stat sb;
    int keep = stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
    char *x = *tmp + strlen(*tmp) - 6;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    /* open(O_EXCL) rather than mkstemp: mkstemp's 0600 ignores the umask */
    uint64_t v = (uint64_t)ts.tv_nsec * 2654435761u ^ (uint64_t)getpid() << 20 ^ (uintptr_t)x;
    int fd = -1;
    for (int tries = 0; tries < 100 && fd < 0; tries++) {
        fill(x, v + (uint64_t)tries * 7919u);
        fd = open(*tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd >= 0 && keep && fchmod(fd, sb.st_mode & 07777)) {
        int e = errno;
        close(fd);
        unlink(*tmp);
        errno = e;
        fd = -1;
    }
    if (fd < 0) {
        int e = errno;
        free(*tmp);
        *tmp = NULL;
        errno = e;
    }
    return fd;
}

int ftm_file_sync_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir) {
        errno = ENOMEM;
        return -1;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;
    free(dir);
    if (fd < 0)
        return -1;
    if (fsync(fd) && errno != EINVAL)
        rc = -1;
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}
