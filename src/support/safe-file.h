/* SPDX-License-Identifier: MIT */
#ifndef SIO_SUPPORT_SAFE_FILE_H
#define SIO_SUPPORT_SAFE_FILE_H

#include <limits.h>
#include <stdio.h>

/*
 * Files that programs and device models write (--ready-file, nvme-emu's
 * --ns-state, JSON to a file, benchmark results): through a temporary
 * made in the target's directory with O_CREAT|O_EXCL (mkostemp: a name
 * nobody could plant; a symlink there is an error, never followed),
 * renamed over the target once whole. A reader never sees half a file,
 * and a symlink planted at the target is replaced, not written through
 * (root's nvme-emu wrote its device id into the target of one). No
 * library needs it: programs and models link it (meson: sio_support_lib).
 */
struct safe_file {
	FILE *f;			/* write here */
	char tmp[PATH_MAX];
	char path[PATH_MAX];
};

/* Open @path for writing through a temporary. Return: 0 or -errno. */
int safe_file_open(struct safe_file *sf, const char *path);
/* Put it in place (or, @ok false, throw it away). Return: 0 or -errno. */
int safe_file_close(struct safe_file *sf, int ok);

/*
 * A results file (a benchmark's): opened for writing, created 0644 or
 * truncated, never through a symlink (refused: ELOOP). Return: the
 * stream, or NULL with errno set.
 */
FILE *safe_fopen_w(const char *path);

#endif
