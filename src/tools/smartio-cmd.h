/* SPDX-License-Identifier: MIT */
#ifndef SIO_TOOL_CMD_H
#define SIO_TOOL_CMD_H

/* What the smartio command's files share. */

#include <stdint.h>
#include <stdio.h>
#include <smartio/smartio.h>
#include "prog.h"

enum sio_tool_fmt { SIO_TOOL_TEXT, SIO_TOOL_JSON, SIO_TOOL_DOT, SIO_TOOL_PROM };

/* smartio-status.c: a fabric's status as text, JSON (json-c) or Graphviz. */
struct json_object *sio_tool_status_json(const struct sio_fabric_status *st);
void sio_tool_status_text(FILE *o, const struct sio_fabric_status *st);
void sio_tool_status_dot(FILE *o, const struct sio_fabric_status *st);
int sio_tool_status_once(const char *name, enum sio_tool_fmt fmt);


#endif
