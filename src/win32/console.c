/* SPDX-License-Identifier: MIT */
/* Console input and screen buffers. */
#include <stdlib.h>

#include "win.h"

#define STACK_RECORDS 64

/* The check peeks the queue and then removes the records at its head that
 * read() would skip. The two steps are separate console calls, so two
 * threads checking one console at once would each remove "the first n
 * records" of what they peeked, and the second would remove records that
 * arrived or moved up in between: characters lost before the program can
 * read them (seen under Wine: 39 of 50 keystrokes with two polling
 * threads), and a ReadConsoleInputW that waits for records that another
 * thread already took (a hang past the timeout with three). One lock for
 * the whole process serialises the checks: a console's queue is shared by
 * every handle to it, and checks are short. */
static SRWLOCK check_lock = SRWLOCK_INIT;

/* Removes the n records at the head of the queue (ones just peeked).
 * ReadConsoleInputW waits while the queue is empty; under the lock no
 * thread of ours can empty it, and only a reader of the program's own,
 * running at the same time as the check, could (docs/deviations.md).
 * ReadConsoleInputExW with CONSOLE_READ_NOWAIT would not wait, but Wine 8
 * exports it as a stub that raises an exception when called, so it cannot
 * be looked up and trusted. */
static BOOL discard_records(HANDLE h, INPUT_RECORD *records, DWORD n) {
  DWORD got = 0;
  return anypoll__sys_console_read(h, records, n, &got);
}

/* A record that ReadFile/ReadConsole turn into a character: a key-down
 * with one, or the key-up of Alt that ends an Alt+numpad sequence (the
 * composed character arrives on that record, VK_MENU with bKeyDown 0). */
static int is_character(const INPUT_RECORD *r) {
  if (r->EventType != KEY_EVENT || r->Event.KeyEvent.uChar.UnicodeChar == 0)
    return 0;
  return r->Event.KeyEvent.bKeyDown ||
         r->Event.KeyEvent.wVirtualKeyCode == VK_MENU;
}

/* A record that a line-mode read acts on: the characters, and the keys of
 * the console's line editing (arrows, Home, End, Insert, Delete, Page Up and
 * Down, F1 to F9: they move in the line or recall an earlier one; Esc and
 * Backspace carry characters). Others (Shift, Ctrl, Alt down, the keypad
 * keys of an Alt+numpad sequence) are skipped by the read. */
static int is_line_key(const INPUT_RECORD *r) {
  if (is_character(r))
    return 1;
  if (r->EventType != KEY_EVENT || !r->Event.KeyEvent.bKeyDown)
    return 0;
  WORD vk = r->Event.KeyEvent.wVirtualKeyCode;
  return (vk >= VK_PRIOR && vk <= VK_DOWN) || /* PgUp PgDn End Home arrows */
         vk == VK_INSERT || vk == VK_DELETE || (vk >= VK_F1 && vk <= VK_F9);
}

/* Enter: what ends a line-mode read. */
static int is_enter(const INPUT_RECORD *r) {
  return r->EventType == KEY_EVENT && r->Event.KeyEvent.bKeyDown &&
         r->Event.KeyEvent.uChar.UnicodeChar == L'\r';
}

/* A console input handle is signalled while any event is queued, including
 * focus, mouse, buffer-size and key-up events that read() ignores. Those
 * are removed here, so that the handle stops being signalled and a wait on
 * it does not turn into a spin.
 *
 * With ENABLE_LINE_INPUT (the default), ReadFile and ReadConsole return
 * only once Enter has been typed (Microsoft's documentation of
 * SetConsoleMode and of the high-level console input functions), so a
 * read() on a partial line blocks: POLLIN comes only when an Enter key
 * record is queued, as a terminal in canonical mode gives POLLIN only for a
 * complete line. The keys of the partial line stay queued (they are the
 * line being typed), which keeps the handle signalled: the wait then
 * re-checks on the bounded back-off instead of waiting on the handle
 * (anypoll__console_waitable). Without ENABLE_LINE_INPUT any character
 * counts. */
static short check_input(const struct anypoll__item *item, short events) {
  DWORD mode = 0;
  if (!anypoll__sys_console_mode(item->handle, &mode))
    return POLLERR;
  int line_mode = (mode & ENABLE_LINE_INPUT) != 0;
  INPUT_RECORD stack_records[STACK_RECORDS];
  INPUT_RECORD *records = stack_records;
  DWORD size = STACK_RECORDS;
  short result = 0;
  for (;;) {
    /* The whole queue, as a line's Enter may follow many keys: a full
     * buffer is peeked again with room for all. (Each console call is a
     * round trip to the console host, and a partial line is checked again
     * and again: no call more than needed.) */
    DWORD got = 0;
    if (!anypoll__sys_console_peek(item->handle, records, size, &got)) {
      result = POLLERR;
      break;
    }
    if (got == size) {
      DWORD count = 0;
      if (!anypoll__sys_console_count(item->handle, &count)) {
        result = POLLERR;
        break;
      }
      if (count > size) {
        INPUT_RECORD *bigger = malloc((count + STACK_RECORDS) * sizeof *bigger);
        if (bigger != NULL) {
          if (records != stack_records)
            free(records);
          records = bigger;
          size = count + STACK_RECORDS;
          continue;
        }
        /* No memory: decide on the head of the queue. */
      }
    }
    if (got == 0)
      break;
    DWORD first = 0;
    if (line_mode) {
      while (first < got && !is_line_key(&records[first]))
        first++;
    } else {
      while (first < got && !is_character(&records[first]))
        first++;
    }
    /* The records before the first one a read acts on are ones read()
     * would skip; removing them leaves that record at the head of the
     * queue for a reader of input records too. Only records just peeked
     * are removed: ones that arrived since queue up behind them. */
    if (first > 0 && !discard_records(item->handle, records, first)) {
      result = POLLERR;
      break;
    }
    if (first == got)
      continue; /* all skipped: look again, more may have come */
    if (!line_mode) {
      result = anypoll__readable_bits(events);
      break;
    }
    for (DWORD i = first; i < got; i++) {
      if (is_enter(&records[i])) {
        result = anypoll__readable_bits(events);
        break;
      }
    }
    break; /* a partial line: not readable yet */
  }
  if (records != stack_records)
    free(records);
  return result;
}

/* After the check found nothing to report: whether a wait may block on the
 * handle, which is so when nothing is queued. A queued partial line (line
 * mode) keeps the handle signalled, and a wait on it would return at once,
 * again and again. */
int anypoll__console_waitable(const struct anypoll__item *item) {
  DWORD count = 0;
  BOOL ok = anypoll__sys_console_count(item->handle, &count);
  return !ok /* the next check reports the error */ || count == 0;
}

/* No read of ours is ever pending on a console, so the gate has nothing to
 * hold these calls for; each goes through the door (syscall.c), which
 * announces it to the lock model, as every call on a caller's handle is. */
short anypoll__console_check(const struct anypoll__item *item, short events) {
  if (item->kind == ANYPOLL_KIND_CONSOLE_OUT)
    return (short)(events & POLLOUT);
  AcquireSRWLockExclusive(&check_lock);
  short revents = check_input(item, events);
  ReleaseSRWLockExclusive(&check_lock);
  return revents;
}
