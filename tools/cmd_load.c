// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cmd_load.c - "fastlocal load": open, load, attach, pin.
 *
 * Straight line: check privileges and kernel, make sure bpffs is mounted,
 * look at what is pinned already (same object: nothing to do), then load the
 * embedded object, attach the verdict program to the sockhash, sockops and
 * the holders hook to the cgroup2 root, and pin them all.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cli.h"
#include "cli_opts.h"
#include "object_id.h"
#include "pin_dir.h"
#include "pins.h"
#include "probe.h"
#include "fastlocal.skel.h"

static const char fl_load_help[] =
	"Usage: fastlocal load [--pin-dir DIR] [--replace] [--btf FILE]\n"
	"\n"
	"Loads the verdict program and its maps and pins them in the pin dir,\n"
	"mounting bpffs on /sys/fs/bpf first if nothing is mounted there.\n"
	"Loading again is a no-op when the same object is pinned already.\n"
	"\n"
	"  --pin-dir DIR  pin here (default: $FASTLOCAL_PIN_DIR, else /sys/fs/bpf/fastlocal)\n"
	"  --replace      replace pinned objects that differ from this build; sockets\n"
	"                 enrolled with the old objects keep them until they close\n"
	"  --btf FILE     kernel BTF to relocate against (default /sys/kernel/btf/vmlinux)\n"
	"  -h, --help     show this help\n"
	"\n"
	"Needs root (CAP_BPF and CAP_NET_ADMIN; CAP_SYS_ADMIN to mount bpffs).\n";

/* object_id.h: FNV-1a over the embedded object. */
__u64 fl_object_hash(void)
{
	size_t sz, i;
	const unsigned char *p = fastlocal_bpf__elf_bytes(&sz);
	__u64 h = 0xcbf29ce484222325ULL;

	for (i = 0; i < sz; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* libbpf prints its own diagnostics; keep them unless they are noise. */
static int fl_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int fl_pin_all(struct fastlocal_bpf *skel, struct bpf_link *sockops_link,
		      struct bpf_link *holders_link, const struct fl_pin_dir *pd, char *err,
		      size_t errlen)
{
	int fds[FL_PIN__NR] = {
		[FL_PIN_META] = bpf_map__fd(skel->maps.fl_meta),
		[FL_PIN_STATS] = bpf_map__fd(skel->maps.fl_stats),
		[FL_PIN_USTATS] = bpf_map__fd(skel->maps.fl_ustats),
		[FL_PIN_JOINED] = bpf_map__fd(skel->maps.fl_joined),
		[FL_PIN_SLOTS] = bpf_map__fd(skel->maps.fl_slots),
		[FL_PIN_SLOT_INDEX] = bpf_map__fd(skel->maps.fl_slot_index),
		[FL_PIN_DOMAINS] = bpf_map__fd(skel->maps.fl_slot_domains),
		[FL_PIN_DOM_UID] = bpf_map__fd(skel->maps.fl_domain_uid),
		[FL_PIN_SK] = bpf_map__fd(skel->maps.fl_sk),
		[FL_PIN_SOCKHASH] = bpf_map__fd(skel->maps.fl_sockhash),
		[FL_PIN_ESTABLISHED] = bpf_map__fd(skel->maps.fl_established),
		[FL_PIN_VERDICT] = bpf_program__fd(skel->progs.fl_verdict),
		[FL_PIN_SOCKOPS] = bpf_program__fd(skel->progs.fl_sockops),
		[FL_PIN_SOCKOPS_LINK] = bpf_link__fd(sockops_link),
		[FL_PIN_HOLDERS] = bpf_program__fd(skel->progs.fl_holders),
		[FL_PIN_HOLDERS_LINK] = bpf_link__fd(holders_link),
	};
	char path[512];
	int i;

	for (i = 0; i < FL_PIN__NR; i++) {
		if (fl_pin_path(path, sizeof(path), pd, fl_pin_names[i]) ||
		    bpf_obj_pin(fds[i], path)) {
			snprintf(err, errlen, "cannot pin %s: %s", path, strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* Features that are only probed by doing (see FL_META_*), recorded so that
 * "status" need not make connections of its own under a loaded sockops. */
static void fl_meta_probe(struct fl_meta *meta)
{
	char ignored[256];
	int fix = fl_probe_fionread(ignored, sizeof(ignored));

	if (fix >= 0)
		meta->features |= FL_META_FIONREAD_PROBED | (fix ? FL_META_FIONREAD_FIX : 0);
}

int cmd_load(int argc, char **argv)
{
	LIBBPF_OPTS(bpf_object_open_opts, open_opts);
	struct fastlocal_bpf *skel = NULL;
	struct fl_pins pins = { .fd = { [0 ... FL_PIN__NR - 1] = -1 } };
	struct bpf_link *sockops_link = NULL, *holders_link = NULL;
	char cgroup[256];
	int cgroup_fd = -1;
	struct fl_cli_opts o;
	struct fl_pin_dir *pd = &o.pd;
	struct fl_meta meta = { .abi_version = FL_ABI_VERSION };
	char err[512];
	int lock_fd = -1, ret;
	__u32 zero = 0;

	ret = fl_cli_parse(argc, argv, fl_load_help, FL_OPT_REPLACE | FL_OPT_BTF, &o);
	if (ret >= 0)
		return ret;
	ret = FL_EXIT_FAIL;

	if (fl_probe_load_privileges(err, sizeof(err)) ||
	    fl_probe_btf(o.btf, err, sizeof(err)) ||
	    fl_probe_sockmap(err, sizeof(err)) ||
	    fl_pin_dir_prepare(pd, err, sizeof(err)))
		goto fail;

	/* Two loads at once must not interleave their pins. */
	lock_fd = open(pd->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lock_fd < 0 || flock(lock_fd, LOCK_EX)) {
		snprintf(err, sizeof(err), "cannot lock %s: %s", pd->path, strerror(errno));
		goto fail;
	}

	meta.object_hash = fl_object_hash();
	if (fl_pins_open(&pins, pd, err, sizeof(err)))
		goto fail;
	if (pins.state == FL_PINS_PRESENT && pins.meta.abi_version == FL_ABI_VERSION &&
	    pins.meta.object_hash == meta.object_hash) {
		printf("fastlocal: already loaded in %s (program id %u); nothing to do\n", pd->path,
		       fl_prog_id(pins.fd[FL_PIN_VERDICT], NULL));
		ret = FL_EXIT_OK;
		goto out;
	}
	if (pins.state != FL_PINS_NONE && !o.replace) {
		/* Another version's pins (an upgrade) differ in number too: not
		 * an interrupted load. */
		bool other_abi = pins.meta.abi_version && pins.meta.abi_version != FL_ABI_VERSION;

		snprintf(err, sizeof(err), "%s holds %s (abi %u, object %016llx, this build: abi %d, "
			 "object %016llx); 'fastlocal load --replace' replaces it",
			 pd->path, other_abi ? "the load of another fastlocal version" :
			 pins.state == FL_PINS_PARTIAL ? "an incomplete load" :
			 "a different fastlocal object", pins.meta.abi_version,
			 (unsigned long long)pins.meta.object_hash, FL_ABI_VERSION,
			 (unsigned long long)meta.object_hash);
		goto fail;
	}

	fl_meta_probe(&meta);
	libbpf_set_print(fl_libbpf_print);
	open_opts.btf_custom_path = o.btf;
	skel = fastlocal_bpf__open_opts(&open_opts);
	if (!skel) {
		snprintf(err, sizeof(err), "cannot open the BPF object: %s", strerror(errno));
		goto fail;
	}
	if (fastlocal_bpf__load(skel)) {
		snprintf(err, sizeof(err), "the kernel refused the BPF program: %s", strerror(errno));
		goto fail;
	}
	if (bpf_prog_attach(bpf_program__fd(skel->progs.fl_verdict),
			    bpf_map__fd(skel->maps.fl_sockhash), BPF_SK_MSG_VERDICT, 0)) {
		snprintf(err, sizeof(err), "cannot attach the verdict program to the sockhash: %s",
			 strerror(errno));
		goto fail;
	}
	/* Sockops at the cgroup2 root sees every TCP connection of the host
	 * (or of the cgroup namespace): it records the ISNs the keys need. */
	cgroup_fd = fl_cgroup2_root(cgroup, sizeof(cgroup), err, sizeof(err));
	if (cgroup_fd < 0)
		goto fail;
	sockops_link = bpf_program__attach_cgroup(skel->progs.fl_sockops, cgroup_fd);
	if (!sockops_link) {
		snprintf(err, sizeof(err), "cannot attach sockops to the cgroup2 root %s: %s", cgroup,
			 strerror(errno));
		goto fail;
	}
	/* The getsockopt hook the shims ask before they let bytes be
	 * redirected into a socket: whether anyone else holds it. */
	holders_link = bpf_program__attach_cgroup(skel->progs.fl_holders, cgroup_fd);
	if (!holders_link) {
		snprintf(err, sizeof(err), "cannot attach the getsockopt hook to the cgroup2 root %s: %s",
			 cgroup, strerror(errno));
		goto fail;
	}
	meta.loaded_at_unix = (__u64)time(NULL);
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.fl_meta), &zero, &meta, BPF_ANY)) {
		snprintf(err, sizeof(err), "cannot write the meta map: %s", strerror(errno));
		goto fail;
	}
	if (pins.state != FL_PINS_NONE && fl_pins_remove(pd, 1, err, sizeof(err)) < 0)
		goto fail;
	if (fl_pin_all(skel, sockops_link, holders_link, pd, err, sizeof(err))) {
		char ignored[256];

		fl_pins_remove(pd, 1, ignored, sizeof(ignored)); /* no half-pinned state */
		goto fail;
	}
	printf("fastlocal: %s in %s (program id %u)\n", pins.state == FL_PINS_NONE ? "loaded" :
	       "replaced", pd->path, fl_prog_id(bpf_program__fd(skel->progs.fl_verdict), NULL));
	ret = FL_EXIT_OK;
	goto out;
fail:
	fl_err("load", "%s", err);
out:
	/* The pins keep the objects alive; the link pin keeps sockops attached. */
	bpf_link__destroy(sockops_link);
	bpf_link__destroy(holders_link);
	if (cgroup_fd >= 0)
		close(cgroup_fd);
	fastlocal_bpf__destroy(skel);
	fl_pins_close(&pins);
	if (lock_fd >= 0)
		close(lock_fd);
	return ret;
}
