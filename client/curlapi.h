/* The libcurl mempolicyctl talks through, as one table of function pointers, and the choice of
 * table for a command's transport:
 *
 *   local    the Unix socket, and http:// to a loopback address (127.0.0.0/8, [::1], localhost):
 *            an HTTP-only libcurl built from Debian's curl source and linked statically
 *            (tools/build-curl.sh). Loading it costs nothing at start-up, where Debian's shared
 *            libcurl-gnutls loads 33 libraries (TLS, Kerberos, LDAP, SSH, ...) that a command on
 *            the socket never uses (bench/README.md, section 3). It only ever talks to the local
 *            daemon.
 *   network  https://, and http:// to any other host: the system's libcurl-gnutls, dlopen'ed when
 *            such a command runs, so the code that faces the network gets Debian's security
 *            updates. Missing, the command says which package to install and exits 3.
 *
 * A build without the embedded copy (the sources could not be downloaded, or CURL_MODE=system)
 * links the system's libcurl, and both transports use it: then MPD_CURL_SYSTEM is defined. */
#ifndef MPD_CLIENT_CURLAPI_H
#define MPD_CLIENT_CURLAPI_H

#include <curl/curl.h>
#include <stdio.h>

#include "client/cli.h"

/* The calls the client makes, with libcurl's own signatures: the embedded and the system libcurl
 * are the same version, so a handle made by one table's easy_init goes only to that table. */
struct curlapi {
	CURLcode (*global_init)(long flags);
	void (*global_cleanup)(void);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *h, CURLoption opt, ...);
	CURLcode (*easy_perform)(CURL *h);
	CURLcode (*easy_getinfo)(CURL *h, CURLINFO info, ...);
	void (*easy_reset)(CURL *h);
	void (*easy_cleanup)(CURL *h);
	const char *(*easy_strerror)(CURLcode cc);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
};

/* Chooses the table for c's transport (c->url, checked by cli_remote_setup), loads the system
 * libcurl if that one is needed, and runs its global_init (with TLS only for the network one).
 * EXIT_OK with c->api set; else the exit code after saying why: EXIT_UNREACHABLE when the system
 * libcurl cannot be loaded (nothing was sent), EXIT_REFUSED when libcurl cannot initialise. */
int curlapi_open(struct cli *c);

/* Frees c->curl and undoes curlapi_open; harmless when it failed or was never called. */
void curlapi_close(struct cli *c);

/* For --version: which libcurl serves which transport, and the local one's protocols. */
void curlapi_describe(FILE *f);

#endif
