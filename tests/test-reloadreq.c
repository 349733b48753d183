/*
 * test-reloadreq.c - the request files of `tsrun reload` as the running
 * tsrun parses them (src/reload_req.c): where they are for a socket, which
 * names are requests (and whose), and which texts name a pipeline. Table
 * driven; the same functions are fuzzed by tests/fuzz/fuzz-reloadreq.c.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "reload_req.h"

static const struct {
	const char *sock, *dir, *prefix;
} wheres[] = {
	{ "/run/user/1000/tsrun/train.sock", "/run/user/1000/tsrun", "train.sock.reload" },
	{ "/s.sock", "/", "s.sock.reload" },
	{ "s.sock", ".", "s.sock.reload" },
	{ "a/b", "a", "b.reload" },
	{ "/tmp/x/", "/tmp/x", ".reload" },
};

START_TEST(test_where)
{
	char dir[64], prefix[64];
	ck_assert_int_eq(ts_reload_req_where(wheres[_i].sock, dir, sizeof(dir), prefix,
					     sizeof(prefix)), 0);
	ck_assert_str_eq(dir, wheres[_i].dir);
	ck_assert_str_eq(prefix, wheres[_i].prefix);
}
END_TEST

START_TEST(test_where_too_long)
{
	char dir[8], prefix[16];
	ck_assert_int_eq(ts_reload_req_where("/a/very/long/dir/s.sock", dir, sizeof(dir), prefix,
					     sizeof(prefix)), -ENAMETOOLONG);
	ck_assert_int_eq(ts_reload_req_where("/a/a-long-socket-name.sock", dir, sizeof(dir),
					     prefix, sizeof(prefix)), -ENAMETOOLONG);
	/* exactly fitting */
	ck_assert_int_eq(ts_reload_req_where("/abcdef/x", dir, sizeof(dir), prefix,
					     sizeof(prefix)), 0);
	ck_assert_str_eq(dir, "/abcdef");
}
END_TEST

static const struct {
	const char *name;
	long pid;
} pids[] = {
	{ "s.sock.reload.4242.req", 4242 },
	{ "s.sock.reload.1.req", 1 },
	{ "s.sock.reload.2147483647.req", 2147483647 },
	{ "s.sock.reload.2147483648.req", 0 },      /* past a pid_t */
	{ "s.sock.reload.99999999999999999999.req", 0 },
	{ "s.sock.reload.0.req", 0 },
	{ "s.sock.reload.042.req", 0 },             /* no leading zero */
	{ "s.sock.reload.-5.req", 0 },
	{ "s.sock.reload.+5.req", 0 },
	{ "s.sock.reload. 5.req", 0 },
	{ "s.sock.reload..req", 0 },
	{ "s.sock.reload.12", 0 },                  /* an answer, not a request */
	{ "s.sock.reload.12.req.tmp", 0 },
	{ "s.sock.reload12.req", 0 },
	{ "t.sock.reload.12.req", 0 },              /* another socket's */
	{ "s.sock.reload.1x2.req", 0 },
	{ "s.sock.status.json", 0 },
	{ "", 0 },
};

START_TEST(test_pid)
{
	ck_assert_int_eq(ts_reload_req_pid(pids[_i].name, "s.sock.reload"), pids[_i].pid);
}
END_TEST

static const struct {
	const char *text;
	size_t len;
	int rc;
	const char *path;
} paths[] = {
	{ "/home/u/p.ts\n", 13, 0, "/home/u/p.ts" },
	{ "/home/u/p.ts", 12, 0, "/home/u/p.ts" },
	{ "/a b/\xc3\xa9.ts\n\n", 12, 0, "/a b/\xc3\xa9.ts" },
	{ "/", 1, 0, "/" },
	{ "", 0, -EINVAL, NULL },
	{ "\n", 1, -EINVAL, NULL },
	{ "p.ts\n", 5, -EINVAL, NULL },             /* relative */
	{ "/a\0/b\n", 6, -EINVAL, NULL },           /* a NUL would cut it */
	{ "/a\tb\n", 5, -EINVAL, NULL },
	{ "/a\rb\n", 5, -EINVAL, NULL },
	{ "/a\x7f\n", 4, -EINVAL, NULL },
	{ "/a\n/etc/passwd\n", 15, -EINVAL, NULL }, /* more than one line */
	{ "/a\n\n\n", 5, -EINVAL, NULL },
	{ "/a\nx", 4, -EINVAL, NULL },
};

START_TEST(test_path)
{
	char path[64];
	int rc = ts_reload_req_path(paths[_i].text, paths[_i].len, path, sizeof(path));
	ck_assert_int_eq(rc, paths[_i].rc);
	if (rc == 0)
		ck_assert_str_eq(path, paths[_i].path);
}
END_TEST

START_TEST(test_path_too_long)
{
	char small[5];
	ck_assert_int_eq(ts_reload_req_path("/abcd\n", 6, small, sizeof(small)), -ENAMETOOLONG);
	ck_assert_int_eq(ts_reload_req_path("/abc\n", 5, small, sizeof(small)), 0);
	ck_assert_str_eq(small, "/abc");
}
END_TEST

static Suite *reloadreq_suite(void)
{
	Suite *s = suite_create("reloadreq");
	TCase *tc = tcase_create("parse");
	tcase_add_loop_test(tc, test_where, 0, (int)(sizeof(wheres) / sizeof(wheres[0])));
	tcase_add_test(tc, test_where_too_long);
	tcase_add_loop_test(tc, test_pid, 0, (int)(sizeof(pids) / sizeof(pids[0])));
	tcase_add_loop_test(tc, test_path, 0, (int)(sizeof(paths) / sizeof(paths[0])));
	tcase_add_test(tc, test_path_too_long);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(reloadreq_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
