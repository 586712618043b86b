/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * epoll_sets.h - the process's epoll instances, known by their fds.
 *
 * A socket leaves every epoll set it is in when its file is released,
 * which the application's close() of its last fd normally does. The shim
 * sometimes keeps the file open after that close (tx/linger.h): the
 * socket would stay in the application's epoll sets, reporting events
 * with the data of a connection the application has freed (nginx keeps a
 * pointer there and relies on close() to take the socket out). So the
 * shim remembers the epoll fds the process made (epoll_create,
 * epoll_create1, interposed) and takes the socket out of each of them
 * itself.
 */
#ifndef FL_EPOLL_SETS_H
#define FL_EPOLL_SETS_H

#include <stdbool.h>

/* epfd was just made by epoll_create or epoll_create1. Lock-free. */
void fl_epoll_sets_add(int epfd);

/* fd is being closed: if it was an epoll fd, forget it. Lock-free. */
void fl_epoll_sets_closed(int fd);

/* Takes fd (still open) out of every epoll set the process made. False
 * when the shim cannot know them all (more epoll fds at once than it
 * keeps): the caller must then not keep fd's file open. errno is kept. */
bool fl_epoll_sets_leave(int fd);

#endif
