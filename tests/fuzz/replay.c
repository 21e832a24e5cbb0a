/* Replays inputs through a harness without libFuzzer, so the committed corpus runs in `make test`
 * with gcc and ASan/UBSan. Arguments are files or directories (every regular file in them).
 * Each input runs in its own child process, so one crash is one failed check and the rest still
 * run; a child exits normally, so LeakSanitizer checks it too. Prints a Check-style summary line
 * ("Checks: N, Failures: F, Errors: E") that tests/run reads; exits non-zero on any failure, and
 * when there was nothing to replay (an empty corpus proves nothing). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"

/* Optional in a harness, as in libFuzzer: one-time setup before any input. */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int checks, failures, errors;

static int read_all(const char *path, uint8_t **data, size_t *size)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 4096, n = 0;
	uint8_t *buf = malloc(cap);

	if (!f || !buf) {
		if (f)
			fclose(f);
		free(buf);
		return -1;
	}
	for (;;) {
		size_t r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (n < cap)
			break;
		uint8_t *nb = realloc(buf, cap * 2);
		if (!nb) {
			free(buf);
			fclose(f);
			return -1;
		}
		buf = nb;
		cap *= 2;
	}
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		free(buf);
		return -1;
	}
	*data = buf;
	*size = n;
	return 0;
}

static void run_one(const char *path)
{
	uint8_t *data;
	size_t size;
	int st;
	pid_t pid;

	if (read_all(path, &data, &size) < 0) {
		fprintf(stderr, "replay: cannot read %s: %s\n", path, strerror(errno));
		errors++;
		return;
	}
	checks++;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "replay: fork: %s\n", strerror(errno));
		errors++;
		free(data);
		return;
	}
	if (pid == 0) {
		alarm(20);   /* a hang is a failure too, not a stuck test run */
		/* The harness sees exactly the input's bytes, in a heap block of that size, so a read
		 * past the end is caught as it would be under libFuzzer. */
		uint8_t *exact = malloc(size ? size : 1);
		memcpy(exact, data, size);
		free(data);
		LLVMFuzzerTestOneInput(exact, size);
		free(exact);
		exit(0);
	}
	free(data);
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "replay: FAILED %s (%s %d)\n", path, WIFSIGNALED(st) ? "signal" : "exit",
			WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		failures++;
	}
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static void run_path(const char *path)
{
	struct stat sb;
	struct dirent **ents;
	int n;

	if (stat(path, &sb) < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		errors++;
		return;
	}
	if (!S_ISDIR(sb.st_mode)) {
		run_one(path);
		return;
	}
	if ((n = scandir(path, &ents, NULL, by_name)) < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		errors++;
		return;
	}
	for (int i = 0; i < n; i++) {
		char sub[4096];
		if (ents[i]->d_name[0] != '.') {
			snprintf(sub, sizeof sub, "%s/%s", path, ents[i]->d_name);
			if (stat(sub, &sb) == 0 && S_ISREG(sb.st_mode))
				run_one(sub);
		}
		free(ents[i]);
	}
	free(ents);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++)
		run_path(argv[i]);
	printf("%d%%: Checks: %d, Failures: %d, Errors: %d\n",
	       checks ? 100 * (checks - failures) / checks : 0, checks, failures, errors);
	return failures || errors || !checks ? 1 : 0;
}
