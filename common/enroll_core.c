// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* enroll_core.c - the enrollment transaction and the drain check. */
#include "enroll_core.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "bpf_sys.h"
#include "common/clock.h"
#include "key.h"
#include "same_host.h"

void fl_ec_owner(struct fl_slot_ref *ref, uint32_t pid, const char *comm)
{
	ref->pid = pid;
	ref->enrolled_ns = (uint64_t)fl_clock_ns(CLOCK_REALTIME);
	strncpy(ref->comm, comm, sizeof(ref->comm) - 1);
	ref->comm[sizeof(ref->comm) - 1] = 0;
}

int fl_ec_keys(const struct fl_ec_env *env, struct fl_sk *st, uint64_t netns,
	       const struct sockaddr_storage *local, const struct sockaddr_storage *remote,
	       bool peer_local)
{
	int err = fl_em_build_keys(st, netns, local, remote);

	if (err)
		return err;
	/*
	 * IMPORTANT: a nonce-keyed connection (not loopback) pairs only with
	 * a peer that exists on this host: its mirror key is in
	 * fl_established (same_host.h). The shim knows when the peer's
	 * address is one of its own namespace; the broker sits in another
	 * namespace than most of its callers and cannot tell, so it always
	 * asks. Every end is recorded there, so a same-namespace peer passes
	 * as well. A loopback key is scoped by the namespace itself.
	 */
	if (!peer_local && !fl_key_is_loopback(&st->key) &&
	    !fl_peer_on_this_host(env->established, &st->key))
		return -EREMOTE;
	return 0;
}

int fl_ec_insert(const struct fl_ec_env *env, int fd, struct fl_sk *st, uint32_t slot,
		 uint64_t cookie, struct fl_slot_ref *ref, int fault)
{
	int err;

	st->slot = slot;
	st->cookie = cookie;
	ref->slot = slot;
	ref->owner = cookie;
	ref->sk_flags = st->flags & FL_SK_ACTIVE;
	err = fl_em_insert(&env->em, fd, st, ref, fault);
	if (err || !env->joined)
		return err;
	if (!(st->flags & FL_SK_ACTIVE))
		fl_ec_note_server(env->joined, st->key.local_port);
	/* After the insert (struct fl_joined says why). */
	__atomic_fetch_add(&env->joined->c[fl_key_joined_idx(&st->peer)], 1, __ATOMIC_SEQ_CST);
	return 0;
}

void fl_ec_note_server(struct fl_joined *j, uint16_t port)
{
	/* Read first: a store to a line every connection reads would move it
	 * between CPUs for nothing once the port is marked. */
	if (j && !__atomic_load_n(&j->listening[port], __ATOMIC_RELAXED))
		__atomic_store_n(&j->listening[port], 1, __ATOMIC_SEQ_CST);
}

bool fl_ec_server_seen(const struct fl_ec_env *env, const struct fl_sk *st)
{
	return !env->joined ||
	       __atomic_load_n(&env->joined->listening[st->key.remote_port], __ATOMIC_SEQ_CST);
}

bool fl_ec_peer_absent(const struct fl_ec_env *env, const struct fl_sk *st, uint32_t *seen)
{
	uint64_t cookie;

	if (!env->joined)
		return false;
	/* Before the lookup (struct fl_joined says why). */
	*seen = __atomic_load_n(&env->joined->c[fl_key_joined_idx(&st->key)], __ATOMIC_SEQ_CST);
	return fl_bpf_map_lookup(env->em.sockhash, &st->peer, &cookie) == -ENOENT;
}

bool fl_ec_must_wait(const struct fl_ec_env *env, const struct fl_sk *st, uint32_t *seen)
{
	bool active = st->flags & FL_SK_ACTIVE;

	if (!active)
		fl_ec_note_server(env->joined, st->key.local_port);
	return (!active || !fl_ec_server_seen(env, st)) && fl_ec_peer_absent(env, st, seen);
}

int fl_ec_drained(const struct fl_ec_env *env, int fd, const struct fl_sk *st,
		  const struct fl_slot *me)
{
	const struct fl_slot *peer = NULL;
	struct fl_slot_ref ref;
	uint64_t sent = 0, consumed;
	int queued = 0;

	if (!fl_bpf_map_lookup(env->em.slot_index, &st->peer, &ref)) {
		/* The peer may be another user's (another domain): read-only. */
		peer = env->slot_any(env->ctx, ref.slot);
		if (peer && __atomic_load_n(&peer->owner, __ATOMIC_ACQUIRE) != ref.owner)
			peer = NULL;
	}
	if (peer)
		sent = __atomic_load_n(&peer->tcp_sent, __ATOMIC_SEQ_CST) +
		       __atomic_load_n(&peer->redirected, __ATOMIC_SEQ_CST);
	consumed = __atomic_load_n(&me->consumed, __ATOMIC_SEQ_CST) & FL_CONSUMED_MASK;
	/* The kernel's count must agree. */
	if ((peer && sent != consumed) || env->fionread(fd, &queued) || queued)
		return -EBUSY;
	return 0;
}
