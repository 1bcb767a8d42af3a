/* SPDX-License-Identifier: MIT */
/* Is a process of this kernel alive? (proc.h) */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "proc.h"

/*
 * Fields 3 (state) and 22 (start time) of /proc/PID/stat; false if it is
 * gone or unreadable. One open, read and close, no stdio: a reap looks at
 * every process of this kernel on the fabric, and in a TCG guest each
 * system call is dear.
 */
static bool proc_stat(int pid, char *state, uint64_t *start)
{
	char path[64], buf[1024], *p;
	unsigned long long st = 0;
	bool ok = false;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	if ((p = strrchr(buf, ')')) && p[1] == ' ') {
		int field = 2;
		*state = p[2];
		for (p++; *p && field < 21; p++)
			if (*p == ' ')
				field++;
		ok = sscanf(p, "%llu", &st) == 1;
	}
	*start = st;
	return ok;
}

static bool zombie(char state)
{
	return state == 'Z' || state == 'X' || state == 'x';
}

/* No task with this id at all: the cheap look, before /proc is read. */
static bool no_such_task(int pid)
{
	return pid <= 0 || (kill(pid, 0) && errno == ESRCH);
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

	if (no_such_task(pid))
		return true;
	/* a zombie holds nothing; unreadable (hidepid) means it exists */
	return proc_stat(pid, &state, &st) && zombie(state);
}

bool sio__proc_alive(int pid, uint64_t start)
{
	uint64_t st;
	char state;

	if (pid == getpid())
		return true;
	if (no_such_task(pid))
		return false;
	/* a zombie or a new process with a reused pid does not count; one whose
	 * state cannot be read (hidepid) had no start time to compare either */
	if (!proc_stat(pid, &state, &st))
		return start == 0;
	return !zombie(state) && st == start;
}
