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
  ReleaseSRWLockExclusive(&model_lock);
}

static void forget(HANDLE h, int is_read) {
  DWORD me = GetCurrentThreadId();
  AcquireSRWLockExclusive(&model_lock);
  for (int i = used - 1; i >= 0; i--) {
    if (slots[i].handle == h && slots[i].thread == me &&
        (slots[i].call == NULL) == is_read) {
      slots[i] = slots[--used];
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
 * registration or the program deletes it; both come here first (set.c)
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
