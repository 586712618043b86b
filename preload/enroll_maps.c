// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* enroll_maps.c - the map writes of an enrollment and their undoing. */
#include "enroll_maps.h"

#include <errno.h>
#include <linux/bpf.h>
#include <netinet/in.h>

#include "bpf_sys.h"
#include "key.h"

int fl_is_tcp_socket(int fd)
{
	int type = 0, proto = 0, dom = 0;
	socklen_t l = sizeof(int);

	/* The type first: a UDP or non-socket fd costs one system call. */
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) || type != SOCK_STREAM)
		return 0;
	l = sizeof(int);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l) || (dom != AF_INET && dom != AF_INET6))
		return 0;
	l = sizeof(int);
	return !getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &l) && proto == IPPROTO_TCP;
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

int fl_em_announce(const struct fl_em_maps *m, int fd, struct fl_sk *st,
		   const struct fl_slot_ref *ref)
{
	int err;

	st->flags = (st->flags | FL_SK_ENROLLED) & ~(FL_SK_OFF | FL_SK_JOINED);
	/* Identity first, then the index the peer finds us by: nothing reads
	 * our counters before they exist. */
	err = fl_bpf_map_update(m->sk, &fd, st, BPF_EXIST);
	if (!err)
		err = fl_bpf_map_update(m->slot_index, &st->key, ref, BPF_ANY);
	if (err) {
		st->flags &= ~FL_SK_ENROLLED;
		fl_bpf_map_update(m->sk, &fd, st, BPF_EXIST);
	}
	return err;
}

int fl_em_peer_announced(const struct fl_em_maps *m, const struct fl_sk *st,
			 struct fl_slot_ref *peer)
{
	struct fl_slot_ref ref;

	if (fl_bpf_map_lookup(m->slot_index, &st->peer, &ref) || !ref.owner)
		return 0;
	if (peer)
		*peer = ref;
	return 1;
}

int fl_em_join(const struct fl_em_maps *m, int fd, struct fl_sk *st, int fault)
{
	__u64 value = (__u64)fd;
	int err = fault;

	/* BPF_NOEXIST: replacing a live entry would detach its socket and drop
	 * what is queued in it (trap 2). */
	if (!err)
		err = fl_bpf_map_update(m->sockhash, &st->key, &value, BPF_NOEXIST);
	if (err)
		return err;
	/* Only "fastlocal conns" and adoption after exec read JOINED. */
	st->flags |= FL_SK_JOINED;
	fl_bpf_map_update(m->sk, &fd, st, BPF_EXIST);
	return 0;
}

int fl_em_joined_already(const struct fl_em_maps *m, const struct fl_sk *st, uint64_t cookie)
{
	__u64 v = 0;

	/* A sockhash lookup from user space returns the socket's cookie. */
	return !fl_bpf_map_lookup(m->sockhash, &st->key, &v) && v == cookie;
}

void fl_em_withdraw(const struct fl_em_maps *m, int fd, struct fl_sk *st)
{
	struct fl_slot_ref ref;

	st->flags &= ~(FL_SK_ENROLLED | FL_SK_JOINED);
	fl_bpf_map_update(m->sk, &fd, st, BPF_EXIST);
	if (!fl_bpf_map_lookup(m->slot_index, &st->key, &ref) && ref.owner == st->cookie)
		fl_bpf_map_delete(m->slot_index, &st->key);
}

int fl_em_remove(const struct fl_em_maps *m, int fd, struct fl_sk *st)
{
	int err = fl_bpf_map_delete(m->sockhash, &st->key);

	if (err && err != -ENOENT)
		return err;
	st->flags &= ~(FL_SK_ENROLLED | FL_SK_JOINED);
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
