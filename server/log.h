/* Logging, with a level and a format set at start. text: one line per message on stderr (what
 * journald's stdout stream has always picked up); json: one JSON object per line on stderr, for
 * container log pipelines; journal: each message a datagram in the native journal protocol on
 * /run/systemd/journal/socket, with its fields (no libsystemd). auto, the default, is journal when
 * stderr is the journal's stream (systemd's JOURNAL_STREAM names it), else text. An event
 * (log_event) carries fields beside its message: in json mode as members, in journal mode as
 * journal fields (MESSAGE_ID, MPD_*), in text mode only the message. */
#ifndef MPD_LOG_H
#define MPD_LOG_H

#include <stdbool.h>
#include <stddef.h>

enum log_level { LOG_LVL_ERROR, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

int log_set_level(const char *name);  /* "error", "warn", "info", "debug"; 0 or -1 */
/* "auto", "text", "json" or "journal"; 0, or -1 for another word. journal connects to the
 * journal's socket now (call before any sandbox: later sends need no path lookup) and is -1
 * with errno when there is none. */
int log_set_format(const char *name);
/* journal format to another socket than /run/systemd/journal/socket (the unit tests' own); 0, or
 * -1 with errno. */
int log_use_journal_socket(const char *path);
/* In a child that closed every fd it did not keep (the privileged helper): the journal's socket
 * number may now be another file's, so it is forgotten (never closed) and connected anew. */
void log_reopen(void);
/* The format in force after log_set_format: "text", "json" or "journal". */
const char *log_format(void);

void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One field of an event. key is the journal's name (upper case, digits and "_", not starting
 * with "_": journald drops such fields); the JSON member is its lower-case spelling without a
 * leading "MPD_". number: value is written bare in JSON (the caller formatted it). */
struct log_field {
	const char *key;
	const char *value;                /* borrowed; NULL leaves the field out */
	bool number;
};

/* A structured event: message_id (32 lower-case hex digits, journald's MESSAGE_ID) and fields.
 * The values are escaped per format: a value is never trusted to be free of quotes, newlines or
 * bytes that are not UTF-8. */
void log_event(enum log_level lvl, const char *message_id, const struct log_field *fields, size_t n,
	       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#define log_error(...) log_msg(LOG_LVL_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)

#endif
