/* SPDX-License-Identifier: MIT */
/* Joining a fabric, and the options of programs that serve on one (prog.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <smartio/fabric.h>
#include <smartio/status.h>
#include "prog.h"

int prog_join(const char *fabric, int node, struct sio_fabric **f)
{
	int ret;

	if (!fabric || !*fabric)
		fabric = getenv("SMARTIO_FABRIC");
	if (!fabric || !*fabric) {
		prog_fail("no fabric given: use --fabric NAME or set SMARTIO_FABRIC "
			  "('smartio list' shows the fabrics there are)");
		return -EINVAL;
	}
	ret = sio_fabric_open(fabric, node, f);
	/* the backend says why, and what to do: no fabric of that name
	 * (create it), or on an NTB one whose home is out of reach */
	if (ret)
		prog_fail("cannot join fabric '%s': %s", fabric, sio_errmsg());
	return ret;
}

void prog_service_init(struct prog_service *s)
{
	*s = (struct prog_service){ .node = -1 };
}

int prog_service_opt(struct prog_service *s, int c, const char *arg)
{
	switch (c) {
	case PROG_OPT_FABRIC:
		s->fabric = arg;
		return 1;
	case PROG_OPT_NODE:
		s->node = (int)prog_u64("--node", arg, 0, SIO_MAX_NODES - 1);
		return 1;
	case PROG_OPT_READY:
		s->ready_file = arg;
		return 1;
	case PROG_OPT_BACKGROUND:
		s->background = true;
		return 1;
	}
	return 0;
}

static pthread_t watcher;
static bool watching;

static void *watch(void *arg)
{
	struct sio_fabric *f = arg;

	while (!prog_stop) {
		if (sio_fabric_alive(f)) {
			fprintf(stderr, "%s: %s; stopping\n", prog_name, sio_errmsg());
			prog_stop = 2;
			break;
		}
		usleep(100000);
	}
	return NULL;
}

void prog_watch_fabric(struct sio_fabric *f)
{
	watching = !pthread_create(&watcher, NULL, watch, f);
}

void prog_unwatch_fabric(void)
{
	if (!prog_stop)
		prog_stop = 1;
	if (watching)
		pthread_join(watcher, NULL);
	watching = false;
}

const char *prog_topo_name(enum sio_topology_kind k)
{
	return k == SIO_TOPO_B2B ? "b2b" : k == SIO_TOPO_SWITCH ? "switch" : "cascade";
}

void prog_status_without_me(const struct sio_fabric *f, struct sio_fabric_status *st)
{
	int me = sio_fabric_node_id(f);

	if (st->procs > 0)
		st->procs--;
	if (me >= 0 && me < st->nnodes && st->nodes[me].procs > 0)
		st->nodes[me].procs--;
}
