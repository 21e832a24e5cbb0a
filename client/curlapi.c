#include "client/curlapi.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "client/out.h"

/* Debian's GnuTLS flavour, the one packaging/debian/control names (libcurl3-gnutls) and the e2e
 * TLS tests exercise. No fallback to the OpenSSL flavour (libcurl.so.4): it would be a second,
 * untested TLS path with other CA defaults and other error texts, for hosts that lack a package
 * both the .deb and the build dependencies (libcurl4-gnutls-dev) already pull in. */
#define SYSTEM_LIBCURL "libcurl-gnutls.so.4"
#define SYSTEM_PACKAGE "libcurl3-gnutls"

/* The libcurl this executable is linked with: the embedded one, or the system's in a build
 * without it (then it serves both transports). */
static const struct curlapi linked = {
	.global_init = curl_global_init,
	.global_cleanup = curl_global_cleanup,
	.easy_init = curl_easy_init,
	.easy_setopt = curl_easy_setopt,
	.easy_perform = curl_easy_perform,
	.easy_getinfo = curl_easy_getinfo,
	.easy_reset = curl_easy_reset,
	.easy_cleanup = curl_easy_cleanup,
	.easy_strerror = curl_easy_strerror,
	.slist_append = curl_slist_append,
	.slist_free_all = curl_slist_free_all,
};

#ifdef MPD_CURL_EMBEDDED
/* Where dlsym's answer for each symbol goes: every field of struct curlapi, by name. */
static const struct {
	const char *name;
	size_t off;
} symbols[] = {
	{ "curl_global_init", offsetof(struct curlapi, global_init) },
	{ "curl_global_cleanup", offsetof(struct curlapi, global_cleanup) },
	{ "curl_easy_init", offsetof(struct curlapi, easy_init) },
	{ "curl_easy_setopt", offsetof(struct curlapi, easy_setopt) },
	{ "curl_easy_perform", offsetof(struct curlapi, easy_perform) },
	{ "curl_easy_getinfo", offsetof(struct curlapi, easy_getinfo) },
	{ "curl_easy_reset", offsetof(struct curlapi, easy_reset) },
	{ "curl_easy_cleanup", offsetof(struct curlapi, easy_cleanup) },
	{ "curl_easy_strerror", offsetof(struct curlapi, easy_strerror) },
	{ "curl_slist_append", offsetof(struct curlapi, slist_append) },
	{ "curl_slist_free_all", offsetof(struct curlapi, slist_free_all) },
};
_Static_assert(sizeof symbols / sizeof symbols[0] * sizeof(void (*)(void)) == sizeof(struct curlapi),
	       "every field of struct curlapi is loaded by name");
_Static_assert(sizeof(void *) == sizeof(void (*)(void)), "dlsym's pointers are function pointers");

/* The system's libcurl, loaded once. RTLD_LOCAL keeps its symbols out of the global scope; its
 * own calls to curl_* bind to itself because this executable exports none (the Makefile links the
 * embedded archive with --exclude-libs; tests/e2e/test_cli_transport.py checks nm -D). Never
 * dlclosed: GnuTLS registers exit handlers. */
static const struct curlapi *system_libcurl(const char *url)
{
	static struct curlapi api;
	static bool loaded;
	void *lib;      /* owned by the process: never closed */

	if (loaded)
		return &api;
	if (!(lib = dlopen(SYSTEM_LIBCURL, RTLD_NOW | RTLD_LOCAL))) {
		out_error("--url %s needs the system's libcurl: %s (install the package " SYSTEM_PACKAGE ")", url, dlerror());
		return NULL;
	}
	for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
		void *p = dlsym(lib, symbols[i].name);
		if (!p) {
			out_error("the system's " SYSTEM_LIBCURL " has no %s (reinstall the package " SYSTEM_PACKAGE ")",
				  symbols[i].name);
			return NULL;
		}
		memcpy((char *)&api + symbols[i].off, &p, sizeof p);
	}
	loaded = true;
	return &api;
}
#else
static const struct curlapi *system_libcurl(const char *url)
{
	(void)url;
	return &linked;
}
#endif

/* "http://HOST[:PORT]" (the shape cli_remote_setup allowed) whose HOST is loopback written out:
 * 127.0.0.0/8, [::1] or localhost (which libcurl itself resolves to loopback, asking no DNS). */
static bool loopback_http(const char *url)
{
	char host[64];
	const char *h = url + 7;
	size_t n;
	struct in_addr a4;
	struct in6_addr a6;

	if (strncmp(url, "http://", 7) != 0)
		return false;
	n = h[0] == '[' ? strcspn(h, "]") + 1 : strcspn(h, ":");
	if (n >= sizeof host)
		return false;
	memcpy(host, h, n);
	host[n] = '\0';
	if (!strcasecmp(host, "localhost"))
		return true;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (n > 2 && host[0] == '[' && host[n - 1] == ']') {
		host[n - 1] = '\0';
		return inet_pton(AF_INET6, host + 1, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
	}
	return false;
}

int curlapi_open(struct cli *c)
{
	bool network = c->url && !loopback_http(c->url);
	const struct curlapi *api = network ? system_libcurl(c->url) : &linked;

	if (!api)
		return EXIT_UNREACHABLE;
	/* No TLS back end to set up for the local daemon (start-up time); over the network there is. */
	if (api->global_init(network ? CURL_GLOBAL_DEFAULT : CURL_GLOBAL_NOTHING) != CURLE_OK) {
		out_error("cannot initialise libcurl");
		return EXIT_REFUSED;
	}
	c->api = api;
	return EXIT_OK;
}

void curlapi_close(struct cli *c)
{
	if (!c->api)
		return;
	if (c->curl)
		c->api->easy_cleanup(c->curl);
	c->curl = NULL;
	c->api->global_cleanup();
	c->api = NULL;
}

void curlapi_describe(FILE *f)
{
	const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);

#ifdef MPD_CURL_EMBEDDED
	fprintf(f, "unix socket: libcurl/%s embedded (Debian's curl %s, HTTP only)", v->version, MPD_CURL_EMBEDDED);
#else
	fprintf(f, "unix socket: libcurl/%s of the system (not embedded: %s)", v->version,
		MPD_CURL_SYSTEM == 2 ? "its sources could not be downloaded at build time" : "built with CURL_MODE=system");
#endif
	fprintf(f, ", TLS %s, protocols:", v->ssl_version ? v->ssl_version : "none");
	for (const char *const *p = v->protocols; *p; p++)
		fprintf(f, " %s", *p);
#ifdef MPD_CURL_EMBEDDED
	fprintf(f, "\nhttps: the system's " SYSTEM_LIBCURL ", loaded by a command that uses it\n");
#else
	fprintf(f, "\nhttps: the same libcurl\n");
#endif
}
