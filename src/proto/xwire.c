/* SPDX-License-Identifier: Apache-2.0 */
/* xwire.c: framing of the daemon <-> executor socketpair (xproto.h); runs in
 * both processes, the daemon and the executor.
 * Process: every side of the wire (client, daemon, executor). */
#include "proto/wire.h"
#include "proto/xproto.h"

#include "common/status.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

int x_send(int sock, const struct x_hdr *h, const void *p, int fd)
{
    struct iovec iov[2] = {{(void *)h, sizeof *h}, {(void *)p, h->len}};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = h->len ? 2 : 1};
    if (fd >= 0)
        gos_wire_put_fd(&m, u.buf, sizeof u.buf, fd);
    size_t left = sizeof *h + h->len;
    while (left > 0) {
        ssize_t n = sendmsg(sock, &m, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return gos_fail(GOS_EIO, "executor channel: %s", strerror(errno));
        }
        left -= (size_t)n;
        m.msg_control = NULL;
        m.msg_controllen = 0;
        while (n > 0 && m.msg_iovlen > 0) {
            if ((size_t)n >= m.msg_iov[0].iov_len) {
                n -= (ssize_t)m.msg_iov[0].iov_len;
                m.msg_iov++;
                m.msg_iovlen--;
            } else {
                m.msg_iov[0].iov_base = (char *)m.msg_iov[0].iov_base + n;
                m.msg_iov[0].iov_len -= (size_t)n;
                n = 0;
            }
        }
    }
    return GOS_OK;
}

static int read_full(int sock, void *p, size_t n, int *fd)
{
    char *b = p;
    while (n > 0) {
        union {
            char buf[CMSG_SPACE(sizeof(int))];
            struct cmsghdr align;
        } u;
        struct iovec iov = {b, n};
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
        if (fd) {
            m.msg_control = u.buf;
            m.msg_controllen = sizeof u.buf;
        }
        ssize_t r = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return gos_fail(GOS_EIO, "executor channel %s", r == 0 ? "closed" : strerror(errno));
        if (fd)
            for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                    int got;
                    memcpy(&got, CMSG_DATA(c), sizeof got);
                    if (*fd >= 0)
                        close(got);
                    else
                        *fd = got;
                }
        b += r;
        n -= (size_t)r;
    }
    return GOS_OK;
}

int x_recv(int sock, struct x_hdr *h, void **buf, size_t *cap, int *fd)
{
    if (fd)
        *fd = -1;
    int rc = read_full(sock, h, sizeof *h, fd);
    if (rc)
        return rc;
    if (h->len > X_MAX_PAYLOAD)
        return gos_fail(GOS_EIO, "executor channel: payload of %u bytes", (unsigned)h->len);
    if (h->len + 1 > *cap) {
        void *nb = realloc(*buf, h->len + 1);
        if (!nb)
            return gos_fail(GOS_ENOMEM, "out of host memory");
        *buf = nb;
        *cap = h->len + 1;
    }
    if (h->len && (rc = read_full(sock, *buf, h->len, NULL)))
        return rc;
    ((char *)*buf)[h->len] = 0;
    return GOS_OK;
}
