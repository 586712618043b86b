// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fastlocal.bpf.c - the SK_MSG verdict program and its maps.
 *
 * Every sendmsg() on a socket in fl_sockhash runs fl_verdict. It looks up
 * the other end of the connection under the mirrored key and, if that socket
 * is enrolled too, moves the message straight into its receive queue
 * (BPF_F_INGRESS). Otherwise the message goes out over plain TCP.
 *
 * IMPORTANT: fl_verdict only ever returns SK_PASS. SK_DROP would make the
 * sender's write fail with EACCES and lose the bytes; when the redirect is
 * not set up, SK_PASS hands the message to TCP, which is always correct.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "fastlocal.h"

#define AF_INET 2
#define AF_INET6 10

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* The enrolled sockets. Value size 8: a user-space lookup returns the socket
 * cookie, an update takes the fd as a __u64. */
struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(max_entries, FL_SOCKHASH_MAX);
	__type(key, struct fl_key);
	__type(value, __u64);
} fl_sockhash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fl_stats);
} fl_stats SEC(".maps");

/* Filled by the loader; never touched by the program. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fl_meta);
} fl_meta SEC(".maps");

static __always_inline void fl_count(__u32 msgs_idx, __u32 bytes_idx, __u64 bytes)
{
	__u32 zero = 0;
	struct fl_stats *st = bpf_map_lookup_elem(&fl_stats, &zero);

	if (!st)
		return;
	/* Per-CPU value, and the socket lock serialises this socket: no atomics. */
	if (msgs_idx < FL_STAT_SLOTS)
		st->c[msgs_idx] += 1;
	if (bytes_idx < FL_STAT_SLOTS)
		st->c[bytes_idx] += bytes;
}

/* The key of the other end: same namespace, local and remote swapped.
 *
 * IMPORTANT: every context field is read unconditionally, before branching
 * on the family; otherwise clang merges the IPv4 and IPv6 loads into one
 * computed context pointer, which the verifier rejects ("dereference of
 * modified ctx ptr"). */
static __always_inline void fl_peer_key(struct sk_msg_md *msg, struct fl_key *peer)
{
	__u32 family = msg->family;
	__u32 l4 = msg->local_ip4, r4 = msg->remote_ip4;
	__u32 l6[4] = { msg->local_ip6[0], msg->local_ip6[1], msg->local_ip6[2], msg->local_ip6[3] };
	__u32 r6[4] = { msg->remote_ip6[0], msg->remote_ip6[1], msg->remote_ip6[2], msg->remote_ip6[3] };
	int i;

	peer->netns_cookie = bpf_get_netns_cookie(msg);
	if (family == AF_INET) {
		peer->local_ip[2] = bpf_htonl(0x0000ffff);
		peer->local_ip[3] = r4;
		peer->remote_ip[2] = bpf_htonl(0x0000ffff);
		peer->remote_ip[3] = l4;
	} else {
		for (i = 0; i < 4; i++) {
			peer->local_ip[i] = r6[i];
			peer->remote_ip[i] = l6[i];
		}
	}
	/* local_port is host order; remote_port holds the network-order port in
	 * its upper 16 bits (kernel-facts.md). */
	peer->local_port = (__u16)bpf_ntohl(msg->remote_port);
	peer->remote_port = (__u16)msg->local_port;
}

SEC("sk_msg")
int fl_verdict(struct sk_msg_md *msg)
{
	struct fl_key peer = {};
	__u64 len = msg->size;

	fl_peer_key(msg, &peer);
	if (bpf_msg_redirect_hash(msg, &fl_sockhash, &peer, BPF_F_INGRESS) == SK_PASS)
		fl_count(FL_STAT_REDIRECTED_MSGS, FL_STAT_REDIRECTED_BYTES, len);
	else
		fl_count(FL_STAT_PASSED_MSGS, FL_STAT_PASSED_BYTES, len);
	return SK_PASS;
}
