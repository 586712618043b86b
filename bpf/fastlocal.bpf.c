// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fastlocal.bpf.c - the verdict and sockops programs and their maps.
 *
 * fl_sockops (cgroup sockops, attached at the cgroup2 root) records each TCP
 * connection's pair of initial sequence numbers when it is established, and
 * releases an enrolled socket's slot when the socket dies. For connections
 * whose addresses are not loopback it also carries a random nonce from the
 * active end to the passive end in a SYN option, and records every such
 * connection alive on this host in fl_established (docs/design.md section 1:
 * how a socket proves its peer is on this host, in whatever namespace).
 *
 * fl_verdict (SK_MSG, attached to fl_sockhash) runs on every sendmsg() of an
 * enrolled socket. It moves the message straight into the peer's receive
 * queue when three things hold, and hands it to TCP otherwise:
 *   - the peer is enrolled (its key, which carries the ISN pair, is found);
 *   - the ordering gate is open: every byte this socket ever sent, over TCP
 *     or redirected, has been read by the peer's application
 *     (docs/kernel.md#reorder: redirected data overtakes unread TCP data);
 *   - flow control: the peer's unread redirected bytes stay within its
 *     budget (docs/kernel.md#no-backpressure: redirect has no backpressure
 *     of its own).
 * Once a direction falls back to TCP it returns to redirect only when the
 * gate holds again. docs/design.md has the argument and the state machine.
 *
 * fl_holders (cgroup getsockopt, at the cgroup2 root) answers one question
 * of the shim about a socket it is enrolling: who else holds it
 * (FL_SO_HOLDERS, fastlocal.h). Every other getsockopt is left alone.
 *
 * IMPORTANT: all programs only ever return "continue": fl_verdict returns
 * SK_PASS (SK_DROP would fail the write and lose the bytes; SK_PASS with no
 * redirect set is plain TCP), fl_sockops and fl_holders return 1.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>
#include "fastlocal.h"

#define FL_SEND_SHUTDOWN 2 /* include/net/sock.h */
#define FL_AF_INET 2
#define FL_AF_INET6 10
#define FL_TCPHDR_SYN 0x02
#define FL_TCPHDR_ACK 0x10
#define FL_SOL_TCP 6
#define FL_TCP_SAVE_SYN 27 /* include/uapi/linux/tcp.h */

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* The enrolled sockets. Value size 8: a user-space lookup returns the socket
 * cookie, an update takes the fd as a __u64. */
struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(max_entries, FL_SOCKHASH_MAX);
	__type(key, struct fl_key);
	__type(value, __u64);
} fl_sockhash SEC(".maps");

/* Per-socket identity: ISNs from sockops, keys and slot from the shim. */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct fl_sk);
} fl_sk SEC(".maps");

/* Live per-socket counters of domain 0, mmap-ed by every privileged shim.
 * BPF_F_INNER_MAP: the per-uid arrays the broker adds to fl_slot_domains
 * have the same flags and may be smaller (fastlocal.h, FL_DOMAIN_SLOTS). */
struct fl_slot_array {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE | BPF_F_INNER_MAP);
	__uint(max_entries, FL_SLOTS_MAX);
	__type(key, __u32);
	__type(value, struct fl_slot);
} fl_slots SEC(".maps");

/* Every slot domain: [0] is fl_slots, [uid's domain] an array the broker
 * created for that uid. How the programs find a slot from its reference. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, FL_DOMAINS_MAX);
	__type(key, __u32);
	__array(values, struct fl_slot_array);
} fl_slot_domains SEC(".maps") = {
	.values = { [0] = &fl_slots },
};

/* Which uid owns each domain; only "fastlocal daemon" reads and writes it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FL_DOMAINS_MAX);
	__type(key, __u32);
	__type(value, struct fl_domain);
} fl_domain_uid SEC(".maps");

/* key of an enrolled socket -> its slot; how a sender finds its peer's. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FL_SLOTS_MAX);
	__type(key, struct fl_key);
	__type(value, struct fl_slot_ref);
} fl_slot_index SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fl_stats);
} fl_stats SEC(".maps");

/* Shim counters; the programs never touch it, it is here to be pinned. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fl_ustats);
} fl_ustats SEC(".maps");

/* Bumped when a socket joins the sockhash (struct fl_joined); the programs
 * never touch it, it is here to be pinned. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fl_joined);
} fl_joined SEC(".maps");

/*
 * Every nonce-keyed connection end alive on this host: its key -> its socket
 * cookie. Written by sockops at establishment, deleted at TCP_CLOSE. A shim
 * whose peer address is not local to its own namespace enrolls only if the
 * mirror of its key is here: the other end exists on this host (same_host.c).
 * LRU: an end whose close was not seen (sockops detached meanwhile) is
 * evicted eventually instead of filling the map; its key holds a random
 * nonce, so a stale entry can never match a new connection.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, FL_ESTABLISHED_MAX);
	__type(key, struct fl_key);
	__type(value, __u64);
} fl_established SEC(".maps");

/* Filled by the loader; never touched by the programs. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fl_meta);
} fl_meta SEC(".maps");

/* The slot a reference names, in whichever domain (NULL if none). */
static __always_inline struct fl_slot *fl_slot_get(__u32 ref)
{
	__u32 dom = FL_SLOT_DOM(ref), idx = FL_SLOT_IDX(ref);
	void *arr = bpf_map_lookup_elem(&fl_slot_domains, &dom);

	return arr ? bpf_map_lookup_elem(arr, &idx) : NULL;
}

static __always_inline void fl_count(__u32 idx, __u64 v)
{
	__u32 zero = 0;
	struct fl_stats *st = bpf_map_lookup_elem(&fl_stats, &zero);

	/* Per-CPU value: no other writer runs on this CPU meanwhile. */
	if (st && idx < FL_STAT_SLOTS)
		st->c[idx] += v;
}

/* ------------------------------------------------------------- sockops */

/* 127.0.0.0/8 (network order), ::1, or ::ffff:127.0.0.0/104. */
static __always_inline int fl_loopback4(__u32 a)
{
	return (bpf_ntohl(a) >> 24) == 127;
}

static __always_inline int fl_loopback6(__u32 a0, __u32 a1, __u32 a2, __u32 a3)
{
	if (a0 || a1)
		return 0;
	if (!a2 && a3 == bpf_htonl(1))
		return 1;
	return a2 == bpf_htonl(0xffff) && fl_loopback4(a3);
}

/* The connection's addresses in the key's 16-byte form (IPv4 IPv4-mapped).
 * IMPORTANT: every context field is read, unconditionally and each at its
 * own constant offset: the verifier refuses a context load at an offset
 * clang computed in a register (which it does for "v4 ? ip4 : ip6[3]"). */
static __always_inline int fl_skops_addrs(struct bpf_sock_ops *skops, __u32 l[4], __u32 r[4])
{
	__u32 family = skops->family, l4 = skops->local_ip4, r4 = skops->remote_ip4;

	l[0] = skops->local_ip6[0];
	l[1] = skops->local_ip6[1];
	l[2] = skops->local_ip6[2];
	l[3] = skops->local_ip6[3];
	r[0] = skops->remote_ip6[0];
	r[1] = skops->remote_ip6[1];
	r[2] = skops->remote_ip6[2];
	r[3] = skops->remote_ip6[3];
	barrier_var(l4);
	barrier_var(r4);
	if (family == FL_AF_INET) {
		l[0] = l[1] = r[0] = r[1] = 0;
		l[2] = r[2] = bpf_htonl(0xffff);
		l[3] = l4;
		r[3] = r4;
		return 0;
	}
	return family == FL_AF_INET6 ? 0 : -1;
}

/* Either address is loopback: the key's scope is the netns cookie, and the
 * connection needs no nonce. The shim applies the same rule (key.c). */
static __always_inline int fl_skops_loopback(struct bpf_sock_ops *skops)
{
	__u32 l[4], r[4];

	if (fl_skops_addrs(skops, l, r))
		return 1; /* not TCP/IP: nothing of ours */
	return fl_loopback6(l[0], l[1], l[2], l[3]) || fl_loopback6(r[0], r[1], r[2], r[3]);
}

/* This end's key, as the shim builds it (key.c): ports host order (sockops
 * has remote_port in network order, in the upper half). */
static __always_inline void fl_skops_key(struct bpf_sock_ops *skops, const struct fl_sk *st,
					 struct fl_key *k)
{
	__builtin_memset(k, 0, sizeof(*k));
	k->scope = st->nonce;
	fl_skops_addrs(skops, k->local_ip, k->remote_ip);
	k->local_port = (__u16)skops->local_port;
	k->remote_port = (__u16)bpf_ntohl(skops->remote_port);
	k->snd_isn = st->snd_isn;
	k->rcv_isn = st->rcv_isn;
}

struct fl_nonce_opt {
	__u8 kind;
	__u8 len;
	__u16 exid;  /* network order */
	__u32 hi;    /* the nonce, network order, as two words: the option sits */
	__u32 lo;    /* 4-byte aligned in the header, never 8 */
} __attribute__((packed));

/* connect(): a fresh nonce for a connection that may leave its namespace,
 * and the header-option callbacks that will put it in the SYN. */
static __always_inline void fl_nonce_new(struct bpf_sock_ops *skops)
{
	struct bpf_sock *sk = skops->sk;
	struct fl_sk *st;
	__u64 n;

	if (!sk || fl_skops_loopback(skops))
		return;
	st = bpf_sk_storage_get(&fl_sk, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!st)
		return;
	n = ((__u64)bpf_get_prandom_u32() << 32) | bpf_get_prandom_u32();
	st->nonce = n ? n : 1; /* 0 means "none" */
	bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags |
					 BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG);
}

/* A pure SYN of ours is about to be built: room for the option. */
static __always_inline void fl_nonce_reserve(struct bpf_sock_ops *skops)
{
	struct bpf_sock *sk = skops->sk;
	struct fl_sk *st;

	if ((skops->skb_tcp_flags & (FL_TCPHDR_SYN | FL_TCPHDR_ACK)) != FL_TCPHDR_SYN || !sk)
		return;
	st = bpf_sk_storage_get(&fl_sk, sk, 0, 0);
	if (!st || !st->nonce)
		return;
	/* No room (MD5, a Fast Open cookie, another program's options): the
	 * write below finds no space and the connection has no nonce. */
	bpf_reserve_hdr_opt(skops, FL_TCPOPT_NONCE_LEN, 0);
}

/* Writes the nonce into the SYN. If it cannot (no room), the connection
 * has no nonce at either end, so neither ever keys by it. */
static __always_inline void fl_nonce_write(struct bpf_sock_ops *skops)
{
	struct fl_nonce_opt opt = { .kind = FL_TCPOPT_EXP, .len = FL_TCPOPT_NONCE_LEN,
				    .exid = bpf_htons(FL_TCPOPT_EXID) };
	struct bpf_sock *sk = skops->sk;
	struct fl_sk *st;

	if ((skops->skb_tcp_flags & (FL_TCPHDR_SYN | FL_TCPHDR_ACK)) != FL_TCPHDR_SYN || !sk)
		return;
	st = bpf_sk_storage_get(&fl_sk, sk, 0, 0);
	if (!st || !st->nonce)
		return;
	opt.hi = bpf_htonl((__u32)(st->nonce >> 32));
	opt.lo = bpf_htonl((__u32)st->nonce);
	if (bpf_store_hdr_opt(skops, &opt, sizeof(opt), 0)) {
		/*
		 * IMPORTANT: another fastlocal (its own pin dir) attached at the
		 * same cgroup may have written its nonce into this SYN first:
		 * then the passive end will read that one, so this end adopts
		 * it rather than keying by a value its peer never sees.
		 */
		struct fl_nonce_opt found = { .kind = FL_TCPOPT_EXP, .len = 4,
					      .exid = bpf_htons(FL_TCPOPT_EXID) };

		if (bpf_load_hdr_opt(skops, &found, sizeof(found), 0) == FL_TCPOPT_NONCE_LEN &&
		    (found.hi || found.lo)) {
			st->nonce = ((__u64)bpf_ntohl(found.hi) << 32) | bpf_ntohl(found.lo);
		} else {
			st->nonce = 0;
			fl_count(FL_STAT_NONCE_NO_ROOM, 1);
			return;
		}
	}
	fl_count(FL_STAT_NONCE_SENT, 1);
}

/* The passive end: the nonce from the SYN the listener saved (TCP_SAVE_SYN,
 * set at listen()). No saved SYN (syncookies, a listener older than the
 * load) or no option (stripped on the way): no nonce. */
static __always_inline void fl_nonce_read(struct bpf_sock_ops *skops, struct fl_sk *st)
{
	struct fl_nonce_opt opt = { .kind = FL_TCPOPT_EXP, .len = 4,
				    .exid = bpf_htons(FL_TCPOPT_EXID) };
	__u64 n = 0;

	if (bpf_load_hdr_opt(skops, &opt, sizeof(opt), BPF_LOAD_HDR_OPT_TCP_SYN) ==
	    FL_TCPOPT_NONCE_LEN)
		n = ((__u64)bpf_ntohl(opt.hi) << 32) | bpf_ntohl(opt.lo);
	st->nonce = n;
	fl_count(n ? FL_STAT_NONCE_RECEIVED : FL_STAT_NONCE_MISSING, 1);
}

/*
 * The passive end, building its SYN-ACK: the nonce of the SYN it answers,
 * or 0. The option's search needs only kind and ExID (len 4 = kind, len,
 * ExID); the kernel copies the whole option back.
 */
static __always_inline __u64 fl_syn_nonce(struct bpf_sock_ops *skops, struct fl_nonce_opt *opt)
{
	*opt = (struct fl_nonce_opt){ .kind = FL_TCPOPT_EXP, .len = 4,
				      .exid = bpf_htons(FL_TCPOPT_EXID) };
	if (bpf_load_hdr_opt(skops, opt, sizeof(*opt), BPF_LOAD_HDR_OPT_TCP_SYN) !=
	    FL_TCPOPT_NONCE_LEN)
		return 0;
	return ((__u64)bpf_ntohl(opt->hi) << 32) | bpf_ntohl(opt->lo);
}

/* A SYN-ACK answers a SYN with a nonce: room to echo it, so that the write
 * callback below runs (it runs only for a SYN-ACK with reserved room). */
static __always_inline void fl_synack_reserve(struct bpf_sock_ops *skops)
{
	struct fl_nonce_opt opt;

	if (fl_syn_nonce(skops, &opt))
		bpf_reserve_hdr_opt(skops, FL_TCPOPT_NONCE_LEN, 0);
}

/*
 * IMPORTANT: the passive end is recorded in fl_established before its
 * SYN-ACK leaves, not only when the handshake's last ACK makes it
 * established. The active end is established by this SYN-ACK and may
 * enroll at once (connect() returned); its check must already find this
 * end, or it would race the ACK on its way to us and stay on TCP. Here the
 * end is still a request socket: the ISNs come from the SYN-ACK's header
 * (seq is ours, ack_seq the peer's ISN + 1; with Fast Open data it acks
 * more, the key differs and only the record at establishment counts).
 * A handshake that never completes leaves a record no socket will ever
 * mirror (random nonce); the LRU drops it.
 */
static __always_inline void fl_synack_record(struct bpf_sock_ops *skops)
{
	struct fl_nonce_opt opt;
	struct tcphdr *th;
	struct fl_key k;
	__u64 cookie;

	__builtin_memset(&k, 0, sizeof(k));
	k.scope = fl_syn_nonce(skops, &opt);
	if (!k.scope)
		return;
	opt.len = FL_TCPOPT_NONCE_LEN;
	bpf_store_hdr_opt(skops, &opt, sizeof(opt), 0); /* the echo */
	th = (struct tcphdr *)(long)skops->skb_data;
	if ((void *)(th + 1) > (void *)(long)skops->skb_data_end)
		return;
	if (fl_skops_addrs(skops, k.local_ip, k.remote_ip))
		return;
	k.local_port = (__u16)skops->local_port;
	k.remote_port = (__u16)bpf_ntohl(skops->remote_port);
	k.snd_isn = bpf_ntohl(th->seq);
	k.rcv_isn = bpf_ntohl(th->ack_seq) - 1;
	cookie = bpf_get_socket_cookie(skops);
	bpf_map_update_elem(&fl_established, &k, &cookie, BPF_ANY);
}

/* A nonce-keyed end is established (ISNs known) or gone: the record that
 * tells a shim in another namespace that its peer is on this host. */
static __always_inline void fl_established_add(struct bpf_sock_ops *skops, const struct fl_sk *st)
{
	struct fl_key k;
	__u64 cookie;

	if (!st->nonce)
		return;
	fl_skops_key(skops, st, &k);
	cookie = bpf_get_socket_cookie(skops);
	bpf_map_update_elem(&fl_established, &k, &cookie, BPF_ANY);
}

static __always_inline void fl_established_del(struct bpf_sock_ops *skops, const struct fl_sk *st)
{
	struct fl_key k;

	if (!st->nonce || !(st->flags & FL_SK_ISN))
		return;
	fl_skops_key(skops, st, &k);
	bpf_map_delete_elem(&fl_established, &k);
}

static __always_inline void fl_record_isn(struct bpf_sock_ops *skops, int active)
{
	struct bpf_sock *sk = skops->sk;
	struct fl_sk *st;

	if (!sk)
		return;
	st = bpf_sk_storage_get(&fl_sk, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!st)
		return;
	/*
	 * The ISNs, from what the socket has counted since its SYN. The active
	 * end counted its SYN in bytes_acked when the SYN-ACK acked it
	 * (tcp_ack -> tcp_snd_una_update); the passive end starts with
	 * snd_una = ISN + 1 and bytes_acked = 0 (tcp_create_openreq_child).
	 * bytes_received never counts the peer's SYN but does count TFO data
	 * carried in it, so both formulas hold with Fast Open too. A mismatch
	 * would only make the keys differ, which keeps the pair on TCP.
	 */
	st->snd_isn = skops->snd_una - (__u32)skops->bytes_acked - (active ? 0 : 1);
	st->rcv_isn = skops->rcv_nxt - (__u32)skops->bytes_received - 1;
	st->flags = FL_SK_ISN | (active ? FL_SK_ACTIVE : 0);
	if (fl_skops_loopback(skops))
		st->nonce = 0; /* keyed by the netns cookie */
	else if (!active)
		fl_nonce_read(skops, st);
	fl_established_add(skops, st);
	/* Ask for state changes so that the slot is released when it dies;
	 * IMPORTANT: and no more header-option callbacks: the nonce goes in
	 * the SYN only, every later segment would pay for the call. */
	bpf_sock_ops_cb_flags_set(skops, (skops->bpf_sock_ops_cb_flags | BPF_SOCK_OPS_STATE_CB_FLAG) &
					 ~BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG);
	fl_count(FL_STAT_ISN_RECORDED, 1);
}

/*
 * A connection the configuration left on TCP (FL_SK_OFF) closes: its data
 * bytes are counted from the kernel's own count, the verdict never saw them.
 * bytes_acked, not bytes_sent: retransmissions would count twice. It also
 * counts the active end's SYN and an acknowledged FIN, one each; the FIN was
 * sent if the socket left a state that follows it, and acknowledged if
 * nothing is unacknowledged (write_seq counts the FIN too).
 */
static __always_inline void fl_count_switched_off(struct bpf_sock_ops *skops,
						  struct bpf_sock *sk, const struct fl_sk *st)
{
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
	__u32 old = skops->args[0];
	__u64 n;

	if (!tp)
		return;
	n = tp->bytes_acked;
	if ((st->flags & FL_SK_ACTIVE) && n)
		n--;
	if ((old == BPF_TCP_FIN_WAIT1 || old == BPF_TCP_FIN_WAIT2 || old == BPF_TCP_CLOSING ||
	     old == BPF_TCP_LAST_ACK) && skops->snd_una == tp->write_seq && n)
		n--;
	fl_count(FL_STAT_PASS_CONFIG_BYTES, n);
	fl_count(FL_STAT_PASSED_BYTES, n);
}

/* The socket is gone (TCP_CLOSE): give its slot back, however it died. */
static __always_inline void fl_release(struct bpf_sock_ops *skops)
{
	struct bpf_sock *sk = skops->sk;
	struct fl_slot_ref *ref;
	struct fl_slot *slot;
	struct fl_sk *st;

	if (!sk)
		return;
	st = bpf_sk_storage_get(&fl_sk, sk, 0, 0);
	if (st)
		fl_established_del(skops, st);
	if (st && (st->flags & FL_SK_OFF)) {
		st->flags &= ~FL_SK_OFF;
		fl_count_switched_off(skops, sk, st);
	}
	if (!st || !(st->flags & FL_SK_ENROLLED))
		return;
	ref = bpf_map_lookup_elem(&fl_slot_index, &st->key);
	if (ref && ref->owner == st->cookie)
		bpf_map_delete_elem(&fl_slot_index, &st->key);
	slot = fl_slot_get(st->slot);
	if (slot && slot->owner == st->cookie)
		__sync_val_compare_and_swap(&slot->owner, st->cookie, 0);
	st->flags &= ~FL_SK_ENROLLED;
	fl_count(FL_STAT_SLOTS_FREED, 1);
}

SEC("sockops")
int fl_sockops(struct bpf_sock_ops *skops)
{
	int one = 1;

	switch (skops->op) {
	case BPF_SOCK_OPS_TCP_CONNECT_CB:
		fl_nonce_new(skops);
		break;
	case BPF_SOCK_OPS_HDR_OPT_LEN_CB:
		if ((skops->skb_tcp_flags & (FL_TCPHDR_SYN | FL_TCPHDR_ACK)) ==
		    (FL_TCPHDR_SYN | FL_TCPHDR_ACK))
			fl_synack_reserve(skops);
		else
			fl_nonce_reserve(skops);
		break;
	case BPF_SOCK_OPS_WRITE_HDR_OPT_CB:
		if ((skops->skb_tcp_flags & (FL_TCPHDR_SYN | FL_TCPHDR_ACK)) ==
		    (FL_TCPHDR_SYN | FL_TCPHDR_ACK))
			fl_synack_record(skops);
		else
			fl_nonce_write(skops);
		break;
	case BPF_SOCK_OPS_TCP_LISTEN_CB:
		/* The passive end reads the nonce from its SYN, which the
		 * kernel keeps for the accepted socket only if the listener
		 * asked (about 60 bytes per connection, freed with it). A
		 * listener bound to loopback only gets loopback connections,
		 * which need no nonce. */
		if (fl_skops_loopback(skops))
			break;
		bpf_setsockopt(skops, FL_SOL_TCP, FL_TCP_SAVE_SYN, &one, sizeof(one));
		/* SYN-ACKs call the option callbacks (fl_synack_record); an
		 * accepted socket inherits the flag until it is established. */
		bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags |
						 BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG);
		break;
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
		fl_record_isn(skops, 1);
		break;
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		fl_record_isn(skops, 0);
		break;
	case BPF_SOCK_OPS_STATE_CB:
		if (skops->args[1] == BPF_TCP_CLOSE)
			fl_release(skops);
		break;
	default:
		break;
	}
	return 1;
}

/* ------------------------------------------------------------- verdict */

/* The peer's slot: cached in ours after the first lookup, re-checked by its
 * owner tag every time (a slot is reused once its socket dies).
 * IMPORTANT: the verdict only ever READS the peer's slot, which may belong to
 * another user's domain; it writes only its own socket's (docs/security.md). */
static __always_inline struct fl_slot *fl_peer_slot(struct fl_slot *me, struct fl_sk *st)
{
	struct fl_slot_ref *ref;
	struct fl_slot *p;
	__u32 idx;

	if (me->peer_slot) {
		idx = me->peer_slot - 1;
		p = fl_slot_get(idx);
		if (p && p->owner == me->peer_owner && me->peer_owner)
			return p;
	}
	ref = bpf_map_lookup_elem(&fl_slot_index, &st->peer);
	if (!ref)
		return NULL;
	idx = ref->slot;
	p = fl_slot_get(idx);
	if (!p || !ref->owner || p->owner != ref->owner)
		return NULL;
	me->peer_slot = idx + 1;
	me->peer_owner = ref->owner;
	return p;
}

static __always_inline int fl_pass(struct fl_slot *me, __u32 reason_stat, __u64 len)
{
	if (me) {
		me->dir = FL_DIR_TCP;
		me->dir_reason = (__u16)reason_stat;
		me->tcp_pending = (__u32)len;
	}
	fl_count(FL_STAT_PASSED_MSGS, 1);
	fl_count(FL_STAT_PASSED_BYTES, len);
	fl_count(reason_stat, len);
	return SK_PASS;
}

SEC("sk_msg")
int fl_verdict(struct sk_msg_md *msg)
{
	struct bpf_sock *sk = msg->sk;
	__u64 len = msg->size, sent, consumed, unread;
	struct fl_slot *me, *peer;
	struct tcp_sock *tp;
	struct fl_key peer_key;
	struct fl_sk *st;
	__u32 wseq, moved;

	if (!sk)
		return fl_pass(NULL, FL_STAT_PASS_NOT_ENROLLED_BYTES, len);
	st = bpf_sk_storage_get(&fl_sk, sk, 0, 0);
	if (!st || !(st->flags & FL_SK_ENROLLED))
		return fl_pass(NULL, FL_STAT_PASS_NOT_ENROLLED_BYTES, len);
	me = fl_slot_get(st->slot);
	tp = bpf_skc_to_tcp_sock(sk);
	if (!me || !tp)
		return fl_pass(NULL, FL_STAT_PASS_NOT_ENROLLED_BYTES, len);

	/* Kernel truth: every byte this socket ever queued to TCP advanced
	 * write_seq (the socket lock serialises this program per socket). */
	wseq = tp->write_seq;
	moved = (__u32)(wseq - me->last_write_seq);
	me->tcp_sent += moved;
	me->last_write_seq = wseq;
	/* Bytes TCP carried that no verdict saw: sent before the socket
	 * joined the sockhash (pending, or waiting for its peer). Counted as
	 * passed here, once, so that "over TCP" is every byte. */
	if (moved > me->tcp_pending) {
		fl_count(FL_STAT_PASSED_BYTES, moved - me->tcp_pending);
		fl_count(FL_STAT_PASS_NOT_ENROLLED_BYTES, moved - me->tcp_pending);
	}
	me->tcp_pending = 0;

	/* The redirect path does not check SEND_SHUTDOWN (a write after
	 * shutdown(SHUT_WR) would be delivered); TCP's path fails it with
	 * EPIPE and SIGPIPE, as the application expects. */
	if (tp->inet_conn.icsk_inet.sk.sk_shutdown & FL_SEND_SHUTDOWN) {
		fl_pass(me, FL_STAT_PASS_SHUTDOWN_BYTES, len);
		me->tcp_pending = 0; /* TCP refuses it: nothing will be sent */
		return SK_PASS;
	}
	if (me->flags & FL_SLOT_SEND_TCP)
		return fl_pass(me, FL_STAT_PASS_UNSUPPORTED_BYTES, len);
	peer = fl_peer_slot(me, st);
	if (!peer)
		return fl_pass(me, FL_STAT_PASS_NO_PEER_BYTES, len);
	/* A peer that has not joined the sockhash yet cannot be redirected to;
	 * one that joined while another fd or process held its socket may have
	 * a reader asleep in TCP's recvmsg, which would never see the bytes. */
	if (!(peer->flags & FL_SLOT_RX_READY))
		return fl_pass(me, (peer->flags & FL_SLOT_JOINED) ? FL_STAT_PASS_PEER_SHARED_BYTES :
				   FL_STAT_PASS_NO_PEER_BYTES, len);
	if (peer->flags & FL_SLOT_BLIND)
		return fl_pass(me, FL_STAT_PASS_BLIND_BYTES, len);
	if (peer->flags & FL_SLOT_RCV_SHUT)
		return fl_pass(me, FL_STAT_PASS_SHUTDOWN_BYTES, len);

	/* consumed only lags the truth (the shim adds after each read), so
	 * unread can only be overestimated: the safe direction. */
	sent = me->tcp_sent + me->redirected;
	consumed = peer->consumed & FL_CONSUMED_MASK;
	if (consumed > sent)
		return fl_pass(me, FL_STAT_PASS_GATE_BYTES, len); /* cannot be: stay safe */
	unread = sent - consumed;
	/* The gate: redirected bytes must not overtake unread ones. */
	if (me->dir != FL_DIR_REDIRECT && unread)
		return fl_pass(me, FL_STAT_PASS_GATE_BYTES, len);
	/*
	 * Flow control, even for a message that finds nothing unread: the
	 * budget leaves TCP room in the reader's receive memory, which the
	 * redirected bytes share (the shim's fl_enroll_budget); one message
	 * larger than the budget (up to 17 pages of 32 KiB) would fill it,
	 * and the TCP segments after it would be dropped and retransmitted
	 * late. Redirect -> TCP is order-safe: the reader drains the
	 * redirected queue before it sees TCP data.
	 */
	if (unread + len > peer->budget) {
		if (me->dir == FL_DIR_REDIRECT)
			fl_count(FL_STAT_FLOW_FALLBACKS, 1);
		return fl_pass(me, FL_STAT_PASS_FLOW_BYTES, len);
	}
	if (me->dir != FL_DIR_REDIRECT) {
		fl_count(FL_STAT_GATE_OPENED, 1);
		if (me->redirected)
			fl_count(FL_STAT_GATE_REOPENED, 1); /* back after a fallback */
	}

	/*
	 * IMPORTANT: the bytes are counted as redirected, with a locked add (a
	 * full barrier), before the last look at the peer's flags. A shim that
	 * takes its socket off the fast path (unenroll, enroll.c) sets BLIND
	 * with a locked or and then reads this counter: either it sees these
	 * bytes, or this program sees BLIND. So no redirect can be in flight
	 * towards a socket that leaves the sockhash.
	 */
	__sync_fetch_and_add(&me->redirected, len);
	if (*(volatile __u32 *)&peer->flags & (FL_SLOT_BLIND | FL_SLOT_RCV_SHUT)) {
		__sync_fetch_and_add(&me->redirected, -len);
		return fl_pass(me, FL_STAT_PASS_BLIND_BYTES, len);
	}
	peer_key = st->peer;
	if (bpf_msg_redirect_hash(msg, &fl_sockhash, &peer_key, BPF_F_INGRESS) != SK_PASS) {
		__sync_fetch_and_add(&me->redirected, -len);
		return fl_pass(me, FL_STAT_PASS_NO_PEER_BYTES, len);
	}
	me->dir = FL_DIR_REDIRECT;
	me->dir_reason = 0;
	fl_count(FL_STAT_REDIRECTED_MSGS, 1);
	fl_count(FL_STAT_REDIRECTED_BYTES, len);
	return SK_PASS;
}

/* ------------------------------------------------------------- holders */

extern void *bpf_cast_to_kern_ctx(void *obj) __ksym;

/* The kernel before 6.13 counted a file's references in f_count. */
struct file___f_count {
	atomic_long_t f_count;
} __attribute__((preserve_access_index));

/*
 * References to a file. IMPORTANT: since Linux 6.13 ("fs: add file_ref")
 * the count is a file_ref_t whose value is the count minus one (0: one
 * reference); before, f_count held the count itself.
 */
static __always_inline __u64 fl_file_refs(struct file *f)
{
	if (bpf_core_field_exists(f->f_ref))
		return (__u64)BPF_CORE_READ(f, f_ref.refcnt.counter) + 1;
	return (__u64)BPF_CORE_READ((struct file___f_count *)f, f_count.counter);
}

/*
 * getsockopt(fd, FL_SOL_FASTLOCAL, FL_SO_HOLDERS, &struct fl_holders): runs
 * after the kernel's own handler, which refused the unknown level. The
 * asking call itself holds a reference exactly when its fd table is shared
 * (fdget in a multi-threaded process takes one; a single-threaded one
 * borrows the table's): then files->count > 1. That count can only be
 * wrong in the safe direction (a thread that exits meanwhile makes the
 * answer "shared").
 */
SEC("cgroup/getsockopt")
int fl_holders(struct bpf_sockopt *ctx)
{
	struct bpf_sockopt_kern *kctx;
	struct fl_holders *out;
	struct task_struct *task;
	struct socket *sock;
	struct file *file;
	struct sock *sk;

	if (ctx->level != FL_SOL_FASTLOCAL || ctx->optname != FL_SO_HOLDERS)
		return 1;
	out = ctx->optval;
	if ((void *)(out + 1) > ctx->optval_end)
		return 1; /* too small: the kernel's ENOPROTOOPT stands */
	kctx = bpf_cast_to_kern_ctx(ctx);
	sk = kctx->sk;
	if (!sk)
		return 1;
	sock = sk->sk_socket;
	if (!sock)
		return 1;
	file = sock->file;
	if (!file)
		return 1;
	task = (struct task_struct *)bpf_get_current_task();
	out->file_refs = fl_file_refs(file);
	out->own_call = BPF_CORE_READ(task, files, count.counter) > 1;
	out->version = 1;
	ctx->optlen = sizeof(*out);
	ctx->retval = 0;
	return 1;
}
