/* SPDX-License-Identifier: MIT */
/*
 * One error channel for every layer: libsmartio's sio_errmsg() answers for
 * the NVMe driver too, a driver message keeps the library's cause, and a
 * failure's message survives the cleanup after it.
 */

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <smartio/smartio.h>
#include <smartio/nvme.h>

Test(errors, set_returns_the_errno_negated_and_may_quote_the_old_message)
{
	cr_assert_eq(sio_err_set(ENOSPC, "first %d", 1), -ENOSPC);
	cr_assert_str_eq(sio_errmsg(), "first 1");
	/* The arguments may point into the message being replaced. */
	cr_assert_eq(sio_err_set(EIO, "second, after '%s'", sio_errmsg()), -EIO);
	cr_assert_str_eq(sio_errmsg(), "second, after 'first 1'");
}

Test(errors, wrap_keeps_the_lower_layers_message_as_the_cause)
{
	sio_err_set(ENOENT, "no segment 7 on node 2");
	cr_assert_eq(sio_err_wrap(ENOENT, "cannot map queue %u", 3), -ENOENT);
	cr_assert_str_eq(sio_errmsg(), "cannot map queue 3: no segment 7 on node 2");
}

Test(errors, a_message_saved_before_cleanup_is_the_one_reported)
{
	struct sio_errsave es;

	sio_err_set(ETIMEDOUT, "the controller did not answer");
	sio_err_save(&es);
	sio_err_set(EINVAL, "cleanup failed too");
	sio_err_restore(&es);
	cr_assert_str_eq(sio_errmsg(), "the controller did not answer");
}

Test(errors, the_nvme_driver_reports_through_sio_errmsg)
{
	struct sio_nvme_qspec spec;

	sio_err_set(EIO, "stale");
	cr_assert_eq(sio_nvme_qspec_parse("depth=1", &spec), -EINVAL);
	cr_assert(strstr(sio_errmsg(), "depth '1' out of range"), "%s", sio_errmsg());
}

Test(errors, every_info_getter_refuses_a_null_handle_with_einval)
{
	struct sio_nvme_ctrl_info ci;
	struct sio_nvme_ioq_info qi;
	struct sio_nvme_manager_stats ms;

	cr_assert_eq(sio_nvme_ctrl_info(NULL, &ci), -EINVAL);
	cr_assert(strstr(sio_errmsg(), "sio_nvme_ctrl_info"), "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_client_info(NULL, &ci), -EINVAL);
	cr_assert(strstr(sio_errmsg(), "sio_nvme_client_info"), "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_ioq_info(NULL, &qi), -EINVAL);
	cr_assert(strstr(sio_errmsg(), "sio_nvme_ioq_info"), "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_manager_stats(NULL, &ms), -EINVAL);
	cr_assert(strstr(sio_errmsg(), "sio_nvme_manager_stats"), "%s", sio_errmsg());
	cr_assert_eq(sio_device_info(NULL, NULL), -EINVAL);
	cr_assert_eq(sio_segment_info(NULL, NULL), -EINVAL);
}
