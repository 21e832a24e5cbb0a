/* Shared by the harnesses: the libFuzzer entry point, a NUL-terminated copy of the input, and an
 * assertion that aborts (so libFuzzer and the replay driver both see a property violation as a
 * crash, with the reason on stderr). */
#ifndef MPD_FUZZ_H
#define MPD_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_ASSERT(cond, ...)                                                            \
	do {                                                                            \
		if (!(cond)) {                                                          \
			fprintf(stderr, "%s:%d: property violated: %s: ", __FILE__,      \
				__LINE__, #cond);                                       \
			fprintf(stderr, __VA_ARGS__);                                   \
			fputc('\n', stderr);                                            \
			abort();                                                        \
		}                                                                       \
	} while (0)

/* The input as a C string (cut at the first NUL, as every parser here sees text); caller frees. */
static inline char *fz_cstr(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

#endif
