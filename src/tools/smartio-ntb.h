/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_TOOL_NTB_H
#define SMARTIO_TOOL_NTB_H

/**
 * sio_tool_ntb() - the `smartio ntb ...` subcommands (status, ping, bench)
 * @argc: argument count
 * @argv: argv[0] is "ntb", then the subcommand
 * Return: the process exit status.
 */
int sio_tool_ntb(int argc, char **argv);

#endif
