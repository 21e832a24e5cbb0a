-- Latency statistics are usually asked per page size (and often per node): these covering
-- indexes let them walk only those batches, already in latency order (see store/stats.c).
CREATE INDEX batches_stats_size ON batches(kind, direction, size_kb, latency_ns, node, started_ns);
CREATE INDEX batches_stats_node ON batches(kind, direction, size_kb, node, latency_ns, started_ns);
