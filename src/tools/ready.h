/* SPDX-License-Identifier: MIT */
#ifndef SIO_PROGRAMS_READY_H
#define SIO_PROGRAMS_READY_H

/*
 * --ready-file: write @id and a newline to @path, through a temporary file
 * renamed into place, so a script polling for it never reads half a line.
 * Return: 0 or -errno.
 */
int ready_file_write(const char *path, long long id);

#endif
