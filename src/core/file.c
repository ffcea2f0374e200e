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

/* A 64-bit mixer (the finaliser of Steele, Lea and Flood's SplitMix64,
 * OOPSLA 2014): each try's name unlike the last. */
static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Fills the pattern's six X's at x with letters of v (a different name per v). */
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
    struct timespec ts = { 0, 0 };
    (void)clock_gettime(CLOCK_REALTIME, &ts); /* a seed only: 0 on failure is as good */
    /* open(O_EXCL) rather than mkstemp: mkstemp's 0600 ignores the umask.
     * O_EXCL makes a name taken meanwhile fail, not race; the names of a
     * process and its threads differ by pid and address */
    uint64_t v = (uint64_t)ts.tv_sec ^ (uint64_t)ts.tv_nsec << 20 ^ (uint64_t)getpid() << 40 ^
                 (uintptr_t)x;
    int fd = -1;
    for (int tries = 0; tries < 100 && fd < 0; tries++) {
        fill(x, mix(v + (uint64_t)tries));
        fd = open(*tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    /* the permission bits only: a replaced setuid file's new bytes are no
     * program it vouched for */
    if (fd >= 0 && keep && fchmod(fd, sb.st_mode & 0777)) {
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
