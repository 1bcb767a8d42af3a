/* SPDX-License-Identifier: MIT */
/*
 * Segment memory of the shm fabric backend: a file per segment, in the
 * fabric's directory (tmpfs) or, on huge pages, on hugetlbfs, named by slot
 * and generation so a reused slot never meets an old file. Every process
 * maps the same pages, so load/store across "nodes" is real.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "shm.h"

#define HUGE_SZ (2ull << 20)

static uint64_t huge_free_bytes(void)
{
	FILE *fp = fopen("/proc/meminfo", "r");
	char line[128];
	unsigned long long n = 0;

	if (!fp)
		return 0;
	while (fgets(line, sizeof(line), fp))
		if (sscanf(line, "HugePages_Free: %llu", &n) == 1)
			break;
	fclose(fp);
	return n * HUGE_SZ;
}

/* A device lent through uio, which is given segments' physical addresses
 * and so needs them on huge pages (registry lock held). */
static bool has_uio_device(struct sio_fabric *f)
{
	struct reg_dev *d;

	for (int i = 0; (d = reg_dev_at(f->reg, i)); i++)
		if (d->used && d->backend == SIO_BACKEND_UIO)
			return true;
	return false;
}

static bool use_huge(struct sio_fabric *f, uint64_t size, unsigned int flags)
{
	static int said;
	struct shm_fabric *s = shm_of(f);
	bool ok = s->hugedir[0] && huge_free_bytes() >= size;

	if (flags & SIO_SEG_F_NOHUGE)
		return false;
	/* said only where it matters: the simulated fabric and vfio do not
	 * care which pages a segment has */
	if (!ok && !said && has_uio_device(f)) {
		said = 1;
		if (!getenv("SMARTIO_QUIET"))
			fprintf(stderr, "smartio: no free huge pages%s: segments use shared memory "
				"(tmpfs) pages, which a device lent through uio cannot reach "
				"(docs/uio.md); SMARTIO_QUIET=1 hides this\n",
				s->hugedir[0] ? "" : " (no hugetlbfs mount)");
	}
	return ok;
}

int sio__segment_path(struct sio_fabric *f, int slot, char *buf, size_t len)
{
	const struct reg_seg *sg = reg_seg_at(f->reg, slot);
	struct shm_fabric *s = shm_of(f);

	if (!sg)
		return sio__err(EINVAL, "no segment slot %d", slot);
	if (sg->huge)
		snprintf(buf, len, "%s/smartio-%s-seg.%d.%llu", s->hugedir, f->name, slot,
			 (unsigned long long)sg->gen);
	else
		snprintf(buf, len, "%s/seg.%d.%llu", s->dir, slot, (unsigned long long)sg->gen);
	return 0;
}

/*
 * The pages of [@off, @off + @len) of the file @fd, in @dir, taken now: a
 * tmpfs (or hugetlbfs) with no room says so here, where it names the place
 * and the size, not as a SIGBUS later in whichever process (a device's
 * model) first touches a page.
 */
static int reserve(int fd, const char *dir, uint64_t off, uint64_t len)
{
	if (!fallocate(fd, 0, (off_t)off, (off_t)len) || errno == EOPNOTSUPP)
		return 0;
	if (errno == ENOSPC)
		return sio__err(ENOSPC, "no room for %llu KiB of segment memory in %s: free some, "
				"or point $SMARTIO_RUNDIR at a larger tmpfs",
				(unsigned long long)(len >> 10), dir);
	return sio__err(errno, "cannot reserve %llu KiB of segment memory in %s: %s",
			(unsigned long long)(len >> 10), dir, strerror(errno));
}

int sio__shm_seg_create(struct sio_fabric *f, int slot, unsigned int flags)
{
	struct reg_seg *sg = reg_seg_at(f->reg, slot);
	struct shm_fabric *s = shm_of(f);
	char path[PATH_MAX + 64];
	int fd, ret;

	if (!sg)
		return sio__err(EINVAL, "no segment slot %d", slot);
	sg->huge = (flags & SIO_SEG_F_HUGE) ||
		   use_huge(f, (sg->size + HUGE_SZ - 1) & ~(HUGE_SZ - 1), flags);
	if (sg->huge && !s->hugedir[0])
		return sio__err(ENOMEM, "huge pages requested but no hugetlbfs is mounted");
	if (sg->huge)
		sg->size = (sg->size + HUGE_SZ - 1) & ~(HUGE_SZ - 1);
	sio__segment_path(f, slot, path, sizeof(path));
	/* a new file, never someone's planted one; modes exact whatever the umask */
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || (s->group && fchown(fd, (uid_t)-1, s->gid)) ||
	    fchmod(fd, s->group ? 0660 : 0600) || ftruncate(fd, (off_t)sg->size)) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		unlink(path);
		return sio__err(e, "cannot create segment memory %s: %s", path, strerror(e));
	}
	ret = flags & SIO_SEG_F_LAZY ? 0 : reserve(fd, sg->huge ? s->hugedir : s->dir, 0,
						   sg->size);
	close(fd);
	if (ret)
		unlink(path);
	return ret;
}

int sio__shm_seg_reserve(struct sio_fabric *f, int slot, uint64_t off, uint64_t len)
{
	const struct reg_seg *sg = reg_seg_at(f->reg, slot);
	char path[PATH_MAX + 64];
	int fd, ret;

	if ((ret = sio__segment_path(f, slot, path, sizeof(path))))
		return ret;
	fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return sio__err(errno, "segment file %s: %s", path, strerror(errno));
	ret = reserve(fd, sg->huge ? shm_of(f)->hugedir : shm_of(f)->dir, off, len);
	close(fd);
	return ret;
}

void sio__shm_seg_remove(struct sio_fabric *f, int slot)
{
	char path[PATH_MAX + 64];

	if (!sio__segment_path(f, slot, path, sizeof(path)))
		unlink(path);
}

/*
 * A segment's file must be what the fabric made: a plain file of its owner
 * (or of its group) no one else may open, as long as what is mapped. A
 * short file would turn a later access into SIGBUS.
 */
static int check_segfile(struct sio_fabric *f, int fd, const char *path, uint64_t end)
{
	struct shm_fabric *s = shm_of(f);
	struct stat st;

	if (fstat(fd, &st))
		return sio__err(errno, "segment file %s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode) || (st.st_uid != s->uid && !(s->group && st.st_gid == s->gid)) ||
	    (st.st_mode & (s->group ? 0007 : 0077)))
		return sio__err(EPERM, "segment file %s is not a private file of the fabric's owner (uid %u, mode %04o); refusing it",
				path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	if ((uint64_t)st.st_size < end)
		return sio__reg_corrupt(f, "segment file %s is %lld bytes; the registry maps %llu",
				   path, (long long)st.st_size, (unsigned long long)end);
	return 0;
}

int sio__shm_seg_map(struct sio_fabric *f, int slot, uint64_t off, uint64_t len, bool rdonly,
		     void **vaddr)
{
	char path[PATH_MAX + 64];
	void *p;
	int fd, ret;

	if ((ret = sio__segment_path(f, slot, path, sizeof(path))))
		return ret;
	if (!len || len > SIO_SEG_MAX_SIZE || off > SIO_SEG_MAX_SIZE - len)
		return sio__reg_corrupt(f, "segment slot %d maps %llu bytes at %llu", slot,
				   (unsigned long long)len, (unsigned long long)off);
	fd = open(path, (rdonly ? O_RDONLY : O_RDWR) | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return sio__err(errno == ELOOP ? EPERM : errno, "segment file %s: %s", path,
				errno == ELOOP ? "a symbolic link; refusing it" : strerror(errno));
	if ((ret = check_segfile(f, fd, path, off + len))) {
		close(fd);
		return ret;
	}
	p = mmap(NULL, len, rdonly ? PROT_READ : PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);
	ret = errno;
	if (p != MAP_FAILED)	/* shrunk later by another process: sigbus.c */
		sio__shm_guard(p, len, fd, path, off, rdonly);
	close(fd);	/* the mapping keeps the file */
	if (p == MAP_FAILED)
		return sio__err(ret, "cannot map segment %s: %s", path, strerror(ret));
	*vaddr = p;
	return 0;
}

void sio__shm_seg_unmap(struct sio_fabric *f, void *vaddr, uint64_t len)
{
	sio__shm_unguard(vaddr);
	munmap(vaddr, len);
}
