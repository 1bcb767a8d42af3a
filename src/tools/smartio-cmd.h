/* SPDX-License-Identifier: MIT */
#ifndef SIO_TOOL_CMD_H
#define SIO_TOOL_CMD_H

/* What the smartio command's files share. */

#include <stdint.h>
#include <stdio.h>
#include <smartio/smartio.h>
#include "prog.h"

enum sio_tool_fmt { SIO_TOOL_TEXT, SIO_TOOL_JSON, SIO_TOOL_DOT };

const char *sio_tool_topo_name(enum sio_topology_kind k);

/* smartio-status.c: a fabric's status as text, JSON (json-c) or Graphviz. */
struct json_object *sio_tool_status_json(const struct sio_fabric_status *st);
void sio_tool_status_text(FILE *o, const struct sio_fabric_status *st);
void sio_tool_status_dot(FILE *o, const struct sio_fabric_status *st);
int sio_tool_status_once(const char *name, enum sio_tool_fmt fmt);

/*
 * Call @once(@arg) every @interval seconds, @count times (0: until SIGINT
 * or SIGTERM); on a terminal each time on a cleared screen, else text
 * readings apart by a blank line and @json ones one a line. Return: 0, or
 * what @once returned when it failed.
 */
int sio_tool_watch(int (*once)(void *arg), void *arg, double interval, uint64_t count,
		   bool json);

#ifdef SIO_TOOL_NVME
/* smartio-nvme.c: `smartio nvme stats` and `smartio top`. */
int sio_tool_nvme(int argc, char **argv);
int sio_tool_top(int argc, char **argv);
#endif

#endif
