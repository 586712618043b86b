// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Unit tests: fl_peer_on_this_host looks up exactly the mirror of the key it
 * is given, in the map it is given, and never vouches for a loopback key or
 * a key without a nonce (the contract any enroller relies on). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "../../common/key.c"
#include "../../common/same_host.c"

/* A stand-in for the fl_established map: one key, one cookie. */
static struct fl_key fake_key;
static __u64 fake_cookie;
static int fake_fd = 42, lookups;

int fl_bpf_map_lookup(int map_fd, const void *key, void *value)
{
	lookups++;
	if (map_fd != fake_fd || memcmp(key, &fake_key, sizeof(fake_key)))
		return -ENOENT;
	memcpy(value, &fake_cookie, sizeof(fake_cookie));
	return 0;
}

static struct sockaddr_storage v4(const char *ip, uint16_t port)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *a = (struct sockaddr_in *)&ss;

	a->sin_family = AF_INET;
	a->sin_port = htons(port);
	inet_pton(AF_INET, ip, &a->sin_addr);
	return ss;
}

/* The client's key of 10.0.0.1:40000 -> 10.0.0.2:80 and its server's. */
static void keys(struct fl_key *client, struct fl_key *server, __u64 nonce)
{
	struct sockaddr_storage c = v4("10.0.0.1", 40000), s = v4("10.0.0.2", 80);

	fl_key_build(client, nonce, &c, &s);
	client->snd_isn = 111;
	client->rcv_isn = 222;
	fl_key_mirror(server, client);
}

static void found_when_the_mirror_is_recorded(void **state)
{
	struct fl_key c, s;

	(void)state;
	keys(&c, &s, 0xabcdef);
	fake_key = s;
	fake_cookie = 7;
	assert_true(fl_peer_on_this_host(fake_fd, &c));
	fake_key = c;
	assert_true(fl_peer_on_this_host(fake_fd, &s));
}

static void not_found_for_its_own_key_another_nonce_or_another_map(void **state)
{
	struct fl_key c, s, other, other_s;

	(void)state;
	keys(&c, &s, 0xabcdef);
	fake_key = c; /* only our own end is recorded */
	fake_cookie = 7;
	assert_false(fl_peer_on_this_host(fake_fd, &c));
	keys(&other, &other_s, 0x123); /* same 4-tuple and ISNs, another handshake */
	fake_key = s;
	assert_false(fl_peer_on_this_host(fake_fd, &other));
	assert_false(fl_peer_on_this_host(fake_fd + 1, &c));
	assert_false(fl_peer_on_this_host(-1, &c));
	fake_cookie = 0; /* a record without a socket */
	assert_false(fl_peer_on_this_host(fake_fd, &c));
}

/* NAT: the client's key names the mapped port, the server's the real one. */
static void not_found_through_a_port_mapping(void **state)
{
	struct sockaddr_storage c = v4("10.0.0.1", 40000), mapped = v4("10.0.0.2", 8080);
	struct sockaddr_storage real = v4("10.0.0.2", 80);
	struct fl_key client, server;

	(void)state;
	fl_key_build(&client, 5, &c, &mapped);
	fl_key_build(&server, 5, &real, &c);
	client.snd_isn = server.rcv_isn = 1;
	client.rcv_isn = server.snd_isn = 2;
	fake_key = server;
	fake_cookie = 9;
	assert_false(fl_peer_on_this_host(fake_fd, &client));
}

static void never_for_loopback_or_without_a_nonce(void **state)
{
	struct sockaddr_storage a = v4("127.0.0.1", 1), b = v4("127.0.0.1", 2);
	struct fl_key c, s;

	(void)state;
	fl_key_build(&c, 3, &a, &b);
	fl_key_mirror(&s, &c);
	fake_key = s;
	fake_cookie = 7;
	lookups = 0;
	assert_false(fl_peer_on_this_host(fake_fd, &c));
	keys(&c, &s, 0);
	fake_key = s;
	assert_false(fl_peer_on_this_host(fake_fd, &c));
	assert_int_equal(lookups, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(found_when_the_mirror_is_recorded),
		cmocka_unit_test(not_found_for_its_own_key_another_nonce_or_another_map),
		cmocka_unit_test(not_found_through_a_port_mapping),
		cmocka_unit_test(never_for_loopback_or_without_a_nonce),
	};

	return cmocka_run_group_tests_name("same_host", tests, NULL, NULL);
}
