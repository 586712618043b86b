// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Unit tests: which peers count as on this host, without netlink. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <string.h>

#include "../../preload/enroll/local_addr.c"

/* Stand-ins: the shim's trampolines and logging are not under test here. */
ssize_t libc_send(int fd, const void *buf, size_t len, int flags)
{
	return send(fd, buf, len, flags);
}

ssize_t libc_recv(int fd, void *buf, size_t len, int flags)
{
	return recv(fd, buf, len, flags);
}

int libc_close(int fd)
{
	return close(fd);
}

int libc_getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	return getsockopt(fd, level, name, val, len);
}

void fl_log(int level, const char *fmt, ...)
{
	(void)level;
	(void)fmt;
}

void fl_own_fd_take(int *fdp)
{
	(void)fdp;
}

static struct sockaddr_storage ss(const char *ip)
{
	struct sockaddr_storage s = { 0 };

	if (strchr(ip, ':')) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&s;

		a->sin6_family = AF_INET6;
		inet_pton(AF_INET6, ip, &a->sin6_addr);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&s;

		a->sin_family = AF_INET;
		inet_pton(AF_INET, ip, &a->sin_addr);
	}
	return s;
}

static int lo(const char *ip)
{
	struct sockaddr_storage s = ss(ip);
	unsigned char a[16];

	return fl_addr16_of(&s, a) && fl_addr_is_loopback(a);
}

static void loopback_addresses_are_recognised(void **state)
{
	(void)state;
	assert_true(lo("127.0.0.1"));
	assert_true(lo("127.255.3.4"));
	assert_true(lo("::1"));
	assert_true(lo("::ffff:127.0.0.1"));
	assert_false(lo("128.0.0.1"));
	assert_false(lo("10.0.0.1"));
	assert_false(lo("::2"));
	assert_false(lo("::ffff:10.0.0.1"));
	assert_false(lo("::127.0.0.1")); /* IPv4-compatible, not IPv4-mapped */
}

static void a_peer_with_the_sockets_own_address_is_local(void **state)
{
	struct sockaddr_storage a = ss("203.0.113.7"), b = ss("203.0.113.7");

	(void)state;
	assert_true(fl_peer_is_local(&a, &b, 0));
}

static void the_interface_list_decides_for_other_addresses(void **state)
{
	struct sockaddr_storage peer = ss("198.51.100.9"), self = ss("198.51.100.1");

	(void)state;
	/* Pretend the list was just read and holds 198.51.100.9. */
	fl_addrs_nr = 1;
	fl_addr16_of(&peer, fl_addrs[0]);
	fl_addr_checked_ns = fl_clock_ns(CLOCK_MONOTONIC_COARSE) + 1000000000LL;
	fl_addr_nl = 0;
	assert_true(fl_peer_is_local(&peer, &self, 0));
	peer = ss("198.51.100.10");
	assert_false(fl_peer_is_local(&peer, &self, 0));
}

static void other_families_are_never_local(void **state)
{
	struct sockaddr_storage u = { .ss_family = AF_UNIX }, s = ss("127.0.0.1");

	(void)state;
	assert_false(fl_peer_is_local(&u, &s, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(loopback_addresses_are_recognised),
		cmocka_unit_test(a_peer_with_the_sockets_own_address_is_local),
		cmocka_unit_test(the_interface_list_decides_for_other_addresses),
		cmocka_unit_test(other_families_are_never_local),
	};

	return cmocka_run_group_tests_name("local addresses", tests, NULL, NULL);
}
