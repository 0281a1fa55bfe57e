/* Console input and screen buffers. */
#include "win.h"

static int is_character(const INPUT_RECORD *r) {
  return r->EventType == KEY_EVENT && r->Event.KeyEvent.bKeyDown &&
         r->Event.KeyEvent.uChar.UnicodeChar != 0;
}

/* A console input handle is signalled while any event is queued, including
 * focus, mouse, buffer-size and key-up events that read() ignores. Those are
 * removed here, so that the handle stops being signalled and a wait on it
 * does not turn into a spin. */
short anypoll__console_check(const struct anypoll__item *item, short events) {
  if (item->kind == ANYPOLL_KIND_CONSOLE_OUT)
    return (short)(events & POLLOUT);
  INPUT_RECORD records[64];
  for (;;) {
    DWORD count = 0;
    if (!GetNumberOfConsoleInputEvents(item->handle, &count))
      return POLLERR;
    if (count == 0)
      return 0;
    DWORD got = 0;
    if (!PeekConsoleInputW(item->handle, records, 64, &got))
      return POLLERR;
    if (got == 0)
      return 0; /* another reader emptied the queue meanwhile */
    DWORD first = 0;
    while (first < got && !is_character(&records[first]))
      first++;
    /* The records before the first character are ones read() would skip;
     * removing them leaves that character at the head of the queue for a
     * reader of input records too. Only records just peeked are removed:
     * ones that arrived since queue up behind them. */
    DWORD discarded = 0;
    if (first > 0 &&
        !ReadConsoleInputW(item->handle, records, first, &discarded))
      return POLLERR;
    if (first < got)
      return (short)(events & POLLIN);
  }
}
