/* SPDX-License-Identifier: MIT */
/* anypoll: one poll() that behaves the same on Linux and Windows, on every
 * kind of descriptor, and never busy-waits.
 *
 * This is the whole public interface. Everything else in the library is
 * internal and not exported.
 */
#ifndef ANYPOLL_H
#define ANYPOLL_H

#ifdef _WIN32
/* struct pollfd and the POLL* constants come from <winsock2.h>, which only
 * declares them for Windows Vista and later. */
#  if defined(_WIN32_WINNT) && _WIN32_WINNT < 0x0600
#    error "anypoll needs _WIN32_WINNT >= 0x0600 (struct pollfd in <winsock2.h>)"
#  endif
/* A program that included <windows.h> first (without WIN32_LEAN_AND_MEAN)
 * has winsock 1's <winsock.h> already; mingw-w64's <winsock2.h> then still
 * works but warns, which would break -Werror builds of such programs.
 * tools/amalgamate.py copies these lines into the gnulib-ABI compat/poll.h,
 * which stands alone. */
#  if defined(_WINSOCKAPI_) && !defined(_WINSOCK2API_) && defined(__GNUC__)
#    pragma GCC diagnostic push
#    pragma GCC diagnostic ignored "-Wcpp"
#    include <winsock2.h>
#    pragma GCC diagnostic pop
#  else
#    include <winsock2.h>
#  endif
typedef ULONG anypoll_nfds_t;
#else
#  include <poll.h>
typedef nfds_t anypoll_nfds_t;
#endif

#if defined(_WIN32) && defined(ANYPOLL_SHARED_BUILD)
#  define ANYPOLL_EXTERN __declspec(dllexport)
#elif defined(_WIN32) && defined(ANYPOLL_SHARED)
#  define ANYPOLL_EXTERN __declspec(dllimport)
#elif defined(__GNUC__)
#  define ANYPOLL_EXTERN __attribute__((visibility("default")))
#else
#  define ANYPOLL_EXTERN
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define ANYPOLL_VERSION_MAJOR 0
#define ANYPOLL_VERSION_MINOR 1
#define ANYPOLL_VERSION_PATCH 0
#define ANYPOLL_VERSION_STRING "0.1.0"

/* anypoll_poll - wait for events on a set of descriptors.
 *
 * fds points to nfds entries of the platform's own struct pollfd. On POSIX,
 * fd is a file descriptor. On Windows, fd holds a C runtime descriptor (what
 * _pipe, _open, _fileno and _open_osfhandle return), although the field has
 * the SOCKET type of <winsock2.h>. An entry whose fd is negative (for
 * example -1, which on Windows is INVALID_SOCKET) is ignored and gets
 * revents 0.
 *
 * Windows: raw SOCKETs are not descriptors. A SOCKET value (what socket()
 * and accept() return, and what WSAPoll takes) stored in fd is read as a
 * descriptor number: POLLNVAL, or worse, some other open descriptor that
 * happens to have that number. Wrap each socket once, with
 * _open_osfhandle((intptr_t)sock, 0), and poll that descriptor; a port
 * from WSAPoll must do this for every socket it polls, and keep the
 * descriptor as long as it polls the socket.
 *
 * Windows: descriptors belong to one C runtime. Each C runtime (msvcrt.dll,
 * the UCRT, a static CRT) keeps its own descriptor table, and a descriptor
 * is only a number in one of them. The library reads descriptors through
 * the C runtime it was built with: the mingw-w64 builds, libanypoll.dll
 * included, use msvcrt.dll, so they see msvcrt's descriptors only. A
 * program built against another C runtime (MSVC and the UCRT, for one)
 * must compile anypoll into itself, from the static library built with its
 * own toolchain or from dist/anypoll.c, so that the library and the
 * program share one descriptor table.
 *
 * events selects POLLIN, POLLPRI and POLLOUT (and their RD/WR variants);
 * POLLERR, POLLHUP and POLLNVAL are reported in revents whether asked or not.
 *
 * timeout_ms: 0 checks and returns at once; a positive value waits at most
 * that many milliseconds (and never returns earlier, unless an event
 * arrives); a negative value waits until an event arrives.
 *
 * Returns the number of entries with a non-zero revents (0 on timeout),
 * leaving errno as it found it, or -1 with errno set to one of these (the
 * list is complete):
 *   EFAULT  fds is NULL and nfds > 0, or the nfds entries at fds are not
 *           all memory the program may read and write (on Windows checked
 *           with VirtualQuery; on POSIX reported by the kernel, except
 *           with the select backend, which faults).
 *   EINVAL  nfds exceeds the limit (the RLIMIT_NOFILE soft limit on POSIX,
 *           ANYPOLL_MAX_NFDS on Windows); with the select backend, also an
 *           open descriptor numbered FD_SETSIZE or higher.
 *   EINTR   a signal (POSIX) or a user APC (Windows) interrupted the wait.
 *   ENOMEM  resources for the wait could not be allocated.
 *   EAGAIN  a helper thread or kernel object could not be created, or
 *           (Windows) Winsock could not be started.
 *   EBADF   Windows only: the handle of a console entry was closed by
 *           another thread while the call was setting up its wait.
 *           Otherwise a descriptor that is not open is reported as
 *           POLLNVAL in its revents, never as EBADF.
 *   ENOSYS  Windows only: the system lacks a facility the library needs
 *           (entry points of ntdll.dll; the AFD driver, for sockets).
 *   EIO     Windows only: a system call failed in a way no errno above
 *           describes (the Win32 error has no closer errno).
 *
 * Windows, consoles: console input is readable as a terminal's is. In
 * line input mode (ENABLE_LINE_INPUT, the console's default) read()
 * returns only once Enter is typed, so POLLIN comes only with a complete
 * line, as in a terminal's canonical mode; without it, any character is
 * enough. Other character devices (COM ports and the like) are reported
 * always ready, as a regular file is, although a read on them may block
 * (docs/deviations.md).
 *
 * Thread safety: any number of threads may call anypoll_poll at once, also
 * on the same descriptors. */
ANYPOLL_EXTERN int anypoll_poll(struct pollfd *fds, anypoll_nfds_t nfds,
                                int timeout_ms);

/* The largest nfds the Windows backend accepts. */
#define ANYPOLL_MAX_NFDS (1UL << 20)

/* ---- The watch set ---------------------------------------------------------
 * An epoll-style set: a descriptor is registered once, and a wait reports
 * the registered descriptors that are ready. Backends: epoll on Linux; on
 * Windows one I/O completion port per set, each registration keeping its
 * own wake-up source armed across waits, so that a wait costs the same
 * whether 1 or 1000 idle descriptors are registered (see anypoll_set(3)
 * and docs/windows-design.md); elsewhere on POSIX a portable backend that
 * makes one anypoll_poll over every registered descriptor per wait.
 * anypoll_poll, which holds nothing across calls, must arm and disarm
 * every entry on every call.
 *
 * Level-triggered: a ready descriptor is reported by every wait until it
 * is no longer ready (ANYPOLL_ONESHOT: once, until anypoll_set_mod). Fair:
 * when more are ready than max, successive waits rotate, each ready one
 * (always-ready ones included) reported within ceil(ready / max) waits,
 * whatever wakes it (on Windows, entries that stay ready, such as files
 * and write ends with room, take turns with entries woken through the
 * port; anypoll_set(3)).
 * Threads: add, mod and del may run while other threads wait on the set,
 * and take effect in those waits; any number of threads may wait on one
 * set, a one-shot readiness goes to exactly one of them and a
 * level-triggered one to each. anypoll_set_free must not run while a
 * thread waits on the set.
 *
 * Data after del: as with epoll, a wait in another thread may return an
 * event of a descriptor whose del has already returned, with the data
 * given before. Free what data points to only once every thread that was
 * inside a wait at the del has returned from that wait (or del and free
 * in the waiting thread).
 *
 * POSIX threads: add, mod and del are not cancellation points (a
 * cancelled thread completes them); anypoll_set_wait is one, and a waiter
 * cancelled in it (deferred cancellation) leaves the set as if the wait
 * had returned 0.
 *
 * fork: the child shares the set's kernel objects with the parent (the
 * epoll instance; the portable backend's pipes) but not its tables. It
 * must not add, mod, del or wait on an inherited set; it may free it, if
 * no thread was inside a call on it at the fork.
 *
 * Windows: the descriptor cap. The mingw-w64 builds use msvcrt.dll, whose
 * C runtime holds at most 2048 descriptors (a hard limit, in Microsoft's
 * _setmaxstdio documentation): about 1000 pipes with both ends as
 * descriptors, or about 2000 sockets. A program that needs more can keep the ends it does not watch
 * as raw HANDLEs, spread its descriptors over several processes, or build
 * anypoll (dist/anypoll.c) with a C runtime whose descriptor table is
 * larger. */
typedef struct anypoll_set anypoll_set;

/* What anypoll_set_wait reports for one ready descriptor: fd as
 * registered, events the bits that are true now (the bits anypoll_poll
 * would report for it), data as given to anypoll_set_add or _mod. */
struct anypoll_event {
  int fd;
  unsigned events;
  void *data;
};

/* Report the descriptor once, then disable it until anypoll_set_mod
 * re-arms it. A bit outside every POLL* value of the platform. */
#define ANYPOLL_ONESHOT (1u << 30)

/* The program's promise that no other process holds a handle to the
 * registered pipe end, or will while it is registered (no child inherits
 * it, none is given it). Only the Windows set reads it, and only for a
 * synchronous pipe's read end (_pipe, CreatePipe; not anypoll_pipe's read
 * end, which no read of ours holds): the set then keeps its zero-byte read
 * parked on the pipe between waits, even when the handle is inheritable or
 * has other handles. Without it, such a pipe has no read of ours pending
 * between waits (another process's GetFileType, PeekNamedPipe or read would
 * wait behind it): each wait that sleeps starts one and cancels it before
 * returning, as anypoll_poll does, which costs a few system calls per such
 * pipe per wait; beyond 64 of them in a set the others are checked by a
 * timer instead, 32 every 16 ms in turn (up to 16 ms late per 32 of them). Elsewhere it is accepted and has no
 * effect. A bit outside every POLL* value of the platform. */
#define ANYPOLL_UNSHARED (1u << 28)

/* The program's leave for the Windows set to associate the registered
 * socket with the set's completion port, for the rest of the socket's life
 * (Windows cannot undo an association before 8.1, nor can Wine 8). A
 * connected stream socket asked only for POLLIN (or POLLRDNORM) is then
 * waited for with a zero-byte overlapped receive completing to the port,
 * libuv's way, instead of an AFD poll, which under Wine costs the
 * wineserver more per wake-up (a TCP round trip 1.34 times a blocking
 * read's against 1.46: docs/performance.md, the anchors). The reports are
 * the same, but for the exceptions anypoll_set(3) lists (data a receive of
 * the program's own takes after the set's has seen it; Wine only: urgent
 * data alone, a reset behind unread data); a
 * socket with no peer yet (listening, connecting) is asked at each add or
 * mod. The program's promise in return: no overlapped I/O of its own on that
 * socket that would send a packet to a port (an OVERLAPPED whose hEvent has
 * its low bit set sends none, and plain send/recv are fine), no completion
 * port of its own or completion-mode change on it, and delete before
 * close. A socket that cannot be associated (another set or the program
 * has it already, or a del and a new add in this set) and any other
 * events are waited for with an AFD poll, as without the bit. Elsewhere it
 * is accepted and has no effect. A bit outside every POLL* value of the
 * platform. */
#define ANYPOLL_ASSOCIATE (1u << 27)

/* anypoll_set_new - a new, empty set; NULL with errno on failure, one of
 * (the list is complete):
 *   ENOMEM  out of memory.
 *   EMFILE, ENFILE  no descriptor left for the epoll instance (Linux),
 *           or for the portable backend's wake-up pipe.
 *   EAGAIN  a lock or a kernel object could not be made (Windows: out of
 *           handles, or Winsock could not be started).
 *   ENOSYS  Windows: ntdll.dll lacks an entry point the library needs.
 *   EIO     Windows: the completion port or its retry timer could not be
 *           made, for a reason no errno above describes.
 * The set holds descriptors of its own from here on (Linux: an epoll
 * descriptor and an eventfd; the portable backend: a pipe, and one more
 * per thread waiting at once beyond the first). */
ANYPOLL_EXTERN anypoll_set *anypoll_set_new(void);

/* anypoll_set_free - frees the set; the descriptors stay open.
 * 0, or -1 with errno (EINVAL: set is NULL). */
ANYPOLL_EXTERN int anypoll_set_free(anypoll_set *set);

/* anypoll_set_add, _mod, _del - register fd for events (POLLIN, POLLPRI,
 * POLLOUT and their RD/WR variants, optionally ANYPOLL_ONESHOT,
 * ANYPOLL_UNSHARED and ANYPOLL_ASSOCIATE; POLLERR
 * and POLLHUP are always reported), change what is watched, or stop
 * watching it. 0, or -1 with errno, one of (the list is complete):
 *   EINVAL  set is NULL, or events has unknown bits; add, Linux (epoll):
 *           fd is one of the set's own descriptors.
 *   EBADF   fd is negative or not an open descriptor.
 *   EEXIST  add: fd is registered already.
 *   ENOENT  mod, del: fd is not registered (Linux: also mod of a number
 *           closed and reopened before its del, which epoll has dropped).
 *   ENOMEM  add, mod: out of memory (Linux: also the kernel's limit of
 *           epoll watches).
 *   ELOOP   add, Linux: fd is an epoll instance nested too deep
 *           (epoll_ctl(2)).
 *   ENOSYS  add, Windows: fd is a socket and the system has no AFD driver
 *           (the set's first socket opens the set's own AFD handle).
 *   EAGAIN, EIO  add, Windows: the set's AFD handle could not be
 *           associated with its completion port (the Win32 error mapped as
 *           anypoll_poll maps one: out of handles EAGAIN, out of memory
 *           ENOMEM, anything else EIO).
 *   With the portable backend (POSIX without epoll), add and mod check fd
 *   with anypoll_poll first and can also fail as it does (ENOMEM, EAGAIN;
 *   on Windows ENOSYS, EIO). Nothing changes on an error, and nothing is
 *   allocated for a number that is not open.
 * Regular files and other descriptors that anypoll_poll reports always
 * ready are accepted, and reported ready by every wait when asked for a
 * bit they have (POLLIN, POLLOUT, their RD/WR forms); asked for none
 * (events 0, POLLPRI alone) they are not ready and waits sleep.
 *
 * Windows: what wakes a wait. A synchronous pipe's read end: a helper's
 * zero-byte read (below); an anypoll_pipe read end: a zero-byte read
 * completing to the set's port; an overlapped pipe: an overlapped
 * zero-byte read; a socket: an AFD poll; console input: a thread-pool wait.
 * Re-checked on a timer instead (no notification exists, or a read of
 * ours would change what the program reads): a write end asked for
 * POLLOUT (every 16 ms while full), a write end asked for anything else
 * (every 50 ms: its reader's departure, POLLERR; not seen on a write-only
 * handle opened without FILE_READ_ATTRIBUTES, which cannot be asked), a
 * message-type read end (every 16 ms: a zero-byte read would consume a
 * zero-length message), and a read end holding data it was not asked
 * for (a 50 ms timer every other round). A registration whose wake-up
 * source cannot be armed (out of threads or handles) is reported with
 * POLLERR by the wait, not as an error.
 *
 * A descriptor must be deleted before it is closed. A program that closes
 * one first gets no crash and no hang, and the other entries keep working;
 * until its del (which then still succeeds and removes the entry), the
 * closed entry is reported with POLLNVAL on every wait by the portable
 * backend (POSIX without epoll) and on Windows, and no longer reported
 * on Linux, where the kernel drops it with the file (unless another
 * descriptor of the same open file, from dup or fork, keeps it alive:
 * then epoll goes on reporting it under the old number, and after its del
 * each wait receives and drops its readiness, a busy wait while it stays
 * ready, until the set is freed or the same file is added again under
 * that number, after a dup2 back, which works). On Linux an always-ready
 * entry closed first is no longer reported either, and its mod fails
 * (EBADF closed, ENOENT reused by another file). With the portable
 * backend a number closed and reused is still the old entry until that
 * del, unless the set's own wake-up pipe took it: then the entry is
 * reported POLLNVAL, never with the pipe's readiness.
 *
 * Windows, synchronous pipes (_pipe, CreatePipe, anypoll_pipe): while a
 * registered read end is empty with its writer alive, the set keeps a
 * zero-byte read pending on it, and Windows makes every other synchronous
 * call on that end wait for it: the program's own ReadFile or _read then
 * waits for data, as it would anyway, but PeekNamedPipe, and CloseHandle
 * or _close of that end, wait until data or end-of-file arrives; hence
 * delete before closing. Writes and closes of the other end never wait.
 * A full-duplex synchronous pipe handle registered for reading makes the
 * program's own WriteFile through it wait the same way
 * (docs/windows-design.md, "The watch set"). anypoll's own Windows test
 * builds enforce delete-before-close for such read ends: a check or del
 * that finds one closed ends the process with status 86.
 *
 * Windows, sockets: one socket registered under two descriptors in one set
 * (_dup, or _open_osfhandle of a duplicated socket handle) is unsupported:
 * it is not detected, and one of the two may miss a readiness
 * (docs/deviations.md). One descriptor per socket per set. */
ANYPOLL_EXTERN int anypoll_set_add(anypoll_set *set, int fd, unsigned events,
                                   void *data);
ANYPOLL_EXTERN int anypoll_set_mod(anypoll_set *set, int fd, unsigned events,
                                   void *data);
ANYPOLL_EXTERN int anypoll_set_del(anypoll_set *set, int fd);

/* anypoll_set_wait - waits until a registered descriptor is ready or the
 * timeout passes (the rules of anypoll_poll's timeout_ms), and fills at
 * most max entries of out. Returns how many it filled, 0 on timeout, or
 * -1 with errno, one of (the list is complete):
 *   EINVAL  set or out is NULL, or max <= 0.
 *   EINTR   a signal (POSIX) or a user APC (Windows) interrupted the wait.
 *   ENOMEM  out of memory.
 *   EIO     Windows: the completion port's wait failed (its Win32 error
 *           mapped as anypoll_poll maps one; EIO unless out of memory or
 *           handles, ENOMEM or EAGAIN).
 *   With the portable backend: anypoll_poll's errors (EAGAIN; on Windows
 *   also ENOSYS, EBADF, EIO), and EMFILE or ENFILE when a thread that
 *   waits at the same time as others needs a wake-up pipe of its own.
 *   EINVAL, portable backend: also when anypoll_poll refuses the call
 *           (more registered than the soft RLIMIT_NOFILE, or over select()
 *           a descriptor at or above FD_SETSIZE).
 * max has no upper limit: a wait's memory grows with what is registered,
 * never with max. */
ANYPOLL_EXTERN int anypoll_set_wait(anypoll_set *set, struct anypoll_event *out,
                                    int max, int timeout_ms);

/* anypoll_pipe - a pipe (fds[0] reads, fds[1] writes), not inherited by
 * child processes (close-on-exec). 0, or -1 with errno (EFAULT: fds is
 * NULL; EMFILE, ENFILE, ENOMEM).
 * On POSIX it is pipe() with close-on-exec.
 * On Windows its read end is opened for overlapped I/O, so that a watch
 * set waits on it with no helper thread, and its write end is an ordinary
 * synchronous handle (a named pipe with a unique name, inbound, in byte
 * mode, with 64 KiB buffers, remote clients refused). Read the read end
 * with anypoll_read, not with _read or ReadFile without an OVERLAPPED:
 * Microsoft documents that a read with no OVERLAPPED on a handle opened
 * for overlapped I/O may report completion before the data has come (the
 * C runtime's _read is such a read). _write, WriteFile and anypoll_write
 * on the write end, and _close on either end, work as on a _pipe() pipe.
 * The read end can belong to one completion port for its life: a set
 * associates it with its own, and ends that at del where the system can
 * (Windows 8.1 and later). Where it cannot (before Windows 8.1, and under
 * Wine 8) the association stays until the read end is closed: the one
 * side effect a set has on a descriptor. Another set (or this one after
 * a del and a new add) then waits on it through an overlapped read and a
 * thread-pool wait instead, and a program cannot associate it with a
 * port of its own; it must not try to in any case.
 * docs/windows-design.md, "anypoll_pipe". */
ANYPOLL_EXTERN int anypoll_pipe(int fds[2]);

/* anypoll_read, anypoll_write - read or write up to len bytes of fd, as
 * read() and write() do: the count, 0 at end of file (read), or -1 with
 * errno (EBADF, EINVAL: len above INT_MAX or buf NULL, EPIPE: write to a
 * pipe whose reader has gone, EINTR, EIO). They block like read() and
 * write() on a blocking descriptor. The types are those of the C runtime's
 * _read and _write (unsigned count, int result), which compile on every
 * platform (no ssize_t on Windows) and hold every count a call can return.
 * On POSIX they are read() and write(). On Windows, on a descriptor of a
 * handle opened for overlapped I/O (an anypoll_pipe read end, a socket
 * wrapped with _open_osfhandle, an overlapped named pipe; never a file with
 * a position) they issue the overlapped ReadFile or WriteFile and wait for
 * it, and a zero-length read returns 0 without I/O; on any other
 * descriptor they are _read and _write (binary or text, as the descriptor
 * was opened), except that a write to a pipe whose reader has gone sets
 * EPIPE. Any number of threads may read and write one descriptor at once:
 * each call's bytes are its own, nothing lost or duplicated. */
ANYPOLL_EXTERN int anypoll_read(int fd, void *buf, unsigned len);
ANYPOLL_EXTERN int anypoll_write(int fd, const void *buf, unsigned len);

/* anypoll_close - close fd, as close() does: 0, or -1 with errno (EBADF: fd
 * is not open; EIO: the system failed to close it). On POSIX it is close().
 * On Windows a socket wrapped with _open_osfhandle is closed by closesocket,
 * once, and its descriptor freed: _close alone would call CloseHandle on
 * the socket, which Winsock does not allow, and closesocket followed by
 * _close closes the handle value a second time, perhaps after another
 * thread was given it for a new handle. A non-blocking socket whose
 * SO_LINGER asks the close to wait is made blocking first, so that the
 * close lingers as it does on Linux. Any other descriptor is _close'd.
 * Delete fd from every watch set before closing it (anypoll_set_del). */
ANYPOLL_EXTERN int anypoll_close(int fd);

/* ---- Child processes -------------------------------------------------------
 * anypoll_spawn - start file with argv (argv[0] is the child's argv[0]) and
 * envp (NULL: the parent's environment). file is searched in PATH when it
 * holds no directory separator, as posix_spawnp does; on Windows the search
 * adds ".exe" as CreateProcess does. stdio[i] (i = 0, 1, 2) says what the
 * child gets as standard input, output and error: ANYPOLL_STDIO_INHERIT the
 * parent's own stream i, ANYPOLL_STDIO_NULL the null device, ANYPOLL_STDIO_PIPE
 * a new pipe, or a descriptor of the parent (>= 0). pipes[i] receives the
 * parent's end of each new pipe (the write end for stdin, the read end for
 * stdout and stderr), -1 for the other streams. *proc receives a descriptor
 * that anypoll_poll and the watch set report POLLIN on once the child has
 * exited, and not before; anypoll_close(*proc) releases it without touching
 * the child. The child gets its three streams and nothing else of the
 * parent's that anypoll made: the parent's ends are never inherited (on
 * Windows the child's own ends are inheritable during its CreateProcessW,
 * so a process another thread creates then with inheritance and no handle
 * list may hold them: anypoll_spawn(3), BUGS). On Windows the parent's
 * ends are overlapped, as anypoll_pipe's read end is:
 * read and write them with anypoll_read and anypoll_write, and the set and
 * anypoll_poll wait on them with no thread; the child's ends are ordinary
 * synchronous pipes; a write to the child's stdin returns once issued, and
 * while it is still pending (the pipe is full) that end reports no POLLOUT
 * and the next write waits for it. On Windows file, argv and envp are in
 * the ANSI code page, as main's argv; argv is joined into one command line
 * with the quoting that the Microsoft C runtime's parser undoes (an argv[0]
 * holding a double quote, or one with a blank that ends in a backslash,
 * cannot be written: EINVAL). A .bat or .cmd file (by its extension, in any
 * case) runs through cmd.exe /d /v:off /s /c: an argument holding a blank
 * or one of cmd.exe's operators is passed in double quotes (which %~1
 * removes), and one holding '"', '%', '!' or a control character other
 * than tab, which cmd.exe would split or expand whatever the quoting, is
 * refused (EINVAL) rather than passed. 0, or -1 with
 * errno: EINVAL (file, argv, stdio, pipes or proc NULL, an unknown stdio
 * value, an argument that cannot reach the child intact), ENOENT (file not
 * found), EACCES (not executable), EBADF (a stdio descriptor not open),
 * E2BIG, ENOMEM, EMFILE, EAGAIN. A failed spawn leaves nothing behind: no
 * descriptor, handle, thread or child. */
/* On POSIX the child is started with posix_spawnp, with every signal's
 * default action and no signal blocked; the parent's ends are blocking
 * descriptors. The process descriptor is a pidfd on Linux 5.3 and later
 * (no thread; after anypoll_proc_wait it reports POLLIN|POLLHUP);
 * elsewhere, or where pidfd_open fails with ENOSYS or EPERM, the read end
 * of a pipe that a library thread, one per running child, writes when the
 * child exits. Close it with anypoll_close, not close(). A program that
 * reaps children itself (waitpid(-1)) makes anypoll_proc_wait fail with
 * ECHILD; so does one that ignores SIGCHLD (SIG_IGN or SA_NOCLDWAIT: the
 * kernel reaps the children). The spawn still succeeds whenever the child
 * was started, and proc reports POLLIN once the child has gone. On Windows
 * a batch file's cmd.exe line past 8191 characters (cmd.exe's limit) is
 * refused with E2BIG. */
#define ANYPOLL_STDIO_INHERIT (-1)
#define ANYPOLL_STDIO_NULL (-2)
#define ANYPOLL_STDIO_PIPE (-3)
ANYPOLL_EXTERN int anypoll_spawn(const char *file, char *const argv[],
                                 char *const envp[], const int stdio[3],
                                 int pipes[3], int *proc);

/* anypoll_proc_wait - block until the child of proc has exited (at once
 * once POLLIN was reported on proc), reap it and store its status: on
 * POSIX the exit code (0-255), or 128 + the signal's number when a signal
 * ended it; on Windows the exit code as GetExitCodeProcess gives it, all 32
 * bits (exit(300) gives 300; a crash gives an NTSTATUS such as 0xC0000005,
 * a negative int). A second call gives the same status. 0, or -1 with errno
 * (EBADF: proc is not a process descriptor; EINVAL: status NULL; EINTR;
 * ECHILD: POSIX, the program reaped the child itself, or SIGCHLD is
 * ignored so the kernel did: the status is lost). */
ANYPOLL_EXTERN int anypoll_proc_wait(int proc, int *status);

/* anypoll_proc_kill - end the child of proc at once: SIGKILL on POSIX,
 * TerminateProcess with exit code 137 on Windows, so that both report 137.
 * 0 (also when the child has already exited), or -1 with errno (EBADF).
 * On Linux the signal goes through the pidfd, so it never reaches another
 * process given the child's pid, even when SIGCHLD is ignored (without a
 * pidfd it goes by pid: anypoll_proc_kill(3), NOTES). */
ANYPOLL_EXTERN int anypoll_proc_kill(int proc);

/* anypoll_proc_pid - the child's process id, or -1 with errno EBADF. */
ANYPOLL_EXTERN long anypoll_proc_pid(int proc);

/* ---- Testing and benchmark interface -------------------------------------
 * Backends are selectable per call so the test suite can run once per
 * backend and the benchmarks can compare strategies side by side. Programs
 * should call anypoll_poll, which uses ANYPOLL_BACKEND_DEFAULT. */
enum anypoll_backend {
  ANYPOLL_BACKEND_DEFAULT = 0, /* the platform's best: EVENT on Windows,
                                  POLL on POSIX (or SELECT if built so) */
  ANYPOLL_BACKEND_POLL = 1,    /* POSIX: the kernel's poll() */
  ANYPOLL_BACKEND_SELECT = 2,  /* POSIX: emulation on select() */
  ANYPOLL_BACKEND_EVENT = 3,   /* Windows: event-driven; POSIX: same as POLL */
  ANYPOLL_BACKEND_SLEEP1 = 4,  /* historical: check all, sleep 1 ms, repeat
                                  (git's and gnulib's poll today) */
  ANYPOLL_BACKEND_YIELD = 5    /* historical: check all, yield, repeat
                                  (a busy wait; git's poll before 2014) */
};

/* anypoll_poll_with - anypoll_poll through the named backend.
 * Same contract as anypoll_poll; additionally fails with EINVAL (-1) when
 * the backend is unknown or not available on this platform. */
ANYPOLL_EXTERN int anypoll_poll_with(int backend, struct pollfd *fds,
                                     anypoll_nfds_t nfds, int timeout_ms);

/* anypoll_backend_name - the backend's lower-case name ("event", "poll",
 * "select", "sleep1", "yield", "default"), or NULL if unknown. */
ANYPOLL_EXTERN const char *anypoll_backend_name(int backend);

/* anypoll_backend_from_name - the inverse of anypoll_backend_name. Returns
 * the backend's number, or -1 with errno EINVAL if the name is unknown or
 * the backend is not available on this platform. */
ANYPOLL_EXTERN int anypoll_backend_from_name(const char *name);

/* anypoll_version - ANYPOLL_VERSION_STRING of the library linked in. */
ANYPOLL_EXTERN const char *anypoll_version(void);

#ifdef __cplusplus
}
#endif

#endif /* ANYPOLL_H */
