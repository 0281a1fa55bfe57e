/* The one internal header of the Windows backend: the Windows headers, the
 * few NT declarations mingw-w64 lacks, and the contract between the files of
 * src/win32/ (one per handle kind, plus the wait loop and the thread pool). */
#ifndef ANYPOLL_WIN_H
#define ANYPOLL_WIN_H

#ifndef WIN32_LEAN_AND_MEAN
#  define WIN32_LEAN_AND_MEAN
#endif
#include <winsock2.h>
#include <windows.h>
#include <winternl.h>

#include "../internal.h"

/* ---- NT interfaces (ntdll) not declared by <winternl.h> ---------------- */

#ifndef STATUS_PENDING
#  define STATUS_PENDING ((NTSTATUS)0x00000103L)
#endif
#define ANYPOLL_STATUS_CANCELLED ((NTSTATUS)0xC0000120L)

/* FILE_INFORMATION_CLASS values used here. */
#define ANYPOLL_FILE_ACCESS_INFORMATION 8
#define ANYPOLL_FILE_MODE_INFORMATION 16
#define ANYPOLL_FILE_PIPE_LOCAL_INFORMATION 24

#define ANYPOLL_FILE_PIPE_DISCONNECTED_STATE 1
#define ANYPOLL_FILE_PIPE_CONNECTED_STATE 3
#define ANYPOLL_FILE_PIPE_CLOSING_STATE 4

typedef struct {
  ULONG NamedPipeType;
  ULONG NamedPipeConfiguration;
  ULONG MaximumInstances;
  ULONG CurrentInstances;
  ULONG InboundQuota;
  ULONG ReadDataAvailable;
  ULONG OutboundQuota;
  ULONG WriteQuotaAvailable;
  ULONG NamedPipeState;
  ULONG NamedPipeEnd;
} anypoll__pipe_local_info;

typedef NTSTATUS(NTAPI anypoll__nt_query_information_file_fn)(
    HANDLE, PIO_STATUS_BLOCK, PVOID, ULONG, ULONG);
typedef NTSTATUS(NTAPI anypoll__nt_device_io_control_file_fn)(
    HANDLE, HANDLE, PVOID, PVOID, PIO_STATUS_BLOCK, ULONG, PVOID, ULONG, PVOID,
    ULONG);
typedef NTSTATUS(NTAPI anypoll__nt_create_file_fn)(
    PHANDLE, ACCESS_MASK, POBJECT_ATTRIBUTES, PIO_STATUS_BLOCK, PLARGE_INTEGER,
    ULONG, ULONG, ULONG, ULONG, PVOID, ULONG);
typedef NTSTATUS(NTAPI anypoll__nt_cancel_io_file_ex_fn)(HANDLE,
                                                         PIO_STATUS_BLOCK,
                                                         PIO_STATUS_BLOCK);

/* Resolved once by anypoll__win_init(); never NULL after it succeeds. */
struct anypoll__nt {
  anypoll__nt_query_information_file_fn *query_information_file;
  anypoll__nt_device_io_control_file_fn *device_io_control_file;
  anypoll__nt_create_file_fn *create_file;
  anypoll__nt_cancel_io_file_ex_fn *cancel_io_file_ex;
};
ANYPOLL__INTERNAL_DATA struct anypoll__nt anypoll__nt;

/* One-time process set-up (ntdll entry points, Winsock). Returns 0, or -1
 * with errno. Safe to call from any number of threads. */
ANYPOLL__INTERNAL
int anypoll__win_init(void);

/* ---- Errors (error.c) ---------------------------------------------------- */

/* Sets errno from a Win32 error code and returns -1. */
ANYPOLL__INTERNAL
int anypoll__set_errno_win(DWORD error);

/* ---- Descriptor classification (handle.c) -------------------------------- */

enum anypoll__kind {
  ANYPOLL_KIND_IGNORED = 0, /* negative fd */
  ANYPOLL_KIND_INVALID,     /* not an open descriptor: POLLNVAL */
  ANYPOLL_KIND_PIPE,        /* anonymous or named pipe */
  ANYPOLL_KIND_SOCKET,
  ANYPOLL_KIND_CONSOLE_IN,
  ANYPOLL_KIND_CONSOLE_OUT,
  ANYPOLL_KIND_FILE /* disk file, NUL, other character device */
};

/* What one pollfd entry refers to, worked out once per call. */
struct anypoll__item {
  HANDLE handle;
  int kind;
  unsigned readable : 1; /* pipe: the handle has read access */
  unsigned writable : 1; /* pipe: the handle has write access */
  unsigned async : 1;    /* pipe: opened for overlapped I/O (known only
                            once the call is about to wait) */
  unsigned stream : 1;   /* socket: SOCK_STREAM */
  /* socket: the handle AFD is asked about (see socket.c), worked out by
   * every anypoll__socket_check and reused by the anypoll__socket_arm that
   * follows it in the same call; never read before a check has set it. */
  HANDLE afd_base;
};

/* Fills in item for the C runtime descriptor stored in a pollfd. */
ANYPOLL__INTERNAL
void anypoll__classify(SOCKET fd, struct anypoll__item *item);

/* Whether h was opened for overlapped I/O. Asked only of pipes about to be
 * waited on, as the checks do not need it. */
ANYPOLL__INTERNAL
int anypoll__handle_is_async(HANDLE h);

/* ---- Readiness checks, one file per kind --------------------------------
 * Each returns the revents for the entry now (POLLERR/POLLHUP/POLLNVAL
 * whatever was asked), without waiting and without consuming data. */
ANYPOLL__INTERNAL
short anypoll__pipe_check(const struct anypoll__item *item, short events);
ANYPOLL__INTERNAL
short anypoll__console_check(const struct anypoll__item *item, short events);
ANYPOLL__INTERNAL
short anypoll__file_check(const struct anypoll__item *item, short events);
/* Sockets are checked all at once: one AFD poll with a zero timeout, which
 * leaves event alone (the poll has no event of its own; the parameter is
 * unused). Sets revents and afd_base of every socket entry; returns 0, or
 * -1 with errno. */
ANYPOLL__INTERNAL
int anypoll__socket_check(struct pollfd *fds, struct anypoll__item *items,
                          anypoll_nfds_t nfds, HANDLE event);


/* ---- Waiting --------------------------------------------------------------
 * A waiter is one anypoll_poll call that is about to block. Each kind arms
 * its wait so that the waiter's event is set when the entry may have become
 * ready, and disarms it before the call returns. */
struct anypoll__pipe_sub;
struct anypoll__waiter {
  HANDLE event; /* manual-reset, owned by the calling thread */
  struct anypoll__pipe_sub *pipe_subs;
  anypoll_nfds_t pipe_sub_count;
  /* Overlapped zero-byte reads on asynchronous pipe handles. */
  OVERLAPPED *overlapped;
  HANDLE *overlapped_handles;
  anypoll_nfds_t overlapped_count;
  /* The one AFD poll covering every socket of the call. */
  void *afd_info;
  IO_STATUS_BLOCK afd_iosb;
  int afd_pending;
  /* Pipe write ends cannot be waited on: they set a re-check interval. */
  int needs_recheck;
  /* An overlapped read could not be issued: the re-check must run now. */
  int failed_arm;
};

/* pipe.c: space for a call that waits on sync_pipes synchronous and
 * async_pipes asynchronous read ends; 0, or -1 with errno ENOMEM. */
ANYPOLL__INTERNAL
int anypoll__pipe_prepare(struct anypoll__waiter *w, anypoll_nfds_t sync_pipes,
                          anypoll_nfds_t async_pipes);
ANYPOLL__INTERNAL
void anypoll__pipe_release(struct anypoll__waiter *w);

/* pipe.c: arm a zero-byte read on a pipe read end (a pooled helper thread
 * for synchronous handles, an overlapped read for asynchronous ones).
 * Issuing an overlapped read resets the call's event (the I/O manager
 * clears a request's event when the request starts), so every overlapped
 * request of a call is issued before any helper can set the event: first
 * anypoll__pipe_arm_async for each asynchronous read end and
 * anypoll__socket_arm, then anypoll__pipe_completed and
 * anypoll__socket_completed to catch completions that a later request's
 * reset erased, then anypoll__pipe_arm_sync for each synchronous one. */
ANYPOLL__INTERNAL
int anypoll__pipe_arm_async(struct anypoll__waiter *w,
                            const struct anypoll__item *item);
ANYPOLL__INTERNAL
int anypoll__pipe_arm_sync(struct anypoll__waiter *w,
                           const struct anypoll__item *item);
/* Whether an overlapped read has completed or could not be issued. */
ANYPOLL__INTERNAL
int anypoll__pipe_completed(const struct anypoll__waiter *w);
ANYPOLL__INTERNAL
void anypoll__pipe_disarm_all(struct anypoll__waiter *w);

/* socket.c: one overlapped AFD poll over the call's sockets. */
ANYPOLL__INTERNAL
int anypoll__socket_arm(struct anypoll__waiter *w, struct pollfd *fds,
                        struct anypoll__item *items, anypoll_nfds_t nfds);
ANYPOLL__INTERNAL
int anypoll__socket_completed(const struct anypoll__waiter *w);
ANYPOLL__INTERNAL
void anypoll__socket_disarm(struct anypoll__waiter *w);

/* ---- Helper threads (pool.c) ---------------------------------------------
 * A pooled thread runs fn(arg) once and returns to the pool; idle threads
 * exit after a while. Returns the worker's thread handle (owned by the pool,
 * valid while fn runs) or NULL with errno EAGAIN. */
ANYPOLL__INTERNAL
HANDLE anypoll__pool_run(void (*fn)(void *), void *arg);

/* How long an idle helper thread waits for work before it exits. */
ANYPOLL__INTERNAL_DATA volatile LONG anypoll__pool_idle_ms;

/* ---- Fault injection for the tests ---------------------------------------
 * When non-zero, the next that many helper-thread or event creations fail
 * as if the system were out of resources, after the first
 * anypoll__test_fail_skip of them have succeeded (so a failure can land in
 * the middle of arming a call). */
ANYPOLL__INTERNAL_DATA volatile LONG anypoll__test_fail_resources;
ANYPOLL__INTERNAL_DATA volatile LONG anypoll__test_fail_skip;
ANYPOLL__INTERNAL
int anypoll__test_should_fail(void);
/* When non-zero, SIO_BASE_HANDLE is taken to have failed, as it does under
 * some layered service providers (socket.c then asks for
 * SIO_BSP_HANDLE_POLL); anypoll__test_bsp_poll_asked counts those asks. */
ANYPOLL__INTERNAL_DATA volatile LONG anypoll__test_fail_base_handle;
ANYPOLL__INTERNAL_DATA volatile LONG anypoll__test_bsp_poll_asked;

/* ---- Backends (poll.c) ---------------------------------------------------- */
ANYPOLL__INTERNAL
anypoll__poll_fn anypoll__win_event_poll;

#endif /* ANYPOLL_WIN_H */
