/* Reading hugetlb pools for the API and for resize results, and the availability question. */
#ifndef MPD_OPS_POOLS_H
#define MPD_OPS_POOLS_H

#include <jansson.h>
#include <stdint.h>

#include "common/err.h"
#include "server/kernel/hugetlb.h"

struct app;

/* Size text from a client ("2M", "2048kB", "1G") to a size the kernel has, else
 * hugepages.unknown_size (kind not_found: the API decides whether that is a missing resource or
 * bad content in a body). */
int pools_size(const struct app *app, const char *text, uint64_t *size_kb, mp_err *e);

/* One pool as JSON: {"size":"2M","size_kb":2048,"nr","free","resv","surplus","overcommit",
 * "nodes":[{"node":0,"nr","free","surplus"}]}. Owned by the caller. */
json_t *pools_json(const struct htlb_pool *p);
/* Reads and formats one pool (500 MPE_HUGEPAGES_READ with the errno on failure). */
json_t *pools_get(const struct app *app, uint64_t size_kb, mp_err *e);
/* Every size the kernel offers, as a JSON array. */
json_t *pools_list(const struct app *app, mp_err *e);

/* Can count pages of this size be had on node (< 0: anywhere) now? Free pages already in the
 * pool, or how many the pool would have to grow, with the node's free memory as a hint.
 * 422 MPE_RESIZE_BAD_NODE for an unknown or memory-less node. */
json_t *pools_availability(const struct app *app, uint64_t size_kb, int node, uint64_t count, mp_err *e);

#endif
