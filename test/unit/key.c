// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Unit tests: the sockhash key the shim builds must match what fl_verdict
 * mirrors, for IPv4, IPv6 and IPv4-mapped IPv6, and its scope is chosen
 * the same way at both ends. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#include "../../common/key.c"

static struct sockaddr_storage v4(const char *ip, uint16_t port)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *a = (struct sockaddr_in *)&ss;

	a->sin_family = AF_INET;
	a->sin_port = htons(port);
	inet_pton(AF_INET, ip, &a->sin_addr);
	return ss;
}

static struct sockaddr_storage v6(const char *ip, uint16_t port)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

	a->sin6_family = AF_INET6;
	a->sin6_port = htons(port);
	inet_pton(AF_INET6, ip, &a->sin6_addr);
	return ss;
}

static void ipv4_is_stored_mapped_with_host_order_ports(void **state)
{
	struct sockaddr_storage l = v4("127.0.0.1", 40000), r = v4("127.0.0.2", 80);
	struct fl_key k;
	uint8_t want[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1 };

	(void)state;
	assert_int_equal(fl_key_build(&k, 77, &l, &r), 0);
	assert_memory_equal(k.local_ip, want, 16);
	assert_int_equal(k.local_port, 40000);
	assert_int_equal(k.remote_port, 80);
	assert_int_equal(k.scope, 77);
	assert_int_equal(k.pad, 0);
}

static void ipv4_and_mapped_ipv6_give_the_same_key(void **state)
{
	struct sockaddr_storage l4 = v4("127.0.0.1", 1234), r4 = v4("127.0.0.1", 5678);
	struct sockaddr_storage l6 = v6("::ffff:127.0.0.1", 1234), r6 = v6("::ffff:127.0.0.1", 5678);
	struct fl_key a, b;

	(void)state;
	assert_int_equal(fl_key_build(&a, 1, &l4, &r4), 0);
	assert_int_equal(fl_key_build(&b, 1, &l6, &r6), 0);
	assert_memory_equal(&a, &b, sizeof(a));
}

static void mirror_of_one_end_is_the_other_end(void **state)
{
	struct sockaddr_storage c = v6("::1", 50000), s = v6("::1", 8080);
	struct fl_key kc, ks, m;

	(void)state;
	assert_int_equal(fl_key_build(&kc, 9, &c, &s), 0);
	assert_int_equal(fl_key_build(&ks, 9, &s, &c), 0);
	kc.snd_isn = ks.rcv_isn = 1000;
	kc.rcv_isn = ks.snd_isn = 2000;
	fl_key_mirror(&m, &kc);
	assert_memory_equal(&m, &ks, sizeof(m));
	fl_key_mirror(&m, &ks);
	assert_memory_equal(&m, &kc, sizeof(m));
}

static void namespaces_give_different_keys(void **state)
{
	struct sockaddr_storage l = v4("127.0.0.1", 1), r = v4("127.0.0.1", 2);
	struct fl_key a, b;

	(void)state;
	fl_key_build(&a, 1, &l, &r);
	fl_key_build(&b, 2, &l, &r);
	assert_memory_not_equal(&a, &b, sizeof(a));
}

static void other_families_are_refused(void **state)
{
	struct sockaddr_storage u = { .ss_family = AF_UNIX };
	struct sockaddr_storage r = v4("127.0.0.1", 2);
	struct fl_key k;

	(void)state;
	assert_int_equal(fl_key_build(&k, 1, &u, &r),
			 -EAFNOSUPPORT);
	assert_int_equal(fl_key_build(&k, 1, &r, &u),
			 -EAFNOSUPPORT);
}

/* Loopback (either address): the namespace cookie; anything else: the
 * nonce, and no nonce means no key. Both ends see the same two addresses,
 * so they choose alike. */
static void scope_is_netns_for_loopback_and_nonce_otherwise(void **state)
{
	struct sockaddr_storage lo = v4("127.0.0.5", 1), pub = v4("10.0.0.2", 2);
	struct sockaddr_storage v6lo = v6("::1", 3), v6pub = v6("fd00::2", 4);
	struct sockaddr_storage mapped = v6("::ffff:127.0.0.1", 5);
	struct fl_key k, m;

	(void)state;
	fl_key_build(&k, 0, &lo, &pub);
	assert_true(fl_key_is_loopback(&k));
	assert_int_equal(fl_key_set_scope(&k, 7, 99), 0);
	assert_int_equal(k.scope, 7);
	fl_key_mirror(&m, &k);
	assert_true(fl_key_is_loopback(&m));
	fl_key_build(&k, 0, &v6lo, &v6lo);
	assert_true(fl_key_is_loopback(&k));
	fl_key_build(&k, 0, &mapped, &mapped);
	assert_true(fl_key_is_loopback(&k));

	fl_key_build(&k, 0, &pub, &pub);
	assert_false(fl_key_is_loopback(&k));
	assert_int_equal(fl_key_set_scope(&k, 7, 99), 0);
	assert_int_equal(k.scope, 99);
	assert_int_equal(fl_key_set_scope(&k, 7, 0), -ENODATA);
	fl_key_build(&k, 0, &v6pub, &v6pub);
	assert_false(fl_key_is_loopback(&k));
	assert_int_equal(fl_key_set_scope(&k, 0, 0x1234567890abcdefULL), 0);
	assert_true(k.scope == 0x1234567890abcdefULL);
	fl_key_build(&k, 0, &lo, &lo);
	assert_int_equal(fl_key_set_scope(&k, 0, 99), -ENOPROTOOPT);
}

static void key_has_no_implicit_padding(void **state)
{
	(void)state;
	/* The BPF side hashes all bytes: every one must be a named field. */
	assert_int_equal(sizeof(struct fl_key), 8 + 16 + 16 + 2 + 2 + 4 + 4 + 4);
	assert_int_equal(sizeof(struct fl_slot), 64); /* one cache line */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ipv4_is_stored_mapped_with_host_order_ports),
		cmocka_unit_test(ipv4_and_mapped_ipv6_give_the_same_key),
		cmocka_unit_test(mirror_of_one_end_is_the_other_end),
		cmocka_unit_test(namespaces_give_different_keys),
		cmocka_unit_test(other_families_are_refused),
		cmocka_unit_test(scope_is_netns_for_loopback_and_nonce_otherwise),
		cmocka_unit_test(key_has_no_implicit_padding),
	};

	return cmocka_run_group_tests_name("key", tests, NULL, NULL);
}
