/* SPDX-License-Identifier: MIT */
/*
 * The GPU tests' MPS control daemon. Without MPS the GPU time-slices between
 * the test's context (a kernel polling its queues) and nvme-emu's (the
 * controller's copies to and from GPU memory): each copy waits for a slice,
 * about a millisecond, and a kernel of thousands of commands runs into its
 * timeouts. With MPS both share the GPU at once. A daemon already serving
 * (a pipe directory in the environment, or the default one) is used as it
 * is; otherwise we start a private one (its own pipe directory, quit at
 * exit), where the driver's nvidia-cuda-mps-control is installed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "mps.h"

static char dir[] = "/tmp/smartio-mps-XXXXXX";

/* Quit the daemon; its directory goes once its log says it exited (the
 * server may take a few tries to stop), never from under a live one. */
static void mps_quit(void)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "echo quit | nvidia-cuda-mps-control >/dev/null 2>&1; "
		 "for i in $(seq 50); do grep -qs 'Exit with status' %s/control.log && "
		 "exec rm -rf %s; sleep 0.1; done; exit 1", dir, dir);
	if (system(cmd) != 0)
		fprintf(stderr, "gpu tests: the MPS daemon of %s has not exited: left in place\n",
			dir);
}

void gpu_test_mps(void)
{
	if (getenv("CUDA_MPS_PIPE_DIRECTORY") || access("/tmp/nvidia-mps/control", F_OK) == 0)
		return;
	if (system("command -v nvidia-cuda-mps-control >/dev/null 2>&1") != 0)
		return;		/* no driver tools: no GPU, or the tests say what is slow */
	if (!mkdtemp(dir))
		return;
	setenv("CUDA_MPS_PIPE_DIRECTORY", dir, 1);
	setenv("CUDA_MPS_LOG_DIRECTORY", dir, 1);
	/* its own output: a daemon holding our stdout would keep meson
	 * waiting for the test to end */
	if (system("nvidia-cuda-mps-control -d </dev/null >/dev/null 2>&1") != 0) {
		fprintf(stderr, "gpu tests: nvidia-cuda-mps-control -d failed: the controller's "
			"copies wait for the GPU's time slices (about 1 ms each)\n");
		unsetenv("CUDA_MPS_PIPE_DIRECTORY");
		unsetenv("CUDA_MPS_LOG_DIRECTORY");
		rmdir(dir);
		return;
	}
	atexit(mps_quit);
}
