/* access_buffer.h — access-log lines gathered per thread and written many at a time
 * (`access_log_buffer SIZE`).
 *
 * Each thread that logs requests appends whole lines to a buffer of its own, and the buffer
 * goes to its log file with one write() (logfile_write_lines: space reserved for all its
 * lines, or all of them counted lost) when the next line would not fit, when it has held
 * lines for longer than the flush interval (the server's tick, access_buffer_tick), before a
 * reopen (SIGUSR1), on a reload, and when its log file is closed (the runtime that owns it
 * is freed: the last one at exit). A buffer holds the lines of one log file at a time: a line
 * for another file (a thread serving two configuration generations) writes it out first.
 *
 * Each buffer has a mutex. Its thread takes it for every line, so the request path costs an
 * uncontended lock; the tick only tries it (a thread that is appending is not waited for: the
 * next tick sees its buffer), and everything else holds it for one write() at most. Nothing
 * holds a buffer's lock while taking another buffer's, except the reopen, which takes them all
 * in one order. For a target that is not a regular file (a pipe, a terminal, a socket: no
 * atomic O_APPEND), a buffer is written at most PIPE_BUF bytes at a time, so two threads'
 * writes cannot interleave inside a line. */
#ifndef LF_ACCESS_BUFFER_H
#define LF_ACCESS_BUFFER_H

#include <stddef.h>
#include <stdint.h>

struct logfile;

/* Append one whole line (with its newline) for `lf` to the calling thread's buffer of `size`
 * bytes, whose lines are written within about `flush_ms` of the first. Without memory for a
 * buffer, or for a line longer than the buffer, the line is written at once. Results of any
 * write go to lf->report. */
void access_buffer_append(struct logfile *lf, const char *line, size_t len, size_t size,
                          unsigned flush_ms);
/* Write every buffer that has held its lines for its flush interval at `now_ms` (monotonic,
 * ms); busy buffers are left for the next tick. */
void access_buffer_tick(int64_t now_ms);
/* Write every buffer now. */
void access_buffer_flush(void);
/* Write every buffer and keep them all locked (no line is appended meanwhile) until
 * access_buffer_release(): the reopen happens in between. */
void access_buffer_hold(void);
void access_buffer_release(void);
/* `lf` is about to be closed: write the lines any buffer holds for it. */
void access_buffer_forget(struct logfile *lf);

#endif
