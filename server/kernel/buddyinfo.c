/* /proc/buddyinfo and the kernel's fragmentation indices (see the header for the formulas). */
#include "server/kernel/buddyinfo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/kernel/sysfs.h"

int buddy_parse(const char *text, struct buddyinfo *b)
{
	const char *line = text;

	b->n = 0;
	while (*line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char buf[512], *p, *tok, *save = NULL;
		struct buddy_zone *z;
		unsigned long node;

		if (len == 0)
			goto next;
		if (len >= sizeof buf)
			return -EINVAL;
		if (b->n == BUDDY_MAX_ZONES)
			return -E2BIG;
		memcpy(buf, line, len);
		buf[len] = '\0';
		z = &b->z[b->n];
		memset(z, 0, sizeof *z);
		/* "Node 0, zone   Normal   13 854 ..." */
		if (strncmp(buf, "Node ", 5))
			return -EINVAL;
		node = strtoul(buf + 5, &p, 10);
		if (p == buf + 5 || strncmp(p, ", zone", 6) || node > 65535)
			return -EINVAL;
		z->node = (unsigned)node;
		p += 6;
		if (!(tok = strtok_r(p, " \t", &save)) || strlen(tok) >= sizeof z->zone)
			return -EINVAL;
		strcpy(z->zone, tok);
		while ((tok = strtok_r(NULL, " \t", &save))) {
			char *q;
			if (z->norders == BUDDY_MAX_ORDERS)
				return -E2BIG;
			if (*tok < '0' || *tok > '9')
				return -EINVAL;
			z->free[z->norders++] = strtoull(tok, &q, 10);
			if (*q)
				return -EINVAL;
		}
		if (!z->norders)
			return -EINVAL;
		b->n++;
next:
		if (!end)
			break;
		line = end + 1;
	}
	return 0;
}

int buddy_read(const char *procfs_root, struct buddyinfo *b)
{
	char *buf = malloc(65536);
	int r;

	if (!buf)
		return -ENOMEM;
	r = kfs_read(procfs_root, "buddyinfo", buf, 65536);
	if (r >= 0)
		r = buddy_parse(buf, b);
	free(buf);
	return r;
}

int buddy_node(const struct buddyinfo *b, unsigned node, uint64_t free[BUDDY_MAX_ORDERS])
{
	int n = 0;

	memset(free, 0, BUDDY_MAX_ORDERS * sizeof *free);
	for (int i = 0; i < b->n; i++) {
		if (b->z[i].node != node)
			continue;
		for (int o = 0; o < b->z[i].norders; o++)
			free[o] += b->z[i].free[o];
		n = b->z[i].norders > n ? b->z[i].norders : n;
	}
	return n;
}

void buddy_index(const uint64_t *free, int norders, unsigned order, struct buddy_index *x)
{
	memset(x, 0, sizeof *x);
	for (int o = 0; o < norders; o++) {
		x->free_blocks_total += free[o];
		x->free_pages += free[o] << o;
		if ((unsigned)o >= order)
			x->free_blocks_suitable += free[o] << (o - order);
	}
	/* unusable_free_index() */
	x->unusable = x->free_pages ? (int)((x->free_pages - (x->free_blocks_suitable << order)) * 1000ull /
					    x->free_pages)
				    : 1000;
	/* __fragmentation_index() */
	if (!x->free_blocks_total)
		x->fragmentation = 0;
	else if (x->free_blocks_suitable)
		x->fragmentation = -1000;
	else
		x->fragmentation = (int)(1000 - (1000 + x->free_pages * 1000ull / (1ull << order)) / x->free_blocks_total);
}
