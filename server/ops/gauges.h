/* The kernel's state as GET /metrics families: the hugetlb pools per node and size, the knobs'
 * values, the jobs queued and running, the daemon's build, kernel release and start time. Read per scrape (a few sysfs files per pool and
 * knob), here rather than in server/api/metrics.c because only ops/ touch the kernel. */
#ifndef MPD_OPS_GAUGES_H
#define MPD_OPS_GAUGES_H

#include <stdbool.h>
#include <stdio.h>

struct app;

/* Writes mempolicyd_build_info, process_start_time_seconds,
 * mempolicyd_hugepages_{nr,free,surplus,resv}_pages, mempolicyd_hugepages_page_size_bytes,
 * mempolicyd_jobs_active (the runner's list, under its lock) and mempolicyd_knob_info to f; om: OpenMetrics 1.0 names, else the text format 0.0.4. A pool or
 * knob that cannot be read is left out (the scrape still answers). */
void gauges_write(const struct app *app, FILE *f, bool om);

/* Writes mempolicyd_degraded, mempolicyd_privileged_helper_up (with privilege separation only) and
 * mempolicyd_privileged_requests_total{type}: the privileged helper's state and what it was asked. */
void gauges_write_helper(FILE *f, bool om);

#endif
