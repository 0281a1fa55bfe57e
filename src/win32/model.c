/* SPDX-License-Identifier: MIT */
/* The lock model (see win.h): in test builds, the record of every call of
 * ours on a caller's handle and of every zero-byte read of our helpers,
 * checked against each other. Real Windows would make such a call wait for
 * the read (the file-object lock); Wine does not, so this is how the tests
 * under Wine see what would hang on Windows. It keeps its own record, apart
 * from the watch table and the gate it checks. */
#include "win.h"

#ifdef ANYPOLL_LOCK_MODEL

#include <stdio.h>
#include <stdlib.h>

#define MODEL_SLOTS 1024

struct slot {
  HANDLE handle;
  DWORD thread;
  const char *call; /* NULL: a helper's zero-byte read */
};

static SRWLOCK model_lock = SRWLOCK_INIT;
static struct slot slots[MODEL_SLOTS];
static int used;

/* ---- Across processes ----------------------------------------------------
 * A child process that inherited (or was given) a handle to a pipe on
 * which a zero-byte read of ours is pending queues behind that read too:
 * GetFileType in its C runtime's start-up, PeekNamedPipe, its own reads
 * (Node issue 56537). So each process of the model publishes the handle
 * values of its pending reads in a named section keyed by its process id,
 * and each call and read of a child of such a process is checked against
 * its parent's: the handle value is duplicated out of the parent and
 * compared with the child's handle by object (NtCompareObjects), so an
 * inherited handle, a handle duplicated into the child and one the child
 * opened otherwise are all told apart correctly. The section is made at a
 * process's first announced call or read (a parent that parks a read has
 * made a call first: its classification), and a child looks for its
 * parent's at its first check; a parent whose section is not there then
 * is not a process of the model, and is not looked for again. Only the
 * direct parent is checked. */
#define SHARED_SLOTS 256

struct shared {
  volatile LONG count;
  volatile LONG64 handles[SHARED_SLOTS];
};

static struct shared *mine;     /* this process's, once made */
static int mine_tried;
static const struct shared *parents; /* the parent's, once found */
static HANDLE parent;                /* the parent, for DuplicateHandle */
static DWORD parent_pid;
static int parent_tried;

static void section_name(WCHAR *name, size_t n, DWORD pid) {
  _snwprintf(name, n, L"anypoll-lockmodel-%lu", (unsigned long)pid);
  name[n - 1] = 0;
}

/* Under model_lock. */
static void publish_init(void) {
  if (mine_tried)
    return;
  mine_tried = 1;
  WCHAR name[64];
  section_name(name, 64, GetCurrentProcessId());
  HANDLE m = CreateFileMappingW(INVALID_HANDLE_VALUE, NULL, PAGE_READWRITE, 0,
                                sizeof(struct shared), name);
  if (m != NULL)
    mine = MapViewOfFile(m, FILE_MAP_WRITE, 0, 0, sizeof(struct shared));
  if (mine == NULL) {
    fprintf(stderr, "anypoll lock model: cannot publish its reads (error "
                    "%lu)\n", (unsigned long)GetLastError());
    fflush(stderr);
    TerminateProcess(GetCurrentProcess(), 86);
  }
  /* The mapping stays open for the life of the process. */
}

/* Under model_lock: h's pending read is (on) or is no longer (off) in the
 * section. Removal moves the last one into the hole: a child that reads
 * the section meanwhile may miss one entry, a window of a few
 * instructions. */
static void publish(HANDLE h, int on) {
  publish_init();
  LONG n = mine->count;
  if (on) {
    if (n == SHARED_SLOTS)
      return; /* seen by this process's model all the same */
    mine->handles[n] = (LONG64)(UINT_PTR)h;
    InterlockedExchange(&mine->count, n + 1);
    return;
  }
  for (LONG i = n - 1; i >= 0; i--) {
    if (mine->handles[i] == (LONG64)(UINT_PTR)h) {
      mine->handles[i] = mine->handles[n - 1];
      InterlockedExchange(&mine->count, n - 1);
      return;
    }
  }
}

typedef NTSTATUS(NTAPI *query_process_fn)(HANDLE, ULONG, void *, ULONG,
                                          ULONG *);

/* Under model_lock: the parent's section, or NULL. */
static const struct shared *parent_section(void) {
  if (parent_tried)
    return parents;
  parent_tried = 1;
  query_process_fn query = (query_process_fn)(void (*)(void))GetProcAddress(
      GetModuleHandleW(L"ntdll.dll"), "NtQueryInformationProcess");
  PROCESS_BASIC_INFORMATION info;
  if (query == NULL ||
      query(GetCurrentProcess(), 0 /* ProcessBasicInformation */, &info,
            sizeof info, NULL) < 0)
    return NULL;
  parent_pid = (DWORD)info.InheritedFromUniqueProcessId;
  if (parent_pid == 0)
    return NULL;
  WCHAR name[64];
  section_name(name, 64, parent_pid);
  HANDLE m = OpenFileMappingW(FILE_MAP_READ, FALSE, name);
  if (m == NULL)
    return NULL;
  parent = OpenProcess(PROCESS_DUP_HANDLE, FALSE, parent_pid);
  if (parent != NULL)
    parents = MapViewOfFile(m, FILE_MAP_READ, 0, 0, sizeof(struct shared));
  return parents;
}

/* Under model_lock: ends the process when h is the file object of a read
 * of the parent's that is pending. */
static void check_parent(HANDLE h, const char *what) {
  const struct shared *p = parent_section();
  if (p == NULL || anypoll__win_init() != 0 ||
      anypoll__nt.compare_objects == NULL)
    return;
  LONG n = p->count;
  for (LONG i = 0; i < n && i < SHARED_SLOTS; i++) {
    HANDLE theirs = (HANDLE)(UINT_PTR)p->handles[i], ours;
    if (!DuplicateHandle(parent, theirs, GetCurrentProcess(), &ours, 0, FALSE,
                         DUPLICATE_SAME_ACCESS))
      continue; /* ended and closed meanwhile */
    int same = anypoll__nt.compare_objects(ours, h) == 0;
    CloseHandle(ours);
    if (!same)
      continue;
    fprintf(stderr,
            "anypoll lock model: %s on handle %p while a zero-byte read of "
            "the parent process %lu is in progress on its handle %p, the "
            "same file object: on Windows this waits for the file-object "
            "lock\n",
            what, (void *)h, (unsigned long)parent_pid, (void *)theirs);
    fflush(stderr);
    TerminateProcess(GetCurrentProcess(), 86);
  }
}

static void model_fail(const char *what, HANDLE h, const struct slot *other) {
  fprintf(stderr,
          "anypoll lock model: %s on handle %p while %s is in progress on "
          "handle %p (thread %lu), the same file object: on Windows this "
          "waits for the file-object lock\n",
          what, (void *)h,
          other->call != NULL ? other->call : "a zero-byte read of ours",
          (void *)other->handle, (unsigned long)other->thread);
  fflush(stderr);
  /* TerminateProcess rather than exit: helper threads may be stuck in
   * reads, and no DLL detach code must run. */
  TerminateProcess(GetCurrentProcess(), 86);
}

static void record(HANDLE h, const char *call, int is_read) {
  AcquireSRWLockExclusive(&model_lock);
  publish_init();
  check_parent(h, is_read ? "a zero-byte read of ours" : call);
  for (int i = 0; i < used; i++) {
    /* A call conflicts with a read; a read with a call or another read
     * (it would queue for the lock where no cancel reaches it). */
    if (!is_read && slots[i].call != NULL)
      continue;
    /* NtCompareObjects directly (init.c's table): the model sits below
     * every other layer, the identity check of watch.c included. */
    if (slots[i].handle == h ||
        (anypoll__win_init() == 0 && anypoll__nt.compare_objects != NULL &&
         anypoll__nt.compare_objects(slots[i].handle, h) == 0))
      model_fail(is_read ? "a zero-byte read of ours" : call, h, &slots[i]);
  }
  if (used == MODEL_SLOTS) {
    fprintf(stderr, "anypoll lock model: record full\n");
    fflush(stderr);
    TerminateProcess(GetCurrentProcess(), 86);
  }
  slots[used].handle = h;
  slots[used].thread = GetCurrentThreadId();
  slots[used].call = call;
  used++;
  if (is_read)
    publish(h, 1);
  ReleaseSRWLockExclusive(&model_lock);
}

static void forget(HANDLE h, int is_read) {
  DWORD me = GetCurrentThreadId();
  AcquireSRWLockExclusive(&model_lock);
  for (int i = used - 1; i >= 0; i--) {
    if (slots[i].handle == h && slots[i].thread == me &&
        (slots[i].call == NULL) == is_read) {
      slots[i] = slots[--used];
      if (is_read)
        publish(h, 0);
      break;
    }
  }
  ReleaseSRWLockExclusive(&model_lock);
}

void anypoll__model_call_begin(HANDLE h, const char *call) {
  record(h, call, 0);
}
void anypoll__model_call_end(HANDLE h) { forget(h, 0); }
void anypoll__model_read_begin(HANDLE h) { record(h, NULL, 1); }
void anypoll__model_read_end(HANDLE h) { forget(h, 1); }

/* ---- Delete before close ------------------------------------------------
 * A synchronous pipe read end that a watch set has started a zero-byte
 * read on must be deleted from the set before the program closes it: on
 * Windows the program's CloseHandle waits behind that read (the file-object
 * lock) until data or end-of-file arrives, which may be never. Wine lets
 * the close through and fails the read, so the set goes on to check the
 * registration or the program deletes it; both come here first (set_wait.c,
 * set.c)
 * with what _get_osfhandle gives for the descriptor now. */
void anypoll__model_registered(int fd, HANDLE h, intptr_t now) {
  DWORD flags;
  const char *what;
  if (now != (intptr_t)h)
    what = now == -1 ? "is not open any more" : "names another handle now";
  else if (!GetHandleInformation(h, &flags))
    what = "still names it, but the handle was closed";
  else
    return;
  fprintf(stderr,
          "anypoll lock model: descriptor %d, in a watch set with a zero-byte "
          "read of ours started on its handle %p, %s (handle now %p): it was "
          "closed before anypoll_set_del. On Windows that close waits for "
          "the read (the file-object lock); delete a descriptor from the set "
          "before closing it\n",
          fd, (void *)h, what, (void *)now);
  fflush(stderr);
  TerminateProcess(GetCurrentProcess(), 86);
}

/* ---- A strict C runtime ------------------------------------------------ */

#  if defined(_UCRT) || defined(_MSC_VER)
#    ifndef _MSC_VER
_CRTIMP _invalid_parameter_handler __cdecl
    _get_thread_local_invalid_parameter_handler(void);
#    endif
static _invalid_parameter_handler handler_in_effect(void) {
  _invalid_parameter_handler h =
      _get_thread_local_invalid_parameter_handler();
  return h != NULL ? h : _get_invalid_parameter_handler();
}
#  else
static _invalid_parameter_handler handler_in_effect(void) {
  return _get_invalid_parameter_handler();
}
#  endif

/* What the UCRT's _get_osfhandle does on a descriptor that is not open and
 * Wine's does not: call the handler in effect, or end the process when
 * there is none. */
void anypoll__model_crt_check(int fd, intptr_t os) {
  if (os != -1)
    return;
  _invalid_parameter_handler h = handler_in_effect();
  if (h == NULL) {
    fprintf(stderr,
            "anypoll lock model: _get_osfhandle(%d) on a descriptor that is "
            "not open, with no invalid-parameter handler: a strict C runtime "
            "ends the process here\n",
            fd);
    fflush(stderr);
    TerminateProcess(GetCurrentProcess(), 87);
  }
  h(NULL, NULL, NULL, 0, 0);
}

#else
/* ISO C wants something in a translation unit. */
typedef int anypoll__model_unused;
#endif
