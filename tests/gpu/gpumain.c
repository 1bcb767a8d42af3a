/* SPDX-License-Identifier: MIT */
/* The main() of the GPU suites whose every test needs a GPU (gpumain.h). */
#include <stdio.h>
#include <criterion/criterion.h>
#include <smartio/gpu.h>
#include "gpumain.h"

int gpu_suite_main(int argc, char *argv[])
{
	struct criterion_test_set *tests;
	int result = 0;

	if (sio_gpu_count() <= 0) {
		if (sio_gpu_required()) {
			printf("FAIL: SMARTIO_REQUIRE_GPU is set, but %s\n", sio_errmsg());
			return 1;
		}
		printf("skipped: %s\n", sio_errmsg());
		return 77;
	}
	tests = criterion_initialize();
	if (criterion_handle_args(argc, argv, true))
		result = !criterion_run_all_tests(tests);
	criterion_finalize(tests);
	return result;
}
