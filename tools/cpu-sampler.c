/* SPDX-License-Identifier: MIT */
/*
 * A sampling CPU profiler for a machine without perf or gdb (the GPU
 * machines): preloaded into a process, it records the running thread's
 * stack every millisecond of the process's CPU time (ITIMER_PROF), and
 * writes the stacks and the process's mappings, raw, at exit or on
 * SIGUSR2 (which leaves the process running). tools/cpu-sampler.py turns
 * them into self and inclusive shares per function with addr2line.
 *
 *   LD_PRELOAD=build/cpu-sampler.so SAMPLER_OUT=FILE prog ...
 *   kill -USR2 PID; ...; tools/cpu-sampler.py FILE
 *
 * Without SAMPLER_OUT it does nothing. Stacks come from backtrace(), so a
 * frame without unwind tables may end a stack early.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#define DEPTH	24
#define MAXS	200000

static void *stacks[MAXS][DEPTH];
static int depth[MAXS];
static int tids[MAXS];
static int n;

static void on_prof(int sig)
{
	int i = __atomic_fetch_add(&n, 1, __ATOMIC_RELAXED);

	(void)sig;
	if (i >= MAXS)
		return;
	depth[i] = backtrace(stacks[i], DEPTH);
	tids[i] = (int)syscall(SYS_gettid);
}

/* Every stack so far ("S tid addr..."), then the mappings ("M line"). */
static void dump(void)
{
	const char *o = getenv("SAMPLER_OUT");
	int m = __atomic_load_n(&n, __ATOMIC_RELAXED);
	char buf[4096];
	FILE *f, *mf;

	if (!o || !(f = fopen(o, "w")))
		return;
	m = m < MAXS ? m : MAXS;
	for (int i = 0; i < m; i++) {
		fprintf(f, "S %d", tids[i]);
		for (int d = 0; d < depth[i]; d++)
			fprintf(f, " %p", stacks[i][d]);
		fputc('\n', f);
	}
	mf = fopen("/proc/self/maps", "r");
	while (mf && fgets(buf, sizeof(buf), mf))
		fprintf(f, "M %s", buf);
	if (mf)
		fclose(mf);
	fclose(f);
}

static void on_usr2(int sig)
{
	(void)sig;
	dump();
}

__attribute__((constructor)) static void start(void)
{
	struct sigaction sa = { .sa_handler = on_prof, .sa_flags = SA_RESTART };
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } };
	void *warm[4];

	if (!getenv("SAMPLER_OUT"))
		return;
	/* the unwinder is loaded here, not in the handler */
	backtrace(warm, 4);
	sigaction(SIGPROF, &sa, NULL);
	signal(SIGUSR2, on_usr2);
	atexit(dump);
	setitimer(ITIMER_PROF, &it, NULL);
}
