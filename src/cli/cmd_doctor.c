/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_doctor.c: `gpuos doctor [--user NAME|UID] [--socket PATH] [--dev DIR]`:
 * whether a user reaches the GPU past the daemon (opens /dev/nvidia* itself) and
 * whether it reaches the daemon's socket, with what to change (issue 43.1).
 *
 * Two roles, two groups (docs/readme-ops.md): the daemon's group owns the device
 * nodes (root:gpuos 0660), the tenants' group the socket (gpuos:gpuos-users 0660).
 * Access is worked out from the user's uid and groups and each file's owner, group
 * and mode, never by switching to the user: root checks anyone. POSIX ACLs are not
 * evaluated; a file that has one is named. */
#include "cli/cli.h"
#include "common/status.h"

#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: gpuos doctor [--user NAME|UID] [--socket PATH] [--dev DIR]\n"
    "Tells whether a user can open the GPU's device nodes (/dev/nvidia*: the GPU past\n"
    "the daemon, its shares and its isolation) and whether it can reach the daemon's\n"
    "socket, one line per finding with what to change. The secure setup: the nodes\n"
    "root:gpuos 0660 (the daemon's group alone), the socket gpuos:gpuos-users 0660 (the\n"
    "tenants' group). Exit status 1 when the user can open a device node and is neither\n"
    "root nor the daemon's own user (the socket's owner), else 0.\n"
    "  --user NAME|UID  the user to check (default: the caller); by uid and groups, without\n"
    "                   switching to it\n" CLI_HELP_SOCKET
    "  --dev DIR        where the device nodes are (default /dev)\n";

#define DOC_MAX_GROUPS 256
#define DOC_MAX_NODES 96

struct who {
    char name[64];
    uid_t uid;
    gid_t gids[DOC_MAX_GROUPS];
    int n_gids;
};

/* A group's (is_group) or user's name, else its number. */
static void id_name(int is_group, unsigned id, char *out, size_t len)
{
    struct group gr, *g = NULL;
    struct passwd pw, *u = NULL;
    char buf[4096];
    const char *name = NULL;
    if (is_group && !getgrgid_r((gid_t)id, &gr, buf, sizeof buf, &g) && g)
        name = g->gr_name;
    if (!is_group && !getpwuid_r((uid_t)id, &pw, buf, sizeof buf, &u) && u)
        name = u->pw_name;
    if (name)
        snprintf(out, len, "%s", name);
    else
        snprintf(out, len, "%u", id);
}
#define group_name(g, out, len) id_name(1, (unsigned)(g), out, len)
#define user_name(u, out, len) id_name(0, (unsigned)(u), out, len)

/* The user to check: a name or uid (its groups from the group database), else
 * the caller (its process's own groups). */
static int resolve_user(const char *arg, struct who *w)
{
    struct passwd pw, *r = NULL;
    char buf[8192];
    memset(w, 0, sizeof *w);
    if (!arg) {
        w->uid = getuid();
        user_name(w->uid, w->name, sizeof w->name);
        w->gids[w->n_gids++] = getgid();
        gid_t g[DOC_MAX_GROUPS - 1];
        int n = getgroups(DOC_MAX_GROUPS - 1, g);
        for (int i = 0; i < n; i++)
            w->gids[w->n_gids++] = g[i];
        return GOS_OK;
    }
    char *end;
    unsigned long id = strtoul(arg, &end, 10);
    if (*arg >= '0' && *arg <= '9' && !*end)
        getpwuid_r((uid_t)id, &pw, buf, sizeof buf, &r);
    else
        getpwnam_r(arg, &pw, buf, sizeof buf, &r);
    if (!r)
        return gos_fail(GOS_EINVAL, "--user %s: no such user", arg);
    w->uid = r->pw_uid;
    snprintf(w->name, sizeof w->name, "%s", r->pw_name);
    int n = DOC_MAX_GROUPS;
    if (getgrouplist(r->pw_name, r->pw_gid, w->gids, &n) < 0)
        return gos_fail(GOS_EINVAL, "--user %s: in more than %d groups", arg, DOC_MAX_GROUPS);
    w->n_gids = n;
    return GOS_OK;
}

static int in_groups(const struct who *w, gid_t g)
{
    for (int i = 0; i < w->n_gids; i++)
        if (w->gids[i] == g)
            return 1;
    return 0;
}

/* Whether w may do `want` (a mask of 4 read, 2 write, 1 execute) on st, and by
 * which class: 'r' root, 'u' owner, 'g' group, 'o' others, 0 not at all. */
static int may(const struct who *w, const struct stat *st, unsigned want)
{
    if (w->uid == 0)
        return 'r';
    if (st->st_uid == w->uid)
        return ((st->st_mode >> 6) & want) == want ? 'u' : 0;
    if (in_groups(w, st->st_gid))
        return ((st->st_mode >> 3) & want) == want ? 'g' : 0;
    return (st->st_mode & want) == want ? 'o' : 0;
}

static void describe(const struct stat *st, char *out, size_t len)
{
    char u[64], g[64];
    user_name(st->st_uid, u, sizeof u);
    group_name(st->st_gid, g, sizeof g);
    snprintf(out, len, "%s:%s %04o", u, g, (unsigned)(st->st_mode & 07777));
}

static int has_acl(const char *path)
{
    return getxattr(path, "system.posix_acl_access", NULL, 0) > 0;
}

/* The NVIDIA device nodes under dir (nvidia*, and those in nvidia-caps/):
 * character devices, sorted. */
static int list_nodes(const char *dir, char (*paths)[512], int max)
{
    int n = 0;
    const char *subs[] = {"", "/nvidia-caps"};
    for (size_t s = 0; s < sizeof subs / sizeof subs[0]; s++) {
        char d[400];
        snprintf(d, sizeof d, "%s%s", dir, subs[s]);
        DIR *dp = opendir(d);
        if (!dp)
            continue;
        for (struct dirent *e; (e = readdir(dp)) && n < max;) {
            struct stat st;
            char p[sizeof paths[0]];
            if (snprintf(p, sizeof p, "%s/%.*s", d, 100, e->d_name) >= (int)sizeof p)
                continue;
            if (strncmp(e->d_name, "nvidia", 6) || stat(p, &st) || !S_ISCHR(st.st_mode))
                continue;
            snprintf(paths[n++], sizeof paths[0], "%s", p);
        }
        closedir(dp);
    }
    qsort(paths, (size_t)n, sizeof paths[0], (int (*)(const void *, const void *))strcmp);
    return n;
}

/* The gid the device nodes should have: group gpuos, else the daemon's (the
 * socket owner's) primary group; -1 unknown. */
static long daemon_gid(const struct stat *sock)
{
    struct group gr, *r = NULL;
    char buf[4096];
    if (!getgrnam_r("gpuos", &gr, buf, sizeof buf, &r) && r)
        return (long)r->gr_gid;
    struct passwd pw, *p = NULL;
    if (sock && !getpwuid_r(sock->st_uid, &pw, buf, sizeof buf, &p) && p)
        return (long)p->pw_gid;
    return -1;
}

/* One line per set of nodes alike (class and owner:group mode); returns 1 when
 * the user reaches the GPU past the daemon. */
static int check_nodes(const struct who *w, const char *dir, const struct stat *sock)
{
    static char paths[DOC_MAX_NODES][512];
    int n = list_nodes(dir, paths, DOC_MAX_NODES), bad = 0, done[DOC_MAX_NODES] = {0};
    if (!n) {
        printf("warn  %s: no NVIDIA device nodes (no driver loaded here?)\n", dir);
        return 0;
    }
    int daemon_user = sock && sock->st_uid == w->uid && w->uid != 0;
    for (int i = 0; i < n; i++) {
        if (done[i])
            continue;
        struct stat st, st2;
        char desc[160], desc2[160], list[2048] = "";
        stat(paths[i], &st);
        describe(&st, desc, sizeof desc);
        int cls = may(w, &st, 6), acl = 0;
        size_t pos = 0;
        for (int j = i; j < n; j++) { /* every node alike, on this line */
            if (done[j] || stat(paths[j], &st2))
                continue;
            describe(&st2, desc2, sizeof desc2);
            if (strcmp(desc, desc2) || may(w, &st2, 6) != cls)
                continue;
            done[j] = 1;
            acl |= has_acl(paths[j]);
            if (pos < sizeof list)
                pos += (size_t)snprintf(list + pos, sizeof list - pos, "%s%s", pos ? ", " : "", paths[j]);
        }
        if (acl)
            printf("warn  %s: %s has a POSIX ACL, not evaluated here (getfacl)\n", list, w->name);
        char g[64];
        group_name(st.st_gid, g, sizeof g);
        long dg = daemon_gid(sock);
        if (!cls)
            printf("ok    %s: closed to %s (%s)\n", list, w->name, desc);
        else if (cls == 'r')
            printf("ok    %s: root opens them (%s; root is trusted: --user NAME checks a tenant)\n", list, desc);
        else if (daemon_user)
            printf("ok    %s: %s, the daemon's user, opens them (%s)\n", list, w->name, desc);
        else if (cls == 'o')
            bad = 1, printf("FAIL  %s: open to everyone (%s): %s reaches the GPU past the daemon; make them "
                            "root:gpuos 0660: the udev rule 70-gpuos-nvidia.rules and, in "
                            "/etc/modprobe.d/gpuos-nvidia.conf, options nvidia NVreg_DeviceFileUID=0 "
                            "NVreg_DeviceFileGID=%ld NVreg_DeviceFileMode=0660\n",
                            list, desc, w->name, dg);
        else if (cls == 'g')
            bad = 1, printf("FAIL  %s: %s is in group %s, which opens them (%s): it reaches the GPU past the "
                            "daemon; gpasswd -d %s %s (tenants belong in the socket's group only)\n",
                            list, w->name, g, desc, w->name, g);
        else
            bad = 1, printf("FAIL  %s: %s owns them (%s): it reaches the GPU past the daemon; chown root them\n",
                            list, w->name, desc);
    }
    return bad;
}

/* Whether the user can connect: search on every directory above the socket,
 * write on the socket itself. Returns 1 when it can. */
static int check_socket(const struct who *w, const char *path, const struct stat *st)
{
    char desc[160], dir[4096];
    if (!st) {
        printf("warn  %s: no socket there (gpuos serve is not running, or serves another: --socket PATH)\n", path);
        return 0;
    }
    describe(st, desc, sizeof desc);
    snprintf(dir, sizeof dir, "%s", path);
    for (char *s = strrchr(dir, '/'); s; s = strrchr(dir, '/')) { /* each directory above, up to / */
        *s = 0;
        struct stat d;
        const char *dp = dir[0] ? dir : "/";
        char ddesc[160];
        if (stat(dp, &d) || may(w, &d, 1))
            continue;
        describe(&d, ddesc, sizeof ddesc);
        printf("warn  %s: %s cannot reach it: the directory %s is closed to it (%s)\n", path, w->name, dp, ddesc);
        return 0;
    }
    if (!may(w, st, 2)) {
        char g[64];
        group_name(st->st_gid, g, sizeof g);
        printf("warn  %s: %s cannot connect (%s): usermod -aG %s %s, then log in again\n", path, w->name, desc, g,
               w->name);
        return 0;
    }
    printf("ok    %s: %s may connect (%s)\n", path, w->name, desc);
    return 1;
}

int cmd_doctor(int argc, char **argv)
{
    const char *user = NULL, *sock = NULL, *dev = "/dev";
    enum { O_USER = CLI_FIRST_OWN, O_DEV };
    static const struct option opts[] = {CLI_OPT_HELP, {"user", required_argument, NULL, O_USER}, CLI_OPT_SOCKET,
                                         {"dev", required_argument, NULL, O_DEV}, CLI_OPT_END};
    cli_args a = CLI_ARGS("doctor", argc, argv, opts);
    for (int o; (o = cli_next(&a)) != -1;)
        switch (o) {
        case 'h': fputs(usage_text, stdout); return 0;
        case O_USER: user = optarg; break;
        case CLI_SOCKET: sock = optarg; break;
        case O_DEV: dev = optarg; break;
        case CLI_STOP: return a.rc;
        }
    if (optind < argc)
        return cli_usage("doctor", "unexpected argument \"%s\"", argv[optind]);
    struct stat dst;
    if (stat(dev, &dst) || !S_ISDIR(dst.st_mode)) {
        gos_fail(GOS_EINVAL, "--dev %s: not a directory", dev);
        return cli_fail();
    }
    struct who w;
    if (resolve_user(user, &w))
        return cli_fail();
    const char *path = cli_socket(sock);
    struct stat sst;
    int have_sock = !stat(path, &sst) && S_ISSOCK(sst.st_mode);
    printf("gpuos doctor: user %s (uid %u; groups", w.name, (unsigned)w.uid);
    for (int i = 0; i < w.n_gids; i++) {
        char g[64];
        group_name(w.gids[i], g, sizeof g);
        printf("%s%s", i ? ", " : " ", g);
    }
    printf(")\n");
    int past = check_nodes(&w, dev, have_sock ? &sst : NULL);
    int through = check_socket(&w, path, have_sock ? &sst : NULL);
    if (w.uid == 0)
        printf("root may open everything and is trusted; --user NAME checks a tenant\n");
    else if (have_sock && sst.st_uid == w.uid)
        printf("%s is the daemon's user: it alone should open the GPU\n", w.name);
    else if (past)
        printf("%s reaches the GPU past gpuos: fix the FAIL lines\n", w.name);
    else
        printf("%s %s\n", w.name, through ? "uses the GPU through gpuos only" : "cannot use the GPU (neither past gpuos nor through it)");
    return past ? 1 : 0;
}
