/* SPDX-License-Identifier: MIT */
/* Files programs and device models write, written safely (safe-file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "safe-file.h"

int safe_file_open(struct safe_file *sf, const char *path)
{
	const char *slash = strrchr(path, '/');
	int n, fd;

	memset(sf, 0, sizeof(*sf));
	if (!*path || (slash && !slash[1]))
		return -EISDIR;
	if ((size_t)snprintf(sf->path, sizeof(sf->path), "%s", path) >= sizeof(sf->path))
		return -ENAMETOOLONG;
	/* beside the target (the rename stays in its file system), hidden */
	n = slash ? snprintf(sf->tmp, sizeof(sf->tmp), "%.*s/.%s.XXXXXX", (int)(slash - path),
			     path, slash + 1)
		  : snprintf(sf->tmp, sizeof(sf->tmp), ".%s.XXXXXX", path);
	if (n < 0 || (size_t)n >= sizeof(sf->tmp))
		return -ENAMETOOLONG;
	fd = mkostemp(sf->tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, 0644) || !(sf->f = fdopen(fd, "w"))) {
		int e = errno;

		close(fd);
		unlink(sf->tmp);
		return -e;
	}
	return 0;
}

int safe_file_close(struct safe_file *sf, int ok)
{
	int ret = 0;

	if (!sf->f)
		return -EBADF;
	if (fflush(sf->f) || fsync(fileno(sf->f)))
		ret = -errno;
	if (fclose(sf->f) && !ret)
		ret = -errno;
	sf->f = NULL;
	if (!ret && ok && rename(sf->tmp, sf->path))
		ret = -errno;
	if (ret || !ok)
		unlink(sf->tmp);
	return ret;
}

FILE *safe_fopen_w(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	FILE *f;

	if (fd < 0)
		return NULL;
	f = fdopen(fd, "w");
	if (!f)
		close(fd);
	return f;
}
