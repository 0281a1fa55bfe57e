/* SPDX-License-Identifier: MIT */
/* anypoll_pipe's pipes (anypipe.c) and the descriptors anypoll_close and
 * anypoll_write must know of: process descriptors (spawn.c) and children's
 * stdin pipes (spawn_stdin.c). Included by win.h only. */
#ifndef ANYPOLL_ANYPIPE_H
#define ANYPOLL_ANYPIPE_H

/* anypipe.c: the anypoll_pipe read ends that a watch set holds, as
 * (descriptor, handle) pairs, counted (one per set). The rule that a
 * descriptor is deleted before it is closed keeps a noted pair valid, so
 * anypoll_read takes a noted one as asynchronous without asking the file
 * object (a query, and behind the gate a comparison with every read parked
 * on a synchronous pipe when the handle has company: the set's own
 * duplicate of it is that company). note: 0, or -1 when out of memory (the
 * pair is then asked about as any other). */
ANYPOLL__INTERNAL
int anypoll__anypipe_note(int fd, HANDLE h);
ANYPOLL__INTERNAL
void anypoll__anypipe_unnote(int fd, HANDLE h);
ANYPOLL__INTERNAL
int anypoll__anypipe_noted(int fd, HANDLE h);
/* The same pairs: anypoll_read reports each read it ends on one (n bytes
 * of len asked, or -1), and a set asks whether a read has ended since it
 * last asked (*seen, its own count) and the last one left the pipe empty:
 * then the set's zero-byte read alone can tell when data comes, and the
 * query before it would only say "nothing yet" (set_anypipe.c). A hint:
 * data written since makes the zero-byte read end at once, and the set
 * checks the pipe then, so a wrong hint costs requests, never a report. */
ANYPOLL__INTERNAL
void anypoll__anypipe_read_done(int fd, HANDLE h, int n, unsigned len);
ANYPOLL__INTERNAL
int anypoll__anypipe_drained(int fd, HANDLE h, LONG *seen);
/* anypipe.c: a pipe of anypoll_pipe's kind, as two handles, neither
 * inheritable: a named pipe with a unique name whose server end reads (*rd)
 * and whose client end writes (*wr). write_async 0: the read end is opened
 * for overlapped I/O and the write end is synchronous (anypoll_pipe, the
 * child's stdout and stderr, the process descriptor); 1: the other way
 * round (a child's stdin: the parent's write end overlapped, the child's
 * read end synchronous). 0, or -1 with errno. */
ANYPOLL__INTERNAL
int anypoll__anypipe_make(HANDLE *rd, HANDLE *wr, int write_async);
/* spawn.c, for anypoll_close (rw.c): when fd is a process descriptor,
 * releases what stands behind it (the thread-pool wait, the process
 * handle, the pipe's write end; never the child itself) and leaves the
 * descriptor to be closed as any other. */
ANYPOLL__INTERNAL
void anypoll__spawn_release(int fd);
/* spawn_stdin.c: the parent's ends of children's stdin pipes. register:
 * at spawn (0, or -1 and errno). write: anypoll_write on (fd, h) when it is
 * one (returns 1, the result in *result), else 0. busy: a write of ours is
 * pending on h (the pipe is full: no POLLOUT). release: at anypoll_close,
 * before the descriptor closes; a pending write is still delivered. */
ANYPOLL__INTERNAL
int anypoll__stdin_register(int fd, HANDLE h);
ANYPOLL__INTERNAL
int anypoll__stdin_write(int fd, HANDLE h, const void *buf, unsigned len,
                         int *result);
ANYPOLL__INTERNAL
int anypoll__stdin_busy(HANDLE h);
ANYPOLL__INTERNAL
void anypoll__stdin_release(int fd);
/* anypipe.c: the name prefix of anypoll_pipe's pipes. */
#define ANYPOLL__ANYPIPE_PREFIX L"\\\\.\\pipe\\anypoll-pipe-"

#endif /* ANYPOLL_ANYPIPE_H */
