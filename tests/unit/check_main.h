/* A main() for a Check test program: MPD_CHECK_MAIN(suite_fn) runs one suite and exits non-zero
 * on any failure. Each tests/unit/test_*.c is its own program, so modules are tested alone. */
#ifndef MPD_CHECK_MAIN_H
#define MPD_CHECK_MAIN_H

#include <check.h>
#include <stdlib.h>

#define MPD_CHECK_MAIN(suite_fn)                                        \
	int main(void)                                                  \
	{                                                               \
		SRunner *sr = srunner_create(suite_fn());               \
		srunner_run_all(sr, CK_NORMAL);                         \
		int failed = srunner_ntests_failed(sr);                 \
		srunner_free(sr);                                       \
		return failed ? EXIT_FAILURE : EXIT_SUCCESS;            \
	}

#endif
