/* SPDX-License-Identifier: MIT */
/*
 * The GPU tests' MPS control daemon. Without MPS the GPU time-slices between
 * the test's context (a kernel polling its queues) and nvme-emu's (the
 * controller's copies to and from GPU memory): each copy waits for a slice,
 * about a millisecond, and a kernel of thousands of commands runs into its
 * timeouts. With MPS both share the GPU at once. A daemon already serving
 * (a pipe directory in the environment, or the default one) is used as it
 * is; otherwise we start a private one (its own pipe directory, quit once
 * the test has exited), where the driver's nvidia-cuda-mps-control is installed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "mps.h"

static char dir[] = "/tmp/smartio-mps-XXXXXX";

/*
 * Quit the daemon once this process has exited, from a watcher of its own
 * session: this process is an MPS client, and a quit asked from in here
 * waits for the server, which waits for this process to let go. The
 * directory goes once the daemon's log says it exited, never from under a
 * live one. The watcher also cleans up after a test killed at its timeout.
 */
static void mps_quit_after_us(void)
{
	char cmd[640];

	snprintf(cmd, sizeof(cmd), "setsid sh -c 'while kill -0 %d 2>/dev/null; do sleep 0.2; done; "
		 "echo quit | nvidia-cuda-mps-control; for i in $(seq 100); do "
		 "grep -qs \"Exit with status\" %s/control.log && exec rm -rf %s; sleep 0.1; done' "
		 "</dev/null >/dev/null 2>&1 &", (int)getpid(), dir, dir);
	if (system(cmd) != 0)
		fprintf(stderr, "gpu tests: cannot start the watcher that quits the MPS daemon of "
			"%s: it stays\n", dir);
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
	mps_quit_after_us();
}
