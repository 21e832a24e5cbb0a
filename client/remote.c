/* mempolicyctl over the network: the URL, the CA and the bearer token (see cli.h). The token is
 * never taken from argv, where every user would see it in ps; it comes from $MEMPOLICYD_TOKEN or
 * a file (--token-file), and is wiped from memory at exit. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/cli.h"
#include "client/out.h"

/* "https://host:port" or "http://[::1]:8700": a scheme, a host of name or address characters, an
 * optional decimal port, and nothing else (no user, path, query or fragment: the CLI adds the
 * path). */
static bool good_url(const char *u, bool *https)
{
	const char *p;

	if (strlen(u) > CLI_URL_MAX)
		return false;
	if (!strncmp(u, "https://", 8)) {
		*https = true;
		p = u + 8;
	} else if (!strncmp(u, "http://", 7)) {
		*https = false;
		p = u + 7;
	} else {
		return false;
	}
	if (*p == '[') {
		size_t n = strspn(p + 1, "0123456789abcdefABCDEF:.");
		if (!n || p[1 + n] != ']')
			return false;
		p += n + 2;
	} else {
		size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-");
		if (!n)
			return false;
		p += n;
	}
	if (*p == ':') {
		size_t n = strspn(p + 1, "0123456789");
		if (!n || n > 5)
			return false;
		p += n + 1;
	}
	return *p == '\0';
}

/* A token is printable ASCII without spaces: anything else could split the header it goes in. */
static bool good_token(const char *t)
{
	size_t n = strlen(t);

	if (!n || n > CLI_TOKEN_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (t[i] <= ' ' || t[i] > '~')
			return false;
	return true;
}

static char *read_token_file(const char *path)
{
	char buf[CLI_TOKEN_MAX + 2];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	char *t = NULL;

	if (fd < 0) {
		out_error("cannot read the token file %s: %s", path, strerror(errno));
		return NULL;
	}
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n < 0) {
		out_error("cannot read the token file %s: %s", path, strerror(errno));
		return NULL;
	}
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';   /* one line; a trailing newline is fine */
	t = strdup(buf);
	explicit_bzero(buf, sizeof buf);
	return t;
}

int cli_remote_setup(struct cli *c, const char *token_file)
{
	const char *env = getenv("MEMPOLICYD_TOKEN");
	bool https = false;

	if (c->url && !good_url(c->url, &https))
		return cli_usage_error(NULL, "--url wants http:// or https:// HOST[:PORT] and nothing after it");
	if (c->cacert && !c->url)
		return cli_usage_error(NULL, "--cacert is for --url https://...");
	if (token_file) {
		if (!(c->token = read_token_file(token_file)))
			return EXIT_USAGE;
	} else if (env && *env && !(c->token = strdup(env))) {
		return cli_usage_error(NULL, "out of memory");
	}
	if (c->token && !good_token(c->token))
		return cli_usage_error(NULL, "the token (from %s) is not one: at most %d printable characters "
				       "without spaces", token_file ? token_file : "$MEMPOLICYD_TOKEN", CLI_TOKEN_MAX);
	if (c->token && c->url && !https)
		return cli_usage_error(NULL, "a token is only sent over https (the URL is %s)", c->url);
	return EXIT_OK;
}

void cli_remote_free(struct cli *c)
{
	if (c->token) {
		explicit_bzero(c->token, strlen(c->token));
		free(c->token);
		c->token = NULL;
	}
}
