#include "common/err.h"

#include <stdio.h>
#include <string.h>

int mp_fail(mp_err *e, int status, const char *code, int sys_errno, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return -1;
	e->status = status;
	e->code = code;
	e->sys_errno = sys_errno;
	va_start(ap, fmt);
	vsnprintf(e->detail, sizeof e->detail, fmt, ap);
	va_end(ap);
	return -1;
}

void mp_err_clear(mp_err *e)
{
	memset(e, 0, sizeof *e);
}

const char *mp_status_title(int status)
{
	static const struct { int status; const char *title; } titles[] = {
		{ 400, "Bad Request" }, { 401, "Unauthorized" }, { 403, "Forbidden" },
		{ 404, "Not Found" }, { 405, "Method Not Allowed" }, { 409, "Conflict" },
		{ 413, "Content Too Large" }, { 414, "URI Too Long" }, { 415, "Unsupported Media Type" },
		{ 422, "Unprocessable Content" }, { 500, "Internal Server Error" },
		{ 503, "Service Unavailable" }, { 507, "Insufficient Storage" },
	};
	for (size_t i = 0; i < sizeof titles / sizeof titles[0]; i++)
		if (titles[i].status == status)
			return titles[i].title;
	return status >= 500 ? "Server Error" : "Client Error";
}
