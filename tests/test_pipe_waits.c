/* Waits that end with pipe reads still armed, many times over. */
#include "test.h"

/* Each round: two new idle pipes and a short timeout, so the call arms a
 * wait on both read ends and cancels both when the timeout expires; then
 * data on one, so a call reports it while the wait on the other is
 * cancelled. On Windows a cancelled helper read used to free its
 * bookkeeping twice: a heap corruption that crashed within a few hundred
 * rounds, once new pipes made the allocator hand the block out again. */
TEST(pipe_waits_cancelled_repeatedly) {
  for (int i = 0; i < 500; i++) {
    int a[2], b[2];
    tp_pipe(a);
    tp_pipe(b);
    struct pollfd fds[2];
    tp_pfd(&fds[0], a[0], POLLIN);
    tp_pfd(&fds[1], b[0], POLLIN);
    ASSERT_EQ(tp_poll(fds, 2, 1), 0);
    ASSERT_EQ(fds[0].revents, 0);
    ASSERT_EQ(fds[1].revents, 0);
    ASSERT_EQ(tp_write(a[1], "x", 1), 1);
    ASSERT_EQ(tp_poll(fds, 2, -1), 1);
    ASSERT_EQ(fds[0].revents, POLLIN);
    ASSERT_EQ(fds[1].revents, 0);
    tp_close(a[0]);
    tp_close(a[1]);
    tp_close(b[0]);
    tp_close(b[1]);
  }
}
