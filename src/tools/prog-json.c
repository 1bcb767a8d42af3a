/* SPDX-License-Identifier: MIT */
/* JSON output on json-c: one writer for every program (prog.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/utsname.h>
#include "prog.h"
#include "safe-file.h"

#define PJ_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

int prog_json_print(FILE *out, struct json_object *o)
{
	int ret = fprintf(out, "%s\n", json_object_to_json_string_ext(o, PJ_FLAGS)) < 0;

	json_object_put(o);
	if (fflush(out) || ret)
		return prog_fail("cannot write the JSON output: %s", strerror(errno));
	return PROG_OK;
}

int prog_json_write(const char *path, struct json_object *o)
{
	struct safe_file sf;
	int ret = safe_file_open(&sf, path), e;

	if (ret) {
		json_object_put(o);
		return prog_fail("%s: %s", path, strerror(-ret));
	}
	ret = prog_json_print(sf.f, o);
	if ((e = safe_file_close(&sf, !ret)) && !ret)
		return prog_fail("%s: %s", path, strerror(-e));
	return ret;
}

void pj_str(struct json_object *o, const char *key, const char *v)
{
	json_object_object_add(o, key, v ? json_object_new_string(v) : NULL);
}

void pj_int(struct json_object *o, const char *key, int64_t v)
{
	json_object_object_add(o, key, json_object_new_int64(v));
}

void pj_u64(struct json_object *o, const char *key, uint64_t v)
{
	json_object_object_add(o, key, json_object_new_uint64(v));
}

void pj_bool(struct json_object *o, const char *key, bool v)
{
	json_object_object_add(o, key, json_object_new_boolean(v));
}

/* Three decimals at most, and no exponent: what a reader of the numbers
 * (and jq) expects; not-a-number has no JSON form and becomes null. */
void pj_dbl(struct json_object *o, const char *key, double v)
{
	char s[64];
	size_t n;

	if (!isfinite(v)) {
		json_object_object_add(o, key, NULL);
		return;
	}
	snprintf(s, sizeof(s), "%.3f", v);
	n = strlen(s);
	while (n > 1 && s[n - 1] == '0')
		s[--n] = 0;
	if (s[n - 1] == '.')
		s[--n] = 0;
	json_object_object_add(o, key, json_object_new_double_s(v, s));
}

struct json_object *pj_obj(struct json_object *o, const char *key)
{
	struct json_object *v = json_object_new_object();

	json_object_object_add(o, key, v);
	return v;
}

struct json_object *pj_arr(struct json_object *o, const char *key)
{
	struct json_object *v = json_object_new_array();

	json_object_object_add(o, key, v);
	return v;
}

struct json_object *pj_push_obj(struct json_object *a)
{
	struct json_object *v = json_object_new_object();

	json_object_array_add(a, v);
	return v;
}

void pj_run_info(struct json_object *o)
{
	struct json_object *r = pj_obj(o, "run");
	struct utsname u;
	double load[3];
	char when[40];
	time_t now = time(NULL);
	struct tm tm;

	pj_str(r, "version", SIO_VERSION);
	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	pj_str(r, "date", when);
	if (!uname(&u)) {
		pj_str(r, "host", u.nodename);
		pj_str(r, "kernel", u.release);
	}
	pj_int(r, "cpus", sysconf(_SC_NPROCESSORS_ONLN));
	if (getloadavg(load, 3) == 3)
		pj_dbl(r, "load_1min", load[0]);
}

void pj_timestamp(struct json_object *o)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	pj_u64(o, "timestamp", (uint64_t)ts.tv_sec);
	pj_u64(o, "timestamp_ms", (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000);
}
