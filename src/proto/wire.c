/* SPDX-License-Identifier: Apache-2.0 */
/* wire.c: socket transport of protocol messages (wire.h).
 * Process: every side of the wire (client, daemon, executor). */
#include "proto/wire.h"

#include "common/clock.h"
#include "common/status.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

void gos_wire_put_fd(struct msghdr *mh, void *ctl, size_t ctl_len, int fd)
{
    memset(ctl, 0, ctl_len);
    mh->msg_control = ctl;
    mh->msg_controllen = ctl_len;
    struct cmsghdr *c = CMSG_FIRSTHDR(mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
}

int gos_wire_send_fd(int sock, int fd)
{
    char c = 'f';
    struct iovec iov = {&c, 1};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    gos_wire_put_fd(&m, ctl.buf, sizeof ctl.buf, fd);
    return sendmsg(sock, &m, 0) == 1 ? 0 : -1;
}

int gos_wire_recv_fd(int sock)
{
    char c;
    struct iovec iov = {&c, 1};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
    if (recvmsg(sock, &m, 0) != 1)
        return -1;
    struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
    int fd = -1;
    if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
        memcpy(&fd, CMSG_DATA(cm), sizeof fd);
    return fd;
}

static int wire_send(int fd, int nowait, uint16_t type, uint32_t seq, const void *a, size_t alen,
                     const void *b, size_t blen, int pass_fd)
{
    struct gos_msg_hdr h;
    if (alen + blen > GOS_PROTO_MAX_PAYLOAD)
        return gos_fail(GOS_EINVAL, "message of %zu bytes too large", alen + blen);
    gos_proto_hdr(&h, type, seq, (uint32_t)(alen + blen));
    struct iovec iov[3] = {{&h, sizeof h}, {(void *)a, alen}, {(void *)b, blen}};
    int niov = 3, first = 1;
    size_t left = sizeof h + alen + blen;
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct iovec *v = iov;
    while (left > 0) {
        struct msghdr mh = {0};
        mh.msg_iov = v;
        mh.msg_iovlen = niov;
        if (first && pass_fd >= 0)
            gos_wire_put_fd(&mh, ctl.buf, sizeof ctl.buf, pass_fd);
        ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL | (nowait ? MSG_DONTWAIT : 0));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return gos_fail(nowait ? GOS_EBUSY : GOS_ETIMEDOUT, "send %s: the peer does not read its messages%s",
                                gos_proto_name(type), nowait ? "" : " within the timeout");
            return gos_fail(GOS_EIO, "send %s: %s", gos_proto_name(type), strerror(errno));
        }
        first = 0;
        left -= (size_t)n;
        while (niov > 0 && (size_t)n >= v->iov_len) {
            n -= (ssize_t)v->iov_len;
            v++;
            niov--;
        }
        if (niov > 0) {
            v->iov_base = (char *)v->iov_base + n;
            v->iov_len -= (size_t)n;
        }
    }
    return GOS_OK;
}

int gos_wire_send(int fd, uint16_t type, uint32_t seq, const void *a, size_t alen, const void *b,
                  size_t blen, int pass_fd)
{
    return wire_send(fd, 0, type, seq, a, alen, b, blen, pass_fd);
}

int gos_wire_reply(int fd, int nowait, uint32_t seq, uint16_t req_type, int status, const char *text,
                   const void *body, size_t blen)
{
    char buf[sizeof(struct gos_rep_hdr) + GOS_MSG_TEXT_MAX];
    struct gos_rep_hdr r = {.status = status, .req_type = req_type, .text_len = 0};
    size_t n = sizeof r;
    if (status != GOS_OK) {
        if (!text || !*text)
            text = gos_strerror(status);
        size_t tl = strnlen(text, GOS_MSG_TEXT_MAX - 1);
        memcpy(buf + sizeof r, text, tl);
        buf[sizeof r + tl] = 0;
        r.text_len = (uint16_t)(tl + 1);
        n += tl + 1;
        body = NULL;
        blen = 0;
    }
    memcpy(buf, &r, sizeof r);
    return wire_send(fd, nowait, GOS_MSG_REPLY, seq, buf, n, body, blen, -1);
}

static uint64_t mono_ns(void) { return gos_now_ns(); }

/* Reads exactly len bytes; collects a passed descriptor. 1: clean EOF before the
 * first byte (only when at_boundary), 2: nothing there yet (at_boundary == 2),
 * 0: done, <0 error.
 * Every read is tried without blocking first (data that is already there costs one
 * system call, not a poll and a read); while nothing has arrived, the caller may
 * poll for up to spin_ns before sleeping in the kernel: a sleeping reader pays a
 * wake-up (an inter-processor interrupt and a context switch, several
 * microseconds, tens in a VM) on every message, a polling one does not. */
static int read_full(int fd, void *p, size_t len, int *got_fd, int timeout_ms, int at_boundary, uint64_t spin_ns)
{
    size_t done = 0;
    uint64_t spin_end = 0;
    int block = 0; /* timeout_ms < 0 and the spin is over: a blocking recvmsg */
    while (done < len) {
        union {
            char buf[CMSG_SPACE(4 * sizeof(int))];
            struct cmsghdr align;
        } ctl;
        struct iovec iov = {(char *)p + done, len - done};
        struct msghdr mh = {0};
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        mh.msg_control = ctl.buf;
        mh.msg_controllen = sizeof ctl.buf;
        ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | (block ? 0 : MSG_DONTWAIT));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                return gos_fail(GOS_EIO, "receive: %s", strerror(errno));
            if (at_boundary == 2 && done == 0)
                return 2; /* gos_wire_try_recv: nothing there */
            if (spin_ns) {
                uint64_t t = mono_ns();
                if (!spin_end)
                    spin_end = t + spin_ns;
                if (t < spin_end) {
                    sched_yield();
                    continue;
                }
                spin_ns = 0;
            }
            if (timeout_ms < 0) {
                block = 1;
                continue;
            }
            struct pollfd pf = {.fd = fd, .events = POLLIN};
            int pr = poll(&pf, 1, timeout_ms);
            if (pr < 0 && errno != EINTR)
                return gos_fail(GOS_EIO, "poll: %s", strerror(errno));
            if (pr == 0)
                return gos_fail(GOS_ETIMEDOUT, "no answer from the peer within %d ms", timeout_ms);
            continue;
        }
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                continue;
            int nfd = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            for (int i = 0; i < nfd; i++) {
                int x;
                memcpy(&x, CMSG_DATA(c) + i * sizeof(int), sizeof x);
                if (*got_fd < 0)
                    *got_fd = x;
                else
                    close(x); /* more than one descriptor: keep the first only */
            }
        }
        if (n == 0) {
            if (done == 0 && at_boundary)
                return 1;
            return gos_fail(GOS_EIO, "connection closed in the middle of a message");
        }
        done += (size_t)n;
        spin_ns = 0; /* the rest of a message is on its way: no need to poll for it */
    }
    return 0;
}

static int recv_msg(int fd, struct gos_msg_hdr *h, void *payload, int *fd_out, int timeout_ms, unsigned spin_us,
                    int try_only);

int gos_wire_recv(int fd, struct gos_msg_hdr *h, void *payload, int *fd_out, int timeout_ms)
{
    return recv_msg(fd, h, payload, fd_out, timeout_ms, 0, 0);
}

int gos_wire_recv_spin(int fd, struct gos_msg_hdr *h, void *payload, int *fd_out, int timeout_ms,
                       unsigned spin_us)
{
    return recv_msg(fd, h, payload, fd_out, timeout_ms, spin_us, 0);
}

int gos_wire_try_recv(int fd, struct gos_msg_hdr *h, void *payload, int *fd_out, int timeout_ms)
{
    return recv_msg(fd, h, payload, fd_out, timeout_ms, 0, 1);
}

static int recv_msg(int fd, struct gos_msg_hdr *h, void *payload, int *fd_out, int timeout_ms, unsigned spin_us,
                    int try_only)
{
    int got = -1, rc;
    if (fd_out)
        *fd_out = -1;
    rc = read_full(fd, h, sizeof *h, &got, timeout_ms, try_only ? 2 : 1, (uint64_t)spin_us * 1000);
    if (rc == 2)
        return 1;
    if (rc == 1)
        rc = gos_fail(GOS_EIO, "connection closed");
    if (rc)
        goto fail;
    if ((rc = gos_proto_check_hdr(h)))
        goto fail;
    if (h->len && (rc = read_full(fd, payload, h->len, &got, timeout_ms, 0, 0)))
        goto fail;
    if ((rc = gos_proto_check(h, payload)))
        goto fail;
    if (fd_out)
        *fd_out = got;
    else if (got >= 0)
        close(got);
    return GOS_OK;
fail:
    if (got >= 0)
        close(got);
    return rc;
}
