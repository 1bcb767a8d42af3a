/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>
#include "ready.h"

int ready_file_write(const char *path, long long id)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "%lld\n", id);
	if (fclose(f) || rename(tmp, path))
		return -errno;
	return 0;
}
