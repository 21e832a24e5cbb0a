/* The profile at start and on a change of the profiles directory: the glue between main(), the
 * ConfigMap reload (ops/profile_reload.h) and the one entry point that activates a profile
 * (ops/profile_apply.h: profile_activate).
 *
 * At start, before READY=1: the profile to apply is the configured one (--profile); with none
 * configured, the one whose apply the previous daemon left interrupted (SIGKILL, power loss: its
 * job reads "interrupted" since the job runner's recovery), so that an activation cut short is
 * completed. An apply converges (keys in sync are not written, pools resize to their target), so
 * completing is applying again. main() waits for it: up to the pools' deadline and
 * PROFILE_BOOT_SLACK_MS more, pinging systemd's watchdog; past that it is ready anyway and the
 * job goes on (the profile state says applying; GET /v1/profile after it ends). */
#ifndef MPD_OPS_PROFILE_BOOT_H
#define MPD_OPS_PROFILE_BOOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/app.h"
#include "server/ops/profile_reload.h"

/* Beyond the pools' deadline: the knobs' transaction, the cgroups and the read-back. */
#define PROFILE_BOOT_SLACK_MS 30000

/* Applies the start-time profile and waits (see above); deadline_ms: the pools' deadline (0: the
 * default). ping, when not NULL, is called about every second of the wait (the watchdog); false
 * from it ends the wait (a SIGTERM came: the job goes on until the stop cancels it). Writes a
 * sentence for STATUS= into status. Never fatal: an invalid profile is logged and in the state. */
void profile_boot_apply(const struct app *app, int64_t deadline_ms, bool (*ping)(void), char *status, size_t len);

/* What the reload's hooks work with (main()'s, outliving the reload). */
struct profile_boot_ctx {
	const struct app *app;       /* borrowed */
	int64_t deadline_ms;         /* the pools' deadline of a reload's apply (0: the default) */
};

/* The reload's hooks over c: the profile in force from app->profile_state, a valid set activates
 * it again (source "reload"; behind an activation already running), an invalid one is recorded in
 * the state (reason invalid_profile when it is the profile in force that fails). */
void profile_boot_hooks(struct profile_boot_ctx *c, struct reload_hooks *h);

#endif
