/* SPDX-License-Identifier: MIT */
/*
 * hello-fabric: two nodes of a simulated fabric, two processes.
 * Node 1 creates a segment; node 0 lends a tiny device model that, when
 * rung, copies a message by DMA into whatever segment was mapped for it.
 * Build: part of the meson build (examples/hello-fabric).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <smartio/smartio.h>
#include <smartio/model.h>

#define CHECK(x) do { int _r = (x); if (_r < 0) { \
	fprintf(stderr, "%s: %s\n", #x, sio_errmsg()); exit(1); } } while (0)

int main(void)
{
	char name[32];
	struct sio_fabric_config cfg = { .nodes = 2, .topology = SIO_TOPO_SWITCH };
	struct sio_fabric *lender;
	struct sio_devreg *reg;
	struct sio_segment *bar;
	volatile uint64_t *regs;
	struct sio_device_desc desc = { .class_code = 0xff0000, .nbars = 1,
					.bar_size = { 4096 }, .name = "hello-dev" };

	snprintf(name, sizeof(name), "hello-%d", getpid());
	CHECK(sio_fabric_create(name, &cfg));
	CHECK(sio_fabric_open(name, 0, &lender));
	CHECK(sio_device_register(lender, &desc, &reg));
	CHECK(sio_devreg_bar(reg, 0, &bar));
	CHECK(sio_segment_map(bar, (void **)&regs));
	printf("node 0 lends device %u\n", sio_devreg_id(reg));

	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {	/* the borrower, on node 1 */
		struct sio_fabric *f;
		struct sio_device *dev;
		struct sio_segment *buf, *rbar;
		volatile uint64_t *r;
		char *mem;
		uint64_t bus;

		CHECK(sio_fabric_open(name, 1, &f));
		CHECK(sio_device_borrow(f, sio_devreg_id(reg), SIO_BORROW_EXCLUSIVE, &dev));
		CHECK(sio_segment_create(f, 0, 4096, 0, &buf));
		CHECK(sio_segment_map(buf, (void **)&mem));
		CHECK(sio_device_map(dev, buf, &bus));	/* the device's view of it */
		CHECK(sio_device_bar(dev, 0, &rbar));
		CHECK(sio_segment_map(rbar, (void **)&r));
		r[1] = bus;				/* "DMA address" register */
		__atomic_store_n(&r[0], 1, __ATOMIC_RELEASE);	/* doorbell */
		for (int i = 0; i < 2000 && __atomic_load_n(&r[0], __ATOMIC_ACQUIRE); i++)
			usleep(1000);
		printf("node 1 received by DMA: \"%s\" (bus address 0x%llx)\n", mem,
		       (unsigned long long)bus);
		fflush(stdout);
		int bad = strcmp(mem, "hello across the fabric") != 0;
		sio_segment_close(rbar);
		sio_device_close(dev);
		sio_segment_close(buf);
		sio_fabric_close(f);
		_exit(bad);
	}
	/* the device model: wait for the doorbell, DMA, clear it */
	for (int i = 0; i < 2000 && !__atomic_load_n(&regs[0], __ATOMIC_ACQUIRE); i++)
		usleep(1000);
	const char msg[] = "hello across the fabric";
	CHECK(sio_dma_write(reg, regs[1], msg, sizeof(msg)));
	__atomic_store_n(&regs[0], 0, __ATOMIC_RELEASE);

	int st;
	waitpid(pid, &st, 0);
	sio_devreg_close(reg);
	sio_fabric_close(lender);
	sio_fabric_destroy(name);
	puts(WIFEXITED(st) && !WEXITSTATUS(st) ? "ok" : "FAILED");
	return !(WIFEXITED(st) && !WEXITSTATUS(st));
}
