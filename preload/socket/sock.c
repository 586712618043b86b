// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* sock.c - one object per enrolled socket, and their pool (sock.h). */
#include "sock.h"

#include <pthread.h>
#include <stdlib.h>

#include "fastlocal.h" /* FL_SLOTS_MAX, FL_SLOT_IDX */
#include "base/init_hooks.h"
#include "rxq.h"

/*
 * Owned by this file. Objects are never freed: a released one goes on
 * fl_sock_free and is given to the next socket. fl_sock_pool_lock guards
 * fl_sock_free and each object's next_free; it is a leaf (its holders take
 * no other lock). fl_sock_all lists every object ever made: pushed at its
 * head under the pool lock (release), read without it (acquire), never
 * shortened. fl_sock_newest (pool lock) is, for each slot index, the object
 * last published for a socket in that slot while it is live: only a hint
 * for fl_sock_find, checked against the identity asked for. A slot given
 * to a new socket while this process still holds the old one points at the
 * new one; the old one keeps its own object all the same.
 * fl_sock_live counts the objects given to a socket and not yet released
 * (atomic: fl_sock_new and the last fl_sock_release; read by fl_sock_any).
 */
static pthread_mutex_t fl_sock_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static int fl_sock_live;
static struct fl_sock *fl_sock_free;
static struct fl_sock *fl_sock_all;
static struct fl_sock *fl_sock_newest[FL_SLOTS_MAX];

/* The calling thread's spare object (fl_sock_reserve): its own, so no
 * lock; made like any other (on fl_sock_all), kept until an enrollment of
 * this thread finds the pool empty. A thread that ends leaves it unused on
 * fl_sock_all, which is harmless (gen FL_SOCK_GONE, no send buffer). */
static __thread struct fl_sock *fl_sock_spare __attribute__((tls_model("initial-exec")));

/* A new object, on the list of all objects, or NULL. */
static struct fl_sock *fl_sock_make(void)
{
	struct fl_sock *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->gen = FL_SOCK_GONE;
	fl_rxq_init(&s->rxq);
	pthread_mutex_lock(&fl_sock_pool_lock);
	s->next_all = fl_sock_all;
	__atomic_store_n(&fl_sock_all, s, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&fl_sock_pool_lock);
	return s;
}

bool fl_sock_reserve(void)
{
	if (!fl_sock_spare)
		fl_sock_spare = fl_sock_make();
	return fl_sock_spare != NULL;
}

struct fl_sock *fl_sock_new(uint32_t slot, uint64_t gen, uint64_t cookie,
			    const struct fl_sock_ops *ops)
{
	struct fl_sock *s;

	pthread_mutex_lock(&fl_sock_pool_lock);
	s = fl_sock_free;
	if (s)
		fl_sock_free = s->next_free;
	pthread_mutex_unlock(&fl_sock_pool_lock);
	if (!s) {
		s = fl_sock_spare;
		fl_sock_spare = NULL;
	}
	if (!s)
		s = fl_sock_make();
	if (!s)
		return NULL;
	/* A reader racing with the reuse (fl_sock_id) retries meanwhile. */
	__atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&s->slot, slot, __ATOMIC_RELAXED);
	s->cookie = cookie;
	s->ops = ops;
	__atomic_store_n(&s->shared, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->rxq_made, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->refs, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&s->gen, gen, __ATOMIC_RELEASE);
	__atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELEASE);
	__atomic_fetch_add(&fl_sock_live, 1, __ATOMIC_RELAXED);
	return s;
}

bool fl_sock_any(void)
{
	return __atomic_load_n(&fl_sock_live, __ATOMIC_RELAXED) > 0;
}

void fl_sock_publish(struct fl_sock *s)
{
	pthread_mutex_lock(&fl_sock_pool_lock);
	fl_sock_newest[FL_SLOT_IDX(s->slot)] = s;
	pthread_mutex_unlock(&fl_sock_pool_lock);
}

/*
 * IMPORTANT: the pool lock held across the look and the new reference is
 * what makes this safe. An object can only be given to another socket
 * after its last release puts it on the free list (under this lock), so
 * the identity checked stays its own until the unlock; one whose last
 * reference is going already has refs at 0, and is not taken.
 */
struct fl_sock *fl_sock_find(uint32_t slot, uint64_t gen, uint64_t cookie)
{
	struct fl_sock *s;
	int refs = 0;

	pthread_mutex_lock(&fl_sock_pool_lock);
	s = fl_sock_newest[FL_SLOT_IDX(slot)];
	if (s && fl_sock_is(s, gen) && s->slot == slot && s->cookie == cookie) {
		refs = __atomic_load_n(&s->refs, __ATOMIC_ACQUIRE);
		while (refs > 0 && !__atomic_compare_exchange_n(&s->refs, &refs, refs + 1, false,
								__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			;
	}
	pthread_mutex_unlock(&fl_sock_pool_lock);
	return refs > 0 ? s : NULL;
}

void fl_sock_hold(struct fl_sock *s)
{
	__atomic_fetch_add(&s->refs, 1, __ATOMIC_ACQ_REL);
}

void fl_sock_release(struct fl_sock *s, int fd)
{
	/* First the buffer's owner flushes through fd (tx.c: a TCP close()
	 * delivers what was written, so must we). */
	if (fd >= 0 && s->ops && s->ops->closing)
		s->ops->closing(s, fd);
	if (__atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	/* Late users see a different socket. */
	__atomic_store_n(&s->gen, FL_SOCK_GONE, __ATOMIC_RELEASE);
	__atomic_fetch_sub(&fl_sock_live, 1, __ATOMIC_RELAXED);
	if (s->ops && s->ops->retire)
		s->ops->retire(s);
	fl_rxq_reset(&s->rxq);
	pthread_mutex_lock(&fl_sock_pool_lock);
	if (fl_sock_newest[FL_SLOT_IDX(s->slot)] == s)
		fl_sock_newest[FL_SLOT_IDX(s->slot)] = NULL;
	s->next_free = fl_sock_free;
	fl_sock_free = s;
	pthread_mutex_unlock(&fl_sock_pool_lock);
}

void fl_sock_for_each(void (*fn)(struct fl_sock *s, void *arg), void *arg)
{
	struct fl_sock *s;

	for (s = __atomic_load_n(&fl_sock_all, __ATOMIC_ACQUIRE); s; s = s->next_all)
		fn(s, arg);
}

/* fork(): the pool lock may be held by a thread that will not exist in
 * the child, so it is taken across the fork; and from now on two
 * processes may hold each socket (its send buffer no longer coalesces on
 * its own initiative, tx.c). */
void fl_sock_fork_prepare(void)
{
	struct fl_sock *s;

	pthread_mutex_lock(&fl_sock_pool_lock);
	for (s = fl_sock_all; s; s = s->next_all)
		__atomic_store_n(&s->shared, 1, __ATOMIC_RELAXED);
}

void fl_sock_fork_release(void)
{
	pthread_mutex_unlock(&fl_sock_pool_lock);
}

/*
 * fork(): each socket's held receive bytes (rxq.h) are guarded by their own
 * lock, which a reader of another thread may hold at that moment (a peek,
 * a recv(MSG_OOB), a read of held bytes); the child, where that thread does
 * not exist, would wait for it forever at its first read of the socket, and
 * might find the held bytes half updated. So every one is taken across the
 * fork, in the forking thread. fl_sock_rxq_forked is the list head they
 * were taken from (written and read only by the forking thread, between
 * the prepare step and the parent's or child's): an object made by another
 * thread after it was read is not locked, so the child gives it a fresh
 * lock; nobody can have used its held bytes yet but that thread, whose
 * read is gone with it.
 * IMPORTANT: taken first of all (init.c): a holder of a queue's lock may
 * take the internal pipe's (splice.c, fl_pipe_put), never the other way.
 */
static struct fl_sock *fl_sock_rxq_forked;

void fl_sock_rxq_fork_prepare(void)
{
	struct fl_sock *s;

	fl_sock_rxq_forked = __atomic_load_n(&fl_sock_all, __ATOMIC_ACQUIRE);
	for (s = fl_sock_rxq_forked; s; s = s->next_all)
		pthread_mutex_lock(&s->rxq.lock);
}

void fl_sock_rxq_fork_parent(void)
{
	struct fl_sock *s;

	for (s = fl_sock_rxq_forked; s; s = s->next_all)
		pthread_mutex_unlock(&s->rxq.lock);
}

void fl_sock_rxq_fork_child(void)
{
	struct fl_sock *s;

	for (s = __atomic_load_n(&fl_sock_all, __ATOMIC_ACQUIRE); s && s != fl_sock_rxq_forked;
	     s = s->next_all)
		pthread_mutex_init(&s->rxq.lock, NULL);
	fl_sock_rxq_fork_parent();
}
