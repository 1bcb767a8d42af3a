/* SPDX-License-Identifier: MIT */
/* Shared plumbing of the NVMe benchmarks; see common.h. */
#include "safe-file.h"
#include "common.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "emu.h"

/* ---- children ---- */

static volatile sig_atomic_t child_stop;

static void child_on_signal(int sig)
{
	(void)sig;
	child_stop = 1;
}

static void child_signals(void)
{
	struct sigaction sa = { .sa_handler = child_on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

static void emu_child(const struct nb_env *e, int wfd)
{
	struct sio_nvme_emu_config cfg;
	struct sio_nvme_emu *emu = NULL;
	struct sio_fabric *f = NULL;
	int64_t id = -1;
	int rc;

	child_signals();
	if (e->o.pin)
		nb_pin(nb_env_ctrl_cpu(e));
	sio_nvme_emu_config_default(&cfg);
	cfg.backing = e->o.backing;
	cfg.cmb_mib = e->o.cmb_mib;
	cfg.chassis = e->o.chassis;	/* as nvme-emu --chassis */
	if (e->o.queues)
		cfg.max_qpairs = e->o.queues;
	if ((rc = sio_fabric_open(e->fabric, e->o.lender, &f))) {
		fprintf(stderr, "bench: controller: join fabric: %s\n", sio_errmsg());
	} else if ((rc = sio_nvme_emu_create(&cfg, &emu))) {
		fprintf(stderr, "bench: controller: %s\n", sio_errmsg());
	} else if ((rc = sio_nvme_emu_attach(emu, f))) {
		fprintf(stderr, "bench: controller: %s\n", sio_errmsg());
	} else {
		id = sio_nvme_emu_device_id(emu);
	}
	if (write(wfd, &id, sizeof(id)) != sizeof(id))
		rc = -EPIPE;
	close(wfd);
	if (!rc)
		sio_nvme_emu_run(emu, &child_stop);
	sio_nvme_emu_destroy(emu);
	sio_fabric_close(f);
	_exit(rc ? 1 : 0);
}

static void mgr_child(const struct nb_env *e, int wfd)
{
	struct sio_nvme_manager_opts mo = { .log = NULL };
	struct sio_nvme_manager *m = NULL;
	struct sio_fabric *f = NULL;
	int64_t ok = -1;
	int rc;

	child_signals();
	mo.ctrl.arbitration = e->o.arbitration;
	mo.ctrl.enable_cmb = e->o.cmb_mib > 0;
	mo.ctrl.dbbuf = e->o.dbbuf;
	mo.ctrl.irq_coalesce = e->o.irq_coalesce;
	if ((rc = sio_fabric_open(e->fabric, e->o.lender, &f))) {
		fprintf(stderr, "bench: manager: join fabric: %s\n", sio_errmsg());
	} else if ((rc = sio_nvme_manager_start(f, e->devid, &mo, &m))) {
		fprintf(stderr, "bench: manager: %s\n", sio_errmsg());
	} else if (e->o.arb_cdw11 &&
		   (rc = sio_nvme_ctrl_set_features(sio_nvme_manager_ctrl(m),
						    NVME_FEAT_FID_ARBITRATION, e->o.arb_cdw11,
						    NULL, NULL))) {
		fprintf(stderr, "bench: manager: set arbitration: %s\n", sio_errmsg());
	} else {
		ok = 0;
	}
	if (write(wfd, &ok, sizeof(ok)) != sizeof(ok))
		rc = -EPIPE;
	close(wfd);
	if (!rc)
		sio_nvme_manager_run(m, &child_stop);
	sio_nvme_manager_close(m);
	sio_fabric_close(f);
	_exit(rc ? 1 : 0);
}

/* Fork @fn; read one int64 from it within 20 s. */
static pid_t spawn(const struct nb_env *e, void (*fn)(const struct nb_env *, int), int64_t *val)
{
	struct pollfd p;
	int fds[2];
	pid_t pid;

	if (pipe(fds))
		return -errno;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		close(fds[0]);
		fn(e, fds[1]);
	}
	close(fds[1]);
	p = (struct pollfd){ .fd = fds[0], .events = POLLIN };
	if (poll(&p, 1, 20000) != 1 || read(fds[0], val, sizeof(*val)) != sizeof(*val))
		*val = -1;
	close(fds[0]);
	return pid;
}

/* ---- environment ---- */

static struct nb_env *live_env;
static pid_t owner;

static void reap(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	for (int i = 0; i < 300; i++) {	/* up to 3 s, then force */
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

void nb_env_down(struct nb_env *e)
{
	if (!e || getpid() != owner || !e->fabric[0])
		return;
	reap(e->mgr_pid);
	reap(e->emu_pid);
	e->mgr_pid = e->emu_pid = 0;
	if (!e->external)	/* an existing fabric is left as it was found */
		sio_fabric_destroy(e->fabric);
	e->fabric[0] = 0;
}

static void at_exit(void)
{
	nb_env_down(live_env);
}

static void on_signal(int sig)
{
	nb_env_down(live_env);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Tear down what this process started, at exit and on signals. */
static void teardown_on_exit(struct nb_env *e)
{
	struct sigaction sa = { .sa_handler = on_signal };

	owner = getpid();
	if (!live_env) {
		atexit(at_exit);
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
	}
	live_env = e;
}

int nb_env_up(struct nb_env *e, const char *tag, const struct nb_env_opts *o)
{
	struct sio_fabric_config fc = {
		.nodes = o->nodes, .topology = SIO_TOPO_SWITCH,
		.latency_model = o->model, .windows = o->windows,
	};
	int64_t v;
	int rc;

	memset(e, 0, sizeof(*e));
	e->o = *o;
	snprintf(e->fabric, sizeof(e->fabric), "nb-%.12s-%d", tag, (int)getpid());
	if ((rc = sio_fabric_create(e->fabric, &fc))) {
		fprintf(stderr, "bench: create fabric %s: %s\n", e->fabric, sio_errmsg());
		e->fabric[0] = 0;
		return rc;
	}
	teardown_on_exit(e);
	e->emu_pid = spawn(e, emu_child, &v);
	if (e->emu_pid < 0 || v < 0) {
		fprintf(stderr, "bench: the emulated controller did not start\n");
		nb_env_down(e);
		return -EIO;
	}
	e->devid = v;
	e->mgr_pid = spawn(e, mgr_child, &v);
	if (e->mgr_pid < 0 || v < 0) {
		fprintf(stderr, "bench: the manager did not start\n");
		nb_env_down(e);
		return -EIO;
	}
	return 0;
}

/* The NVMe controller @want (SIO_DEVICE_ANY: the first) on @f. */
static int find_device(struct sio_fabric *f, const char *fabric, uint32_t want,
		       struct sio_device_info *out)
{
	struct sio_device_info d[64];
	int n = sio_device_list(f, 0x010802, 0xffffff, d, 64);

	if (n < 0) {
		fprintf(stderr, "bench: %s: list devices: %s\n", fabric, sio_errmsg());
		return n;
	}
	for (int i = 0; i < n && i < 64; i++)
		if (want == SIO_DEVICE_ANY || d[i].id == want) {
			*out = d[i];
			return 0;
		}
	if (want == SIO_DEVICE_ANY)
		fprintf(stderr, "bench: fabric %s has no NVMe controller (class 010802); "
				"lend one first (smartio vfio lend BDF, or nvme-emu)\n", fabric);
	else
		fprintf(stderr, "bench: fabric %s has no NVMe controller with device id %u "
				"(%d registered; smartio status lists them)\n", fabric, want, n);
	return -ENOENT;
}

int nb_env_attach(struct nb_env *e, const struct bench_target *t)
{
	struct sio_nvme_client *cl = NULL;
	struct sio_topology topo;
	struct sio_fabric *f;
	int64_t v;
	int rc;

	memset(e, 0, sizeof(*e));
	e->external = true;
	e->node = t->node < 0 ? 0 : t->node;
	snprintf(e->fabric, sizeof(e->fabric), "%s", t->fabric);
	if ((rc = sio_fabric_open(t->fabric, e->node, &f))) {
		fprintf(stderr, "bench: join fabric %s as node %d: %s\n", t->fabric, e->node,
			sio_errmsg());
		e->fabric[0] = 0;
		return rc;
	}
	if ((rc = sio_fabric_topology(f, &topo)) || (rc = find_device(f, t->fabric, t->device, &e->dev)))
		goto out;
	e->devid = e->dev.id;
	e->o.nodes = topo.nodes;
	e->o.lender = e->dev.lender;
	e->o.model = topo.latency_model;
	e->o.chassis = e->dev.chassis;
	rc = sio_nvme_client_open(f, e->dev.id, &cl);
	if (rc == -ENOENT && t->start_manager) {
		/* asked for: the manager resets the controller and serves it */
		teardown_on_exit(e);
		e->o.cmb_mib = 1;	/* enable the CMB where the controller has one */
		e->mgr_pid = spawn(e, mgr_child, &v);
		if (e->mgr_pid < 0 || v < 0) {
			fprintf(stderr, "bench: the manager did not start on device %u\n", e->dev.id);
			rc = -EIO;
			goto out;
		}
		rc = sio_nvme_client_open(f, e->dev.id, &cl);
	} else if (rc == -ENOENT) {
		fprintf(stderr, "bench: no manager serves device %u on fabric %s: start one "
				"(nvme-manager --fabric %s --device %u), or give --start-manager to "
				"have the benchmark start one (it resets the controller)\n",
			e->dev.id, t->fabric, t->fabric, e->dev.id);
		goto out;
	}
	if (rc) {
		fprintf(stderr, "bench: device %u on fabric %s: %s\n", e->dev.id, t->fabric,
			sio_errmsg());
		goto out;
	}
	sio_nvme_client_info(cl, &e->ctrl);
	sio_nvme_client_close(cl);
out:
	sio_fabric_close(f);
	if (rc) {
		nb_env_down(e);
		e->fabric[0] = 0;
	}
	return rc;
}

int nb_env_open(struct nb_env *e, const char *tag, const struct nb_env_opts *o,
		const struct bench_target *t)
{
	if (!t || !t->fabric)
		return nb_env_up(e, tag, o);
	return nb_env_attach(e, t);
}

int nb_env_client_node(const struct nb_env *e, int own)
{
	return e->external ? e->node : own;
}

static const char *backend_name(const struct nb_env *e)
{
	if (!e->external)
		return "sim (private fabric, emulated controller)";
	return e->dev.backend == SIO_BACKEND_VFIO ? "vfio (a PCI function bound to vfio-pci)"
						  : "sim (emulated controller)";
}

const char *nb_env_model_label(const struct nb_env *e)
{
	if (e->external && e->dev.backend == SIO_BACKEND_VFIO)
		return "no latency model (a real device path through vfio)";
	return nb_model_label(e->o.model);
}

void nb_env_describe(const struct nb_env *e, FILE *o)
{
	if (!e->external) {
		fprintf(o, "measured: a private simulated fabric %s, emulated controller (device %lld) "
			   "on node %d; %s\n", e->fabric, (long long)e->devid, e->o.lender,
			nb_model_label(e->o.model));
		return;
	}
	fprintf(o, "measured: fabric %s, backend %s; device %u%s%s '%s' serial '%s' fw '%s' on "
		   "node %d, clients on node %d; CMB %s; %s\n",
		e->fabric, backend_name(e), e->dev.id, e->dev.bdf[0] ? " at " : "", e->dev.bdf,
		e->ctrl.mn, e->ctrl.sn, e->ctrl.fr, e->dev.lender, e->node,
		e->ctrl.cmb.size ? "present" : "none", nb_env_model_label(e));
	if (e->mgr_pid)
		fprintf(o, "  (this benchmark started the manager: --start-manager)\n");
}

struct json_object *nb_target_json(const struct nb_env *e)
{
	struct json_object *o = json_object_new_object();

	pj_bool(o, "existing_fabric", e->external);
	pj_str(o, "fabric", e->fabric);
	pj_str(o, "backend", backend_name(e));
	pj_int(o, "device", e->devid);
	pj_int(o, "lender", e->o.lender);
	pj_int(o, "client_node", e->external ? e->node : 0);
	pj_str(o, "bdf", e->dev.bdf);
	pj_str(o, "model", e->external ? e->ctrl.mn : "smartio emulated controller");
	pj_str(o, "serial", e->ctrl.sn);
	pj_bool(o, "latency_model", e->o.model);
	pj_str(o, "model_note", nb_env_model_label(e));
	pj_bool(o, "started_manager", e->mgr_pid != 0);
	return o;
}

void nb_json_target(FILE *j, const struct nb_env *e)
{
	struct json_object *o = nb_target_json(e);

	fprintf(j, "\"target\": %s", json_object_to_json_string_ext(o, JSON_C_TO_STRING_SPACED |
						JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

int nb_client_open(struct nb_client *c, const struct nb_env *e, int node,
		   const struct sio_nvme_qspec *spec, uint64_t bufsize)
{
	int rc;

	memset(c, 0, sizeof(*c));
	if ((rc = sio_fabric_open(e->fabric, node, &c->f))) {
		fprintf(stderr, "bench: node %d: join: %s\n", node, sio_errmsg());
		return rc;
	}
	if ((rc = sio_nvme_client_open(c->f, e->devid, &c->cl)) ||
	    (rc = sio_nvme_client_ns(c->cl, 1, &c->ns)) ||
	    (rc = sio_nvme_ioq_create(c->cl, spec, &c->q)) ||
	    (rc = sio_nvme_buf_alloc(c->cl, bufsize, &c->buf))) {
		fprintf(stderr, "bench: node %d: client: %s\n", node, sio_errmsg());
		nb_client_close(c);
		return rc;
	}
	sio_nvme_ioq_info(c->q, &c->qi);
	return 0;
}

void nb_client_close(struct nb_client *c)
{
	if (c->buf)
		sio_nvme_buf_close(c->cl, c->buf);
	if (c->q)
		sio_nvme_ioq_close(c->q);
	sio_nvme_client_close(c->cl);
	sio_fabric_close(c->f);
	memset(c, 0, sizeof(*c));
}

void nb_pin(int cpu)
{
	cpu_set_t s;

	if (cpu < 0)
		return;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof(s), &s);
}

int nb_env_ctrl_cpu(const struct nb_env *e)
{
	return e->o.ctrl_cpu ? e->o.ctrl_cpu - 1 : nb_ncpus() - 1;
}

void nb_pin_off(int cpu)
{
	int n = nb_ncpus();
	cpu_set_t s;

	if (cpu < 0 || n < 2)
		return;
	CPU_ZERO(&s);
	for (int i = 0; i < n && i < CPU_SETSIZE; i++)
		if (i != cpu)
			CPU_SET(i, &s);
	sched_setaffinity(0, sizeof(s), &s);
}

int nb_ncpus(void)
{
	/* sysconf() reads /sys each time: ask once */
	static int cached;
	long n;

	if (!cached) {
		n = sysconf(_SC_NPROCESSORS_ONLN);
		cached = n > 0 ? (int)n : 1;
	}
	return cached;
}

void nb_run_init(struct nb_run *r, unsigned repeat)
{
	*r = (struct nb_run){ .repeat = repeat, .client_cpu = 0, .ctrl_cpu = nb_ncpus() - 1,
			      .dbbuf = SIO_NVME_DBBUF_AUTO };
}

int nb_run_opt(const char *prog, struct nb_run *r, int c, const char *arg)
{
	static const char *const w[] = { "auto", "on", "off" };	/* SIO_NVME_DBBUF_* */
	int cpus = nb_ncpus();

	switch (c) {
	case NB_OPT_REPEAT:
		r->repeat = (unsigned)bench_u64(prog, "--repeat", arg, 1, 1000);
		return 1;
	case NB_OPT_CLIENT_CPU:
		r->client_cpu = (int)bench_u64(prog, "--client-cpu", arg, 0, (uint64_t)cpus - 1);
		return 1;
	case NB_OPT_CTRL_CPU:
		r->ctrl_cpu = (int)bench_u64(prog, "--ctrl-cpu", arg, 0, (uint64_t)cpus - 1);
		return 1;
	case NB_OPT_DBBUF:
		for (r->dbbuf = 2; r->dbbuf >= 0 && strcmp(arg, w[r->dbbuf]); r->dbbuf--)
			;
		if (r->dbbuf < 0) {
			fprintf(stderr, "%s: --shadow-doorbells '%s' is not auto, on or off\n",
				prog, arg);
			exit(2);
		}
		return 1;
	}
	return 0;
}

void nb_run_apply(const struct nb_run *r, struct nb_env_opts *o)
{
	o->pin = true;
	o->ctrl_cpu = r->ctrl_cpu + 1;
	o->dbbuf = r->dbbuf;
}

static const char *dbbuf_name(int v)
{
	return v == SIO_NVME_DBBUF_ON ? "on" : v == SIO_NVME_DBBUF_OFF ? "off" : "auto";
}

void nb_run_describe(const struct nb_run *r, const struct nb_env *e, FILE *o)
{
	double la[3] = { 0, 0, 0 };

	getloadavg(la, 3);
	if (e->external)
		fprintf(o, "placement: clients on CPU %d (the device's own controller is not "
			   "ours to pin); %d CPUs online; load average %.2f %.2f %.2f; %u run(s)\n",
			r->client_cpu, nb_ncpus(), la[0], la[1], la[2], r->repeat);
	else
		fprintf(o, "placement: clients on CPU %d, emulated controller on CPU %d, "
			   "manager not pinned (idle while I/O runs); %d CPUs online; load "
			   "average %.2f %.2f %.2f; shadow doorbells %s; %u run(s)\n",
			r->client_cpu, r->ctrl_cpu, nb_ncpus(), la[0], la[1], la[2],
			dbbuf_name(r->dbbuf), r->repeat);
}

struct json_object *nb_run_json(const struct nb_run *r, const struct nb_env *e)
{
	struct json_object *o = json_object_new_object(), *la;
	double l[3] = { 0, 0, 0 };

	getloadavg(l, 3);
	pj_int(o, "client_cpu", r->client_cpu);
	pj_int(o, "ctrl_cpu", e->external ? -1 : r->ctrl_cpu);
	pj_int(o, "cpus", nb_ncpus());
	la = pj_arr(o, "load_average");
	for (int k = 0; k < 3; k++)
		json_object_array_add(la, json_object_new_double(l[k]));
	pj_str(o, "shadow_doorbells", dbbuf_name(r->dbbuf));
	pj_u64(o, "repeat", r->repeat);
	return o;
}

void nb_json_run(FILE *j, const struct nb_run *r, const struct nb_env *e)
{
	struct json_object *o = nb_run_json(r, e);

	fprintf(j, "\"placement\": %s", json_object_to_json_string_ext(o, JSON_C_TO_STRING_SPACED |
						JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

void nb_spread(double *v, unsigned n, struct nb_spread *s)
{
	*s = (struct nb_spread){ 0, 0, 0 };
	if (!n)
		return;
	qsort(v, n, sizeof(*v), cmp_double);
	s->min = v[0];
	s->max = v[n - 1];
	s->median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

const char *nb_spread_str(const struct nb_spread *s, char *buf, size_t len)
{
	if (s->min == s->max)
		snprintf(buf, len, "%.0f", s->median);
	else
		snprintf(buf, len, "%.0f [%.0f..%.0f]", s->median, s->min, s->max);
	return buf;
}

double nb_tsc_per_ns(void)
{
	uint64_t t0 = sio__now_ns(), c0 = nb_tsc(), t1, c1;

	usleep(100000);
	t1 = sio__now_ns();
	c1 = nb_tsc();
	return (double)(c1 - c0) / (double)(t1 - t0);
}

int nb_drain(struct sio_nvme_ioq *q)
{
	unsigned idle = 0;
	int rc;

	while (sio_nvme_ioq_inflight(q)) {
		rc = sio_nvme_ioq_poll(q, 0);
		if (rc < 0)
			return rc;
		if (rc == 0 && ++idle > 64)
			sched_yield();	/* bounded spin, then give the core away */
		else if (rc)
			idle = 0;
	}
	return 0;
}

/* ---- statistics ---- */

int nb_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void nb_stats_hist(const struct hist *h, struct nb_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->n = h->n;
	if (!h->n)
		return;
	s->mean = hist_mean(h);
	s->min = (double)h->min;
	s->max = (double)h->max;
	s->p1 = hist_pct(h, 1);
	s->p25 = hist_pct(h, 25);
	s->p50 = hist_pct(h, 50);
	s->p75 = hist_pct(h, 75);
	s->p99 = hist_pct(h, 99);
	s->p999 = hist_pct(h, 99.9);
}

double nb_jain(const double *x, int n)
{
	double s = 0, q = 0;

	for (int i = 0; i < n; i++)
		s += x[i], q += x[i] * x[i];
	return q > 0 ? s * s / ((double)n * q) : 0;
}

/* ---- output ---- */

void nb_progress(const char *what, uint64_t done, uint64_t total)
{
	static uint64_t last;
	static int last_pct = -1;
	bool tty = isatty(2);
	uint64_t now = sio__now_ns();
	int pct = total ? (int)(done * 100 / total) : 100;

	if (done >= total) {
		fprintf(stderr, tty ? "\r  %-40s 100%%\n" : "  %s 100%%\n", what);
		last_pct = -1;
		return;
	}
	/* a terminal gets a live line; a log gets a line per 25 % */
	if (tty ? now - last < 250000000ull : pct / 25 == last_pct / 25)
		return;
	last = now;
	last_pct = pct;
	fprintf(stderr, tty ? "\r  %-40s %3d%%" : "  %s %d%%\n", what, pct);
}

int nb_outdir(const char *dir)
{
	char p[4096];

	/* its parents first (mkdir -p): only what -o names is made */
	snprintf(p, sizeof(p), "%s", dir);
	for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		if (mkdir(p, 0755) && errno != EEXIST) {
			fprintf(stderr, "bench: mkdir %s: %s\n", p, strerror(errno));
			return -errno;
		}
		*s = '/';
	}
	if (mkdir(dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "bench: mkdir %s: %s\n", dir, strerror(errno));
		return -errno;
	}
	return 0;
}

FILE *nb_open_out(const char *dir, const char *name)
{
	char p[4096];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = safe_fopen_w(p);
	if (!f)
		fprintf(stderr, "bench: %s: %s\n", p, strerror(errno));
	return f;
}

int nb_gnuplot(const char *dir, const char *script)
{
	pid_t pid;
	int st;

	if (system("command -v gnuplot >/dev/null 2>&1")) {
		fprintf(stderr, "bench: gnuplot not installed, plots skipped (%s/%s kept)\n",
			dir, script);
		return -ENOENT;
	}
	/* no shell: a directory with a quote in its name is a directory */
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		if (chdir(dir))
			_exit(126);
		execlp("gnuplot", "gnuplot", script, (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "bench: gnuplot %s/%s failed: no plot made\n", dir, script);
		return -EIO;
	}
	return 0;
}

struct json_object *nb_stats_json(const struct nb_stats *s)
{
	struct json_object *o = json_object_new_object();

	pj_u64(o, "n", s->n);
	pj_dbl(o, "mean_ns", s->mean);
	pj_dbl(o, "min_ns", s->min);
	pj_dbl(o, "p1_ns", s->p1);
	pj_dbl(o, "p25_ns", s->p25);
	pj_dbl(o, "p50_ns", s->p50);
	pj_dbl(o, "p75_ns", s->p75);
	pj_dbl(o, "p99_ns", s->p99);
	pj_dbl(o, "p99_9_ns", s->p999);
	pj_dbl(o, "max_ns", s->max);
	return o;
}

void nb_json_stats(FILE *j, const char *key, const struct nb_stats *s)
{
	struct json_object *o = nb_stats_json(s);

	fprintf(j, "\"%s\": %s", key, json_object_to_json_string_ext(o, JSON_C_TO_STRING_SPACED));
	json_object_put(o);
}

int nb_write_json(const char *dir, const char *name, struct json_object *o)
{
	char p[4096];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	pj_run_info(o);
	return prog_json_write(p, o) ? -1 : 0;
}

const char *nb_model_label(bool model)
{
	return model ? "latency model ON (modelled per-hop delays, not hardware)"
		     : "latency model OFF (software cost only)";
}
