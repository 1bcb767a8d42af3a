/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_TOOL_NTB_H
#define SMARTIO_TOOL_NTB_H

/**
 * sio_tool_ntb() - the `smartio ntb ...` subcommands (status, ping, bench,
 * serve)
 * @argc: argument count
 * @argv: argv[0] is "ntb", then the subcommand
 * Return: the process exit status.
 */
int sio_tool_ntb(int argc, char **argv);

/**
 * sio_tool_ntb_serve() - `smartio ntb serve`: this kernel's node of an ntb
 * fabric, until a signal (smartio-ntb-serve.c, on libsmartio)
 * @argc: argument count
 * @argv: argv[0] is "serve", then its options
 * Return: the process exit status.
 */
int sio_tool_ntb_serve(int argc, char **argv);

#endif
