/* The TLS listener's key material: read once at start (the files may be root's only, and the
 * HTTP side may run unprivileged afterwards), checked with GnuTLS so that a wrong file is a clear
 * start-up error rather than libmicrohttpd's "failed to start", and handed to libmicrohttpd. */
#ifndef MPD_API_TLS_H
#define MPD_API_TLS_H

#include "common/err.h"

struct tls_files {
	char *cert;   /* owned: PEM certificate chain, NUL-terminated */
	char *key;    /* owned: PEM private key; wiped when freed */
	char *ca;     /* owned: PEM CAs a client certificate must chain to; NULL: no client certificates */
};

/* Reads and checks the files (key matches certificate, the CA file holds at least one certificate).
 * ca_path may be NULL. 0, or -1 with config.tls. */
int tls_files_load(struct tls_files *t, const char *cert_path, const char *key_path, const char *ca_path, mp_err *e);
void tls_files_free(struct tls_files *t);

#endif
