/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rx_topup.h - a read of an enrolled socket takes, as TCP's does, every
 * byte that is there, up to the length asked, across both receive queues.
 *
 * After a flow-control fallback the peer's older bytes are in the
 * redirected queue and its newer ones in TCP's, and the kernel's
 * tcp_bpf_recvmsg serves the redirected queue alone: a read that empties
 * it returns short with TCP's queue still holding bytes. Programs take a
 * short read to mean "nothing more is there": libuv (node) ends the
 * stream on a short read with POLLHUP and closes, losing the rest; an
 * edge-triggered reader stops and waits for an edge that already came.
 * So such a read goes on into TCP's queue, without waiting
 * (test/integration/short_read.c).
 */
#ifndef FL_RX_TOPUP_H
#define FL_RX_TOPUP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* A read of the enrolled socket fd (its slot reference: slot) returned
 * n > 0 bytes into the buffer iov/cnt: if that is fewer than the buffer
 * holds and TCP's queue may hold the peer's next bytes, they are read too,
 * into the rest of it, without waiting. Returns the call's total (n when
 * nothing more came); errno kept. Costs a few loads unless the peer's
 * direction is on TCP, or its slot is out of reach (then one getsockopt
 * per short read, and one ioctl when TCP's queue holds something). Never
 * across TCP's urgent mark. The caller decides which calls qualify (rx.c). */
ssize_t fl_rx_top_up(int fd, uint32_t slot, const struct iovec *iov, size_t cnt, ssize_t n);

#endif
