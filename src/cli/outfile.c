/* Output files written whole or not at all, and the signals that stop a
 * run.
 *
 * Every file a command writes goes to a temporary file beside it (the
 * same directory, so rename(2) replaces the old file in one step) and is
 * renamed over the asked path only once it is complete. A refused run,
 * a failed one and one stopped by SIGINT, SIGTERM or SIGHUP leave the old
 * file as it was (or none): the handler removes the temporary files
 * (unlink is async-signal-safe) before the signal ends the process.
 * Commands that stop gracefully (train) hand the handler a flag instead.
 */
#include "cli.h"
#include "ftmesh/error.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The temporary files open now: the handler reads them, so a slot's path
 * is set before it is marked used and unmarked before it is freed. */
#define OUT_SLOTS 8
static char *out_tmp[OUT_SLOTS];
static volatile sig_atomic_t out_used[OUT_SLOTS];
static volatile sig_atomic_t *volatile out_flag; /* graceful: set to the signal */
static int out_installed;

static const int out_sigs[] = { SIGINT, SIGTERM, SIGHUP };

static void on_signal(int sig)
{
    volatile sig_atomic_t *flag = out_flag;
    if (flag) {
        *flag = sig;
        return;
    }
    for (int i = 0; i < OUT_SLOTS; i++)
        if (out_used[i])
            unlink(out_tmp[i]);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Installs the handler for every signal of out_sigs. A signal ignored by
 * whoever started us (nohup, a background job of a script) stays ignored
 * unless the command stops gracefully (train has always caught SIGINT). */
static void install(int graceful)
{
    static int ignored[3], known;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; i++) {
        if (!known && sigaction(out_sigs[i], NULL, &old) == 0)
            ignored[i] = old.sa_handler == SIG_IGN;
        sa.sa_handler = ignored[i] && !graceful ? SIG_IGN : on_signal;
        sigaction(out_sigs[i], &sa, NULL);
    }
    known = 1;
}

void cli_signals_graceful(volatile sig_atomic_t *flag)
{
    out_flag = flag;
    install(flag != NULL);
    out_installed = 1;
}

int cli_signal_exit(int sig) { return 128 + sig; }

/* "PATH.tmp-XXXXXX" beside path. */
static char *tmp_name(const char *path)
{
    size_t n = strlen(path);
    char *t = malloc(n + 12);
    if (t) {
        memcpy(t, path, n);
        memcpy(t + n, ".tmp-XXXXXX", 12);
    }
    return t;
}

int cli_out_check(const char *cmd, const char *opt, const char *path)
{
    struct stat st;
    if (!path[0])
        return cli_usage_error(cmd, "%s: the file name is empty", opt);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return cli_usage_error(cmd, "%s %s: is a directory: give a file name", opt, path);
    char *t = tmp_name(path);
    if (!t)
        return cli_error(cmd, "%s %s: %s", opt, path, ftm_strerror(FTM_ENOMEM));
    int fd = mkstemp(t), e = errno;
    if (fd >= 0) {
        close(fd);
        unlink(t);
    }
    free(t);
    if (fd < 0)
        return cli_usage_error(cmd, "%s %s: cannot create a file there: %s", opt, path,
                               strerror(e));
    return 0;
}

int cli_out_open(const char *cmd, cli_out *o, const char *opt, const char *path)
{
    memset(o, 0, sizeof *o);
    o->opt = opt;
    o->path = path;
    o->slot = -1;
    int rc = cli_out_check(cmd, opt, path);
    if (rc)
        return rc;
    if (!out_installed) {
        install(0);
        out_installed = 1;
    }
    for (int i = 0; i < OUT_SLOTS && o->slot < 0; i++)
        if (!out_used[i])
            o->slot = i;
    if (o->slot < 0 || !(o->tmp = tmp_name(path)))
        return cli_error(cmd, "%s %s: %s", opt, path, ftm_strerror(FTM_ENOMEM));
    int fd = mkstemp(o->tmp);
    if (fd < 0 || fchmod(fd, 0644) || !(o->f = fdopen(fd, "w"))) {
        int e = errno;
        if (fd >= 0) {
            close(fd);
            unlink(o->tmp);
        }
        free(o->tmp);
        o->tmp = NULL;
        return cli_usage_error(cmd, "%s %s: cannot create a file there: %s", opt, path,
                               strerror(e));
    }
    out_tmp[o->slot] = o->tmp;
    out_used[o->slot] = 1;
    return 0;
}

static void release(cli_out *o)
{
    if (o->slot >= 0 && out_used[o->slot] && out_tmp[o->slot] == o->tmp)
        out_used[o->slot] = 0;
    free(o->tmp);
    o->tmp = NULL;
    o->f = NULL;
}

void cli_out_discard(cli_out *o)
{
    if (!o->tmp)
        return;
    if (o->f)
        fclose(o->f);
    unlink(o->tmp);
    release(o);
}

int cli_out_commit(const char *cmd, cli_out *o, int err)
{
    if (!o->tmp)
        return 0;
    const char *what = NULL;
    if (!err && (fflush(o->f) || ferror(o->f)))
        err = FTM_EIO;
    if (!err && fsync(fileno(o->f)))
        what = "cannot write it";
    if (fclose(o->f) && !err && !what)
        err = FTM_EIO;
    o->f = NULL;
    if (!err && !what && rename(o->tmp, o->path))
        what = "cannot rename the temporary file over it";
    int e = errno;
    if (err || what) {
        unlink(o->tmp);
        release(o);
        if (what)
            return cli_error(cmd, "%s %s: %s: %s", o->opt, o->path, what, strerror(e));
        return cli_error(cmd, "%s %s: %s", o->opt, o->path, ftm_strerror(err));
    }
    release(o);
    return 0;
}
