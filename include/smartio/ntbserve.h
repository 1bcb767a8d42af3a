/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_NTBSERVE_H
#define SMARTIO_NTBSERVE_H

/**
 * DOC: ntbserve: the node service of an ntb fabric
 *
 * What the programs around the ntb fabric backend need (`smartio ntb
 * serve`): on a fabric over the Linux NTB framework (SMARTIO_FABRIC_BACKEND
 * =ntb, docs/ntb.md) each kernel runs one node service. It holds the NTB
 * through smartio_ntb, exports the node's memory to every peer and maps
 * theirs, hosts a fabric's state when `smartio create` runs on its node,
 * publishes and checks the bootstrap in the scratchpads, and takes the
 * fabric's doorbells for this kernel's waiters. The fabric's processes on
 * this kernel reach the NTB through it. Not part of the bundle.
 */

#include <signal.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * sio_ntb_serve() - serve this kernel's node of an ntb fabric until *@stop
 * @dev: the NTB device: /dev/smartio-ntbN, N, or fake:DIR (a stand-in of
 *	files on one host, for tests); NULL: $SMARTIO_NTB_DEV, else
 *	/dev/smartio-ntb0. A list DEV0,DEV1 names one NTB per adapter of
 *	this node: DEV0 holds the fabric (memory, state, doorbells), the
 *	links of the others give this node's adapters 1 and up their link
 *	state in a fabric made with as many adapters (docs/ntb.md, "Two NTBs
 *	between the same hosts"); every one must give this node's port
 * @port: the fake's port (ignored for a real device, whose port it says)
 * @stop: set by a signal handler to stop; NULL: serve for ever
 * @log: where to say what happens (links, the memory, the fabric), or NULL
 *
 * Return: 0 once stopped, or a negative errno (sio_errmsg() says why: no
 * device, one that translates no inbound window, a service already running
 * for this port, a second NTB of another port). The node's memory goes with the service.
 */
int sio_ntb_serve(const char *dev, int port, volatile sig_atomic_t *stop, FILE *log);

#ifdef __cplusplus
}
#endif

#endif
