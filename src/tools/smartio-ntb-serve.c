/* SPDX-License-Identifier: MIT */
/*
 * `smartio ntb serve`: this kernel's node of an ntb fabric (docs/ntb.md),
 * sio_ntb_serve() of <smartio/ntbserve.h> until SIGINT or SIGTERM. Apart
 * from smartio-ntb.c, which speaks smartio_ntb's uapi alone: this one is
 * libsmartio's.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <smartio/smartio.h>
#include <smartio/ntbserve.h>
#include "prog.h"
#include "smartio-ntb.h"

int sio_tool_ntb_serve(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dev", required_argument, NULL, 'd' },
		{ "port", required_argument, NULL, 'p' },
		{ "ready-file", required_argument, NULL, 'r' },
		{ "background", no_argument, NULL, 'b' },
		{ NULL, 0, NULL, 0 }
	};
	const char *dev = NULL, *ready = NULL;
	char devs[512] = "";
	size_t used;
	bool background = false;
	int port = 0, c, ret;
	FILE *log;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'd') {	/* again: the NTB of the next adapter */
			used = strlen(devs);
			if (strchr(optarg, ',') || !*optarg ||
			    snprintf(devs + used, sizeof(devs) - used, "%s%s", used ? "," : "",
				     optarg) >= (int)(sizeof(devs) - used))
				prog_usage_error("ntb serve: --dev '%s': one device a --dev "
						 "(/dev/smartio-ntbN, N or fake:DIR), no commas", optarg);
			dev = devs;
		}
		else if (c == 'p')
			port = (int)prog_u64("--port", optarg, 0, 63);
		else if (c == 'r')
			ready = optarg;
		else if (c == 'b')
			background = true;
		else {
			if (c == '?')
				prog_suggest_option(argc, argv, opts);
			prog_usage_error("ntb serve: [--dev DEV [--dev DEV1]] [--port P] "
					 "[--ready-file F] [--background] (P: a fake NTB's port; "
					 "a second --dev: the NTB of adapter 1)");
		}
	}
	if (optind != argc)
		prog_usage_error("ntb serve: no argument '%s'", argv[optind]);
	if (background)
		prog_background();	/* the parent returns once it serves */
	prog_catch_stop();	/* no SA_RESTART: the service's poll wakes */
	prog_report_crash();	/* a node service's end is read from its log */
	/* the ready file, --background's parent and systemd (Type=notify)
	 * hear once it serves */
	log = prog_ready_stream(stdout, "ntb: port ", ready);
	ret = sio_ntb_serve(dev, port, &prog_stop, log);
	prog_notify_stopping();
	if (log != stdout)
		fclose(log);
	if (ret)
		return prog_fail("ntb serve: %s", sio_errmsg());
	return PROG_OK;
}
