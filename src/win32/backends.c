/* The Windows backend table, one-time set-up, and the primitives the
 * historical strategies use. */
#include <errno.h>

#include "win.h"

ANYPOLL__INTERNAL struct anypoll__nt anypoll__nt;
ANYPOLL__INTERNAL volatile LONG anypoll__test_fail_resources;
ANYPOLL__INTERNAL volatile LONG anypoll__test_fail_skip;

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
  /* GetProcAddress cannot know the prototypes (declared in win.h), so its
   * FARPROC is cast to each one through void (*)(void), the form that
   * converts to every function pointer type without a warning; never
   * through an integer or void *, which ISO C (-pedantic) and
   * -Wbad-function-cast reject for function pointers. */
#define RESOLVE(field, type, name)                                           \
  anypoll__nt.field = (type *)(void (*)(void))GetProcAddress(ntdll, name);  \
  if (anypoll__nt.field == NULL) {                                           \
    init_errno = ENOSYS;                                                     \
    return TRUE;                                                             \
  }
  RESOLVE(query_information_file, anypoll__nt_query_information_file_fn,
          "NtQueryInformationFile")
  RESOLVE(device_io_control_file, anypoll__nt_device_io_control_file_fn,
          "NtDeviceIoControlFile")
  RESOLVE(fs_control_file, anypoll__nt_fs_control_file_fn,
          "NtFsControlFile")
  RESOLVE(create_file, anypoll__nt_create_file_fn,
          "NtCreateFile")
  RESOLVE(cancel_io_file_ex, anypoll__nt_cancel_io_file_ex_fn,
          "NtCancelIoFileEx")
#undef RESOLVE
  /* Classification calls getsockopt(), which needs Winsock started even in
   * a program that has no socket. The reference is never released: the
   * library lives as long as the process. */
  WSADATA wsa;
  if (WSAStartup(MAKEWORD(2, 2), &wsa) != 0)
    init_errno = EAGAIN;
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

int anypoll__test_should_fail(void) {
  for (;;) {
    LONG n = anypoll__test_fail_resources;
    if (n <= 0)
      return 0;
    if (anypoll__test_fail_skip > 0) {
      InterlockedDecrement(&anypoll__test_fail_skip);
      return 0;
    }
    if (InterlockedCompareExchange(&anypoll__test_fail_resources, n - 1, n) == n)
      return 1;
  }
}

anypoll__poll_fn *anypoll__backend(int backend) {
  switch (backend) {
  case ANYPOLL_BACKEND_DEFAULT:
  case ANYPOLL_BACKEND_EVENT:
    return anypoll__win_event_poll;
  default:
    return NULL;
  }
}

int anypoll__check_now(struct pollfd *fds, anypoll_nfds_t nfds) {
  return anypoll__win_event_poll(fds, nfds, 0);
}

int anypoll__nap(int yield) {
  if (yield) {
    SwitchToThread();
    return 0;
  }
  /* Alertable, as git's compat/poll does: a queued APC ends the wait. */
  if (SleepEx(1, TRUE) == WAIT_IO_COMPLETION) {
    errno = EINTR;
    return -1;
  }
  return 0;
}

long long anypoll__now_us(void) {
  LARGE_INTEGER t, f;
  QueryPerformanceCounter(&t);
  QueryPerformanceFrequency(&f);
  return (long long)(t.QuadPart / f.QuadPart * 1000000 +
                     t.QuadPart % f.QuadPart * 1000000 / f.QuadPart);
}

/* A wild fds pointer would take an access violation on the first entry the
 * call touches; Linux's poll returns EFAULT instead. VirtualQuery answers
 * for a whole region of pages with the same state and protection, so an
 * array on the stack or in one heap block costs one call: a system call on
 * Windows, and answered inside the process under Wine (no wineserver
 * request: bench/requests-count counts none more). Pages must be committed
 * and writable (revents is written), and not guard pages. */
int anypoll__fds_accessible(const struct pollfd *fds, anypoll_nfds_t nfds) {
  if (nfds == 0 || nfds > ANYPOLL_MAX_NFDS)
    return 1; /* nothing touched; or EINVAL from the backend */
  uintptr_t at = (uintptr_t)fds;
  uintptr_t bytes = (uintptr_t)nfds * sizeof *fds;
  if (at + bytes < at)
    return 0;
  uintptr_t end = at + bytes;
  const DWORD writable = PAGE_READWRITE | PAGE_WRITECOPY |
                         PAGE_EXECUTE_READWRITE | PAGE_EXECUTE_WRITECOPY;
  while (at < end) {
    MEMORY_BASIC_INFORMATION info;
    if (VirtualQuery((const void *)at, &info, sizeof info) == 0)
      return 0;
    if (info.State != MEM_COMMIT || (info.Protect & writable) == 0 ||
        (info.Protect & (PAGE_GUARD | PAGE_NOACCESS)) != 0)
      return 0;
    uintptr_t region_end = (uintptr_t)info.BaseAddress + info.RegionSize;
    if (region_end <= at)
      return 0;
    at = region_end;
  }
  return 1;
}
