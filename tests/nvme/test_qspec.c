/* SPDX-License-Identifier: MIT */
/*
 * Queue-spec strings (sio_nvme_qspec_parse(), "--queue" of the programs,
 * libnvm's placement words), in-process: every key and word lands in its
 * field, what is not given keeps its default, and anything else is refused
 * with a message that quotes it and says what would do.
 */

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <smartio/nvme.h>

static struct sio_nvme_qspec parse_ok(const char *s)
{
	struct sio_nvme_qspec q;

	memset(&q, 0x5a, sizeof(q));	/* every field must be set */
	cr_assert_eq(sio_nvme_qspec_parse(s, &q), 0, "'%s': %s", s, sio_errmsg());
	return q;
}

static void refused(const char *s, const char *words)
{
	struct sio_nvme_qspec q;

	cr_assert_eq(sio_nvme_qspec_parse(s, &q), -EINVAL, "'%s' was taken", s);
	cr_assert(strstr(sio_errmsg(), words), "'%s': \"%s\" does not say \"%s\"", s,
		  sio_errmsg(), words);
}

Test(qspec, empty_or_null_is_every_default)
{
	const char *specs[] = { NULL, "" };

	for (int i = 0; i < 2; i++) {
		struct sio_nvme_qspec q = parse_ok(specs[i]);

		cr_expect_eq(q.sq_loc, SIO_NVME_QLOC_HINT);
		cr_expect_eq(q.cq_loc, SIO_NVME_QLOC_HINT);
		cr_expect_eq(q.depth, 0);
		cr_expect_eq(q.prio, 0);
		cr_expect_not(q.multipath);
		cr_expect_eq(q.dptr, SIO_NVME_DPTR_AUTO);
		cr_expect_eq(q.dbbuf, SIO_NVME_DBBUF_AUTO);
		cr_expect_eq(q.completions, SIO_NVME_CPL_POLL);
	}
}

Test(qspec, locations_by_key_or_bare_word_in_any_case)
{
	cr_expect_eq(parse_ok("lender").sq_loc, SIO_PLACE_LENDER);
	cr_expect_eq(parse_ok("remote").sq_loc, SIO_PLACE_LENDER);
	cr_expect_eq(parse_ok("location=local").sq_loc, SIO_PLACE_LOCAL);
	cr_expect_eq(parse_ok("sq=CMB").sq_loc, SIO_PLACE_DEVICE);
	cr_expect_eq(parse_ok("location=device").sq_loc, SIO_PLACE_DEVICE);
	cr_expect_eq(parse_ok("sq=auto").sq_loc, SIO_NVME_QLOC_HINT);
	cr_expect_eq(parse_ok("cq=lender").cq_loc, SIO_PLACE_LENDER);
	cr_expect_eq(parse_ok("cq=hint").cq_loc, SIO_NVME_QLOC_HINT);
	/* a CQ is never in the controller's memory */
	refused("cq=device", "cq 'device' is not local, lender or hint");
	refused("location=gpu", "location 'gpu' is not local, lender, device or hint");
	refused("elsewhere", "'elsewhere' is not key=value nor a location");
}

Test(qspec, every_key_lands_in_its_field_and_the_rest_keep_defaults)
{
	struct sio_nvme_qspec q = parse_ok("sq=lender,cq=local,depth=64,prio=3,multipath,"
					    "dptr=sgl,dbbuf=off");

	cr_expect_eq(q.sq_loc, SIO_PLACE_LENDER);
	cr_expect_eq(q.cq_loc, SIO_PLACE_LOCAL);
	cr_expect_eq(q.depth, 64);
	cr_expect_eq(q.prio, 3);
	cr_expect(q.multipath);
	cr_expect_eq(q.dptr, SIO_NVME_DPTR_SGL);
	cr_expect_eq(q.dbbuf, SIO_NVME_DBBUF_OFF);
	q = parse_ok("qd=2");
	cr_expect_eq(q.depth, 2);
	cr_expect_eq(q.sq_loc, SIO_NVME_QLOC_HINT);
	cr_expect_eq(parse_ok("depth=0x1000").depth, SIO_NVME_QUEUE_MAX_SIZE);
	cr_expect_not(parse_ok("multipath=1,multipath=0").multipath, "the last one counts");
	cr_expect_eq(parse_ok("dptr=prp").dptr, SIO_NVME_DPTR_PRP);
	cr_expect_eq(parse_ok("dbbuf=on").dbbuf, SIO_NVME_DBBUF_ON);
	cr_expect_eq(parse_ok("completions=irq").completions, SIO_NVME_CPL_IRQ);
	cr_expect_eq(parse_ok("completions=adaptive").completions, SIO_NVME_CPL_ADAPTIVE);
	cr_expect_eq(parse_ok("completions=poll").completions, SIO_NVME_CPL_POLL);
}

Test(qspec, values_out_of_range_or_unknown_are_refused_naming_them)
{
	refused("depth=1", "depth '1' out of range 2..4096");
	refused("depth=4097", "depth '4097' out of range");
	refused("depth=64k", "depth '64k' out of range");
	refused("depth=-2", "depth '-2'");
	refused("prio=4", "prio '4' out of range 0..3");
	refused("multipath=yes", "multipath 'yes' is not 0 or 1");
	refused("dptr=sgls", "dptr 'sgls' is not auto, prp or sgl");
	refused("dbbuf=1", "dbbuf '1' is not auto, on or off");
	refused("completions=sleep", "completions 'sleep' is not poll, irq, adaptive or hybrid");
	refused("size=64", "unknown key 'size' (location, cq, depth, prio, multipath, dptr, dbbuf, "
		"completions)");
}

Test(qspec, a_spec_longer_than_the_parser_takes_is_refused)
{
	char s[300];

	memset(s, 'a', sizeof(s) - 1);
	s[sizeof(s) - 1] = 0;
	refused(s, "queue spec too long");
}
