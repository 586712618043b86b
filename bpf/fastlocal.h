/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fastlocal.h - the layouts that the BPF programs and user space share.
 *
 * This is the only place where a map key or value is defined. The BPF side
 * includes it after vmlinux.h, user space gets <linux/types.h>; both see the
 * same __u* types, and every struct is laid out with explicit padding so that
 * clang -target bpf and gcc agree byte for byte.
 *
 * docs/design.md explains the key, the ordering gate and flow control.
 */
#ifndef FASTLOCAL_H
#define FASTLOCAL_H

#ifndef __bpf__
#include <linux/types.h> /* the BPF side has these from vmlinux.h */
#endif

/* Bumped whenever a layout below changes; "fastlocal load" refuses to mix. */
#define FL_ABI_VERSION 8

#define FL_DEFAULT_PIN_DIR "/sys/fs/bpf/fastlocal"

/* Names of the pins inside the pin dir. */
#define FL_PIN_PROG_VERDICT "prog_verdict"
#define FL_PIN_PROG_SOCKOPS "prog_sockops"
#define FL_PIN_LINK_SOCKOPS "link_sockops"
#define FL_PIN_PROG_HOLDERS "prog_holders"
#define FL_PIN_LINK_HOLDERS "link_holders"
#define FL_PIN_MAP_SOCKHASH "map_sockhash"
#define FL_PIN_MAP_SK       "map_sk"
#define FL_PIN_MAP_SLOTS    "map_slots"
#define FL_PIN_MAP_SLOT_IDX "map_slot_index"
#define FL_PIN_MAP_STATS    "map_stats"
#define FL_PIN_MAP_USTATS   "map_ustats"
#define FL_PIN_MAP_META     "map_meta"
#define FL_PIN_MAP_ESTABLISHED "map_established"
#define FL_PIN_MAP_DOMAINS  "map_slot_domains"
#define FL_PIN_MAP_DOM_UID  "map_domain_uid"
#define FL_PIN_MAP_JOINED   "map_joined"

#define FL_SOCKHASH_MAX 65536
#define FL_SLOTS_MAX    65536
/* Nonce-keyed connection ends on this host (fl_established). LRU, and
 * preallocated (about 128 bytes an entry): a record is needed only between
 * an end's establishment and its peer's enrollment, so evicting the oldest
 * on a host with more connections costs nothing but the rare late enroller
 * (then TCP). */
#define FL_ESTABLISHED_MAX 65536

/*
 * The SYN option that carries a connection's nonce: an RFC 6994 experimental
 * option, kind 254, length 12: kind, length, the 16-bit ExID, the 64-bit
 * nonce (network order). The ExID is not IANA-assigned; it only has to be
 * unlikely to collide with another experiment on the same SYN.
 */
#define FL_TCPOPT_EXP     254
#define FL_TCPOPT_EXID    0xF10Cu
#define FL_TCPOPT_NONCE_LEN 12

/*
 * Slot domains (docs/security.md). Slots live in mmap-able arrays, one per
 * user: domain 0 is fl_slots, written by privileged shims (root, pinned
 * 0600); "fastlocal daemon" creates one array per other uid on its first
 * request and hands only that array to that uid's processes, so a user can
 * write only its own slots. The verdict and sockops reach every domain
 * through the outer map fl_slot_domains. A slot is named by a 32-bit
 * reference: the domain above FL_SLOT_IDX_BITS, the index in it below.
 *
 * FL_DOMAIN_SLOTS: the size of a user's domain, smaller than domain 0 to
 * bound what one uid makes the broker allocate (8192 x 64 B = 512 KiB);
 * FL_DOMAINS_MAX bounds the uids (127 x 512 KiB = 64 MiB at most).
 */
#define FL_SLOT_IDX_BITS 16
#define FL_DOMAINS_MAX   128
#define FL_DOMAIN_SLOTS  8192
#define FL_SLOT_REF(dom, idx) (((__u32)(dom) << FL_SLOT_IDX_BITS) | (__u32)(idx))
#define FL_SLOT_DOM(ref)      ((__u32)(ref) >> FL_SLOT_IDX_BITS)
#define FL_SLOT_IDX(ref)      ((__u32)(ref) & ((1u << FL_SLOT_IDX_BITS) - 1))

/*
 * struct fl_key - names one end of one TCP connection.
 *
 * IMPORTANT: the key proves that two sockets are the two ends of ONE
 * connection. scope is the network-namespace cookie when either address is
 * loopback (such a connection never leaves its namespace, and both ends are
 * in it), and otherwise the connection's random 64-bit nonce, which the
 * active end's sockops put in its SYN and the passive end's read from it: a
 * value only the two ends of that handshake hold. With the 4-tuple it makes
 * the key unique among live sockets; the pair of initial sequence numbers
 * makes a match between unrelated connections impossible even when
 * everything else repeats (docs/design.md section 1). Addresses are 16
 * bytes, IPv4 stored IPv4-mapped, network order; ports host order. The peer
 * of (s, L, R, a, b) is (s, R, L, b, a).
 */
struct fl_key {
	__u64 scope; /* netns cookie (loopback) or the SYN nonce (any other address) */
	__u32 local_ip[4];
	__u32 remote_ip[4];
	__u16 local_port;
	__u16 remote_port;
	__u32 snd_isn; /* this end's initial sequence number */
	__u32 rcv_isn; /* the other end's */
	__u32 pad;     /* always zero: the whole struct is hashed */
};

/*
 * struct fl_sk - per-socket identity, in the SK_STORAGE map fl_sk.
 *
 * Written by the sockops program when the connection is established (the
 * ISNs) and once by the shim that enrolls the socket (keys, slot), before the
 * socket enters the sockhash. Read by the verdict program on every message.
 */
struct fl_sk {
	__u32 snd_isn;
	__u32 rcv_isn;
	__u32 flags;       /* FL_SK_* */
	__u32 slot;        /* slot reference (FL_SLOT_REF), valid with FL_SK_ENROLLED */
	__u64 cookie;      /* socket cookie, the owner tag of the slot */
	/* sockops: this connection's nonce (0: none), made at connect() by the
	 * active end, read from the SYN by the passive end */
	__u64 nonce;
	struct fl_key key; /* this end */
	struct fl_key peer; /* the other end */
};

#define FL_SK_ISN      (1u << 0) /* snd_isn/rcv_isn recorded at establishment */
#define FL_SK_ENROLLED (1u << 1) /* key/peer/slot/cookie valid; in the sockhash */
#define FL_SK_ACTIVE   (1u << 2) /* this end called connect() */
/* The shim left this connection on TCP because the configuration says so
 * (FASTLOCAL=0): sockops counts its TCP bytes when it closes. */
#define FL_SK_OFF      (1u << 3)

/*
 * struct fl_slot - one enrolled socket's live counters, in the mmap-able
 * array fl_slots, so that shims update them with plain memory operations.
 * One cache line. Each field has exactly one kind of writer:
 */
struct fl_slot {
	/* shim: CAS 0 -> cookie to allocate; sockops: 0 when the socket dies */
	__u64 owner;
	/* shim: bytes the owner's application has read, all paths, in the low
	 * FL_CONSUMED_BITS; the slot's generation above, so that a late
	 * update meant for a previous owner is refused (CAS). */
	__u64 consumed;
	/* shim: the receive budget: at most this many redirected bytes unread */
	__u32 budget;
	/* shim: FL_SLOT_* */
	__u32 flags;
	/* verdict (owner's own messages): bytes handed to TCP, kernel truth
	 * from write_seq; bytes redirected; the write_seq last seen */
	__u64 tcp_sent;
	__u64 redirected;
	__u32 last_write_seq;
	/* verdict: FL_DIR_* of owner -> peer, and the peer's slot reference
	 * + 1 (0: not found yet) with the owner tag it had when found */
	__u16 dir;
	__u16 dir_reason;
	__u32 peer_slot;
	/* verdict: the last message it passed to TCP, not yet in tcp_sent
	 * (write_seq moves after the program); only "fastlocal conns" reads it */
	__u32 tcp_pending;
	__u64 peer_owner;
};

#define FL_CONSUMED_BITS 48
#define FL_CONSUMED_MASK ((1ULL << FL_CONSUMED_BITS) - 1)

/* The owner reads through a path the shim cannot count (splice, a socket
 * option TCP honours and the redirect path does not): the gate stays shut. */
#define FL_SLOT_BLIND (1u << 0)
/* The owner sends with a feature the redirect path lacks (MSG_ZEROCOPY
 * completions, docs/kernel.md#zerocopy): its messages go over TCP. */
#define FL_SLOT_SEND_TCP (1u << 1)
/* The owner shut down reading (SHUT_RD): bytes for it go over TCP, which
 * answers them with a reset as it does for any socket that stopped reading. */
#define FL_SLOT_RCV_SHUT (1u << 2)
/* The owner's socket is in the sockhash (set by its enroller right after
 * the insert; until then bytes for it pass as peer_not_enrolled). */
#define FL_SLOT_JOINED (1u << 3)
/* Redirects into the owner's socket are safe: it is in the sockhash and,
 * when it joined, nothing but the enrolling fd held it, so no reader can be
 * asleep in TCP's own recvmsg, which never sees redirected bytes
 * (docs/design.md "Shared sockets"). Set once, never cleared. */
#define FL_SLOT_RX_READY (1u << 4)
/* The socket left the sockhash while another process still held it: that
 * process's shim still names this slot (the slot and the records stay until
 * the socket dies); its paths that assume tcp_bpf's (FIONREAD, the reset
 * at close) must not apply. Set with BLIND and SEND_TCP, never cleared. */
#define FL_SLOT_LEFT (1u << 5)

enum fl_dir {
	FL_DIR_TCP = 0,      /* gate shut: messages go over TCP */
	FL_DIR_REDIRECT = 1, /* messages go straight to the peer's queue */
};

/* Value of fl_slot_index: where the socket with that key keeps its slot,
 * and who enrolled it (for "fastlocal conns"; the programs ignore those). */
struct fl_slot_ref {
	__u32 slot;         /* slot reference (FL_SLOT_REF) */
	__u32 pid;          /* the process that enrolled it */
	__u64 owner;        /* the socket cookie, to detect a slot reused since */
	__u64 enrolled_ns;  /* CLOCK_REALTIME at enrollment */
	char comm[16];      /* that process's name then (PR_GET_NAME) */
	__u32 sk_flags;     /* FL_SK_ACTIVE if this end called connect() */
	__u32 pad;
};

/*
 * Counters of the verdict and sockops programs, in the per-CPU map fl_stats
 * (one element; user space sums the CPUs). Indexes are stable: new counters
 * are appended, never renumbered.
 */
enum fl_stat {
	FL_STAT_REDIRECTED_MSGS = 0,
	FL_STAT_REDIRECTED_BYTES = 1,
	FL_STAT_PASSED_MSGS = 2,
	FL_STAT_PASSED_BYTES = 3,
	/* bytes passed to TCP, by reason */
	FL_STAT_PASS_NOT_ENROLLED_BYTES = 4, /* sender has no enrollment record, or sent them before it joined */
	FL_STAT_PASS_NO_PEER_BYTES = 5,      /* the other end is not enrolled */
	FL_STAT_PASS_GATE_BYTES = 6,         /* ordering gate shut: TCP bytes unread */
	FL_STAT_PASS_FLOW_BYTES = 7,         /* peer's budget of unread bytes full */
	FL_STAT_PASS_BLIND_BYTES = 8,        /* peer reads through a path we cannot see */
	FL_STAT_GATE_OPENED = 9,             /* TCP -> redirect transitions */
	FL_STAT_FLOW_FALLBACKS = 10,         /* redirect -> TCP for flow control */
	FL_STAT_ISN_RECORDED = 11,           /* sockops: connections seen established */
	FL_STAT_SLOTS_FREED = 12,            /* sockops: slots released at close */
	FL_STAT_PASS_UNSUPPORTED_BYTES = 13, /* sender uses a feature only TCP has */
	FL_STAT_PASS_SHUTDOWN_BYTES = 14,    /* sender or receiver shut down that direction */
	FL_STAT_PASS_CONFIG_BYTES = 15,      /* sockops, at close: bytes of connections the
					      * configuration left on TCP (FL_SK_OFF) */
	/* sockops, the SYN nonce (docs/design.md section 1) */
	FL_STAT_NONCE_SENT = 16,             /* SYNs sent carrying a nonce */
	FL_STAT_NONCE_NO_ROOM = 17,          /* SYNs with no room left for the option */
	FL_STAT_NONCE_RECEIVED = 18,         /* passive ends that read a nonce from their SYN */
	FL_STAT_NONCE_MISSING = 19,          /* passive ends of non-loopback connections whose
					      * SYN had none (syncookies, stripped, listener
					      * older than the load) */
	/* 20-23: reserved for the broker's counters */
	FL_STAT_PASS_PEER_SHARED_BYTES = 24, /* the peer joined, but another fd or process
					      * held its socket: a reader may wait in TCP */
	FL_STAT_GATE_REOPENED = 25,          /* TCP -> redirect transitions of a direction
					      * that had redirected before: it came back
					      * after a fallback */
	FL_STAT__NR,
};
#define FL_STAT_SLOTS 64

struct fl_stats {
	__u64 c[FL_STAT_SLOTS];
};

/*
 * Counters of the shims, in the mmap-able array fl_ustats: one element that
 * every shim adds to atomically. Fallbacks at enrollment, by reason.
 */
enum fl_ustat {
	FL_USTAT_ENROLLED = 0,          /* sockets enrolled */
	FL_USTAT_FB_DISABLED = 1,       /* FASTLOCAL=0 */
	FL_USTAT_FB_NOT_LOCAL = 2,      /* peer is not on this host */
	FL_USTAT_FB_NO_ISN = 3,         /* established before load, or no sockops */
	FL_USTAT_FB_ODD_SOCKET = 4,     /* SO_RCVLOWAT, not TCP, ... */
	FL_USTAT_FB_NO_SLOT = 5,        /* every slot taken */
	FL_USTAT_FB_EOPNOTSUPP = 6,     /* the kernel refused the insert, by errno */
	FL_USTAT_FB_EBUSY = 7,
	FL_USTAT_FB_ENOMEM = 8,
	FL_USTAT_FB_EEXIST = 9,
	FL_USTAT_FB_OTHER = 10,
	FL_USTAT_BLIND = 11,            /* sockets marked blind after enrollment */
	FL_USTAT_THROTTLED = 12,        /* writes that waited for the reader */
	FL_USTAT_SPLICE_EMULATED = 13,  /* bytes splice()d out of an enrolled socket by the shim */
	/* Batching (tx.c): flushes of buffered bytes, by what triggered them */
	FL_USTAT_FLUSH_FULL = 14,        /* the buffer reached the flush size */
	FL_USTAT_FLUSH_READER_IDLE = 15, /* the reader had caught up */
	FL_USTAT_FLUSH_WAIT = 16,        /* the process was about to wait (read, poll, ...) */
	FL_USTAT_FLUSH_CLOSE = 17,       /* close, shutdown, exit, exec, fork */
	FL_USTAT_FLUSH_TIMER = 18,       /* the flusher thread, after the bounded delay */
	FL_USTAT_FLUSH_OPTION = 19,      /* TCP_NODELAY set, TCP_CORK cleared, MSG_MORE ended */
	FL_USTAT_FLUSH_WRITE = 20,       /* a write that could not wait took them along */
	FL_USTAT_BATCH_BYTES = 21,       /* bytes those flushes handed to the kernel */
	FL_USTAT_BATCH_WRITES = 22,      /* application writes those bytes came from */
	FL_USTAT_UNENROLLED = 23,        /* sockets that left the fast path (SO_RCVLOWAT, ...) */
	FL_USTAT_FB_EXCLUDED = 24,       /* kept on TCP by a port/address rule (configuration) */
	FL_USTAT_BROKER_ENROLLED = 25,   /* of FL_USTAT_ENROLLED: by "fastlocal daemon" for an
					  * unprivileged process */
	FL_USTAT_FB_NO_NONCE = 26,       /* a non-loopback connection without a SYN nonce */
	FL_USTAT_FB_SHARED = 27,         /* enrollment put off: another fd, thread or process
					  * held the socket (counted once per socket) */
	FL_USTAT_RX_NOT_READY = 28,      /* joined while another holder or a read in flight
					  * could not be ruled out: the peer's bytes stay on
					  * TCP until a later check passes */
	FL_USTAT_RX_READY_LATE = 29,     /* ... and such a later check passed */
	FL_USTAT_NAGLE_PUSHES = 30,      /* multi-page writes sent over TCP whose tail the shim
					  * pushed (tcp_bpf's per-page pushes vs Nagle) */
	FL_USTAT_GATE_HOLDS = 31,        /* a blocking write waited for its reader to read every
					  * byte sent over TCP, so that the gate could reopen */
	FL_USTAT_GATE_HOLDS_OPENED = 32, /* ... and the reader caught up within the hold */
	FL_USTAT_SENDFILE_COPIED = 33,   /* sendfile() ranges read into the send buffer, to reach
					  * the reader with the bytes it held as one message */
	FL_USTAT_UNPAIRED_LEFT = 34,     /* of FL_USTAT_UNENROLLED: those whose peer the verdict
					  * never found (preload/enroll/unpaired.c: it never enrolled) */
	FL_USTAT_HANDED_OFF = 35,        /* a thread about to wait left a batch to the thread
					  * writing it (preload/tx/tx_flush.c, fl_tx_hand_off) */
	FL_USTAT_SPIN_LOOKS = 36,        /* a wait found nothing at once and looked before it
					  * slept (preload/base/spin.h) */
	FL_USTAT_SPIN_FOUND = 37,        /* ... and the look found its answer: a sleep saved */
	FL_USTAT_CLOSE_LINGERED = 38,    /* close()s that returned at once while the bytes they
					  * left waited for room (preload/tx/linger.h) */
	FL_USTAT_CLOSE_WAITED = 39,      /* close()s that waited for room instead (FL_LINGER_MAX
					  * sockets lingering already) */
	FL_USTAT_CLOSE_RESET = 40,       /* close()s under a zero SO_LINGER: the bytes the kernel
					  * had no room for were dropped, as TCP's reset drops its
					  * queue (preload/tx/tx.c, fl_tx_linger) */
	FL_USTAT_PEER_WAITS = 41,        /* an accepting end found its peer not in the sockhash
					  * and waited for it instead of enrolling alone
					  * (struct fl_joined; counted once per socket) */
	FL_USTAT_PEER_CAME = 42,         /* ... and its peer joined later: it enrolled then */
	FL_USTAT_SERVER_WAITS = 43,      /* a connecting end found no accepting end under the
					  * shim on its server's port, nor its peer in the
					  * sockhash, and waited instead of enrolling alone
					  * (struct fl_joined, listening; once per socket) */
	FL_USTAT_SERVER_CAME = 44,       /* ... and such an end came later: it enrolled then */
	FL_USTAT__NR,
};
#define FL_USTAT_SLOTS 64

struct fl_ustats {
	__u64 c[FL_USTAT_SLOTS];
};

/*
 * struct fl_joined - the value of fl_joined (one entry, mmap-able): a
 * counter per bucket of keys, bumped by whoever inserts a socket into the
 * sockhash (the shim or the broker, common/enroll_core.c) at the bucket of
 * the key its peer will have (fl_key_joined_idx(&st->peer)).
 *
 * IMPORTANT: an accepting end enrolls only once its peer is in the
 * sockhash, since an end enrolled alone pays tcp_bpf's send path for
 * nothing (docs/design.md, "A peer that never enrolls"). When the peer is
 * not there yet, it reads its own bucket's counter BEFORE it asks the
 * sockhash, and asks again only when the counter has moved: one load per
 * call instead of a system call. The inserter bumps AFTER its insert, so
 * either the lookup finds the peer or the counter moves later. A bucket
 * shared by another key only costs a needless look.
 */
#define FL_JOINED_BUCKETS 4096
#define FL_LISTEN_PORTS 65536
struct fl_joined {
	__u32 c[FL_JOINED_BUCKETS];
	/*
	 * IMPORTANT: a connecting end cannot wait for its peer the way an
	 * accepting one does (the accepting end waits for it), so it asks
	 * where its peer would come from: nonzero at a port once an accepting
	 * end under the shim has been seen there (a listen() of the shim, an
	 * accepting end's enrollment, the broker's insert of one;
	 * common/enroll_core.c). A connecting end whose server's port is zero
	 * here and whose peer is not in the sockhash waits on TCP, watching
	 * this byte and its own bucket of c (one load each per call), instead
	 * of joining alone and paying tcp_bpf's send path for a server
	 * without the shim (issue 14's one-sided case). Never cleared until
	 * the next load: a port whose server under the shim went away only
	 * lets its connecting ends join alone, as every one did before, and
	 * leave again (preload/enroll/unpaired.c).
	 */
	__u8 listening[FL_LISTEN_PORTS];
};

/*
 * Who holds a socket (docs/design.md "Shared sockets"). The cgroup
 * getsockopt program fl_holders answers getsockopt(fd, FL_SOL_FASTLOCAL,
 * FL_SO_HOLDERS) on any socket, for any caller, with struct fl_holders:
 * how many references the socket's file has (an fd in any process, a
 * system call in progress in a multi-threaded process, a poll wait, an
 * SCM_RIGHTS message in flight, io_uring), and whether the asking call
 * holds one of them itself. The level is no protocol's, so without the
 * program the call fails (ENOPROTOOPT) and the shim assumes "shared".
 */
#define FL_SOL_FASTLOCAL 0x464c4f43 /* "FLOC" */
#define FL_SO_HOLDERS    1

struct fl_holders {
	__u64 file_refs; /* references to the socket's struct file */
	__u32 own_call;  /* 1 if the asking call holds one (its fd table is shared) */
	__u32 version;   /* 1 */
};

/* Value of fl_domain_uid, written by "fastlocal daemon" only: which uid a
 * slot domain belongs to, so that a restarted daemon finds the domains it
 * created before. The programs never touch it. */
struct fl_domain {
	__u32 uid;
	__u32 used; /* 1 once the domain's array is in fl_slot_domains */
};

/*
 * struct fl_meta - written once by "fastlocal load" into the pinned meta map.
 * object_hash identifies the exact BPF object that was loaded, so that a
 * second load can tell "same object, nothing to do" from "different object".
 */
struct fl_meta {
	__u32 abi_version;
	__u32 features;     /* FL_META_*: what "fastlocal load" probed */
	__u64 object_hash;
	__u64 loaded_at_unix;
};
/* Probed once at load, before sockops is attached: the probe makes a
 * loopback connection that would otherwise show in the counters. */
#define FL_META_FIONREAD_PROBED (1u << 0) /* the FIONREAD probe gave an answer */
#define FL_META_FIONREAD_FIX    (1u << 1) /* ... and the kernel counts both queues */

#endif /* FASTLOCAL_H */
