// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * enroll_direct.c - the back-end of a shim that opened the pins itself
 * (root): it reads the socket's record and writes the maps through the
 * enrollment core (enroll_core.h), as "fastlocal daemon" does for others.
 */
#include "enroll_backend.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#include "common/bpf_sys.h"
#include "common/key.h"
#include "base/fault.h"
#include "kernel/holders.h"
#include "base/libc.h"
#include "base/log.h"
#include "base/own_fds.h"
#include "kernel/slot.h"

static const struct fl_slot *fl_direct_slot_any(void *ctx, uint32_t ref)
{
	(void)ctx;
	return fl_slot_any(ref);
}

static int fl_direct_fionread(int fd, int *n)
{
	return libc_ioctl(fd, FIONREAD, n);
}

/* The core's view of the maps, as they are now (own_fds may move them). */
static void fl_direct_env(const struct fl_maps *m, struct fl_ec_env *env)
{
	env->em.sk = fl_own_fd_get(&m->sk);
	env->em.slot_index = fl_own_fd_get(&m->slot_index);
	env->em.sockhash = fl_own_fd_get(&m->sockhash);
	env->established = fl_own_fd_get(&m->established);
	env->joined = m->joined;
	env->slot_any = fl_direct_slot_any;
	env->fionread = fl_direct_fionread;
	env->ctx = NULL;
}

/* Who enrolls: this process, under its (thread's) name. */
static void fl_direct_owner(struct fl_slot_ref *ref)
{
	char comm[sizeof(ref->comm)] = "";

	if (prctl(PR_GET_NAME, comm, 0, 0, 0))
		comm[0] = 0;
	comm[sizeof(comm) - 1] = 0;
	fl_ec_owner(ref, (uint32_t)getpid(), comm);
}

static int fl_direct_enroll(const struct fl_maps *m, int fd, struct fl_fd *e,
			    const struct fl_enroll_req *r)
{
	struct fl_slot_ref ref = { 0 };
	struct fl_ec_env env;
	struct fl_sk st;
	uint64_t cookie = 0, gen = 0;
	uint32_t seen;
	socklen_t olen;
	int slot, err;

	fl_direct_env(m, &env);
	/* The ISNs sockops recorded when the connection was established. */
	if (fl_em_read(env.em.sk, fd, &st))
		return fl_enroll_fallback(fd, -ENODATA, FL_USTAT_FB_NO_ISN,
					  "no ISN record (established before fastlocal was loaded)");
	if (st.flags & FL_SK_ENROLLED)
		return fl_enroll_adopt_slot(fd, &st);
	if (!r->busy && fl_holders_others(fd) != 0)
		return fl_enroll_put_off(fd, e);

	olen = sizeof(cookie);
	if (libc_getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &olen) || !cookie)
		return fl_enroll_fallback(fd, -errno, FL_USTAT_FB_OTHER, "SO_COOKIE unsupported");
	err = fl_ec_keys(&env, &st, r->netns, &r->local, &r->remote, r->addr_local);
	if (err == -ENODATA)
		return fl_enroll_fallback(fd, err, FL_USTAT_FB_NO_NONCE,
					  "no SYN nonce (SYN without room or option, syncookies, or a "
					  "listener older than the load)");
	if (err == -ENOPROTOOPT)
		return fl_enroll_fallback(fd, err, FL_USTAT_FB_OTHER, "SO_NETNS_COOKIE unsupported");
	if (err == -EREMOTE)
		return fl_enroll_fallback(fd, -EREMOTE, FL_USTAT_FB_NOT_LOCAL,
					  "the peer is not on this host");
	if (err)
		return -ENOTSUP;
	/* Neither end joins alone (fl_ec_must_wait). */
	if (r->peer_first && e && fl_ec_must_wait(&env, &st, &seen))
		return fl_enroll_wait_peer(fd, e, fl_key_joined_idx(&st.key), seen,
					   st.flags & FL_SK_ACTIVE ? st.key.remote_port : 0);

	slot = fl_slot_alloc(cookie, fl_enroll_budget(fd, e), st.snd_isn, r->already_read, &gen);
	if (slot < 0)
		return fl_enroll_fallback(fd, -ENOSPC, FL_USTAT_FB_NO_SLOT, "every slot is taken");
	fl_direct_owner(&ref);
	err = fl_ec_insert(&env, fd, &st, (uint32_t)slot, cookie, &ref,
			   fl_fault_insert() /* tests only (fault.h) */);
	if (err) {
		char why[96];

		fl_slot_free((uint32_t)slot, cookie);
		snprintf(why, sizeof(why), "the kernel refused the insert: %s", strerror(-err));
		return fl_enroll_fallback(fd, err, fl_em_insert_counter(err), why);
	}
	return fl_enroll_inserted(m, fd, (uint32_t)slot, gen, cookie, r->busy, &st, "");
}

static int fl_direct_adopt(const struct fl_maps *m, int fd)
{
	struct fl_sk st;

	if (fl_em_read(fl_own_fd_get(&m->sk), fd, &st) || !(st.flags & FL_SK_ENROLLED))
		return -ENODATA;
	return fl_enroll_adopt_slot(fd, &st);
}

static int fl_direct_record(const struct fl_maps *m, int fd, const struct fl_fd *e,
			    struct fl_sk *st)
{
	(void)e;
	if (fl_em_read(fl_own_fd_get(&m->sk), fd, st) || !(st->flags & FL_SK_ENROLLED))
		return -ENOENT;
	return 0;
}

static int fl_direct_unenroll(const struct fl_maps *m, int fd, const struct fl_fd *e,
			      struct fl_slot *me, struct fl_sk *st, const char *why)
{
	struct fl_ec_env env;
	bool unpaired;
	int err;

	fl_direct_env(m, &env);
	if (fl_ec_drained(&env, fd, st, me))
		return -EBUSY;
	/* Read before the slot may be freed and taken by another socket. */
	unpaired = !__atomic_load_n(&me->peer_slot, __ATOMIC_RELAXED);
	if (fl_holders_others(fd) != 0) {
		/*
		 * IMPORTANT: another process holds the socket (a fork, an exec
		 * of an image without the shim) and its shim may still name this
		 * slot. Only the sockhash entry goes; the slot and the records
		 * stay until the socket dies (sockops frees them at TCP_CLOSE),
		 * and the slot says the socket left, so that no path of that
		 * process treats it as tcp_bpf's any more (FL_SLOT_LEFT).
		 */
		err = fl_bpf_map_delete(env.em.sockhash, &st->key);
		if (err && err != -ENOENT)
			return err;
		__atomic_store_n(&me->dir_reason, (uint16_t)FL_STAT_PASS_UNSUPPORTED_BYTES,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&me->dir, (uint16_t)FL_DIR_TCP, __ATOMIC_RELAXED);
		__atomic_fetch_or(&me->flags, FL_SLOT_LEFT, __ATOMIC_SEQ_CST);
		fl_unenroll_forget(e, st->slot);
	} else {
		fl_unenroll_forget(e, st->slot);
		err = fl_em_remove(&env.em, fd, st);
		if (err)
			return err;
		fl_slot_free(st->slot, st->cookie);
	}
	fl_ustat_add(FL_USTAT_UNENROLLED, 1);
	if (unpaired)
		fl_ustat_add(FL_USTAT_UNPAIRED_LEFT, 1);
	fl_debug("fd %d: %s; left the fast path, plain TCP from now on", fd, why);
	return 0;
}

static void fl_direct_mark_off(const struct fl_maps *m, int fd)
{
	fl_em_mark_off(fl_own_fd_get(&m->sk), fd);
}

const struct fl_enroll_backend fl_enroll_direct = {
	.name = "direct",
	.enroll = fl_direct_enroll,
	.adopt = fl_direct_adopt,
	.record = fl_direct_record,
	.unenroll = fl_direct_unenroll,
	.mark_off = fl_direct_mark_off,
	.counts_shared = true,
};
