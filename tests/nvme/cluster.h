/* SPDX-License-Identifier: MIT */
#ifndef NVME_TEST_CLUSTER_H
#define NVME_TEST_CLUSTER_H

/* A simulated cluster for the driver's integration tests: a fabric, an
 * emulated NVMe controller on node 0 and the manager beside it. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct cluster {
	char fabric[64];
	char dir[256];
	pid_t emu, mgr;
};

/* Create the fabric; extra nvme-emu arguments end with NULL. */
void cluster_up(struct cluster *c, int nodes, int windows, const char *const *emu_args);
void cluster_start_emu(struct cluster *c, const char *const *emu_args);
/* The controller's device id, as nvme-emu wrote it in its ready file. */
uint32_t cluster_device_id(struct cluster *c);
/* The manager, with shadow doorbells on (cluster.c says why). */
void cluster_start_mgr(struct cluster *c);
/* The manager with these arguments only (NULL-terminated). */
void cluster_start_mgr_args(struct cluster *c, const char *const *mgr_args);
void cluster_stop(pid_t *pid);
void cluster_down(struct cluster *c);
/* The fabric's directory (the shm backend's: $SMARTIO_RUNDIR or /dev/shm). */
void cluster_dir(const struct cluster *c, char *buf, size_t len);

/* Start a program (NULL-terminated argv; argv[0] an env var naming the
 * binary, e.g. "NVME_CLIENT"), stdout/stderr to files under c->dir. */
pid_t cluster_spawn(struct cluster *c, const char *tag, const char *const *argv);
/* Wait up to @ms for @pid; returns its exit status, -1 on timeout (killed). */
int cluster_wait(pid_t pid, int ms);
/* Read a spawned program's output file ("TAG.out" / "TAG.err"). */
char *cluster_output(struct cluster *c, const char *tag, const char *ext);
/* The controller's and the manager's stderr, on the test's stderr: what a
 * failed case prints so that a failure seen once can be read afterwards. */
void cluster_show_logs(struct cluster *c);

struct json_object;
/* A spawned program's stdout parsed as JSON (json-c): the test fails when it
 * is not one valid JSON value. Free with json_object_put(). */
struct json_object *cluster_json(struct cluster *c, const char *tag);
/* The member at @path ("read.lat_us.p99") of @o, or NULL. */
struct json_object *cluster_jget(struct json_object *o, const char *path);
/* Its value as an integer, or @dflt when it is absent. */
int64_t cluster_jint(struct json_object *o, const char *path, int64_t dflt);
/* Its value as a string, or "" when it is absent. */
const char *cluster_jstr(struct json_object *o, const char *path);

#endif
