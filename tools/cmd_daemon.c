// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cmd_daemon.c - "fastlocal daemon": the privileged broker that enrolls
 * sockets for processes that cannot open the root-only pins.
 *
 * Foreground, single-threaded: one request per connection, served as soon
 * as it arrives (broker_loop.c, broker_serve.c). SIGTERM/SIGINT remove the
 * socket and exit 0.
 * docs/security.md explains why a broker and not pin permissions.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "broker_loop.h"
#include "broker_serve.h"
#include "cli.h"
#include "cli_opts.h"
#include "sd_notify.h"

static const char fl_daemon_help[] =
	"Usage: fastlocal daemon [--socket PATH] [--pin-dir DIR]\n"
	"\n"
	"Runs the broker that lets processes which are not root be accelerated:\n"
	"their shim passes each socket over a unix socket, and the broker checks\n"
	"the caller (SO_PEERCRED) owns it before it enrolls it in the maps that\n"
	"only root can open. Each user gets slots of its own. Stays in the\n"
	"foreground; SIGTERM or SIGINT removes the socket and exits 0.\n"
	"\n"
	"  --socket PATH  listen here (default: $FASTLOCAL_BROKER, else\n"
	"                 /run/fastlocal/broker.sock); any local user may connect,\n"
	"                 every request is checked\n"
	"  --pin-dir DIR  the load to serve (default: $FASTLOCAL_PIN_DIR, else\n"
	"                 /sys/fs/bpf/fastlocal)\n"
	"  -h, --help     show this help\n"
	"\n"
	"Needs root, and 'fastlocal load' first. Shims find it through\n"
	"FASTLOCAL_BROKER (same default). Under systemd (Type=notify) it reports\n"
	"ready through $NOTIFY_SOCKET once it listens; docs/service.md.\n";

/* Owned by this file: set by the SIGTERM/SIGINT handler, read by the loop
 * (broker_loop.c). */
static volatile sig_atomic_t fl_daemon_stop;

static void fl_daemon_on_signal(int sig)
{
	(void)sig;
	fl_daemon_stop = 1;
}

/* Creates the socket's directory (0755) if it is missing. */
static int fl_mkdir_parent(const char *path, char *err, size_t errlen)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = 0;
	if (mkdir(dir, 0755) && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
		return -1;
	}
	return 0;
}

/* Listens on path (0666: every request is checked), replacing a stale
 * socket file but never a broker that still answers. */
static int fl_listen(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int s, probe;

	if (strlen(path) >= sizeof(a.sun_path) || path[0] != '/') {
		snprintf(err, errlen, "the socket path must be absolute and under %zu bytes: %s",
			 sizeof(a.sun_path), path);
		return -1;
	}
	memcpy(a.sun_path, path, strlen(path) + 1);
	if (fl_mkdir_parent(path, err, errlen))
		return -1;
	probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (probe >= 0 && !connect(probe, (struct sockaddr *)&a, sizeof(a))) {
		close(probe);
		snprintf(err, errlen, "another broker answers on %s", path);
		return -1;
	}
	if (probe >= 0)
		close(probe);
	if (unlink(path) && errno != ENOENT) {
		snprintf(err, errlen, "cannot remove the stale %s: %s", path, strerror(errno));
		return -1;
	}
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) || chmod(path, 0666) ||
	    listen(s, 128)) {
		snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(errno));
		if (s >= 0)
			close(s);
		return -1;
	}
	return s;
}

int cmd_daemon(int argc, char **argv)
{
	struct sigaction sa;
	struct fl_cli_opts o;
	struct fl_broker b;
	char err[512];
	int ret, s;

	ret = fl_cli_parse(argc, argv, fl_daemon_help, FL_OPT_SOCKET, &o);
	if (ret >= 0)
		return ret;
	if (geteuid() != 0) {
		fl_err("daemon", "needs root (it writes the maps only root may open)");
		return FL_EXIT_FAIL;
	}
	if (fl_broker_open(&b, &o.pd, err, sizeof(err))) {
		fl_err("daemon", "%s", err);
		return FL_EXIT_FAIL;
	}
	s = fl_listen(o.socket, err, sizeof(err));
	if (s < 0) {
		fl_err("daemon", "%s", err);
		fl_broker_close(&b);
		return FL_EXIT_FAIL;
	}
	/* No SA_RESTART: accept() returns EINTR and the loop sees the flag. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fl_daemon_on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	printf("fastlocal daemon: serving %s for %s\n", o.socket, o.pd.path);
	fflush(stdout);
	/* Ready means listening: a unit ordered after fastlocal.service may
	 * connect at once. A manager that cannot be told is only logged. */
	snprintf(err, sizeof(err), "READY=1\nSTATUS=serving %s for %s", o.socket, o.pd.path);
	if (fl_sd_notify(err) < 0)
		fl_err("daemon", "cannot notify $NOTIFY_SOCKET: %s", strerror(errno));
	fl_broker_loop(&b, s, &fl_daemon_stop);
	fl_sd_notify("STOPPING=1");
	unlink(o.socket);
	close(s);
	fl_broker_close(&b);
	return FL_EXIT_OK;
}
