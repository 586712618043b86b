// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * enroll_brokered.c - the back-end of a shim that cannot open the pins (not
 * root): "fastlocal daemon" reads the socket's record and writes the maps
 * through the same enrollment core (tools/broker_serve.c); this process
 * keeps only its slot (docs/security.md).
 */
#include "enroll_backend.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "kernel/broker.h"
#include "kernel/holders.h"
#include "base/libc.h"
#include "base/log.h"
#include "kernel/slot.h"

/* The broker reads the socket's record (only for its owner). */
static int fl_brokered_adopt(const struct fl_maps *m, int fd)
{
	struct fl_broker_rep rep;
	struct fl_sk st;
	int err = fl_broker_call(FL_BROKER_ADOPT, fd, 0, &rep);

	(void)m;
	if (err)
		return err == -EPERM || err == -ENOENT ? err : -ENODATA;
	memset(&st, 0, sizeof(st));
	st.slot = rep.slot;
	st.cookie = rep.cookie;
	return fl_enroll_adopt_slot(fd, &st);
}

/*
 * Claims a slot in our own domain, then asks the broker, which checks that
 * the socket is ours and the slot is ours and holds its cookie, reads the
 * ISN record, builds the key and writes the maps exactly as the direct
 * back-end does (enroll_core.c). The slot's write_seq baseline comes from
 * the ISN, which only the broker can read: it sets it.
 */
static int fl_brokered_enroll(const struct fl_maps *m, int fd, struct fl_fd *e,
			      const struct fl_enroll_req *r)
{
	uint64_t cookie = 0, gen = 0;
	socklen_t olen = sizeof(cookie);
	struct fl_broker_rep rep;
	uint32_t budget, op;
	char why[96];
	int slot, err;

	/* Held by anyone else now: a socket some process enrolled before it
	 * was shared is adopted, else enrollment is put off. */
	if (!r->busy && fl_holders_others(fd) != 0)
		return fl_brokered_adopt(m, fd) ? fl_enroll_put_off(fd, e) : 0;
	budget = fl_enroll_budget(fd, e);
	if (libc_getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &olen) || !cookie)
		return fl_enroll_fallback(fd, -errno, FL_USTAT_FB_OTHER, "SO_COOKIE unsupported");
	slot = fl_slot_alloc(cookie, budget, 0, r->already_read, &gen);
	if (slot < 0)
		return fl_enroll_fallback(fd, -ENOSPC, FL_USTAT_FB_NO_SLOT, "every slot is taken");
	/* An end that can stay pending lets the broker tell it to wait for
	 * its peer, as the direct back-end would (broker_proto.h). */
	op = FL_BROKER_ENROLL;
	if (r->peer_first && e)
		op |= FL_BROKER_MAY_WAIT |
		      (__atomic_load_n(&e->flags, __ATOMIC_RELAXED) & FL_FDF_PEER_WAIT ?
		       FL_BROKER_WAITED : 0);
	err = fl_broker_call(op, fd, (uint32_t)slot, &rep);
	if (err == -EINVAL && op != FL_BROKER_ENROLL) /* a broker older than waits */
		err = fl_broker_call(FL_BROKER_ENROLL, fd, (uint32_t)slot, &rep);
	if (err == -EINPROGRESS) {
		fl_slot_free((uint32_t)slot, cookie);
		return fl_enroll_wait_broker(fd, e, (uint16_t)rep.server_port);
	}
	if (err == -EALREADY) {
		/* Enrolled before (inherited): use the slot it has. */
		fl_slot_free((uint32_t)slot, cookie);
		return fl_brokered_adopt(m, fd);
	}
	if (err) {
		fl_slot_free((uint32_t)slot, cookie);
		if (err == -ENODATA)
			return fl_enroll_fallback(fd, err, FL_USTAT_FB_NO_ISN,
						  "no ISN record or no SYN nonce (established before "
						  "fastlocal was loaded, or a SYN without the option)");
		if (err == -EREMOTE)
			return fl_enroll_fallback(fd, err, FL_USTAT_FB_NOT_LOCAL,
						  "the peer is not on this host (the broker found no "
						  "established end with the mirror key)");
		snprintf(why, sizeof(why), "the broker refused: %s", strerror(-err));
		return fl_enroll_fallback(fd, err, fl_em_insert_counter(err), why);
	}
	return fl_enroll_inserted(m, fd, (uint32_t)slot, gen, cookie, r->busy, NULL, " by the broker");
}

/* Our record is the broker's to read: our own fd table has it. */
static int fl_brokered_record(const struct fl_maps *m, int fd, const struct fl_fd *e,
			      struct fl_sk *st)
{
	struct fl_sock_id id;
	struct fl_slot *me = fl_fd_sock(e, &id) ? fl_slot_at(id.slot) : NULL;

	(void)m;
	(void)fd;
	if (!me)
		return -ENOENT; /* forgotten meanwhile, or a slot we cannot see */
	memset(st, 0, sizeof(*st));
	st->slot = id.slot;
	st->cookie = me ? __atomic_load_n(&me->owner, __ATOMIC_ACQUIRE) : 0;
	return 0;
}

/*
 * The peer's slot may be in another user's domain, out of our reach, so the
 * broker runs the drain check (enroll_core.h) and removes the entry, in one
 * request. Our buffered bytes follow over TCP (SEND_TCP is set):
 * order-safe either way.
 */
static int fl_brokered_unenroll(const struct fl_maps *m, int fd, const struct fl_fd *e,
				struct fl_slot *me, struct fl_sk *st, const char *why)
{
	int err = fl_broker_call(FL_BROKER_UNENROLL, fd, 0, NULL);

	(void)m;
	(void)me;
	if (err)
		return err;
	fl_unenroll_forget(e, st->slot);
	fl_slot_free(st->slot, st->cookie);
	fl_ustat_add(FL_USTAT_UNENROLLED, 1);
	fl_debug("fd %d: %s; left the fast path (broker), plain TCP from now on", fd, why);
	return 0;
}

static void fl_brokered_mark_off(const struct fl_maps *m, int fd)
{
	(void)m;
	fl_broker_call(FL_BROKER_MARK_OFF, fd, 0, NULL);
}

const struct fl_enroll_backend fl_enroll_brokered = {
	.name = "brokered",
	.enroll = fl_brokered_enroll,
	.adopt = fl_brokered_adopt,
	.record = fl_brokered_record,
	.unenroll = fl_brokered_unenroll,
	.mark_off = fl_brokered_mark_off,
	.counts_shared = false,
};
