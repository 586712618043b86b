/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* fltest_netns.h - running a test in a network namespace of its own. */
#ifndef FL_TEST_NETNS_H
#define FL_TEST_NETNS_H

/* Moves this process into a new network namespace with loopback up, so that
 * /proc/net/snmp counts only this test's segments. 0 or -1. */
int fl_t_private_netns(void);

#endif
