/* SPDX-License-Identifier: MIT */
/* Is a process of this kernel alive? (proc.h) */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "proc.h"

/* Fields 3 (state) and 22 (start time) of /proc/PID/stat; false if it is gone. */
static bool proc_stat(int pid, char *state, uint64_t *start)
{
	char path[64], buf[1024], *p;
	unsigned long long st = 0;
	bool ok = false;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fp = fopen(path, "re");
	if (!fp)
		return false;
	if (fgets(buf, sizeof(buf), fp) && (p = strrchr(buf, ')')) && p[1] == ' ') {
		int field = 2;
		*state = p[2];
		for (p++; *p && field < 21; p++)
			if (*p == ' ')
				field++;
		ok = sscanf(p, "%llu", &st) == 1;
	}
	fclose(fp);
	*start = st;
	return ok;
}

uint64_t sio__proc_start(int pid)
{
	uint64_t st;
	char state;

	return proc_stat(pid, &state, &st) ? st : 0;
}

bool sio__task_dead(int pid)
{
	uint64_t st;
	char state;

	if (pid <= 0 || (kill(pid, 0) && errno == ESRCH))
		return true;
	/* a zombie holds nothing; unreadable (hidepid) means it exists */
	return proc_stat(pid, &state, &st) && (state == 'Z' || state == 'X' || state == 'x');
}

bool sio__proc_alive(int pid, uint64_t start)
{
	if (pid == getpid())
		return true;
	/* a zombie or a new process with a reused pid does not count */
	return !sio__task_dead(pid) && sio__proc_start(pid) == start;
}
