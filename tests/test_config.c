/* Tests of the configuration table parsers and the status strings. */
#include <check.h>
#include <stdlib.h>

#include "core/config.h"

START_TEST(test_placeholder)
{
    size_t v;
    ck_assert_int_eq(config_parse_size("4K", &v), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("parse");
    SRunner *sr;
    int failed;

    tcase_add_test(tc, test_placeholder);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
