/* Console input and screen buffers. */
#include "win.h"

/* A console input handle is signalled while any event is queued, including
 * focus, mouse, buffer-size and key-up events that read() ignores. Those are
 * removed here, so that the handle stops being signalled and a wait on it
 * does not turn into a spin; a queue that holds a character key-down is
 * left untouched. */
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
    if (!PeekConsoleInputW(item->handle, records, 64, &got) || got == 0)
      return POLLERR;
    for (DWORD i = 0; i < got; i++) {
      const KEY_EVENT_RECORD *k = &records[i].Event.KeyEvent;
      if (records[i].EventType == KEY_EVENT && k->bKeyDown &&
          k->uChar.UnicodeChar != 0)
        return (short)(events & POLLIN);
    }
    /* Only the events just peeked are discarded: ones that arrived since
     * queue up behind them and are looked at on the next round. */
    DWORD discarded = 0;
    if (!ReadConsoleInputW(item->handle, records, got, &discarded))
      return POLLERR;
  }
}
