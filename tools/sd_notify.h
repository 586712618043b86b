/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* sd_notify.h - telling a service manager the daemon's state ($NOTIFY_SOCKET). */
#ifndef FL_SD_NOTIFY_H
#define FL_SD_NOTIFY_H

/* Sends msg ("READY=1", "STOPPING=1", "STATUS=...", newline-separated) to
 * the datagram socket named by $NOTIFY_SOCKET. Returns 1 if sent, 0 if no
 * manager asked for it (the variable is unset), -1 on error (errno set). */
int fl_sd_notify(const char *msg);

#endif
