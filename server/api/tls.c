/* TLS key material for the TCP listener (see tls.h). */
#include "server/api/tls.h"

#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TLS_FILE_MAX (1024 * 1024)   /* a PEM chain or CA bundle larger than this is not one */

/* The whole file as a NUL-terminated string (owned by the caller), or NULL with e set. */
static char *slurp(const char *what, const char *path, mp_err *e)
{
	struct stat st;
	char *buf = NULL;
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0) {
		mp_fail(e, MPE_CONFIG_TLS, errno, "cannot open the TLS %s %s: %s", what, path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 || st.st_size > TLS_FILE_MAX) {
		mp_fail(e, MPE_CONFIG_TLS, 0, "the TLS %s %s is not a regular file of 1 byte to 1 MiB", what, path);
		goto fail;
	}
	if (!(buf = malloc((size_t)st.st_size + 1))) {
		mp_nomem(e);
		goto fail;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			mp_fail(e, MPE_CONFIG_TLS, n < 0 ? errno : 0, "cannot read the TLS %s %s", what, path);
			goto fail;
		}
		got += (size_t)n;
	}
	buf[got] = '\0';
	close(fd);
	return buf;
fail:
	if (buf) {
		explicit_bzero(buf, (size_t)st.st_size);
		free(buf);
	}
	close(fd);
	return NULL;
}

int tls_files_load(struct tls_files *t, const char *cert_path, const char *key_path, const char *ca_path, mp_err *e)
{
	gnutls_certificate_credentials_t cred = NULL;   /* owned; only for the check */
	gnutls_datum_t c, k;
	int rc;

	memset(t, 0, sizeof *t);
	if (!(t->cert = slurp("certificate", cert_path, e)) || !(t->key = slurp("key", key_path, e)) ||
	    (ca_path && !(t->ca = slurp("client CA", ca_path, e))))
		goto fail;
	if (gnutls_certificate_allocate_credentials(&cred) < 0) {
		mp_nomem(e);
		goto fail;
	}
	c = (gnutls_datum_t){ (unsigned char *)t->cert, (unsigned)strlen(t->cert) };
	k = (gnutls_datum_t){ (unsigned char *)t->key, (unsigned)strlen(t->key) };
	if ((rc = gnutls_certificate_set_x509_key_mem(cred, &c, &k, GNUTLS_X509_FMT_PEM)) < 0) {
		mp_fail(e, MPE_CONFIG_TLS, 0, "the TLS certificate %s and key %s cannot be used together: %s",
			cert_path, key_path, gnutls_strerror(rc));
		goto fail;
	}
	if (t->ca) {
		gnutls_datum_t a = { (unsigned char *)t->ca, (unsigned)strlen(t->ca) };
		if ((rc = gnutls_certificate_set_x509_trust_mem(cred, &a, GNUTLS_X509_FMT_PEM)) <= 0) {
			mp_fail(e, MPE_CONFIG_TLS, 0, "the TLS client CA %s holds no usable certificate%s%s", ca_path,
				rc < 0 ? ": " : "", rc < 0 ? gnutls_strerror(rc) : "");
			goto fail;
		}
	}
	gnutls_certificate_free_credentials(cred);
	return 0;
fail:
	if (cred)
		gnutls_certificate_free_credentials(cred);
	tls_files_free(t);
	return -1;
}

void tls_files_free(struct tls_files *t)
{
	if (!t)
		return;
	if (t->key)
		explicit_bzero(t->key, strlen(t->key));
	free(t->key);
	free(t->cert);
	free(t->ca);
	memset(t, 0, sizeof *t);
}
