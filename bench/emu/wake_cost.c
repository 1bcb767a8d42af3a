/* SPDX-License-Identifier: MIT */
/*
 * wake-cost: what one sleep and its wake-up cost the process that sleeps,
 * on this machine. A client that sleeps on its completion interrupt pays
 * this once per sleep, and where clients share CPUs it sleeps at least
 * once per queue depth of completions (it submits its depth, then has
 * nothing to do), so it bounds how close a sleeping mode can come to
 * polling (docs/benchmarks.md, the fairness section).
 *
 * A waker on one CPU raises every --gap-us; the sleeper on another waits
 * for each raise and counts its own CPU time (CLOCK_THREAD_CPUTIME_ID):
 *   datagram  the simulated fabric's interrupt: a unix datagram, the
 *             sleeper poll()s, then takes it (src/backend/sim/irq.c)
 *   futex     the cheapest wake-up one process can give another: a word
 *             in shared memory, FUTEX_WAIT and FUTEX_WAKE
 *
 * usage: wake-cost [--wakes N] [--gap-us US]; wake-cost --help
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "clock.h"
#include "opt.h"
#include "sched-acct.h"

static void pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof(s), &s);	/* best effort: one CPU runs both */
}

static long futex(uint32_t *w, int op, uint32_t v, const struct timespec *ts)
{
	return syscall(SYS_futex, w, op, v, ts, NULL, 0);
}

/* The waker: a raise every @gap ns until killed. @w[0] the futex word, @w[1]
 * set while the sleeper waits on it. */
static __attribute__((noreturn)) void waker(int futexes, int sk, uint32_t *w, uint64_t gap)
{
	uint32_t m = 0;

	pin(0);
	for (;;) {
		uint64_t t = sio__now_ns();

		while (sio__now_ns() - t < gap)
			;	/* spun, not slept: the waker's own wake-ups stay out of it */
		if (!futexes) {
			send(sk, &m, sizeof(m), MSG_DONTWAIT);
			continue;
		}
		__atomic_add_fetch(&w[0], 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&w[1], __ATOMIC_SEQ_CST))
			futex(&w[0], FUTEX_WAKE, 1, NULL);
	}
}

/* One wake-up by futex; every sleep bounded (100 ms), as a client's is. */
static void futex_wait_once(uint32_t *w, uint32_t *seen)
{
	const struct timespec ts = { 0, 100000000 };

	for (;;) {
		uint32_t v = __atomic_load_n(&w[0], __ATOMIC_SEQ_CST);

		if (v != *seen) {
			*seen = v;
			return;
		}
		__atomic_store_n(&w[1], 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&w[0], __ATOMIC_SEQ_CST) == v)
			futex(&w[0], FUTEX_WAIT, v, &ts);
		__atomic_store_n(&w[1], 0, __ATOMIC_SEQ_CST);
	}
}

/* The sleeper's CPU per wake-up, in ns. */
static double measure(int futexes, uint64_t wakes, uint64_t gap)
{
	uint32_t *w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	uint64_t c0, i;
	uint32_t seen = 0, m;
	int sk[2];
	pid_t pid;

	if (w == MAP_FAILED || socketpair(AF_UNIX, SOCK_DGRAM, 0, sk)) {
		perror("wake-cost");
		exit(1);
	}
	pid = fork();
	if (pid < 0) {
		perror("wake-cost: fork");
		exit(1);
	}
	if (pid == 0)
		waker(futexes, sk[1], w, gap);
	pin(1);
	c0 = sio__thread_cpu_ns();
	for (i = 0; i < wakes; i++) {
		if (futexes) {
			futex_wait_once(w, &seen);
			continue;
		}
		poll(&(struct pollfd){ .fd = sk[0], .events = POLLIN }, 1, 100);
		while (recv(sk[0], &m, sizeof(m), MSG_DONTWAIT) > 0)
			;
	}
	c0 = sio__thread_cpu_ns() - c0;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(sk[0]);
	close(sk[1]);
	munmap(w, 4096);
	return (double)c0 / (double)wakes;
}

static void usage(FILE *o)
{
	fprintf(o, "usage: wake-cost [options]\n"
		"What one sleep and its wake-up cost the process that sleeps: a waker on\n"
		"one CPU raises every --gap-us, a sleeper on another waits for each raise\n"
		"and counts its own CPU time; the simulated fabric's interrupt (a unix\n"
		"datagram) and a futex (the cheapest).\n\n"
		"  -n, --wakes N         wake-ups of each kind (default 100000)\n"
		"  -g, --gap-us US       between two raises (default 20)\n"
		PROG_HELP);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = { { "wakes", required_argument, NULL, 'n' },
					    { "gap-us", required_argument, NULL, 'g' },
					    PROG_LONGOPTS, { NULL, 0, NULL, 0 } };
	uint64_t wakes = 100000, gap = 20;
	double dg, fx;
	int c;

	prog_init("wake-cost", usage);
	while ((c = prog_getopt(argc, argv, "n:g:h", lo)) != -1) {
		if (c == 'n')
			wakes = prog_u64("--wakes", optarg, 1000, 100000000);
		else if (c == 'g')
			gap = prog_u64("--gap-us", optarg, 5, 100000);
		else
			prog_usage_error("an option wake-cost does not take");
	}
	prog_no_args(argc, argv);
	dg = measure(0, wakes, gap * 1000);
	fx = measure(1, wakes, gap * 1000);
	printf("the sleeper's CPU per wake-up, %llu wake-ups, one every %llu us, %ld CPUs:\n",
	       (unsigned long long)wakes, (unsigned long long)gap, sysconf(_SC_NPROCESSORS_ONLN));
	printf("  datagram (the simulated fabric's interrupt)  %6.2f us\n", dg / 1e3);
	printf("  futex (the cheapest)                          %6.2f us\n", fx / 1e3);
	printf("a client sleeping once per QD completions pays, per I/O: QD 8 %.2f / %.2f us, "
	       "QD 32 %.2f / %.2f us\n", dg / 8e3, fx / 8e3, dg / 32e3, fx / 32e3);
	return 0;
}
