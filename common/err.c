#include "common/err.h"

#include <stdio.h>
#include <string.h>

static const struct {
	const char *name;
	enum mp_kind kind;
	const char *meaning;
} registry[MPE__COUNT] = {
	[MPE_NONE] = { "none", MPK_INTERNAL, "no error" },
#define MP_CODE_ROW(id, str, k, meaning) [MPE_##id] = { str, MPK_##k, meaning },
	MP_ERROR_CODES(MP_CODE_ROW)
#undef MP_CODE_ROW
};

static const char *const kind_names[MPK__COUNT] = {
#define MP_KIND_NAME(k, name) [MPK_##k] = name,
	MP_ERROR_KINDS(MP_KIND_NAME)
#undef MP_KIND_NAME
};

int mp_fail(mp_err *e, enum mp_code code, int sys_errno, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return -1;
	e->code = code;
	e->sys_errno = sys_errno;
	e->http_status = 0;
	va_start(ap, fmt);
	vsnprintf(e->detail, sizeof e->detail, fmt, ap);
	va_end(ap);
	return -1;
}

int mp_nomem(mp_err *e)
{
	return mp_fail(e, MPE_INTERNAL_NOMEM, 0, "out of memory");
}

void mp_err_clear(mp_err *e)
{
	memset(e, 0, sizeof *e);
}

static enum mp_code checked(enum mp_code code)
{
	return code > MPE_NONE && code < MPE__COUNT ? code : MPE_INTERNAL_ERROR;
}

const char *mp_code_name(enum mp_code code)
{
	return registry[checked(code)].name;
}

enum mp_kind mp_code_kind(enum mp_code code)
{
	return registry[checked(code)].kind;
}

const char *mp_code_meaning(enum mp_code code)
{
	return registry[checked(code)].meaning;
}

const char *mp_kind_name(enum mp_kind kind)
{
	return kind >= 0 && kind < MPK__COUNT ? kind_names[kind] : "internal";
}

enum mp_code mp_code_by_name(const char *s)
{
	for (int c = MPE_NONE + 1; c < MPE__COUNT; c++)
		if (!strcmp(registry[c].name, s))
			return (enum mp_code)c;
	return MPE_NONE;
}
