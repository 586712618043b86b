// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* maps.c - this process's handles on the pinned maps. */
#include "maps.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

#include "common/bpf_sys.h"
#include "common/enroll_core.h"
#include "broker.h"
#include "base/config.h"
#include "base/init_hooks.h"
#include "base/libc.h"
#include "base/log.h"
#include "base/own_fds.h"

/*
 * Owned by this file. fl_maps_state is filled under fl_maps_lock and
 * published by the release store of fl_maps_ready; readers take the acquire
 * load and never lock. fl_maps_retry_at is only touched under the lock.
 */
static struct fl_maps fl_maps_state = { .sockhash = -1, .sk = -1, .slot_index = -1,
					 .established = -1 };
static int fl_maps_ready;
static pthread_mutex_t fl_maps_lock = PTHREAD_MUTEX_INITIALIZER;
static time_t fl_maps_retry_at;
/* Once flag of the "acceleration is impossible" warning (fl_log_warn_once,
 * atomic exchange); inherited by a fork child, which is then silent too. */
static int fl_maps_warned;

/* fastlocal run asked for acceleration and there is none: say so, once per
 * process, even with logging off (a silent no-op would look like success).
 * pin_err is how opening the sockhash pin failed (-errno, or its fd when it
 * opened and another pin did not). IMPORTANT: the cause named must be the
 * real one: a user who may not see root's pins (EACCES: /sys/fs/bpf is
 * 0700) has fastlocal loaded as far as anyone can tell, and what it lacks
 * is the broker, not a "fastlocal load". */
static void fl_maps_warn_missing(const char *dir, int pin_err)
{
	const char *broker = fl_config()->broker[0] ? fl_config()->broker : "(none)";

	if (!fl_config()->run)
		return;
	if (pin_err == -EACCES || pin_err == -EPERM)
		fl_log_warn_once(&fl_maps_warned, "acceleration is impossible: uid %d may not open "
				 "the pins in %s (%s) and the broker %s does not answer (run 'sudo "
				 "fastlocal daemon', or 'sudo systemctl enable --now fastlocal'); "
				 "connections stay on plain TCP", (int)getuid(), dir,
				 strerror(-pin_err), broker);
	else if (pin_err == -ENOENT && geteuid() != 0)
		/* Not root and no pins here: nothing is loaded, or this is a
		 * container without the host's bpffs; either way the broker is
		 * what a process that is not root goes through. */
		fl_log_warn_once(&fl_maps_warned, "acceleration is impossible: nothing is loaded in "
				 "%s and the broker %s does not answer (run 'sudo fastlocal load' and "
				 "'sudo fastlocal daemon'); connections stay on plain TCP", dir, broker);
	else if (pin_err == -ENOENT)
		fl_log_warn_once(&fl_maps_warned, "acceleration is impossible: nothing is loaded in %s "
				 "(run 'sudo fastlocal load'); connections stay on plain TCP", dir);
	else if (pin_err >= 0)
		fl_log_warn_once(&fl_maps_warned, "acceleration is impossible: the pins in %s are "
				 "incomplete (run 'sudo fastlocal load --replace'); connections stay "
				 "on plain TCP", dir);
	else
		fl_log_warn_once(&fl_maps_warned, "acceleration is impossible: the pins in %s cannot "
				 "be opened by uid %d (%s) and the broker %s does not answer; "
				 "connections stay on plain TCP", dir, (int)getuid(),
				 strerror(-pin_err), broker);
}

static void *fl_map_mmap(const char *dir, const char *name, size_t len)
{
	char path[320];
	void *p;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = fl_bpf_obj_get(path);
	if (fd < 0)
		return NULL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	libc_close(fd); /* the mapping holds the map */
	return p == MAP_FAILED ? NULL : p;
}

/* Opens a pinned map into *fdp, as one of the shim's own fds. */
static void fl_map_get(const char *dir, const char *name, int *fdp)
{
	char path[320];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	*fdp = fl_bpf_obj_get(path);
	fl_own_fd_take(fdp);
}

/*
 * The pins are root's (0600) and this process is not, or they are not
 * visible here at all: "fastlocal daemon" enrolls for it, and gives it its own user's slot array to mmap
 * (docs/security.md). The shared counters are not writable by a non-root
 * process, so its counters go to a private page (the broker counts its
 * enrollments in the shared ones). True when the broker answered.
 */
static bool fl_maps_open_brokered(struct fl_maps *m, int pin_err)
{
	void *page;
	int err = fl_broker_hello(&m->slots, &m->nslots, &m->domain);

	if (err) {
		/* No pins at all (ENOENT) and no broker: the caller's "not
		 * loaded" line says it all; one line per retry, not two. */
		if (pin_err != -ENOENT)
			fl_debug("the pins are not readable by uid %d and the broker %s did not answer: %s",
				 (int)getuid(), fl_config()->broker[0] ? fl_config()->broker : "(none)",
				 strerror(-err));
		return false;
	}
	page = mmap(NULL, sizeof(struct fl_ustats), PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED) {
		munmap(m->slots, (size_t)m->nslots * sizeof(struct fl_slot));
		m->slots = NULL;
		return false;
	}
	m->ustats = page;
	m->brokered = true;
	fl_debug("not root: enrolling through the broker %s (slot domain %u, %u slots)",
		 fl_config()->broker, m->domain, m->nslots);
	return true;
}

static void fl_maps_open_locked(void)
{
	const char *dir = fl_config()->pin_dir;
	struct fl_maps *m = &fl_maps_state;

	/* The fd fields are registered with own_fds in place: they may move. */
	fl_map_get(dir, FL_PIN_MAP_SOCKHASH, &m->sockhash);
	/* Not root (EACCES, EPERM), or no pins here at all (ENOENT: a container
	 * without the host's bpffs): the broker, if one answers. */
	if ((m->sockhash == -EACCES || m->sockhash == -EPERM || m->sockhash == -ENOENT) &&
	    fl_maps_open_brokered(m, m->sockhash)) {
		fl_own_fd_drop(&m->sockhash);
		__atomic_store_n(&fl_maps_ready, 1, __ATOMIC_RELEASE);
		return;
	}
	fl_map_get(dir, FL_PIN_MAP_SK, &m->sk);
	fl_map_get(dir, FL_PIN_MAP_SLOT_IDX, &m->slot_index);
	/* Optional: without it only peers in this namespace are enrolled. */
	fl_map_get(dir, FL_PIN_MAP_ESTABLISHED, &m->established);
	m->slots = fl_map_mmap(dir, FL_PIN_MAP_SLOTS, sizeof(struct fl_slot) * FL_SLOTS_MAX);
	m->nslots = FL_SLOTS_MAX;
	m->domain = 0;
	m->ustats = fl_map_mmap(dir, FL_PIN_MAP_USTATS, sizeof(struct fl_ustats));
	m->joined = fl_map_mmap(dir, FL_PIN_MAP_JOINED, sizeof(struct fl_joined));
	if (m->sockhash < 0 || m->sk < 0 || m->slot_index < 0 || !m->slots || !m->ustats ||
	    !m->joined) {
		fl_debug("fastlocal is not loaded in %s (or the pins are not readable): "
			 "connections stay on TCP", dir);
		fl_maps_warn_missing(dir, m->sockhash);
		fl_own_fd_drop(&m->sockhash);
		fl_own_fd_drop(&m->sk);
		fl_own_fd_drop(&m->slot_index);
		fl_own_fd_drop(&m->established);
		if (m->slots)
			munmap(m->slots, sizeof(struct fl_slot) * FL_SLOTS_MAX);
		if (m->ustats)
			munmap(m->ustats, sizeof(struct fl_ustats));
		if (m->joined)
			munmap(m->joined, sizeof(struct fl_joined));
		m->slots = NULL;
		m->ustats = NULL;
		m->joined = NULL;
		fl_maps_retry_at = time(NULL) + 1;
		return;
	}
	__atomic_store_n(&fl_maps_ready, 1, __ATOMIC_RELEASE);
}

const struct fl_maps *fl_maps_if_open(void)
{
	return __atomic_load_n(&fl_maps_ready, __ATOMIC_ACQUIRE) ? &fl_maps_state : NULL;
}

const struct fl_maps *fl_maps(void)
{
	const struct fl_maps *m = fl_maps_if_open();

	if (m)
		return m;
	pthread_mutex_lock(&fl_maps_lock);
	if (!fl_maps_ready && time(NULL) >= fl_maps_retry_at)
		fl_maps_open_locked();
	pthread_mutex_unlock(&fl_maps_lock);
	return fl_maps_if_open();
}

/*
 * Owned by this file: other domains' slot arrays, mapped read-only on first
 * need by a root shim, published with a CAS and never unmapped (so a
 * pointer stays valid). Only the rare unenroll path reads them.
 */
static const struct fl_slot *fl_other_domains[FL_DOMAINS_MAX];

static const struct fl_slot *fl_domain_map(uint32_t dom)
{
	const struct fl_slot *p = __atomic_load_n(&fl_other_domains[dom], __ATOMIC_ACQUIRE);
	const struct fl_slot *expect = NULL;
	char path[320];
	uint32_t id;
	void *q;
	int outer, fd;

	if (p)
		return p;
	snprintf(path, sizeof(path), "%s/%s", fl_config()->pin_dir, FL_PIN_MAP_DOMAINS);
	outer = fl_bpf_obj_get(path);
	if (outer < 0)
		return NULL;
	fd = fl_bpf_map_lookup(outer, &dom, &id) ? -1 : fl_bpf_map_get_fd_by_id(id);
	libc_close(outer);
	if (fd < 0)
		return NULL;
	q = mmap(NULL, (size_t)FL_DOMAIN_SLOTS * sizeof(struct fl_slot), PROT_READ, MAP_SHARED, fd, 0);
	libc_close(fd);
	if (q == MAP_FAILED)
		return NULL;
	if (!__atomic_compare_exchange_n(&fl_other_domains[dom], &expect, q, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		munmap(q, (size_t)FL_DOMAIN_SLOTS * sizeof(struct fl_slot));
		return expect;
	}
	return q;
}

const struct fl_slot *fl_slot_any(uint32_t ref)
{
	const struct fl_maps *m = fl_maps_if_open();
	uint32_t dom = FL_SLOT_DOM(ref), idx = FL_SLOT_IDX(ref);
	const struct fl_slot *arr;

	if (!m)
		return NULL;
	if (dom == m->domain)
		return idx < m->nslots ? &m->slots[idx] : NULL;
	if (m->brokered || dom >= FL_DOMAINS_MAX || idx >= FL_DOMAIN_SLOTS)
		return NULL;
	arr = fl_domain_map(dom);
	return arr ? &arr[idx] : NULL;
}

void fl_maps_mark_listener(int fd, uint16_t port)
{
	const struct fl_maps *m = fl_maps_if_open();
	struct fl_joined *j = NULL;

	if (m && !m->brokered) {
		fl_ec_note_server(m->joined, port);
		return;
	}
	if (!m)
		j = fl_map_mmap(fl_config()->pin_dir, FL_PIN_MAP_JOINED, sizeof(*j));
	if (j) {
		fl_ec_note_server(j, port);
		munmap(j, sizeof(*j));
		return;
	}
	/* Not root (or no pins in sight): the broker marks it, if there is
	 * one (its answer does not matter: a port left unmarked only makes
	 * clients wait until an accepting end here is seen). */
	if (fl_config()->broker[0])
		(void)fl_broker_call(FL_BROKER_LISTEN, fd, 0, NULL);
}

void fl_ustat_add(enum fl_ustat idx, uint64_t v)
{
	const struct fl_maps *m = fl_maps_if_open();

	if (m && idx < FL_USTAT_SLOTS)
		__atomic_fetch_add(&m->ustats->c[idx], v, __ATOMIC_RELAXED);
}

/* fork() (init.c): the child must not inherit fl_maps_lock held by a thread
 * that does not exist there; hold it across fork in the parent, release it on
 * both sides. */
void fl_maps_fork_prepare(void)
{
	pthread_mutex_lock(&fl_maps_lock);
}

void fl_maps_fork_release(void)
{
	pthread_mutex_unlock(&fl_maps_lock);
}
