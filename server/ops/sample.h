/* A watch sample: the placement of a launched process now, recorded as a process.sample operation
 * (request: pid, start time, the launch operation, the sample's sequence number; result: the
 * placement). The last sample of a watch is taken when the process has exited and says how. */
#ifndef MPD_OPS_SAMPLE_H
#define MPD_OPS_SAMPLE_H

#include "server/ops/children.h"

/* wait_status: NULL while the process runs, else its waitpid status (it has exited). Failures
 * are logged: a missed sample is not an error of anyone's request. */
void sample_record(const struct app *app, const struct child_info *ci, unsigned seq, const int *wait_status);

#endif
