/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * broker_proto.h - the messages between the shim and "fastlocal daemon".
 *
 * A process that cannot open the root-only pins asks the privileged broker
 * instead (docs/security.md). One request per connection on a SOCK_SEQPACKET
 * unix socket: one fixed-size request, with the socket it is about passed as
 * SCM_RIGHTS, and one fixed-size reply (HELLO's carries the caller's slot
 * array as SCM_RIGHTS). IMPORTANT: the broker closes the socket it was
 * passed before it replies, so that the caller's check of who holds its
 * socket (preload/kernel/holders.h) never counts the broker's copy. The broker
 * trusts nothing in a request but the op
 * and the slot reference, and checks both (tools/broker_serve.c). Not a BPF
 * layout, so it lives here, shared by the shim and the CLI.
 */
#ifndef FL_BROKER_PROTO_H
#define FL_BROKER_PROTO_H

#include <string.h>
#include <sys/socket.h>
#include <linux/types.h>

#define FL_BROKER_DEFAULT_SOCKET "/run/fastlocal/broker.sock"
#define FL_BROKER_MAGIC 0x666c6272u /* "flbr" */

enum fl_broker_op {
	FL_BROKER_HELLO = 1,    /* no fd: reply with the caller's slot domain (fd); root: 0 */
	FL_BROKER_ENROLL = 2,   /* fd, slot: enroll fd with that slot of the caller's domain */
	FL_BROKER_UNENROLL = 3, /* fd: take it out of the sockhash (its slot BLIND first) */
	FL_BROKER_MARK_OFF = 4, /* fd: FL_SK_OFF, left on TCP by configuration */
	FL_BROKER_ADOPT = 5,    /* fd: its slot and cookie if it is enrolled (after exec) */
	FL_BROKER_PING = 6,     /* no fd: are you there; domain = how many domains exist */
	FL_BROKER_LISTEN = 7,   /* fd: a listening TCP socket: an accepting end under the shim
				 * may come on its port (struct fl_joined's listening) */
};

/*
 * Flags in ENROLL's op, above its number (FL_BROKER_OP_MASK). MAY_WAIT: the
 * caller is a shim that can stay pending on TCP and ask again, so the
 * broker answers EINPROGRESS instead of inserting where the direct
 * back-end would wait for the peer (preload/enroll/enroll_direct.c): an
 * accepting end whose peer is not in the sockhash, a connecting end whose
 * server's port was never marked and whose peer is not there. WAITED: it
 * was answered so before (the broker counts a wait once, and the end's
 * coming when it is inserted). A broker without them answers EINVAL.
 */
#define FL_BROKER_OP_MASK 0xffu
#define FL_BROKER_MAY_WAIT (1u << 8)
#define FL_BROKER_WAITED (1u << 9)

struct fl_broker_req {
	__u32 magic;       /* FL_BROKER_MAGIC */
	__u32 abi;         /* FL_ABI_VERSION */
	__u32 op;          /* enum fl_broker_op */
	__u32 slot;        /* ENROLL: the slot reference the caller claimed */
};

struct fl_broker_rep {
	__u32 magic;       /* FL_BROKER_MAGIC */
	__s32 err;         /* 0, or a positive errno */
	__u32 domain;      /* HELLO: the caller's domain */
	__u32 nslots;      /* HELLO: its number of slots */
	__u32 slot;        /* ADOPT: the socket's slot reference */
	__u32 server_port; /* ENROLL answered EINPROGRESS: the port a connecting end waits
			    * for a server under the shim on (0: an end waiting for its peer) */
	__u64 cookie;      /* ADOPT: the socket's cookie (the slot's owner tag) */
};


/* Room for one passed fd in a message's control data. */
union fl_broker_cmsg {
	char buf[CMSG_SPACE(sizeof(int))];
	struct cmsghdr align;
};

/* Attaches fd to *mh as SCM_RIGHTS, in cm (which must outlive the send). */
static inline void fl_broker_attach_fd(struct msghdr *mh, union fl_broker_cmsg *cm, int fd)
{
	struct cmsghdr *c;

	memset(cm, 0, sizeof(*cm));
	mh->msg_control = cm->buf;
	mh->msg_controllen = sizeof(cm->buf);
	c = CMSG_FIRSTHDR(mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
}

#endif
