/* SPDX-License-Identifier: MIT */
#ifndef SIO_SUPPORT_PROC_H
#define SIO_SUPPORT_PROC_H

/**
 * DOC: is a process of this kernel alive?
 *
 * How a fabric backend learns that a process (or a thread) of its own
 * kernel died, so that the core reclaims what it held and a lock it held
 * is taken over: kill(pid, 0) and /proc/PID/stat. A zombie holds nothing
 * and counts as dead; a new process that took a dead one's pid is told
 * apart by its start time. The shm backend answers its proc ops with it,
 * and the window fabric for the processes of its own kernel. In no
 * library's ABI (the ``sio__`` prefix).
 */

#include <stdbool.h>
#include <stdint.h>

/**
 * sio__task_dead() - is a process or thread gone?
 * @pid: its id on this kernel
 *
 * Return: true when no such task exists or it is a zombie; false when it
 * runs, or when its state cannot be read (hidepid: then it exists).
 */
bool sio__task_dead(int pid);

/**
 * sio__proc_start() - when a process started
 * @pid: its id on this kernel
 *
 * Return: its start time in clock ticks after boot (/proc/PID/stat field
 * 22), or 0 when it is gone or unreadable.
 */
uint64_t sio__proc_start(int pid);

/**
 * sio__proc_alive() - is this the same process, still running?
 * @pid: its id on this kernel
 * @start: its start time as sio__proc_start() gave it then
 *
 * Return: true for the calling process, or for a live task with that id
 * that started at @start; false for a zombie or a reused pid.
 */
bool sio__proc_alive(int pid, uint64_t start);

#endif
