#!/bin/sh
# Runs a command with stderr merged into stdout (in order) and prints its exit status, so one
# CTest regular expression can check messages and status together.
# Usage: exit_code.sh [--stdout FILE] COMMAND ARGS...
if [ "$1" = "--stdout" ]; then
  out=$2
  shift 2
  "$@" 2>&1 > "$out"
else
  "$@" 2>&1
fi
echo "exit=$?"
