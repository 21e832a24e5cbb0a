/* server/log.c's two structured formats: a JSON line that a JSON parser reads back to the very
 * values logged (quotes, backslashes, control characters, newlines escaped; bytes that are not
 * UTF-8 replaced, well-formed characters kept; a long value cut at a character's start), and a
 * journal datagram with the text form, the binary form for a value holding a newline, and the
 * fields a structured event carries. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "server/log.h"
#include "tests/unit/check_main.h"

/* What log_event wrote to stderr, which points at a temporary file while it runs. */
static char *captured(const char *value, const char *message)
{
	char path[] = "/tmp/mpd-test-log-XXXXXX";
	int fd = mkstemp(path), saved = dup(STDERR_FILENO);
	struct log_field f[] = { { "MPD_VALUE", value, false }, { "MPD_NUMBER", "42", true }, { "MPD_NONE", NULL, false } };
	char *out = calloc(1, 65536);
	ssize_t n;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(log_set_format("json"), 0);
	dup2(fd, STDERR_FILENO);
	log_event(LOG_LVL_WARN, "0123456789abcdef0123456789abcdef", f, 3, "%s", message);
	dup2(saved, STDERR_FILENO);
	close(saved);
	n = pread(fd, out, 65535, 0);
	ck_assert_int_gt(n, 0);
	close(fd);
	unlink(path);
	return out;
}

static json_t *one_line(const char *text)
{
	json_error_t err;
	json_t *o;

	ck_assert_ptr_nonnull(strchr(text, '\n'));
	ck_assert_ptr_eq(strchr(text, '\n'), text + strlen(text) - 1);    /* exactly one line */
	o = json_loads(text, 0, &err);
	ck_assert_msg(o != NULL, "not JSON (%s): %s", err.text, text);
	return o;
}

START_TEST(json_values_come_back_as_logged)
{
	const char *nasty = "a\"b\\c\nd\te\x01 \x7f end";
	char *text = captured(nasty, "line one\nline two");
	json_t *o = one_line(text);

	ck_assert_str_eq(json_string_value(json_object_get(o, "value")), nasty);
	ck_assert_str_eq(json_string_value(json_object_get(o, "message")), "line one\nline two");
	ck_assert_int_eq(json_integer_value(json_object_get(o, "number")), 42);
	ck_assert_ptr_null(json_object_get(o, "none"));
	ck_assert_str_eq(json_string_value(json_object_get(o, "level")), "warn");
	ck_assert_str_eq(json_string_value(json_object_get(o, "message_id")), "0123456789abcdef0123456789abcdef");
	json_decref(o);
	free(text);
}
END_TEST

START_TEST(bytes_that_are_not_utf8_are_replaced_and_characters_kept)
{
	/* a stray continuation byte, a lead byte cut short, an overlong '/', an encoded surrogate,
	 * past U+10FFFF; then é, € and an emoji, which must stay */
	char *text = captured("x\x80y\xc3(z\xc0\xafw\xed\xa0\x80v\xf4\x90\x80\x80u \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "m");
	json_t *o = one_line(text);
	const char *v = json_string_value(json_object_get(o, "value"));

	ck_assert_ptr_nonnull(v);
	ck_assert_str_eq(v, "x\xef\xbf\xbdy\xef\xbf\xbd(z\xef\xbf\xbd\xef\xbf\xbdw\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
			    "v\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdu \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
	json_decref(o);
	free(text);
}
END_TEST

START_TEST(a_long_value_is_cut_at_a_character)
{
	char *big = malloc(3000);
	char *text;
	json_t *o;

	/* 1023 ASCII bytes, then two-byte characters: the cut at 1024 falls inside one */
	memset(big, 'a', 1023);
	for (int i = 1023; i < 2999 - 1; i += 2)
		big[i] = '\xc3', big[i + 1] = '\xa9';
	big[2999 - (2999 - 1023) % 2] = 0;
	text = captured(big, "m");
	o = one_line(text);
	ck_assert_int_eq(strlen(json_string_value(json_object_get(o, "value"))), 1023);
	json_decref(o);
	free(text);
	free(big);
}
END_TEST

START_TEST(journal_fields_text_and_binary_forms)
{
	char dir[] = "/tmp/mpd-test-journal-XXXXXX", path[64], buf[8192];
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct log_field f[] = { { "MPD_PLAIN", "one line", false }, { "MPD_MULTI", "two\nlines", false } };
	int s;
	ssize_t n;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/socket", dir);
	snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
	s = socket(AF_UNIX, SOCK_DGRAM, 0);
	ck_assert_int_eq(bind(s, (struct sockaddr *)&a, sizeof a), 0);
	ck_assert_int_eq(log_use_journal_socket(path), 0);
	ck_assert_str_eq(log_format(), "journal");
	log_event(LOG_LVL_INFO, "0123456789abcdef0123456789abcdef", f, 2, "hello");
	n = recv(s, buf, sizeof buf, MSG_DONTWAIT);
	ck_assert_int_gt(n, 0);
	static const char want[] = "MESSAGE=hello\nPRIORITY=6\nSYSLOG_IDENTIFIER=mempolicyd\n"
				   "MESSAGE_ID=0123456789abcdef0123456789abcdef\nMPD_PLAIN=one line\n"
				   "MPD_MULTI\n\x09\0\0\0\0\0\0\0two\nlines\n";
	ck_assert_int_eq(n, sizeof want - 1);
	ck_assert_mem_eq(buf, want, sizeof want - 1);
	log_set_format("text");
	close(s);
	unlink(path);
	rmdir(dir);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("log");
	TCase *t = tcase_create("formats");
	tcase_add_test(t, json_values_come_back_as_logged);
	tcase_add_test(t, bytes_that_are_not_utf8_are_replaced_and_characters_kept);
	tcase_add_test(t, a_long_value_is_cut_at_a_character);
	tcase_add_test(t, journal_fields_text_and_binary_forms);
	suite_add_tcase(s, t);
	return s;
}

MPD_CHECK_MAIN(suite)
