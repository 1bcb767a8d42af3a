/* SPDX-License-Identifier: MIT */
#ifndef SIO_SHM_H
#define SIO_SHM_H

/*
 * The shm fabric backend: a fabric whose nodes are processes of one host.
 * The registry is a file in the fabric's directory ($SMARTIO_RUNDIR, else
 * /dev/shm, then smartio-NAME/), mapped shared; its lock is a futex word
 * holding the holder's thread id (reglock.c); a process is known by its
 * pid and start time, and is dead when that process is gone; a segment is
 * a file there (or on hugetlbfs) that every process maps; events are unix
 * datagrams to a socket per process; notifications are futex wakes on the
 * shared pages. Every file is checked before it is trusted: the owner's,
 * or its group's, never a symlink.
 */

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "internal.h"

/* What the backend keeps per fabric handle (sio_fabric.be). */
struct shm_fabric {
	char dir[PATH_MAX];		/* the fabric's directory */
	int regfd;			/* its registry file */
	int evfd;			/* this process's event socket, or -1 */
	char hugedir[128];		/* a copy of the registry's, checked */
	uid_t uid;			/* owner of the fabric's files */
	gid_t gid;			/* with group: the group that may join */
	bool group;
};

static inline struct shm_fabric *shm_of(struct sio_fabric *f)
{
	return (struct shm_fabric *)f->be;
}

/* state.c */
int sio__shm_create(struct sio_fabric *f, bool group, gid_t gid);
int sio__shm_attach(struct sio_fabric *f);
void sio__shm_detach(struct sio_fabric *f);
int sio__shm_destroy(const char *name);
int sio__shm_list(char (*names)[SIO_NAME_MAX], int max);
bool sio__shm_removed(struct sio_fabric *f);
int sio__shm_host_path(struct sio_fabric *f, const char *leaf, char *buf, size_t len);
void sio__shm_proc_init(struct sio_fabric *f, struct reg_proc *p);
bool sio__shm_proc_alive(struct sio_fabric *f, const struct reg_proc *p);
/* The directory of fabric @name. */
void sio__shm_dir(const char *name, char *buf, size_t len);
/* The system's hugetlbfs mount, or "". */
void sio__shm_hugedir(char *buf, size_t len);

/* seg.c: segment files */
int sio__shm_seg_create(struct sio_fabric *f, int slot, unsigned int flags);
int sio__shm_seg_reserve(struct sio_fabric *f, int slot, uint64_t off, uint64_t len);
void sio__shm_seg_remove(struct sio_fabric *f, int slot);
int sio__shm_seg_map(struct sio_fabric *f, int slot, uint64_t off, uint64_t len, bool rdonly,
		     void **vaddr);
void sio__shm_seg_unmap(struct sio_fabric *f, void *vaddr, uint64_t len);
/* The path of segment slot @slot's file (for the tests, too). */
int sio__segment_path(struct sio_fabric *f, int slot, char *buf, size_t len);

/* sigbus.c: mappings of fabric files survive their shrinking by another
 * process (the file grown back, or zeros in its place), named on stderr */
void sio__shm_guard(void *va, size_t len, int fd, const char *path, uint64_t off, bool rdonly);
void sio__shm_unguard(void *va);

/* event.c: events and notifications */
int sio__shm_ev_open(struct sio_fabric *f);
void sio__shm_ev_close(struct sio_fabric *f);
void sio__shm_proc_gone(struct sio_fabric *f, int proc);
void sio__shm_ev_send(struct sio_fabric *f, int proc, const struct sio_event *ev);
int sio__shm_ev_fd(struct sio_fabric *f);
int sio__shm_ev_read(struct sio_fabric *f, struct sio_event *ev, int max);
int sio__shm_notify(struct sio_fabric *f, uint32_t *word);
int sio__shm_wait(struct sio_fabric *f, uint32_t *word, uint32_t old, uint64_t timeout_ns);

/* ../reglock.c: the registry lock */
int sio__shm_lock(struct sio_fabric *f, bool *holder_died);
void sio__shm_unlock(struct sio_fabric *f);

#endif
