#!/bin/sh
# node-problem-detector custom plugin (mempolicyd-drift.json): does this node's memory policy match
# its mempolicyd profile? NPD's protocol (docs/custom_plugin_monitor.md): exit 0 is OK (condition
# MemoryPolicyDrift False), 1 is NonOK (True), anything else Unknown; the first line of stdout, cut
# at max_output_length, is the condition's message.
# `mempolicyctl profile verify --exit-code`: 0 in sync, 1 drifting or degraded, 3 the daemon cannot
# be reached; anything else (2 a usage error, 4 the daemon refused) is no verdict either.
# Unreachable is Unknown, not NonOK: a daemon that is down says nothing about the settings, and a
# drift condition raised then would send an operator after the wrong problem (the daemon's own
# absence shows in Prometheus: up == 0, mempolicyd_privileged_helper_up).
ctl=${MEMPOLICYCTL:-mempolicyctl}
sock=${MEMPOLICYD_SOCKET:-/run/mempolicyd/mempolicyd.sock}
out=$("$ctl" --socket "$sock" profile verify --exit-code 2>&1)
rc=$?
# One line: NPD keeps the message, and a newline in it would only be cut.
msg=$(printf '%s' "$out" | tr '\n\t' '  ' | cut -c1-400)
case $rc in
	0) echo "in sync: $msg"; exit 0 ;;
	1) echo "drift: $msg"; exit 1 ;;
	3) echo "mempolicyd unreachable: $msg"; exit 2 ;;
	*) echo "mempolicyctl exited $rc: $msg"; exit 2 ;;
esac
