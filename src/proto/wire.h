/* SPDX-License-Identifier: Apache-2.0 */
/* wire.h: moving protocol messages (proto.h) over a Unix stream socket, with an
 * optional file descriptor passed as SCM_RIGHTS. Used by both the daemon and the
 * client library. Every received message is validated with gos_proto_check()
 * before the caller sees it.
 * Process: every side of the wire (client, daemon, executor). */
#ifndef GOS_WIRE_H
#define GOS_WIRE_H

#include "proto/proto.h"

#include <stddef.h>
#include <stdint.h>

/* Sends header + a[0..alen) + b[0..blen) as one message; pass_fd >= 0 rides along.
 * Safe against SIGPIPE. GOS_EIO with a reason when the peer is gone. */
int gos_wire_send(int fd, uint16_t type, uint32_t seq, const void *a, size_t alen, const void *b,
                  size_t blen, int pass_fd);

/* Sends a REPLY to request (req_type, seq): status, the error text when status
 * != 0 (taken from `text`), else body[0..blen). nowait: never block (the daemon
 * uses it: a peer that leaves its replies unread gets GOS_EBUSY, then dropped). */
int gos_wire_reply(int fd, int nowait, uint32_t seq, uint16_t req_type, int status, const char *text,
                   const void *body, size_t blen);

/* Receives one complete, validated message into *h and payload (capacity
 * GOS_PROTO_MAX_PAYLOAD). A passed descriptor lands in *fd_out (or is closed when
 * fd_out is NULL; *fd_out = -1 when none). timeout_ms < 0 waits forever.
 * GOS_EIO: peer closed or read failed (message "connection closed" at a message
 * boundary); GOS_ETIMEDOUT; GOS_EPROTO: malformed (the stream is then unusable). */
int gos_wire_recv(int fd, struct gos_msg_hdr *h, void *payload, int *fd_out, int timeout_ms);

/* The same, polling the socket for up to spin_us (yielding the CPU between
 * polls) before sleeping until a message arrives: a reader that expects an answer
 * within microseconds then avoids the wake-up latency of a sleeping thread. */
int gos_wire_recv_spin(int fd, struct gos_msg_hdr *h, void *payload, int *fd_out, int timeout_ms,
                       unsigned spin_us);

/* The same without waiting for a message to begin: 1 (and nothing read) when no
 * byte of one is there yet; once one has begun, its rest is awaited as above. */
int gos_wire_try_recv(int fd, struct gos_msg_hdr *h, void *payload, int *fd_out, int timeout_ms);

/* Sets mh's control buffer (ctl: CMSG_SPACE(sizeof(int)) bytes, cmsghdr-aligned)
 * to pass descriptor fd with SCM_RIGHTS. */
struct msghdr;
void gos_wire_put_fd(struct msghdr *mh, void *ctl, size_t ctl_len, int fd);

/* A bare descriptor over a Unix socket (one byte carrying it, SCM_RIGHTS):
 * send returns 0 or -1; receive returns the descriptor or -1. */
int gos_wire_send_fd(int sock, int fd);
int gos_wire_recv_fd(int sock);

#endif
