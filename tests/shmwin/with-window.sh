#!/bin/sh
# SPDX-License-Identifier: MIT
# Run a test on the shmwin fabric backend, with a file of its own standing in
# for the shared PCI window: with-window.sh SIZE_MB PROGRAM [ARGS...]
set -eu
size=$1
shift
win=$(mktemp "${TMPDIR:-/tmp}/sio-shmwin.XXXXXX")
trap 'rm -f "$win"' EXIT
truncate -s "${size}M" "$win"
SMARTIO_FABRIC_BACKEND=shmwin SMARTIO_SHMWIN=$win "$@"
