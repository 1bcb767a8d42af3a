/* SPDX-License-Identifier: MIT */
/*
 * Interrupts and DMA masks on the simulated fabric: a model raises a vector
 * and each borrower that enabled it sees its fd readable and takes the
 * count; mappings honour a borrow's DMA mask, and what cannot fit is
 * refused naming it.
 */
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "common.h"

Test(irq, raise_reaches_the_borrowers_that_enabled_it)
{
	struct sio_fabric_config c = { .nodes = 2 };
	const char *name = test_fabric("irq", &c);
	struct sio_fabric *l = join(name, 0), *h = join(name, 1);
	struct sio_devreg *reg = make_device(l, false);
	struct sio_device *a, *b;
	struct pollfd p;

	cr_assert_eq(sio_device_borrow(h, sio_devreg_id(reg), SIO_BORROW_SHARED, &a), 0);
	cr_assert_eq(sio_device_borrow(h, sio_devreg_id(reg), SIO_BORROW_SHARED, &b), 0);
	cr_assert_eq(sio_device_irq_wait(a, 0, 0), -EINVAL, "not enabled yet");
	cr_assert_eq(sio_device_irq_enable(a, SIO_IRQ_F(SIO_IRQ_INTX), 1), -EOPNOTSUPP);
	cr_assert(strstr(sio_errmsg(), "MSI"), "%s", sio_errmsg());
	cr_assert_eq(sio_device_irq_enable(a, SIO_IRQ_F_ANY, 0), -EINVAL);
	cr_assert_eq(sio_device_irq_enable(a, SIO_IRQ_F_ANY, 2), SIO_IRQ_MSI, "%s", sio_errmsg());
	cr_assert_eq(sio_device_irq_enable(a, SIO_IRQ_F_ANY, 2), -EBUSY);
	cr_assert_eq(sio_device_irq_wait(a, 0, 0), -EAGAIN, "nothing raised yet");
	cr_assert_eq(sio_device_irq_wait(a, 1, 20), -ETIMEDOUT);
	cr_assert_eq(sio_device_irq_wait(a, 2, 0), -EINVAL, "vector 2 was not enabled");

	cr_assert_eq(sio_devreg_irq_raise(reg, 1), 1, "one borrower enabled vector 1");
	cr_assert_eq(sio_devreg_irq_raise(reg, 1), 1);
	p = (struct pollfd){ .fd = sio_device_irq_fd(a, 1), .events = POLLIN };
	cr_assert_eq(poll(&p, 1, 1000), 1, "the fd polls readable");
	cr_assert_eq(sio_device_irq_wait(a, 0, 0), -EAGAIN, "vector 0 was not raised");
	cr_assert_eq(sio_device_irq_wait(a, 1, 1000), 2, "both interrupts, taken at once");
	cr_assert_eq(sio_device_irq_wait(a, 1, 0), -EAGAIN);
	cr_assert_eq(sio_device_irq_ack(a, 1), 0);

	cr_assert_eq(sio_device_irq_enable(b, SIO_IRQ_F(SIO_IRQ_MSI), 1), SIO_IRQ_MSI);
	cr_assert_eq(sio_devreg_irq_raise(reg, 0), 2, "both borrowers enabled vector 0");
	cr_assert_eq(sio_device_irq_wait(b, 0, 1000), 1);
	cr_assert_eq(sio_device_irq_wait(a, 0, 1000), 1);
	sio_device_irq_disable(a);
	cr_assert_eq(sio_devreg_irq_raise(reg, 0), 1, "a disabled vector is not signalled");
	cr_assert_eq(sio_devreg_irq_raise(reg, SIO_IRQ_MAX_VECS), -EINVAL);
	sio_device_close(a);
	sio_device_close(b);	/* disables b's too */
	cr_assert_eq(sio_devreg_irq_raise(reg, 0), 0);
	sio_devreg_close(reg);
	sio_fabric_close(h);
	sio_fabric_close(l);
	sio_fabric_destroy(name);
}

Test(irq, enable_one_takes_its_vector_and_not_the_others)
{
	struct sio_fabric_config c = { .nodes = 2 };
	const char *name = test_fabric("irq1", &c);
	struct sio_fabric *l = join(name, 0), *h = join(name, 1);
	struct sio_devreg *reg = make_device(l, false);
	struct sio_device *a, *b;

	cr_assert_eq(sio_device_borrow(h, sio_devreg_id(reg), SIO_BORROW_SHARED, &a), 0);
	cr_assert_eq(sio_device_borrow(h, sio_devreg_id(reg), SIO_BORROW_SHARED, &b), 0);
	cr_assert_eq(sio_device_irq_enable_one(a, SIO_IRQ_F_ANY, SIO_IRQ_MAX_VECS), -EINVAL);
	cr_assert_eq(sio_device_irq_enable_one(a, SIO_IRQ_F_ANY, 3), SIO_IRQ_MSI, "%s", sio_errmsg());
	cr_assert_eq(sio_device_irq_enable_one(b, SIO_IRQ_F_ANY, 1), SIO_IRQ_MSI, "%s", sio_errmsg());
	cr_assert_eq(sio_devreg_irq_raise(reg, 1), 1, "vector 1 is b's alone, not a's as well");
	cr_assert_eq(sio_devreg_irq_raise(reg, 3), 1);
	cr_assert_eq(sio_devreg_irq_raise(reg, 0), 0, "nobody took vector 0");
	cr_assert_eq(sio_device_irq_wait(a, 1, 0), -EINVAL, "a did not take vector 1");
	cr_assert_eq(sio_device_irq_fd(a, 0), -EINVAL);
	cr_assert_eq(sio_device_irq_wait(a, 3, 1000), 1);
	cr_assert_eq(sio_device_irq_wait(b, 1, 1000), 1);
	/* several vectors in one raise: each borrower gets its own, once */
	cr_assert_eq(sio_devreg_irq_raise_mask(reg, 1u << 1 | 1u << 3 | 1u << 5), 2);
	cr_assert_eq(sio_device_irq_wait(a, 3, 1000), 1);
	cr_assert_eq(sio_device_irq_wait(b, 1, 1000), 1);
	cr_assert_eq(sio_devreg_irq_raise_mask(reg, 0), 0);
	cr_assert_eq(sio_devreg_irq_raise_mask(NULL, 1), -EINVAL);
	sio_device_close(a);
	sio_device_close(b);
	cr_assert_eq(sio_devreg_irq_raise(reg, 3), 0);
	sio_devreg_close(reg);
	sio_fabric_close(h);
	sio_fabric_close(l);
	sio_fabric_destroy(name);
}

/* A socket bound at a borrower's path for vector @vec, by someone else
 * (@sa: where; unlink it when done). */
static int bind_beside(struct sio_device *dev, int own, int vec, struct sockaddr_un *out)
{
	struct sockaddr_un sa;
	socklen_t len = sizeof(sa);
	char *v;
	int s;

	cr_assert_eq(getsockname(sio_device_irq_fd(dev, own), (struct sockaddr *)&sa, &len), 0);
	v = strrchr(sa.sun_path, 'v');
	cr_assert(v, "%s", sa.sun_path);
	snprintf(v, sizeof(sa.sun_path) - (size_t)(v - sa.sun_path), "v%d", vec);
	s = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	cr_assert_eq(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0, "%s", sa.sun_path);
	*out = sa;
	return s;
}

/*
 * A raise writes to the vectors a borrower enabled, as its slot in the
 * registry says, and to no other socket at a borrower's path: one send per
 * enabled vector, however many borrowers the device has.
 */
Test(irq, raise_writes_only_where_a_borrower_enabled_the_vector)
{
	struct sio_fabric_config c = { .nodes = 2 };
	const char *name = test_fabric("irq2", &c);
	struct sio_fabric *l = join(name, 0), *h = join(name, 1);
	struct sio_devreg *reg = make_device(l, false);
	struct sio_device *a;
	struct sockaddr_un sa;
	uint32_t msg;
	int s;

	cr_assert_eq(sio_device_borrow(h, sio_devreg_id(reg), SIO_BORROW_SHARED, &a), 0);
	cr_assert_eq(sio_device_irq_enable_one(a, SIO_IRQ_F_ANY, 3), SIO_IRQ_MSI, "%s", sio_errmsg());
	s = bind_beside(a, 3, 2, &sa);
	cr_assert_eq(sio_devreg_irq_raise(reg, 2), 0, "a did not enable vector 2");
	cr_assert_eq(recv(s, &msg, sizeof(msg), 0), -1, "nothing was sent to vector 2's path");
	cr_assert_eq(sio_devreg_irq_raise(reg, 3), 1);
	sio_device_irq_disable(a);
	cr_assert_eq(sio_devreg_irq_raise(reg, 3), 0, "disabled: its mark is gone");
	close(s);
	unlink(sa.sun_path);
	sio_device_close(a);
	sio_devreg_close(reg);
	sio_fabric_close(h);
	sio_fabric_close(l);
	sio_fabric_destroy(name);
}

Test(irq, dma_mask_places_mappings_and_refuses_what_cannot_fit)
{
	struct sio_fabric_config c = { .nodes = 2 };
	const char *name = test_fabric("mask", &c);
	struct sio_fabric *l = join(name, 0), *h = join(name, 1);
	struct sio_devreg *reg = make_device(l, false);
	struct sio_segment *s1, *s2, *big;
	struct sio_device *dev;
	uint64_t b1, b2, b3;
	char *p, buf[8];

	cr_assert_eq(sio_device_borrow(h, sio_devreg_id(reg), SIO_BORROW_EXCLUSIVE, &dev), 0);
	cr_assert_eq(sio_device_dma_mask(dev), UINT64_MAX, "a fresh borrow has 64 bits");
	cr_assert_eq(sio_device_set_dma_mask(dev, 0x0ffffffe), -EINVAL);
	cr_assert_eq(sio_device_set_dma_mask(dev, 0x7ff), -EINVAL, "fewer than 12 bits");
	cr_assert_eq(sio_segment_create(h, 0, 64 << 10, 0, &s1), 0);
	cr_assert_eq(sio_segment_create(h, 0, 64 << 10, 0, &s2), 0);
	cr_assert_eq(sio_segment_create(h, 0, 2 << 20, 0, &big), 0);
	cr_assert_eq(sio_device_map(dev, s1, &b1), 0);
	cr_assert_gt(b1, 0x0fffffffull, "unmasked: the fabric's own, high, address");
	cr_assert_eq(sio_device_set_dma_mask(dev, (1ull << 28) - 1), 0);
	cr_assert_eq(sio_device_map(dev, s1, &b1), -ERANGE, "made before the mask, beyond it");
	cr_assert(strstr(sio_errmsg(), "DMA mask 0xfffffff (28 bits)"), "%s", sio_errmsg());
	cr_assert_eq(sio_device_map(dev, s1, &b1), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_device_map(dev, s2, &b2), 0, "%s", sio_errmsg());
	cr_assert_leq(b1 + (64 << 10) - 1, 0x0fffffffull);
	cr_assert_leq(b2 + (64 << 10) - 1, 0x0fffffffull);
	cr_assert(b2 >= b1 + (64 << 10) || b1 >= b2 + (64 << 10), "overlap: 0x%lx 0x%lx",
		  (unsigned long)b1, (unsigned long)b2);
	cr_assert_eq(sio_device_map(dev, s2, &b3), 0);
	cr_assert_eq(b3, b2, "mapped again: the same address");
	/* the model's DMA goes through the low address to the right segment */
	cr_assert_eq(sio_segment_map(s2, (void **)&p), 0);
	cr_assert_eq(sio_dma_write(reg, b2 + 100, "masked!", 8), 0, "%s", sio_errmsg());
	cr_assert_str_eq(p + 100, "masked!");
	cr_assert_eq(sio_dma_read(reg, b2 + 100, buf, 8), 0);
	cr_assert_str_eq(buf, "masked!");
	/* 21 bits: 1 MiB of room above the floor; 2 MiB cannot fit */
	cr_assert_eq(sio_device_unmap(dev, s1), 0);
	cr_assert_eq(sio_device_unmap(dev, s2), 0);
	cr_assert_eq(sio_device_set_dma_mask(dev, (1ull << 21) - 1), 0);
	cr_assert_eq(sio_device_map(dev, big, &b3), -ERANGE);
	cr_assert(strstr(sio_errmsg(), "DMA mask 0x1fffff (21 bits)"), "%s", sio_errmsg());
	cr_assert_eq(sio_device_map(dev, s1, &b1), 0, "64 KiB fits: %s", sio_errmsg());
	sio_segment_unmap(s2);
	sio_device_close(dev);
	sio_segment_close(s1);
	sio_segment_close(s2);
	sio_segment_close(big);
	sio_devreg_close(reg);
	sio_fabric_close(h);
	sio_fabric_close(l);
	sio_fabric_destroy(name);
}
