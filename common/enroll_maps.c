// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* enroll_maps.c - the map writes of an enrollment and their undoing. */
#include "enroll_maps.h"

#include <errno.h>
#include <linux/bpf.h>
#include <netinet/in.h>

#include "bpf_sys.h"
#include "key.h"
#include "common/raw_calls.h"

int fl_is_tcp_socket(int fd)
{
	int type = 0, proto = 0, dom = 0;
	socklen_t l = sizeof(int);

	/* The type first: a UDP or non-socket fd costs one system call. */
	if (fl_raw_getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) || type != SOCK_STREAM)
		return 0;
	l = sizeof(int);
	if (fl_raw_getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l) ||
	    (dom != AF_INET && dom != AF_INET6))
		return 0;
	l = sizeof(int);
	return !fl_raw_getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &l) && proto == IPPROTO_TCP;
}

int fl_em_read(int sk_map, int fd, struct fl_sk *st)
{
	if (fl_bpf_map_lookup(sk_map, &fd, st) || !(st->flags & FL_SK_ISN))
		return -ENODATA;
	return 0;
}

int fl_em_build_keys(struct fl_sk *st, uint64_t netns, const struct sockaddr_storage *local,
		     const struct sockaddr_storage *remote)
{
	int err;

	if (fl_key_build(&st->key, 0, local, remote))
		return -EAFNOSUPPORT;
	/* The netns cookie for loopback, else the SYN nonce (key.h). */
	err = fl_key_set_scope(&st->key, netns, st->nonce);
	if (err)
		return err;
	st->key.snd_isn = st->snd_isn;
	st->key.rcv_isn = st->rcv_isn;
	fl_key_mirror(&st->peer, &st->key);
	return 0;
}

int fl_em_insert(const struct fl_em_maps *m, int fd, struct fl_sk *st,
		 const struct fl_slot_ref *ref, int fault)
{
	__u64 value = (__u64)fd;
	int err;

	st->flags = (st->flags | FL_SK_ENROLLED) & ~FL_SK_OFF;
	/* Identity first, then the index the peer finds us by, then the
	 * sockhash: nothing redirects to us before our counters exist. */
	err = fl_bpf_map_update(m->sk, &fd, st, BPF_EXIST);
	if (!err)
		err = fl_bpf_map_update(m->slot_index, &st->key, ref, BPF_ANY);
	if (!err)
		err = fault;
	/* BPF_NOEXIST: replacing a live entry would detach its socket and drop
	 * what is queued in it (docs/kernel.md#loss). */
	if (!err)
		err = fl_bpf_map_update(m->sockhash, &st->key, &value, BPF_NOEXIST);
	if (err) {
		/* Not in the sockhash, so nothing was redirected to or from it:
		 * undo our own records (the socket keeps no live entry). */
		st->flags &= ~FL_SK_ENROLLED;
		fl_bpf_map_update(m->sk, &fd, st, BPF_EXIST);
		fl_bpf_map_delete(m->slot_index, &st->key);
	}
	return err;
}

int fl_em_remove(const struct fl_em_maps *m, int fd, struct fl_sk *st)
{
	int err = fl_bpf_map_delete(m->sockhash, &st->key);

	if (err && err != -ENOENT)
		return err;
	st->flags &= ~FL_SK_ENROLLED;
	fl_bpf_map_update(m->sk, &fd, st, BPF_EXIST);
	fl_bpf_map_delete(m->slot_index, &st->key);
	return 0;
}

void fl_em_mark_off(int sk_map, int fd)
{
	struct fl_sk st;

	if (fl_bpf_map_lookup(sk_map, &fd, &st) || !(st.flags & FL_SK_ISN) ||
	    (st.flags & (FL_SK_ENROLLED | FL_SK_OFF)))
		return;
	st.flags |= FL_SK_OFF;
	fl_bpf_map_update(sk_map, &fd, &st, BPF_EXIST);
}

enum fl_ustat fl_em_insert_counter(int err)
{
	switch (err) {
	case -EOPNOTSUPP: return FL_USTAT_FB_EOPNOTSUPP;
	case -EBUSY: return FL_USTAT_FB_EBUSY;
	case -ENOMEM: return FL_USTAT_FB_ENOMEM;
	case -EEXIST: return FL_USTAT_FB_EEXIST;
	default: return FL_USTAT_FB_OTHER;
	}
}
