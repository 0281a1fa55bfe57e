/* SPDX-License-Identifier: MIT */
/* One-time process set-up: the module pin, the ntdll imports (one list),
 * Winsock; and the fault-injection hooks the tests use. */
#include <errno.h>

#include "win.h"

ANYPOLL__INTERNAL struct anypoll__nt anypoll__nt;

static INIT_ONCE init_once = INIT_ONCE_STATIC_INIT;
static int init_errno;

static BOOL CALLBACK init_cb(PINIT_ONCE once, PVOID param, PVOID *ctx) {
  (void)once, (void)param, (void)ctx;
  /* Pin the module that holds this code (libanypoll.dll, or the program or
   * DLL the static library is linked into) for the life of the process:
   * from the first call on, code of ours runs where FreeLibrary cannot
   * stop it. The pooled helper threads wait out their idle time in it, and
   * the per-thread wake event's FLS callback (poll.c) runs at the exit of
   * every thread that has polled. Unloaded, the next of those would jump
   * into unmapped memory and bring the process down. A pinned module stays
   * mapped even after FreeLibrary drops its last reference. Should pinning
   * fail, the library still works, for as long as it stays loaded. */
  HMODULE self;
  GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS |
                         GET_MODULE_HANDLE_EX_FLAG_PIN,
                     (LPCWSTR)(const void *)&init_once, &self);
  HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
  if (ntdll == NULL) {
    init_errno = ENOSYS;
    return TRUE;
  }
  /* GetProcAddress cannot know the prototypes (declared in nt.h), so its
   * FARPROC is cast to each one through void (*)(void), the form that
   * converts to every function pointer type without a warning; never
   * through an integer or void *, which ISO C (-pedantic) and
   * -Wbad-function-cast reject for function pointers. A required import
   * that is missing makes every call fail with ENOSYS; an optional one is
   * left NULL, and its user copes (NtCompareObjects: Windows 10 and
   * later). */
#define ANYPOLL_RESOLVE(field, name, required)                               \
  anypoll__nt.field =                                                        \
      (anypoll__nt_##field##_fn *)(void (*)(void))GetProcAddress(ntdll, name); \
  if (anypoll__nt.field == NULL && (required)) {                             \
    init_errno = ENOSYS;                                                     \
    return TRUE;                                                             \
  }
  ANYPOLL_NT_IMPORTS(ANYPOLL_RESOLVE)
#undef ANYPOLL_RESOLVE
  /* Classification calls getsockopt(), which needs Winsock started even in
   * a program that has no socket. The reference is never released: the
   * library lives as long as the process. */
  WSADATA wsa;
  if (WSAStartup(MAKEWORD(2, 2), &wsa) != 0)
    init_errno = EAGAIN;
  anypoll__debug_init();
  return TRUE;
}

int anypoll__win_init(void) {
  InitOnceExecuteOnce(&init_once, init_cb, NULL, NULL);
  if (init_errno != 0) {
    errno = init_errno;
    return -1;
  }
  return 0;
}

/* ---- Fault injection (test builds only) ---------------------------------- */

#ifdef ANYPOLL_TEST_HOOKS
ANYPOLL__INTERNAL volatile LONG anypoll__test_fail_resources;
ANYPOLL__INTERNAL volatile LONG anypoll__test_fail_skip;
ANYPOLL__INTERNAL volatile LONG anypoll__test_fail_base_handle;
ANYPOLL__INTERNAL volatile LONG anypoll__test_bsp_poll_asked;
ANYPOLL__INTERNAL volatile LONG anypoll__test_cancel_misses;
ANYPOLL__INTERNAL volatile LONG anypoll__test_cancel_tries;
ANYPOLL__INTERNAL volatile LONG anypoll__test_post_fails;
ANYPOLL__INTERNAL volatile LONG anypoll__test_unarmed_checks;
ANYPOLL__INTERNAL volatile LONG anypoll__test_late_checks;
ANYPOLL__INTERNAL void (*volatile anypoll__test_spawn_window)(const HANDLE *list,
                                                             int count);
ANYPOLL__INTERNAL volatile LONG anypoll__test_set_peeks;
ANYPOLL__INTERNAL volatile LONG anypoll__test_set_peek_ticks;
ANYPOLL__INTERNAL volatile LONG anypoll__test_set_zreads;

/* Takes one from a countdown that other threads may take from too: 1 when
 * there was one to take. */
static int test_take_one(volatile LONG *count) {
  for (;;) {
    LONG n = *count;
    if (n <= 0)
      return 0;
    if (InterlockedCompareExchange(count, n - 1, n) == n)
      return 1;
  }
}

int anypoll__test_should_fail(void) {
  if (anypoll__test_fail_resources <= 0)
    return 0;
  if (anypoll__test_fail_skip > 0) {
    InterlockedDecrement(&anypoll__test_fail_skip);
    return 0;
  }
  return test_take_one(&anypoll__test_fail_resources);
}

int anypoll__test_post_fail(void) {
  return test_take_one(&anypoll__test_post_fails);
}
#endif
