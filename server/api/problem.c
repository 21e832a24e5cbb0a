/* Problems: the only place where an error's kind becomes an HTTP status (RFC 9457 bodies). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "server/api/api.h"

static const int kind_status[MPK__COUNT] = {
	[MPK_INVALID] = 400,       [MPK_UNAUTHORIZED] = 401,  [MPK_FORBIDDEN] = 403,     [MPK_NOT_FOUND] = 404,
	[MPK_METHOD] = 405,        [MPK_MISDIRECTED] = 421,   [MPK_CONFLICT] = 409,      [MPK_TOO_LARGE] = 413,
	[MPK_URI_TOO_LONG] = 414,  [MPK_MEDIA_TYPE] = 415,    [MPK_UNPROCESSABLE] = 422, [MPK_TOO_MANY] = 429,
	[MPK_KERNEL] = 409,        [MPK_NOMEM] = 500,         [MPK_INTERNAL] = 500,
	[MPK_NOT_IMPLEMENTED] = 501, [MPK_UNAVAILABLE] = 503,   [MPK_STORE_BUSY] = 503,    [MPK_STORE_FULL] = 507,
};

int api_kind_status(enum mp_kind kind, int sys_errno)
{
	/* The kernel's EINVAL/ERANGE mean "this value is not acceptable" (content); any other errno
	 * (EACCES, EBUSY, EROFS...) is about the state of the host, which is a conflict. */
	if (kind == MPK_KERNEL)
		return sys_errno == EINVAL || sys_errno == ERANGE ? 422 : 409;
	return kind >= 0 && kind < MPK__COUNT && kind_status[kind] ? kind_status[kind] : 500;
}

int api_status(const mp_err *e)
{
	if (e->http_status)
		return e->http_status;
	return api_kind_status(mp_code_kind(e->code), e->sys_errno);
}

const char *api_status_title(int status)
{
	static const struct { int status; const char *title; } titles[] = {
		{ 400, "Bad Request" }, { 401, "Unauthorized" }, { 403, "Forbidden" },
		{ 404, "Not Found" }, { 405, "Method Not Allowed" }, { 409, "Conflict" },
		{ 413, "Content Too Large" }, { 414, "URI Too Long" }, { 415, "Unsupported Media Type" }, { 421, "Misdirected Request" },
		{ 422, "Unprocessable Content" }, { 429, "Too Many Requests" }, { 500, "Internal Server Error" }, { 501, "Not Implemented" },
		{ 503, "Service Unavailable" }, { 507, "Insufficient Storage" },
	};
	for (size_t i = 0; i < sizeof titles / sizeof titles[0]; i++)
		if (titles[i].status == status)
			return titles[i].title;
	return status >= 500 ? "Server Error" : "Client Error";
}

json_t *problem_json(const mp_err *e, const char *instance)
{
	const char *code = mp_code_name(e->code);
	int status = api_status(e);
	char type[128];
	json_t *p;

	snprintf(type, sizeof type, "urn:mempolicyd:problem:%s", code);
	p = json_pack("{s:s, s:s, s:i, s:s, s:s}", "type", type, "title", api_status_title(status), "status",
		      status, "detail", e->detail, "code", code);
	if (!p)   /* the detail quoted client text that is not UTF-8: say so rather than send "{}" */
		p = json_pack("{s:s, s:s, s:i, s:s, s:s}", "type", type, "title", api_status_title(status),
			      "status", status, "detail", "(the detail quoted text that is not valid UTF-8)",
			      "code", code);
	if (p && instance)
		json_object_set_new(p, "instance", json_string(instance));
	if (p && e->sys_errno) {
		json_object_set_new(p, "errno", json_integer(e->sys_errno));
		json_object_set_new(p, "errno_name", json_string(strerrorname_np(e->sys_errno)
								  ? strerrorname_np(e->sys_errno) : "?"));
	}
	return p;
}

int api_list_errors(FILE *f)
{
	for (int c = MPE_NONE + 1; c < MPE__COUNT; c++) {
		enum mp_kind k = mp_code_kind((enum mp_code)c);
		char status[16];
		if (k == MPK_KERNEL)   /* the errno decides: both are possible */
			snprintf(status, sizeof status, "%d|%d", api_kind_status(k, 0), api_kind_status(k, EINVAL));
		else
			snprintf(status, sizeof status, "%d", api_kind_status(k, 0));
		fprintf(f, "%s\t%s\t%s\t%s\n", mp_code_name((enum mp_code)c), status, mp_kind_name(k),
			mp_code_meaning((enum mp_code)c));
	}
	return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}
