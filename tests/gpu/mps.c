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

static void mps_quit(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "echo quit | nvidia-cuda-mps-control >/dev/null 2>&1; "
		 "sleep 0.5; rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "gpu tests: could not quit the MPS daemon in %s\n", dir);
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
	if (system("nvidia-cuda-mps-control -d") != 0) {
		fprintf(stderr, "gpu tests: nvidia-cuda-mps-control -d failed: the controller's "
			"copies wait for the GPU's time slices (about 1 ms each)\n");
		unsetenv("CUDA_MPS_PIPE_DIRECTORY");
		unsetenv("CUDA_MPS_LOG_DIRECTORY");
		rmdir(dir);
		return;
	}
	atexit(mps_quit);
}
