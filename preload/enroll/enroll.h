/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* enroll.h - putting one connected TCP socket into the pinned sockhash. */
#ifndef FL_ENROLL_H
#define FL_ENROLL_H

#include <stdbool.h>
#include <stdint.h>

#include "socket/fdtable.h"

/*
 * Enrolls fd, a connected TCP socket, if its peer is on this host and
 * nobody else holds it: claims a slot for its counters, records its keys
 * and inserts it into the sockhash. Its peer may redirect into it only once
 * it is known that no reader can be asleep in TCP's own recvmsg on it
 * (FL_SLOT_RX_READY, docs/design.md "Shared sockets").
 * A socket that some process enrolled already (inherited through fork or
 * exec) is adopted instead. Returns 0, or -errno for why it stays on TCP:
 *   -ECANCELED  FASTLOCAL=0              -ENOENT   nothing is loaded
 *   -ENOTSUP    not a TCP socket, SO_RCVLOWAT set, not connected
 *   -EREMOTE    the peer is on another host
 *   -ENODATA    no ISN record (established before load)
 *   -EAGAIN     another fd, thread or process holds it: asked again later
 *   -ENOSPC     every slot taken         other     the kernel's insert error
 * Every fallback is counted and logged at debug level. Never closes fd.
 */
int fl_enroll(int fd);

/* fl_enroll for a socket the application has already read `already_read`
 * bytes from (over TCP, while it was pending): the peer's ordering gate
 * counts them as read. busy: a read of another thread was in flight when
 * enrollment began, so who holds the socket cannot be asked now: it
 * enrolls without that check and is not a redirect target until a later
 * one passes. peer_first: an end whose peer is not in the sockhash yet
 * does not enroll alone (-EINPROGRESS) if it is an accepting end, or a
 * connecting one whose server's port never had an accepting end under the
 * shim: it waits, pending, for fl_joined to say its peer may have come
 * (fastlocal.h; the direct back-end only: a brokered one cannot read
 * fl_joined). */
int fl_enroll_read(int fd, uint64_t already_read, bool busy, bool peer_first);

/*
 * After connect()/accept(): enrolls fd at once when FASTLOCAL_ENROLL_AFTER
 * is 0 (if its peer may come: fl_enroll_read's peer_first; pending until
 * then); otherwise marks it pending, for fl_pending_io() to enroll once
 * the connection has moved that many bytes. A connection that closes
 * sooner never pays for enrollment: no system call here.
 */
void fl_enroll_or_defer(int fd);

/* After a listen() of the application: marks fd's port as one with an
 * accepting end under the shim (fastlocal.h, struct fl_joined), so that
 * connecting ends under the shim need not wait for it. Keeps errno. */
void fl_enroll_note_listener(int fd);

/* A pending fd moved n more bytes (a write, before it; a read, through
 * fl_pending_read_done). Enrolls it when it has moved enough; true if fd is
 * enrolled now. */
bool fl_pending_io(int fd, struct fl_fd *e, uint64_t n);

/* A read of pending fd that returned n bytes (0: none, or a peek) ends: its
 * bytes are counted exactly once (in the entry, or in the slot if the
 * socket enrolled meanwhile), then, if it was the last read in flight, the
 * fd may enroll, or be found safe to redirect into. */
void fl_pending_read_done(int fd, struct fl_fd *e, uint64_t n);

/* Re-attaches fd, a socket this process inherited through exec that was
 * enrolled before: its reads are counted again. 0 or -errno. */
int fl_enroll_adopt(int fd);

/* fd is enrolled but could not be shown alone when it joined the
 * sockhash: if nobody else holds it now, lets its peer redirect to it
 * (FL_SLOT_RX_READY). Called from its calls, when the last one in flight
 * ends or at the backoff points of fl_fd_retry_due. */
void fl_enroll_check_ready(int fd, struct fl_fd *e);

/*
 * Takes an enrolled socket off the fast path for good, so that the kernel's
 * own TCP handles it (a feature the redirect path lacks was asked for). Safe
 * only when nothing redirected to it is unread or in flight: its peer is
 * told first (BLIND), and then everything the peer ever sent must have been
 * read (docs/design.md, section 4). Returns 0 when done, -EBUSY when bytes
 * are still to be read (the caller tries again later), or -errno. The
 * socket's own sends go over TCP from the first call on.
 */
int fl_unenroll(int fd, const char *why);

/* fl_is_tcp_socket() is in enroll_maps.h (the broker checks with it too). */
#include "common/enroll_maps.h"

#endif
