/* SPDX-License-Identifier: MIT */
/* A simulated cluster for the driver's integration tests. */

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <smartio/smartio.h>
#include <json-c/json.h>
#include "cluster.h"

static void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static const char *bin(const char *var)
{
	const char *p = getenv(var);

	cr_assert(p && *p, "%s is not set (run through meson test)", var);
	return p;
}

pid_t cluster_spawn(struct cluster *c, const char *tag, const char *const *argv)
{
	char out[512], err[512];
	const char *args[64];
	pid_t pid;
	int i, fd;

	for (i = 0; argv[i] && i < 62; i++)
		args[i] = argv[i];
	args[i] = NULL;
	args[0] = bin(argv[0]);
	snprintf(out, sizeof(out), "%s/%s.out", c->dir, tag);
	snprintf(err, sizeof(err), "%s/%s.err", c->dir, tag);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 1);
		fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 2);
		execv(args[0], (char *const *)args);
		_exit(127);
	}
	return pid;
}

int cluster_wait(pid_t pid, int ms)
{
	int st, waited = 0;
	pid_t r;

	for (;;) {
		r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (waited >= ms) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		msleep(10);
		waited += 10;
	}
}

char *cluster_output(struct cluster *c, const char *tag, const char *ext)
{
	char path[512];
	static char buf[16384];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s.%s", c->dir, tag, ext);
	f = fopen(path, "r");
	if (!f)
		return strcpy(buf, "");
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

/* The first line of /proc/@pid/task/@tid/@leaf, into @buf ("?" if none). */
static const char *task_read(pid_t pid, const char *tid, const char *leaf, char *buf, size_t len)
{
	char path[96];
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/task/%s/%s", (int)pid, tid, leaf);
	snprintf(buf, len, "?");
	if ((fp = fopen(path, "re"))) {
		if (fgets(buf, (int)len, fp))
			buf[strcspn(buf, "\n")] = 0;
		fclose(fp);
	}
	return buf;
}

/*
 * Each thread of @pid: where it waits in the kernel and in which system
 * call, so that a controller that completes nothing says whether it runs,
 * sleeps or is stopped.
 */
static void show_tasks(const char *tag, pid_t pid)
{
	char path[64], comm[32], wchan[64], sc[128], st[256];
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (pid <= 0 || !(dir = opendir(path))) {
		fprintf(stderr, "--- %s (pid %d): not running\n", tag, (int)pid);
		return;
	}
	while ((d = readdir(dir)))
		if (d->d_name[0] != '.') {
			const char *state = strrchr(task_read(pid, d->d_name, "stat", st, sizeof(st)), ')');
			char *arg1 = strchr(task_read(pid, d->d_name, "syscall", sc, sizeof(sc)), ' ');

			if (arg1 && (arg1 = strchr(arg1 + 1, ' ')))
				*arg1 = 0;	/* the call and its first argument */

			fprintf(stderr, "--- %s (pid %d) thread %s %s: state %.1s, wchan %s, syscall %s\n",
				tag, (int)pid, d->d_name,
				task_read(pid, d->d_name, "comm", comm, sizeof(comm)),
				state && state[1] ? state + 2 : "?",
				task_read(pid, d->d_name, "wchan", wchan, sizeof(wchan)), sc);
		}
	closedir(dir);
}

void cluster_show_logs(struct cluster *c)
{
	static const char *const tags[] = { "nvme-emu", "nvme-manager" };
	struct sio_fabric_status *st = NULL;
	struct sio_fabric *f = NULL;

	for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++)
		fprintf(stderr, "--- %s's stderr:\n%s--- end of %s's stderr\n", tags[i],
			cluster_output(c, tags[i], "err"), tags[i]);
	show_tasks("nvme-emu", c->emu);
	show_tasks("nvme-manager", c->mgr);
	/* whether doorbells of other kernels reached the controller at all */
	if (sio_fabric_open(c->fabric, -1, &f) || sio_fabric_status_get(f, &st)) {
		fprintf(stderr, "--- no fabric status: %s\n", sio_errmsg());
	} else {
		for (int i = 0; i < st->ndevices; i++)
			fprintf(stderr, "--- device %u: %d borrower(s), %llu doorbell(s) relayed, "
				"%llu DMA fault(s)\n", st->devices[i].id, st->devices[i].borrowers,
				(unsigned long long)st->devices[i].relayed,
				(unsigned long long)st->devices[i].dma_faults);
	}
	sio_fabric_status_close(st);
	sio_fabric_close(f);
}

struct json_object *cluster_json(struct cluster *c, const char *tag)
{
	const char *out = cluster_output(c, tag, "out");
	enum json_tokener_error err;
	struct json_object *o = json_tokener_parse_verbose(out, &err);

	cr_assert(o, "%s: the output is not JSON (%s): %s", tag, json_tokener_error_desc(err), out);
	return o;
}

struct json_object *cluster_jget(struct json_object *o, const char *path)
{
	char key[64];
	const char *dot;

	while (o && *path) {
		dot = strchr(path, '.');
		snprintf(key, sizeof(key), "%.*s", dot ? (int)(dot - path) : (int)strlen(path), path);
		if (!json_object_object_get_ex(o, key, &o))
			return NULL;
		path = dot ? dot + 1 : "";
	}
	return o;
}

int64_t cluster_jint(struct json_object *o, const char *path, int64_t dflt)
{
	struct json_object *v = cluster_jget(o, path);

	return v ? json_object_get_int64(v) : dflt;
}

const char *cluster_jstr(struct json_object *o, const char *path)
{
	struct json_object *v = cluster_jget(o, path);

	return v ? json_object_get_string(v) : "";
}

static void wait_ready(struct cluster *c, const char *file, pid_t pid, const char *what)
{
	struct stat st;
	int i, s;

	for (i = 0; i < 1000; i++) {
		if (stat(file, &st) == 0 && st.st_size > 0)
			return;
		if (waitpid(pid, &s, WNOHANG) == pid)
			cr_assert_fail("%s exited before it was ready: %s", what,
				       cluster_output(c, what, "err"));
		msleep(10);
	}
	cr_assert_fail("%s did not become ready", what);
}

void cluster_start_emu(struct cluster *c, const char *const *emu_args)
{
	char ready[300];
	const char *argv[40] = { "NVME_EMU", "--fabric", c->fabric, "--node", "0",
				 "--ready-file", ready };
	int n = 7;

	snprintf(ready, sizeof(ready), "%s/emu.ready", c->dir);
	unlink(ready);
	while (emu_args && *emu_args && n < 38)
		argv[n++] = *emu_args++;
	argv[n] = NULL;
	c->emu = cluster_spawn(c, "nvme-emu", argv);
	wait_ready(c, ready, c->emu, "nvme-emu");
}

uint32_t cluster_device_id(struct cluster *c)
{
	char path[300];
	unsigned int id = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/emu.ready", c->dir);
	f = fopen(path, "r");
	cr_assert(f && fscanf(f, "%u", &id) == 1, "no device id in %s", path);
	fclose(f);
	return id;
}

void cluster_start_mgr_args(struct cluster *c, const char *const *mgr_args)
{
	char ready[300];
	const char *argv[16] = { "NVME_MANAGER", "--fabric", c->fabric, "--node", "0",
				 "--ready-file", ready };
	int n = 7;

	snprintf(ready, sizeof(ready), "%s/mgr.ready", c->dir);
	unlink(ready);
	while (mgr_args && *mgr_args && n < 15)
		argv[n++] = *mgr_args++;
	argv[n] = NULL;
	c->mgr = cluster_spawn(c, "nvme-manager", argv);
	wait_ready(c, ready, c->mgr, "nvme-manager");
}

void cluster_start_mgr(struct cluster *c)
{
	/*
	 * Shadow doorbells on: the manager would leave them off on the
	 * simulated fabric, where they do not pay, but they are the part with
	 * a protocol (EventIdx, failover adopting them), so the driver's tests
	 * run through them. BAR0-only doorbells are what the benchmarks, their
	 * tests and the emulator's own tests use.
	 */
	static const char *const on[] = { "--shadow-doorbells", "on", NULL };

	cluster_start_mgr_args(c, on);
}

void cluster_up(struct cluster *c, int nodes, int windows, const char *const *emu_args)
{
	struct sio_fabric_config cfg;
	int ret;

	memset(c, 0, sizeof(*c));
	snprintf(c->fabric, sizeof(c->fabric), "nvmet-%d", (int)getpid());
	snprintf(c->dir, sizeof(c->dir), "/tmp/nvmet-%d", (int)getpid());
	mkdir(c->dir, 0700);
	memset(&cfg, 0, sizeof(cfg));
	cfg.nodes = nodes;
	cfg.topology = SIO_TOPO_CASCADE;
	cfg.nodes_per_switch = 4;
	cfg.adapters = 1;
	cfg.windows = windows;
	sio_fabric_destroy(c->fabric);
	ret = sio_fabric_create(c->fabric, &cfg);
	cr_assert_eq(ret, 0, "fabric: %s", sio_errmsg());
	cluster_start_emu(c, emu_args);
	cluster_start_mgr(c);
}

void cluster_stop(pid_t *pid)
{
	if (*pid <= 0)
		return;
	kill(*pid, SIGTERM);
	if (cluster_wait(*pid, 5000) < 0)
		fprintf(stderr, "pid %d ignored SIGTERM\n", (int)*pid);
	*pid = 0;
}

void cluster_down(struct cluster *c)
{
	char cmd[300];

	cluster_stop(&c->mgr);
	cluster_stop(&c->emu);
	sio_fabric_destroy(c->fabric);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", c->dir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", c->dir);
}

void cluster_dir(const struct cluster *c, char *buf, size_t len)
{
	const char *base = getenv("SMARTIO_RUNDIR");

	snprintf(buf, len, "%s/smartio-%s", base && *base ? base : "/dev/shm", c->fabric);
}
